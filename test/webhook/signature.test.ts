import { describe, expect, it } from 'vitest'
import { planAuth, secretValue, verifyRequest } from '../../shared/webhook/auth.js'
import { githubSignature, kineticSignature, parseKineticSignature, verifySignature } from '../../shared/webhook/signature.js'
import { workflowOf } from '../support/objects.js'

const enc = (s: string) => new TextEncoder().encode(s)
const NOW = new Date('2026-03-01T12:00:00Z')
const T = NOW.getTime() / 1000

// GitHub's documented example ("Validating webhook deliveries").
const GITHUB_SECRET = "It's a Secret to Everybody"
const GITHUB_PAYLOAD = 'Hello, World!'
const GITHUB_EXPECTED = 'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17'

describe('X-Hub-Signature-256 (GitHub)', () => {
  it("computes GitHub's documented example signature", () => {
    expect(githubSignature(GITHUB_SECRET, GITHUB_PAYLOAD)).toBe(GITHUB_EXPECTED)
  })

  it("accepts GitHub's documented example", () => {
    expect(verifySignature(enc(GITHUB_SECRET), enc(GITHUB_PAYLOAD), { github: GITHUB_EXPECTED }, NOW)).toEqual({ ok: true, scheme: 'github' })
  })

  it.each([
    ['a tampered body', GITHUB_SECRET, 'Hello, World?', GITHUB_EXPECTED],
    ['a wrong secret', "It's a Secret to Somebody", GITHUB_PAYLOAD, GITHUB_EXPECTED],
    ['a digest with one digit changed', GITHUB_SECRET, GITHUB_PAYLOAD, GITHUB_EXPECTED.replace(/7$/, '8')],
  ])('refuses %s as a mismatch', (_, secret, body, header) => {
    expect(verifySignature(enc(secret), enc(body), { github: header }, NOW)).toEqual({ ok: false, reason: 'mismatch', scheme: 'github' })
  })

  it.each([
    ['no sha256= prefix', GITHUB_EXPECTED.slice(7)],
    ['sha1 instead', `sha1=${'a'.repeat(40)}`],
    ['a short digest', 'sha256=757107ea'],
    ['non-hex digits', `sha256=${'z'.repeat(64)}`],
  ])('refuses %s as malformed', (_, header) => {
    expect(verifySignature(enc(GITHUB_SECRET), enc(GITHUB_PAYLOAD), { github: header }, NOW)).toEqual({ ok: false, reason: 'malformed', scheme: 'github' })
  })

  it('refuses a request without any signature header as missing', () => {
    expect(verifySignature(enc(GITHUB_SECRET), enc(GITHUB_PAYLOAD), {}, NOW)).toEqual({ ok: false, reason: 'missing' })
    expect(verifySignature(enc(GITHUB_SECRET), enc(GITHUB_PAYLOAD), { github: '  ' }, NOW)).toEqual({ ok: false, reason: 'missing' })
  })
})

describe('X-Kinetic-Signature (t=<unix>,v1=<hex>)', () => {
  const body = '{"title":"disk full"}'

  it('signs `${t}.${body}`: the same digest as a plain HMAC over that string', () => {
    const header = kineticSignature('s3cret', body, T)
    expect(header).toBe(`t=${T},${githubSignature('s3cret', `${T}.${body}`).replace('sha256=', 'v1=')}`)
    expect(verifySignature(enc('s3cret'), enc(body), { kinetic: header }, NOW)).toEqual({ ok: true, scheme: 'kinetic', timestamp: T })
  })

  it.each([
    ['299 s old', T - 299, true],
    ['300 s old', T - 300, true],
    ['301 s old (stale)', T - 301, false],
    ['300 s ahead', T + 300, true],
    ['301 s ahead (future)', T + 301, false],
    ['a day old', T - 86_400, false],
  ])('a timestamp %s is accepted: %s', (_, t, ok) => {
    const v = verifySignature(enc('s3cret'), enc(body), { kinetic: kineticSignature('s3cret', body, t) }, NOW)
    expect(v).toEqual(ok ? { ok: true, scheme: 'kinetic', timestamp: t } : { ok: false, reason: 'stale', scheme: 'kinetic' })
  })

  it('refuses a timestamp moved after signing (the digest covers it)', () => {
    const header = kineticSignature('s3cret', body, T - 1000).replace(`t=${T - 1000}`, `t=${T}`)
    expect(verifySignature(enc('s3cret'), enc(body), { kinetic: header }, NOW)).toEqual({ ok: false, reason: 'mismatch', scheme: 'kinetic' })
  })

  it('refuses a tampered body and a wrong secret', () => {
    const header = kineticSignature('s3cret', body, T)
    expect(verifySignature(enc('s3cret'), enc('{"title":"disk fine"}'), { kinetic: header }, NOW)).toMatchObject({ ok: false, reason: 'mismatch' })
    expect(verifySignature(enc('other'), enc(body), { kinetic: header }, NOW)).toMatchObject({ ok: false, reason: 'mismatch' })
  })

  it('accepts any one of several v1 digests (a secret being rotated), ignoring other schemes', () => {
    const good = kineticSignature('new', body, T).split(',')[1]
    const old = kineticSignature('old', body, T).split(',')[1]
    const header = `t=${T},v0=abc,${old},${good}`
    expect(verifySignature(enc('new'), enc(body), { kinetic: header }, NOW)).toEqual({ ok: true, scheme: 'kinetic', timestamp: T })
  })

  it.each([
    ['no timestamp', `v1=${'a'.repeat(64)}`],
    ['no v1', `t=${T}`],
    ['a non-numeric timestamp', `t=soon,v1=${'a'.repeat(64)}`],
    ['two timestamps', `t=${T},t=${T},v1=${'a'.repeat(64)}`],
    ['a short digest', `t=${T},v1=abcd`],
    ['no = at all', 'garbage'],
  ])('refuses %s as malformed', (_, header) => {
    expect(parseKineticSignature(header)).toBeNull()
    expect(verifySignature(enc('s3cret'), enc(body), { kinetic: header }, NOW)).toEqual({ ok: false, reason: 'malformed', scheme: 'kinetic' })
  })

  it('is the header checked when both are present, and a bad one is not passed over for a good GitHub one', () => {
    const github = githubSignature('s3cret', body)
    expect(verifySignature(enc('s3cret'), enc(body), { github, kinetic: kineticSignature('s3cret', body, T - 1000) }, NOW))
      .toEqual({ ok: false, reason: 'stale', scheme: 'kinetic' })
  })
})

