/**
 * The error vocabulary shared by pure code and adapters. Each class carries the HTTP status
 * the function answers with, which in turn decides whether the Broker redelivers the event.
 */
export abstract class FunctionError extends Error {
  abstract readonly status: 400 | 409 | 413 | 503
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = new.target.name
  }
}

/** A malformed CloudEvent or event data: 400, never redelivered. */
export class BadEventError extends FunctionError {
  readonly status = 400 as const
}

/** A CloudEvent larger than any event of ours: 413, never redelivered. */
export class EventTooLargeError extends FunctionError {
  readonly status = 413 as const
}

/** A lost optimistic-concurrency race (stale resourceVersion): 409, redelivered and re-planned. */
export class ConflictError extends FunctionError {
  readonly status = 409 as const
}

/** The Kubernetes API is unreachable, overloaded (429) or failing (5xx): 503, redelivered with backoff. */
export class TransientError extends FunctionError {
  readonly status = 503 as const
}

/**
 * The API server refused a write for good (a 4xx other than 409: invalid, forbidden, too large).
 * Not redelivered: the caller reports it (a recipe's `ApplyFailed` with `apiMessage`).
 */
export class RefusedError extends Error {
  constructor(
    message: string,
    readonly code: number,
    options?: { cause?: unknown; causes?: { field?: string; message: string }[] },
  ) {
    super(message, options)
    this.name = 'RefusedError'
    this.causes = options?.causes ?? []
  }

  /** The API server's causes of a 422 (field and message), when it gave any. */
  readonly causes: { field?: string; message: string }[]
}

/**
 * The API server said 403: the identity asking (a function's ServiceAccount, or a person the
 * console acts for) may not do this. A function answers 500 as for any other bug (missing
 * RBAC); the console shows the person what they may not see.
 */
export class ForbiddenError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'ForbiddenError'
  }
}

/**
 * The API server said 401: the credential is not (or no longer) accepted, e.g. a person's
 * token that expired after they signed in to the console. A function answers 500 as for any
 * other bug; the console asks the person to sign in again.
 */
export class UnauthenticatedError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'UnauthenticatedError'
  }
}

/** The HTTP status for any thrown value: ours carry one, everything else is a bug (500). */
export const statusFor = (err: unknown): 400 | 409 | 413 | 500 | 503 =>
  err instanceof FunctionError ? err.status : 500

/** The API server's own words for a refused request (its Status message), else the error's message. */
export function apiMessage(err: unknown): string {
  const body = (err as { cause?: { body?: unknown } }).cause?.body
  if (typeof body === 'string') {
    try {
      const status = JSON.parse(body) as { message?: unknown }
      if (typeof status.message === 'string') return status.message
    } catch { /* not a Status */ }
  } else if (body && typeof body === 'object' && typeof (body as { message?: unknown }).message === 'string') {
    return (body as { message: string }).message
  }
  return (err as Error).message
}
