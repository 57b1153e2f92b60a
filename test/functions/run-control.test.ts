// run-control in memory (app.request) with EmbeddedKube as the API server: TokenReview answers from
// `kube.tokens`, SubjectAccessReview answers from `kube.allow`, every write recorded.
import type { V1Job, V1Pod } from '@kubernetes/client-node'
import { pino } from 'pino'
import { describe, expect, it } from 'vitest'
import { createApp } from '../../functions/run-control/index.js'
import { ConflictError, TransientError } from '../../shared/core/errors.js'
import type { Logger } from '../../shared/log.js'
import { runIdFor } from '../../shared/workflow/plan/run-id.js'
import { runControlConfig } from '../../shared/run-control/config.js'
import type { Agent } from '../../shared/schemas/agent.js'
import type { Workflow } from '../../shared/schemas/workflow.js'
import { EmbeddedKube } from '../support/embedded-kube.js'

const NS = 'team-a'
const NOW = new Date('2026-03-01T10:00:00.000Z')
const ALICE_TOKEN = 'alice-token-4b3c2a'
const BOB_TOKEN = 'bob-token-9e8d7c'
const ALICE = { username: 'alice@example.com', uid: 'u-alice', groups: ['team-a', 'system:authenticated'] }

function workflow(name: string, extra: { annotations?: Record<string, string>; status?: Workflow['status']; parameters?: Record<string, string> } = {}): Workflow {
  return {
    apiVersion: 'purko.io/v1alpha1', kind: 'Workflow',
    metadata: { name, namespace: NS, uid: `uid-${name}`, ...(extra.annotations ? { annotations: extra.annotations } : {}) },
    spec: {
      steps: [{ name: 'plan', agentRef: { name: 'planner' } }, { name: 'ship', agentRef: { name: 'shipper' }, dependsOn: ['plan'] }],
      parallelism: 1, failureStrategy: 'failFast', ...(extra.parameters ? { parameters: extra.parameters } : {}),
    },
    ...(extra.status ? { status: extra.status } : {}),
  }
}
const runId = (name: string) => runIdFor(`uid-${name}`, undefined)
const waiting = (name = 'deploy'): Workflow['status'] => ({
  runId: runId(name), phase: 'Running',
  stepStatuses: [{ name: 'plan', phase: 'Succeeded' }, { name: 'ship', phase: 'Pending', error: 'Waiting for human approval (set annotation purko.io/approve-ship=true)' }],
})

function capturingLog(): { log: Logger; lines: string[] } {
  const lines: string[] = []
  return { log: pino({ level: 'debug', base: { function: 'run-control' } }, { write: (l: string) => void lines.push(l) }) as Logger, lines }
}

function setup(objects: { workflows?: Workflow[]; agents?: Agent[] } = {}, env: Record<string, string> = {}) {
  const kube = new EmbeddedKube({ agents: objects.agents ?? [], identities: false })
  // A run id derives from the uid, which the API server assigns: a seeded status names the run of the stored Workflow.
  for (const wf of objects.workflows ?? [workflow('deploy', { status: waiting() })]) {
    const { status, ...created } = wf
    const stored = kube.putWorkflow(created as Workflow)
    if (status) kube.putWorkflow({ ...stored, status: { ...status, ...(status.runId === runId(wf.metadata.name!) ? { runId: runIdFor(stored.metadata.uid!, undefined) } : {}) } })
  }
  kube.tokens.set(ALICE_TOKEN, ALICE)
  kube.tokens.set(BOB_TOKEN, { username: 'bob', groups: ['system:authenticated'] })
  const { log, lines } = capturingLog()
  let suffixes = 0
  const app = createApp({ kube, log, now: () => NOW, config: runControlConfig(env), randomSuffix: () => `0000000${suffixes++}` })
  const send = (method: string, path: string, opts: { token?: string | null; body?: unknown; headers?: Record<string, string> } = {}) => {
    const headers: Record<string, string> = { ...(opts.headers ?? {}) }
    const token = opts.token === undefined ? ALICE_TOKEN : opts.token
    if (token !== null) headers.authorization = `Bearer ${token}`
    const body = opts.body === undefined ? undefined : typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body)
    if (body !== undefined) headers['content-type'] = 'application/json'
    return app.request(path, { method, headers, ...(body !== undefined ? { body } : {}) })
  }
  return { kube, send, lines }
}
const json = async (res: Response) => (await res.json()) as Record<string, any>
/** Calls beyond the reviews: anything read or written for the caller. */
const apiCallsBeyondReviews = (kube: EmbeddedKube) => kube.calls - kube.tokenReviews.length - kube.accessReviews.length

