/**
 * The session cookie of token sign-in: the person's bearer token, username, groups and expiry,
 * sealed with AES-256-GCM under the console's session key. The browser holds it but can neither
 * read nor change it; a tampered, expired or foreign cookie opens as null. Pure apart from the
 * random IV; the time comes in as an argument. Nothing here logs.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto'
import { z } from 'zod'

/** The cookie's name. */
export const SESSION_COOKIE = 'kinetic_session'
/** How long a sign-in lasts (the token may expire sooner; the API server then refuses it). */
export const SESSION_TTL_SECONDS = 8 * 60 * 60

// Binds a sealed value to its purpose: the same key sealing anything else never opens here.
const AAD = Buffer.from('kinetic-console-session/v1')
const IV_BYTES = 12
const TAG_BYTES = 16

const SessionSchema = z.object({
  token: z.string().min(1),
  user: z.string().min(1),
  groups: z.array(z.string()),
  /** Expiry, seconds since the epoch. */
  exp: z.number().int(),
})

/** What a session cookie holds. */
export type Session = z.infer<typeof SessionSchema>

/** Seals the session (random IV each time) as a cookie-safe base64url string: IV, tag, ciphertext. */
export function sealSession(key: Buffer, session: Session): string {
  const iv = randomBytes(IV_BYTES)
  const cipher = createCipheriv('aes-256-gcm', key, iv)
  cipher.setAAD(AAD)
  const sealed = Buffer.concat([cipher.update(JSON.stringify(session), 'utf8'), cipher.final()])
  return Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString('base64url')
}

/** The session a cookie holds; null when it was not sealed with this key, was changed, does not parse, or has expired at `now`. */
export function openSession(key: Buffer, cookie: string, now: Date): Session | null {
  if (!/^[A-Za-z0-9_-]+$/.test(cookie)) return null
  const raw = Buffer.from(cookie, 'base64url')
  if (raw.length <= IV_BYTES + TAG_BYTES) return null
  let text: string
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, IV_BYTES))
    decipher.setAAD(AAD)
    decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES))
    text = Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8')
  } catch {
    return null
  }
  let parsed: ReturnType<typeof SessionSchema.safeParse>
  try {
    parsed = SessionSchema.safeParse(JSON.parse(text))
  } catch {
    return null
  }
  if (!parsed.success || parsed.data.exp * 1000 <= now.getTime()) return null
  return parsed.data
}

/** Pure: a session for this token and identity, expiring SESSION_TTL_SECONDS after `now`. */
export function newSession(token: string, user: string, groups: readonly string[], now: Date): Session {
  return { token, user, groups: [...groups], exp: Math.floor(now.getTime() / 1000) + SESSION_TTL_SECONDS }
}
