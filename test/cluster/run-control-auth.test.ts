// run-control's auth on a real kube-apiserver: the function runs as its own process with the
// shipped ServiceAccount and ClusterRole kinetic-run-control (knative/rbac/run-control.yaml); its
// callers are ServiceAccounts with TokenRequest tokens, checked by real TokenReviews, and every
// action by real SubjectAccessReviews for the caller against examples/rbac/run-control-team.yaml
// (applied as shipped) and a Role without the approve verb. What is recorded names the real user.
// A ServiceAccount allowed to impersonate (the console's shape) acts for users and groups whose
// own RBAC decides; the records name the person "via" the ServiceAccount.
import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { Hono } from 'hono'
import { afterAll, beforeAll, expect, it } from 'vitest'
import type { KubeObject } from '../../local/knative/kube-http.js'
import { actionRoutes } from '../../shared/console/auth/actions.js'
import { consoleConfig } from '../../shared/console/auth/config.js'
import { signInRoutes } from '../../shared/console/auth/routes.js'
import type { ConsoleDeps } from '../../shared/console/context.js'
import { kubeAs } from '../../shared/kube/client.js'
import { silentLogger } from '../../shared/log.js'
import { listen } from '../console/auth/support.js'
import { startFunctionProcess, type FunctionProcess } from '../support/function-process.js'
import { loadManifests, ROOT } from '../knative/manifests.js'
import type { AuditEvent } from '../../cluster/control-plane.js'
import { describeCluster, useControlPlane } from './tier.js'

const NS = 'rc-team'
const FUNCTION_USER = 'system:serviceaccount:kinetic-system:run-control'
const user = (account: string) => `system:serviceaccount:${NS}:${account}`
const WORKFLOWS = `/apis/purko.io/v1alpha1/namespaces/${NS}/workflows`
const manifests = loadManifests()
const teamRoles = loadManifests(join(ROOT, 'examples', 'rbac'))

