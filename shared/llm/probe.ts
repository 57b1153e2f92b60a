import { createSign } from 'node:crypto'
import { displayUrl, type ProbeTarget } from './plan/target.js'

/** Why a probe failed; each becomes a condition reason. */
export type ProbeFailure = 'CredentialsInvalid' | 'Unreachable' | 'RateLimited' | 'Timeout' | 'BadResponse' | 'Redirected' | 'TooLarge'

/** What one probe observed. `models` is every name listed (deduplicated, at most MAX_NAMES). */
export type ProbeResult =
  | { ok: true; models: string[]; url: string }
  | { ok: false; reason: ProbeFailure; message: string; retryAfterSeconds?: number }

/** Knobs of one probe; the defaults are the shipped bounds. */
export interface ProbeOptions {
  /** Whole-probe time limit (every request, page and token exchange included). */
  timeoutMs: number
  /** Largest response body read, per response (1 MiB). */
  maxBodyBytes?: number
  /** Pages followed at most (Anthropic's after_id, Vertex's pageToken). */
  maxPages?: number
  fetch?: typeof fetch
  /** Clock for the Vertex JWT (iat/exp). */
  now?: () => Date
}

const MIB = 1024 * 1024
/** Names remembered from one probe: enough to check spec.model, small enough to hold. */
const MAX_NAMES = 10_000
/** Same-origin redirects followed before giving up. */
const MAX_HOPS = 3
const ANTHROPIC_VERSION = '2023-06-01'
const VERTEX_SCOPE = 'https://www.googleapis.com/auth/cloud-platform'

class ProbeError extends Error {
  constructor(readonly reason: ProbeFailure, message: string, readonly retryAfterSeconds?: number) {
    super(message)
  }
}

/**
 * Lists the models the target offers with one cheap, bounded read (never a completion): at
 * most `timeoutMs` in all, `maxBodyBytes` per body, same-origin redirects only, a few pages.
 * Never throws; no message contains the key, a token or a response body.
 */
export async function probe(target: ProbeTarget, opts: ProbeOptions): Promise<ProbeResult> {
  const signal = AbortSignal.timeout(opts.timeoutMs)
  const ctx: Ctx = { fetch: opts.fetch ?? globalThis.fetch, signal, maxBody: opts.maxBodyBytes ?? MIB, timeoutMs: opts.timeoutMs }
  try {
    const models = await list(target, ctx, opts.maxPages ?? 5, opts.now ?? (() => new Date()))
    return { ok: true, models, url: displayUrl(target.url) }
  } catch (err) {
    const failure = err instanceof ProbeError
      ? err
      : signal.aborted || isAbort(err)
        ? new ProbeError('Timeout', `No answer from ${displayUrl(target.url)} within ${opts.timeoutMs / 1000} s`)
        : new ProbeError('Unreachable', `Could not reach ${displayUrl(target.url)}: ${causeOf(err)}`)
    return {
      ok: false, reason: failure.reason, message: scrub(failure.message, target.secret),
      ...(failure.retryAfterSeconds !== undefined ? { retryAfterSeconds: failure.retryAfterSeconds } : {}),
    }
  }
}

interface Ctx {
  fetch: typeof fetch
  signal: AbortSignal
  maxBody: number
  timeoutMs: number
}

async function list(target: ProbeTarget, ctx: Ctx, maxPages: number, now: () => Date): Promise<string[]> {
  const names = new Set<string>()
  const add = (name: unknown) => {
    if (typeof name === 'string' && name !== '' && names.size < MAX_NAMES) names.add(name)
  }
  switch (target.api) {
    case 'openai': {
      const body = await getJson(target.url, target.secret ? { authorization: `Bearer ${target.secret}` } : {}, ctx)
      for (const m of arrayField(body, 'data', target.url)) add((m as { id?: unknown })?.id)
      break
    }
    case 'ollama': {
      const body = await getJson(target.url, {}, ctx)
      for (const m of arrayField(body, 'models', target.url)) add((m as { name?: unknown; model?: unknown })?.name ?? (m as { model?: unknown })?.model)
      break
    }
    case 'anthropic': {
      const headers = { 'anthropic-version': ANTHROPIC_VERSION, ...(target.secret ? { 'x-api-key': target.secret } : {}) }
      let url = withQuery(target.url, { limit: '1000' })
      for (let page = 0; page < maxPages; page++) {
        const body = await getJson(url, headers, ctx) as { has_more?: unknown; last_id?: unknown }
        for (const m of arrayField(body, 'data', target.url)) add((m as { id?: unknown })?.id)
        if (body.has_more !== true || typeof body.last_id !== 'string') break
        url = withQuery(target.url, { limit: '1000', after_id: body.last_id })
      }
      break
    }
    case 'vertex-ai': {
      const { token, projectId } = await vertexToken(target, ctx, now())
      const headers = { authorization: `Bearer ${token}`, ...(projectId ? { 'x-goog-user-project': projectId } : {}) }
      let url = withQuery(target.url, { pageSize: '100' })
      for (let page = 0; page < maxPages; page++) {
        const body = await getJson(url, headers, ctx) as { nextPageToken?: unknown }
        for (const m of arrayField(body, 'publisherModels', target.url)) {
          const name = (m as { name?: unknown })?.name
          add(typeof name === 'string' ? name.slice(name.lastIndexOf('/') + 1) : undefined)
        }
        if (typeof body.nextPageToken !== 'string' || body.nextPageToken === '') break
        url = withQuery(target.url, { pageSize: '100', pageToken: body.nextPageToken })
      }
      break
    }
  }
  return [...names]
}

