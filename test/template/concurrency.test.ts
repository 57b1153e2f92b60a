import { describe, expect, it } from 'vitest'
import { runIdFor } from '../../shared/workflow/plan/run-id.js'
import { mayNeedWork } from '../../shared/workflow/plan/run-status.js'
import { planWorkflow } from '../../shared/workflow/plan/plan-workflow.js'
import { UNCHANGED } from '../../shared/core/plan.js'
import type { WorkflowPlan } from '../../shared/workflow/plan/types.js'
import type { Workflow, WorkflowStatus } from '../../shared/schemas/workflow.js'
import { admitRun, concurrencyRule, needsSiblings } from '../../shared/template/plan/concurrency.js'
import { aChain, agentsOf, anAgent, applyStatus, aStep, aWorkflow, changes, factsFor, type FactsOverrides } from '../fixtures/workflows.js'

const T0 = '2026-01-01T00:00:00.000Z'
const T1 = '2026-01-01T00:01:00.000Z'
const T2 = '2026-01-01T00:02:00.000Z'

type State = 'new' | 'active' | 'queued' | 'done' | 'cancelling'

interface RunOptions {
  created?: string
  policy?: string
  maxParallel?: number
  whenBusy?: 'wait' | 'skip'
  state?: State
  /** null: no template annotation at all. */
  template?: string | null
  annotations?: Record<string, string>
  status?: WorkflowStatus
}

/** A run of template `nightly` created at `created` (default T0), in the given state. */
function aRun(name: string, o: RunOptions = {}): Workflow {
  const template = o.template === undefined ? 'nightly' : o.template
  const annotations = { ...(template === null ? {} : { 'purko.io/workflow-template': template }), ...o.annotations }
  const wf = aWorkflow({
    name, uid: `uid-${name}`, annotations,
    spec: {
      ...(o.policy !== undefined ? { concurrency: { policy: o.policy, ...(o.maxParallel !== undefined ? { maxParallel: o.maxParallel } : {}), ...(o.whenBusy ? { whenBusy: o.whenBusy } : {}) } } : {}),
    },
  })
  wf.metadata.creationTimestamp = o.created ?? T0
  wf.metadata.labels = { 'kinetic.dev/template': template ?? '' }
  const runId = runIdFor(`uid-${name}`, undefined)
  const state = o.state ?? 'new'
  if (state === 'active') wf.status = { runId, phase: 'Running', startTime: T0 }
  if (state === 'done') wf.status = { runId, phase: 'Succeeded', startTime: T0, completionTime: T0 }
  if (state === 'queued') wf.status = { phase: 'Pending', queuePosition: 1 }
  if (state === 'cancelling') wf.metadata.annotations = { ...wf.metadata.annotations, 'purko.io/cancel': 'true' }
  if (o.status) wf.status = o.status
  return wf
}

const at = (minute: number) => new Date(Date.parse(T0) + minute * 60_000).toISOString()

