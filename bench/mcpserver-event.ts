// MCPServer benchmark: mcpserver-changed over 10 / 100 / 1,000 MCPServers on EmbeddedKube (the
// real client over HTTP to the embedded API server, in this process), with discovery against a real MCP server (the SDK's, Streamable HTTP) on
// 127.0.0.1: API calls and time per event for the first event of a server (finalizer,
// Deployment, Service, registry entry, status), the echo of its own status write, the
// Deployment becoming Available (pods listed, tools discovered), a redelivered Deployment event,
// and the resync tick when nothing is due and when every server is due for its refresh.
// Run: node --import tsx bench/mcpserver-event.ts   (BENCH_MCP_SIZES=10,100,1000)
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import { createApp } from '../functions/mcpserver-changed/index.js'
import { discoverTools } from '../shared/mcp/discovery.js'
import { MCPServerSchema } from '../shared/schemas/mcpserver.js'
import { countingKube } from '../test/support/counting-kube.js'
import { deliver, PING, RESOURCE_ADD, RESOURCE_UPDATE } from '../test/support/deliver.js'
import { EmbeddedKube } from '../test/support/embedded-kube.js'
import { testDeps } from '../test/support/engine-deps.js'

const SIZES = (process.env.BENCH_MCP_SIZES ?? '10,100,1000').split(',').map(Number)
const NS = 'ai-agents'

const http = createServer(async (req, res) => {
  const server = new McpServer({ name: 'bench', version: '1.0.0' })
  for (const name of ['search', 'read', 'write']) server.registerTool(name, { description: `${name} things` }, async () => ({ content: [] }))
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined })
  res.on('close', () => void transport.close().then(() => server.close()))
  await server.connect(transport)
  await transport.handleRequest(req, res)
})
await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve))
const local = `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`

const fmt = (calls: Map<string, number>, per: number) =>
  [...calls].sort().map(([k, v]) => `${k} ${Number.isInteger(v / per) ? v / per : (v / per).toFixed(2)}`).join(', ') || 'none'

for (const n of SIZES) {
  const cluster = new EmbeddedKube()
  const m = countingKube(cluster)
  const clock = { now: new Date('2026-03-01T00:00:00Z') }
  // Managed servers are reached at their Service URL in a cluster; here every one is the local server.
  const app = createApp({ ...testDeps(m.kube, clock), discover: (target, opts) => discoverTools({ ...target, url: local }, opts) })
  for (let i = 0; i < n; i++) {
    cluster.mcpServers.set(`${NS}/s${i}`, MCPServerSchema.parse({
      apiVersion: 'purko.io/v1alpha1', kind: 'MCPServer', metadata: { name: `s${i}`, namespace: NS, uid: `uid-${i}`, generation: 1, resourceVersion: `r${i}` }, spec: { image: 'mcp:1' },
    }))
  }
  const stored = (i: number) => structuredClone(cluster.mcpServers.get(`${NS}/s${i}`)!)
  const phase = async (label: string, each: (i: number) => Promise<unknown>, count = n) => {
    m.reset()
    const start = performance.now()
    for (let i = 0; i < count; i++) {
      const res = await each(i)
      // A refused event (400: no Trigger sends it) would measure nothing.
      if (res instanceof Response && res.status !== 202) throw new Error(`${label}: answered ${res.status}`)
    }
    const ms = performance.now() - start
    const total = [...m.calls.values()].reduce((a, b) => a + b, 0)
    console.log(`${String(n).padStart(5)} servers  ${label.padEnd(34)} ${(ms / count).toFixed(2).padStart(7)} ms/event  ${(total / count).toFixed(2).padStart(5)} API calls/event  (${fmt(m.calls, count)})`)
  }
  await phase('first event (add)', (i) => deliver(app, RESOURCE_ADD, stored(i), { kineticsource: 'resources' }))
  await phase('echo of its own status write', (i) => deliver(app, RESOURCE_UPDATE, stored(i), { kineticsource: 'resources' }))
  for (let i = 0; i < n; i++) {
    cluster.setStatus('Deployment', NS, `s${i}`, { observedGeneration: 0, replicas: 1, updatedReplicas: 1, availableReplicas: 1, conditions: [{ type: 'Available', status: 'True' }] })
    cluster.pods.set(`${NS}/s${i}-p`, { metadata: { name: `s${i}-p`, namespace: NS, uid: `p${i}`, labels: { 'purko.io/mcp-server': `s${i}` } }, status: { phase: 'Running', podIP: '10.0.0.1' } })
  }
  await phase('Deployment Available: discovery', (i) => deliver(app, RESOURCE_UPDATE, cluster.deployments.get(`${NS}/s${i}`), { kineticsource: 'resources', kind: 'Deployment' }))
  await phase('Deployment event, nothing new', (i) => deliver(app, RESOURCE_UPDATE, cluster.deployments.get(`${NS}/s${i}`), { kineticsource: 'resources', kind: 'Deployment' }))
  await phase('resync tick, nothing due', () => deliver(app, PING, {}, { kineticsource: 'mcpserverresync' }), 1)
  clock.now = new Date(clock.now.getTime() + 40 * 60_000)
  await phase('resync tick, all due (<= 32 taken)', () => deliver(app, PING, {}, { kineticsource: 'mcpserverresync' }), 1)
}
http.close()
