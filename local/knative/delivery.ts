import { fromHttp, looksLikeCloudEvent, toBinary, type KEvent } from './cloud-event.js'
import { parseIsoDuration } from './iso-duration.js'

/** Where an event goes: a Knative Destination (`ref` and/or `uri`). */
export interface Destination {
  ref?: { apiVersion?: string; kind?: string; name: string; namespace?: string }
  uri?: string
}

/** A Knative DeliverySpec (Trigger or Broker `delivery`). */
export interface DeliverySpec {
  retry?: number
  backoffPolicy?: 'exponential' | 'linear'
  backoffDelay?: string
  timeout?: string
  deadLetterSink?: Destination
}

/** The outcome of one HTTP attempt. */
export interface AttemptResult {
  /** HTTP status, or 0 for a network error or timeout. */
  status: number
  body: string
  reply?: KEvent
  error?: string
}

/** The outcome of a delivery after all attempts. */
export interface DeliveryResult extends AttemptResult {
  ok: boolean
  attempts: number
}

/** Retries and waits for one delivery. */
export interface RetryPolicy {
  /** Waits in ms before each retry; its length is the number of retries. */
  delays: number[]
  retryable: (status: number) => boolean
  timeoutMs: number
}

const DEFAULT_TIMEOUT_MS = 60_000

/**
 * Pure: the waits before each retry for a Knative DeliverySpec. Exponential waits
 * delay*2^i and linear delay*i (i from 0, so linear retries once at once); with only one of
 * policy/delay set every retry is immediate, as in Knative's dispatcher.
 */
export function retryPolicyFor(spec: DeliverySpec | undefined): RetryPolicy {
  const retries = Math.max(0, spec?.retry ?? 0)
  const hasBoth = spec?.backoffPolicy !== undefined && spec.backoffDelay !== undefined
  const delay = hasBoth ? parseIsoDuration(spec.backoffDelay as string) : 0
  const delays = Array.from({ length: retries }, (_, i) => {
    if (!hasBoth) return 0
    return spec.backoffPolicy === 'linear' ? delay * i : delay * 2 ** i
  })
  const timeoutMs = spec?.timeout ? parseIsoDuration(spec.timeout) : DEFAULT_TIMEOUT_MS
  return { delays, retryable: isBrokerRetryable, timeoutMs }
}

/** Pure: Knative's broker redelivers on network errors, 404, 408, 409, 429 and any 5xx. */
export function isBrokerRetryable(status: number): boolean {
  return status === 0 || status === 404 || status === 408 || status === 409 || status === 429 || status >= 500
}

/**
 * The source adapters' own policy (sdk-go): 5 retries at 100..1600 ms, only on network
 * errors and 404, 413, 425, 429, 502, 503, 504. A 500 is not retried.
 */
export const ADAPTER_RETRY_POLICY: RetryPolicy = {
  delays: [100, 200, 400, 800, 1600],
  retryable: (s) => s === 0 || [404, 413, 425, 429, 502, 503, 504].includes(s),
  timeoutMs: DEFAULT_TIMEOUT_MS,
}

/**
 * POSTs the event once in binary mode. A 2xx with a non-empty body that is not a valid
 * CloudEvent becomes 502, as Knative's broker-filter reports it.
 */
export async function sendOnce(url: string, event: KEvent, extraHeaders: Record<string, string>, timeoutMs: number): Promise<AttemptResult> {
  const { headers, body: raw } = toBinary(event)
  // Bytes (a PingSource's dataBase64) go out unchanged; TS's DOM lib is narrower than undici here.
  const body = raw as BodyInit | undefined
  let res: Response
  try {
    res = await fetch(url, { method: 'POST', headers: { ...headers, ...extraHeaders }, body, signal: AbortSignal.timeout(timeoutMs) })
  } catch (err) {
    return { status: 0, body: '', error: describeNetworkError(err) }
  }
  const text = await res.text().catch(() => '')
  if (res.status < 200 || res.status >= 300) return { status: res.status, body: text }
  const resHeaders: Record<string, string> = {}
  res.headers.forEach((v, k) => { resHeaders[k] = v })
  if (looksLikeCloudEvent(resHeaders)) {
    try {
      return { status: res.status, body: text, reply: fromHttp(resHeaders, text) }
    } catch (err) {
      return { status: 502, body: text, error: `malformed CloudEvent reply: ${err instanceof Error ? err.message : String(err)}` }
    }
  }
  if (text.length > 0) return { status: 502, body: text, error: 'a 2xx reply with a body that is not a CloudEvent' }
  return { status: res.status, body: text }
}

/** Sends with retries; `onAttempt` sees every attempt (1-based) before the next wait. */
export async function deliver(
  url: string,
  event: KEvent,
  policy: RetryPolicy,
  opts: { headers?: Record<string, string>; onAttempt?: (attempt: number, result: AttemptResult) => void; signal?: AbortSignal } = {},
): Promise<DeliveryResult> {
  let attempt = 0
  for (;;) {
    attempt += 1
    const result = await sendOnce(url, event, opts.headers ?? {}, policy.timeoutMs)
    opts.onAttempt?.(attempt, result)
    const ok = result.status >= 200 && result.status < 300
    if (ok) return { ...result, ok, attempts: attempt }
    const wait = policy.delays[attempt - 1]
    if (wait === undefined || !policy.retryable(result.status) || opts.signal?.aborted) return { ...result, ok: false, attempts: attempt }
    await sleep(wait, opts.signal)
  }
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (ms <= 0) return Promise.resolve()
  return new Promise((resolve) => {
    const t = setTimeout(done, ms)
    function done() {
      clearTimeout(t)
      signal?.removeEventListener('abort', done)
      resolve()
    }
    signal?.addEventListener('abort', done, { once: true })
  })
}

function describeNetworkError(err: unknown): string {
  if (err instanceof Error) {
    const cause = err.cause instanceof Error ? `: ${err.cause.message}` : ''
    return `${err.message}${cause}`
  }
  return String(err)
}
