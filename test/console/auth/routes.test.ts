// Token sign-in: the form, a pasted token checked with the API server, the sealed cookie that
// then identifies the person, sign-out, and the refusals people see.
import { Hono } from 'hono'
import { describe, expect, it } from 'vitest'
import { personFor } from '../../../shared/console/auth/person.js'
import { safeNext, signInRoutes } from '../../../shared/console/auth/routes.js'
import { openSession, SESSION_COOKIE } from '../../../shared/console/auth/session.js'
import type { ConsoleDeps } from '../../../shared/console/context.js'
import { consoleDeps, NOW, SESSION_KEY } from './support.js'

const ALICE_TOKEN = 'eyJhbGciOiJSUzI1NiJ9.alice-secret.sig'

function app(deps: ConsoleDeps) {
  const a = new Hono()
  a.route('/', signInRoutes(deps))
  a.get('/who', async (c) => c.json({ person: await personFor(deps, c) }))
  return a
}

function setup(env: Record<string, string> = {}) {
  const { deps, cluster, lines } = consoleDeps(env)
  cluster.kube.tokens.set(ALICE_TOKEN, { username: 'alice', groups: ['team-a', 'system:authenticated'] })
  const signIn = (fields: Record<string, string>, headers: Record<string, string> = {}) =>
    app(deps).request('/signin', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', host: 'console.example', ...headers }, body: new URLSearchParams(fields).toString() })
  return { deps, cluster, lines, signIn }
}
const cookieValue = (res: Response) => /kinetic_session=([^;]*)/.exec(res.headers.get('set-cookie') ?? '')?.[1]

describe('GET /signin', () => {
  it('shows a labelled password field for the token, says where to get one, and keeps where to go next', async () => {
    const { deps } = setup()
    const res = await app(deps).request('/signin?next=%2Fworkflows%2Fteam-a%2Fdeploy')
    expect(res.status).toBe(200)
    const page = await res.text()
    expect(page).toMatch(/^<!doctype html>\n<html lang="en">/)
    expect(page).toContain('<a class="skip-link" href="#main">')
    expect(page).toContain('<label for="token">Bearer token</label>')
    expect(page).toMatch(/<input id="token" name="token" type="password" required autofocus/)
    expect(page).toContain('kubectl create token &lt;service-account&gt;')
    expect(page).toContain('kubeconfig')
    expect(page).toContain('<input type="hidden" name="next" value="/workflows/team-a/deploy">')
    expect(page).toContain('<button type="submit">Sign in</button>')
  })

  it('never keeps a next that leaves the console', async () => {
    const { deps } = setup()
    const page = await (await app(deps).request('/signin?next=%2F%2Fevil.example%2Fx')).text()
    expect(page).toContain('<input type="hidden" name="next" value="/">')
  })

  it('answers 503 saying the session key Secret is missing when there is none', async () => {
    const { deps } = setup({ KINETIC_CONSOLE_SESSION_KEY: '' })
    const res = await app(deps).request('/signin')
    expect(res.status).toBe(503)
    const page = await res.text()
    expect(page).toContain('no session key')
    expect(page).toContain('console-session')
    expect(page).toContain('KINETIC_CONSOLE_SESSION_KEY')
  })

  it.each([
    ['proxy', { KINETIC_CONSOLE_AUTH: 'proxy', KINETIC_CONSOLE_TRUSTED_PROXIES: '10.0.0.0/8' }, 'authenticating proxy'],
    ['local', { KINETIC_CONSOLE_AUTH: 'local' }, 'local plane'],
  ])('is not there in %s mode (404, saying why)', async (_, env, why) => {
    const { deps } = setup(env)
    const res = await app(deps).request('/signin')
    expect(res.status).toBe(404)
    expect(await res.text()).toContain(why)
  })
})

describe('POST /signin', () => {
  it('checks the token with the API server as that token, sets the sealed HttpOnly SameSite=Strict Secure cookie for 8 h, and goes to next', async () => {
    const { deps, cluster, signIn } = setup()
    const res = await signIn({ token: `  Bearer ${ALICE_TOKEN}\n`, next: '/workflows?phase=Failed' })
    expect(res.status).toBe(303)
    expect(res.headers.get('location')).toBe('/workflows?phase=Failed')
    expect(cluster.credentials).toEqual([{ kind: 'token', token: ALICE_TOKEN }])
    const setCookie = res.headers.get('set-cookie') ?? ''
    expect(setCookie.split('; ').slice(1).sort()).toEqual(['HttpOnly', 'Max-Age=28800', 'Path=/', 'SameSite=Strict', 'Secure'])
    expect(setCookie).not.toContain('alice-secret')
    expect(openSession(Buffer.from(SESSION_KEY, 'base64'), cookieValue(res)!, NOW)).toEqual({
      token: ALICE_TOKEN, user: 'alice', groups: ['team-a', 'system:authenticated'], exp: NOW.getTime() / 1000 + 8 * 3600,
    })
    // The cookie is who the next request is.
    const who = await app(deps).request('/who', { headers: { cookie: `${SESSION_COOKIE}=${cookieValue(res)}` } })
    expect(await who.json()).toMatchObject({ person: { mode: 'token', name: 'alice', credential: { kind: 'token', token: ALICE_TOKEN } } })
  })

  it('leaves Secure off when configured (plain HTTP on 127.0.0.1)', async () => {
    const { signIn } = setup({ KINETIC_CONSOLE_SECURE_COOKIES: 'false' })
    const res = await signIn({ token: ALICE_TOKEN })
    expect(res.headers.get('location')).toBe('/')
    expect(res.headers.get('set-cookie')).not.toContain('Secure')
  })

  it('shows the form again (401) for a token the API server does not accept, sets nothing, and logs no token', async () => {
    const { signIn, lines } = setup()
    const res = await signIn({ token: 'forged-token-123', next: '/agents' })
    expect(res.status).toBe(401)
    expect(res.headers.get('set-cookie')).toBeNull()
    const page = await res.text()
    expect(page).toContain('role="alert">The API server did not accept this token.</p>')
    expect(page).toContain('aria-invalid="true"')
    expect(page).toContain('value="/agents"')
    expect(page).not.toContain('forged-token-123')
    expect(lines.join('\n')).not.toContain('forged-token-123')
  })

  it('tells an empty token apart (400) and an API server outage (503) from a refused one', async () => {
    const { signIn, cluster } = setup()
    expect((await signIn({ token: '  ' })).status).toBe(400)
    cluster.unavailable.add(ALICE_TOKEN)
    const res = await signIn({ token: ALICE_TOKEN })
    expect(res.status).toBe(503)
    expect(await res.text()).toContain('The Kubernetes API server is unavailable')
  })

  it('refuses a form sent from another site (403), and accepts its own origin', async () => {
    const { signIn } = setup()
    expect((await signIn({ token: ALICE_TOKEN }, { origin: 'https://evil.example' })).status).toBe(403)
    expect((await signIn({ token: ALICE_TOKEN }, { origin: 'https://console.example' })).status).toBe(303)
  })

  it('drops a long group list before the cookie outgrows what a browser keeps', async () => {
    const { signIn, cluster } = setup()
    cluster.kube.tokens.set(ALICE_TOKEN, { username: 'alice', groups: Array.from({ length: 200 }, (_, i) => `group-number-${i}`) })
    const res = await signIn({ token: ALICE_TOKEN })
    expect(res.status).toBe(303)
    expect(openSession(Buffer.from(SESSION_KEY, 'base64'), cookieValue(res)!, NOW)).toMatchObject({ user: 'alice', groups: [] })
  })

  it('answers 503 without a session key instead of checking the token', async () => {
    const { signIn, cluster } = setup({ KINETIC_CONSOLE_SESSION_KEY: '' })
    expect((await signIn({ token: ALICE_TOKEN })).status).toBe(503)
    expect(cluster.credentials).toEqual([])
  })
})

describe('POST /signout', () => {
  it('clears the cookie and goes to the sign-in page', async () => {
    const { deps } = setup()
    const res = await app(deps).request('/signout', { method: 'POST' })
    expect(res.status).toBe(303)
    expect(res.headers.get('location')).toBe('/signin')
    expect(res.headers.get('set-cookie')).toMatch(/^kinetic_session=; Max-Age=0; Path=\/; HttpOnly; Secure; SameSite=Strict/)
  })
})

describe('safeNext', () => {
  it.each([
    ['/workflows/team-a/deploy?tab=log#step-ship', '/workflows/team-a/deploy?tab=log#step-ship'],
    [undefined, '/'],
    ['https://evil.example/', '/'],
    ['//evil.example/', '/'],
    ['/\\evil.example', '/'],
    ['workflows', '/'],
    ['/signin?next=/x', '/'],
    ['/a/../signout', '/'],
    ['/x\r\nSet-Cookie: a=b', '/'],
  ])('%s goes to %s', (next, to) => {
    expect(safeNext(next)).toBe(to)
  })
})
