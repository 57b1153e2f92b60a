// The `kinetic` CLI against a real kube-apiserver: every command goes through `main(argv, io)`
// with a kubeconfig file, as a person runs it. Kinetic's CRDs are installed as shipped (crds/),
// so what the CLI writes must pass the real schema validation and pruning; the ServiceAccounts'
// namespaced Roles are enforced by real RBAC, and `events` relies on the real server's
// fieldSelector on involvedObject.kind/name.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import http from 'node:http'
import https from 'node:https'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { stringify } from 'yaml'
import { main, type CliIo } from '../../cli/main.js'
import type { KubeObject } from '../../local/knative/kube-http.js'
import { announce } from '../../shared/engine/controller.js'
import { type Transition } from '../../shared/core/plan.js'
import { kineticEventsFor } from '../../shared/engine/kinetic-events.js'
import { KubeClient } from '../../shared/kube/client.js'
import type { Workflow } from '../../shared/schemas/workflow.js'
import { testDeps } from '../support/engine-deps.js'
import { describeCluster, useControlPlane } from './tier.js'
import { installCrds, readCrds } from '../../local/crds.js'

const NS = 'cli-e2e'
const ROOT = join(import.meta.dirname, '..', '..')
const API = `/apis/purko.io/v1alpha1/namespaces/${NS}`
const NOW = new Date('2026-01-01T00:10:00Z')
const saUser = (account: string) => `system:serviceaccount:${NS}:${account}`

type Wf = KubeObject & { metadata: NonNullable<KubeObject['metadata']> & { uid?: string; resourceVersion?: string }; spec: Record<string, any>; status?: Record<string, any> }
interface CliResult { code: number; stdout: string; stderr: string }
interface Seen { method: string; path: string; contentType: string | undefined; body: string; status?: number }

const steps = (...names: string[]) => names.map((s) => {
  const [name, deps] = s.split('<') as [string, string | undefined]
  return { name, agentRef: { name: 'writer' }, ...(deps ? { dependsOn: deps.split(',') } : {}) }
})
const aWorkflow = (name: string, spec: Record<string, unknown>, annotations?: Record<string, string>) => ({
  apiVersion: 'purko.io/v1alpha1', kind: 'Workflow', metadata: { name, namespace: NS, ...(annotations ? { annotations } : {}) }, spec,
})

