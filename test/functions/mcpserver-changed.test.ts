import type { V1Deployment } from '@kubernetes/client-node'
import { pino } from 'pino'
import { describe, expect, it } from 'vitest'
import { createApp } from '../../functions/mcpserver-changed/index.js'
import type { McpServerDeps } from '../../shared/mcp/controller.js'
import { ConflictError, TransientError } from '../../shared/core/errors.js'
import type { DiscoveryResult, DiscoveryTarget } from '../../shared/mcp/discovery.js'
import { parseRegistry } from '../../shared/mcp/plan/registry.js'
import { MCPServerSchema, type MCPServer } from '../../shared/schemas/mcpserver.js'
import { EmbeddedKube } from '../support/embedded-kube.js'
import { deliver, PING, RESOURCE_ADD, RESOURCE_UPDATE } from '../support/deliver.js'
import { testDeps } from '../support/engine-deps.js'

const NS = 'ai-agents'
const TOKEN = 's3cr3t-token-value'
const SERVERS = { kineticsource: 'resources', kind: 'MCPServer' }
const DEPLOYMENTS = { kineticsource: 'resources', kind: 'Deployment' }
const TICK = { kineticsource: 'mcpserverresync' }

let rv = 1000
/** A cluster with the agent namespace, where the registry lives. */
function agentCluster(): EmbeddedKube {
  const kube = new EmbeddedKube()
  kube.namespaces.set(NS, { metadata: { name: NS } })
  return kube
}
function put(kube: EmbeddedKube, spec: Record<string, unknown>, name = 'github', metadata: Record<string, unknown> = {}): MCPServer {
  const existing = kube.mcpServers.get(`${NS}/${name}`)
  const server = MCPServerSchema.parse({
    apiVersion: 'purko.io/v1alpha1', kind: 'MCPServer',
    metadata: { name, namespace: NS, uid: `uid-${name}`, generation: (existing?.metadata.generation ?? 0) + 1, ...(existing ? { finalizers: existing.metadata.finalizers } : {}), ...metadata, resourceVersion: `r${++rv}` },
    spec: { image: 'mcp:1', ...spec },
    ...(existing?.status ? { status: existing.status } : {}),
  })
  kube.mcpServers.set(`${NS}/${name}`, server)
  return stored(kube, name)
}
const stored = (kube: EmbeddedKube, name = 'github') => structuredClone(kube.mcpServers.get(`${NS}/${name}`)!)
const condition = (s: MCPServer, type: string) => s.status?.conditions?.find((c) => c.type === type)
const registry = (kube: EmbeddedKube) => parseRegistry(kube.configMaps.get(`${NS}/mcp-servers`)?.data?.servers)

/** Plays the Deployment controller and kubelet: the Deployment serves with one ready pod. */
function makeAvailable(kube: EmbeddedKube, name = 'github', podUid = 'pod-1', restarts = 0): V1Deployment {
  const generation = kube.deployments.get(`${NS}/${name}`)!.metadata!.generation
  kube.setStatus('Deployment', NS, name, { observedGeneration: generation, replicas: 1, updatedReplicas: 1, availableReplicas: 1, conditions: [{ type: 'Available', status: 'True' }] })
  const d = kube.deployments.get(`${NS}/${name}`)!
  // The one pod `<name>-<podUid>` (another one gone); the same pod keeps its uid, its restarts counted in its status.
  for (const key of kube.pods.keys()) if (key !== `${NS}/${name}-${podUid}`) kube.pods.delete(key)
  kube.pods.set(`${NS}/${name}-${podUid}`, {
    metadata: { name: `${name}-${podUid}`, namespace: NS, uid: podUid, labels: { 'purko.io/mcp-server': name } },
    status: { phase: 'Running', podIP: '10.1.2.3', containerStatuses: [{ name: 'mcp-server', restartCount: restarts, ready: true, image: 'x', imageID: 'x' }] },
  })
  return structuredClone(d)
}

interface Discovery { calls: DiscoveryTarget[]; result: DiscoveryResult }
function depsWith(kube: EmbeddedKube, discovery: Discovery, clock = { now: new Date('2026-01-01T00:00:00Z') }): McpServerDeps {
  return {
    ...testDeps(kube, clock),
    discover: async (target) => {
      discovery.calls.push(target)
      return discovery.result
    },
  }
}
const found = (names: string[]): DiscoveryResult => ({ ok: true, transport: 'streamable-http', truncated: false, tools: names.map((name) => ({ name, description: `${name} tool` })) })