describe('authentication and authorization', () => {
  it.each([
    ['no Authorization header', null],
    ['a token the API server does not know', 'forged'],
  ])('answers 401 with WWW-Authenticate: Bearer for %s, and reads nothing', async (_, token) => {
    const { kube, send } = setup()
    const res = await send('POST', `/api/approve/${NS}/deploy/ship`, { token })
    expect(res.status).toBe(401)
    expect(res.headers.get('www-authenticate')).toBe('Bearer')
    expect(await json(res)).toEqual({ error: 'unauthorized' })
    expect(apiCallsBeyondReviews(kube)).toBe(0)
    expect(kube.accessReviews).toEqual([])
  })

  it('asks the TokenReview for the configured audience', async () => {
    const { kube, send } = setup({}, { KINETIC_RUN_CONTROL_AUDIENCE: 'run-control' })
    kube.tokens.set(ALICE_TOKEN, { ...ALICE, audiences: ['https://kubernetes.default.svc'] })
    kube.tokens.set('aud-token', { username: 'carol', audiences: ['run-control'] })
    kube.allow('carol', 'approve', 'workflows', NS)
    expect((await send('POST', `/api/approve/${NS}/deploy/ship`)).status).toBe(401)
    expect((await send('POST', `/api/approve/${NS}/deploy/ship`, { token: 'aud-token' })).status).toBe(200)
    expect(kube.tokenReviews.map((r) => r.audiences)).toEqual([['run-control'], ['run-control']])
  })

  it('answers 403 naming the user, verb and object when the review refuses, and reads and writes nothing', async () => {
    const { kube, send } = setup()
    // Edit rights are not enough: deciding a step needs the approve verb.
    kube.allow('alice@example.com', 'patch', 'workflows', NS).allow('alice@example.com', 'get', 'workflows', NS)
    const res = await send('POST', `/api/approve/${NS}/deploy/ship`)
    expect(res.status).toBe(403)
    expect(await json(res)).toEqual({ error: 'forbidden', message: 'alice@example.com may not approve workflows.purko.io team-a/deploy' })
    expect(apiCallsBeyondReviews(kube)).toBe(0)
    expect(kube.writes).toEqual([])
    // The review was for the verified identity, with its groups and uid.
    expect(kube.accessReviews[0]).toMatchObject({ user: 'alice@example.com', uid: 'u-alice', groups: ['team-a', 'system:authenticated'], verb: 'approve', group: 'purko.io', resource: 'workflows', namespace: NS, name: 'deploy' })
  })

  it('takes the identity from the TokenReview, never from a header', async () => {
    const { kube, send } = setup()
    kube.allow('alice@example.com', 'approve', 'workflows', NS)
    await send('POST', `/api/approve/${NS}/deploy/ship`, { headers: { 'x-forwarded-user': 'mallory', 'x-forwarded-email': 'mallory@example.com' } })
    expect(JSON.parse(kube.workflow(NS, 'deploy').metadata.annotations?.['kinetic.dev/decision-ship'] ?? '{}').user).toBe('alice@example.com')
  })

  it('with auth none (the embedded plane) allows every call as anonymous, says so at start, and asks no review', async () => {
    const { kube, send, lines } = setup({}, { KINETIC_RUN_CONTROL_AUTH: 'none' })
    expect(lines.some((l) => l.includes('"auth":"none"') && l.includes('"level":40'))).toBe(true)
    const res = await send('POST', `/api/approve/${NS}/deploy/ship`, { token: null })
    expect(await json(res)).toMatchObject({ status: 'approved', user: 'anonymous' })
    expect(kube.tokenReviews).toEqual([])
    expect(kube.accessReviews).toEqual([])
  })

  it('never writes the token or the parameter values to a log line', async () => {
    const { kube, send, lines } = setup({ workflows: [workflow('deploy', { status: waiting() })] })
    kube.allow('alice@example.com', 'patch', 'workflows', NS)
    await send('POST', `/api/rerun/${NS}/deploy`, { body: { parameters: { apiKey: 'sk-very-secret' } } })
    await send('POST', `/api/rerun/${NS}/deploy`, { token: 'forged' })
    expect(lines.join('\n')).not.toContain(ALICE_TOKEN)
    expect(lines.join('\n')).not.toContain('forged')
    expect(lines.join('\n')).not.toContain('sk-very-secret')
    const done = lines.map((l) => JSON.parse(l)).find((l) => l.action === 'rerun' && l.outcome === 'ok')
    expect(done).toMatchObject({ function: 'run-control', action: 'rerun', namespace: NS, name: 'deploy', user: 'alice@example.com', status: 200 })
  })
})

