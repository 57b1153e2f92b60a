import type { ChildProcessWithoutNullStreams } from 'node:child_process'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { KubeConfig } from '@kubernetes/client-node'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { afterEach, describe, expect, it } from 'vitest'
import { attachPath, attachToContainer, attachWithRetry, type Attached } from '../../mcp-bridge/attach.js'
import { createBridge } from '../../mcp-bridge/bridge.js'
import { discoverTools } from '../../shared/mcp/discovery.js'
import { silentLogger } from '../../shared/log.js'
import { runAsContainer, startFakeAttach, type Conn, type FakeAttach } from './fake-attach.js'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..')
const FIXTURE = join(ROOT, 'test', 'mcp-bridge', 'fixtures', 'stdio-server.ts')
const TARGET = { namespace: 'tools', pod: 'files-7d9f-abcde', container: 'mcp-server' }

const cleanups: (() => unknown)[] = []
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c()
})

function kubeConfigFor(fake: FakeAttach): KubeConfig {
  const kc = new KubeConfig()
  kc.loadFromOptions({
    clusters: [{ name: 'fake', server: fake.url, skipTLSVerify: true }],
    users: [{ name: 'bridge', token: 'sa-token-abc' }],
    contexts: [{ name: 'fake', cluster: 'fake', user: 'bridge' }],
    currentContext: 'fake',
  })
  return kc
}

async function fake(onConnect: (conn: Conn) => void = () => undefined, accept?: Parameters<typeof startFakeAttach>[1]): Promise<FakeAttach> {
  const f = await startFakeAttach(onConnect, accept)
  cleanups.push(() => f.close())
  return f
}

function collect(attached: Attached): () => string {
  let text = ''
  attached.stdout.on('data', (chunk: Buffer) => { text += chunk.toString('utf8') })
  return () => text
}