describe('mcpserver-changed', () => {
  it('deploys a managed server (finalizer first), registers it, discovers its tools once the Deployment is available, and reports Ready', async () => {
    const kube = agentCluster()
    const discovery: Discovery = { calls: [], result: found(['search', 'create_issue']) }
    const app = createApp(depsWith(kube, discovery))
    expect((await deliver(app, RESOURCE_ADD, put(kube, {}), SERVERS)).status).toBe(202)
    expect(kube.writes).toEqual([
      'patch MCPServer/github', 'create Deployment/github', 'create Service/github', 'create ConfigMap/mcp-servers', 'status MCPServer/github',
      // Its first check time (the DeploymentUnavailable deadline) arms the MCP servers alarm.
      'create PingSource/mcpservers-resync-alarm',
    ])
    expect(stored(kube).metadata.finalizers).toEqual(['purko.io/mcpserver-finalizer'])
    expect(stored(kube).status).toMatchObject({ phase: 'Pending', url: 'http://github.ai-agents.svc.cluster.local:8000' })
    expect(registry(kube).entries).toEqual([{ name: 'github', url: 'http://github.ai-agents.svc.cluster.local:8000', auth: 'none', icon: '', category: '', namespace: 'ai-agents' }])
    expect(discovery.calls).toEqual([])

    const deployment = makeAvailable(kube)
    expect((await deliver(app, RESOURCE_UPDATE, deployment, DEPLOYMENTS)).status).toBe(202)
    expect(discovery.calls).toEqual([{ url: 'http://github.ai-agents.svc.cluster.local:8000' }])
    const server = stored(kube)
    expect(server.status).toMatchObject({ phase: 'Ready', toolCount: 2, tools: [{ name: 'search', description: 'search tool' }, { name: 'create_issue', description: 'create_issue tool' }] })
    expect(condition(server, 'Ready')).toMatchObject({ status: 'True', reason: 'Deployed' })
    expect(condition(server, 'ToolsDiscovered')).toMatchObject({ status: 'True', message: '2 tools over Streamable HTTP' })
    expect(kube.events.map((e) => e.reason)).toEqual(['Deployed', 'Registered', 'Progressing', 'ToolsDiscovered', 'Deployed'])
  })

  it('writes nothing for a redelivery, drops the echo of its own status write without an API call, and does not rediscover on an unchanged Deployment', async () => {
    const kube = agentCluster()
    const discovery: Discovery = { calls: [], result: found(['a']) }
    const app = createApp(depsWith(kube, discovery))
    const original = put(kube, {})
    await deliver(app, RESOURCE_ADD, original, SERVERS)
    const deployment = makeAvailable(kube)
    await deliver(app, RESOURCE_UPDATE, deployment, DEPLOYMENTS)
    const writes = kube.writes.length
    await deliver(app, RESOURCE_UPDATE, deployment, DEPLOYMENTS)
    await deliver(app, RESOURCE_ADD, original, SERVERS)
    expect(kube.writes.length).toBe(writes)
    expect(discovery.calls).toHaveLength(1)
    const calls = kube.calls
    expect((await deliver(app, RESOURCE_UPDATE, stored(kube), SERVERS)).status).toBe(202)
    expect(kube.calls).toBe(calls)
  })

  it('rediscovers when a pod restarts', async () => {
    const kube = agentCluster()
    const discovery: Discovery = { calls: [], result: found(['a']) }
    const app = createApp(depsWith(kube, discovery))
    await deliver(app, RESOURCE_ADD, put(kube, {}), SERVERS)
    await deliver(app, RESOURCE_UPDATE, makeAvailable(kube), DEPLOYMENTS)
    discovery.result = found(['a', 'b'])
    await deliver(app, RESOURCE_UPDATE, makeAvailable(kube, 'github', 'pod-1', 1), DEPLOYMENTS)
    expect(discovery.calls).toHaveLength(2)
    expect(stored(kube).status?.toolCount).toBe(2)
  })

  it('registers and discovers an unmanaged server at spec.url, then on deletion removes its entry (keeping the others) and its finalizer', async () => {
    const kube = agentCluster()
    await kube.createConfigMap({ metadata: { name: 'mcp-servers', namespace: NS }, data: { servers: '- name: helm-one\n  url: http://h:1\n  auth: none\n  note: from helm\n' } })
    const discovery: Discovery = { calls: [], result: found(['echo']) }
    const app = createApp(depsWith(kube, discovery))
    await deliver(app, RESOURCE_ADD, put(kube, { managed: false, url: 'http://127.0.0.1:9911/mcp', auth: 'bearer', secretRef: 'tok' }), SERVERS)
    await kube.createSecret({ metadata: { name: 'tok', namespace: NS }, data: { token: Buffer.from(TOKEN).toString('base64') } })
    // The Secret did not exist on the first look: a clear reason, and the tick retries after the backoff.
    expect(condition(stored(kube), 'ToolsDiscovered')).toMatchObject({ status: 'False', reason: 'SecretMissing', message: 'Secret ai-agents/tok not found' })
    expect(kube.deployments.size).toBe(0)
    expect(kube.services.size).toBe(0)

    const clock = { now: new Date('2026-01-01T00:05:00Z') }
    const later = createApp(depsWith(kube, discovery, clock))
    expect((await deliver(later, PING, { reason: 'mcpservers-resync' }, TICK)).status).toBe(202)
    expect(discovery.calls).toEqual([{ url: 'http://127.0.0.1:9911/mcp', token: TOKEN }])
    const server = stored(kube)
    expect(server.status).toMatchObject({ phase: 'Ready', toolCount: 1, url: 'http://127.0.0.1:9911/mcp' })
    expect(condition(server, 'Ready')).toMatchObject({ status: 'True', reason: 'Registered' })
    expect(registry(kube).entries.map((e) => e.name)).toEqual(['helm-one', 'github'])
    expect(registry(kube).entries[0]).toMatchObject({ note: 'from helm' })
    expect(JSON.stringify(server.status)).not.toContain(TOKEN)

    server.metadata.deletionTimestamp = '2026-01-01T00:06:00Z'
    server.metadata.resourceVersion = `r${++rv}`
    kube.mcpServers.set(`${NS}/github`, server)
    expect((await deliver(later, RESOURCE_UPDATE, server, SERVERS)).status).toBe(202)
    expect(kube.mcpServers.has(`${NS}/github`)).toBe(false)
    expect(registry(kube).entries.map((e) => e.name)).toEqual(['helm-one'])
  })

  it('releases the finalizer of a server in a terminating agent namespace without reading the registry its Role no longer lets it read', async () => {
    const kube = agentCluster()
    const discovery: Discovery = { calls: [], result: found(['x']) }
    const app = createApp(depsWith(kube, discovery))
    await deliver(app, RESOURCE_ADD, put(kube, { managed: false, url: 'http://127.0.0.1:9911/mcp' }), SERVERS)
    expect(stored(kube).metadata.finalizers).toEqual(['purko.io/mcpserver-finalizer'])

    // `kubectl delete namespace ai-agents`: the namespace controller removes the Role first (the
    // registry read is refused), the MCPServer waits on its finalizer.
    kube.namespaces.set(NS, { metadata: { name: NS, deletionTimestamp: new Date('2026-01-01T00:06:00Z') }, status: { phase: 'Terminating' } })
    kube.failNext('getConfigMap', Object.assign(new Error(`Could not get ConfigMap ${NS}/mcp-servers`), { cause: { code: 403 } }))
    const server = stored(kube)
    server.metadata.deletionTimestamp = '2026-01-01T00:06:00Z'
    server.metadata.resourceVersion = `r${++rv}`
    kube.mcpServers.set(`${NS}/github`, server)

    expect((await deliver(app, RESOURCE_UPDATE, server, SERVERS)).status).toBe(202)
    expect(kube.mcpServers.has(`${NS}/github`)).toBe(false)
  })

  it('keeps a server that is up but fails MCP Ready, as purko does, says why in ToolsDiscovered and a Warning Event, and retries from the tick with backoff, never on every event', async () => {
    const kube = agentCluster()
    const discovery: Discovery = { calls: [], result: { ok: false, reason: 'ProtocolError', message: 'the server answered HTML (text/html)' } }
    const clock = { now: new Date('2026-01-01T00:00:00Z') }
    const app = createApp(depsWith(kube, discovery, clock))
    await deliver(app, RESOURCE_ADD, put(kube, {}), SERVERS)
    await deliver(app, RESOURCE_UPDATE, makeAvailable(kube), DEPLOYMENTS)
    const server = stored(kube)
    expect(server.status).toMatchObject({ phase: 'Ready', message: 'Deployment and Service created, registered in mcp-servers ConfigMap', toolCount: 0 })
    expect(condition(server, 'Ready')).toMatchObject({ status: 'True', reason: 'Deployed' })
    expect(condition(server, 'ToolsDiscovered')).toMatchObject({ status: 'False', reason: 'ProtocolError', message: 'the server answered HTML (text/html)' })
    expect(kube.events.filter((e) => e.type === 'Warning').map((e) => [e.reason, e.message])).toEqual([
      ['DiscoveryFailed', 'Tool discovery failed (ProtocolError): the server answered HTML (text/html)'],
    ])
    await deliver(app, RESOURCE_UPDATE, makeAvailable(kube), DEPLOYMENTS)
    await deliver(app, PING, {}, TICK)
    expect(discovery.calls).toHaveLength(1)
    clock.now = new Date('2026-01-01T00:01:00Z')
    discovery.result = found(['x'])
    await deliver(app, PING, {}, TICK)
    expect(discovery.calls).toHaveLength(2)
    expect(stored(kube).status?.phase).toBe('Ready')
    expect(condition(stored(kube), 'ToolsDiscovered')).toMatchObject({ status: 'True', reason: 'Discovered' })
  })

  describe('a bearer server outside the agent namespace, whose token Secret the function may not read', () => {
    const TEAM = 'team-a'
    /** The error KubeClient throws for a 403: a plain Error, the ApiException as its cause. */
    const forbidden = () => Object.assign(new Error(`Could not get Secret ${TEAM}/tok`), {
      cause: { code: 403, body: JSON.stringify({ kind: 'Status', reason: 'Forbidden', message: `secrets "tok" is forbidden: User "system:serviceaccount:kinetic-system:mcpserver-changed" cannot get resource "secrets" in API group "" in the namespace "${TEAM}"` }) },
    })
    function putTeam(kube: EmbeddedKube): MCPServer {
      const existing = kube.mcpServers.get(`${TEAM}/github`)
      const server = MCPServerSchema.parse({
        apiVersion: 'purko.io/v1alpha1', kind: 'MCPServer',
        metadata: { name: 'github', namespace: TEAM, uid: 'uid-team', generation: 1, ...(existing ? { finalizers: existing.metadata.finalizers } : {}), resourceVersion: `r${++rv}` },
        spec: { image: 'unused', managed: false, url: 'http://10.0.0.9:8080/mcp', auth: 'bearer', secretRef: 'tok' },
        ...(existing?.status ? { status: existing.status } : {}),
      })
      kube.mcpServers.set(`${TEAM}/github`, server)
      return structuredClone(server)
    }
    const teamServer = (kube: EmbeddedKube) => structuredClone(kube.mcpServers.get(`${TEAM}/github`)!)

    it('reports SecretForbidden with the grant that allows the read (202, no redelivery), and retries with the backoff once it is granted', async () => {
      const kube = agentCluster().failNext('getSecret', forbidden())
      await kube.createSecret({ metadata: { name: 'tok', namespace: TEAM }, data: { token: Buffer.from(TOKEN).toString('base64') } })
      const lines: string[] = []
      const discovery: Discovery = { calls: [], result: found(['echo']) }
      const clock = { now: new Date('2026-01-01T00:00:00Z') }
      const app = createApp({ ...depsWith(kube, discovery, clock), log: pino({ level: 'debug' }, { write: (line: string) => { lines.push(line) } }) })

      expect((await deliver(app, RESOURCE_ADD, putTeam(kube), SERVERS)).status).toBe(202)
      const server = teamServer(kube)
      const grant = 'kubectl create role kinetic-mcp-token-tok -n team-a --verb=get --resource=secrets --resource-name=tok && '
        + 'kubectl create rolebinding kinetic-mcp-token-tok -n team-a --role=kinetic-mcp-token-tok --serviceaccount=kinetic-system:mcpserver-changed'
      expect(server.status?.phase).toBe('Ready')
      expect(condition(server, 'ToolsDiscovered')).toMatchObject({
        status: 'False', reason: 'SecretForbidden',
        message: `mcpserver-changed may not read Secret team-a/tok (it reads token Secrets only in ai-agents); allow it with: ${grant}`,
      })
      expect(condition(server, 'Ready')).toMatchObject({ status: 'True', reason: 'Registered' })
      expect(discovery.calls).toEqual([])
      expect(kube.events.map((e) => [e.type, e.reason])).toEqual([['Normal', 'Registered'], ['Warning', 'DiscoveryFailed'], ['Normal', 'Registered']])
      expect(kube.events[1]?.message).toBe(`Tool discovery failed (SecretForbidden): mcpserver-changed may not read Secret team-a/tok (it reads token Secrets only in ai-agents); allow it with: ${grant}`)
      expect(server.status?.nextCheckAt).toBeDefined()

      // A redelivery before the backoff has passed reads no Secret and discovers nothing.
      const reads = kube.calls
      expect((await deliver(app, RESOURCE_UPDATE, teamServer(kube), SERVERS)).status).toBe(202)
      expect(discovery.calls).toEqual([])
      expect(kube.calls - reads).toBe(0)

      // Granted (the fake no longer refuses): the tick after the backoff discovers with the token.
      clock.now = new Date('2026-01-01T00:01:00Z')
      expect((await deliver(app, PING, {}, TICK)).status).toBe(202)
      expect(discovery.calls).toEqual([{ url: 'http://10.0.0.9:8080/mcp', token: TOKEN }])
      expect(teamServer(kube).status).toMatchObject({ phase: 'Ready', toolCount: 1 })
      expect(condition(teamServer(kube), 'ToolsDiscovered')).toMatchObject({ status: 'True', reason: 'Discovered' })

      const everything = JSON.stringify({ status: teamServer(kube).status, events: kube.events, lines, registry: kube.configMaps.get(`${NS}/mcp-servers`) })
      expect(everything).not.toContain(TOKEN)
      expect(everything).not.toContain(Buffer.from(TOKEN).toString('base64'))
    })

    it('lets an outage reading the Secret reach the Broker as 503, not as a finding', async () => {
      const kube = agentCluster().failNext('getSecret', new TransientError('connection refused'))
      const res = await deliver(createApp(depsWith(kube, { calls: [], result: found([]) })), RESOURCE_ADD, putTeam(kube), SERVERS)
      expect(res.status).toBe(503)
      expect(JSON.stringify(teamServer(kube).status ?? {})).not.toContain('SecretForbidden')
    })

    it('re-plans a lost race while reading the Secret, not a finding either', async () => {
      const kube = agentCluster().failNext('getSecret', new ConflictError('stale'))
      await kube.createSecret({ metadata: { name: 'tok', namespace: TEAM }, data: { token: Buffer.from(TOKEN).toString('base64') } })
      const discovery: Discovery = { calls: [], result: found(['echo']) }
      expect((await deliver(createApp(depsWith(kube, discovery)), RESOURCE_ADD, putTeam(kube), SERVERS)).status).toBe(202)
      expect(discovery.calls).toEqual([{ url: 'http://10.0.0.9:8080/mcp', token: TOKEN }])
      expect(teamServer(kube).status?.phase).toBe('Ready')
    })
  })

  it('starts no reconcile after 40 s of a tick, so slow servers cannot push it past its timeout; the rest are served by the next ticks', async () => {
    const kube = agentCluster()
    const names = Array.from({ length: 20 }, (_, i) => `ext-${i}`)
    for (const [i, name] of names.entries()) put(kube, { managed: false, url: `http://10.0.0.${i}:8000/mcp` }, name)
    const clock = { now: new Date('2026-01-01T00:00:00Z') }
    const discovery: Discovery = { calls: [], result: found(['echo']) }
    // Every discovery takes the full 5 s deadline.
    const slow: McpServerDeps = { ...depsWith(kube, discovery, clock), discover: async (target) => {
      discovery.calls.push(target)
      clock.now = new Date(clock.now.getTime() + 5_000)
      return discovery.result
    } }
    const app = createApp(slow)
    const perTick: number[] = []
    for (let tick = 0; tick < 5 && discovery.calls.length < names.length; tick++) {
      const before = discovery.calls.length
      expect((await deliver(app, PING, {}, TICK)).status).toBe(202)
      perTick.push(discovery.calls.length - before)
      clock.now = new Date(clock.now.getTime() + 60_000)
    }
    expect(perTick[0]).toBeGreaterThan(0)
    expect(perTick[0]).toBeLessThan(names.length)
    // Each server discovered once, all of them Ready within a few ticks.
    expect(new Set(discovery.calls.map((c) => c.url)).size).toBe(discovery.calls.length)
    expect(names.map((name) => stored(kube, name).status?.phase)).toEqual(names.map(() => 'Ready'))
  })

  it('reports a Deployment the API server refuses as DeploymentFailed, without redelivery', async () => {
    const kube = agentCluster().failNext('createDeployment', new Error('Deployment.apps "github" is invalid: spec.template.spec.containers[0].resources.requests: Invalid value: "2": must be less than or equal to cpu limit'))
    const res = await deliver(createApp(depsWith(kube, { calls: [], result: found([]) })), RESOURCE_ADD, put(kube, { resources: { requests: { cpu: '2' }, limits: { cpu: '1' } } }), SERVERS)
    expect(res.status).toBe(202)
    const server = stored(kube)
    expect(server.status?.phase).toBe('Error')
    expect(condition(server, 'Ready')).toMatchObject({ reason: 'DeploymentFailed', message: expect.stringContaining('must be less than or equal to cpu limit') })
    expect(kube.configMaps.size).toBe(0)
  })

  it('keeps a hand-edited registry it cannot read, reports it, and writes nothing to it', async () => {
    const kube = agentCluster()
    await kube.createConfigMap({ metadata: { name: 'mcp-servers', namespace: NS }, data: { servers: '[{"name": "x", ' } })
    const before = structuredClone(kube.configMaps.get(`${NS}/mcp-servers`))
    await deliver(createApp(depsWith(kube, { calls: [], result: found(['a']) })), RESOURCE_ADD, put(kube, { managed: false, url: 'http://e/mcp' }), SERVERS)
    expect(kube.configMaps.get(`${NS}/mcp-servers`)).toEqual(before)
    expect(condition(stored(kube), 'Ready')).toMatchObject({ status: 'False', reason: 'RegistryUnparseable' })
    expect(kube.events.some((e) => e.type === 'Warning' && e.reason === 'RegistryUnparseable')).toBe(true)
  })

  it('loses no registry entry when another writer wins the race', async () => {
    const kube = agentCluster()
    await kube.createConfigMap({ metadata: { name: 'mcp-servers', namespace: NS }, data: { servers: '[]' } })
    const app = createApp(depsWith(kube, { calls: [], result: found(['a']) }))
    // Another writer adds its entry between our read and our write.
    const original = kube.replaceConfigMap.bind(kube)
    let raced = false
    kube.replaceConfigMap = async (cm) => {
      if (!raced) {
        raced = true
        const live = kube.configMaps.get(`${NS}/mcp-servers`)!
        await original({ ...live, data: { servers: JSON.stringify([{ name: 'dashboard', url: 'http://d', auth: 'none' }]) } })
      }
      return original(cm)
    }
    expect((await deliver(app, RESOURCE_ADD, put(kube, { managed: false, url: 'http://e/mcp' }), SERVERS)).status).toBe(202)
    expect(registry(kube).entries.map((e) => e.name)).toEqual(['dashboard', 'github'])
  })

  it('makes a hand-deleted Deployment again when its delete event arrives', async () => {
    const kube = agentCluster()
    const app = createApp(depsWith(kube, { calls: [], result: found(['a']) }))
    await deliver(app, RESOURCE_ADD, put(kube, {}), SERVERS)
    const gone = structuredClone(kube.deployments.get(`${NS}/github`)!)
    kube.deployments.delete(`${NS}/github`)
    expect((await deliver(app, 'dev.knative.apiserver.resource.delete', gone, DEPLOYMENTS)).status).toBe(202)
    expect(kube.deployments.get(`${NS}/github`)?.spec?.template.spec?.containers[0]?.name).toBe('mcp-server')
    expect(kube.writes.slice(6)).toEqual(['create Deployment/github'])
  })

  it('answers 503 on an outage and converges on the redelivery', async () => {
    const kube = agentCluster().failNext('getConfigMap', new TransientError('connect ECONNREFUSED'))
    const app = createApp(depsWith(kube, { calls: [], result: found(['a']) }))
    const server = put(kube, { managed: false, url: 'http://e/mcp' })
    expect((await deliver(app, RESOURCE_ADD, server, SERVERS)).status).toBe(503)
    expect((await deliver(app, RESOURCE_ADD, server, SERVERS)).status).toBe(202)
    expect(stored(kube).status?.phase).toBe('Ready')
  })

  it('answers 409 when the status race is lost every time, so the Broker redelivers', async () => {
    const kube = agentCluster()
    for (let i = 0; i < 8; i++) kube.failNext('replaceMCPServerStatus', new ConflictError('modified'))
    const res = await deliver(createApp(depsWith(kube, { calls: [], result: found(['a']) })), RESOURCE_ADD, put(kube, { managed: false, url: 'http://e/mcp' }), SERVERS)
    expect(res.status).toBe(409)
  })

  it('refuses an event that is neither an object nor a reference with 400', async () => {
    const res = await deliver(createApp(depsWith(agentCluster(), { calls: [], result: found([]) })), RESOURCE_ADD, { hello: 'world' }, SERVERS)
    expect(res.status).toBe(400)
  })

  it('turns a Deployment that never becomes available into DeploymentUnavailable from the tick after 10 minutes', async () => {
    const kube = agentCluster()
    const clock = { now: new Date('2026-01-01T00:00:00Z') }
    const app = createApp(depsWith(kube, { calls: [], result: found([]) }, clock))
    await deliver(app, RESOURCE_ADD, put(kube, {}), SERVERS)
    clock.now = new Date('2026-01-01T00:09:00Z')
    await deliver(app, PING, {}, TICK)
    expect(stored(kube).status?.phase).toBe('Pending')
    clock.now = new Date('2026-01-01T00:10:00Z')
    await deliver(app, PING, {}, TICK)
    expect(condition(stored(kube), 'Ready')).toMatchObject({ status: 'False', reason: 'DeploymentUnavailable' })
    expect(stored(kube).status?.phase).toBe('Error')
  })
})