describe('approve and deny', () => {
  it('approves a waiting step: purko\'s annotation and the verified decision in one patch, an Event, and purko\'s answer', async () => {
    const { kube, send } = setup()
    kube.allow('team-a', 'approve', 'workflows', NS)
    const res = await send('POST', `/api/approve/${NS}/deploy/ship`, { body: { reason: 'change window open' } })
    expect(res.status).toBe(200)
    expect(await json(res)).toEqual({ status: 'approved', workflow: 'deploy', step: 'ship', namespace: NS, user: 'alice@example.com' })
    expect(kube.writes).toEqual(['annotate Workflow/deploy'])
    const annotations = kube.workflow(NS, 'deploy').metadata.annotations
    expect(annotations?.['purko.io/approve-ship']).toBe('true')
    expect(JSON.parse(annotations?.['kinetic.dev/decision-ship'] ?? '')).toEqual({ verdict: 'approved', user: 'alice@example.com', time: NOW.toISOString(), reason: 'change window open' })
    expect(kube.events.map((e) => [e.reason, e.message, e.involvedObject?.name])).toEqual([['StepApproved', 'alice@example.com approved step ship: change window open', 'deploy']])
  })

  it("serves purko's name-only path in the agent namespace", async () => {
    const { kube, send } = setup({ workflows: [{ ...workflow('deploy'), metadata: { ...workflow('deploy').metadata, namespace: 'ai-agents' } }] })
    kube.allow('alice@example.com', 'approve', 'workflows', 'ai-agents')
    const res = await send('POST', '/api/approve/deploy/ship')
    expect(await json(res)).toMatchObject({ status: 'approved', namespace: 'ai-agents' })
    expect(kube.workflow('ai-agents', 'deploy').metadata.annotations?.['purko.io/approve-ship']).toBe('true')
  })

  it('denies a step with the decision record the planner turns into "Denied by <user>: <reason>"', async () => {
    const { kube, send } = setup({ workflows: [workflow('deploy', { status: waiting(), annotations: { 'purko.io/approve-ship': 'true' } })] })
    kube.allow('alice@example.com', 'approve', 'workflows', NS)
    const res = await send('POST', `/api/deny/${NS}/deploy/ship`, { body: { reason: 'freeze' } })
    expect(await json(res)).toMatchObject({ status: 'denied', step: 'ship', user: 'alice@example.com' })
    const annotations = kube.workflow(NS, 'deploy').metadata.annotations ?? {}
    expect(annotations['purko.io/deny-ship']).toBe('true')
    expect(annotations).not.toHaveProperty('purko.io/approve-ship')
    expect(JSON.parse(annotations['kinetic.dev/decision-ship'] ?? '')).toMatchObject({ verdict: 'denied', user: 'alice@example.com', reason: 'freeze' })
    expect(kube.events.map((e) => e.reason)).toEqual(['StepDenied'])
  })

  it('pre-approves a step the run has not reached', async () => {
    const { kube, send } = setup({ workflows: [workflow('deploy', { status: { runId: runId('deploy'), phase: 'Running', stepStatuses: [{ name: 'plan', phase: 'Running' }] } })] })
    kube.allow('alice@example.com', 'approve', 'workflows', NS)
    expect((await send('POST', `/api/approve/${NS}/deploy/ship`)).status).toBe(200)
  })

  it.each([
    ['an unknown workflow', '/api/approve/team-a/nope/ship', 404, 'Workflow team-a/nope not found'],
    ['an unknown step', '/api/approve/team-a/deploy/nope', 404, 'Workflow team-a/deploy has no step "nope"'],
    ['a step that already ran', '/api/approve/team-a/deploy/plan', 409, 'Step "plan" of Workflow team-a/deploy is already Succeeded; only a step that has not started can be approved or denied'],
  ])('%s: answered with its status and message, nothing written', async (_, path, status, message) => {
    const { kube, send } = setup()
    kube.allow('alice@example.com', 'approve', 'workflows', NS)
    const res = await send('POST', path)
    expect(res.status).toBe(status)
    expect(await json(res)).toEqual({ error: status === 404 ? 'not_found' : 'conflict', message })
    expect(kube.writes).toEqual([])
  })

  it('retries once on a lost resourceVersion race, re-reading the Workflow', async () => {
    const { kube, send } = setup()
    kube.allow('alice@example.com', 'approve', 'workflows', NS)
    kube.failNext('patchWorkflowMetadata', new ConflictError('the object has been modified'))
    expect((await send('POST', `/api/approve/${NS}/deploy/ship`)).status).toBe(200)
    expect(kube.workflow(NS, 'deploy').metadata.annotations?.['purko.io/approve-ship']).toBe('true')
  })

  it('answers 409 when the race is lost twice', async () => {
    const { kube, send } = setup()
    kube.allow('alice@example.com', 'approve', 'workflows', NS)
    kube.failNext('patchWorkflowMetadata', new ConflictError('modified')).failNext('patchWorkflowMetadata', new ConflictError('modified again'))
    const res = await send('POST', `/api/approve/${NS}/deploy/ship`)
    expect(res.status).toBe(409)
    expect(await json(res)).toEqual({ error: 'conflict', message: 'modified again; try again' })
  })

  it('answers 503 with Retry-After when the API server is unavailable (the token review, or the read)', async () => {
    const { kube, send } = setup()
    kube.allow('alice@example.com', 'approve', 'workflows', NS)
    kube.failNext('reviewToken', new TransientError('connect ECONNREFUSED'))
    const first = await send('POST', `/api/approve/${NS}/deploy/ship`)
    expect(first.status).toBe(503)
    expect(first.headers.get('retry-after')).toBe('5')
    expect(await json(first)).toEqual({ error: 'unavailable', message: 'The Kubernetes API is unavailable; try again shortly' })
    kube.failNext('getWorkflow', new TransientError('timeout'))
    expect((await send('POST', `/api/approve/${NS}/deploy/ship`)).status).toBe(503)
    expect((await send('POST', `/api/approve/${NS}/deploy/ship`)).status).toBe(200)
  })

  it('still answers 200 when only the Event could not be recorded (the annotation holds the identity)', async () => {
    const { kube, send } = setup()
    kube.allow('alice@example.com', 'approve', 'workflows', NS)
    kube.failNext('createEvent', new TransientError('timeout'))
    expect((await send('POST', `/api/approve/${NS}/deploy/ship`)).status).toBe(200)
  })
})

