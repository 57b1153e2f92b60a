import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js'

/**
 * MCP tool discovery (as purko's registry does it, bounded): `initialize` + `tools/list` with the
 * official SDK client, Streamable HTTP first and the legacy SSE transport as the fallback.
 * Every request goes through one guarded fetch that enforces the limits the SDK does not:
 * one total deadline, a byte cap per response body, no redirect that leaves the origin, and a
 * classification of what went wrong (the reason a status condition shows). The bearer token is
 * sent as a header and removed from every message this module returns.
 */

/** One tool as the MCPServer status shows it. */
export interface DiscoveredTool {
  name: string
  /** At most {@link MAX_DESCRIPTION} characters. */
  description?: string
  /** The tool's `annotations.readOnlyHint`, when the server gives one. */
  readOnly?: boolean
}

/** Why discovery failed; each is a condition reason. */
export type DiscoveryFailure = 'Unreachable' | 'Timeout' | 'Unauthorized' | 'ProtocolError' | 'Redirected' | 'TooLarge'

export type DiscoveryResult =
  | { ok: true; transport: 'streamable-http' | 'sse'; tools: DiscoveredTool[]; truncated: boolean; serverName?: string }
  | { ok: false; reason: DiscoveryFailure; message: string }

export interface DiscoveryTarget {
  url: string
  token?: string
}

export interface DiscoveryOptions {
  /** Total time for both transports together (default 5000). */
  timeoutMs?: number
  /** Largest response body accepted, per response (default 1 MiB). */
  maxBodyBytes?: number
  /** Tools kept; more make `truncated` true (default 256). */
  maxTools?: number
  fetch?: typeof fetch
}

export const DEFAULT_TIMEOUT_MS = 5000
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024
export const DEFAULT_MAX_TOOLS = 256
export const MAX_DESCRIPTION = 256
const MAX_MESSAGE = 300
const MAX_REDIRECTS = 5
const CLIENT_INFO = { name: 'kinetic-discovery', version: '1.0.0' }

/**
 * Pure: the two endpoints purko's registry tries for a server URL: `streamable` is the URL
 * without a trailing `/` plus `/mcp` (unless it already ends so); `sse` is the URL without a
 * trailing `/` and without `/mcp`, plus `/sse` (unless it already ends so). `127.0.0.1` is kept
 * as it is (purko rewrites it to `localhost`, which may resolve to `::1` where nothing listens).
 * Throws a TypeError for a URL that is not absolute http(s).
 */
export function discoveryEndpoints(url: string): { streamable: string; sse: string } {
  const parsed = new URL(url.trim())
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new TypeError(`unsupported URL scheme ${parsed.protocol}`)
  }
  parsed.hash = ''
  const path = parsed.pathname.replace(/\/+$/, '')
  const at = (p: string) => {
    const u = new URL(parsed.href)
    u.pathname = p
    return u.href
  }
  const base = path.endsWith('/mcp') ? path.slice(0, -'/mcp'.length) : path
  return {
    streamable: at(path.endsWith('/mcp') ? path : `${path}/mcp`),
    sse: at(base.endsWith('/sse') ? base : `${base}/sse`),
  }
}

/** A failure the guarded fetch saw first hand; it wins over whatever the SDK makes of it. */
class GuardError extends Error {
  constructor(readonly reason: DiscoveryFailure, message: string) {
    super(message)
    this.name = 'GuardError'
  }
}

interface Attempt {
  /** The first failure the guard observed during this attempt. */
  failure?: GuardError
}

const REDIRECT = new Set([301, 302, 303, 307, 308])
const UNREACHABLE_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET', 'UND_ERR_CONNECT_TIMEOUT'])

function errorCode(err: unknown): string | undefined {
  for (let e: unknown = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code
    if (typeof code === 'string') return code
  }
  return undefined
}

function mediaType(response: Response): string {
  return (response.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase()
}

function sameOrigin(a: URL, b: URL): boolean {
  return a.protocol === b.protocol && a.host === b.host && !b.username && !b.password
}

/** Wraps a body so it errors (and the attempt records TooLarge) once it passes `limit` bytes. */
function capped(response: Response, limit: number, fail: (e: GuardError) => GuardError): Response {
  if (!response.body) return response
  let seen = 0
  const counting = new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, controller) {
      seen += chunk.byteLength
      if (seen > limit) controller.error(fail(new GuardError('TooLarge', `response body exceeds ${limit} bytes`)))
      else controller.enqueue(chunk)
    },
  })
  return new Response(response.body.pipeThrough(counting), {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  })
}

/**
 * The fetch handed to the SDK transports: follows redirects only within the origin, adds the
 * deadline's signal, caps the body, and turns transport-level trouble into a GuardError.
 */
