import { StepError } from '../errors.js'
import type { FetchLike, RetryPolicy } from './types.js'

/** A sleep that ends early (rejecting) when the signal aborts. */
export function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason as Error)
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort)
      resolve()
    }, ms)
    const onAbort = () => {
      clearTimeout(timer)
      reject(signal.reason as Error)
    }
    signal.addEventListener('abort', onAbort, { once: true })
  })
}

/** Four attempts, 0.5 s doubling to at most 8 s, real sleeping. */
export const defaultRetryPolicy: RetryPolicy = { attempts: 4, baseDelayMs: 500, maxDelayMs: 8000, sleep: abortableSleep }

const isRetryable = (status: number) => status === 429 || status >= 500

/** Pure: the delay before retry number `n` (0-based), honouring a Retry-After header in seconds. */
export function backoffMs(policy: RetryPolicy, n: number, retryAfter: string | null): number {
  const hinted = retryAfter !== null && /^\d+(\.\d+)?$/.test(retryAfter.trim()) ? Number(retryAfter) * 1000 : null
  const exp = Math.min(policy.baseDelayMs * 2 ** n, policy.maxDelayMs)
  return Math.min(hinted ?? exp, policy.maxDelayMs)
}

/** The run's deadline tripped (not the per-request timeout): the caller turns it into MaxExecutionTime. */
export class DeadlineError extends Error {
  constructor() {
    super('execution deadline reached')
    this.name = 'DeadlineError'
  }
}

/**
 * POST a JSON body with a per-attempt timeout, retrying 429, 5xx and network errors with
 * exponential backoff. Returns the first non-retryable response (the caller reads its status);
 * throws StepError('ModelError') when attempts run out, DeadlineError when `signal` aborts.
 */
export async function postWithRetry(
  fetchFn: FetchLike,
  url: string,
  headers: Record<string, string>,
  body: unknown,
  opts: { timeoutMs: number; signal: AbortSignal; policy: RetryPolicy; onRetry?: (info: { attempt: number; status?: number; delayMs: number }) => void },
): Promise<Response> {
  const payload = JSON.stringify(body)
  let last = ''
  for (let attempt = 0; attempt < opts.policy.attempts; attempt++) {
    if (opts.signal.aborted) throw new DeadlineError()
    const signal = AbortSignal.any([opts.signal, AbortSignal.timeout(opts.timeoutMs)])
    let res: Response | undefined
    try {
      res = await fetchFn(url, { method: 'POST', headers, body: payload, signal })
    } catch (err) {
      if (opts.signal.aborted) throw new DeadlineError()
      const timedOut = (err as Error).name === 'TimeoutError' || (err as Error).name === 'AbortError'
      const cause = (err as { cause?: { code?: string; message?: string } }).cause
      last = timedOut
        ? `no answer within ${opts.timeoutMs} ms`
        : `not reachable: ${(err as Error).message}${cause !== undefined ? ` (${cause.code ?? cause.message ?? 'unknown cause'})` : ''}`
    }
    if (res !== undefined && !isRetryable(res.status)) return res
    if (res !== undefined) {
      last = `HTTP ${res.status}`
      await res.body?.cancel().catch(() => undefined)
    }
    if (attempt + 1 < opts.policy.attempts) {
      const delayMs = backoffMs(opts.policy, attempt, res?.headers.get('retry-after') ?? null)
      opts.onRetry?.({ attempt: attempt + 1, ...(res !== undefined ? { status: res.status } : {}), delayMs })
      try {
        await opts.policy.sleep(delayMs, opts.signal)
      } catch {
        throw new DeadlineError()
      }
    }
  }
  throw new StepError('ModelError', `Model API failed after ${opts.policy.attempts} attempts: ${last}`)
}

/** Read a JSON response body, mapping HTTP errors to purko's messages; the body text is cut to 300 characters. */
export async function readJson(res: Response, api: string): Promise<unknown> {
  const text = await res.text()
  if (res.status === 401 || res.status === 403) {
    throw new StepError('ModelError', `Model API rejected credentials (HTTP ${res.status}) — check the provider API key`)
  }
  if (!res.ok) throw new StepError('ModelError', `${api} answered HTTP ${res.status}: ${text.slice(0, 300)}`)
  try {
    return JSON.parse(text) as unknown
  } catch {
    throw new StepError('ModelError', `${api} returned a malformed response: not JSON`)
  }
}