describe('cancel and rerun', () => {
  it('cancels a running run with purko\'s annotation and who asked', async () => {
    const { kube, send } = setup()
    kube.allow('alice@example.com', 'patch', 'workflows', NS)
    const res = await send('POST', `/api/cancel/${NS}/deploy`, { body: { reason: 'wrong branch' } })
    expect(await json(res)).toEqual({ status: 'cancelled', workflow: 'deploy', namespace: NS, user: 'alice@example.com' })
    const annotations = kube.workflow(NS, 'deploy').metadata.annotations ?? {}
    expect(annotations['purko.io/cancel']).toBe('true')
    expect(JSON.parse(annotations['kinetic.dev/requested-by'] ?? '')).toEqual({ action: 'cancel', user: 'alice@example.com', time: NOW.toISOString(), reason: 'wrong branch' })
    expect(kube.events.map((e) => [e.reason, e.message])).toEqual([['CancelRequested', 'alice@example.com cancelled the run: wrong branch']])
  })

  it('answers 409 for a run that already finished', async () => {
    const { kube, send } = setup({ workflows: [workflow('deploy', { status: { runId: runId('deploy'), phase: 'Succeeded' } })] })
    kube.allow('alice@example.com', 'patch', 'workflows', NS)
    expect((await send('POST', `/api/cancel/${NS}/deploy`)).status).toBe(409)
    expect(kube.writes).toEqual([])
  })

  it('reruns in one patch: parameter overrides, a fresh rerun token, who asked, and the old steering annotations removed', async () => {
    const { kube, send } = setup({ workflows: [workflow('deploy', {
      parameters: { env: 'dev', region: 'eu' },
      annotations: { 'purko.io/cancel': 'true', 'purko.io/approve-ship': 'true', 'kinetic.dev/decision-ship': '{}' },
      status: { runId: runId('deploy'), phase: 'Cancelled' },
    })] })
    kube.allow('alice@example.com', 'patch', 'workflows', NS)
    const uid = kube.workflow(NS, 'deploy').metadata.uid
    const res = await send('POST', `/api/rerun/${NS}/deploy`, { body: { parameters: { env: 'prod' } } })
    expect(await json(res)).toEqual({ status: 'restarted', name: 'deploy', workflow: 'deploy', namespace: NS, user: 'alice@example.com', parameters: { env: 'prod', region: 'eu' } })
    expect(kube.writes).toEqual(['patch Workflow/deploy'])
    const wf = kube.workflow(NS, 'deploy')
    expect(wf.metadata.uid).toBe(uid) // the same object, rerun in place
    expect(wf.metadata.annotations).toEqual({
      'purko.io/rerun': NOW.toISOString(),
      'kinetic.dev/requested-by': JSON.stringify({ action: 'rerun', user: 'alice@example.com', time: NOW.toISOString() }),
    })
    expect(kube.events.map((e) => [e.reason, e.message])).toEqual([['RerunRequested', 'alice@example.com asked for a rerun with parameters env']])
  })

  it("serves purko's /api/rerun/workflow/{name} in the agent namespace", async () => {
    const { kube, send } = setup({ workflows: [{ ...workflow('deploy'), metadata: { ...workflow('deploy').metadata, namespace: 'ai-agents' } }] })
    kube.allow('alice@example.com', 'patch', 'workflows', 'ai-agents')
    const res = await send('POST', '/api/rerun/workflow/deploy')
    expect(await json(res)).toMatchObject({ status: 'restarted', name: 'deploy', namespace: 'ai-agents' })
  })

  it('refuses to rerun a template (400): a template is started with /api/run', async () => {
    const { kube, send } = setup({ workflows: [workflow('nightly', { annotations: { 'purko.io/template': 'true' } })] })
    kube.allow('alice@example.com', 'patch', 'workflows', NS)
    const res = await send('POST', `/api/rerun/${NS}/nightly`)
    expect(res.status).toBe(400)
    expect((await json(res)).message).toContain('POST /api/run/team-a/nightly')
  })
})

