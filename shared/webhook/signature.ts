/**
 * Webhook signatures: HMAC-SHA256 over the raw body with the template's secret, as GitHub sends
 * it (`X-Hub-Signature-256: sha256=<hex>`) or in Kinetic's own header with a timestamp against
 * replays (`X-Kinetic-Signature: t=<unix>,v1=<hex>`, v1 = HMAC(secret, `${t}.${body}`)).
 * No I/O; the clock comes in. Digests are compared in constant time.
 */
import { createHmac, timingSafeEqual } from 'node:crypto'

/** GitHub's signature header. */
export const GITHUB_SIGNATURE_HEADER = 'x-hub-signature-256'
/** Kinetic's signature header. */
export const KINETIC_SIGNATURE_HEADER = 'x-kinetic-signature'
/** How far a `t=` timestamp may be from now, either way. */
export const REPLAY_WINDOW_SECONDS = 300

/** The signature headers of a request (lower-case names), as given. */
export interface SignatureHeaders {
  github?: string
  kinetic?: string
}

/** Which scheme verified a request. */
export type SignatureScheme = 'github' | 'kinetic'

/** Why a signature was refused; the words are safe to log and to put in an Event (no digest, no secret). */
export type SignatureFailure = 'missing' | 'malformed' | 'mismatch' | 'stale'

/** A verified request; `timestamp` is the signed `t=` of X-Kinetic-Signature (GitHub's signature signs no time). */
export type Verification = { ok: true; scheme: 'github' } | { ok: true; scheme: 'kinetic'; timestamp: number } | { ok: false; reason: SignatureFailure; scheme?: SignatureScheme }

/** Pure: whether the request carries any signature header at all. */
export function hasSignature(h: SignatureHeaders): boolean {
  return (h.github ?? '').trim() !== '' || (h.kinetic ?? '').trim() !== ''
}

/** HMAC-SHA256 of the parts, in order. */
function hmac(secret: Uint8Array, ...parts: Array<string | Uint8Array>): Buffer {
  const mac = createHmac('sha256', secret)
  for (const p of parts) mac.update(p)
  return mac.digest()
}

/** A 64-digit hex digest as bytes, or null. */
function digestOf(hex: string): Buffer | null {
  return /^[0-9a-fA-F]{64}$/.test(hex) ? Buffer.from(hex, 'hex') : null
}

function same(expected: Buffer, given: Buffer): boolean {
  return expected.length === given.length && timingSafeEqual(expected, given)
}

/** Pure: `t=<unix>,v1=<hex>[,v1=<hex>...]` parsed (several v1 allow a secret rotation), or null. */
export function parseKineticSignature(header: string): { t: number; v1: Buffer[] } | null {
  let t: number | undefined
  const v1: Buffer[] = []
  for (const part of header.split(',')) {
    const eq = part.indexOf('=')
    if (eq < 0) return null
    const key = part.slice(0, eq).trim()
    const value = part.slice(eq + 1).trim()
    if (key === 't') {
      if (t !== undefined || !/^\d{1,12}$/.test(value)) return null
      t = Number(value)
    } else if (key === 'v1') {
      const d = digestOf(value)
      if (!d) return null
      v1.push(d)
    }
    // Other schemes (v0, future ones) are ignored, as senders may send several.
  }
  return t === undefined || v1.length === 0 ? null : { t, v1 }
}

/**
 * Pure: verifies a request's signature against the secret. `X-Kinetic-Signature` wins when both
 * headers are present (it is the one with replay protection); a present but bad header is
 * refused, never passed over for the other.
 */
export function verifySignature(secret: Uint8Array, rawBody: Uint8Array, h: SignatureHeaders, now: Date): Verification {
  const kinetic = h.kinetic?.trim()
  if (kinetic) {
    const parsed = parseKineticSignature(kinetic)
    if (!parsed) return { ok: false, reason: 'malformed', scheme: 'kinetic' }
    const expected = hmac(secret, `${parsed.t}.`, rawBody)
    // Every candidate is compared, so the time taken does not say which one matched.
    const matched = parsed.v1.map((d) => same(expected, d)).some(Boolean)
    if (!matched) return { ok: false, reason: 'mismatch', scheme: 'kinetic' }
    // Checked after the digest, so a stale but genuine delivery is told apart from a forgery in the Event.
    if (Math.abs(now.getTime() / 1000 - parsed.t) > REPLAY_WINDOW_SECONDS) return { ok: false, reason: 'stale', scheme: 'kinetic' }
    return { ok: true, scheme: 'kinetic', timestamp: parsed.t }
  }
  const github = h.github?.trim()
  if (github) {
    const m = /^sha256=(.*)$/.exec(github)
    const given = m ? digestOf(m[1] as string) : null
    if (!given) return { ok: false, reason: 'malformed', scheme: 'github' }
    return same(hmac(secret, rawBody), given) ? { ok: true, scheme: 'github' } : { ok: false, reason: 'mismatch', scheme: 'github' }
  }
  return { ok: false, reason: 'missing' }
}

/** Pure: the `X-Hub-Signature-256` value for a body (senders and tests). */
export function githubSignature(secret: Uint8Array | string, rawBody: Uint8Array | string): string {
  return `sha256=${createHmac('sha256', secret).update(rawBody).digest('hex')}`
}

/** Pure: the `X-Kinetic-Signature` value for a body at unix time `t` (senders and tests). */
export function kineticSignature(secret: Uint8Array | string, rawBody: Uint8Array | string, t: number): string {
  return `t=${t},v1=${createHmac('sha256', secret).update(`${t}.`).update(rawBody).digest('hex')}`
}