describeCluster('run-control authenticates and authorizes every caller with the API server (real TokenReview and SubjectAccessReview)', () => {
  const cp = useControlPlane({ auditLog: true })
  let fn: FunctionProcess
  const tokens = new Map<string, string>()

  const call = (method: string, path: string, account: string | null, body?: unknown, extra: Record<string, string> = {}) => fetch(`${fn.url}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...(account === null ? {} : { authorization: `Bearer ${tokens.get(account) ?? account}` }), ...extra },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  })
  const workflow = async (name: string) => (await cp.current.admin.get<KubeObject & { spec: Record<string, any> }>(`${WORKFLOWS}/${name}`))!
  const annotations = async (name: string) => (await workflow(name)).metadata?.annotations ?? {}
  const eventsOf = async (kind: string, name: string) => (await cp.current.admin.request<{ items: Array<{ reason: string; message: string; involvedObject: { kind: string; name: string } }> }>('GET', `/api/v1/namespaces/${NS}/events`))
    .items.filter((e) => e.involvedObject.kind === kind && e.involvedObject.name === name)
  async function settledAudit(): Promise<AuditEvent[]> {
    let last = -1
    for (let i = 0; i < 40; i++) {
      const events = cp.current.auditEvents()
      if (events.length === last) return events
      last = events.length
      await new Promise((r) => setTimeout(r, 75))
    }
    return cp.current.auditEvents()
  }

  beforeAll(async () => {
    const admin = cp.current.admin
    for (const file of ['workflows', 'agents']) {
      const crd = (await import('yaml')).parse(readFileSync(join(ROOT, 'crds', `${file}.purko.io.yaml`), 'utf8'))
      await admin.request('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', crd)
    }
    // As shipped: kinetic-system, the function's account and role, and the team roles of examples/rbac.
    for (const m of manifests.filter((x) => ['namespace.yaml', 'rbac/run-control.yaml'].includes(x.file))) await admin.apply(m.doc)
    expect(teamRoles.map((m) => [m.kind, m.name])).toEqual([['ClusterRole', 'kinetic-run-control-team'], ['ClusterRole', 'kinetic-run-control-approver']])
    for (const m of teamRoles) await admin.apply(m.doc)
    await admin.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } })
    // lead: the team role; approver: decide-only; editor: get and patch workflows, no approve verb.
    await admin.apply({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: 'workflow-editor', namespace: NS },
      rules: [{ apiGroups: ['purko.io'], resources: ['workflows', 'agents'], verbs: ['get', 'list', 'patch', 'update'] }] })
    const bind = (name: string, kind: 'ClusterRole' | 'Role', role: string) => admin.apply({
      apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name, namespace: NS },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind, name: role }, subjects: [{ kind: 'ServiceAccount', name, namespace: NS }],
    })
    await bind('lead', 'ClusterRole', 'kinetic-run-control-team')
    await bind('approver', 'ClusterRole', 'kinetic-run-control-approver')
    await bind('editor', 'Role', 'workflow-editor')
    // impersonator: may impersonate alice, bob and mallory and the group rc-leads, nothing else (the console's shape).
    // alice has the team role as a user, rc-leads the decide-only role as a group, mallory nothing.
    await admin.apply({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'rc-test-impersonator' }, rules: [
      { apiGroups: [''], resources: ['users'], verbs: ['impersonate'], resourceNames: ['alice', 'bob', 'mallory'] },
      { apiGroups: [''], resources: ['groups'], verbs: ['impersonate'], resourceNames: ['rc-leads'] },
    ] })
    await admin.apply({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: 'rc-test-impersonator' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'rc-test-impersonator' }, subjects: [{ kind: 'ServiceAccount', name: 'impersonator', namespace: NS }] })
    await admin.apply({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: 'alice', namespace: NS },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'kinetic-run-control-team' }, subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'alice' }] })
    await admin.apply({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: 'rc-leads', namespace: NS },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'kinetic-run-control-approver' }, subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'rc-leads' }] })
    for (const account of ['lead', 'approver', 'editor', 'outsider', 'impersonator']) tokens.set(account, (await cp.current.serviceAccountKubeconfig(NS, account)).token)
    for (let i = 0; i < 100 && !(await admin.get('/apis/purko.io/v1alpha1')); i++) await new Promise((r) => setTimeout(r, 100))
    admin.forgetDiscovery()
    const steps = [{ name: 'plan', agentRef: { name: 'planner' } }, { name: 'ship', agentRef: { name: 'shipper' }, dependsOn: ['plan'] }]
    for (const name of ['deploy', 'hotfix', 'release', 'console-run']) await admin.apply({ apiVersion: 'purko.io/v1alpha1', kind: 'Workflow', metadata: { name, namespace: NS }, spec: { parameters: { env: 'dev' }, steps } })
    await admin.apply({ apiVersion: 'purko.io/v1alpha1', kind: 'Workflow', metadata: { name: 'nightly', namespace: NS, annotations: { 'purko.io/template': 'true' } }, spec: { steps } })
    await admin.apply({ apiVersion: 'purko.io/v1alpha1', kind: 'Agent', metadata: { name: 'reviewer', namespace: NS }, spec: { model: { provider: 'p', name: 'm' } } })

    const service = manifests.find((m) => m.kind === 'Service' && m.name === 'run-control')!
    const serviceEnv = Object.fromEntries((service.doc.spec.template.spec.containers[0].env as Array<{ name: string; value?: string }>)
      .flatMap((e) => (e.value === undefined ? [] : [[e.name, e.value]])))
    const { path } = await cp.current.serviceAccountKubeconfig('kinetic-system', 'run-control')
    fn = await startFunctionProcess('run-control', { ...serviceEnv, KUBECONFIG: path })
  }, 90_000)

  afterAll(async () => {
    if (!fn) return
    await fn.stop()
    // No caller's token is ever written to a log.
    for (const token of tokens.values()) expect(fn.output().includes(token)).toBe(false)
  })

  it('a caller bound to the team role approves a step; the annotation and the Event name the real ServiceAccount user', async () => {
    const res = await call('POST', `/api/approve/${NS}/deploy/ship`, 'lead', { reason: 'window open' })
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ status: 'approved', workflow: 'deploy', step: 'ship', namespace: NS, user: user('lead') })
    const a = await annotations('deploy')
    expect(a['purko.io/approve-ship']).toBe('true')
    expect(JSON.parse(a['kinetic.dev/decision-ship'] ?? '{}')).toMatchObject({ verdict: 'approved', user: user('lead'), reason: 'window open' })
    expect((await eventsOf('Workflow', 'deploy')).map((e) => [e.reason, e.message])).toContainEqual(['StepApproved', `${user('lead')} approved step ship: window open`])
  })

  it('the function runs as its own ServiceAccount: the reviews and the patch are its requests, the review asked for the custom verb approve', async () => {
    const from = (await settledAudit()).length
    expect((await call('POST', `/api/approve/${NS}/deploy/plan`, 'approver')).status).toBe(200)
    const sent = (await settledAudit()).slice(from).filter((e) => e.user.username === FUNCTION_USER)
    expect(new Set(sent.map((e) => `${e.verb} ${e.objectRef?.resource} ${e.responseStatus?.code}`)))
      .toEqual(new Set(['create tokenreviews 201', 'create subjectaccessreviews 201', 'get workflows 200', 'patch workflows 200', 'create events 201']))
  })

  it('a caller who may patch workflows but lacks the approve verb gets 403 for approve and deny, and nothing is written', async () => {
    const before = await workflow('hotfix')
    for (const verb of ['approve', 'deny']) {
      const res = await call('POST', `/api/${verb}/${NS}/hotfix/ship`, 'editor')
      expect(res.status).toBe(403)
      expect(await res.json()).toEqual({ error: 'forbidden', message: `${user('editor')} may not approve workflows.purko.io ${NS}/hotfix` })
    }
    expect((await workflow('hotfix')).metadata?.resourceVersion).toBe(before.metadata?.resourceVersion)
    // Editing rights are enough for cancel (patch), as the table says.
    expect((await call('POST', `/api/cancel/${NS}/hotfix`, 'editor')).status).toBe(200)
  })

  it('no token, a malformed one, or a ServiceAccount token the API server does not know: 401 with WWW-Authenticate: Bearer', async () => {
    const forged = `${tokens.get('lead')!.slice(0, -6)}AAAAAA`
    for (const account of [null, 'not-a-token', forged]) {
      const res = await call('POST', `/api/approve/${NS}/deploy/ship`, account)
      expect(res.status).toBe(401)
      expect(res.headers.get('www-authenticate')).toBe('Bearer')
      expect(await res.json()).toEqual({ error: 'unauthorized' })
    }
  })

  it('the decide-only role approves and denies, but may not cancel, rerun or start runs', async () => {
    expect((await call('POST', `/api/deny/${NS}/deploy/ship`, 'approver', { reason: 'freeze' })).status).toBe(200)
    expect(JSON.parse((await annotations('deploy'))['kinetic.dev/decision-ship'] ?? '{}')).toMatchObject({ verdict: 'denied', user: user('approver'), reason: 'freeze' })
    for (const [path, message] of [
      [`/api/cancel/${NS}/deploy`, `may not patch workflows.purko.io ${NS}/deploy`],
      [`/api/rerun/${NS}/deploy`, `may not patch workflows.purko.io ${NS}/deploy`],
      [`/api/run/${NS}/nightly`, `may not create workflows.purko.io in namespace ${NS}`],
    ]) {
      const res = await call('POST', path!, 'approver')
      expect(res.status, path).toBe(403)
      expect((await res.json() as { message: string }).message).toBe(`${user('approver')} ${message}`)
    }
  })

  it('the team role reruns with parameter overrides, starts a manual run of a template, and reads step logs', async () => {
    const rerun = await call('POST', `/api/rerun/${NS}/deploy`, 'lead', { parameters: { env: 'prod' } })
    expect(rerun.status).toBe(200)
    const wf = await workflow('deploy')
    expect(wf.spec.parameters).toEqual({ env: 'prod' })
    expect(Object.keys(wf.metadata?.annotations ?? {}).filter((k) => k.includes('-ship') || k.includes('-plan'))).toEqual([])
    expect(JSON.parse(wf.metadata?.annotations?.['kinetic.dev/requested-by'] ?? '{}')).toMatchObject({ user: user('lead') })

    const run = await call('POST', `/api/run/${NS}/nightly`, 'lead', { parameters: { env: 'stage' } })
    expect(run.status).toBe(201)
    const { run: name } = await run.json() as { run: string }
    expect((await workflow(name)).metadata?.annotations).toMatchObject({ 'purko.io/trigger-type': 'manual', 'purko.io/trigger-source': user('lead') })

    const logs = await call('GET', `/api/logs/${NS}/deploy/plan`, 'lead')
    expect([logs.status, await logs.json()]).toEqual([200, { lines: [], status: 'no job' }])
    // Reading logs needs pods/log: the editor role has none.
    expect((await call('GET', `/api/logs/${NS}/deploy/plan`, 'editor')).status).toBe(403)
  })

  it('promotion approvals need approve on agents: the team role is allowed and recorded by name, the editor and outsiders are refused', async () => {
    expect((await call('POST', `/api/agents/${NS}/reviewer/approve-promotion`, 'editor', { level: 'ha' })).status).toBe(403)
    expect((await call('POST', `/api/agents/${NS}/reviewer/approve-promotion`, 'outsider', { level: 'ha' })).status).toBe(403)
    const res = await call('POST', `/api/agents/${NS}/reviewer/approve-promotion`, 'lead', { level: 'ha', reason: 'ready' })
    expect(res.status).toBe(200)
    const agent = await cp.current.admin.get<KubeObject>(`/apis/purko.io/v1alpha1/namespaces/${NS}/agents/reviewer`)
    expect(agent?.metadata?.annotations?.['purko.io/approve-promotion']).toBe(`ha ${user('lead')}: ready`)
    expect((await eventsOf('Agent', 'reviewer')).map((e) => e.message)).toEqual([`${user('lead')} approved promotion to ha: ready`])
  })

  it('a ServiceAccount allowed to impersonate acts for alice: her role decides, the records name her via the ServiceAccount', async () => {
    const impersonator = user('impersonator')
    const res = await call('POST', `/api/approve/${NS}/release/ship`, 'impersonator', { reason: 'looks good' }, { 'impersonate-user': 'alice' })
    expect([res.status, await res.json()]).toEqual([200, { status: 'approved', workflow: 'release', step: 'ship', namespace: NS, user: 'alice' }])
    expect(JSON.parse((await annotations('release'))['kinetic.dev/decision-ship'] ?? '{}')).toMatchObject({ verdict: 'approved', user: 'alice', via: impersonator, reason: 'looks good' })
    expect((await eventsOf('Workflow', 'release')).map((e) => e.message)).toContainEqual(`alice via ${impersonator} approved step ship: looks good`)
    // The impersonator itself has no rights on workflows: only alice's count.
    expect((await call('POST', `/api/approve/${NS}/release/ship`, 'impersonator')).status).toBe(403)
  })

  it("a person the ServiceAccount may impersonate but who has no role is refused with their own name; a group's role counts", async () => {
    const mallory = await call('POST', `/api/approve/${NS}/release/plan`, 'impersonator', undefined, { 'impersonate-user': 'mallory' })
    expect([mallory.status, await mallory.json()]).toEqual([403, { error: 'forbidden', message: `mallory may not approve workflows.purko.io ${NS}/release` }])
    const bob = await call('POST', `/api/deny/${NS}/release/plan`, 'impersonator', { reason: 'not yet' }, { 'impersonate-user': 'bob', 'impersonate-group': 'rc-leads' })
    expect(bob.status).toBe(200)
    expect(JSON.parse((await annotations('release'))['kinetic.dev/decision-plan'] ?? '{}')).toMatchObject({ verdict: 'denied', user: 'bob', via: user('impersonator') })
    // The decide-only role of the group: bob may not cancel.
    const cancel = await call('POST', `/api/cancel/${NS}/release`, 'impersonator', undefined, { 'impersonate-user': 'bob', 'impersonate-group': 'rc-leads' })
    expect([cancel.status, ((await cancel.json()) as { message: string }).message]).toEqual([403, `bob may not patch workflows.purko.io ${NS}/release`])
  })

  it('a ServiceAccount without impersonate, or asking for a user or group it may not impersonate, gets 403 naming it, and nothing is written', async () => {
    const before = (await workflow('release')).metadata?.resourceVersion
    for (const [account, headers, message] of [
      ['lead', { 'impersonate-user': 'alice' }, `${user('lead')} may not impersonate users alice`],
      ['impersonator', { 'impersonate-user': 'carol' }, `${user('impersonator')} may not impersonate users carol`],
      ['impersonator', { 'impersonate-user': 'alice', 'impersonate-group': 'system:masters' }, `${user('impersonator')} may not impersonate groups system:masters`],
    ] as const) {
      const res = await call('POST', `/api/cancel/${NS}/release`, account, undefined, headers)
      expect([res.status, await res.json()], message).toEqual([403, { error: 'forbidden', message }])
    }
    expect((await workflow('release')).metadata?.resourceVersion).toBe(before)
  })

  it("the console signs a person in with their real token and forwards their approval; behind a trusted proxy it acts for alice through its own ServiceAccount's impersonation", async () => {
    const base = cp.current.adminKubeConfig()
    const consoleDeps = (env: Record<string, string>, ownToken?: string): ConsoleDeps => ({
      config: consoleConfig({ KINETIC_CONSOLE_ACTIONS: 'true', KINETIC_RUN_CONTROL_URL: fn.url, KINETIC_CONSOLE_SECURE_COOKIES: 'false', ...env }),
      log: silentLogger, now: () => new Date(), kubeFor: (credential) => kubeAs(base, credential),
      ...(ownToken ? { ownToken: async () => ownToken } : {}),
    })
    const tokenDeps = consoleDeps({ KINETIC_CONSOLE_AUTH: 'token', KINETIC_CONSOLE_SESSION_KEY: randomBytes(32).toString('base64') })
    const app = new Hono().route('/', signInRoutes(tokenDeps)).route('/actions', actionRoutes(tokenDeps))
    const signIn = (token: string) => app.request('/signin', {
      method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ token, next: '/workflows' }).toString(),
    })
    expect((await signIn(`${tokens.get('lead')!.slice(0, -6)}AAAAAA`)).status).toBe(401)
    const signedIn = await signIn(tokens.get('lead')!)
    expect([signedIn.status, signedIn.headers.get('location')]).toEqual([303, '/workflows'])
    const cookie = (signedIn.headers.get('set-cookie') ?? '').split(';')[0]!
    const approved = await app.request(`/actions/approve/${NS}/console-run/ship`, {
      method: 'POST', headers: { 'x-kinetic-console': '1', 'content-type': 'application/json', cookie }, body: JSON.stringify({ reason: 'from the console' }),
    })
    expect([approved.status, await approved.json()]).toEqual([200, { status: 'approved', workflow: 'console-run', step: 'ship', namespace: NS, user: user('lead') }])
    expect(JSON.parse((await annotations('console-run'))['kinetic.dev/decision-ship'] ?? '{}')).toEqual(expect.not.objectContaining({ via: expect.anything() }))

    const proxyDeps = consoleDeps({ KINETIC_CONSOLE_AUTH: 'proxy', KINETIC_CONSOLE_TRUSTED_PROXIES: '127.0.0.1' }, tokens.get('impersonator'))
    const server = await listen(new Hono().route('/actions', actionRoutes(proxyDeps)))
    try {
      const denied = await fetch(`${server.url}/actions/deny/${NS}/console-run/plan`, {
        method: 'POST', headers: { 'x-kinetic-console': '1', 'content-type': 'application/json', 'x-forwarded-user': 'alice' }, body: JSON.stringify({ reason: 'proxy says alice' }),
      })
      expect([denied.status, await denied.json()]).toEqual([200, { status: 'denied', workflow: 'console-run', step: 'plan', namespace: NS, user: 'alice' }])
      // mallory is named by the same proxy, but her own rights (none) decide.
      const refused = await fetch(`${server.url}/actions/cancel/${NS}/console-run`, { method: 'POST', headers: { 'x-kinetic-console': '1', 'x-forwarded-user': 'mallory' } })
      expect([refused.status, await refused.json()]).toEqual([403, { error: 'forbidden', message: `mallory may not patch workflows.purko.io ${NS}/console-run` }])
    } finally {
      await server.close()
    }
    expect(JSON.parse((await annotations('console-run'))['kinetic.dev/decision-plan'] ?? '{}')).toMatchObject({ verdict: 'denied', user: 'alice', via: user('impersonator') })
  })
})