describe('manual runs of a template', () => {
  const template = () => workflow('nightly', { annotations: { 'purko.io/template': 'true' }, parameters: { env: 'dev' } })

  it('creates a run from the template (201), started by the user, after get on the template and create in the namespace', async () => {
    const { kube, send } = setup({ workflows: [template()] })
    kube.allow('alice@example.com', 'get', 'workflows', NS, 'nightly').allow('alice@example.com', 'create', 'workflows', NS)
    const res = await send('POST', `/api/run/${NS}/nightly`, { body: { parameters: { env: 'prod' } } })
    expect(res.status).toBe(201)
    expect(await json(res)).toEqual({ status: 'triggered', run: 'nightly-run-00000000', namespace: NS, template: 'nightly', user: 'alice@example.com' })
    const run = kube.workflow(NS, 'nightly-run-00000000')
    expect(run.metadata.annotations).toMatchObject({ 'purko.io/workflow-template': 'nightly', 'purko.io/trigger-type': 'manual', 'purko.io/trigger-source': 'alice@example.com' })
    expect(run.spec.parameters).toEqual({ env: 'prod' })
    expect(kube.events.map((e) => [e.reason, e.message, e.involvedObject?.name])).toEqual([['RunTriggered', 'alice@example.com started run nightly-run-00000000', 'nightly']])
  })

  it('honours an Idempotency-Key: the same request twice makes one run, the second answered 200 duplicate', async () => {
    const { kube, send } = setup({ workflows: [template()] })
    kube.allow('alice@example.com', 'get', 'workflows', NS).allow('alice@example.com', 'create', 'workflows', NS)
    const first = await json(await send('POST', `/api/run/${NS}/nightly`, { headers: { 'idempotency-key': 'deploy-42' } }))
    const second = await send('POST', `/api/run/${NS}/nightly`, { headers: { 'idempotency-key': 'deploy-42' } })
    expect(second.status).toBe(200)
    expect(await json(second)).toEqual({ status: 'duplicate', run: first.run, namespace: NS, template: 'nightly', user: 'alice@example.com' })
    expect(kube.writes.filter((w) => w.startsWith('create Workflow/'))).toEqual([`create Workflow/${first.run}`])
  })

  it('tries another random name once when the first is taken', async () => {
    const { kube, send } = setup({ workflows: [template(), workflow('nightly-run-00000000')] })
    kube.allow('alice@example.com', 'get', 'workflows', NS).allow('alice@example.com', 'create', 'workflows', NS)
    expect(await json(await send('POST', `/api/run/${NS}/nightly`))).toMatchObject({ status: 'triggered', run: 'nightly-run-00000001' })
  })

  it.each([
    ['a Workflow that is not a template', 'deploy', 400],
    ['a template that does not exist', 'nope', 404],
  ])('%s: answered with its status, nothing written', async (_, name, status) => {
    const { kube, send } = setup()
    kube.allow('alice@example.com', 'get', 'workflows', NS).allow('alice@example.com', 'create', 'workflows', NS)
    expect((await send('POST', `/api/run/${NS}/${name}`)).status).toBe(status)
    expect(kube.writes).toEqual([])
  })

  it('needs both rights: get on the template alone is 403 on create', async () => {
    const { kube, send } = setup({ workflows: [template()] })
    kube.allow('alice@example.com', 'get', 'workflows', NS)
    const res = await send('POST', `/api/run/${NS}/nightly`)
    expect(await json(res)).toEqual({ error: 'forbidden', message: 'alice@example.com may not create workflows.purko.io in namespace team-a' })
  })
})

