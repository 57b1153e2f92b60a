// The sealed session cookie: it opens only with the key it was sealed with, unchanged and
// before its expiry, and never shows the token.
import { describe, expect, it } from 'vitest'
import { newSession, openSession, sealSession, SESSION_TTL_SECONDS } from '../../../shared/console/auth/session.js'

const KEY = Buffer.alloc(32, 3)
const NOW = new Date('2026-03-01T10:00:00.000Z')
const TOKEN = 'eyJhbGciOiJSUzI1NiJ9.secret-part.signature'
const session = newSession(TOKEN, 'alice', ['team-a', 'system:authenticated'], NOW)

describe('session cookie', () => {
  it('opens to what was sealed, for 8 hours', () => {
    expect(session.exp).toBe(NOW.getTime() / 1000 + SESSION_TTL_SECONDS)
    expect(SESSION_TTL_SECONDS).toBe(8 * 3600)
    const cookie = sealSession(KEY, session)
    expect(openSession(KEY, cookie, new Date(NOW.getTime() + SESSION_TTL_SECONDS * 1000 - 1))).toEqual(session)
  })

  it('is unreadable: neither the token nor the user appears in it, in any common encoding', () => {
    const cookie = sealSession(KEY, session)
    expect(cookie).toMatch(/^[A-Za-z0-9_-]+$/)
    const decoded = Buffer.from(cookie, 'base64url').toString('latin1')
    for (const needle of [TOKEN, 'secret-part', 'alice']) {
      expect(cookie).not.toContain(needle)
      expect(decoded).not.toContain(needle)
    }
  })

  it('is sealed with a fresh IV each time: the same session never gives the same cookie', () => {
    expect(sealSession(KEY, session)).not.toBe(sealSession(KEY, session))
  })

  it('does not open once expired', () => {
    expect(openSession(KEY, sealSession(KEY, session), new Date(NOW.getTime() + SESSION_TTL_SECONDS * 1000))).toBeNull()
  })

  it('does not open with another key', () => {
    expect(openSession(Buffer.alloc(32, 4), sealSession(KEY, session), NOW)).toBeNull()
  })

  it('does not open when any byte was changed', () => {
    const raw = Buffer.from(sealSession(KEY, session), 'base64url')
    for (const at of [0, 12, 28, raw.length - 1]) {
      const changed = Buffer.from(raw)
      changed[at] = changed[at]! ^ 1
      expect(openSession(KEY, changed.toString('base64url'), NOW), `byte ${at}`).toBeNull()
    }
  })

  it.each(['', 'not a cookie', 'AAAA', Buffer.alloc(40).toString('base64url')])('opens %j as null', (cookie) => {
    expect(openSession(KEY, cookie, NOW)).toBeNull()
  })
})