function guardedFetch(base: typeof fetch, deadline: AbortSignal, maxBodyBytes: number, attempt: Attempt): typeof fetch {
  const fail = (e: GuardError) => {
    attempt.failure ??= e
    return e
  }
  return async (input, init) => {
    let url = new URL(input instanceof Request ? input.url : String(input))
    const signal = init?.signal ? AbortSignal.any([init.signal, deadline]) : deadline
    for (let hops = 0; ; hops++) {
      let response: Response
      try {
        response = await base(url, { ...init, signal, redirect: 'manual' })
      } catch (err) {
        if (deadline.aborted) throw fail(new GuardError('Timeout', 'no answer before the deadline'))
        if (init?.signal?.aborted) throw err // the SDK closing its own stream: not a finding
        const code = errorCode(err)
        if (code && UNREACHABLE_CODES.has(code)) throw fail(new GuardError('Unreachable', `cannot connect to ${url.host} (${code})`))
        throw fail(new GuardError('Unreachable', `cannot connect to ${url.host}: ${err instanceof Error ? err.message : String(err)}`))
      }
      if (REDIRECT.has(response.status)) {
        await response.body?.cancel().catch(() => undefined)
        const location = response.headers.get('location')
        const target = location ? new URL(location, url) : undefined
        const method = (init?.method ?? 'GET').toUpperCase()
        const keepsMethod = response.status === 307 || response.status === 308 || method === 'GET'
        if (!target || !sameOrigin(url, target) || !keepsMethod || hops >= MAX_REDIRECTS) {
          const where = target ? `${target.protocol}//${target.host}` : 'nowhere'
          throw fail(new GuardError('Redirected', `redirect from ${url.host} to ${where} not followed (only same-origin redirects are)`))
        }
        url = target
        continue
      }
      if (response.status === 401 || response.status === 403) {
        await response.body?.cancel().catch(() => undefined)
        throw fail(new GuardError('Unauthorized', `${url.host} answered ${response.status}`))
      }
      const length = Number(response.headers.get('content-length') ?? '')
      if (Number.isFinite(length) && length > maxBodyBytes) {
        await response.body?.cancel().catch(() => undefined)
        throw fail(new GuardError('TooLarge', `response body of ${length} bytes exceeds ${maxBodyBytes}`))
      }
      if (response.ok && response.status !== 202 && response.body) {
        const type = mediaType(response)
        const expected = (init?.method ?? 'GET').toUpperCase() === 'GET' ? ['text/event-stream'] : ['application/json', 'text/event-stream']
        if (!expected.includes(type)) {
          await response.body.cancel().catch(() => undefined)
          throw fail(new GuardError('ProtocolError', `${url.host} answered ${type || 'no content type'}, not MCP (${expected.join(' or ')})`))
        }
      }
      return capped(response, maxBodyBytes, fail)
    }
  }
}

function redact(text: string, token: string | undefined): string {
  let out = text
  if (token) {
    out = out.split(token).join('[redacted]')
    // A prefix long enough to identify the secret is a leak as well (e.g. a cut-off header).
    if (token.length >= 12) out = out.split(token.slice(0, 12)).join('[redacted]')
  }
  return out.length > MAX_MESSAGE ? `${out.slice(0, MAX_MESSAGE - 1)}…` : out
}

function toTool(raw: { name: unknown; description?: unknown; annotations?: { readOnlyHint?: unknown } }): DiscoveredTool | undefined {
  if (typeof raw.name !== 'string' || raw.name === '') return undefined
  const tool: DiscoveredTool = { name: raw.name.slice(0, 128) }
  if (typeof raw.description === 'string' && raw.description !== '') {
    tool.description = raw.description.length > MAX_DESCRIPTION ? `${raw.description.slice(0, MAX_DESCRIPTION - 1)}…` : raw.description
  }
  if (typeof raw.annotations?.readOnlyHint === 'boolean') tool.readOnly = raw.annotations.readOnlyHint
  return tool
}

type Listed = { tools: DiscoveredTool[]; truncated: boolean; serverName?: string }

async function listWith(transport: Transport, maxTools: number): Promise<Listed> {
  const client = new Client(CLIENT_INFO, { capabilities: {} })
  try {
    await client.connect(transport)
    const tools: DiscoveredTool[] = []
    const cursors = new Set<string>()
    let cursor: string | undefined
    let truncated = false
    for (;;) {
      const page = await client.listTools(cursor === undefined ? {} : { cursor })
      for (const raw of page.tools) {
        const tool = toTool(raw)
        if (!tool) continue
        if (tools.length >= maxTools) {
          truncated = true
          break
        }
        tools.push(tool)
      }
      cursor = page.nextCursor
      if (cursor === undefined || truncated) break
      if (tools.length >= maxTools) {
        truncated = true
        break
      }
      // A server that hands out a cursor twice would page forever.
      if (cursors.has(cursor)) throw new GuardError('ProtocolError', 'tools/list returned a cursor it had returned before')
      cursors.add(cursor)
    }
    const name = client.getServerVersion()?.name
    return { tools, truncated, ...(name ? { serverName: name } : {}) }
  } finally {
    await client.close().catch(() => undefined)
  }
}