const until = async (check: () => boolean, ms = 5000) => {
  const end = Date.now() + ms
  while (!check()) {
    if (Date.now() > end) throw new Error('timed out waiting')
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

describe('the attach client', () => {
  it('asks the API server for stdin and stdout of the container, no stderr, no tty, with its credentials', async () => {
    const f = await fake()
    const attached = await attachToContainer(kubeConfigFor(f), TARGET)
    cleanups.push(() => attached.close())
    const { request } = f.connections[0]!
    expect(`${request.path}?${request.query}`).toBe(attachPath(TARGET))
    expect(request.path).toBe('/api/v1/namespaces/tools/pods/files-7d9f-abcde/attach')
    expect(Object.fromEntries(request.query)).toEqual({ container: 'mcp-server', stdin: 'true', stdout: 'true', stderr: 'false', tty: 'false' })
    expect(request.authorization).toBe('Bearer sa-token-abc')
    expect(request.protocols).toEqual(expect.arrayContaining(['v5.channel.k8s.io', 'v4.channel.k8s.io']))
    expect(attached.protocol).toBe('v5.channel.k8s.io')
  })

  it('frames stdin on channel 0, reads channel 1 as stdout, ignores stderr, and half-closes stdin with v5', async () => {
    const received: Buffer[] = []
    const f = await fake((conn) => conn.onMessage((data) => received.push(data)))
    const attached = await attachToContainer(kubeConfigFor(f), TARGET)
    const output = collect(attached)
    const conn = f.connections[0]!

    attached.stdin.write('{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
    await until(() => received.length === 1)
    expect(received[0]![0]).toBe(0)
    expect(received[0]!.subarray(1).toString()).toBe('{"jsonrpc":"2.0","id":1,"method":"ping"}\n')

    conn.send(2, 'a log line on stderr\n')
    conn.send(1, '{"jsonrpc":"2.0",')
    conn.send(1, '"id":1,"result":{}}\n')
    await until(() => output().endsWith('\n'))
    expect(output()).toBe('{"jsonrpc":"2.0","id":1,"result":{}}\n')

    attached.stdin.end()
    await until(() => received.length === 2)
    expect([...received[1]!]).toEqual([255, 0])
    attached.close()
  })

  it('ends stdout and reports why when the API server sends a status and closes', async () => {
    const f = await fake()
    const attached = await attachToContainer(kubeConfigFor(f), TARGET)
    let ended = false
    attached.stdout.on('end', () => { ended = true }).resume()
    const conn = f.connections[0]!
    conn.send(3, JSON.stringify({ kind: 'Status', status: 'Failure', message: 'container mcp-server exited with 1' }))
    conn.close()
    expect(await attached.closed).toBe('the API server ended the attach: container mcp-server exited with 1')
    expect(ended).toBe(true)
  })

  it('closes the connection when stdin ends on the v4 protocol, which has no half-close', async () => {
    let closed = false
    const f = await fake((conn) => conn.onClose(() => { closed = true }), () => ({ protocol: 'v4.channel.k8s.io' }))
    const attached = await attachToContainer(kubeConfigFor(f), TARGET)
    expect(attached.protocol).toBe('v4.channel.k8s.io')
    attached.stdout.resume()
    attached.stdin.end()
    expect(await attached.closed).toMatch(/the attach connection closed \(1000/)
    await until(() => closed)
  })

  it('fails when the API server refuses the attach, and retries while the container is not running yet', async () => {
    const refused = await fake(undefined, () => 403)
    await expect(attachToContainer(kubeConfigFor(refused), TARGET)).rejects.toThrow(/403/)

    let calls = 0
    const starting = await fake(undefined, () => (++calls < 3 ? 400 : {}))
    const retries: number[] = []
    const attached = await attachWithRetry(kubeConfigFor(starting), TARGET, { delayMs: 1, onRetry: (_, n) => retries.push(n) })
    cleanups.push(() => attached.close())
    expect(retries).toEqual([1, 2])

    let clock = 0
    await expect(attachWithRetry(kubeConfigFor(refused), TARGET, {
      timeoutMs: 2000, delayMs: 500, now: () => clock, sleep: async (ms) => { clock += ms },
    })).rejects.toThrow(/403/)
    expect(clock).toBeGreaterThanOrEqual(1500)
  })
})

describe('bridge over attach, end to end', () => {
  async function podWithStdioServer(): Promise<{ url: string; child: () => ChildProcessWithoutNullStreams; ended: Promise<string> }> {
    let child: ChildProcessWithoutNullStreams | undefined
    // The fake API server plays the container runtime: channel 0 goes to the server's stdin,
    // its stdout comes back on channel 1, and its exit is a status frame and a close.
    const f = await fake((conn) => {
      const c = runAsContainer(conn, process.execPath, ['--import', 'tsx', FIXTURE], ROOT)
      child = c
      cleanups.push(() => c.kill())
    })
    const attached = await attachToContainer(kubeConfigFor(f), TARGET)
    const bridge = createBridge({ toServer: attached.stdin, fromServer: attached.stdout, log: silentLogger })
    const server: Server = createServer(bridge.handle)
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    cleanups.push(() => new Promise((resolve) => {
      server.closeAllConnections()
      server.close(resolve)
    }))
    return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, child: () => child!, ended: bridge.ended }
  }

  it('makes a stdio server in another container discoverable and callable at the bridge URL', async () => {
    const pod = await podWithStdioServer()
    const result = await discoverTools({ url: pod.url }, { timeoutMs: 10_000 })
    expect(result).toMatchObject({ ok: true, transport: 'streamable-http', serverName: 'stdio-fixture' })
    if (result.ok) expect(result.tools.map((t) => t.name)).toEqual(['echo', 'slow', 'pid'])

    const client = new Client({ name: 'agent', version: '1' })
    await client.connect(new StreamableHTTPClientTransport(new URL(`${pod.url}/mcp`)))
    cleanups.push(() => client.close())
    const answer = await client.callTool({ name: 'echo', arguments: { text: 'through the API server' } })
    expect((answer as { content: { text: string }[] }).content[0]!.text).toBe('through the API server')
  }, 30_000)

  it('ends the bridge when the container exits', async () => {
    const pod = await podWithStdioServer()
    await discoverTools({ url: pod.url }, { timeoutMs: 10_000 })
    pod.child().kill()
    expect(await pod.ended).toMatch(/closed/)
  }, 30_000)
})
