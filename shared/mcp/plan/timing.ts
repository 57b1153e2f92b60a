/**
 * When the resync tick looks at an MCPServer again: a Ready server's refresh and the backoff after
 * failures, each jittered per server so that every replica and every tick agrees on when a server
 * is due. Pure: times come in as ISO strings or milliseconds.
 */
import { sha256Hex } from '../../core/sha256.js'
import type { MCPServer } from '../../schemas/mcpserver.js'

/** A Ready server is rediscovered this often by the resync tick (tools of a running server may change). */
export const REFRESH_MS = 30 * 60_000
/** First retry after a failure; doubles per failure in a row, up to {@link MAX_BACKOFF_MS}. */
export const FIRST_BACKOFF_MS = 30_000
export const MAX_BACKOFF_MS = 10 * 60_000

/** Milliseconds since the epoch of an ISO time; NaN when absent. */
export const epochMs = (iso: string | undefined) => (iso ? Date.parse(iso) : Number.NaN)
/** The ISO time of a number of milliseconds since the epoch. */
export const isoAt = (time: number) => new Date(time).toISOString()

/**
 * Pure: jittered time after `from`: `base` plus up to 20% derived from the uid and a salt, so
 * every replica and every tick agrees on when a server is due.
 */
export function jittered(server: MCPServer, from: number, base: number, salt: string): string {
  const fraction = Number.parseInt(sha256Hex(`${server.metadata.uid ?? server.metadata.name ?? ''}/${salt}`).slice(0, 8), 16) / 0xffffffff
  return isoAt(from + base + Math.floor(base * 0.2 * fraction))
}

/** Pure: backoff after `failures` failures in a row (30 s, doubling, at most 10 min). */
export function backoffMs(failures: number): number {
  return Math.min(MAX_BACKOFF_MS, FIRST_BACKOFF_MS * 2 ** Math.max(0, failures - 1))
}