/** The service-account key's access token: a signed JWT (RS256) exchanged at the key's token_uri. */
async function vertexToken(target: ProbeTarget, ctx: Ctx, now: Date): Promise<{ token: string; projectId?: string }> {
  let key: { client_email?: unknown; private_key?: unknown; token_uri?: unknown; project_id?: unknown }
  try {
    key = JSON.parse(target.secret ?? '') as typeof key
  } catch {
    throw new ProbeError('CredentialsInvalid', 'credentials.json is not a service-account key (not JSON)')
  }
  if (typeof key.client_email !== 'string' || typeof key.private_key !== 'string') {
    throw new ProbeError('CredentialsInvalid', 'credentials.json is not a service-account key (client_email or private_key missing)')
  }
  const tokenUri = typeof key.token_uri === 'string' ? key.token_uri : 'https://oauth2.googleapis.com/token'
  let parsed: URL
  try {
    parsed = new URL(tokenUri)
  } catch {
    throw new ProbeError('CredentialsInvalid', 'credentials.json has a token_uri that is not a URL')
  }
  if (parsed.protocol !== 'https:') throw new ProbeError('CredentialsInvalid', 'credentials.json has a token_uri that is not https')
  const iat = Math.floor(now.getTime() / 1000)
  const b64 = (v: object) => Buffer.from(JSON.stringify(v)).toString('base64url')
  const unsigned = `${b64({ alg: 'RS256', typ: 'JWT' })}.${b64({ iss: key.client_email, scope: VERTEX_SCOPE, aud: tokenUri, iat, exp: iat + 600 })}`
  let signature: string
  try {
    signature = createSign('RSA-SHA256').update(unsigned).sign(key.private_key, 'base64url')
  } catch {
    throw new ProbeError('CredentialsInvalid', 'credentials.json has a private_key that cannot sign')
  }
  const body = new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion: `${unsigned}.${signature}` })
  const res = await send(tokenUri, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: body.toString() }, ctx)
  if (res.status === 400 || res.status === 401 || res.status === 403) {
    discard(res)
    throw new ProbeError('CredentialsInvalid', `${displayUrl(tokenUri)} refused the service-account key (HTTP ${res.status})`)
  }
  const answer = await readJson(res, tokenUri, ctx) as { access_token?: unknown }
  if (typeof answer.access_token !== 'string') throw new ProbeError('BadResponse', `${displayUrl(tokenUri)} answered without an access_token`)
  const projectId = target.projectId ?? (typeof key.project_id === 'string' ? key.project_id : undefined)
  return { token: answer.access_token, ...(projectId ? { projectId } : {}) }
}

/** GET with the bounds; HTTP failures become ProbeErrors by their status. */
async function getJson(url: string, headers: Record<string, string>, ctx: Ctx): Promise<unknown> {
  const res = await send(url, { method: 'GET', headers: { accept: 'application/json', ...headers } }, ctx)
  const shown = displayUrl(url)
  if (res.status === 401 || res.status === 403) {
    discard(res)
    throw new ProbeError('CredentialsInvalid', `${shown} refused the credentials (HTTP ${res.status})`)
  }
  if (res.status === 429) {
    discard(res)
    const after = res.headers.get('retry-after')
    const seconds = after && /^\d{1,6}$/.test(after) ? Number(after) : undefined
    throw new ProbeError('RateLimited', `${shown} is rate limiting (HTTP 429${seconds !== undefined ? `, retry after ${seconds} s` : ''})`, seconds)
  }
  if (res.status >= 500) {
    discard(res)
    throw new ProbeError('Unreachable', `${shown} answered HTTP ${res.status}`)
  }
  if (res.status < 200 || res.status >= 300) {
    discard(res)
    throw new ProbeError('BadResponse', `${shown} answered HTTP ${res.status}`)
  }
  return readJson(res, url, ctx)
}

