// Who the console takes someone for: the local admin, the user a trusted proxy names (peer
// address read from a real socket on 127.0.0.1), or the person of a session cookie or bearer
// header; anonymous reading only when configured.
import { Hono } from 'hono'
import { afterEach, describe, expect, it } from 'vitest'
import { ANONYMOUS_READER, LOCAL_ADMIN, personFor } from '../../../shared/console/auth/person.js'
import { newSession, sealSession, SESSION_COOKIE } from '../../../shared/console/auth/session.js'
import type { ConsoleDeps } from '../../../shared/console/context.js'
import { consoleDeps, listen, NOW, SESSION_KEY } from './support.js'

const whoApp = (deps: ConsoleDeps) => new Hono().get('/who', async (c) => c.json({ person: await personFor(deps, c) }))
const servers: { close: () => Promise<void> }[] = []
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close()
})

async function whoOverHttp(deps: ConsoleDeps, headers: Record<string, string> | Headers) {
  const server = await listen(whoApp(deps))
  servers.push(server)
  return ((await (await fetch(`${server.url}/who`, { headers })).json()) as { person: unknown }).person
}

describe('auth=local', () => {
  it("is the local plane's admin, whatever the request says", async () => {
    const { deps } = consoleDeps({ KINETIC_CONSOLE_AUTH: 'local' })
    expect(await whoOverHttp(deps, { 'x-forwarded-user': 'mallory' })).toEqual(LOCAL_ADMIN)
    expect(LOCAL_ADMIN).toEqual({ mode: 'local', name: 'kinetic-local-admin', groups: ['system:masters'], credential: { kind: 'own' } })
  })
})

describe('auth=proxy', () => {
  it('believes X-Forwarded-User and X-Forwarded-Groups (comma-separated and repeated) from a trusted peer, and impersonates them', async () => {
    const { deps } = consoleDeps({ KINETIC_CONSOLE_AUTH: 'proxy', KINETIC_CONSOLE_TRUSTED_PROXIES: '10.0.0.0/8,127.0.0.1/32' })
    const headers = new Headers({ 'x-forwarded-user': 'alice@example.com' })
    headers.append('x-forwarded-groups', 'team-a, reviewers')
    headers.append('x-forwarded-groups', 'oncall')
    expect(await whoOverHttp(deps, headers)).toEqual({
      mode: 'proxy', name: 'alice@example.com', groups: ['team-a', 'reviewers', 'oncall'],
      credential: { kind: 'impersonate', user: 'alice@example.com', groups: ['team-a', 'reviewers', 'oncall'] },
    })
  })

  it('never acts as a Kubernetes system: user, nor with a system: group (the API server adds system:authenticated), whatever the proxy names', async () => {
    const { deps } = consoleDeps({ KINETIC_CONSOLE_AUTH: 'proxy', KINETIC_CONSOLE_TRUSTED_PROXIES: '127.0.0.1/32' })
    expect(await whoOverHttp(deps, { 'x-forwarded-user': 'system:kube-controller-manager' })).toBeNull()
    expect(await whoOverHttp(deps, { 'x-forwarded-user': 'System:Admin' })).toBeNull()
    const headers = new Headers({ 'x-forwarded-user': 'alice', 'x-forwarded-groups': 'system:masters, team-a, system:authenticated, system:nodes' })
    expect(await whoOverHttp(deps, headers)).toMatchObject({ name: 'alice', groups: ['team-a'], credential: { kind: 'impersonate', user: 'alice', groups: ['team-a'] } })
  })

  it('ignores the headers of a peer outside the trusted ranges, and warns once without their values', async () => {
    const { deps, lines } = consoleDeps({ KINETIC_CONSOLE_AUTH: 'proxy', KINETIC_CONSOLE_TRUSTED_PROXIES: '10.0.0.0/8' })
    expect(await whoOverHttp(deps, { 'x-forwarded-user': 'mallory-made-up', 'x-forwarded-groups': 'system:masters' })).toBeNull()
    expect(await whoOverHttp(deps, { 'x-forwarded-user': 'mallory-made-up' })).toBeNull()
    const warnings = lines.map((l) => JSON.parse(l)).filter((l) => l.level === 40)
    expect(warnings).toHaveLength(1)
    expect(warnings[0]).toMatchObject({ peer: '127.0.0.1', trustedProxies: ['10.0.0.0/8'] })
    expect(lines.join('\n')).not.toMatch(/mallory-made-up|system:masters/)
  })

  it('with a proxy secret configured, believes a trusted peer only when it sends that secret (under Knative every peer is the queue-proxy)', async () => {
    const secret = 'a'.repeat(40)
    const { deps } = consoleDeps({ KINETIC_CONSOLE_AUTH: 'proxy', KINETIC_CONSOLE_TRUSTED_PROXIES: '127.0.0.1/32', KINETIC_CONSOLE_PROXY_SECRET: secret })
    expect(await whoOverHttp(deps, { 'x-forwarded-user': 'mallory' })).toBeNull()
    expect(await whoOverHttp(deps, { 'x-forwarded-user': 'mallory', 'x-kinetic-proxy-secret': 'a'.repeat(39) })).toBeNull()
    expect(await whoOverHttp(deps, { 'x-forwarded-user': 'mallory', 'x-kinetic-proxy-secret': 'b'.repeat(40) })).toBeNull()
    expect(await whoOverHttp(deps, { 'x-forwarded-user': 'alice', 'x-kinetic-proxy-secret': secret })).toMatchObject({ mode: 'proxy', name: 'alice' })
  })

  it('never believes a request that did not come over a socket (no peer address)', async () => {
    const { deps } = consoleDeps({ KINETIC_CONSOLE_AUTH: 'proxy', KINETIC_CONSOLE_TRUSTED_PROXIES: '0.0.0.0/0,::/0' })
    const res = await whoApp(deps).request('/who', { headers: { 'x-forwarded-user': 'alice' } })
    expect(await res.json()).toEqual({ person: null })
  })

  it('is nobody when the trusted proxy names no user; anonymous only with anonymous reading on', async () => {
    const trusted = { KINETIC_CONSOLE_AUTH: 'proxy', KINETIC_CONSOLE_TRUSTED_PROXIES: '127.0.0.1' }
    expect(await whoOverHttp(consoleDeps(trusted).deps, {})).toBeNull()
    expect(await whoOverHttp(consoleDeps({ ...trusted, KINETIC_CONSOLE_ANONYMOUS_READ: 'true' }).deps, {})).toEqual(ANONYMOUS_READER)
  })
})