describe('mcpserver-changed: an MCPServer of the same name in another namespace (issue 27)', () => {
  function putIn(kube: EmbeddedKube, namespace: string, name: string, spec: Record<string, unknown>): MCPServer {
    const existing = kube.mcpServers.get(`${namespace}/${name}`)
    const server = MCPServerSchema.parse({
      apiVersion: 'purko.io/v1alpha1', kind: 'MCPServer',
      metadata: { name, namespace, uid: `uid-${namespace}-${name}`, generation: 1, ...(existing ? { finalizers: existing.metadata.finalizers } : {}), resourceVersion: `r${++rv}` },
      spec: { image: 'none', managed: false, ...spec },
      ...(existing?.status ? { status: existing.status } : {}),
    })
    kube.mcpServers.set(`${namespace}/${name}`, server)
    return structuredClone(server)
  }
  // knative/platform/recipes-mcp.yaml, and the impostor of the issue.
  const PLATFORM = { url: 'http://recipes-mcp.kinetic-system.svc.cluster.local/mcp', transport: 'http', auth: 'bearer', secretRef: 'recipes-mcp-token', category: 'platform' }
  const IMPOSTOR = { url: 'https://attacker.example/mcp', auth: 'bearer', secretRef: 'recipes-mcp-token' }

  it('registers the impostor beside the platform entry, never in its place, reports the clash, and its deletion leaves the platform entry', async () => {
    const kube = agentCluster()
    const app = createApp(depsWith(kube, { calls: [], result: found(['list-recipes']) }))
    await deliver(app, RESOURCE_ADD, putIn(kube, NS, 'recipes', PLATFORM), SERVERS)
    const platformEntry = registry(kube).entries.find((e) => e.name === 'recipes')
    expect(platformEntry).toMatchObject({ url: PLATFORM.url, namespace: NS })

    await deliver(app, RESOURCE_ADD, putIn(kube, 'evil', 'recipes', IMPOSTOR), SERVERS)
    expect(registry(kube).entries).toEqual([platformEntry, expect.objectContaining({ name: 'recipes', url: IMPOSTOR.url, namespace: 'evil' })])
    const impostor = structuredClone(kube.mcpServers.get('evil/recipes')!)
    expect(condition(impostor, 'NameConflict')).toMatchObject({ status: 'True', reason: 'NameConflict' })
    expect(condition(impostor, 'NameConflict')?.message).toMatch(/^namespace ai-agents also registers a server named recipes; neither entry replaces the other/)
    expect(kube.events.filter((e) => e.reason === 'NameConflict').map((e) => [e.type, e.involvedObject?.namespace])).toEqual([['Warning', 'evil']])

    // The platform server's next reconcile keeps its entry as it is: nothing to write.
    const writes = kube.writes.length
    await deliver(app, PING, {}, TICK)
    await deliver(app, RESOURCE_UPDATE, putIn(kube, NS, 'recipes', PLATFORM), SERVERS)
    expect(kube.writes.slice(writes).filter((w) => w.includes('ConfigMap'))).toEqual([])

    impostor.metadata.deletionTimestamp = '2026-01-01T00:06:00Z'
    impostor.metadata.resourceVersion = `r${++rv}`
    kube.mcpServers.set('evil/recipes', impostor)
    expect((await deliver(app, RESOURCE_UPDATE, impostor, SERVERS)).status).toBe(202)
    expect(kube.mcpServers.has('evil/recipes')).toBe(false)
    expect(registry(kube).entries).toEqual([platformEntry])
  })

  it('takes over its own entry from before entries named their owner only when it points at its own Service; any other entry without an owner stays the agent namespace\'s', async () => {
    const kube = agentCluster()
    const legacy = [
      { name: 'web', url: 'http://web.team.svc:8000/mcp', auth: 'none', icon: '', category: 'recipe' },
      { name: 'recipes', url: 'https://attacker.example/mcp', auth: 'bearer', icon: '', category: '', secretRef: 'recipes-mcp-token' },
    ]
    await kube.createConfigMap({ metadata: { name: 'mcp-servers', namespace: NS }, data: { servers: JSON.stringify(legacy) } })
    const app = createApp(depsWith(kube, { calls: [], result: found(['a']) }))
    await deliver(app, RESOURCE_ADD, putIn(kube, 'team', 'web', { url: 'http://web.team.svc:8000/mcp', category: 'recipe' }), SERVERS)
    await deliver(app, RESOURCE_ADD, putIn(kube, 'evil', 'recipes', IMPOSTOR), SERVERS)
    expect(registry(kube).entries.map((e) => [e.name, e.namespace ?? '(agent namespace)'])).toEqual([['web', 'team'], ['recipes', '(agent namespace)'], ['recipes', 'evil']])
    // The platform's own MCPServer repairs what an impostor wrote into its entry before the upgrade.
    await deliver(app, RESOURCE_ADD, putIn(kube, NS, 'recipes', PLATFORM), SERVERS)
    expect(registry(kube).entries.filter((e) => e.name === 'recipes').map((e) => [e.url, e.namespace])).toEqual([[PLATFORM.url, NS], [IMPOSTOR.url, 'evil']])
  })

  it('two tenants of the same name that no step sees together are no conflict', async () => {
    const kube = agentCluster()
    const app = createApp(depsWith(kube, { calls: [], result: found(['a']) }))
    await deliver(app, RESOURCE_ADD, putIn(kube, 'team-a', 'github', { url: 'http://gh.example/a' }), SERVERS)
    await deliver(app, RESOURCE_ADD, putIn(kube, 'team-b', 'github', { url: 'http://gh.example/b' }), SERVERS)
    expect(registry(kube).entries.map((e) => `${e.namespace}/${e.name}`)).toEqual(['team-a/github', 'team-b/github'])
    expect(condition(kube.mcpServers.get('team-b/github')!, 'NameConflict')).toBeUndefined()
    expect(kube.events.filter((e) => e.reason === 'NameConflict')).toEqual([])
  })
})