/** fetch with redirect: 'manual'; same-origin redirects are followed a few times, others refused. */
async function send(url: string, init: RequestInit, ctx: Ctx): Promise<Response> {
  let current = url
  for (let hop = 0; ; hop++) {
    const res = await ctx.fetch(current, { ...init, redirect: 'manual', signal: ctx.signal })
    if (res.status < 300 || res.status >= 400 || res.status === 304) return res
    discard(res)
    const location = res.headers.get('location')
    if (!location) throw new ProbeError('BadResponse', `${displayUrl(current)} answered HTTP ${res.status} without a Location`)
    const next = new URL(location, current)
    if (next.origin !== new URL(current).origin) {
      throw new ProbeError('Redirected', `${displayUrl(current)} redirects to another host (${next.host}); probes only go to the endpoint in the spec`)
    }
    if (hop >= MAX_HOPS) throw new ProbeError('Redirected', `${displayUrl(url)} redirects more than ${MAX_HOPS} times`)
    current = next.href
  }
}

/** The body as JSON, read at most `maxBody` bytes (TooLarge beyond), refusing HTML and other non-JSON. */
async function readJson(res: Response, url: string, ctx: Ctx): Promise<unknown> {
  const shown = displayUrl(url)
  const type = (res.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase()
  if (type !== '' && !type.includes('json')) {
    discard(res)
    throw new ProbeError('BadResponse', `${shown} answered ${type}, not JSON`)
  }
  const declared = Number(res.headers.get('content-length') ?? '')
  if (Number.isFinite(declared) && declared > ctx.maxBody) {
    discard(res)
    throw new ProbeError('TooLarge', `${shown} answered more than ${ctx.maxBody} bytes`)
  }
  const chunks: Uint8Array[] = []
  let size = 0
  if (res.body) {
    const reader = res.body.getReader()
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      size += value.byteLength
      if (size > ctx.maxBody) {
        void reader.cancel().catch(() => undefined)
        throw new ProbeError('TooLarge', `${shown} answered more than ${ctx.maxBody} bytes`)
      }
      chunks.push(value)
    }
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown
  } catch {
    throw new ProbeError('BadResponse', `${shown} answered something that is not JSON`)
  }
}

function arrayField(body: unknown, field: string, url: string): unknown[] {
  const value = body && typeof body === 'object' ? (body as Record<string, unknown>)[field] : undefined
  if (field === 'publisherModels' && value === undefined && body && typeof body === 'object') return [] // an empty page omits it
  if (!Array.isArray(value)) throw new ProbeError('BadResponse', `${displayUrl(url)} answered JSON without a ${field} list`)
  return value
}

/** Drops a body we will not read; not awaited, as a stalled stream may never settle its cancel. */
function discard(res: Response): void {
  void res.body?.cancel().catch(() => undefined)
}

function withQuery(url: string, params: Record<string, string>): string {
  const u = new URL(url)
  for (const [k, v] of Object.entries(params)) u.searchParams.set(k, v)
  return u.href
}

function isAbort(err: unknown): boolean {
  const name = (err as { name?: unknown })?.name
  return name === 'AbortError' || name === 'TimeoutError'
}

/** The network error's code (ECONNREFUSED, ENOTFOUND, ...) or message, without any URL query. */
function causeOf(err: unknown): string {
  const cause = (err as { cause?: { code?: unknown; message?: unknown } })?.cause
  if (typeof cause?.code === 'string') return cause.code
  const message = typeof cause?.message === 'string' ? cause.message : (err as Error)?.message ?? String(err)
  // Network errors may quote the URL; none of it is needed to understand them.
  return message.replace(/\b[a-z][a-z0-9+.-]*:\/\/\S*/gi, '<url>').replace(/\?\S*/g, '')
}

/** Defence in depth: the key (and each line of a multi-line key) never leaves in a message. */
export function scrub(message: string, secret: string | undefined): string {
  if (!secret) return message
  let out = message
  for (const part of [secret, ...secret.split(/\s+/).filter((p) => p.length >= 8)]) out = out.split(part).join('[redacted]')
  return out
}