describe('step logs', () => {
  const job = (name: string, conditions: Array<{ type: string; status: string }> = []): V1Job => ({
    apiVersion: 'batch/v1', kind: 'Job',
    metadata: { name, namespace: NS, labels: { 'purko.io/workflow': 'deploy', 'purko.io/step': 'plan' }, creationTimestamp: new Date('2026-03-01T09:00:00Z') },
    status: { conditions },
  })
  // A pod the scheduler placed on a node (the kubelet reports on it, and serves its log).
  const pod = (name: string, jobName: string): V1Pod => ({
    metadata: { name, namespace: NS, labels: { 'job-name': jobName } }, spec: { nodeName: 'node-1', containers: [{ name: 'step', image: 'registry.example/agent:9' }] },
  })
  const withLogs = () => {
    const s = setup()
    s.kube.allow('alice@example.com', 'get', 'workflows', NS).allow('alice@example.com', 'get', 'pods', NS)
    return s
  }

  it("answers purko's shape: the last 100 lines, the Job's state and the pod", async () => {
    const { kube, send } = withLogs()
    kube.jobs.set(`${NS}/deploy-plan-a0`, job('deploy-plan-a0', [{ type: 'Complete', status: 'True' }]))
    kube.pods.set(`${NS}/deploy-plan-a0-x1`, pod('deploy-plan-a0-x1', 'deploy-plan-a0'))
    kube.logs.set(`${NS}/deploy-plan-a0`, Array.from({ length: 120 }, (_, i) => `step ${i}`).join('\n') + '\nOUTPUT:{"ok":true}\n')
    const body = await json(await send('GET', `/api/logs/${NS}/deploy/plan`))
    expect(body.status).toBe('complete')
    expect(body.pod).toBe('deploy-plan-a0-x1')
    expect(body.lines).toHaveLength(100)
    expect(body.lines.at(-1)).toBe('OUTPUT:{"ok":true}')
    // The access asked for: the Workflow and pods/log.
    expect(kube.accessReviews.map((r) => `${r.verb} ${r.resource}${r.subresource ? `/${r.subresource}` : ''}`)).toEqual(['get workflows', 'get pods/log'])
  })

  it("falls back to the step's status when its Job is gone, and says no job otherwise", async () => {
    const failed = workflow('deploy', { status: { runId: runId('deploy'), phase: 'Failed', stepStatuses: [{ name: 'plan', phase: 'Failed', error: 'exit 1\nno route to host' }] } })
    const { kube, send } = setup({ workflows: [failed] })
    kube.allow('alice@example.com', 'get', 'workflows', NS).allow('alice@example.com', 'get', 'pods', NS)
    expect(await json(await send('GET', `/api/logs/${NS}/deploy/plan`))).toEqual({ lines: ['exit 1', 'no route to host'], status: 'failed' })
    expect(await json(await send('GET', `/api/logs/${NS}/deploy/ship`))).toEqual({ lines: [], status: 'no job' })
  })

  it('says no pods for a Job without a pod yet', async () => {
    const { kube, send } = setup({ workflows: [workflow('deploy', { status: { runId: runId('deploy'), phase: 'Running', stepStatuses: [{ name: 'plan', phase: 'Running', jobName: 'deploy-plan-a0' }] } })] })
    kube.allow('alice@example.com', 'get', 'workflows', NS).allow('alice@example.com', 'get', 'pods', NS)
    kube.jobs.set(`${NS}/deploy-plan-a0`, job('deploy-plan-a0'))
    expect(await json(await send('GET', `/api/logs/${NS}/deploy/plan`))).toEqual({ lines: [], status: 'no pods' })
  })

  it('says why the pod has not started when the kubelet keeps its container waiting', async () => {
    const { kube, send } = withLogs()
    kube.jobs.set(`${NS}/deploy-plan-a0`, job('deploy-plan-a0'))
    kube.pods.set(`${NS}/deploy-plan-a0-x1`, {
      ...pod('deploy-plan-a0-x1', 'deploy-plan-a0'),
      status: { phase: 'Pending', containerStatuses: [{ name: 'step', image: 'registry.example/agent:9', imageID: '', ready: false, restartCount: 0, state: { waiting: { reason: 'ImagePullBackOff', message: 'Back-off pulling image "registry.example/agent:9"' } } }] },
    })
    expect(await json(await send('GET', `/api/logs/${NS}/deploy/plan`))).toEqual({
      lines: [], status: 'running', pod: 'deploy-plan-a0-x1',
      message: 'The pod is waiting: pod deploy-plan-a0-x1 container step: ImagePullBackOff: Back-off pulling image "registry.example/agent:9"',
    })
  })

  it('is 403 without the right to read pod logs', async () => {
    const { kube, send } = setup()
    kube.allow('alice@example.com', 'get', 'workflows', NS)
    expect(await json(await send('GET', `/api/logs/${NS}/deploy/plan`))).toEqual({ error: 'forbidden', message: 'alice@example.com may not get pods/log in namespace team-a' })
  })
})