describe('admitRun', () => {
  it.each<[string, Workflow, Workflow[], ReturnType<typeof admitRun>['kind']]>([
    ['a run without a template annotation (purko: never any active runs)', aRun('self', { template: null, policy: 'forbid' }), [aRun('a', { template: null, state: 'active' })], 'start'],
    ['a run of a template without a policy', aRun('self'), [aRun('a', { state: 'active' })], 'start'],
    ['forbid with nothing active', aRun('self', { policy: 'forbid' }), [aRun('a', { state: 'done' })], 'start'],
    ['forbid while a run of another template is active (same label value)', aRun('self', { policy: 'forbid' }), [aRun('a', { state: 'active', template: 'other' })], 'start'],
    ['allow without maxParallel, however many are active', aRun('self', { policy: 'allow' }), ['a', 'b', 'c', 'd', 'e'].map((n) => aRun(n, { state: 'active' })), 'start'],
    ['allow maxParallel 2 with one active', aRun('self', { policy: 'allow', maxParallel: 2 }), [aRun('a', { state: 'active' })], 'start'],
    ['allow maxParallel 2 with two active', aRun('self', { policy: 'allow', maxParallel: 2 }), [aRun('a', { state: 'active' }), aRun('b', { state: 'active' })], 'wait'],
    ['forbid while a run is active', aRun('self', { policy: 'forbid' }), [aRun('a', { state: 'active' })], 'wait'],
    ['forbid while an older run waits to start', aRun('self', { policy: 'forbid', created: at(1) }), [aRun('a', { created: at(0) })], 'wait'],
    ['forbid while only a newer run waits', aRun('self', { policy: 'forbid', created: at(0) }), [aRun('a', { created: at(1) })], 'start'],
    ['forbid while an older run is being cancelled before it started', aRun('self', { policy: 'forbid', created: at(1) }), [aRun('a', { created: at(0), state: 'cancelling' })], 'start'],
    ['forbid whenBusy skip while a run is active', aRun('self', { policy: 'forbid', whenBusy: 'skip' }), [aRun('a', { state: 'active' })], 'skip'],
    ['forbid whenBusy skip with nothing active', aRun('self', { policy: 'forbid', whenBusy: 'skip' }), [aRun('a', { state: 'done' })], 'start'],
    ['replace with an older active run', aRun('self', { policy: 'replace', created: at(1) }), [aRun('a', { state: 'active', created: at(0) })], 'replace'],
    ['replace with nothing active', aRun('self', { policy: 'replace' }), [aRun('a', { state: 'done' })], 'start'],
    ['replace while a newer run is active', aRun('self', { policy: 'replace', created: at(0) }), [aRun('a', { state: 'active', created: at(1) })], 'skip'],
    ['an unknown policy (purko proceeds)', aRun('self', { policy: 'serialize' }), [aRun('a', { state: 'active' })], 'start'],
  ])('%s: %s', (_, self, siblings, kind) => {
    expect(admitRun(self, siblings).kind).toBe(kind)
  })

  it.each(['Forbid', 'FORBID', ' forbid '])('matches the policy %j in any letter case (the docs write Forbid)', (policy) => {
    expect(admitRun(aRun('self', { policy }), [aRun('a', { state: 'active' })]).kind).toBe('wait')
  })

  it('says where a queued run stands and why', () => {
    expect(admitRun(aRun('self', { policy: 'forbid' }), [aRun('a', { state: 'active' })])).toEqual({
      kind: 'wait', position: 1,
      message: 'Queued: position 1; 1 run(s) of template nightly active (concurrency forbid, limit 1)',
    })
  })

  it('serves the queue first come, first served, by creation time and then by name when times are equal', () => {
    const active = aRun('running', { state: 'active', created: at(0) })
    const queue = [aRun('zeta', { policy: 'forbid', created: at(1) }), aRun('alpha', { policy: 'forbid', created: at(2) }), aRun('beta', { policy: 'forbid', created: at(2) })]
    const positions = queue.map((self) => {
      const decision = admitRun(self, [active, ...queue.filter((w) => w !== self)])
      return [self.metadata.name, decision.kind === 'wait' ? decision.position : decision.kind]
    })
    expect(positions).toEqual([['zeta', 1], ['alpha', 2], ['beta', 3]])
  })

  it('counts a queued sibling as waiting, not as active', () => {
    const decision = admitRun(aRun('self', { policy: 'allow', maxParallel: 2, created: at(2) }), [
      aRun('a', { state: 'active' }), aRun('b', { state: 'active' }), aRun('c', { state: 'queued', created: at(1) }),
    ])
    expect(decision).toEqual({ kind: 'wait', position: 2, message: 'Queued: position 2; 2 run(s) of template nightly active (concurrency allow, limit 2)' })
  })

  it('lets as many of the oldest waiting runs start as there are free slots', () => {
    const runs = ['a', 'b', 'c', 'd'].map((n, i) => aRun(n, { policy: 'allow', maxParallel: 3, created: at(i) }))
    const kinds = runs.map((self) => admitRun(self, runs.filter((w) => w !== self)))
    expect(kinds).toEqual([{ kind: 'start' }, { kind: 'start' }, { kind: 'start' }, expect.objectContaining({ kind: 'wait', position: 1 })])
  })

  it('skips under forbid with whenBusy skip and says which run is active', () => {
    expect(admitRun(aRun('self', { policy: 'forbid', whenBusy: 'skip' }), [aRun('a', { state: 'active' })])).toEqual({
      kind: 'skip', reason: 'ConcurrencySkipped',
      message: 'Skipped: 1 run(s) of template nightly active (a) (concurrency forbid, limit 1, whenBusy skip)',
    })
  })

  it('replace cancels every active sibling with the resourceVersion it read and says why', () => {
    const a = aRun('a', { state: 'active', created: at(0) })
    const b = aRun('b', { state: 'active', created: at(1) })
    b.metadata.resourceVersion = '77'
    expect(admitRun(aRun('self', { policy: 'Replace', created: at(2) }), [b, a, aRun('c', { state: 'done' })])).toEqual({
      kind: 'replace',
      cancel: [
        { name: 'a', resourceVersion: '100', reason: 'Replaced by run self (concurrency replace)' },
        { name: 'b', resourceVersion: '77', reason: 'Replaced by run self (concurrency replace)' },
      ],
    })
  })

  it('replace lets the newest run win: an older run that arrives late is itself replaced', () => {
    expect(admitRun(aRun('old', { policy: 'replace', created: at(0) }), [aRun('new', { created: at(1) })])).toEqual({
      kind: 'skip', reason: 'ReplacedByConcurrency', message: 'Replaced by run new (concurrency replace)',
    })
  })

  it('starts under an unknown policy and says so', () => {
    expect(admitRun(aRun('self', { policy: 'serialize' }), [])).toEqual({
      kind: 'start', warning: 'Unknown concurrency policy "serialize" (use forbid, replace or allow); the run starts without a limit',
    })
  })

  it('reads allow without maxParallel as no limit and forbid as a limit of 1 (maxParallel ignored)', () => {
    expect(concurrencyRule(aRun('x', { policy: 'allow' }))).toMatchObject({ policy: 'allow', limit: Infinity })
    expect(concurrencyRule(aRun('x', { policy: 'forbid', maxParallel: 5 }))).toMatchObject({ policy: 'forbid', limit: 1 })
    expect(concurrencyRule(aRun('x', { policy: 'forbid', template: null }))).toEqual({ kind: 'none' })
  })

  it.each<[string, Workflow, boolean]>([
    ['a new run under forbid', aRun('x', { policy: 'forbid' }), true],
    ['a queued run under allow with a limit', aRun('x', { policy: 'allow', maxParallel: 2, state: 'queued' }), true],
    ['a new run under replace', aRun('x', { policy: 'replace' }), true],
    ['a run without a template annotation', aRun('x', { policy: 'forbid', template: null }), false],
    ['a run without a policy', aRun('x'), false],
    ['a run under allow without a limit', aRun('x', { policy: 'allow' }), false],
    ['a run under an unknown policy', aRun('x', { policy: 'serialize' }), false],
    ['a run that has started', aRun('x', { policy: 'forbid', state: 'active' }), false],
    ['a run being cancelled', aRun('x', { policy: 'forbid', state: 'cancelling' }), false],
  ])('needsSiblings for %s: %s', (_, wf, expected) => {
    expect(needsSiblings(wf)).toBe(expected)
  })
})

