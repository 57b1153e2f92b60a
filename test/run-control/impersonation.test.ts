// run-control acting for a person named by Impersonate-User/-Group/-Uid (the console behind an
// authenticating proxy): the pure reading of the headers and the reviews kube-apiserver would
// ask, then the function in memory with EmbeddedKube as the API server.
import { pino } from 'pino'
import { describe, expect, it } from 'vitest'
import { createApp } from '../../functions/run-control/index.js'
import type { Logger } from '../../shared/log.js'
import { runControlConfig } from '../../shared/run-control/config.js'
import { RunControlError } from '../../shared/run-control/errors.js'
import { impersonatedIdentity, impersonationAccess, impersonationOf } from '../../shared/run-control/impersonation.js'
import type { Workflow } from '../../shared/schemas/workflow.js'
import { EmbeddedKube } from '../support/embedded-kube.js'

const NS = 'team-a'
const NOW = new Date('2026-03-01T10:00:00.000Z')
const CONSOLE_TOKEN = 'console-sa-token-77aa'
const CONSOLE = 'system:serviceaccount:kinetic-system:console'
const OTHER_TOKEN = 'other-sa-token-11bb'
const OTHER = 'system:serviceaccount:kinetic-system:other'

const refusal = (f: () => unknown) => {
  try {
    f()
  } catch (err) {
    return err instanceof RunControlError ? [err.status, err.detail] : err
  }
  return 'no refusal'
}

describe('reading the impersonation headers', () => {
  it('is nothing without Impersonate-User', () => {
    expect(impersonationOf(new Headers({ authorization: 'Bearer x' }))).toBeNull()
  })

  it('reads repeated and comma-separated Impersonate-Group (duplicates once) and Impersonate-Uid', () => {
    const headers = new Headers({ 'impersonate-user': 'alice', 'impersonate-uid': 'u-1' })
    headers.append('impersonate-group', 'team-a, reviewers')
    headers.append('impersonate-group', 'team-a')
    expect(impersonationOf(headers)).toEqual({ user: 'alice', groups: ['team-a', 'reviewers'], uid: 'u-1' })
  })

  it.each([
    ['a group without a user', { 'impersonate-group': 'admins' }],
    ['a uid without a user', { 'impersonate-uid': 'u-1' }],
    ['an empty user', { 'impersonate-user': ' ' }],
  ])('refuses %s with 400, as kube-apiserver does', (_, headers) => {
    expect(refusal(() => impersonationOf(new Headers(headers)))).toEqual([400, 'Impersonate-Group and Impersonate-Uid need Impersonate-User (a non-empty user name)'])
  })

  it('refuses Impersonate-Extra-* rather than acting for someone with fewer attributes than asked', () => {
    expect(refusal(() => impersonationOf(new Headers({ 'impersonate-user': 'alice', 'impersonate-extra-scopes': 'view' }))))
      .toEqual([400, 'Impersonate-Extra-* headers are not supported by run-control'])
  })
})

describe('what impersonation is checked against, and who the caller becomes', () => {
  it('asks impersonate on the user, each group and the uid, in that order', () => {
    expect(impersonationAccess({ user: 'alice', groups: ['team-a', 'reviewers'], uid: 'u-1' })).toEqual([
      { verb: 'impersonate', group: '', resource: 'users', name: 'alice' },
      { verb: 'impersonate', group: '', resource: 'groups', name: 'team-a' },
      { verb: 'impersonate', group: '', resource: 'groups', name: 'reviewers' },
      { verb: 'impersonate', group: 'authentication.k8s.io', resource: 'uids', name: 'u-1' },
    ])
  })

  it('asks impersonate on the ServiceAccount in its namespace for a ServiceAccount username', () => {
    expect(impersonationAccess({ user: 'system:serviceaccount:ci:deployer', groups: [] }))
      .toEqual([{ verb: 'impersonate', group: '', resource: 'serviceaccounts', namespace: 'ci', name: 'deployer' }])
  })

  it.each([
    ['a user gets system:authenticated', { user: 'alice', groups: ['team-a'] }, ['team-a', 'system:authenticated']],
    ['system:authenticated asked for is not doubled', { user: 'alice', groups: ['system:authenticated'] }, ['system:authenticated']],
    ['a ServiceAccount without groups gets its fixed groups', { user: 'system:serviceaccount:ci:deployer', groups: [] },
      ['system:serviceaccounts', 'system:serviceaccounts:ci', 'system:authenticated']],
    ['system:anonymous gets system:unauthenticated', { user: 'system:anonymous', groups: [] }, ['system:unauthenticated']],
  ])('adds the groups kube-apiserver adds: %s', (_, request, groups) => {
    expect(impersonatedIdentity(request).groups).toEqual(groups)
  })
})

