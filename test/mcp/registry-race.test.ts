import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { reconcileMcpServer, type McpServerDeps } from '../../shared/mcp/controller.js'
import { ConflictError } from '../../shared/core/errors.js'
import { parseRegistry, renderRegistry, upsertEntry } from '../../shared/mcp/plan/registry.js'
import { MCPServerSchema } from '../../shared/schemas/mcpserver.js'
import { EmbeddedKube } from '../support/embedded-kube.js'
import { testDeps } from '../support/engine-deps.js'

const NS = 'ai-agents'
const HELM = '- name: helm-a\n  url: http://a\n  auth: none\n  extra: kept\n- name: helm-b\n  url: http://b\n'

/**
 * Concurrent writers of the mcp-servers registry: several MCPServers being registered and
 * unregistered at once, plus a foreign writer (a dashboard) doing its own guarded
 * read-modify-write, with every read and write interleaved as fast-check's scheduler picks. No
 * interleaving loses an entry: the registry ends with Helm's entries, the dashboard's, and
 * exactly the servers that still exist.
 */
describe('the registry under concurrent writers', () => {
  it('never loses an entry, whatever the interleaving of reads, writes and conflicts', async () => {
    let conflicts = 0
    await fc.assert(fc.asyncProperty(
      fc.scheduler(),
      fc.uniqueArray(fc.constantFrom<string>('s1', 's2', 's3', 's4'), { minLength: 1, maxLength: 4 }),
      fc.subarray<string>(['s1', 's2', 's3', 's4']),
      async (s, names, deleted) => {
        const kube = new EmbeddedKube()
        kube.namespaces.set(NS, { metadata: { name: NS } })
        // Servers being deleted were registered before.
        const registered = deleted.filter((n) => names.includes(n)).map((n) => `- {name: ${n}, url: "http://${n}/mcp", auth: none}\n`).join('')
        await kube.createConfigMap({ metadata: { name: 'mcp-servers', namespace: NS }, data: { servers: HELM + registered } })
        // Every registry read and write yields to the scheduler, so they interleave across writers.
        const getConfigMap = kube.getConfigMap.bind(kube)
        const replaceConfigMap = kube.replaceConfigMap.bind(kube)
        kube.getConfigMap = async (...a) => { await s.schedule(Promise.resolve(), 'read'); return getConfigMap(...a) }
        kube.replaceConfigMap = async (cm) => {
          await s.schedule(Promise.resolve(), 'write')
          try { return await replaceConfigMap(cm) } catch (err) { if (err instanceof ConflictError) conflicts++; throw err }
        }
        for (const name of names) {
          kube.mcpServers.set(`${NS}/${name}`, MCPServerSchema.parse({
            apiVersion: 'purko.io/v1alpha1', kind: 'MCPServer',
            metadata: { name, namespace: NS, uid: `uid-${name}`, generation: 1, resourceVersion: `${name}-1`, finalizers: ['purko.io/mcpserver-finalizer'],
              ...(deleted.includes(name) ? { deletionTimestamp: '2026-01-01T00:00:00Z' } : {}) },
            spec: { image: 'i', managed: false, url: `http://${name}/mcp` },
          }))
        }
        const deps: McpServerDeps = { ...testDeps(kube), discover: async () => ({ ok: true, transport: 'streamable-http', tools: [], truncated: false }) }
        // The Broker redelivers a 409; a few redeliveries always settle it.
        const delivered = async (work: () => Promise<unknown>) => {
          for (let attempt = 0; ; attempt++) {
            try { return await work() } catch (err) { if (!(err instanceof ConflictError) || attempt > 6) throw err }
          }
        }
        const dashboard = delivered(async () => {
          const live = await kube.getConfigMap(NS, 'mcp-servers')
          const entries = upsertEntry(parseRegistry(live?.data?.servers).entries, { name: 'dashboard', url: 'http://d', auth: 'none' }, NS)
          await kube.replaceConfigMap({ ...live, data: { servers: renderRegistry(entries) } })
        })
        const done = Promise.all([dashboard, ...names.map((name) => delivered(() => reconcileMcpServer(deps, NS, name)))])
        await s.waitFor(done)

        const final = parseRegistry(kube.configMaps.get(`${NS}/mcp-servers`)?.data?.servers)
        expect(final.error).toBeUndefined()
        const expected = ['helm-a', 'helm-b', 'dashboard', ...names.filter((n) => !deleted.includes(n))].sort()
        expect(final.entries.map((e) => e.name).sort()).toEqual(expected)
        expect(final.entries.find((e) => e.name === 'helm-a')).toMatchObject({ extra: 'kept' })
        for (const name of names) expect(kube.mcpServers.has(`${NS}/${name}`)).toBe(!deleted.includes(name))
      },
    ), { numRuns: 40 })
    expect(conflicts).toBeGreaterThan(0) // the interleavings did make writers lose races
  }, 60_000)
})