/** Plans, applies the status as the API server would, and checks re-planning on it writes nothing. */
function settle(wf: Workflow, now: string, overrides: FactsOverrides & { siblings?: Workflow[] } = {}): { plan: WorkflowPlan; wf: Workflow } {
  const { siblings, ...rest } = overrides
  const facts = { ...factsFor(wf, rest), ...(siblings ? { siblings } : {}) }
  const plan = changes(planWorkflow(facts, now))
  const next = applyStatus(wf, plan)
  expect(planWorkflow({ ...facts, workflow: next }, now), 're-planning on the plan\'s own result').toBe(UNCHANGED)
  expect(mayNeedWork(next), 'mayNeedWork on the written object').toBe(false)
  return { plan, wf: next }
}

const complete = (wf: Workflow) => wf.status?.conditions?.find((c) => c.type === 'Complete')

describe('planWorkflow under a concurrency policy', () => {
  const busy = [aRun('a', { state: 'active' })]

  it('queues a run: phase Pending, its position and reason, no run id, no Job, announced once', () => {
    const { plan, wf } = settle(aRun('self', { policy: 'forbid', created: at(1) }), T0, { siblings: busy })
    expect(plan.startJobs).toEqual([])
    expect(plan.annotations).toBeNull()
    expect(wf.status).toMatchObject({
      phase: 'Pending', queuePosition: 1,
      message: 'Queued: position 1; 1 run(s) of template nightly active (concurrency forbid, limit 1)',
    })
    expect(wf.status?.runId).toBeUndefined()
    expect(complete(wf)).toMatchObject({ status: 'False', reason: 'Queued' })
    expect(plan.transitions).toEqual([expect.objectContaining({ kind: 'run.queued', reason: 'Queued', type: 'Normal' })])
  })

  it('moves a queued run up without announcing it again', () => {
    const self = aRun('self', { policy: 'forbid', created: at(2) })
    const older = aRun('older', { created: at(1) })
    const first = settle(self, T0, { siblings: [...busy, older] })
    expect(first.wf.status?.queuePosition).toBe(2)

    const { plan, wf } = settle(first.wf, T1, { siblings: [...busy, aRun('older', { created: at(1), state: 'cancelling' })] })
    expect(wf.status?.queuePosition).toBe(1)
    expect(plan.transitions).toEqual([])
    expect(complete(wf)?.lastTransitionTime).toBe(T0)
  })

  it('starts a queued run once the active one has finished, with no trace of the queue', () => {
    const queued = settle(aRun('self', { policy: 'forbid', created: at(1) }), T0, { siblings: busy }).wf
    const { plan, wf } = settle(queued, T1, { siblings: [aRun('a', { state: 'done' })] })
    expect(plan.startJobs.map((s) => s.step)).toEqual(['s1'])
    expect(wf.status).toMatchObject({ phase: 'Running', startTime: T1, runId: runIdFor('uid-self', undefined) })
    expect(wf.status?.queuePosition).toBeUndefined()
    expect(complete(wf)).toMatchObject({ reason: 'StepsInProgress' })
    expect(plan.transitions[0]).toMatchObject({ kind: 'run.started', reason: 'RunStarted' })
  })

  it('ends a run at once under forbid with whenBusy skip', () => {
    const { plan, wf } = settle(aRun('self', { policy: 'forbid', whenBusy: 'skip' }), T0, { siblings: busy })
    expect(plan.startJobs).toEqual([])
    expect(wf.status).toMatchObject({ phase: 'Cancelled', completionTime: T0, runId: runIdFor('uid-self', undefined) })
    expect(complete(wf)).toMatchObject({ status: 'False', reason: 'ConcurrencySkipped' })
    expect(plan.transitions).toEqual([expect.objectContaining({ kind: 'run.finished', reason: 'ConcurrencySkipped', data: expect.objectContaining({ phase: 'Cancelled' }) })])
  })

  it('replace: lists the runs to cancel and starts this one in the same plan', () => {
    const { plan, wf } = settle(aRun('self', { policy: 'replace', created: at(1) }), T0, { siblings: busy })
    expect(plan.cancelRuns).toEqual([{ name: 'a', resourceVersion: '100', reason: 'Replaced by run self (concurrency replace)' }])
    expect(plan.startJobs).toHaveLength(1)
    expect(wf.status?.phase).toBe('Running')
  })

  it('does not hold back a queued run that is cancelled: it ends Cancelled', () => {
    const queued = settle(aRun('self', { policy: 'forbid', created: at(1) }), T0, { siblings: busy }).wf
    const cancelled = { ...queued, metadata: { ...queued.metadata, annotations: { ...queued.metadata.annotations, 'purko.io/cancel': 'true' } } }
    expect(mayNeedWork(cancelled)).toBe(true)
    const { plan, wf } = settle(cancelled, T1, { siblings: busy })
    expect(plan.startJobs).toEqual([])
    expect(wf.status).toMatchObject({ phase: 'Cancelled' })
    expect(wf.status?.queuePosition).toBeUndefined()
  })

  it('re-evaluates a queued run whose spec was edited', () => {
    const queued = settle(aRun('self', { policy: 'forbid', created: at(1) }), T0, { siblings: busy }).wf
    expect(mayNeedWork({ ...queued, metadata: { ...queued.metadata, generation: 2 } })).toBe(true)
  })

  it('never queues a run without a template annotation', () => {
    const { plan } = settle(aRun('self', { policy: 'forbid', template: null }), T0, { siblings: busy })
    expect(plan.startJobs).toHaveLength(1)
  })

  it('starts under an unknown policy with a Warning', () => {
    const { plan } = settle(aRun('self', { policy: 'serialize' }), T0, { siblings: busy })
    expect(plan.startJobs).toHaveLength(1)
    expect(plan.transitions).toContainEqual(expect.objectContaining({ type: 'Warning', reason: 'UnknownConcurrencyPolicy' }))
  })

  it('stops the Jobs of a run in progress when its rerun has to queue', () => {
    const running = settle(aRun('self', { policy: 'forbid', created: at(1) }), T0, { siblings: [] }).wf
    const rerun = { ...running, metadata: { ...running.metadata, annotations: { ...running.metadata.annotations, 'purko.io/rerun': T1 } } }
    const { plan, wf } = settle(rerun, T1, { siblings: busy })
    expect(plan.deleteJobs).toEqual([running.status?.stepStatuses?.[0]?.jobName])
    expect(wf.status).toMatchObject({ phase: 'Pending', queuePosition: 1 })
  })
})