function workflow(): Workflow {
  return {
    apiVersion: 'purko.io/v1alpha1', kind: 'Workflow',
    metadata: { name: 'deploy', namespace: NS, uid: 'uid-deploy' },
    spec: { steps: [{ name: 'plan', agentRef: { name: 'planner' } }, { name: 'ship', agentRef: { name: 'shipper' }, dependsOn: ['plan'] }], parallelism: 1, failureStrategy: 'failFast' },
    status: { phase: 'Running', stepStatuses: [{ name: 'plan', phase: 'Succeeded' }, { name: 'ship', phase: 'Pending' }] },
  }
}

function setup(env: Record<string, string> = {}) {
  const kube = new EmbeddedKube({ workflows: [workflow()], identities: false })
  kube.tokens.set(CONSOLE_TOKEN, { username: CONSOLE, groups: ['system:serviceaccounts', 'system:authenticated'] })
  kube.tokens.set(OTHER_TOKEN, { username: OTHER, groups: ['system:authenticated'] })
  const lines: string[] = []
  const log = pino({ level: 'info' }, { write: (l: string) => void lines.push(l) }) as Logger
  const app = createApp({ kube, log, now: () => NOW, config: runControlConfig(env) })
  const send = (path: string, as: { token?: string; user?: string; groups?: string[]; uid?: string }, body: unknown = {}) => {
    const headers = new Headers({ 'content-type': 'application/json' })
    if (as.token) headers.set('authorization', `Bearer ${as.token}`)
    if (as.user) headers.set('impersonate-user', as.user)
    for (const g of as.groups ?? []) headers.append('impersonate-group', g)
    if (as.uid) headers.set('impersonate-uid', as.uid)
    return app.request(path, { method: 'POST', headers, body: JSON.stringify(body) })
  }
  return { kube, send, lines }
}
const json = async (res: Response) => (await res.json()) as Record<string, unknown>
const readsAndWrites = (kube: EmbeddedKube) => kube.calls - kube.tokenReviews.length - kube.accessReviews.length