function failureOf(err: unknown, attempt: Attempt, deadline: AbortSignal, endpoint: string): GuardError {
  if (attempt.failure) return attempt.failure
  if (err instanceof GuardError) return err
  if (deadline.aborted) return new GuardError('Timeout', 'no answer before the deadline')
  // The SDK's HTTP errors carry the status; their text is the server's body (often a whole HTML page).
  const code = (err as { code?: unknown } | undefined)?.code
  if (typeof code === 'number' && code >= 100) return new GuardError('ProtocolError', `${endpoint} answered HTTP ${code}, not MCP`)
  const message = err instanceof Error ? err.message : String(err)
  return new GuardError('ProtocolError', `not an MCP server: ${message}`)
}

/** Runs `work` but settles no later than the deadline (an SDK promise may never settle on its own). */
function bounded<T>(work: Promise<T>, deadline: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new GuardError('Timeout', 'no answer before the deadline'))
    if (deadline.aborted) return onAbort()
    deadline.addEventListener('abort', onAbort, { once: true })
    work.then(resolve, reject).finally(() => deadline.removeEventListener('abort', onAbort))
  })
}

/**
 * Connects to the MCP server at `target.url` and lists its tools. Never throws: every failure
 * is a result with a reason, and no message contains the token. Streamable HTTP is tried at
 * `<url>/mcp`; only when that answer is not MCP (ProtocolError: 404, 405, HTML, ...) is the
 * legacy SSE transport tried at `<url>/sse`. Settles within `timeoutMs` (plus cleanup).
 */
export async function discoverTools(target: DiscoveryTarget, opts: DiscoveryOptions = {}): Promise<DiscoveryResult> {
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS
  const maxBodyBytes = opts.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES
  const maxTools = opts.maxTools ?? DEFAULT_MAX_TOOLS
  const base = opts.fetch ?? fetch
  const token = target.token || undefined
  const failed = (e: GuardError): DiscoveryResult => ({ ok: false, reason: e.reason, message: redact(e.message, token) })

  let endpoints: { streamable: string; sse: string }
  try {
    endpoints = discoveryEndpoints(target.url)
  } catch (err) {
    return failed(new GuardError('Unreachable', `invalid server URL: ${err instanceof Error ? err.message : String(err)}`))
  }
  const controller = new AbortController()
  const timer = setTimeout(() => controller.abort(), timeoutMs)
  const deadline = controller.signal
  const requestInit: RequestInit = token ? { headers: { Authorization: `Bearer ${token}` } } : {}

  try {
    const first: Attempt = {}
    let streamableFailure: GuardError
    try {
      const transport = new StreamableHTTPClientTransport(new URL(endpoints.streamable), {
        fetch: guardedFetch(base, deadline, maxBodyBytes, first),
        requestInit,
        // No reconnection: a dropped stream is a finding, and retries would outlive the deadline.
        reconnectionOptions: { maxRetries: 0, initialReconnectionDelay: 1000, maxReconnectionDelay: 1000, reconnectionDelayGrowFactor: 1 },
      })
      const listed = await bounded(listWith(transport, maxTools), deadline)
      return { ok: true, transport: 'streamable-http', ...listed }
    } catch (err) {
      streamableFailure = failureOf(err, first, deadline, endpoints.streamable)
    }
    if (streamableFailure.reason !== 'ProtocolError') return failed(streamableFailure)

    const second: Attempt = {}
    try {
      const transport = new SSEClientTransport(new URL(endpoints.sse), {
        fetch: guardedFetch(base, deadline, maxBodyBytes, second),
        requestInit,
      })
      const listed = await bounded(listWith(transport, maxTools), deadline)
      return { ok: true, transport: 'sse', ...listed }
    } catch (err) {
      const sseFailure = failureOf(err, second, deadline, endpoints.sse)
      // Both said "not MCP": the Streamable HTTP answer is the one the user asked for first.
      const chosen = sseFailure.reason === 'ProtocolError' ? streamableFailure : sseFailure
      return failed(new GuardError(chosen.reason, `${chosen.message}${chosen === streamableFailure ? ' (legacy SSE fallback failed too)' : ''}`))
    }
  } finally {
    clearTimeout(timer)
    controller.abort()
  }
}
