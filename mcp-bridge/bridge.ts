import { createHash, randomUUID, timingSafeEqual } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Readable, Writable } from 'node:stream'
import type { Logger } from '../shared/log.js'
import { connectServer, errorResponse, isObject, sseFrame, type Id, type Message, type Post, type Session } from './server-link.js'

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
 * This file is the HTTP side (sessions, POST, GET streams, health); server-link.ts is the
 * stream pair's side (ids, waiting requests, the server's messages).
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
const KEEPALIVE_MS = 25_000

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

  const sessions = new Map<string, Session>()
  const anonymousStreams = new Set<ServerResponse>()
  const link = connectServer({
    toServer, fromServer, log, maxLineBytes, initTimeoutMs, maxPending,
    allStreams: () => [...anonymousStreams, ...[...sessions.values()].flatMap((session) => [...session.streams])],
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
    await link.initDone
    const initialized = link.initialized
    if (!initialized) return errorResponse(m.id, -32000, `MCP server is not available: ${link.endedReason ?? 'not initialized'}`)
    const asked = m.params?.protocolVersion
    if (asked === undefined || asked === initialized.protocolVersion) return { jsonrpc: '2.0', id: m.id, result: initialized }
    const response = await link.forward({ ...m, params: { ...m.params, capabilities: {} } }, m.id, s, requestTimeoutMs, post)
    if (response.result !== undefined) s.forwardedInit = true
    return response
  }

  function fromClient(m: Message, s: Session | undefined, created: { session?: Session }, post: Post): Promise<Message> | undefined {
    if (typeof m.method !== 'string') return undefined // a response to a server request we never forwarded
    if (m.id === undefined || m.id === null) {
      if (m.method === 'notifications/initialized') {
        if (s?.forwardedInit) link.write(m)
      } else if (m.method === 'notifications/cancelled' && isObject(m.params)) {
        const key = JSON.stringify(m.params.requestId)
        const id = s?.waiting.get(key)
        if (id !== undefined) {
          link.write({ ...m, params: { ...m.params, requestId: id } })
          link.cancelled(id)
        }
      } else {
        link.write(m)
      }
      return undefined
    }
    if (m.method === 'initialize') {
      created.session = session()
      return clientInitialize(m as Message & { method: string; id: Id }, created.session, post)
    }
    return link.forward(m as Message & { method: string }, m.id, s, requestTimeoutMs, post)
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
    const thisPost: Post = { ids: [], ...(streaming ? { sink: (message: Message) => void (res.writableEnded || res.write(sseFrame(message))) } : {}) }
    const created: { session?: Session } = {}
    const waits = messages.map((m) => fromClient(m as Message, s, created, thisPost)).filter((w): w is Promise<Message> => w !== undefined)
    if (waits.length === 0) return reply(res, 202)
    const headers: Record<string, string> = created.session ? { 'mcp-session-id': created.session.id } : {}
    if (streaming) res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', ...headers })
    // A client that hangs up no longer wants the answer: tell the server to stop working on it.
    res.on('close', () => {
      if (res.writableEnded) return
      for (const id of thisPost.ids) {
        if (!link.waiting(id)) continue
        link.write({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: 'client disconnected' } })
        link.cancelled(id)
      }
    })
    const responses = await Promise.all(waits)
    if (streaming) {
      if (!res.writableEnded) res.end(responses.map(sseFrame).join(''))
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
      const up = path === '/health/liveness' ? link.endedReason === undefined : link.ready
      return reply(res, up ? 200 : 503, { status: up ? 'ok' : (link.endedReason ?? 'starting') })
    }
    if (path !== '/mcp') return reply(res, 404, { error: 'not found; MCP is served at /mcp' })
    if (!authorized(req)) return reply(res, 401, errorResponse(null, -32000, 'Unauthorized'), { 'www-authenticate': 'Bearer' })
    if (link.endedReason !== undefined) return reply(res, 503, errorResponse(null, -32000, `MCP server stream ended: ${link.endedReason}`))
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
      return link.ready
    },
    ended: link.ended,
    close: link.end,
  }
}