describe('run-control acting for an impersonated person', () => {
  it("acts for alice once the console may impersonate her and her group; alice's rights decide; the records say via the console", async () => {
    const { kube, send, lines } = setup()
    kube.allow(CONSOLE, 'impersonate', 'users', undefined, 'alice').allow(CONSOLE, 'impersonate', 'groups', undefined, 'team-a')
    kube.allow('team-a', 'approve', 'workflows', NS)
    const res = await send(`/api/approve/${NS}/deploy/ship`, { token: CONSOLE_TOKEN, user: 'alice', groups: ['team-a'] }, { reason: 'window open' })
    expect([res.status, await json(res)]).toEqual([200, { status: 'approved', workflow: 'deploy', step: 'ship', namespace: NS, user: 'alice' }])
    expect(kube.accessReviews.map((r) => [r.user, r.groups, r.verb, r.resource, r.name, r.allowed])).toEqual([
      [CONSOLE, ['system:serviceaccounts', 'system:authenticated'], 'impersonate', 'users', 'alice', true],
      [CONSOLE, ['system:serviceaccounts', 'system:authenticated'], 'impersonate', 'groups', 'team-a', true],
      ['alice', ['team-a', 'system:authenticated'], 'approve', 'workflows', 'deploy', true],
    ])
    const record = JSON.parse(kube.workflow(NS, 'deploy').metadata.annotations?.['kinetic.dev/decision-ship'] ?? '{}')
    expect(record).toEqual({ verdict: 'approved', user: 'alice', via: CONSOLE, time: NOW.toISOString(), reason: 'window open' })
    expect(kube.events.map((e) => e.message)).toEqual([`alice via ${CONSOLE} approved step ship: window open`])
    const line = lines.map((l) => JSON.parse(l)).find((l) => l.outcome === 'ok')
    expect(line).toMatchObject({ user: 'alice', via: CONSOLE, status: 200 })
    expect(lines.join('\n')).not.toContain(CONSOLE_TOKEN)
  })

  it('a cancel for alice writes requested-by with via', async () => {
    const { kube, send } = setup()
    kube.allow(CONSOLE, 'impersonate', 'users', undefined, 'alice').allow('alice', 'patch', 'workflows', NS)
    expect((await send(`/api/cancel/${NS}/deploy`, { token: CONSOLE_TOKEN, user: 'alice' })).status).toBe(200)
    expect(JSON.parse(kube.workflow(NS, 'deploy').metadata.annotations?.['kinetic.dev/requested-by'] ?? '{}'))
      .toEqual({ action: 'cancel', user: 'alice', via: CONSOLE, time: NOW.toISOString() })
    expect(kube.events.map((e) => e.message)).toEqual([`alice via ${CONSOLE} cancelled the run`])
  })

  it('a caller without impersonate gets 403 naming the user, and nothing is read', async () => {
    const { kube, send } = setup()
    kube.allow('alice', 'approve', 'workflows', NS)
    const res = await send(`/api/approve/${NS}/deploy/ship`, { token: OTHER_TOKEN, user: 'alice' })
    expect([res.status, await json(res)]).toEqual([403, { error: 'forbidden', message: `${OTHER} may not impersonate users alice` }])
    expect(readsAndWrites(kube)).toBe(0)
  })

  it.each([
    ['a group it may not impersonate', { groups: ['admins'] }, `${CONSOLE} may not impersonate groups admins`],
    ['a uid it may not impersonate', { uid: 'u-42' }, `${CONSOLE} may not impersonate uids.authentication.k8s.io u-42`],
  ])('a caller allowed the user but asking %s gets 403 naming it', async (_, extra, message) => {
    const { kube, send } = setup()
    kube.allow(CONSOLE, 'impersonate', 'users', undefined, 'alice').allow('alice', 'approve', 'workflows', NS)
    const res = await send(`/api/approve/${NS}/deploy/ship`, { token: CONSOLE_TOKEN, user: 'alice', ...extra })
    expect([res.status, await json(res)]).toEqual([403, { error: 'forbidden', message }])
    expect(kube.writes).toEqual([])
  })

  it("the impersonated person's rights decide, not the caller's: alice without approve is refused even though the console could approve", async () => {
    const { kube, send } = setup()
    kube.allow(CONSOLE, 'impersonate', 'users').allow(CONSOLE, 'approve', 'workflows', NS)
    const res = await send(`/api/approve/${NS}/deploy/ship`, { token: CONSOLE_TOKEN, user: 'alice' })
    expect([res.status, await json(res)]).toEqual([403, { error: 'forbidden', message: `alice may not approve workflows.purko.io ${NS}/deploy` }])
    expect(kube.writes).toEqual([])
  })

  it('an impersonation with a uid passes the uid to the action review', async () => {
    const { kube, send } = setup()
    kube.allow(CONSOLE, 'impersonate', 'users', undefined, 'alice').allow(CONSOLE, 'impersonate', 'uids', undefined, 'u-1').allow('alice', 'approve', 'workflows', NS)
    expect((await send(`/api/approve/${NS}/deploy/ship`, { token: CONSOLE_TOKEN, user: 'alice', uid: 'u-1' })).status).toBe(200)
    expect(kube.accessReviews.at(-1)).toMatchObject({ user: 'alice', uid: 'u-1', verb: 'approve' })
  })

  it('without a token the impersonation headers change nothing: 401', async () => {
    const { kube, send } = setup()
    const res = await send(`/api/approve/${NS}/deploy/ship`, { user: 'alice' })
    expect(res.status).toBe(401)
    expect(kube.accessReviews).toEqual([])
  })

  it('with auth none (the local plane) Impersonate-User is believed without reviews, so records name the local admin, with no via', async () => {
    const { kube, send } = setup({ KINETIC_RUN_CONTROL_AUTH: 'none' })
    const res = await send(`/api/approve/${NS}/deploy/ship`, { user: 'kinetic-local-admin', groups: ['system:masters'] })
    expect(await json(res)).toMatchObject({ status: 'approved', user: 'kinetic-local-admin' })
    expect(kube.accessReviews).toEqual([])
    expect(JSON.parse(kube.workflow(NS, 'deploy').metadata.annotations?.['kinetic.dev/decision-ship'] ?? '{}'))
      .toEqual({ verdict: 'approved', user: 'kinetic-local-admin', time: NOW.toISOString() })
    expect(kube.events.map((e) => e.message)).toEqual(['kinetic-local-admin approved step ship'])
  })
})
