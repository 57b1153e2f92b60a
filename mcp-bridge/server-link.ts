import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js'
import type { ServerResponse } from 'node:http'
import type { Readable, Writable } from 'node:stream'
import type { Logger } from '../shared/log.js'
import { LineReader } from './framing.js'

/**
 * The bridge's side of the stdio MCP server (bridge.ts serves its HTTP side): newline-delimited
 * JSON-RPC on the stream pair, the bridge's own initialize, client requests forwarded under
 * bridge-wide ids and their responses handed back under the client's id, server requests
 * answered, and server notifications routed to the POST or the event streams they belong to.
 */

const BRIDGE_INFO = { name: 'kinetic-mcp-bridge', version: '1.0.0' }

/** A JSON-RPC id. */
export type Id = string | number
/** One JSON-RPC message. */
export interface Message {
  jsonrpc: '2.0'
  id?: Id | null
  method?: string
  params?: Record<string, unknown>
  result?: unknown
  error?: { code: number; message: string; data?: unknown }
}

/** A client session (`Mcp-Session-Id`): its GET streams, and its requests waiting for the server. */
export interface Session {
  id: string
  streams: Set<ServerResponse>
  forwardedInit: boolean
  /** Client id (JSON-encoded, so 1 and "1" differ) -> bridge id, while the request waits. */
  waiting: Map<string, number>
}

/** Where the notifications of one POST go when its response is an event stream. */
export type Sink = (message: Message) => void

/** One POST: the bridge ids it waits for, and its event stream if it has one. */
export interface Post {
  ids: number[]
  sink?: Sink
}

/** A request waiting for the server, under its bridge id. */
interface Pending {
  originalId: Id
  session?: Session
  resolve(message: Message): void
  timer: NodeJS.Timeout
}

/** A JSON-RPC error response. */
export const errorResponse = (id: Id | null, code: number, message: string): Message => ({ jsonrpc: '2.0', id, error: { code, message } })
export const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

/** One message as a server-sent event. */
export const sseFrame = (message: Message) => `event: message\ndata: ${JSON.stringify(message)}\n\n`

/** Options of connectServer. */
export interface ServerLinkOptions {
  /** The server's stdin. */
  toServer: Writable
  /** The server's stdout. */
  fromServer: Readable
  log: Logger
  /** Longest line accepted from the server. */
  maxLineBytes: number
  /** How long the server may take to answer the bridge's initialize. */
  initTimeoutMs: number
  /** Requests waiting for the server at once. */
  maxPending: number
  /** Every open event stream: where a notification that belongs to no request goes, and what ending closes. */
  allStreams(): ServerResponse[]
}

/** The connection to the server. */
export interface ServerLink {
  /** Writes a message to the server (nothing once the stream ended). */
  write(message: Message): void
  /** Sends a request with a bridge id and settles with the response carrying `originalId`. */
  forward(message: Message & { method: string }, originalId: Id, session: Session | undefined, timeoutMs: number, post?: Post): Promise<Message>
  /** Whether the request with this bridge id still waits for the server. */
  waiting(id: number): boolean
  /** Answers the waiting request with this bridge id as cancelled. */
  cancelled(id: number): void
  /** Ends the link: every waiting request gets an error and every event stream ends. */
  end(reason: string): void
  /** Why the stream ended; undefined while it is open. */
  readonly endedReason: string | undefined
  /** True once the server answered the bridge's initialize, until its stream ends. */
  readonly ready: boolean
  /** The server's answer to the bridge's initialize, once it came. */
  readonly initialized: InitializeResult | undefined
  /** Settles once the bridge's initialize was answered (or failed). */
  readonly initDone: Promise<void>
  /** Settles with a reason when the server's stream ended or failed. */
  readonly ended: Promise<string>
}

/** The result of the server's initialize. */
export type InitializeResult = { protocolVersion?: unknown; [key: string]: unknown }

/** Connects to the server on the stream pair and initializes it. */
export function connectServer(opts: ServerLinkOptions): ServerLink {
  const { toServer, fromServer, log, maxLineBytes, maxPending, initTimeoutMs } = opts
  let nextId = 1
  const pending = new Map<number, Pending>()
  const progress = new Map<number, { token: Id; session?: Session; sink?: Sink }>()
  let ready = false
  let endedReason: string | undefined
  let initialized: InitializeResult | undefined
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
    for (const stream of opts.allStreams()) stream.end()
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

  function toStreams(streams: Iterable<ServerResponse>, message: Message): void {
    const text = sseFrame(message)
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
      toStreams(opts.allStreams(), m)
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

  return {
    write,
    forward,
    waiting: (id) => pending.has(id),
    cancelled: (id) => {
      const request = pending.get(id)
      request?.resolve(errorResponse(request.originalId, -32800, 'Request cancelled'))
    },
    end,
    get endedReason() {
      return endedReason
    },
    get ready() {
      return ready
    },
    get initialized() {
      return initialized
    },
    initDone,
    ended,
  }
}