describe('a scheduled Workflow that also runs itself', () => {
  const templateStatus: WorkflowStatus = {
    lastTriggerTime: T0, lastScheduleTime: T0, nextRunTime: T2, activeRuns: 1,
    recentRuns: [{ name: 'report-sched-00000001', phase: 'Running', trigger: 'schedule', startTime: T0 }],
  }

  it('keeps the template status fields when its own run starts', () => {
    const wf = aWorkflow({ status: templateStatus })
    const { wf: next } = settle(wf, T1)
    expect(next.status).toMatchObject({ ...templateStatus, phase: 'Running', startTime: T1 })
  })

  it('keeps them when a rerun restarts it', () => {
    const done = settle(aWorkflow({ status: templateStatus }), T1, { jobsComplete: false }).wf
    const rerun = { ...done, metadata: { ...done.metadata, annotations: { ...done.metadata.annotations, 'purko.io/rerun': T2 } } }
    const { wf: next } = settle(rerun, T2)
    expect(next.status).toMatchObject({ ...templateStatus, phase: 'Running', startTime: T2 })
  })

  it('keeps them when its spec is invalid', () => {
    const wf = aWorkflow({ status: templateStatus, spec: { steps: [aStep('s1', { dependsOn: ['s1'] })] } })
    const { wf: next } = settle(wf, T1)
    expect(next.status).toMatchObject({ ...templateStatus, phase: 'Failed' })
  })
})