describe('agent promotion approvals', () => {
  const agent = (annotations?: Record<string, string>): Agent => ({
    apiVersion: 'purko.io/v1alpha1', kind: 'Agent',
    metadata: { name: 'reviewer', namespace: NS, ...(annotations ? { annotations } : {}) },
    spec: { model: { provider: 'anthropic', name: 'claude' } },
    status: { shuHaRi: { currentLevel: 'shu' } },
  }) as Agent

  it('writes purko.io/approve-promotion "<level> <user>: <reason>" and an Event on the Agent', async () => {
    const { kube, send } = setup({ agents: [agent()] })
    kube.allow('alice@example.com', 'approve', 'agents', NS, 'reviewer')
    const res = await send('POST', `/api/agents/${NS}/reviewer/approve-promotion`, { body: { level: 'ha', reason: 'clean for a month' } })
    expect(await json(res)).toEqual({ status: 'approved', agent: 'reviewer', namespace: NS, level: 'ha', user: 'alice@example.com' })
    expect(kube.agents.get(`${NS}/reviewer`)?.metadata.annotations?.['purko.io/approve-promotion']).toBe('ha alice@example.com: clean for a month')
    expect(kube.events.map((e) => [e.reason, e.message, e.involvedObject?.kind])).toEqual([['PromotionApproved', 'alice@example.com approved promotion to ha: clean for a month', 'Agent']])
  })

  it('is 409 while another approval waits to be recorded, 404 for an unknown agent, 403 without the approve verb on agents', async () => {
    const { kube, send } = setup({ agents: [agent({ 'purko.io/approve-promotion': 'ha bob' })] })
    kube.allow('alice@example.com', 'approve', 'agents', NS)
    expect((await send('POST', `/api/agents/${NS}/reviewer/approve-promotion`, { body: { level: 'ha' } })).status).toBe(409)
    expect((await send('POST', `/api/agents/${NS}/nobody/approve-promotion`, { body: { level: 'ha' } })).status).toBe(404)
    expect((await send('POST', `/api/agents/${NS}/reviewer/approve-promotion`, { token: BOB_TOKEN, body: { level: 'ha' } })).status).toBe(403)
    expect(kube.agents.get(`${NS}/reviewer`)?.metadata.annotations?.['purko.io/approve-promotion']).toBe('ha bob')
  })
})

