import { createHash, randomUUID, timingSafeEqual } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Readable, Writable } from 'node:stream'
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js'
import type { Logger } from '../shared/log.js'
import { LineReader } from './framing.js'

/**
 * The stdio bridge core: one MCP server speaking newline-delimited JSON-RPC on a byte stream
 * pair (its stdin and stdout), served to any number of HTTP clients as MCP Streamable HTTP at
 * `/mcp`. What it does with each kind of message:
 * - client requests: the id is replaced by a bridge-wide counter (two clients both sending
 *   id 0 cannot collide) and restored on the response, which answers the POST as JSON;
 *   a `_meta.progressToken` is rewritten the same way;
 * - `initialize`: the bridge initializes the server once at start (that is its readiness);
 *   a client asking for the same protocol version gets that answer, any other version is
 *   forwarded so the server negotiates it; each client initialize starts a session
 *   (`Mcp-Session-Id`);
 * - client notifications are forwarded (`notifications/initialized` only after a forwarded
 *   initialize; `notifications/cancelled` with its request id rewritten); client responses
 *   are dropped (the bridge never forwards server requests);
 * - server requests: `ping` is answered `{}`, anything else (sampling, roots, elicitation)
 *   gets -32601: several clients share the server, so none of them can answer for it, and the
 *   bridge tells the server so by initializing with no client capabilities;
 * - server notifications: `notifications/progress` goes into the response of the request it
 *   belongs to (answered as an event stream when the client accepts one), else to the SSE
 *   stream (GET `/mcp`) of that request's session; any other notification goes to every open
 *   GET stream; none is kept for a client that has no stream open.
 * When the server's stream ends, every waiting request is answered with an error, `ended`
 * settles, and the bridge refuses further requests (the program then exits non-zero).
 */

export interface BridgeOptions {
  /** The server's stdin. */
  toServer: Writable
  /** The server's stdout. */
  fromServer: Readable
  log: Logger
  /** Longest line accepted from the server and longest POST body (default 8 MiB). */
  maxLineBytes?: number
  /** How long a client request may wait for the server (default 300 s). */
  requestTimeoutMs?: number
  /** How long the server may take to answer the bridge's initialize (default 60 s). */
  initTimeoutMs?: number
  /** Sessions kept; the least recently used is forgotten beyond this (default 256). */
  maxSessions?: number
  /** Requests waiting for the server at once (default 1024). */
  maxPending?: number
  /** When set, `/mcp` requires `Authorization: Bearer <authToken>`. */
  authToken?: string
}

export interface Bridge {
  /** The node:http request listener. */
  handle(req: IncomingMessage, res: ServerResponse): void
  /** True once the server answered the bridge's initialize, until its stream ends. */
  readonly ready: boolean
  /** Settles with a reason when the server's stream ended or failed. */
  readonly ended: Promise<string>
  /** Ends the bridge as if the stream had ended. */
  close(reason: string): void
}

export const DEFAULT_MAX_LINE_BYTES = 8 * 1024 * 1024
const BRIDGE_INFO = { name: 'kinetic-mcp-bridge', version: '1.0.0' }
const KEEPALIVE_MS = 25_000

type Id = string | number
interface Message {
  jsonrpc: '2.0'
  id?: Id | null
  method?: string
  params?: Record<string, unknown>
  result?: unknown
  error?: { code: number; message: string; data?: unknown }
}

interface Session {
  id: string
  streams: Set<ServerResponse>
  forwardedInit: boolean
  /** Client id (JSON-encoded, so 1 and "1" differ) -> bridge id, while the request waits. */
  waiting: Map<string, number>
}

/** Where the notifications of one POST go when its response is an event stream. */
type Sink = (message: Message) => void

/** One POST: the bridge ids it waits for, and its event stream if it has one. */
interface Post {
  ids: number[]
  sink?: Sink
}

interface Pending {
  originalId: Id
  session?: Session
  resolve(message: Message): void
  timer: NodeJS.Timeout
}

