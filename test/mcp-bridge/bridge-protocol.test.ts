import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { PassThrough } from 'node:stream'
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js'
import { afterEach, describe, expect, it } from 'vitest'
import { createBridge, type Bridge, type BridgeOptions } from '../../mcp-bridge/bridge.js'
import { LineReader } from '../../mcp-bridge/framing.js'
import { silentLogger } from '../../shared/log.js'

// A scripted server on a stream pair: the test sees every line the bridge writes to the
// server's stdin and writes the server's stdout itself, so it can check the exact bytes.
interface Scripted {
  bridge: Bridge
  url: string
  /** Lines the bridge wrote to the server, parsed. */
  seen: Record<string, any>[]
  /** Writes one line as the server. */
  say(message: unknown): void
  /** Waits for the next message the bridge sends that matches. */
  next(match: (m: Record<string, any>) => boolean): Promise<Record<string, any>>
  stdout: PassThrough
}

const servers: Server[] = []
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections()
    await new Promise((resolve) => s.close(resolve))
  }
})

async function scripted(options: Partial<BridgeOptions> = {}, { answerInit = true } = {}): Promise<Scripted> {
  const stdin = new PassThrough()
  const stdout = new PassThrough()
  const seen: Record<string, any>[] = []
  const waiters: { match: (m: Record<string, any>) => boolean; resolve: (m: Record<string, any>) => void }[] = []
  const reader = new LineReader(1 << 20)
  const say = (message: unknown) => void stdout.write(`${typeof message === 'string' ? message : JSON.stringify(message)}\n`)
  stdin.on('data', (chunk: Buffer) => {
    for (const line of reader.push(chunk).lines) {
      const m = JSON.parse(line)
      seen.push(m)
      if (answerInit && m.method === 'initialize' && seen.length === 1) {
        say({ jsonrpc: '2.0', id: m.id, result: { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'scripted', version: '1' } } })
      }
      for (const w of [...waiters]) if (w.match(m)) {
        waiters.splice(waiters.indexOf(w), 1)
        w.resolve(m)
      }
    }
  })
  const bridge = createBridge({ toServer: stdin, fromServer: stdout, log: silentLogger, ...options })
  const server = createServer(bridge.handle)
  servers.push(server)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const next = (match: (m: Record<string, any>) => boolean) => new Promise<Record<string, any>>((resolve) => {
    const found = seen.find(match)
    if (found) {
      seen.splice(seen.indexOf(found), 1)
      resolve(found)
    } else {
      waiters.push({ match, resolve: (m) => {
        seen.splice(seen.indexOf(m), 1)
        resolve(m)
      } })
    }
  })
  return { bridge, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`, seen, say, next, stdout }
}

const JSON_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }
function post(url: string, body: unknown, headers: Record<string, string> = {}, signal?: AbortSignal) {
  return fetch(url, { method: 'POST', headers: { ...JSON_HEADERS, ...headers }, body: typeof body === 'string' ? body : JSON.stringify(body), ...(signal ? { signal } : {}) })
}
async function initialize(url: string, protocolVersion = LATEST_PROTOCOL_VERSION): Promise<{ session: string; body: any }> {
  const res = await post(url, { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion, capabilities: { sampling: {} }, clientInfo: { name: 'c', version: '1' } } })
  return { session: res.headers.get('mcp-session-id')!, body: await res.json() }
}
const isRequest = (method: string) => (m: Record<string, any>) => m.method === method && m.id !== undefined

describe('LineReader', () => {
  it('splits lines across chunks, drops \\r, skips blank lines', () => {
    const r = new LineReader(100)
    expect(r.push(Buffer.from('{"a":1}\r\n{"b"'))).toEqual({ lines: ['{"a":1}'], dropped: [] })
    expect(r.push(Buffer.from(':2}\n\n'))).toEqual({ lines: ['{"b":2}'], dropped: [] })
  })

  it('drops a line longer than the limit whole and carries on with the next', () => {
    const r = new LineReader(10)
    expect(r.push(Buffer.from('0123456789abc'))).toEqual({ lines: [], dropped: [] })
    expect(r.push(Buffer.from('def\nok\n'))).toEqual({ lines: ['ok'], dropped: [16] })
  })
})

describe('the bridge protocol', () => {
  it('initializes the server once with no client capabilities and answers clients of that version itself', async () => {
    const s = await scripted()
    const init = await s.next(isRequest('initialize'))
    expect(init.params).toEqual({ protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 'kinetic-mcp-bridge', version: '1.0.0' } })
    await s.next((m) => m.method === 'notifications/initialized')

    const { session, body } = await initialize(s.url)
    expect(session).toMatch(/^[0-9a-f-]{36}$/)
    expect(body).toEqual({ jsonrpc: '2.0', id: 0, result: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: { tools: {} }, serverInfo: { name: 'scripted', version: '1' } } })
    expect((await post(s.url, { jsonrpc: '2.0', method: 'notifications/initialized' }, { 'mcp-session-id': session })).status).toBe(202)
    expect(s.seen).toEqual([]) // neither the initialize nor the initialized notification reached the server
    expect(s.bridge.ready).toBe(true)
  })

  it('forwards an initialize asking for another protocol version, without the client capabilities', async () => {
    const s = await scripted()
    await s.next(isRequest('initialize'))
    await s.next((m) => m.method === 'notifications/initialized')
    const pending = initialize(s.url, '2025-03-26')
    const forwarded = await s.next(isRequest('initialize'))
    expect(forwarded.params).toEqual({ protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 'c', version: '1' } })
    s.say({ jsonrpc: '2.0', id: forwarded.id, result: { protocolVersion: '2025-03-26', capabilities: {}, serverInfo: { name: 'scripted', version: '1' } } })
    const { session, body } = await pending
    expect(body.result.protocolVersion).toBe('2025-03-26')
    await post(s.url, { jsonrpc: '2.0', method: 'notifications/initialized' }, { 'mcp-session-id': session })
    expect(await s.next((m) => m.method === 'notifications/initialized')).toEqual({ jsonrpc: '2.0', method: 'notifications/initialized' })
  })

  it('gives each request a bridge-wide id and restores the client id on the response, in any order', async () => {
    const s = await scripted()
    const a = await initialize(s.url)
    const b = await initialize(s.url)
    const ra = post(s.url, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, { 'mcp-session-id': a.session })
    const rb = post(s.url, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'x' } }, { 'mcp-session-id': b.session })
    const la = await s.next(isRequest('tools/list'))
    const lb = await s.next(isRequest('tools/call'))
    expect(typeof la.id).toBe('number')
    expect(la.id).not.toBe(lb.id)
    s.say({ jsonrpc: '2.0', id: lb.id, result: { content: [{ type: 'text', text: 'B' }] } })
    s.say({ jsonrpc: '2.0', id: la.id, result: { tools: [] } })
    expect(await (await ra).json()).toEqual({ jsonrpc: '2.0', id: 1, result: { tools: [] } })
    expect(await (await rb).json()).toEqual({ jsonrpc: '2.0', id: 1, result: { content: [{ type: 'text', text: 'B' }] } })
  })

  it('answers a batch with a batch', async () => {
    const s = await scripted()
    const res = post(s.url, [{ jsonrpc: '2.0', id: 'x', method: 'tools/list' }, { jsonrpc: '2.0', method: 'notifications/roots/list_changed' }, { jsonrpc: '2.0', id: 'y', method: 'prompts/list' }])
    const x = await s.next(isRequest('tools/list'))
    const y = await s.next(isRequest('prompts/list'))
    expect(await s.next((m) => m.method === 'notifications/roots/list_changed')).toEqual({ jsonrpc: '2.0', method: 'notifications/roots/list_changed' })
    s.say([{ jsonrpc: '2.0', id: y.id, result: { prompts: [] } }, { jsonrpc: '2.0', id: x.id, result: { tools: [] } }])
    expect(await (await res).json()).toEqual([{ jsonrpc: '2.0', id: 'x', result: { tools: [] } }, { jsonrpc: '2.0', id: 'y', result: { prompts: [] } }])
  })

  it('answers a server ping itself and refuses other server requests', async () => {
    const s = await scripted()
    s.say({ jsonrpc: '2.0', id: 'srv-1', method: 'ping' })
    s.say({ jsonrpc: '2.0', id: 'srv-2', method: 'sampling/createMessage', params: {} })
    expect(await s.next((m) => m.id === 'srv-1')).toEqual({ jsonrpc: '2.0', id: 'srv-1', result: {} })
    expect(await s.next((m) => m.id === 'srv-2')).toEqual({ jsonrpc: '2.0', id: 'srv-2', error: { code: -32601, message: 'sampling/createMessage is not available through the stdio bridge' } })
  })

  it('sends server notifications to open GET streams and progress to the request it belongs to', async () => {
    const s = await scripted()
    const a = await initialize(s.url)
    const stream = await fetch(s.url, { headers: { accept: 'text/event-stream', 'mcp-session-id': a.session } })
    expect(stream.headers.get('content-type')).toBe('text/event-stream')
    const reader = stream.body!.getReader()
    let received = ''
    const until = async (text: string) => {
      while (!received.includes(text)) received += new TextDecoder().decode((await reader.read()).value)
    }
    s.say({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' })
    await until('list_changed')
    expect(received).toContain('data: {"jsonrpc":"2.0","method":"notifications/tools/list_changed"}')

    const call = post(s.url, { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'slow', _meta: { progressToken: 'mine' } } }, { 'mcp-session-id': a.session })
    const forwarded = await s.next(isRequest('tools/call'))
    expect(forwarded.params._meta.progressToken).toBe(forwarded.id)
    s.say({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: forwarded.id, progress: 1 } })
    s.say({ jsonrpc: '2.0', id: forwarded.id, result: { content: [] } })
    const res = await call
    expect(res.headers.get('content-type')).toBe('text/event-stream')
    const events = (await res.text()).split('\n').filter((l) => l.startsWith('data: ')).map((l) => JSON.parse(l.slice(6)))
    expect(events).toEqual([
      { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'mine', progress: 1 } },
      { jsonrpc: '2.0', id: 7, result: { content: [] } },
    ])
    await reader.cancel()
  })

  it('drops a line over the limit and a line that is not JSON, and keeps serving', async () => {
    const s = await scripted({ maxLineBytes: 4096 })
    const res = post(s.url, { jsonrpc: '2.0', id: 1, method: 'tools/list' })
    const forwarded = await s.next(isRequest('tools/list'))
    s.say({ jsonrpc: '2.0', id: forwarded.id, result: { tools: [], pad: 'x'.repeat(5000) } })
    s.say('this is not json')
    s.say({ jsonrpc: '2.0', id: forwarded.id, result: { tools: [] } })
    expect(await (await res).json()).toEqual({ jsonrpc: '2.0', id: 1, result: { tools: [] } })
  })

  it('answers a request the server never answers with an error and cancels it at the server', async () => {
    const s = await scripted({ requestTimeoutMs: 200 })
    const res = post(s.url, { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'hang' } })
    const forwarded = await s.next(isRequest('tools/call'))
    expect(await (await res).json()).toEqual({ jsonrpc: '2.0', id: 3, error: { code: -32001, message: 'The MCP server did not answer tools/call within 0 s' } })
    expect(await s.next((m) => m.method === 'notifications/cancelled')).toEqual({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: forwarded.id, reason: 'timed out at the bridge' } })
  })

  it('cancels at the server what a client cancels or hangs up on, by the bridge id', async () => {
    const s = await scripted()
    const a = await initialize(s.url)
    const first = post(s.url, { jsonrpc: '2.0', id: 'q', method: 'tools/call', params: { name: 'a' } }, { 'mcp-session-id': a.session })
    const f1 = await s.next(isRequest('tools/call'))
    await post(s.url, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'q', reason: 'user' } }, { 'mcp-session-id': a.session })
    expect(await s.next((m) => m.method === 'notifications/cancelled')).toEqual({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: f1.id, reason: 'user' } })
    expect((await (await first).json()).error.code).toBe(-32800)

    const keep = post(s.url, { jsonrpc: '2.0', id: 'k', method: 'tools/call', params: { name: 'keep' } }, { 'mcp-session-id': a.session })
    const fk = await s.next(isRequest('tools/call'))
    const abort = new AbortController()
    const second = post(s.url, { jsonrpc: '2.0', id: 'r', method: 'tools/call', params: { name: 'b' } }, { 'mcp-session-id': a.session }, abort.signal)
    const f2 = await s.next(isRequest('tools/call'))
    abort.abort()
    await expect(second).rejects.toThrow()
    expect(await s.next((m) => m.method === 'notifications/cancelled')).toEqual({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: f2.id, reason: 'client disconnected' } })
    // Only the request of the connection that hung up: the other one of the session still waits.
    s.say({ jsonrpc: '2.0', id: fk.id, result: { content: [] } })
    expect(await (await keep).json()).toEqual({ jsonrpc: '2.0', id: 'k', result: { content: [] } })
    expect(s.seen.filter((m) => m.method === 'notifications/cancelled')).toEqual([])
  })

  it.each([
    ['an unknown session', 404, () => ({ body: '{"jsonrpc":"2.0","id":1,"method":"tools/list"}', headers: { 'mcp-session-id': 'nope' } })],
    ['a body that is not JSON', 400, () => ({ body: '{', headers: {} })],
    ['a message that is not JSON-RPC', 400, () => ({ body: '{"id":1}', headers: {} })],
    ['a form post', 415, () => ({ body: 'a=b', headers: { 'content-type': 'application/x-www-form-urlencoded' } })],
    ['a client that accepts only HTML', 406, () => ({ body: '{"jsonrpc":"2.0","id":1,"method":"x"}', headers: { accept: 'text/html' } })],
    ['a body over the limit', 413, () => ({ body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'x', params: { p: 'x'.repeat(5000) } }), headers: {} })],
    ['a notification only', 202, () => ({ body: '{"jsonrpc":"2.0","method":"notifications/whatever"}', headers: {} })],
  ])('answers %s with %d', async (_, status, make) => {
    const s = await scripted({ maxLineBytes: 4096 })
    const { body, headers } = make()
    expect((await post(s.url, body, headers)).status).toBe(status)
  })

  it('serves readiness, refuses other paths and methods, and requires its token', async () => {
    const s = await scripted({ authToken: 'bridge-secret' }, { answerInit: false })
    const base = s.url.replace(/\/mcp$/, '')
    expect((await fetch(`${base}/health/readiness`)).status).toBe(503) // not initialized yet
    expect((await fetch(`${base}/other`)).status).toBe(404)
    expect((await post(s.url, '{"jsonrpc":"2.0","id":1,"method":"x"}')).status).toBe(401)
    expect((await post(s.url, '{"jsonrpc":"2.0","id":1,"method":"x"}', { authorization: 'Bearer wrong' })).status).toBe(401)
    expect((await fetch(s.url, { method: 'PUT', headers: { authorization: 'Bearer bridge-secret' } })).status).toBe(405)
    expect((await fetch(s.url, { headers: { authorization: 'Bearer bridge-secret' } })).status).toBe(406)
    const init = await s.next(isRequest('initialize'))
    s.say({ jsonrpc: '2.0', id: init.id, result: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, serverInfo: { name: 's', version: '1' } } })
    await s.next((m) => m.method === 'notifications/initialized')
    expect((await fetch(`${base}/health/readiness`)).status).toBe(200)
  })

  it('ends when the server refuses to initialize', async () => {
    const s = await scripted({}, { answerInit: false })
    const init = await s.next(isRequest('initialize'))
    s.say({ jsonrpc: '2.0', id: init.id, error: { code: -32602, message: 'unsupported' } })
    expect(await s.bridge.ended).toBe('the server did not initialize: unsupported')
    expect(s.bridge.ready).toBe(false)
  })

  it('ends when the server stdout ends, answering waiting requests with an error', async () => {
    const s = await scripted()
    const res = post(s.url, { jsonrpc: '2.0', id: 1, method: 'tools/list' })
    await s.next(isRequest('tools/list'))
    s.stdout.end()
    expect(await (await res).json()).toEqual({ jsonrpc: '2.0', id: 1, error: { code: -32000, message: 'MCP server stream ended: the server closed its stdout' } })
    expect(await s.bridge.ended).toBe('the server closed its stdout')
  })
})