describe('verified decisions and cancel records', () => {
  const gated = agentsOf(anAgent({ humanApprovalRequired: true }))
  const record = (verdict: string, extra: Record<string, unknown> = {}) => JSON.stringify({ verdict, user: 'alice@example.com', time: T1, ...extra })
  const annotated = (wf: Workflow, annotations: Record<string, string>): Workflow =>
    ({ ...wf, metadata: { ...wf.metadata, annotations: { ...wf.metadata.annotations, ...annotations } } })
  const waiting = () => settle(aWorkflow({ spec: { steps: aChain(2) } }), T0, { agents: gated }).wf

  it.each<[string, Record<string, string>, string, string]>([
    ['a record with a reason', { 'kinetic.dev/decision-s1': record('denied', { reason: 'too risky' }) }, 'Denied by alice@example.com: too risky', 'Step s1 denied by alice@example.com: too risky'],
    ['a record without a reason', { 'kinetic.dev/decision-s1': record('denied') }, 'Denied by alice@example.com', 'Step s1 denied by alice@example.com'],
    ['a record that is not JSON', { 'kinetic.dev/decision-s1': '{verdict: denied' }, 'Denied by user', 'Step s1 denied'],
    ['a record without a user', { 'kinetic.dev/decision-s1': JSON.stringify({ verdict: 'denied', time: T1 }) }, 'Denied by user', 'Step s1 denied'],
    ['a record of the other verdict', { 'kinetic.dev/decision-s1': record('approved') }, 'Denied by user', 'Step s1 denied'],
    ['no record (purko\'s annotation alone)', {}, 'Denied by user', 'Step s1 denied'],
  ])('a denial with %s', (_, extra, error, message) => {
    const { plan, wf } = settle(annotated(waiting(), { 'purko.io/deny-s1': 'true', ...extra }), T1, { agents: gated })
    expect(wf.status?.stepStatuses?.find((s) => s.name === 's1')).toMatchObject({ phase: 'Failed', error })
    expect(plan.transitions).toContainEqual(expect.objectContaining({ reason: 'StepDenied', message }))
  })

  it.each<[string, Record<string, string>, string]>([
    ['a record', { 'kinetic.dev/decision-s1': record('approved', { reason: 'checked the diff' }) }, 'Step s1 approved by alice@example.com: checked the diff'],
    ['no record', {}, 'Step s1 approved'],
    ['a record that is not JSON', { 'kinetic.dev/decision-s1': 'yes' }, 'Step s1 approved'],
  ])('an approval with %s is announced once as the step starts', (_, extra, message) => {
    const { plan } = settle(annotated(waiting(), { 'purko.io/approve-s1': 'true', ...extra }), T1, { agents: gated })
    expect(plan.startJobs.map((s) => s.step)).toEqual(['s1'])
    expect(plan.transitions).toContainEqual(expect.objectContaining({ kind: 'step.approved', reason: 'StepApproved', message }))
  })

  it.each<[string, Record<string, string>, string, string]>([
    ['purko\'s annotation alone', {}, 'UserCancelled', 'Workflow cancelled via purko.io/cancel annotation'],
    ['who asked, with a reason', { 'kinetic.dev/requested-by': JSON.stringify({ action: 'cancel', user: 'bob', time: T1, reason: 'wrong input' }) }, 'UserCancelled', 'Cancelled by bob: wrong input'],
    ['who asked, without a reason', { 'kinetic.dev/requested-by': JSON.stringify({ action: 'cancel', user: 'bob', time: T1 }) }, 'UserCancelled', 'Cancelled by bob'],
    ['a record left by a rerun, not a cancel', { 'kinetic.dev/requested-by': JSON.stringify({ action: 'rerun', user: 'bob', time: T1 }) }, 'UserCancelled', 'Workflow cancelled via purko.io/cancel annotation'],
    ['a requested-by that is not JSON', { 'kinetic.dev/requested-by': 'bob' }, 'UserCancelled', 'Workflow cancelled via purko.io/cancel annotation'],
    ['the controller\'s own reason', { 'kinetic.dev/cancel-reason': 'Replaced by run r2 (concurrency replace)' }, 'ReplacedByConcurrency', 'Replaced by run r2 (concurrency replace)'],
  ])('a cancel with %s', (_, extra, reason, message) => {
    const running = settle(aWorkflow(), T0).wf
    const { wf } = settle(annotated(running, { 'purko.io/cancel': 'true', ...extra }), T1)
    expect(wf.status).toMatchObject({ phase: 'Cancelled', message })
    expect(complete(wf)).toMatchObject({ reason, message })
  })
})
