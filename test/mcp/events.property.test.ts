import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { createApp } from '../../functions/mcpserver-changed/index.js'
import type { McpServerDeps } from '../../shared/mcp/controller.js'
import type { DiscoveryResult } from '../../shared/mcp/discovery.js'
import { parseRegistry, sameEntry } from '../../shared/mcp/plan/registry.js'
import { deploymentManifest, registryEntry } from '../../shared/mcp/plan/workload.js'
import { MCPServerSchema, type MCPServer } from '../../shared/schemas/mcpserver.js'
import { EmbeddedKube } from '../support/embedded-kube.js'
import { deliver, PING, RESOURCE_UPDATE } from '../support/deliver.js'
import { testDeps } from '../support/engine-deps.js'
import { propertyRuns } from '../support/property-runs.js'

const NS = 'ai-agents'
type Op =
  | { op: 'stale'; back: number } | { op: 'fresh' } | { op: 'deployment'; back: number } | { op: 'tick' } | { op: 'advance'; minutes: number }
  | { op: 'available'; up: boolean } | { op: 'restart' } | { op: 'edit'; port: number } | { op: 'flaky'; failing: boolean } | { op: 'drop' }

const ops: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ op: fc.constant('stale' as const), back: fc.nat(6) }),
  fc.constant({ op: 'fresh' as const }),
  fc.record({ op: fc.constant('deployment' as const), back: fc.nat(3) }),
  fc.constant({ op: 'tick' as const }),
  fc.record({ op: fc.constant('advance' as const), minutes: fc.integer({ min: 1, max: 40 }) }),
  fc.record({ op: fc.constant('available' as const), up: fc.boolean() }),
  fc.constant({ op: 'restart' as const }),
  fc.record({ op: fc.constant('edit' as const), port: fc.integer({ min: 8000, max: 8003 }) }),
  fc.record({ op: fc.constant('flaky' as const), failing: fc.boolean() }),
  fc.constant({ op: 'drop' as const }),
)

/**
 * Duplicated, stale, reordered and dropped events, ticks at any time, pods that restart,
 * discovery that fails for a while and spec edits: once things settle, the MCPServer ends
 * exactly where a clean run would put it (its Deployment for the current spec, its registry
 * entry, Ready with the tools its current pods offer), and no delivery ever failed.
 */
describe('mcpserver-changed under chaotic event delivery', () => {
  it('converges to the same state whatever the order, duplication or loss of events', async () => {
    await fc.assert(fc.asyncProperty(fc.array(ops, { maxLength: 25 }), async (script) => {
      const kube = new EmbeddedKube()
      const clock = { now: new Date('2026-01-01T00:00:00Z') }
      let failing = false
      let restarts = 0
      const discover = async (): Promise<DiscoveryResult> => {
        if (failing) return { ok: false, reason: 'Unreachable', message: 'connection refused' }
        const g = kube.mcpServers.get(`${NS}/github`)?.metadata.generation ?? 0
        return { ok: true, transport: 'streamable-http', truncated: false, tools: [{ name: `tool-g${g}` }] }
      }
      const deps: McpServerDeps = { ...testDeps(kube, clock), discover }
      const app = createApp(deps)
      const current = () => structuredClone(kube.mcpServers.get(`${NS}/github`)!)
      const statuses: number[] = []
      const history: MCPServer[] = []
      const deployments: unknown[] = []
      const store = (server: MCPServer) => { kube.mcpServers.set(`${NS}/github`, server); history.push(current()) }
      store(MCPServerSchema.parse({ apiVersion: 'purko.io/v1alpha1', kind: 'MCPServer', metadata: { name: 'github', namespace: NS }, spec: { image: 'mcp:1' } }))
      const setAvailable = (up: boolean) => {
        const live = kube.deployments.get(`${NS}/github`)
        if (!live) return
        // The Deployment controller observes the generation and writes status; its one pod is up (the same pod, restarts counted) or gone.
        const d = kube.setStatus('Deployment', NS, 'github', {
          observedGeneration: live.metadata!.generation, replicas: 1, updatedReplicas: up ? 1 : 0, availableReplicas: up ? 1 : 0, conditions: [{ type: 'Available', status: up ? 'True' : 'False' }],
        })
        if (up) kube.pods.set(`${NS}/github-p`, { metadata: { name: 'github-p', namespace: NS, labels: { 'purko.io/mcp-server': 'github' } }, status: { phase: 'Running', podIP: '10.0.0.1', containerStatuses: [{ name: 'mcp-server', restartCount: restarts, ready: true, image: 'x', imageID: 'x' }] } })
        else kube.pods.delete(`${NS}/github-p`)
        deployments.push(structuredClone(d))
      }
      const send = async (type: string, data: unknown, ext: Record<string, string>) => statuses.push((await deliver(app, type, data, ext)).status)

      for (const step of script) {
        switch (step.op) {
          case 'stale': await send(RESOURCE_UPDATE, history[Math.max(0, history.length - 1 - step.back)], { kineticsource: 'resources', kind: 'MCPServer' }); break
          case 'fresh': await send(RESOURCE_UPDATE, current(), { kineticsource: 'resources', kind: 'MCPServer' }); break
          case 'deployment': if (deployments.length > 0) await send(RESOURCE_UPDATE, deployments[Math.max(0, deployments.length - 1 - step.back)], { kineticsource: 'resources', kind: 'Deployment' }); break
          case 'tick': await send(PING, {}, { kineticsource: 'mcpserverresync' }); break
          case 'advance': clock.now = new Date(clock.now.getTime() + step.minutes * 60_000); break
          case 'available': setAvailable(step.up); break
          case 'restart': restarts++; if (kube.pods.size > 0) setAvailable(true); break
          case 'edit': {
            const s = current()
            if (s.spec.port !== step.port) store({ ...s, spec: { ...s.spec, port: step.port } })
            break
          }
          case 'flaky': failing = step.failing; break
          case 'drop': break
        }
        history.push(current())
      }

      // Things settle: the server works, the latest events arrive, time passes, ticks run.
      failing = false
      await send(RESOURCE_UPDATE, current(), { kineticsource: 'resources', kind: 'MCPServer' })
      setAvailable(true)
      await send(RESOURCE_UPDATE, deployments.at(-1), { kineticsource: 'resources', kind: 'Deployment' })
      clock.now = new Date(clock.now.getTime() + 60 * 60_000)
      await send(PING, {}, { kineticsource: 'mcpserverresync' })

      expect(statuses.filter((s) => s !== 202)).toEqual([])
      const server = current()
      expect(server.metadata.finalizers).toEqual(['purko.io/mcpserver-finalizer'])
      expect(server.status).toMatchObject({ phase: 'Ready', observedGeneration: server.metadata.generation, toolCount: 1, tools: [{ name: `tool-g${server.metadata.generation}` }] })
      const entries = parseRegistry(kube.configMaps.get(`${NS}/mcp-servers`)?.data?.servers).entries
      expect(entries).toHaveLength(1)
      expect(sameEntry(entries[0], registryEntry(server))).toBe(true)
      expect(kube.deployments.get(`${NS}/github`)?.spec).toEqual(deploymentManifest(server, 'kinetic-executor:test').spec)
      expect(kube.services.get(`${NS}/github`)?.spec?.ports).toEqual([{ port: server.spec.port, targetPort: server.spec.port, protocol: 'TCP' }])
    }), { numRuns: propertyRuns(150) })
  }, 60_000)
})