describe('who may trigger a template', () => {
  const withWebhook = (webhook: Record<string, unknown> | undefined) =>
    workflowOf('tpl', [{ name: 'a' }], webhook ? { trigger: { webhook } } : {})

  it('a template with no webhook block takes no call, signed or not', () => {
    expect(planAuth(withWebhook(undefined), {})).toMatchObject({ outcome: 'refuse', reason: 'WebhookNotConfigured' })
    expect(planAuth(withWebhook(undefined), { github: GITHUB_EXPECTED })).toMatchObject({ outcome: 'refuse', reason: 'WebhookNotConfigured' })
  })

  it('allowUnauthenticated: true takes unsigned calls (and signed ones it cannot check)', () => {
    expect(planAuth(withWebhook({ allowUnauthenticated: true }), {})).toEqual({ outcome: 'accept', scheme: 'unauthenticated' })
    expect(planAuth(withWebhook({ allowUnauthenticated: true }), { github: GITHUB_EXPECTED })).toEqual({ outcome: 'accept', scheme: 'unauthenticated' })
  })

  it('allowUnauthenticated with a secret still verifies a call that is signed', () => {
    expect(planAuth(withWebhook({ allowUnauthenticated: true, secret: { name: 'hook' } }), {})).toEqual({ outcome: 'accept', scheme: 'unauthenticated' })
    expect(planAuth(withWebhook({ allowUnauthenticated: true, secret: { name: 'hook' } }), { github: GITHUB_EXPECTED }))
      .toEqual({ outcome: 'verify', namespace: 'team', name: 'hook', key: 'secret' })
  })

  it('with a secret, an unsigned call is refused as a signature failure', () => {
    expect(planAuth(withWebhook({ secret: { name: 'hook' } }), {})).toMatchObject({ outcome: 'refuse', reason: 'WebhookSignatureInvalid' })
  })

  it("reads the named key, `secret` by default, in the template's namespace", () => {
    expect(planAuth(withWebhook({ secret: { name: 'hook', key: 'hmac' } }), { github: 'x' })).toEqual({ outcome: 'verify', namespace: 'team', name: 'hook', key: 'hmac' })
    expect(planAuth(withWebhook({ secret: { name: 'hook', namespace: 'team' } }), { github: 'x' })).toEqual({ outcome: 'verify', namespace: 'team', name: 'hook', key: 'secret' })
  })

  it("refuses a Secret in another namespace without reading it", () => {
    const plan = planAuth(withWebhook({ secret: { name: 'admin-token', namespace: 'kube-system' } }), { github: 'x' })
    expect(plan).toMatchObject({ outcome: 'refuse', reason: 'WebhookSecretForbidden' })
    expect((plan as { message: string }).message).toContain('kube-system')
  })

  const ref = { outcome: 'verify' as const, namespace: 'team', name: 'hook', key: 'secret' }
  it.each([
    ['a missing Secret', null, 'does not exist'],
    ['a Secret without the key', { data: { other: 'eA==' } }, 'has no key "secret"'],
    ['an empty value', { data: { secret: '' } }, 'is empty'],
  ])('%s is WebhookSecretMissing, naming the Secret and key only', (_, secret, words) => {
    const v = secretValue(secret, ref)
    expect(v).toMatchObject({ outcome: 'refuse', reason: 'WebhookSecretMissing' })
    expect((v as { message: string }).message).toContain(words)
  })

  it('decodes the base64 data the API returns', () => {
    const v = secretValue({ data: { secret: Buffer.from(GITHUB_SECRET).toString('base64') } }, ref)
    expect(verifyRequest(v as Uint8Array, enc(GITHUB_PAYLOAD), { github: GITHUB_EXPECTED }, NOW)).toEqual({ outcome: 'accept', scheme: 'github' })
  })

  it('the refusal message never contains the secret or the signature', () => {
    for (const header of [GITHUB_EXPECTED.replace(/7$/, '8'), 'sha256=nope']) {
      const v = verifyRequest(enc(GITHUB_SECRET), enc(GITHUB_PAYLOAD), { github: header }, NOW)
      expect(v.outcome).toBe('refuse')
      const message = (v as { message: string }).message
      expect(message).not.toContain(GITHUB_SECRET)
      expect(message).not.toContain(header.slice(7))
    }
  })
})
