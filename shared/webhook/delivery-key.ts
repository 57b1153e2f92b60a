/**
 * What makes a replayed webhook request find the run its original made: a key derived only from
 * what the signature covers. The delivery id headers (`X-GitHub-Delivery`, `X-Kinetic-Delivery`,
 * `Idempotency-Key`) are not signed, so a captured request replayed with another id, or none,
 * would otherwise be a new run. No I/O; the clock comes in.
 */
import { createHash } from 'node:crypto'
import type { Acceptance } from './auth.js'

/**
 * How long a GitHub-signed body is one delivery: GitHub's signature covers the body only, with
 * no time, so the same body within this clock window (UTC, aligned) names the same run; a
 * captured request replayed later makes at most one run per window.
 */
export const GITHUB_DEDUP_WINDOW_SECONDS = 3600

/**
 * Pure: the deduplication key of an accepted request, or undefined (every call a new run).
 * - `X-Kinetic-Signature`: `kinetic:<t>:<sha256 of the body>`. Both are signed, and a `t` older
 *   than the replay window is refused, so a replay is a duplicate for as long as it is accepted.
 *   A sender that retries resends the same signed request (same `t`).
 * - `X-Hub-Signature-256`: `github:<window>:<sha256 of the body>` (see GITHUB_DEDUP_WINDOW_SECONDS).
 * - unauthenticated (`allowUnauthenticated: true`): nothing is signed; the sender's delivery id
 *   header, as given, is all there is.
 */
export function deliveryKey(auth: Acceptance, rawBody: Uint8Array, headerId: string | undefined, now: Date): string | undefined {
  if (auth.scheme === 'kinetic' && auth.timestamp !== undefined) return `kinetic:${auth.timestamp}:${hexOf(rawBody)}`
  if (auth.scheme === 'github') return `github:${Math.floor(now.getTime() / 1000 / GITHUB_DEDUP_WINDOW_SECONDS)}:${hexOf(rawBody)}`
  return headerId
}

function hexOf(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex')
}