const errorResponse = (id: Id | null, code: number, message: string): Message => ({ jsonrpc: '2.0', id, error: { code, message } })
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)
const digest = (s: string) => createHash('sha256').update(s).digest()

/** Serves the MCP server on the stream pair; see the module comment for the message rules. */
export function createBridge(opts: BridgeOptions): Bridge {
  const { toServer, fromServer, log } = opts
  const maxLineBytes = opts.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES
  const requestTimeoutMs = opts.requestTimeoutMs ?? 300_000
  const initTimeoutMs = opts.initTimeoutMs ?? 60_000
  const maxSessions = opts.maxSessions ?? 256
  const maxPending = opts.maxPending ?? 1024
  const expectedAuth = opts.authToken ? digest(`Bearer ${opts.authToken}`) : undefined

  let nextId = 1
  const pending = new Map<number, Pending>()
  const sessions = new Map<string, Session>()
  const anonymousStreams = new Set<ServerResponse>()
  const progress = new Map<number, { token: Id; session?: Session; sink?: Sink }>()
  let ready = false
  let endedReason: string | undefined
  let initialized: { protocolVersion?: unknown; [key: string]: unknown } | undefined
  let settleEnded!: (reason: string) => void
  const ended = new Promise<string>((resolve) => { settleEnded = resolve })

  function write(message: Message): void {
    if (endedReason !== undefined) return
    toServer.write(`${JSON.stringify(message)}\n`)
  }

  function end(reason: string): void {
    if (endedReason !== undefined) return
    endedReason = reason
    ready = false
    for (const [id, p] of pending) {
      clearTimeout(p.timer)
      pending.delete(id)
      p.resolve(errorResponse(p.originalId, -32000, `MCP server stream ended: ${reason}`))
    }
    for (const s of [...anonymousStreams, ...[...sessions.values()].flatMap((x) => [...x.streams])]) s.end()
    log.warn({ reason }, 'The MCP server stream ended')
    settleEnded(reason)
  }

  /** Sends a request with a bridge id and settles with the response carrying `originalId`. */
  function forward(message: Message & { method: string }, originalId: Id, session: Session | undefined, timeoutMs: number, post?: Post): Promise<Message> {
    if (endedReason !== undefined) return Promise.resolve(errorResponse(originalId, -32000, `MCP server stream ended: ${endedReason}`))
    if (pending.size >= maxPending) return Promise.resolve(errorResponse(originalId, -32000, 'The bridge has too many requests waiting; try again'))
    const id = nextId++
    post?.ids.push(id)
    const sink = post?.sink
    const params = message.params ? { ...message.params } : undefined
    const meta = isObject(params?._meta) ? params._meta : undefined
    if (params && meta && (typeof meta.progressToken === 'string' || typeof meta.progressToken === 'number')) {
      progress.set(id, { token: meta.progressToken, ...(session ? { session } : {}), ...(sink ? { sink } : {}) })
      params._meta = { ...meta, progressToken: id }
    }
    const key = JSON.stringify(originalId)
    return new Promise<Message>((resolve) => {
      const timer = setTimeout(() => {
        settle(errorResponse(originalId, -32001, `The MCP server did not answer ${message.method} within ${Math.round(timeoutMs / 1000)} s`))
        write({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: 'timed out at the bridge' } })
      }, timeoutMs)
      timer.unref()
      const settle = (response: Message) => {
        clearTimeout(timer)
        pending.delete(id)
        progress.delete(id)
        if (session?.waiting.get(key) === id) session.waiting.delete(key)
        resolve(response)
      }
      pending.set(id, { originalId, ...(session ? { session } : {}), resolve: settle, timer })
      session?.waiting.set(key, id)
      write({ ...message, id, ...(params ? { params } : {}) })
    })
  }

  const frame = (message: Message) => `event: message\ndata: ${JSON.stringify(message)}\n\n`
  function toStreams(streams: Iterable<ServerResponse>, message: Message): void {
    const text = frame(message)
    for (const s of streams) s.write(text)
  }

  function fromServerMessage(message: unknown): void {
    if (!isObject(message) || message.jsonrpc !== '2.0') {
      log.warn('Ignored a line from the MCP server that is not a JSON-RPC message')
      return
    }
    const m = message as unknown as Message
    if (typeof m.method === 'string' && m.id !== undefined && m.id !== null) {
      write(m.method === 'ping'
        ? { jsonrpc: '2.0', id: m.id, result: {} }
        : errorResponse(m.id, -32601, `${m.method} is not available through the stdio bridge`))
      return
    }
    if (typeof m.method === 'string') {
      if (m.method === 'notifications/progress' && isObject(m.params)) {
        const target = typeof m.params.progressToken === 'number' ? progress.get(m.params.progressToken) : undefined
        const restored = { ...m, params: { ...m.params, progressToken: target?.token } }
        if (target?.sink) target.sink(restored)
        else if (target?.session) toStreams(target.session.streams, restored)
        return
      }
      if (m.method === 'notifications/cancelled') return // it cancels a server request we already answered
      toStreams([...anonymousStreams, ...[...sessions.values()].flatMap((s) => [...s.streams])], m)
      return
    }
    const p = typeof m.id === 'number' ? pending.get(m.id) : undefined
    if (!p) {
      log.debug({ id: m.id }, 'Dropped a response that no request waits for')
      return
    }
    p.resolve({ ...m, id: p.originalId })
  }

  const reader = new LineReader(maxLineBytes)
  fromServer.on('data', (chunk: Buffer | string) => {
    const { lines, dropped } = reader.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk)
    for (const size of dropped) log.warn({ bytes: size, maxLineBytes }, 'Dropped a line from the MCP server that is longer than the limit')
    for (const line of lines) {
      let parsed: unknown
      try {
        parsed = JSON.parse(line)
      } catch {
        log.warn({ bytes: line.length }, 'Ignored a line from the MCP server that is not JSON')
        continue
      }
      for (const item of Array.isArray(parsed) ? parsed : [parsed]) fromServerMessage(item)
    }
  })
  fromServer.on('end', () => end('the server closed its stdout'))
  fromServer.on('close', () => end('the server stream closed'))
  fromServer.on('error', (err: Error) => end(`reading the server failed: ${err.message}`))
  toServer.on('error', (err: Error) => end(`writing to the server failed: ${err.message}`))
  toServer.on('close', () => end('the server stdin closed'))

  const initDone = forward(
    { jsonrpc: '2.0', method: 'initialize', params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: BRIDGE_INFO } },
    0, undefined, initTimeoutMs,
  ).then((response) => {
    if (isObject(response.result)) {
      initialized = response.result
      write({ jsonrpc: '2.0', method: 'notifications/initialized' })
      if (endedReason === undefined) ready = true
      const info = isObject(initialized.serverInfo) ? initialized.serverInfo : {}
      log.info({ server: info.name, protocolVersion: initialized.protocolVersion }, 'Initialized the MCP server')
    } else {
      end(`the server did not initialize: ${response.error?.message ?? 'no result'}`)
    }
  })

  function session(): Session {
    while (sessions.size >= maxSessions) {
      const oldest = sessions.values().next().value as Session
      for (const s of oldest.streams) s.end()
      sessions.delete(oldest.id)
    }
    const s: Session = { id: randomUUID(), streams: new Set(), forwardedInit: false, waiting: new Map() }
    sessions.set(s.id, s)
    return s
  }

  async function clientInitialize(m: Message & { method: string; id: Id }, s: Session, post: Post): Promise<Message> {
    await initDone
    if (!initialized) return errorResponse(m.id, -32000, `MCP server is not available: ${endedReason ?? 'not initialized'}`)
    const asked = m.params?.protocolVersion
    if (asked === undefined || asked === initialized.protocolVersion) return { jsonrpc: '2.0', id: m.id, result: initialized }
    const response = await forward({ ...m, params: { ...m.params, capabilities: {} } }, m.id, s, requestTimeoutMs, post)
    if (response.result !== undefined) s.forwardedInit = true
    return response
  }

  function fromClient(m: Message, s: Session | undefined, created: { session?: Session }, post: Post): Promise<Message> | undefined {
    if (typeof m.method !== 'string') return undefined // a response to a server request we never forwarded
    if (m.id === undefined || m.id === null) {
      if (m.method === 'notifications/initialized') {
        if (s?.forwardedInit) write(m)
      } else if (m.method === 'notifications/cancelled' && isObject(m.params)) {
        const key = JSON.stringify(m.params.requestId)
        const id = s?.waiting.get(key)
        if (id !== undefined) {
          write({ ...m, params: { ...m.params, requestId: id } })
          pending.get(id)?.resolve(errorResponse(pending.get(id)!.originalId, -32800, 'Request cancelled'))
        }
      } else {
        write(m)
      }
      return undefined
    }
    if (m.method === 'initialize') {
      created.session = session()
      return clientInitialize(m as Message & { method: string; id: Id }, created.session, post)
    }
    return forward(m as Message & { method: string }, m.id, s, requestTimeoutMs, post)
  }

  function reply(res: ServerResponse, status: number, body?: unknown, headers: Record<string, string> = {}): void {
    if (res.writableEnded || res.destroyed) return
    if (body === undefined) {
      res.writeHead(status, headers).end()
      return
    }
    res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body))
  }

  function readBody(req: IncomingMessage): Promise<Buffer | undefined> {
    return new Promise((resolve, reject) => {
      const parts: Buffer[] = []
      let size = 0
      req.on('data', (chunk: Buffer) => {
        if (size > maxLineBytes) return // already refused; the rest is read and thrown away
        size += chunk.length
        if (size > maxLineBytes) {
          parts.length = 0
          resolve(undefined)
        } else parts.push(chunk)
      })
      req.on('end', () => resolve(Buffer.concat(parts)))
      req.on('error', reject)
    })
  }

  async function post(req: IncomingMessage, res: ServerResponse, s: Session | undefined): Promise<void> {
    if (!(req.headers['content-type'] ?? '').toLowerCase().startsWith('application/json')) {
      return reply(res, 415, errorResponse(null, -32000, 'Content-Type must be application/json'))
    }
    const accept = (req.headers.accept ?? '*/*').toLowerCase()
    if (!accept.includes('application/json') && !accept.includes('*/*')) {
      return reply(res, 406, errorResponse(null, -32000, 'The bridge answers application/json; accept it'))
    }
    const body = await readBody(req)
    if (!body) return reply(res, 413, errorResponse(null, -32000, `Body exceeds ${maxLineBytes} bytes`), { connection: 'close' })
    let parsed: unknown
    try {
      parsed = JSON.parse(body.toString('utf8'))
    } catch {
      return reply(res, 400, errorResponse(null, -32700, 'Parse error'))
    }
    const batch = Array.isArray(parsed)
    const messages = batch ? (parsed as unknown[]) : [parsed]
    if (messages.length === 0 || !messages.every((m) => isObject(m) && m.jsonrpc === '2.0')) {
      return reply(res, 400, errorResponse(null, -32600, 'Invalid Request'))
    }
    // Progress of a request travels in its own response when the client takes an event stream,
    // so it cannot be lost to a GET stream that is not open yet.
    const streaming = accept.includes('text/event-stream') && messages.some((m) => isObject(m) && isObject(m.params) && isObject(m.params._meta) && m.params._meta.progressToken !== undefined)
    const thisPost: Post = { ids: [], ...(streaming ? { sink: (message: Message) => void (res.writableEnded || res.write(frame(message))) } : {}) }
    const created: { session?: Session } = {}
    const waits = messages.map((m) => fromClient(m as Message, s, created, thisPost)).filter((w): w is Promise<Message> => w !== undefined)
    if (waits.length === 0) return reply(res, 202)
    const headers: Record<string, string> = created.session ? { 'mcp-session-id': created.session.id } : {}
    if (streaming) res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', ...headers })
    // A client that hangs up no longer wants the answer: tell the server to stop working on it.
    res.on('close', () => {
      if (res.writableEnded) return
      for (const id of thisPost.ids) {
        const p = pending.get(id)
        if (!p) continue
        write({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: 'client disconnected' } })
        p.resolve(errorResponse(p.originalId, -32800, 'Request cancelled'))
      }
    })
    const responses = await Promise.all(waits)
    if (streaming) {
      if (!res.writableEnded) res.end(responses.map(frame).join(''))
      return
    }
    reply(res, 200, batch ? responses : responses[0], headers)
  }

  function stream(req: IncomingMessage, res: ServerResponse, s: Session | undefined): void {
    if (!(req.headers.accept ?? '').toLowerCase().includes('text/event-stream')) {
      return reply(res, 406, errorResponse(null, -32000, 'GET /mcp opens an event stream; accept text/event-stream'))
    }
    const streams = s ? s.streams : anonymousStreams
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' })
    res.write(': stream open\n\n')
    streams.add(res)
    const keepalive = setInterval(() => res.write(': keepalive\n\n'), KEEPALIVE_MS)
    keepalive.unref()
    res.on('close', () => {
      clearInterval(keepalive)
      streams.delete(res)
    })
  }

  function authorized(req: IncomingMessage): boolean {
    if (!expectedAuth) return true
    const given = req.headers.authorization
    return typeof given === 'string' && timingSafeEqual(digest(given), expectedAuth)
  }

  function handle(req: IncomingMessage, res: ServerResponse): void {
    const path = new URL(req.url ?? '/', 'http://bridge').pathname
    if (path === '/health/readiness' || path === '/health/liveness') {
      if (req.method !== 'GET' && req.method !== 'HEAD') return reply(res, 405, undefined, { allow: 'GET' })
      const up = path === '/health/liveness' ? endedReason === undefined : ready
      return reply(res, up ? 200 : 503, { status: up ? 'ok' : (endedReason ?? 'starting') })
    }
    if (path !== '/mcp') return reply(res, 404, { error: 'not found; MCP is served at /mcp' })
    if (!authorized(req)) return reply(res, 401, errorResponse(null, -32000, 'Unauthorized'), { 'www-authenticate': 'Bearer' })
    if (endedReason !== undefined) return reply(res, 503, errorResponse(null, -32000, `MCP server stream ended: ${endedReason}`))
    const header = req.headers['mcp-session-id']
    const sessionId = Array.isArray(header) ? header[0] : header
    const s = sessionId ? sessions.get(sessionId) : undefined
    if (sessionId && !s) return reply(res, 404, errorResponse(null, -32001, 'Session not found; initialize again'))
    if (s) {
      // Least recently used last out: re-inserting keeps the map in use order.
      sessions.delete(s.id)
      sessions.set(s.id, s)
    }
    if (req.method === 'POST') {
      post(req, res, s).catch((err: unknown) => {
        log.error({ err }, 'Could not relay a request to the MCP server')
        reply(res, 500, errorResponse(null, -32603, 'Internal error'))
      })
      return
    }
    if (req.method === 'GET') return stream(req, res, s)
    if (req.method === 'DELETE' && s) {
      for (const st of s.streams) st.end()
      sessions.delete(s.id)
      return reply(res, 200)
    }
    return reply(res, 405, errorResponse(null, -32000, 'Method not allowed'), { allow: 'GET, POST, DELETE' })
  }

  return {
    handle,
    get ready() {
      return ready
    },
    ended,
    close: end,
  }
}