describeCluster('the kinetic CLI on a real kube-apiserver (CRDs as shipped, ServiceAccounts with namespaced Roles)', () => {
  const cp = useControlPlane()
  let dir: string
  /** kubeconfig files: the admin, and ServiceAccounts bound to namespaced Roles. */
  const kubeconfigs: Record<'admin' | 'operator' | 'viewer' | 'relayed', string> = { admin: '', operator: '', viewer: '', relayed: '' }
  /** A plain-HTTP relay to the API server that records what the CLI sends and can interleave a write. */
  let relay: http.Server
  const relayed: Seen[] = []
  let beforeNextPatch: (() => Promise<void>) | undefined

  const cli = async (as: keyof typeof kubeconfigs, argv: string[], io: Partial<CliIo> = {}): Promise<CliResult> => {
    let stdout = ''
    let stderr = ''
    const code = await main(argv, {
      env: { KUBECONFIG: kubeconfigs[as] }, home: dir, pollMs: 50, now: () => NOW, ...io,
      stdout: (t) => { stdout += t },
      stderr: (t) => { stderr += t },
    })
    return { code, stdout, stderr }
  }
  const admin = () => cp.current.admin
  const get = async (name: string, plural = 'workflows') => (await admin().get<Wf>(`${API}/${plural}/${name}`))!
  const create = (obj: ReturnType<typeof aWorkflow>) => admin().request<Wf>('POST', `${API}/workflows`, obj)
  /** Replaces the status through the status subresource, as the engine does. */
  const setStatus = async (plural: string, name: string, status: Record<string, unknown>) => {
    const current = await get(name, plural)
    return admin().request<Wf>('PUT', `${API}/${plural}/${name}/status`, { ...current, status })
  }

  beforeAll(async () => {
    const a = admin()
    await installCrds(a, readCrds(join(ROOT, 'crds')))
    await a.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } })
    const role = (name: string, rules: unknown[]) => a.apply({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name, namespace: NS }, rules })
    const bind = (account: string, roleName: string) => a.apply({
      apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: account, namespace: NS },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: roleName }, subjects: [{ kind: 'ServiceAccount', name: account, namespace: NS }],
    })
    // operator: what the CLI's run-control commands need; viewer: read-only (no create, no patch).
    await role('kinetic-operator', [
      { apiGroups: ['purko.io'], resources: ['workflows'], verbs: ['get', 'list', 'create', 'patch'] },
      { apiGroups: ['purko.io'], resources: ['agents'], verbs: ['get', 'list'] },
      { apiGroups: [''], resources: ['events'], verbs: ['list'] },
    ])
    await role('kinetic-viewer', [
      { apiGroups: ['purko.io'], resources: ['workflows', 'agents'], verbs: ['get', 'list'] },
      { apiGroups: [''], resources: ['events'], verbs: ['list'] },
    ])
    await bind('operator', 'kinetic-operator')
    await bind('viewer', 'kinetic-viewer')

    dir = mkdtempSync(join(tmpdir(), 'kinetic-cli-e2e-'))
    const ca = Buffer.from(cp.current.caPem).toString('base64')
    const write = (file: string, user: string, token: string, server = cp.current.server) => {
      const path = join(dir, file)
      writeFileSync(path, stringify({
        apiVersion: 'v1', kind: 'Config',
        clusters: [{ name: 'real', cluster: server.startsWith('https:') ? { server, 'certificate-authority-data': ca } : { server, 'insecure-skip-tls-verify': true } }],
        users: [{ name: user, user: { token } }],
        contexts: [{ name: user, context: { cluster: 'real', user, namespace: NS } }],
        'current-context': user,
      }), { mode: 0o600 })
      return path
    }
    const adminToken = cp.current.adminKubeConfig().getCurrentUser()?.token ?? ''
    const operatorToken = (await cp.current.serviceAccountKubeconfig(NS, 'operator')).token
    kubeconfigs.admin = write('admin.kubeconfig', 'admin', adminToken)
    kubeconfigs.operator = write('operator.kubeconfig', 'operator', operatorToken)
    kubeconfigs.viewer = write('viewer.kubeconfig', 'viewer', (await cp.current.serviceAccountKubeconfig(NS, 'viewer')).token)

    relay = http.createServer((req, res) => {
      const chunks: Buffer[] = []
      req.on('data', (c: Buffer) => chunks.push(c))
      req.on('end', async () => {
        const body = Buffer.concat(chunks)
        const seen: Seen = { method: req.method ?? '', path: req.url ?? '', contentType: req.headers['content-type'], body: body.toString('utf8') }
        relayed.push(seen)
        if (req.method === 'PATCH' && beforeNextPatch) {
          const hook = beforeNextPatch
          beforeNextPatch = undefined
          await hook()
        }
        const { host: _host, connection: _connection, ...headers } = req.headers
        const upstream = https.request(new URL(req.url ?? '/', cp.current.server), { method: req.method, headers, ca: cp.current.caPem }, (up) => {
          seen.status = up.statusCode
          res.writeHead(up.statusCode ?? 502, up.headers)
          up.pipe(res)
        })
        upstream.on('error', (err) => res.writeHead(502).end(err.message))
        upstream.end(body)
      })
    })
    await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve))
    kubeconfigs.relayed = write('relayed.kubeconfig', 'operator', operatorToken, `http://127.0.0.1:${(relay.address() as AddressInfo).port}`)

    // The CRDs serve once established.
    for (let i = 0; i < 100 && !(await a.get(`${API}/workflows`).catch(() => null)); i++) await new Promise((r) => setTimeout(r, 100))
    for (let i = 0; i < 100 && !(await a.get(`${API}/agents`).catch(() => null)); i++) await new Promise((r) => setTimeout(r, 100))
    a.forgetDiscovery()

    await create(aWorkflow('nightly', { parameters: { env: 'dev', region: 'eu' }, steps: steps('plan', 'ship<plan') }, { 'purko.io/template': 'true' }))
    for (const name of ['deploy', 'hotfix', 'release', 'done']) await create(aWorkflow(name, { parameters: { env: 'dev' }, steps: steps('plan', 'ship<plan') }))
  }, 90_000)

  afterAll(async () => {
    await new Promise((resolve) => (relay ? relay.close(resolve) : resolve(null)))
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  it('run <template> --param creates a run the real CRD accepts: trigger annotations, template label, controller owner reference, merged parameters', async () => {
    const template = await get('nightly')
    const res = await cli('operator', ['run', 'nightly', '--param', 'env=stage', '-p', 'day=monday'])
    expect(res).toMatchObject({ code: 0, stderr: '' })
    expect(res.stdout).toMatch(/^nightly-run-[0-9a-f]{8}\n$/)
    const run = await get(res.stdout.trim())
    expect(run.metadata.annotations).toEqual({
      'purko.io/workflow-template': 'nightly', 'purko.io/trigger-type': 'manual', 'purko.io/trigger-source': 'operator',
    })
    expect(run.metadata.labels).toEqual({ 'kinetic.dev/template': 'nightly' })
    expect(run.metadata.ownerReferences).toEqual([{ apiVersion: 'purko.io/v1alpha1', kind: 'Workflow', name: 'nightly', uid: template.metadata.uid, controller: true, blockOwnerDeletion: false }])
    expect(run.spec.parameters).toEqual({ env: 'stage', region: 'eu', day: 'monday' })
    expect(run.spec.steps).toEqual(template.spec.steps)

    // -o json prints the object as the server stored it (uid and resourceVersion are the server's).
    const json = await cli('admin', ['run', 'nightly', '-o', 'json'])
    expect(json.code).toBe(0)
    const printed = JSON.parse(json.stdout) as Wf
    expect((await get(printed.metadata.name!)).metadata.uid).toBe(printed.metadata.uid)
    expect(printed.metadata.annotations?.['purko.io/trigger-source']).toBe('admin')

    // A run is not a template; the message says what to do instead.
    expect(await cli('operator', ['run', 'deploy'])).toEqual({
      code: 1, stdout: '',
      stderr: 'error: workflow deploy is not a template (no purko.io/template: "true" annotation and no spec.trigger.schedule.cron); run it again with `kinetic rerun deploy`\n',
    })
  })

  it('approve and deny write the step annotations by a resourceVersion-guarded merge patch; a write in between is a real 409 and the CLI retries', async () => {
    const before = await get('deploy')
    expect(await cli('operator', ['approve', 'deploy', 'ship'])).toEqual({ code: 0, stdout: 'step ship of workflow deploy approved\n', stderr: '' })
    const approved = await get('deploy')
    expect(approved.metadata.annotations).toEqual({ 'purko.io/approve-ship': 'true' })
    expect(approved.metadata.resourceVersion).not.toBe(before.metadata.resourceVersion)

    // Through the relay: someone else changes the Workflow between the CLI's read and its patch.
    relayed.length = 0
    beforeNextPatch = async () => {
      const current = await get('deploy')
      await admin().request('PATCH', `${API}/workflows/deploy`, { metadata: { resourceVersion: current.metadata.resourceVersion, labels: { team: 'infra' } } }, 'application/merge-patch+json')
    }
    const denied = await cli('relayed', ['deny', 'deploy', 'plan', '--reason', 'freeze'])
    expect(denied).toEqual({
      code: 0, stdout: 'step plan of workflow deploy denied\n',
      stderr: 'note: --reason is recorded only through run-control (--server); the annotation carries no reason\n',
    })
    const patches = relayed.filter((r) => r.method === 'PATCH')
    expect(patches).toHaveLength(2)
    for (const p of patches) {
      expect(p.path).toBe(`${API}/workflows/deploy`)
      expect(p.contentType).toBe('application/merge-patch+json')
      expect(Object.keys(JSON.parse(p.body).metadata)).toEqual(['annotations', 'resourceVersion'])
    }
    const [first, second] = patches.map((p) => JSON.parse(p.body).metadata as { annotations: unknown; resourceVersion: string })
    expect(first!.resourceVersion).toBe(approved.metadata.resourceVersion)
    expect(second!.resourceVersion).not.toBe(first!.resourceVersion)
    expect(second!.annotations).toEqual({ 'purko.io/deny-plan': 'true' })
    // Read, patch (409), read again, patch: both writes survive.
    expect(relayed.map((r) => `${r.method} ${r.status}`)).toEqual(['GET 200', 'PATCH 409', 'GET 200', 'PATCH 200'])
    const after = await get('deploy')
    expect(after.metadata.annotations).toEqual({ 'purko.io/approve-ship': 'true', 'purko.io/deny-plan': 'true' })
    expect(after.metadata.labels).toEqual({ team: 'infra' })
  })

  it('an unknown step or a missing workflow is refused with exit 1 and a message naming what exists; nothing is written', async () => {
    const before = await get('hotfix')
    expect(await cli('operator', ['approve', 'hotfix', 'rollout'])).toEqual({ code: 1, stdout: '', stderr: 'error: step rollout not found in workflow hotfix (steps: plan, ship)\n' })
    expect(await cli('operator', ['deny', 'hotfix', 'rollout', '--reason', 'no'])).toMatchObject({ code: 1, stderr: expect.stringContaining('error: step rollout not found in workflow hotfix (steps: plan, ship)\n') })
    expect(await cli('operator', ['approve', 'ghost', 'ship'])).toEqual({ code: 1, stdout: '', stderr: `error: workflow ghost not found in namespace ${NS}\n` })
    expect((await get('hotfix')).metadata.resourceVersion).toBe(before.metadata.resourceVersion)
  })

  it('cancel writes purko.io/cancel; rerun --param changes spec.parameters, sets purko.io/rerun and clears the previous run\'s cancel and approvals', async () => {
    expect(await cli('operator', ['approve', 'hotfix', 'ship'])).toMatchObject({ code: 0 })
    expect(await cli('operator', ['cancel', 'hotfix'])).toEqual({ code: 0, stdout: 'workflow hotfix cancel requested\n', stderr: '' })
    expect((await get('hotfix')).metadata.annotations).toEqual({ 'purko.io/approve-ship': 'true', 'purko.io/cancel': 'true' })

    expect(await cli('operator', ['rerun', 'hotfix', '--param', 'env=prod', '--param', 'severity=high'])).toEqual({ code: 0, stdout: 'workflow hotfix rerun requested\n', stderr: '' })
    const rerun = await get('hotfix')
    expect(rerun.spec.parameters).toEqual({ env: 'prod', severity: 'high' })
    expect(rerun.metadata.annotations).toEqual({ 'purko.io/rerun': NOW.toISOString() })

    // A finished run has nothing to cancel; a template has no run of its own.
    await setStatus('workflows', 'done', { phase: 'Succeeded' })
    expect(await cli('operator', ['cancel', 'done'])).toEqual({ code: 1, stdout: '', stderr: 'error: workflow done already finished (Succeeded); nothing to cancel\n' })
    expect(await cli('operator', ['rerun', 'nightly'])).toEqual({ code: 1, stdout: '', stderr: 'error: workflow nightly is a template and never runs itself; start a run with `kinetic run nightly`\n' })
  })

  it('a ServiceAccount without patch or create rights gets exit 1 and the real 403, naming the verb, resource and namespace; nothing is written', async () => {
    const before = await get('release')
    const forbidden = (verb: string, what: string) => [
      `error: forbidden: user "viewer" may not ${verb} workflows.purko.io in namespace ${NS} (context viewer).`,
      `The API server said: ${what} is forbidden: User "${saUser('viewer')}" cannot ${verb} resource "workflows" in API group "purko.io" in the namespace "${NS}"`,
      `Ask for a Role that grants "${verb}" on workflows.purko.io; check with: kubectl auth can-i ${verb} workflows.purko.io -n ${NS}`,
      '',
    ].join('\n')
    for (const argv of [['approve', 'release', 'ship'], ['deny', 'release', 'plan'], ['cancel', 'release'], ['rerun', 'release', '--param', 'env=prod']]) {
      expect(await cli('viewer', argv), argv.join(' ')).toEqual({ code: 1, stdout: '', stderr: forbidden('patch', 'workflows.purko.io "release"') })
    }
    expect(await cli('viewer', ['run', 'nightly'])).toEqual({ code: 1, stdout: '', stderr: forbidden('create', 'workflows.purko.io') })
    expect((await get('release')).metadata.resourceVersion).toBe(before.metadata.resourceVersion)
    // The viewer still reads.
    expect((await cli('viewer', ['status', 'release'])).code).toBe(0)
  })

  it('status draws the tree of a status written through the status subresource (the real schema keeps every field it reads); -o json is the stored object', async () => {
    await create(aWorkflow('pipeline', { steps: steps('fetch', 'lint<fetch', 'test<fetch', 'package<lint,test', 'notify') }))
    await setStatus('workflows', 'pipeline', {
      phase: 'Running', runId: 'run-1', message: 'Step package failed once',
      startTime: '2026-01-01T00:00:00Z',
      totalSteps: 5, completedSteps: 3, failedSteps: 0,
      stepStatuses: [
        { name: 'fetch', phase: 'Succeeded', startTime: '2026-01-01T00:00:00Z', completionTime: '2026-01-01T00:00:12Z' },
        { name: 'lint', phase: 'Succeeded', startTime: '2026-01-01T00:00:12Z', completionTime: '2026-01-01T00:01:00Z' },
        { name: 'test', phase: 'Succeeded', retryCount: 2, startTime: '2026-01-01T00:00:12Z', completionTime: '2026-01-01T00:03:00Z' },
        { name: 'package', phase: 'Pending', error: 'Waiting for human approval (set annotation purko.io/approve-package=true)' },
        { name: 'notify', phase: 'Running', startTime: '2026-01-01T00:09:15Z' },
      ],
    })
    const tree = await cli('operator', ['status', 'pipeline'])
    expect(tree).toEqual({
      code: 0, stderr: '',
      stdout: [
        `workflow ${NS}/pipeline   Running   10m   run run-1`,
        '  started 10m ago',
        '  message: Step package failed once',
        '  steps: 3/5 done, 0 failed',
        '',
        'STEP               PHASE       DURATION   NOTES',
        '├─ fetch           Succeeded   12s',
        '│  ├─ lint         Succeeded   48s',
        '│  └─ test         Succeeded   2m48s      retries 2',
        '│     └─ package   Pending                approval needed: kinetic approve pipeline package; after lint',
        '└─ notify          Running     45s',
        '',
      ].join('\n'),
    })
    const json = await cli('operator', ['status', 'pipeline', '-o', 'json'])
    expect(json.code).toBe(0)
    const stored = await get('pipeline')
    expect(JSON.parse(json.stdout)).toEqual(stored)
    expect(stored.status?.stepStatuses?.[2]).toEqual({ name: 'test', phase: 'Succeeded', retryCount: 2, startTime: '2026-01-01T00:00:12Z', completionTime: '2026-01-01T00:03:00Z' })

    // A run of a template names it and its trigger.
    const run = (await cli('operator', ['run', 'nightly'])).stdout.trim()
    expect((await cli('operator', ['status', run])).stdout).toContain(`workflow ${NS}/${run}   Pending\n  run of template nightly, manual (operator)\n  steps: 0/2 done, 0 failed\n`)
  })

  it('events lists the Kubernetes Events the engine records for a Workflow, selected by the real involvedObject.kind/name fieldSelector', async () => {
    const essay = await create(aWorkflow('essay', { steps: steps('draft', 'publish<draft') }))
    const kube = new KubeClient(cp.current.adminKubeConfig())
    const transitions: Transition[] = [
      { kind: 'run.started', type: 'Normal', reason: 'RunStarted', message: 'Started run r1 of 2 steps', record: true },
      { kind: 'step.started', type: 'Normal', reason: 'StepStarted', message: 'Started step draft', record: false },
      { kind: 'step.waiting', type: 'Normal', reason: 'ApprovalRequired', message: 'Waiting for human approval (set annotation purko.io/approve-publish=true)', record: true, fieldPath: 'spec.steps{publish}' },
    ]
    await announce(testDeps(kube, { now: new Date('2026-01-01T00:00:00Z') }), 'Workflow', essay as unknown as Workflow, 'r1', transitions)
    // Events of other objects in the namespace: another Workflow, and an Agent of the same name.
    const other = await create(aWorkflow('essay-2', { steps: steps('draft') }))
    await announce(testDeps(kube), 'Workflow', other as unknown as Workflow, 'r9', [{ kind: 'run.started', type: 'Normal', reason: 'RunStarted', message: 'Started run r9 of 1 steps', record: true }])
    const agent = await admin().request<Wf>('POST', `${API}/agents`, { apiVersion: 'purko.io/v1alpha1', kind: 'Agent', metadata: { name: 'essay' }, spec: { model: { provider: 'offline', name: 'scripted' } } })
    await announce(testDeps(kube), 'Agent', agent as never, 'a1', [{ kind: 'agent.ready', type: 'Normal', reason: 'Ready', message: 'Agent essay is ready', record: true }])
    expect((await admin().request<{ items: unknown[] }>('GET', `/api/v1/namespaces/${NS}/events`)).items).toHaveLength(4)

    const expected = kineticEventsFor('/kinetic', { kind: 'Workflow', metadata: essay.metadata }, 'r1', transitions).filter((e) => e.type !== 'dev.kinetic.workflow.step.started')
    const json = await cli('operator', ['events', 'essay', '-o', 'json'])
    expect(json.code).toBe(0)
    const lines = json.stdout.trimEnd().split('\n').map((l) => JSON.parse(l) as Record<string, any>)
    expect(lines.map((l) => [l.id, l.type])).toEqual(expected.map((e) => [e.id, e.type]))
    expect(lines[1]).toEqual({
      specversion: '1.0', id: expected[1]!.id, type: 'dev.kinetic.workflow.step.waiting',
      source: '/kinetic/kinetic-workflow', subject: `/apis/purko.io/v1alpha1/namespaces/${NS}/workflows/essay`,
      time: '2026-01-01T00:00:00.000Z', datacontenttype: 'application/json',
      data: {
        namespace: NS, workflow: 'essay', reason: 'ApprovalRequired', severity: 'Normal', fieldPath: 'spec.steps{publish}',
        message: 'Waiting for human approval (set annotation purko.io/approve-publish=true)',
      },
    })

    const table = await cli('viewer', ['events', 'essay'])
    expect(table.code).toBe(0)
    const rows = table.stdout.trimEnd().split('\n')
    expect(rows[0]).toMatch(/^TIME\s+TYPE\s+ID\s+MESSAGE$/)
    expect(rows.slice(1).map((r) => r.replace(/\s+/g, ' '))).toEqual([
      `2026-01-01T00:00:00.000Z dev.kinetic.workflow.run.started ${expected[0]!.id.slice(0, 12)} Started run r1 of 2 steps`,
      `2026-01-01T00:00:00.000Z dev.kinetic.workflow.step.waiting ${expected[1]!.id.slice(0, 12)} Waiting for human approval (set annotation purko.io/approve-publish=true)`,
    ])
    // A Workflow without Events says so.
    expect(await cli('operator', ['events', 'release'])).toEqual({ code: 0, stdout: '', stderr: `no events for workflow release in namespace ${NS}\n` })
  })

  it('agents lists a real Agent with the status written through its status subresource; listing every namespace needs a cluster-wide grant', async () => {
    await admin().request('POST', `${API}/agents`, {
      apiVersion: 'purko.io/v1alpha1', kind: 'Agent', metadata: { name: 'writer' },
      spec: { model: { provider: 'offline', name: 'scripted' }, autonomyLevel: 'supervised' },
    })
    await setStatus('agents', 'writer', {
      phase: 'Ready',
      metrics: { successRate: 0.875, totalInvocations: 8, totalCostUSD: 0.0123, lastInvocationTime: '2026-01-01T00:05:00Z' },
      shuHaRi: { currentLevel: 'ha', readyForPromotion: true, promotionProgress: { nextLevel: 'ri' } },
    })
    const res = await cli('operator', ['agents'])
    expect(res).toMatchObject({ code: 0, stderr: '' })
    const rows = res.stdout.trimEnd().split('\n').map((r) => r.replace(/\s+/g, ' ').trim())
    expect(rows).toEqual([
      'NAME AUTONOMY SHU-HA-RI PROMOTION PHASE SUCCESS RUNS COST LAST RUN',
      'essay - shu - - - 0 $0.00 -',
      'writer supervised ha ready for ri Ready 87.5% 8 $0.0123 5m ago',
    ])
    const json = JSON.parse((await cli('operator', ['agents', '-o', 'json'])).stdout) as { kind: string; items: Wf[] }
    expect(json.kind).toBe('List')
    expect(json.items.find((a) => a.metadata.name === 'writer')).toEqual(await get('writer', 'agents'))

    const all = await cli('admin', ['agents', '-A'])
    expect(all.code).toBe(0)
    expect(all.stdout.split('\n')[0]).toMatch(/^NAMESPACE\s+NAME/)
    expect(all.stdout).toMatch(new RegExp(`^${NS}\\s+writer\\s+supervised`, 'm'))
    // The Role is namespaced: -A lists across namespaces, which only a ClusterRole grants; the advice says so.
    expect(await cli('operator', ['agents', '-A'])).toEqual({
      code: 1, stdout: '',
      stderr: [
        'error: forbidden: user "operator" may not list agents.purko.io in every namespace (context operator).',
        `The API server said: agents.purko.io is forbidden: User "${saUser('operator')}" cannot list resource "agents" in API group "purko.io" at the cluster scope`,
        'Ask for a ClusterRole (bound by a ClusterRoleBinding) that grants "list" on agents.purko.io; check with: kubectl auth can-i list agents.purko.io --all-namespaces',
        '',
      ].join('\n'),
    })
  })
})
