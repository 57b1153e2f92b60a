/**
 * The answers run-control gives when it does not do what was asked, as HTTP status and a JSON
 * body `{"error": <code>, "message"?: <what to do about it>}`. Pure.
 */
import { ConflictError, TransientError } from '../core/errors.js'

export type ErrorCode =
  | 'bad_request' | 'unauthorized' | 'forbidden' | 'not_found' | 'method_not_allowed'
  | 'conflict' | 'payload_too_large' | 'unavailable'

const STATUS: Record<ErrorCode, 400 | 401 | 403 | 404 | 405 | 409 | 413 | 503> = {
  bad_request: 400, unauthorized: 401, forbidden: 403, not_found: 404, method_not_allowed: 405,
  conflict: 409, payload_too_large: 413, unavailable: 503,
}

/** A refusal with the status and body the caller gets. */
export class RunControlError extends Error {
  readonly status: 400 | 401 | 403 | 404 | 405 | 409 | 413 | 503
  constructor(readonly code: ErrorCode, message?: string, options?: { cause?: unknown }) {
    super(message ?? code, options)
    this.name = 'RunControlError'
    this.status = STATUS[code]
    this.detail = message
  }

  /** The message the body carries (none for `unauthorized`: a failed login is told nothing). */
  readonly detail: string | undefined

  body(): { error: ErrorCode; message?: string } {
    return this.detail === undefined ? { error: this.code } : { error: this.code, message: this.detail }
  }
}

export const badRequest = (message: string) => new RunControlError('bad_request', message)
export const notFound = (message: string) => new RunControlError('not_found', message)
export const conflict = (message: string) => new RunControlError('conflict', message)

/**
 * Pure: the refusal an error stands for. A lost resourceVersion race after the retry is 409, an
 * API outage is 503; anything else is not a refusal (null: the function's bug, answered 500).
 */
export function refusalOf(err: unknown): RunControlError | null {
  if (err instanceof RunControlError) return err
  if (err instanceof ConflictError) return new RunControlError('conflict', `${err.message}; try again`, { cause: err })
  if (err instanceof TransientError) return new RunControlError('unavailable', 'The Kubernetes API is unavailable; try again shortly', { cause: err })
  return null
}
