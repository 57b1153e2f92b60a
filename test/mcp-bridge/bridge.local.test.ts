import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { afterEach, describe, expect, it } from 'vitest'
import { createBridge, type Bridge } from '../../mcp-bridge/bridge.js'
import { discoverTools } from '../../shared/mcp/discovery.js'
import { silentLogger } from '../../shared/log.js'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..')
const FIXTURE = join(ROOT, 'test', 'mcp-bridge', 'fixtures', 'stdio-server.ts')

interface Running { child: ChildProcessWithoutNullStreams; bridge: Bridge; server: Server; url: string }
const running: Running[] = []
const clients: Client[] = []

async function startBridge(env: Record<string, string> = {}, options: { authToken?: string } = {}): Promise<Running> {
  const child = spawn(process.execPath, ['--import', 'tsx', FIXTURE], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] })
  const bridge = createBridge({ toServer: child.stdin, fromServer: child.stdout, log: silentLogger, ...options })
  const server = createServer(bridge.handle)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const r = { child, bridge, server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }
  running.push(r)
  return r
}

async function connect(url: string, headers: Record<string, string> = {}): Promise<Client> {
  const client = new Client({ name: 'test-client', version: '1' })
  await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit: { headers } }))
  clients.push(client)
  return client
}

const text = (result: unknown) => ((result as { content: { text: string }[] }).content[0]!.text)

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close().catch(() => undefined)))
  for (const r of running.splice(0)) {
    r.child.kill()
    r.server.closeAllConnections()
    await new Promise((resolve) => r.server.close(resolve))
  }
})

describe('the stdio bridge with a real stdio MCP server', () => {
  it('serves initialize, tools/list and tools/call over Streamable HTTP', async () => {
    const { url } = await startBridge()
    const client = await connect(url)
    expect(client.getServerVersion()).toMatchObject({ name: 'stdio-fixture', version: '0.0.1' })
    const { tools } = await client.listTools()
    expect(tools.map((t) => t.name)).toEqual(['echo', 'slow', 'pid'])
    expect(text(await client.callTool({ name: 'echo', arguments: { text: 'hello bridge' } }))).toBe('hello bridge')
  }, 30_000)

  it('keeps two concurrent clients apart although both number their requests alike', async () => {
    const { url } = await startBridge()
    const [a, b] = await Promise.all([connect(url), connect(url)])
    const progressA: number[] = []
    const progressB: number[] = []
    const [ra, rb] = await Promise.all([
      a.callTool({ name: 'slow', arguments: { ms: 300, tag: 'A' } }, undefined, { onprogress: (p) => progressA.push(p.progress) }),
      b.callTool({ name: 'slow', arguments: { ms: 50, tag: 'B' } }, undefined, { onprogress: (p) => progressB.push(p.progress) }),
    ])
    expect(text(ra)).toBe('done A')
    expect(text(rb)).toBe('done B')
    // Both talk to the one server process.
    expect(text(await a.callTool({ name: 'pid', arguments: {} }))).toBe(text(await b.callTool({ name: 'pid', arguments: {} })))
    expect({ progressA, progressB }).toEqual({ progressA: [1], progressB: [1] })
  }, 30_000)

  it('makes the stdio server discoverable at its URL', async () => {
    const { url } = await startBridge()
    const result = await discoverTools({ url }, { timeoutMs: 10_000 })
    expect(result).toEqual({
      ok: true,
      transport: 'streamable-http',
      truncated: false,
      serverName: 'stdio-fixture',
      tools: [
        { name: 'echo', description: 'Echoes its text', readOnly: true },
        { name: 'slow', description: 'Answers after a delay, reporting progress' },
        { name: 'pid', description: 'The process id of the server' },
      ],
    })
  }, 30_000)

  it('ignores a line on stdout that is not JSON-RPC', async () => {
    const { url } = await startBridge({ FIXTURE_NOISE: '1' })
    const client = await connect(url)
    expect(text(await client.callTool({ name: 'echo', arguments: { text: 'still fine' } }))).toBe('still fine')
  }, 30_000)

  it('is ready once the server answered initialize, and ends with an error for waiting clients when the server exits', async () => {
    const r = await startBridge()
    const client = await connect(r.url)
    expect((await fetch(`${r.url}/health/readiness`)).status).toBe(200)
    const waiting = client.callTool({ name: 'slow', arguments: { ms: 10_000, tag: 'never' } })
    await new Promise((resolve) => setTimeout(resolve, 200))
    r.child.kill()
    await expect(waiting).rejects.toThrow(/stream ended/)
    expect(await r.bridge.ended).toMatch(/closed/)
    expect((await fetch(`${r.url}/health/readiness`)).status).toBe(503)
    expect((await fetch(`${r.url}/health/liveness`)).status).toBe(503)
    const after = await fetch(`${r.url}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"jsonrpc":"2.0","id":1,"method":"tools/list"}' })
    expect(after.status).toBe(503)
  }, 30_000)

  it('requires the bearer token when it is given one', async () => {
    const { url } = await startBridge({}, { authToken: 'bridge-token-123' })
    await expect(connect(url)).rejects.toThrow()
    const client = await connect(url, { authorization: 'Bearer bridge-token-123' })
    expect((await client.listTools()).tools).toHaveLength(3)
    expect(await discoverTools({ url, token: 'bridge-token-123' }, { timeoutMs: 10_000 })).toMatchObject({ ok: true })
    expect(await discoverTools({ url, token: 'wrong' }, { timeoutMs: 10_000 })).toMatchObject({ ok: false, reason: 'Unauthorized' })
  }, 30_000)
})