describe('auth=token', () => {
  const cookieFor = (user: string, groups: string[], token: string, key = SESSION_KEY, now = NOW) =>
    `${SESSION_COOKIE}=${sealSession(Buffer.from(key, 'base64'), newSession(token, user, groups, now))}`

  it("is the session cookie's person, acting with their token", async () => {
    const { deps } = consoleDeps()
    const res = await whoApp(deps).request('/who', { headers: { cookie: cookieFor('alice', ['team-a'], 'alice-token') } })
    expect(await res.json()).toEqual({ person: { mode: 'token', name: 'alice', groups: ['team-a'], credential: { kind: 'token', token: 'alice-token' } } })
  })

  it.each([
    ['sealed with another key', () => cookieFor('alice', [], 't', Buffer.alloc(32, 9).toString('base64'))],
    ['expired', () => cookieFor('alice', [], 't', SESSION_KEY, new Date(NOW.getTime() - 9 * 3600 * 1000))],
    ['made up', () => `${SESSION_COOKIE}=eyJ1c2VyIjoiYWRtaW4ifQ`],
  ])('is nobody for a cookie %s', async (_, cookie) => {
    const { deps } = consoleDeps()
    expect(await (await whoApp(deps).request('/who', { headers: { cookie: cookie() } })).json()).toEqual({ person: null })
  })

  it('takes an Authorization: Bearer header (scripts) as whoever the API server says the token is', async () => {
    const { deps, cluster } = consoleDeps()
    cluster.kube.tokens.set('script-token', { username: 'system:serviceaccount:ci:bot', groups: ['system:serviceaccounts'] })
    const res = await whoApp(deps).request('/who', { headers: { authorization: 'Bearer script-token' } })
    expect(await res.json()).toEqual({ person: { mode: 'token', name: 'system:serviceaccount:ci:bot', groups: ['system:serviceaccounts'], credential: { kind: 'token', token: 'script-token' } } })
    expect(cluster.credentials).toEqual([{ kind: 'token', token: 'script-token' }])
  })

  it('is nobody for a bearer token the API server does not accept, and fails (not "sign in again") when the API server is down', async () => {
    const { deps, cluster } = consoleDeps()
    expect(await (await whoApp(deps).request('/who', { headers: { authorization: 'Bearer forged' } })).json()).toEqual({ person: null })
    cluster.kube.tokens.set('good', { username: 'alice' })
    cluster.unavailable.add('good')
    const app = whoApp(deps).onError((err, c) => c.json({ error: err.name }, 503))
    expect(await (await app.request('/who', { headers: { authorization: 'Bearer good' } })).json()).toEqual({ error: 'TransientError' })
  })

  it('reads no cookie without a session key, and is anonymous with anonymous reading on', async () => {
    const cookie = cookieFor('alice', [], 't')
    const noKey = consoleDeps({ KINETIC_CONSOLE_SESSION_KEY: '' }).deps
    expect(await (await whoApp(noKey).request('/who', { headers: { cookie } })).json()).toEqual({ person: null })
    const anonymous = consoleDeps({ KINETIC_CONSOLE_ANONYMOUS_READ: 'true' }).deps
    expect(await (await whoApp(anonymous).request('/who')).json()).toEqual({ person: ANONYMOUS_READER })
  })
})