describe('the HTTP surface', () => {
  it('answers 413 for a body over 64 KiB, before anything is asked', async () => {
    const { kube, send } = setup()
    const res = await send('POST', `/api/approve/${NS}/deploy/ship`, { body: JSON.stringify({ reason: 'x'.repeat(70 * 1024) }) })
    expect(res.status).toBe(413)
    expect((await json(res)).error).toBe('payload_too_large')
    expect(kube.calls).toBe(0)
  })

  it('answers 405 with Allow for the wrong method and 404 for an unknown path', async () => {
    const { send } = setup()
    const wrong = await send('GET', `/api/approve/${NS}/deploy/ship`)
    expect(wrong.status).toBe(405)
    expect(wrong.headers.get('allow')).toBe('POST')
    expect((await send('POST', `/api/logs/${NS}/deploy/ship`)).status).toBe(405)
    expect((await send('POST', '/api/unknown')).status).toBe(404)
  })

  it('answers 400 for a body that is not a JSON object, after authenticating, before authorizing', async () => {
    const { kube, send } = setup()
    const res = await send('POST', `/api/approve/${NS}/deploy/ship`, { body: '["x"]' })
    expect(res.status).toBe(400)
    expect(await json(res)).toEqual({ error: 'bad_request', message: 'The body must be a JSON object' })
    expect(kube.tokenReviews).toHaveLength(1)
    expect(kube.accessReviews).toEqual([])
  })
})
