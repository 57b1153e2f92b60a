import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { stepJobName } from '../../shared/workflow/plan/job-builder.js'
import { resultFromLog, MAX_OUTPUT_BYTES, type JobFact } from '../../shared/workflow/plan/job-facts.js'
import { runIdFor } from '../../shared/workflow/plan/run-id.js'
import { decodeStepStates } from '../../shared/workflow/plan/step-states.js'
import { isTerminalPhase, mayNeedWork } from '../../shared/workflow/plan/run-status.js'
import { agentsThatMayStart, jobsNeedingResults } from '../../shared/workflow/plan/plan-inputs.js'
import { planWorkflow } from '../../shared/workflow/plan/plan-workflow.js'
import { completionPhase, workflowTimeoutSeconds } from '../../shared/workflow/plan/run-endings.js'
import { MAX_PARALLELISM } from '../../shared/workflow/plan/step-scheduling.js'
import { UNCHANGED } from '../../shared/core/plan.js'
import type { WorkflowPlan } from '../../shared/workflow/plan/types.js'
import type { Agent } from '../../shared/schemas/agent.js'
import type { StepStatus, Workflow, WorkflowSpec, WorkflowStep } from '../../shared/schemas/workflow.js'
import {
  aChain, agentsOf, aJobFact, anAgent, applyStatus, aStep, aWorkflow, changes, emptyPlan, failedResult, factsFor, okResult, runIdOf,
  WF_UID, type FactsOverrides, type JobFactOverrides,
} from '../fixtures/workflows.js'
import { propertyRuns } from '../support/property-runs.js'

const T0 = '2026-01-01T00:00:00.000Z'
const T1 = '2026-01-01T00:01:00.000Z'
const T2 = '2026-01-01T00:02:00.000Z'
const T3 = '2026-01-01T00:03:00.000Z'
const T4 = '2026-01-01T00:04:00.000Z'
const T5 = '2026-01-01T00:05:00.000Z'

/** `seconds` after T0, for scenarios that walk through backoffs and deadlines. */
const at = (seconds: number) => new Date(Date.parse(T0) + seconds * 1000).toISOString()

interface Planned {
  plan: WorkflowPlan
  wf: Workflow
  outputs: Map<string, string>
}

/**
 * Plans once and checks the two properties every plan must have: re-planning on the written
 * result (same facts, outputs as stored) writes nothing, and the written object needs no event.
 */
function planAndSettle(wf: Workflow, now: string, overrides: FactsOverrides = {}): Planned {
  const facts = factsFor(wf, overrides)
  const planned = planWorkflow(facts, now)
  const plan = planned === UNCHANGED ? emptyPlan() : planned
  const next = applyStatus(wf, plan)
  const outputs = new Map(facts.outputs)
  for (const write of plan.outputWrites) outputs.set(write.step, write.json)
  // A full Job list taken after the writes shows the Jobs the plan created and not those it deleted.
  const jobs = facts.jobsComplete
    ? [
      ...facts.jobs.filter((j) => !plan.deleteJobs.includes(j.name)),
      ...plan.startJobs.map((s) => aJobFact({ workflow: next, step: s.step, attempt: s.attempt, name: s.jobName, state: 'Active' })),
    ]
    : facts.jobs
  expect(planWorkflow({ ...facts, workflow: next, outputs, jobs }, now), 're-planning on the plan\'s own result').toBe(UNCHANGED)
  expect(mayNeedWork(next), 'mayNeedWork on the written object').toBe(false)
  return { plan, wf: next, outputs }
}

/** Same as planAndSettle, fed one Job fact of `wf`'s current run. */
function finish(wf: Workflow, now: string, job: JobFactOverrides, overrides: FactsOverrides = {}): Planned {
  return planAndSettle(wf, now, { ...overrides, jobs: [aJobFact({ workflow: wf, ...job })] })
}

const withSpec = (spec: Partial<WorkflowSpec>, annotations?: Record<string, string>) =>
  aWorkflow({ spec, ...(annotations ? { annotations } : {}) })
const annotate = (wf: Workflow, annotations: Record<string, string>): Workflow =>
  ({ ...wf, metadata: { ...wf.metadata, annotations: { ...wf.metadata.annotations, ...annotations } } })
const jobOf = (step: string, attempt = 0, wf: Workflow = aWorkflow()) => stepJobName('wf', step, runIdOf(wf), attempt)
const stepOf = (wf: Workflow, name: string): StepStatus | undefined => wf.status?.stepStatuses?.find((s) => s.name === name)
const phasesOf = (wf: Workflow) => Object.fromEntries([...decodeStepStates(wf)].map(([name, s]) => [name, s.phase ?? '-']))
const started = (plan: WorkflowPlan) => plan.startJobs.map((s) => s.step)
const complete = (wf: Workflow) => wf.status?.conditions?.find((c) => c.type === 'Complete')
const specValid = (wf: Workflow) => wf.status?.conditions?.find((c) => c.type === 'SpecValid')

const diamond: WorkflowStep[] = [
  aStep('a'), aStep('b', { dependsOn: ['a'] }), aStep('c', { dependsOn: ['a'] }), aStep('d', { dependsOn: ['b', 'c'] }),
]
const independent = (n: number) => Array.from({ length: n }, (_, i) => aStep(`s${i + 1}`))

describe('starting a run', () => {
  it('records the run id in status and in the purko.io/run-id annotation and enters Running', () => {
    const { plan, wf } = planAndSettle(aWorkflow(), T0)
    const runId = runIdOf()
    expect(plan.runId).toBe(runId)
    expect(plan.annotations).toEqual({ 'purko.io/run-id': runId })
    expect(wf.status).toMatchObject({
      runId, phase: 'Running', startTime: T0, observedGeneration: 1, totalSteps: 1, completedSteps: 0, failedSteps: 0,
    })
    expect(specValid(wf)).toMatchObject({ status: 'True' })
    expect(plan.transitions[0]).toMatchObject({ kind: 'run.started', reason: 'RunStarted' })
  })

  it('leaves the run-id annotation alone when it already holds the run id', () => {
    const { plan } = planAndSettle(aWorkflow({ annotations: { 'purko.io/run-id': runIdOf() } }), T0)
    expect(plan.annotations).toBeNull()
    expect(plan.startJobs).toHaveLength(1)
  })

  it('starts the first step as attempt 0 with a Job named after workflow, step and run', () => {
    const { plan, wf } = planAndSettle(aWorkflow(), T0)
    expect(plan.startJobs).toEqual([{ step: 's1', attempt: 0, jobName: jobOf('s1'), agentKey: 'ai-agents/a1' }])
    expect(stepOf(wf, 's1')).toEqual({ name: 's1', phase: 'Running', jobName: jobOf('s1'), startTime: T0 })
  })

  it.each<[string, WorkflowStep[], number | undefined, string[]]>([
    ['only the root of a chain', aChain(3), 3, ['s1']],
    ['only the root of a diamond', diamond, 4, ['a']],
    ['independent steps up to the parallelism cap', independent(4), 2, ['s1', 's2']],
    ['one step at a time when parallelism is not set', independent(3), undefined, ['s1']],
    ['every step when the cap exceeds their number', independent(3), 10, ['s1', 's2', 's3']],
    ['a dependency declared after its dependent, before it', [aStep('x', { dependsOn: ['y'] }), aStep('y'), aStep('z')], 2, ['y', 'z']],
  ])('starts %s', (_, steps, parallelism, expected) => {
    const { plan } = planAndSettle(withSpec({ steps, parallelism: parallelism as number }), T0)
    expect(started(plan)).toEqual(expected)
  })

  it('completes type-only steps without a Job and runs their dependents', () => {
    const steps = [aStep('notify', { agentRef: undefined, type: 'notification' }), aStep('s2', { dependsOn: ['notify'] })]
    const { plan, wf } = planAndSettle(withSpec({ steps }), T0)
    expect(started(plan)).toEqual(['s2'])
    expect(phasesOf(wf)).toEqual({ notify: 'Succeeded', s2: 'Running' })
    expect(plan.outputWrites).toEqual([])
  })

  it('does not count type-only steps against the parallelism cap', () => {
    const steps = [aStep('t1', { agentRef: undefined, type: 'approval' }), aStep('t2', { agentRef: undefined, type: 'notification' }), aStep('s3')]
    const { plan, wf } = planAndSettle(withSpec({ steps, parallelism: 1 }), T0)
    expect(started(plan)).toEqual(['s3'])
    expect(wf.status?.completedSteps).toBe(2)
  })

  it('finishes a run made only of type-only steps as Succeeded without any Job', () => {
    const steps = [aStep('t1', { agentRef: undefined, type: 'notification' })]
    const { plan, wf } = planAndSettle(withSpec({ steps }), T0)
    expect(plan.startJobs).toEqual([])
    expect(wf.status).toMatchObject({ phase: 'Succeeded', completionTime: T0, completedSteps: 1 })
    expect(complete(wf)).toMatchObject({ status: 'True', reason: 'AllStepsCompleted' })
  })

  it.each<[string, string, Record<string, string> | undefined]>([
    ['false', 'false', undefined],
    ['a parameter comparison that is false', "parameters.env == 'prod'", { env: 'dev' }],
    ['a legacy comparison that is false', 'parameters.env == prod', { env: 'dev' }],
  ])('marks a step whose condition is %s Skipped and still runs its dependents', (_, condition, parameters) => {
    const steps = [aStep('s1', { condition }), aStep('s2', { dependsOn: ['s1'] })]
    const { plan, wf } = planAndSettle(withSpec({ steps, ...(parameters ? { parameters } : {}) }), T0)
    expect(phasesOf(wf)).toEqual({ s1: 'Skipped', s2: 'Running' })
    expect(stepOf(wf, 's1')).toMatchObject({ phase: 'Skipped', completionTime: T0 })
    expect(stepOf(wf, 's1')?.error).toBeUndefined()
    expect(started(plan)).toEqual(['s2'])
    expect(plan.transitions).toContainEqual(expect.objectContaining({ kind: 'step.finished', reason: 'StepSkipped', data: expect.objectContaining({ step: 's1', phase: 'Skipped' }) }))
  })

  it('runs a step whose condition is true', () => {
    const { plan } = planAndSettle(withSpec({ steps: [aStep('s1', { condition: "parameters.env == 'prod'" })], parameters: { env: 'prod' } }), T0)
    expect(started(plan)).toEqual(['s1'])
  })

  it('skips a step whose condition cannot be evaluated, with the error text, and runs its dependents', () => {
    const steps = [aStep('s1', { condition: 'not-a-condition' }), aStep('s2', { dependsOn: ['s1'] })]
    const { plan, wf } = planAndSettle(withSpec({ steps }), T0)
    expect(stepOf(wf, 's1')?.phase).toBe('Skipped')
    expect(stepOf(wf, 's1')?.error).toMatch(/^Condition error: .*not-a-condition/)
    expect(plan.transitions).toContainEqual(expect.objectContaining({ reason: 'ConditionError', type: 'Warning', data: expect.objectContaining({ step: 's1' }) }))
    expect(started(plan)).toEqual(['s2'])
  })

  it('skips a step whose condition is over the evaluation cost limit on a webhook parameter, with the reason, instead of stalling', () => {
    const steps = [aStep('s1', { condition: "parameters.csv.split(',').exists(a, parameters.csv.split(',').exists(b, a + b == 'x'))" })]
    const { plan, wf } = planAndSettle(withSpec({ steps, parameters: { csv: 'a,'.repeat(4000) } }), T0)
    expect(stepOf(wf, 's1')?.phase).toBe('Skipped')
    expect(stepOf(wf, 's1')?.error).toMatch(/^Condition error: cannot evaluate condition .*: evaluation cost limit exceeded: estimated cost \d+ on these values, limit 1000000$/)
    expect(plan.transitions).toContainEqual(expect.objectContaining({ reason: 'ConditionCostLimitExceeded', type: 'Warning', data: expect.objectContaining({ step: 's1' }) }))
  })

  it('decides conditions on earlier outputs, including purko\'s >= and <= forms', () => {
    const steps = [
      aStep('s1'),
      aStep('s2', { dependsOn: ['s1'], condition: 'steps.s1.output.count >= 5' }),
      aStep('s3', { dependsOn: ['s1'], condition: 'steps.s1.output.count >= 6' }),
      aStep('s4', { dependsOn: ['s3'], condition: 'steps.s1.output.count <= 5' }),
    ]
    const first = planAndSettle(withSpec({ steps, parallelism: 3 }), T0)
    const { plan, wf } = finish(first.wf, T1, { step: 's1', result: okResult({ count: 5 }) })
    expect(phasesOf(wf)).toEqual({ s1: 'Succeeded', s2: 'Running', s3: 'Skipped', s4: 'Running' })
    expect(started(plan)).toEqual(['s2', 's4'])
  })
})

describe('advancing a run', () => {
  it('records a succeeded step, writes its output and starts its dependents', () => {
    const first = planAndSettle(withSpec({ steps: aChain(3) }), T0)
    const { plan, wf } = finish(first.wf, T1, { step: 's1', result: okResult({ answer: 42 }) })
    expect(stepOf(wf, 's1')).toMatchObject({ phase: 'Succeeded', completionTime: T1, startTime: T0 })
    expect(plan.outputWrites).toEqual([{ step: 's1', json: '{"answer":42}' }])
    expect(plan.startJobs).toEqual([{ step: 's2', attempt: 0, jobName: jobOf('s2'), agentKey: 'ai-agents/a1' }])
    expect(wf.status).toMatchObject({ phase: 'Running', completedSteps: 1 })
    expect(complete(wf)).toMatchObject({ status: 'False', reason: 'StepsInProgress', message: '1/3 steps completed, 1 running' })
  })

  it('runs a chain to Succeeded, one Job per step', () => {
    let run = planAndSettle(withSpec({ steps: aChain(3) }), T0)
    const jobs = [...run.plan.startJobs.map((s) => s.jobName)]
    for (const [i, now] of [T1, T2, T3].entries()) {
      run = finish(run.wf, now, { step: `s${i + 1}` })
      jobs.push(...run.plan.startJobs.map((s) => s.jobName))
    }
    expect(jobs).toEqual([jobOf('s1'), jobOf('s2'), jobOf('s3')])
    expect(run.wf.status).toMatchObject({ phase: 'Succeeded', completionTime: T3, completedSteps: 3, failedSteps: 0 })
    expect(complete(run.wf)).toMatchObject({ status: 'True', reason: 'AllStepsCompleted', message: 'All workflow steps completed' })
    expect(run.plan.transitions.at(-1)).toMatchObject({ kind: 'run.finished', data: { phase: 'Succeeded' } })
  })

  it.each<[string, JobFactOverrides]>([
    ['a still-running Job', { state: 'Active' }],
    ['a finished Job whose log was not read', { state: 'Succeeded', result: undefined, name: undefined }],
  ])('changes nothing for %s', (_, job) => {
    const first = planAndSettle(aWorkflow(), T0)
    const fact = aJobFact({ workflow: first.wf, ...job })
    if (job.result === undefined && job.state === 'Succeeded') delete fact.result
    expect(planWorkflow(factsFor(first.wf, { jobs: [fact] }), T1)).toBe(UNCHANGED)
  })

  it('says on a resync why a running step\'s pod has not started, once as a Warning, and drops it when the pod starts', () => {
    const first = planAndSettle(aWorkflow(), T0)
    const waiting = 'pod wf-x container step: ImagePullBackOff: Back-off pulling image "agent:9"'
    const stuck = aJobFact({ workflow: first.wf, state: 'Active', podWaiting: waiting })
    const noticed = changes(planWorkflow(factsFor(first.wf, { jobs: [stuck], jobsComplete: true }), T1))
    const wf = applyStatus(first.wf, noticed)
    expect(stepOf(wf, 's1')).toMatchObject({ phase: 'Running', message: `Pod not started: ${waiting}` })
    expect(noticed.transitions).toEqual([{
      kind: 'step.waiting', type: 'Warning', reason: 'PodNotStarting', message: `Step s1: ${waiting}`, record: true,
      fieldPath: 'spec.steps{s1}', data: { runId: runIdOf(first.wf), step: 's1', phase: 'Running' },
    }])
    // The next resync that sees the same is no change; a Job event says nothing of pods.
    expect(planWorkflow(factsFor(wf, { jobs: [stuck], jobsComplete: true }), T2)).toBe(UNCHANGED)
    expect(planWorkflow(factsFor(wf, { jobs: [aJobFact({ workflow: first.wf, state: 'Active' })], jobsComplete: false }), T2)).toBe(UNCHANGED)
    // Started: the words go, with no second Warning.
    const started = changes(planWorkflow(factsFor(wf, { jobs: [aJobFact({ workflow: first.wf, state: 'Active', readyPods: 1 })], jobsComplete: true }), T2))
    expect(stepOf(applyStatus(wf, started), 's1')?.message).toBeUndefined()
    expect(started.transitions).toEqual([])
  })

  it('keeps the note a step started with beside why its pod waits, and clears the pod part when the attempt ends', () => {
    const first = planAndSettle(aWorkflow(), T0)
    const noted = { ...first.wf, status: { ...first.wf.status, stepStatuses: first.wf.status!.stepStatuses!.map((s) => ({ ...s, message: 'LLMProvider fallback in use' })) } }
    const stuck = aJobFact({ workflow: first.wf, state: 'Active', podWaiting: 'pod p container step: CreateContainerConfigError: secret "k" not found' })
    const wf = applyStatus(noted, planWorkflow(factsFor(noted, { jobs: [stuck], jobsComplete: true }), T1))
    expect(stepOf(wf, 's1')?.message).toBe('LLMProvider fallback in use; Pod not started: pod p container step: CreateContainerConfigError: secret "k" not found')
    const done = finish(wf, T2, { step: 's1' })
    expect(stepOf(done.wf, 's1')).toMatchObject({ phase: 'Succeeded', message: 'LLMProvider fallback in use' })
  })

  it('changes nothing when the same finished Job is delivered again', () => {
    const first = planAndSettle(withSpec({ steps: aChain(2) }), T0)
    const second = finish(first.wf, T1, { step: 's1' })
    expect(planWorkflow(factsFor(second.wf, { jobs: [aJobFact({ workflow: first.wf, step: 's1' })] }), T2)).toBe(UNCHANGED)
  })

  it('keeps parallelism a hard cap: one finished Job frees exactly one slot', () => {
    const first = planAndSettle(withSpec({ steps: independent(5), parallelism: 2 }), T0)
    expect(started(first.plan)).toEqual(['s1', 's2'])
    const { plan, wf } = finish(first.wf, T1, { step: 's1' })
    expect(started(plan)).toEqual(['s3'])
    expect(phasesOf(wf)).toEqual({ s1: 'Succeeded', s2: 'Running', s3: 'Running', s4: '-', s5: '-' })
  })

  it.each<[string, Record<string, unknown>, number[]]>([
    ['5s doubling by default', {}, [5, 10, 20]],
    ['backoffSeconds doubling', { backoffSeconds: 7 }, [7, 14, 28]],
    ['5s each time with backoff: fixed', { backoff: 'fixed' }, [5, 5, 5]],
    ['a duration in backoff, doubling', { backoff: '10s' }, [10, 20, 40]],
    ['at most 300s', { backoffSeconds: 100, maxRetries: 4 }, [100, 200, 300, 300]],
  ])('retries a failed step after %s, starting each retry Job only when its time has come', (_, policy, delays) => {
    const retryPolicy = { maxRetries: delays.length, ...policy }
    let run = planAndSettle(withSpec({ steps: [aStep('s1', { retryPolicy })] }), T0)
    let now = 0
    for (const [retry, delay] of delays.entries()) {
      run = finish(run.wf, at(now), { step: 's1', attempt: retry, state: 'Failed', result: failedResult('exit code 1') })
      expect(stepOf(run.wf, 's1')).toMatchObject({ phase: 'Pending', retryCount: retry + 1, nextAttemptAt: at(now + delay), error: 'exit code 1' })
      expect(run.plan.startJobs).toEqual([])
      expect(run.plan.transitions).toContainEqual(expect.objectContaining({ reason: 'StepRetrying', data: expect.objectContaining({ step: 's1' }) }))
      if (delay > 0) expect(planWorkflow(factsFor(run.wf), at(now + delay - 1))).toBe(UNCHANGED)
      now += delay
      run = planAndSettle(run.wf, at(now))
      expect(run.plan.startJobs).toEqual([{ step: 's1', attempt: retry + 1, jobName: jobOf('s1', retry + 1), agentKey: 'ai-agents/a1' }])
      expect(jobOf('s1', retry + 1)).toBe(`${jobOf('s1')}-r${retry + 1}`)
    }
    run = finish(run.wf, at(now + 1), { step: 's1', attempt: delays.length, state: 'Failed', result: failedResult('still broken') })
    expect(stepOf(run.wf, 's1')).toMatchObject({ phase: 'Failed', retryCount: delays.length, error: 'still broken' })
    expect(run.wf.status?.phase).toBe('Failed')
  })

  it('keeps a step backing off before its retry in its parallelism slot', () => {
    const steps = [aStep('s1', { retryPolicy: { maxRetries: 1 } }), aStep('s2'), aStep('s3')]
    let run = planAndSettle(withSpec({ steps, parallelism: 2 }), T0)
    run = finish(run.wf, at(1), { step: 's1', state: 'Failed' })
    expect(run.plan.startJobs).toEqual([])
    expect(phasesOf(run.wf)).toEqual({ s1: 'Pending', s2: 'Running', s3: '-' })
    expect(complete(run.wf)?.message).toBe('0/3 steps completed, 1 running')
    run = planAndSettle(run.wf, at(6))
    expect(run.plan.startJobs.map((s) => s.jobName)).toEqual([jobOf('s1', 1)])
  })

  it.each<[string[], ReturnType<typeof failedResult>, string]>([
    [['timeout'], failedResult('Step exceeded its timeout of 60s (DeadlineExceeded)', 'timeout'), 'Pending'],
    [['timeout'], failedResult('exit code 1'), 'Failed'],
    [['error'], failedResult('exit code 1'), 'Pending'],
    [['error'], failedResult('Step exceeded its timeout of 60s (DeadlineExceeded)', 'timeout'), 'Failed'],
    [['rate limit'], failedResult('HTTP 429: Rate Limit exceeded'), 'Pending'],
    [['rate limit'], failedResult('connection refused'), 'Failed'],
  ])('with retryOn %j a failure %j leaves the step %s', (retryOn, result, phase) => {
    const first = planAndSettle(withSpec({ steps: [aStep('s1', { retryPolicy: { maxRetries: 3, retryOn } })] }), T0)
    const { wf } = finish(first.wf, T1, { step: 's1', state: 'Failed', result })
    expect(stepOf(wf, 's1')?.phase).toBe(phase)
  })

  it('fails a step without a retry policy on its first failure', () => {
    const first = planAndSettle(aWorkflow(), T0)
    const { wf, plan } = finish(first.wf, T1, { step: 's1', state: 'Failed', result: failedResult('l4\nl5') })
    expect(stepOf(wf, 's1')).toMatchObject({ phase: 'Failed', error: 'l4\nl5', completionTime: T1 })
    expect(plan.transitions).toContainEqual(expect.objectContaining({ reason: 'StepFailed', data: expect.objectContaining({ step: 's1', phase: 'Failed' }) }))
  })
})

describe('failure strategies', () => {
  it('failFast deletes running Jobs, skips everything unfinished and fails the run', () => {
    const steps = [aStep('s1'), aStep('s2'), aStep('s3'), aStep('s4', { dependsOn: ['s1'] })]
    const first = planAndSettle(withSpec({ steps, parallelism: 2 }), T0)
    const { plan, wf } = finish(first.wf, T1, { step: 's1', state: 'Failed' })
    expect(plan.deleteJobs).toEqual([jobOf('s2')])
    expect(plan.startJobs).toEqual([])
    expect(phasesOf(wf)).toEqual({ s1: 'Failed', s2: 'Skipped', s3: 'Skipped', s4: 'Skipped' })
    expect(wf.status).toMatchObject({ phase: 'Failed', completionTime: T1, failedSteps: 1, message: 'A step failed with failFast strategy' })
    expect(complete(wf)).toMatchObject({ status: 'False', reason: 'StepFailed' })
    expect(plan.transitions.at(-1)).toMatchObject({ kind: 'run.finished', reason: 'StepFailed', data: { phase: 'Failed' } })
  })

  it('continueOnError runs the dependents of a failed step and ends CompletedWithErrors', () => {
    let run = planAndSettle(withSpec({ steps: aChain(3), failureStrategy: 'continueOnError' }), T0)
    run = finish(run.wf, T1, { step: 's1', state: 'Failed' })
    expect(started(run.plan)).toEqual(['s2'])
    expect(run.wf.status?.phase).toBe('Running')
    run = finish(run.wf, T2, { step: 's2' })
    run = finish(run.wf, T3, { step: 's3' })
    expect(run.wf.status).toMatchObject({
      phase: 'CompletedWithErrors', completionTime: T3, completedSteps: 2, failedSteps: 1,
      message: '2/3 steps succeeded, 1 failed (continueOnError)',
    })
    expect(complete(run.wf)).toMatchObject({ status: 'False', reason: 'CompletedWithErrors' })
  })

  it('continueOnError ends Failed when every step failed', () => {
    const first = planAndSettle(withSpec({ failureStrategy: 'continueOnError' }), T0)
    const { wf } = finish(first.wf, T1, { step: 's1', state: 'Failed' })
    expect(wf.status).toMatchObject({ phase: 'Failed', message: '0/1 steps succeeded, 1 failed' })
    expect(complete(wf)).toMatchObject({ reason: 'AllStepsFailed' })
  })

  it('stop lets running steps finish, starts nothing new, then fails the run', () => {
    const steps = [aStep('s1'), aStep('s2'), aStep('s3')]
    let run = planAndSettle(withSpec({ steps, parallelism: 2, failureStrategy: 'stop' }), T0)
    run = finish(run.wf, T1, { step: 's1', state: 'Failed' })
    expect(run.plan.deleteJobs).toEqual([])
    expect(run.plan.startJobs).toEqual([])
    expect(phasesOf(run.wf)).toEqual({ s1: 'Failed', s2: 'Running', s3: '-' })
    expect(run.wf.status?.phase).toBe('Running')
    expect(run.wf.status?.completionTime).toBeUndefined()

    run = finish(run.wf, T2, { step: 's2', result: okResult({ done: true }) })
    expect(run.plan.outputWrites).toEqual([{ step: 's2', json: '{"done":true}' }])
    expect(run.plan.startJobs).toEqual([])
    expect(phasesOf(run.wf)).toEqual({ s1: 'Failed', s2: 'Succeeded', s3: 'Skipped' })
    expect(run.wf.status).toMatchObject({ phase: 'Failed', completionTime: T2, message: 'A step failed with stop strategy' })
    expect(complete(run.wf)).toMatchObject({ reason: 'StepFailed' })
  })

  it('stop with nothing else running fails the run at once', () => {
    const first = planAndSettle(withSpec({ steps: aChain(2), failureStrategy: 'stop' }), T0)
    const { wf, plan } = finish(first.wf, T1, { step: 's1', state: 'Failed' })
    expect(plan.startJobs).toEqual([])
    expect(phasesOf(wf)).toEqual({ s1: 'Failed', s2: 'Skipped' })
    expect(wf.status).toMatchObject({ phase: 'Failed', completionTime: T1 })
  })

  it('rollback compensates succeeded steps one at a time in reverse dependency order', () => {
    // Declared out of dependency order so reverse spec order and reverse dependency order differ.
    const steps = [
      aStep('b', { dependsOn: ['a'] }), aStep('a'),
      aStep('t', { agentRef: undefined, type: 'notification', dependsOn: ['b'] }), aStep('c', { dependsOn: ['t'] }),
    ]
    let run = planAndSettle(withSpec({ steps, failureStrategy: 'rollback' }), T0)
    run = finish(run.wf, T1, { step: 'a' })
    run = finish(run.wf, T2, { step: 'b' })
    expect(started(run.plan)).toEqual(['c'])
    run = finish(run.wf, T3, { step: 'c', state: 'Failed' })

    const rb = (step: string) => stepJobName('wf', step, `${runIdOf()}-rb`, 0)
    expect(run.plan.startJobs).toEqual([{ step: 'b', attempt: 'rollback', jobName: rb('b'), agentKey: 'ai-agents/a1' }])
    expect(phasesOf(run.wf)).toEqual({ a: 'Succeeded', b: 'RollingBack', t: 'RolledBack', c: 'Failed' })
    expect(stepOf(run.wf, 'b')?.compensationJobName).toBe(rb('b'))
    expect(run.wf.status?.phase).toBe('RollingBack')
    expect(complete(run.wf)).toMatchObject({ reason: 'RollbackInProgress', message: 'Rolling back step b' })

    run = finish(run.wf, T4, { step: 'b', attempt: 'rollback' })
    expect(run.plan.startJobs).toEqual([{ step: 'a', attempt: 'rollback', jobName: rb('a'), agentKey: 'ai-agents/a1' }])
    expect(phasesOf(run.wf)).toMatchObject({ a: 'RollingBack', b: 'RolledBack' })

    run = finish(run.wf, T5, { step: 'a', attempt: 'rollback' })
    expect(run.plan.startJobs).toEqual([])
    expect(phasesOf(run.wf)).toEqual({ a: 'RolledBack', b: 'RolledBack', t: 'RolledBack', c: 'Failed' })
    expect(run.wf.status).toMatchObject({ phase: 'Failed', completionTime: T5, message: 'Rolled back 3 steps: b, a, t' })
    expect(complete(run.wf)).toMatchObject({ reason: 'RolledBack' })
  })

  it('rollback deletes running Jobs and marks those steps Skipped', () => {
    const steps = [aStep('s1'), aStep('s2'), aStep('s3', { dependsOn: ['s1'] })]
    let run = planAndSettle(withSpec({ steps, parallelism: 2, failureStrategy: 'rollback' }), T0)
    run = finish(run.wf, T1, { step: 's1' })
    expect(started(run.plan)).toEqual(['s3'])
    run = finish(run.wf, T2, { step: 's3', state: 'Failed' })
    expect(run.plan.deleteJobs).toEqual([jobOf('s2')])
    expect(started(run.plan)).toEqual(['s1'])
    expect(phasesOf(run.wf)).toEqual({ s1: 'RollingBack', s2: 'Skipped', s3: 'Failed' })
  })

  it('rollback records a failed compensation and carries on', () => {
    let run = planAndSettle(withSpec({ steps: aChain(3), failureStrategy: 'rollback' }), T0)
    run = finish(run.wf, T1, { step: 's1' })
    run = finish(run.wf, T2, { step: 's2' })
    run = finish(run.wf, T3, { step: 's3', state: 'Failed' })
    run = finish(run.wf, T4, { step: 's2', attempt: 'rollback', state: 'Failed', result: failedResult('undo failed') })
    expect(stepOf(run.wf, 's2')).toMatchObject({ phase: 'RolledBack', error: 'Compensation failed: undo failed' })
    expect(started(run.plan)).toEqual(['s1'])
  })

  it('rollback waits for a missing Agent instead of starting a compensation Job nobody can build', () => {
    let run = planAndSettle(withSpec({ steps: aChain(2), failureStrategy: 'rollback' }), T0)
    run = finish(run.wf, T1, { step: 's1' })
    run = finish(run.wf, T2, { step: 's2', state: 'Failed' }, { agents: new Map() })
    expect(run.plan.startJobs).toEqual([])
    expect(run.wf.status?.phase).toBe('RollingBack')
    expect(complete(run.wf)).toMatchObject({ reason: 'RollbackInProgress', message: 'Agent "a1" not found to roll back step "s1"' })
    run = planAndSettle(run.wf, T3)
    expect(run.plan.startJobs).toEqual([expect.objectContaining({ step: 's1', attempt: 'rollback' })])
  })

  it('rollback moves on when a compensation Job disappeared and the full Job list is known', () => {
    let run = planAndSettle(withSpec({ steps: aChain(3), failureStrategy: 'rollback' }), T0)
    run = finish(run.wf, T1, { step: 's1' })
    run = finish(run.wf, T2, { step: 's2' })
    run = finish(run.wf, T3, { step: 's3', state: 'Failed' })
    expect(started(run.plan)).toEqual(['s2'])
    run = planAndSettle(run.wf, T4, { jobs: [], jobsComplete: true })
    const rb = stepJobName('wf', 's2', `${runIdOf()}-rb`, 0)
    expect(stepOf(run.wf, 's2')).toMatchObject({ phase: 'RolledBack', error: `Compensation failed: Job ${rb} disappeared before it finished` })
    expect(started(run.plan)).toEqual(['s1'])
  })

  it('rollback with nothing to compensate fails the run at once', () => {
    const first = planAndSettle(withSpec({ failureStrategy: 'rollback' }), T0)
    const { wf, plan } = finish(first.wf, T1, { step: 's1', state: 'Failed' })
    expect(plan.startJobs).toEqual([])
    expect(wf.status).toMatchObject({ phase: 'Failed', completionTime: T1 })
    expect(complete(wf)).toMatchObject({ reason: 'RolledBack' })
  })
})

describe('human approval', () => {
  const gated = agentsOf(anAgent({ humanApprovalRequired: true }), anAgent({ name: 'free' }))
  const waiting = 'Waiting for human approval (set annotation purko.io/approve-s1=true)'

  it('keeps a step of an agent that requires approval Pending with purko\'s message', () => {
    const { plan, wf } = planAndSettle(aWorkflow(), T0, { agents: gated })
    expect(plan.startJobs).toEqual([])
    expect(stepOf(wf, 's1')).toMatchObject({ phase: 'Pending', error: waiting })
    expect(wf.status?.phase).toBe('Running')
    expect(plan.transitions).toContainEqual(expect.objectContaining({ kind: 'step.waiting', reason: 'ApprovalRequired', data: expect.objectContaining({ step: 's1' }) }))
  })

  it('does not let a waiting step hold a parallelism slot', () => {
    const steps = [aStep('s1'), aStep('s2', { agentRef: { name: 'free' } })]
    const { plan } = planAndSettle(withSpec({ steps, parallelism: 1 }), T0, { agents: gated })
    expect(started(plan)).toEqual(['s2'])
  })

  it('starts the Job once purko.io/approve-<step> is "true" and clears the waiting message', () => {
    const first = planAndSettle(aWorkflow(), T0, { agents: gated })
    const { plan, wf } = planAndSettle(annotate(first.wf, { 'purko.io/approve-s1': 'true' }), T1, { agents: gated })
    expect(started(plan)).toEqual(['s1'])
    expect(stepOf(wf, 's1')).toEqual({ name: 's1', phase: 'Running', jobName: jobOf('s1'), startTime: T1 })
  })

  it('ignores an approval annotation that is not "true"', () => {
    const first = planAndSettle(aWorkflow(), T0, { agents: gated })
    const { plan } = planAndSettle(annotate(first.wf, { 'purko.io/approve-s1': 'yes' }), T1, { agents: gated })
    expect(plan.startJobs).toEqual([])
  })

  it('fails a denied step with "Denied by user" and failFast ends the run', () => {
    const first = planAndSettle(withSpec({ steps: aChain(2) }), T0, { agents: gated })
    const { plan, wf } = planAndSettle(annotate(first.wf, { 'purko.io/deny-s1': 'true' }), T1, { agents: gated })
    expect(stepOf(wf, 's1')).toMatchObject({ phase: 'Failed', error: 'Denied by user', completionTime: T1 })
    expect(phasesOf(wf)).toEqual({ s1: 'Failed', s2: 'Skipped' })
    expect(wf.status).toMatchObject({ phase: 'Failed', completionTime: T1, failedSteps: 1 })
    expect(plan.transitions).toContainEqual(expect.objectContaining({ reason: 'StepDenied', data: expect.objectContaining({ step: 's1' }) }))
  })

  it('runs the dependents of a denied step under continueOnError', () => {
    const steps = [aStep('s1'), aStep('s2', { dependsOn: ['s1'], agentRef: { name: 'free' } })]
    const first = planAndSettle(withSpec({ steps, failureStrategy: 'continueOnError' }), T0, { agents: gated })
    const { plan, wf } = planAndSettle(annotate(first.wf, { 'purko.io/deny-s1': 'true' }), T1, { agents: gated })
    expect(started(plan)).toEqual(['s2'])
    expect(phasesOf(wf)).toEqual({ s1: 'Failed', s2: 'Running' })
  })

  it.each<[string, WorkflowSpec['failureStrategy']]>([['failFast', 'failFast'], ['continueOnError', 'continueOnError']])(
    'under %s applies a denial only when the step\'s turn comes, never ahead of its dependencies', (_, failureStrategy) => {
      const denied = withSpec({ steps: aChain(4), parallelism: 3, failureStrategy }, { 'purko.io/deny-s3': 'true' })
      let run = planAndSettle(denied, T0)
      expect(phasesOf(run.wf)).toEqual({ s1: 'Running', s2: '-', s3: '-', s4: '-' })
      run = finish(run.wf, T1, { step: 's1' })
      expect(phasesOf(run.wf)).toEqual({ s1: 'Succeeded', s2: 'Running', s3: '-', s4: '-' })
      run = finish(run.wf, T2, { step: 's2' })
      expect(stepOf(run.wf, 's3')).toMatchObject({ phase: 'Failed', error: 'Denied by user', completionTime: T2 })
      if (failureStrategy === 'failFast') expect(run.wf.status?.phase).toBe('Failed')
      else expect(started(run.plan)).toEqual(['s4'])
    },
  )

  it.each<[string, WorkflowSpec['failureStrategy'], string]>([
    ['failFast', 'failFast', 'Failed'],
    ['stop', 'stop', 'Failed'],
    ['continueOnError', 'continueOnError', 'Running'],
  ])('under %s denies a step whose turn comes within the same plan, never starting it', (_, failureStrategy, runPhase) => {
    // s2 becomes ready only when the type-only step t1 completes, which happens inside the plan that sees s1 finish.
    const steps = [
      aStep('s1'), aStep('t1', { agentRef: undefined, type: 'notification', dependsOn: ['s1'] }),
      aStep('s2', { dependsOn: ['t1'] }), aStep('s3', { dependsOn: ['t1'] }), aStep('s4', { dependsOn: ['s2'] }),
    ]
    const first = planAndSettle(withSpec({ steps, parallelism: 3, failureStrategy }, { 'purko.io/deny-s2': 'true' }), T0)
    const { plan, wf } = finish(first.wf, T1, { step: 's1' })
    expect(stepOf(wf, 's2')).toMatchObject({ phase: 'Failed', error: 'Denied by user' })
    expect(plan.startJobs.map((s) => s.step)).not.toContain('s2')
    expect(plan.deleteJobs).toEqual([])
    expect(wf.status?.phase).toBe(runPhase)
    if (failureStrategy === 'continueOnError') expect(started(plan)).toEqual(['s3', 's4'])
    else expect(plan.startJobs).toEqual([])
  })

  it('under failFast does not create a Job it planned earlier in the same pass as a denial', () => {
    const steps = [
      aStep('s1'), aStep('a', { dependsOn: ['s1'] }),
      aStep('t1', { agentRef: undefined, type: 'notification', dependsOn: ['s1'] }), aStep('d', { dependsOn: ['t1'] }),
    ]
    const first = planAndSettle(withSpec({ steps, parallelism: 3 }, { 'purko.io/deny-d': 'true' }), T0)
    const { plan, wf } = finish(first.wf, T1, { step: 's1' })
    expect(plan.startJobs).toEqual([])
    expect(plan.deleteJobs).toEqual([])
    expect(plan.transitions.filter((t) => t.kind === 'step.started')).toEqual([])
    expect(phasesOf(wf)).toEqual({ s1: 'Succeeded', a: 'Skipped', t1: 'Succeeded', d: 'Failed' })
    expect(wf.status?.phase).toBe('Failed')
  })

  it('does not deny a step that is already running', () => {
    const first = planAndSettle(aWorkflow(), T0)
    const { plan, wf } = planAndSettle(annotate(first.wf, { 'purko.io/deny-s1': 'true' }), T1)
    expect(plan.deleteJobs).toEqual([])
    expect(stepOf(wf, 's1')?.phase).toBe('Running')
  })
})

describe('cancel and rerun', () => {
  it('cancel deletes running Jobs, skips unfinished steps and ends Cancelled', () => {
    const first = planAndSettle(withSpec({ steps: aChain(3) }), T0)
    const second = finish(first.wf, T1, { step: 's1' })
    const { plan, wf } = planAndSettle(annotate(second.wf, { 'purko.io/cancel': 'true' }), T2)
    expect(plan.deleteJobs).toEqual([jobOf('s2')])
    expect(plan.startJobs).toEqual([])
    // Steps that never started stay unstarted: nothing was cancelled there.
    expect(phasesOf(wf)).toEqual({ s1: 'Succeeded', s2: 'Skipped', s3: '-' })
    expect(wf.status).toMatchObject({
      phase: 'Cancelled', completionTime: T2, message: 'Workflow cancelled via purko.io/cancel annotation',
    })
    expect(complete(wf)).toMatchObject({ status: 'False', reason: 'UserCancelled' })
  })

  it('cancel also deletes a running Job whose start was never recorded', () => {
    const cancelled = aWorkflow({ annotations: { 'purko.io/cancel': 'true' } })
    const { plan, wf } = planAndSettle(cancelled, T1, { jobs: [aJobFact({ step: 's1', state: 'Active' })], jobsComplete: true })
    expect(plan.deleteJobs).toEqual([jobOf('s1')])
    expect(wf.status?.phase).toBe('Cancelled')
  })

  it('cancel before the run started starts no Job', () => {
    const { plan, wf } = planAndSettle(aWorkflow({ annotations: { 'purko.io/cancel': 'true' } }), T0)
    expect(plan.startJobs).toEqual([])
    expect(wf.status?.phase).toBe('Cancelled')
  })

  it.each([['Succeeded'], ['Failed'], ['Cancelled']])('a %s run ignores cancel and every Job event', (phase) => {
    const first = planAndSettle(withSpec({ steps: aChain(2) }), T0)
    const ended = applyStatus(first.wf, { ...emptyPlan(), status: { ...first.wf.status!, phase: phase as 'Failed' } })
    const cancelled = annotate(ended, { 'purko.io/cancel': 'true' })
    expect(planWorkflow(factsFor(cancelled, { jobs: [aJobFact({ step: 's1' })], jobsComplete: true }), T1)).toBe(UNCHANGED)
  })

  it('rerun of a finished run starts a fresh run id with fresh Jobs and never re-adopts the old ones', () => {
    let run = planAndSettle(withSpec({ steps: aChain(2) }), T0)
    run = finish(run.wf, T1, { step: 's1', result: okResult({ old: true }) })
    run = finish(run.wf, T2, { step: 's2' })
    expect(run.wf.status?.phase).toBe('Succeeded')
    const oldRunId = run.wf.status!.runId!

    const rerun = annotate(run.wf, { 'purko.io/rerun': '2026-01-02T00:00:00Z' })
    const newRunId = runIdOf(rerun)
    expect(newRunId).not.toBe(oldRunId)
    expect(mayNeedWork(rerun)).toBe(true)
    const oldJobs = [aJobFact({ workflow: run.wf, step: 's1' }), aJobFact({ workflow: run.wf, step: 's2' })]
    const { plan, wf } = planAndSettle(rerun, T3, { jobs: oldJobs, jobsComplete: true })
    expect(plan.runId).toBe(newRunId)
    expect(plan.annotations).toEqual({ 'purko.io/run-id': newRunId })
    expect(plan.startJobs).toEqual([{ step: 's1', attempt: 0, jobName: stepJobName('wf', 's1', newRunId, 0), agentKey: 'ai-agents/a1' }])
    expect(plan.startJobs[0]!.jobName).not.toBe(jobOf('s1'))
    expect(plan.outputWrites).toEqual([])
    expect(phasesOf(wf)).toEqual({ s1: 'Running', s2: '-' })
    expect(wf.status).toMatchObject({ runId: newRunId, phase: 'Running', startTime: T3, completedSteps: 0 })
    expect(wf.status?.completionTime).toBeUndefined()
    expect(plan.transitions[0]).toMatchObject({ kind: 'run.started', reason: 'RunRestarted' })
  })

  it('rerun of a run still in progress deletes that run\'s running Jobs', () => {
    const first = planAndSettle(withSpec({ steps: independent(3), parallelism: 2 }), T0)
    const rerun = annotate(first.wf, { 'purko.io/rerun': 'again' })
    const { plan } = planAndSettle(rerun, T1)
    expect(plan.deleteJobs).toEqual([jobOf('s1'), jobOf('s2')])
    expect(plan.startJobs.map((s) => s.jobName)).toEqual([
      stepJobName('wf', 's1', runIdOf(rerun), 0), stepJobName('wf', 's2', runIdOf(rerun), 0),
    ])
  })

  it('a second rerun value gives yet another run', () => {
    const a = runIdOf(aWorkflow({ annotations: { 'purko.io/rerun': '1' } }))
    const b = runIdOf(aWorkflow({ annotations: { 'purko.io/rerun': '2' } }))
    expect(new Set([runIdOf(), a, b]).size).toBe(3)
  })
})

describe('workflow timeout', () => {
  it.each<[string, WorkflowSpec['timeout'], number, string | null]>([
    ['"10m" at exactly 10m', '10m', 600, null],
    ['"10m" after 10m1s', '10m', 601, 'Workflow exceeded timeout of 10m0s (elapsed: 10m1s)'],
    ['"1h30m" after 1h30m1s', '1h30m', 5401, 'Workflow exceeded timeout of 1h30m0s (elapsed: 1h30m1s)'],
    ['{timeoutSeconds: 60} after 61s', { timeoutSeconds: 60 }, 61, 'Workflow exceeded timeout of 1m0s (elapsed: 1m1s)'],
    ['the 30m default at exactly 30m', undefined, 1800, null],
    ['the 30m default after 30m4s', undefined, 1804, 'Workflow exceeded timeout of 30m0s (elapsed: 30m4s)'],
    ['{} as the 30m default', {}, 1804, 'Workflow exceeded timeout of 30m0s (elapsed: 30m4s)'],
    ['an unparseable string as the 30m default', 'soon', 1799, null],
  ])('%s', (_, timeout, elapsed, message) => {
    const first = planAndSettle(withSpec({ steps: aChain(2), ...(timeout === undefined ? {} : { timeout }) }), T0)
    if (message === null) {
      expect(planWorkflow(factsFor(first.wf), at(elapsed))).toBe(UNCHANGED)
      return
    }
    const { plan, wf } = planAndSettle(first.wf, at(elapsed))
    expect(plan.deleteJobs).toEqual([jobOf('s1')])
    expect(plan.startJobs).toEqual([])
    expect(wf.status).toMatchObject({ phase: 'Failed', completionTime: at(elapsed), message })
    expect(complete(wf)).toMatchObject({ reason: 'WorkflowTimeout', message })
  })

  it('counts time spent waiting for approval', () => {
    const agents = agentsOf(anAgent({ humanApprovalRequired: true }))
    const first = planAndSettle(withSpec({ timeout: '1m' }), T0, { agents })
    const { wf, plan } = planAndSettle(first.wf, T2, { agents })
    expect(plan.deleteJobs).toEqual([])
    expect(wf.status?.phase).toBe('Failed')
  })

  it.each<[WorkflowSpec['timeout'], number]>([
    ['10m', 600], ['90s', 90], ['1h30m', 5400], [{ timeoutSeconds: 60 }, 60], [undefined, 1800], [{}, 1800], ['bogus', 1800],
    // Zero or negative means "not set" in both forms, never "fail at once".
    ['0s', 1800], ['-5m', 1800], [{ timeoutSeconds: 0 }, 1800],
  ])('reads spec.timeout %j as %i seconds', (timeout, seconds) => {
    expect(workflowTimeoutSeconds(withSpec(timeout === undefined ? {} : { timeout }))).toBe(seconds)
  })
})

describe('invalid spec', () => {
  it.each<[string, WorkflowStep[], string, string]>([
    ['an unknown dependency', [aStep('s1', { dependsOn: ['ghost'] })], 'UnknownDependency', 'WF-003: step "s1" depends on non-existent step "ghost"'],
    ['a cycle', [aStep('s1', { dependsOn: ['s2'] }), aStep('s2', { dependsOn: ['s1'] })], 'DependencyCycle', 'WF-004: dependency cycle detected among steps'],
  ])('fails the run on %s with a SpecValid=False condition and starts nothing', (_, steps, reason, message) => {
    const { plan, wf } = planAndSettle(withSpec({ steps }), T0)
    expect(plan.startJobs).toEqual([])
    expect(wf.status).toMatchObject({ phase: 'Failed', message, observedGeneration: 1 })
    expect(specValid(wf)).toMatchObject({ status: 'False', reason, message, observedGeneration: 1 })
    expect(complete(wf)).toMatchObject({ reason: 'InvalidSpec' })
    expect(plan.transitions).toEqual([expect.objectContaining({ kind: 'spec.invalid', type: 'Warning', reason: 'InvalidSpec', message })])
  })

  it('starts a run once a new generation fixes the spec', () => {
    const broken = planAndSettle(withSpec({ steps: [aStep('s1', { dependsOn: ['ghost'] })] }), T0)
    const fixed: Workflow = { ...broken.wf, metadata: { ...broken.wf.metadata, generation: 2 }, spec: { ...broken.wf.spec, steps: [aStep('s1')] } }
    expect(mayNeedWork(fixed)).toBe(true)
    const { plan, wf } = planAndSettle(fixed, T1)
    expect(started(plan)).toEqual(['s1'])
    expect(wf.status).toMatchObject({ phase: 'Running', observedGeneration: 2, startTime: T1 })
    expect(wf.status?.completionTime).toBeUndefined()
    expect(specValid(wf)).toMatchObject({ status: 'True' })
  })

  it('deletes the running Jobs of a run whose new generation is invalid', () => {
    const first = planAndSettle(withSpec({ steps: independent(2), parallelism: 2 }), T0)
    const cyclic: Workflow = {
      ...first.wf, metadata: { ...first.wf.metadata, generation: 2 },
      spec: { ...first.wf.spec, steps: [aStep('s1', { dependsOn: ['s2'] }), aStep('s2', { dependsOn: ['s1'] })] },
    }
    const { plan, wf } = planAndSettle(cyclic, T1)
    expect(plan.deleteJobs).toEqual([jobOf('s1'), jobOf('s2')])
    expect(wf.status?.phase).toBe('Failed')
    expect(specValid(wf)).toMatchObject({ status: 'False', reason: 'DependencyCycle' })
  })

  it('keeps failing a new generation that is still invalid, reporting the new problem', () => {
    const broken = planAndSettle(withSpec({ steps: [aStep('s1', { dependsOn: ['ghost'] })] }), T0)
    const still: Workflow = {
      ...broken.wf, metadata: { ...broken.wf.metadata, generation: 2 },
      spec: { ...broken.wf.spec, steps: [aStep('s1', { dependsOn: ['s1'] })] },
    }
    const { plan, wf } = planAndSettle(still, T1)
    expect(plan.startJobs).toEqual([])
    expect(specValid(wf)).toMatchObject({ status: 'False', reason: 'SelfDependency', observedGeneration: 2 })
  })
})

describe('missing Agent', () => {
  it('keeps the step Pending with purko\'s message until the Agent appears', () => {
    const first = planAndSettle(aWorkflow(), T0, { agents: new Map() })
    expect(first.plan.startJobs).toEqual([])
    expect(stepOf(first.wf, 's1')).toMatchObject({ phase: 'Pending', error: 'Agent "a1" not found for step "s1"' })
    expect(first.wf.status?.phase).toBe('Running')
    expect(first.plan.transitions).toContainEqual(expect.objectContaining({ kind: 'step.waiting', reason: 'AgentNotFound', type: 'Warning' }))

    const { plan, wf } = planAndSettle(first.wf, T1)
    expect(started(plan)).toEqual(['s1'])
    expect(stepOf(wf, 's1')).toEqual({ name: 's1', phase: 'Running', jobName: jobOf('s1'), startTime: T1 })
  })

  it('drops the stale waiting message of a step that is only queued once its Agent appears', () => {
    const first = planAndSettle(withSpec({ steps: independent(2), parallelism: 1 }), T0, { agents: new Map() })
    expect(phasesOf(first.wf)).toEqual({ s1: 'Pending', s2: 'Pending' })
    const { plan, wf } = planAndSettle(first.wf, T1)
    expect(started(plan)).toEqual(['s1'])
    expect(stepOf(wf, 's2')).toEqual({ name: 's2', phase: 'Pending' })
  })

  it('looks the Agent up in the namespace agentRef names', () => {
    const wf = withSpec({ steps: [aStep('s1', { agentRef: { name: 'a1', namespace: 'shared' } })] })
    expect(planAndSettle(wf, T0).plan.startJobs).toEqual([])
    const { plan } = planAndSettle(wf, T0, { agents: agentsOf(anAgent({ namespace: 'shared' })) })
    expect(plan.startJobs).toEqual([expect.objectContaining({ step: 's1', agentKey: 'shared/a1' })])
  })
})

describe('adoption and lost events', () => {
  it('adopts a Job whose creation was never recorded instead of creating a second one', () => {
    const wf = withSpec({ steps: independent(3), parallelism: 2 })
    // The first plan created Jobs for s1 and s2, then crashed before any status write.
    const jobs = [aJobFact({ step: 's1', state: 'Active' }), aJobFact({ step: 's2', state: 'Active' })]
    const { plan, wf: next } = planAndSettle(wf, T1, { jobs })
    expect(plan.startJobs).toEqual([])
    expect(phasesOf(next)).toEqual({ s1: 'Running', s2: 'Running', s3: '-' })
    expect(stepOf(next, 's1')).toMatchObject({ jobName: jobOf('s1') })
  })

  it('adopts an unrecorded Job that already finished and moves on', () => {
    const first = planAndSettle(withSpec({ steps: aChain(3) }), T0)
    // s1 finished and s2's Job was created, but the status write recording s2 was lost.
    const second = changes(planWorkflow(factsFor(first.wf, { jobs: [aJobFact({ step: 's1' })] }), T1))
    const { plan, wf } = planAndSettle(first.wf, T2, { jobs: [aJobFact({ step: 's1' }), aJobFact({ step: 's2', result: okResult({ v: 2 }) })] })
    expect(second.startJobs.map((s) => s.step)).toEqual(['s2'])
    expect(phasesOf(wf)).toEqual({ s1: 'Succeeded', s2: 'Succeeded', s3: 'Running' })
    expect(plan.outputWrites.map((w) => w.step)).toEqual(['s1', 's2'])
    expect(started(plan)).toEqual(['s3'])
  })

  it('adopts the Job of a retry whose start was never recorded', () => {
    let run = planAndSettle(withSpec({ steps: [aStep('s1', { retryPolicy: { maxRetries: 2 } })] }), T0)
    run = finish(run.wf, T0, { step: 's1', state: 'Failed' })
    const { plan, wf } = planAndSettle(run.wf, T1, { jobs: [aJobFact({ step: 's1', attempt: 1, state: 'Active' })] })
    expect(plan.startJobs).toEqual([])
    expect(stepOf(wf, 's1')).toMatchObject({ phase: 'Running', jobName: jobOf('s1', 1), retryCount: 1 })
    expect(stepOf(wf, 's1')?.nextAttemptAt).toBeUndefined()
  })

  it.each<[string, Record<string, unknown> | undefined, string]>([
    ['fails a step', undefined, 'Failed'],
    ['retries a step', { maxRetries: 1 }, 'Pending'],
  ])('%s whose Job disappeared when the full Job list is known', (_, retryPolicy, phase) => {
    const first = planAndSettle(withSpec({ steps: [aStep('s1', retryPolicy ? { retryPolicy: retryPolicy as never } : {})] }), T0)
    const { wf } = planAndSettle(first.wf, T1, { jobs: [], jobsComplete: true })
    expect(stepOf(wf, 's1')).toMatchObject({ phase, error: `Job ${jobOf('s1')} disappeared before it finished` })
  })

  it('does not take a Job missing from a single event as lost', () => {
    const first = planAndSettle(withSpec({ steps: independent(2), parallelism: 2 }), T0)
    expect(planWorkflow(factsFor(first.wf, { jobs: [aJobFact({ step: 's2', state: 'Active' })] }), T1)).toBe(UNCHANGED)
  })

  it.each<[string, JobFactOverrides]>([
    ['a late event about an earlier attempt', { step: 's1', attempt: 0, state: 'Failed' }],
    ['an earlier attempt that somehow succeeded', { step: 's1', attempt: 0, state: 'Succeeded' }],
    ['a Job of another run', { step: 's1', attempt: 1, runId: 'other-0000', state: 'Succeeded' }],
    ['a compensation Job in a run that is not rolling back', { step: 's1', attempt: 'rollback', state: 'Succeeded' }],
    ['a Job of a step not in the spec', { step: 'gone', state: 'Succeeded' }],
  ])('ignores %s', (_, job) => {
    let run = planAndSettle(withSpec({ steps: [aStep('s1', { retryPolicy: { maxRetries: 2, backoffSeconds: 0 } })] }), T0)
    run = finish(run.wf, T0, { step: 's1', state: 'Failed' })
    expect(stepOf(run.wf, 's1')).toMatchObject({ phase: 'Running', retryCount: 1, jobName: jobOf('s1', 1) })
    expect(planWorkflow(factsFor(run.wf, { jobs: [aJobFact(job)] }), T1)).toBe(UNCHANGED)
  })

  it('ignores a finished Job of another run even when the full Job list is known', () => {
    const first = planAndSettle(aWorkflow(), T0)
    const other = aJobFact({ step: 's1', runId: 'other-0000' })
    const { wf } = planAndSettle(first.wf, T1, { jobs: [other, aJobFact({ step: 's1', state: 'Active' })], jobsComplete: true })
    expect(stepOf(wf, 's1')?.phase).toBe('Running')
  })
})

describe('sizes', () => {
  it('runs a 10,000-step chain with a small status, planning each event well under a second', () => {
    const steps = aChain(10_000)
    let wf = withSpec({ steps })
    let slowest = 0
    let largest = 0
    const plan = (now: string, overrides: FactsOverrides = {}) => {
      const begin = performance.now()
      const result = changes(planWorkflow(factsFor(wf, overrides), now))
      slowest = Math.max(slowest, performance.now() - begin)
      wf = applyStatus(wf, result)
      largest = Math.max(largest, JSON.stringify(wf.status).length)
      return result
    }
    expect(plan(T0).startJobs.map((s) => s.step)).toEqual(['s1'])
    expect(wf.status?.stepPhases).toHaveLength(9 + 10_000)
    for (let i = 1; i <= 200; i++) {
      const result = plan(at(i), { jobs: [aJobFact({ workflow: wf, step: `s${i}`, result: okResult({ i }) })] })
      expect(result.startJobs.map((s) => s.step)).toEqual([`s${i + 1}`])
    }
    expect(wf.status).toMatchObject({ phase: 'Running', completedSteps: 200, totalSteps: 10_000 })
    expect(wf.status?.stepStatuses).toEqual([expect.objectContaining({ name: 's201', phase: 'Running' })])
    expect(String(wf.status?.stepPhases).slice(9, 211)).toBe(`${'S'.repeat(200)}R-`)
    expect(largest).toBeLessThan(64 * 1024)
    expect(slowest).toBeLessThan(1000)
    expect(planWorkflow(factsFor(wf), at(201))).toBe(UNCHANGED)
  }, 60_000)

  it('fails a large run whose step list is edited mid-run instead of mixing up its steps', () => {
    const steps = aChain(300)
    let wf = withSpec({ steps })
    wf = applyStatus(wf, planWorkflow(factsFor(wf), T0))
    wf = applyStatus(wf, planWorkflow(factsFor(wf, { jobs: [aJobFact({ workflow: wf, step: 's1', result: okResult() })] }), T1))
    const edited = { ...wf, metadata: { ...wf.metadata, generation: 2 }, spec: { ...wf.spec, steps: [aStep('s0'), ...steps] } }

    const plan = changes(planWorkflow(factsFor(edited), at(2)))

    expect(plan.status).toMatchObject({ phase: 'Failed' })
    expect(plan.status?.conditions).toContainEqual(expect.objectContaining({ type: 'Complete', reason: 'StepsChanged' }))
    expect(plan.deleteJobs).toEqual([wf.status?.stepStatuses?.find((s) => s.phase === 'Running')?.jobName])
    expect(plan.startJobs).toEqual([])
  })

  it('caps parallelism at MAX_PARALLELISM however many steps are ready', () => {
    const wf = withSpec({ steps: Array.from({ length: MAX_PARALLELISM + 50 }, (_, i) => aStep(`p${i}`)), parallelism: 10_000 })
    expect(changes(planWorkflow(factsFor(wf), T0)).startJobs).toHaveLength(MAX_PARALLELISM)
  })

  it('fails the run quickly and compactly when a 10,000-step chain fails under failFast', () => {
    let run = planAndSettle(withSpec({ steps: aChain(10_000) }), T0)
    run = finish(run.wf, T1, { step: 's1', state: 'Failed' })
    expect(run.wf.status?.phase).toBe('Failed')
    expect(JSON.stringify(run.wf.status).length).toBeLessThan(64 * 1024)
  })

  const wide = (agent = 'a1') => Array.from({ length: 10_000 }, (_, i) =>
    aStep(`summarise-the-quarterly-report-part-${String(i).padStart(5, '0')}`, { agentRef: { name: agent } }))

  it.each<[string, Map<string, Agent>]>([
    ['an Agent that does not exist yet', new Map()],
    ['an Agent that requires approval', agentsOf(anAgent({ humanApprovalRequired: true }))],
  ])('keeps the status of a 10,000-step fan-out waiting for %s small', (_, agents) => {
    const { plan, wf } = planAndSettle(withSpec({ steps: wide(), parallelism: 10 }), T0, { agents })
    expect(plan.startJobs).toEqual([])
    expect(JSON.stringify(wf.status).length).toBeLessThan(64 * 1024)
    expect(plan.transitions.length).toBeLessThan(200)
    expect(wf.status?.stepStatuses?.[0]).toMatchObject({ phase: 'Pending' })
    const later = planAndSettle(wf, T1)
    expect(later.plan.startJobs).toHaveLength(10)
  })

  it('keeps the status of a 10,000-step run small however many steps failed under continueOnError', () => {
    let run = planAndSettle(withSpec({ steps: wide(), parallelism: 100, failureStrategy: 'continueOnError' }), T0)
    const error = 'e'.repeat(1024)
    for (const now of [T1, T2, T3]) {
      const jobs = run.plan.startJobs.map((s) => aJobFact({ workflow: run.wf, step: s.step, state: 'Failed', result: failedResult(error) }))
      run = planAndSettle(run.wf, now, { jobs })
      expect(run.plan.startJobs).toHaveLength(100)
    }
    expect(run.wf.status?.failedSteps).toBe(300)
    expect(JSON.stringify(run.wf.status).length).toBeLessThan(64 * 1024)
  })

  it('keeps the status of a 10,000-step run bounded while every attempt fails and waits for its retry', () => {
    const steps = wide().map((s) => ({ ...s, retryPolicy: { maxRetries: 3, backoffSeconds: 300 } }))
    let run = planAndSettle(withSpec({ steps, parallelism: 100, failureStrategy: 'continueOnError' }), T0)
    for (let t = 1; t <= 5; t++) {
      const jobs = run.plan.startJobs.map((s) =>
        aJobFact({ workflow: run.wf, step: s.step, attempt: s.attempt, state: 'Failed', result: failedResult('e'.repeat(1024)) }))
      run = planAndSettle(run.wf, at(t), { jobs })
    }
    expect(run.wf.status?.stepStatuses?.length).toBeLessThanOrEqual(100)
    expect(JSON.stringify(run.wf.status).length).toBeLessThan(256 * 1024)
  })

  it('fails a step whose output is over 256 KiB with OutputTooLarge and stores nothing', () => {
    const result = resultFromLog(`OUTPUT:${JSON.stringify({ text: 'x'.repeat(MAX_OUTPUT_BYTES) })}`)
    const first = planAndSettle(withSpec({ steps: aChain(2) }), T0)
    const { plan, wf } = finish(first.wf, T1, { step: 's1', result })
    expect(plan.outputWrites).toEqual([])
    expect(stepOf(wf, 's1')?.phase).toBe('Failed')
    expect(stepOf(wf, 's1')?.error).toMatch(/^OutputTooLarge: step output is \d+ bytes; the limit is 262144 bytes$/)
    expect(wf.status?.phase).toBe('Failed')
  })
})

describe('mayNeedWork', () => {
  const running = planAndSettle(aWorkflow(), T0).wf
  const finished = finish(running, T1, { step: 's1' }).wf
  it.each<[string, boolean, Workflow]>([
    ['a Workflow never planned', true, aWorkflow()],
    ['a template', false, aWorkflow({ annotations: { 'purko.io/template': 'true' } })],
    ['a Workflow being deleted', false, { ...aWorkflow(), metadata: { ...aWorkflow().metadata, deletionTimestamp: T0 } }],
    ['the echo of our own status write', false, running],
    ['a new rerun value', true, annotate(running, { 'purko.io/rerun': 'now' })],
    ['a cancel request', true, annotate(running, { 'purko.io/cancel': 'true' })],
    ['an approval', true, annotate(running, { 'purko.io/approve-s1': 'true' })],
    ['an unrelated annotation', false, annotate(running, { 'team': 'x' })],
    ['a new generation', true, { ...running, metadata: { ...running.metadata, generation: 2 } }],
    ['a cancel request on a finished run', false, annotate(finished, { 'purko.io/cancel': 'true' })],
    ['an approval on a finished run', false, annotate(finished, { 'purko.io/approve-s1': 'true' })],
    ['an edited spec of a finished run', false, { ...finished, metadata: { ...finished.metadata, generation: 2 } }],
    ['a rerun of a finished run', true, annotate(finished, { 'purko.io/rerun': 'now' })],
  ])('for %s it is %s', (_, expected, wf) => {
    expect(mayNeedWork(wf)).toBe(expected)
  })

  it.each<[string, Workflow]>([
    ['a cancel request on a finished run', annotate(finished, { 'purko.io/cancel': 'true' })],
    ['an edited spec of a finished run', { ...finished, metadata: { ...finished.metadata, generation: 2 } }],
    ['a template', aWorkflow({ annotations: { 'purko.io/template': 'true' } })],
    ['a Workflow being deleted', { ...aWorkflow(), metadata: { ...aWorkflow().metadata, deletionTimestamp: T0 } }],
  ])('planning %s writes nothing', (_, wf) => {
    expect(planWorkflow(factsFor(wf, { jobs: [aJobFact({ state: 'Active' })], jobsComplete: true }), T0)).toBe(UNCHANGED)
  })
})

describe('runIdFor', () => {
  it('derives the id from the uid, so racing replicas agree on it', () => {
    expect(runIdFor(WF_UID, undefined)).toBe(runIdFor(WF_UID, undefined))
    expect(runIdFor(WF_UID, undefined)).toMatch(/^3f2a9c1e-[0-9a-f]{4}$/)
  })

  it.each<[string, string | undefined, string | undefined]>([
    ['a first rerun', undefined, '2026-01-02T00:00:00Z'],
    ['a second rerun', '2026-01-02T00:00:00Z', '2026-01-03T00:00:00Z'],
  ])('gives %s a fresh id', (_, before, after) => {
    expect(runIdFor(WF_UID, after)).not.toBe(runIdFor(WF_UID, before))
  })

  it('gives two Workflows with the same rerun token different ids', () => {
    expect(runIdFor('11111111-aaaa', 'x')).not.toBe(runIdFor('11111111-bbbb', 'x'))
  })

  it('still gives a valid id without a uid', () => {
    expect(runIdFor('', undefined)).toMatch(/^run-[0-9a-f]{4}$/)
  })
})

describe('jobsNeedingResults', () => {
  const running = planAndSettle(withSpec({ steps: aChain(2), failureStrategy: 'rollback' }), T0).wf
  it.each<[string, JobFactOverrides, boolean]>([
    ['the finished Job of a running step', { step: 's1', state: 'Succeeded' }, true],
    ['the failed Job of a running step', { step: 's1', state: 'Failed' }, true],
    ['an unrecorded finished Job of a step not started yet', { step: 's2', state: 'Succeeded' }, true],
    ['a Job still running', { step: 's1', state: 'Active' }, false],
    ['a Job of another run', { step: 's1', runId: 'other-0000' }, false],
    ['a Job of a later attempt than recorded', { step: 's1', attempt: 1 }, false],
    ['a compensation Job while not rolling back', { step: 's1', attempt: 'rollback', state: 'Failed' }, false],
  ])('asks for %s: %s', (_, job, expected) => {
    const fact = aJobFact({ workflow: running, ...job })
    delete fact.result
    expect(jobsNeedingResults(running, [fact])).toEqual(expected ? [fact] : [])
  })

  it('asks for a finished compensation Job of the step being rolled back, so its event advances the rollback', () => {
    let run = finish(running, T1, { step: 's1' })
    run = finish(run.wf, T2, { step: 's2', state: 'Failed' })
    expect(run.wf.status?.phase).toBe('RollingBack')
    for (const state of ['Succeeded', 'Failed'] as const) {
      const fact = aJobFact({ step: 's1', attempt: 'rollback', state })
      delete fact.result
      expect(jobsNeedingResults(run.wf, [fact])).toEqual([fact])
    }
    const other = aJobFact({ step: 's2', attempt: 'rollback' })
    delete other.result
    expect(jobsNeedingResults(run.wf, [other])).toEqual([])
  })

  it('asks for nothing once the run has ended', () => {
    const ended = finish(running, T1, { step: 's1', state: 'Failed' }).wf
    expect(ended.status?.phase).toBe('Failed')
    const fact = aJobFact({ step: 's2' })
    delete fact.result
    expect(jobsNeedingResults(ended, [fact])).toEqual([])
  })
})

describe('completionPhase (purko\'s table)', () => {
  it.each<[number, number, number, string, string, string]>([
    [4, 0, 4, 'continueOnError', 'Succeeded', 'AllStepsCompleted'],
    [2, 2, 4, 'continueOnError', 'CompletedWithErrors', 'CompletedWithErrors'],
    [0, 4, 4, 'continueOnError', 'Failed', 'AllStepsFailed'],
    [0, 1, 1, 'continueOnError', 'Failed', 'AllStepsFailed'],
    [3, 1, 4, '', 'Failed', 'StepsFailed'],
  ])('(%i, %i, %i, %j) is %s/%s', (completed, failed, total, strategy, phase, reason) => {
    const result = completionPhase(completed, failed, total, strategy)
    expect(result).toMatchObject({ phase, reason })
    expect(result.message.length).toBeGreaterThan(0)
  })
})

/**
 * A random DAG driven by a random sequence of what the outside world does: Jobs finish or fail,
 * events come twice or about Jobs that vanished, approvals, denials, cancels, reruns, agents
 * coming and going, resync ticks with the full Job list. After every plan: re-planning on its
 * result writes nothing, no Job is created twice, running plus backing-off steps stay within
 * the cap, a denied step never starts, a run that ended leaves no Job running; and once
 * everything is approved and every Job succeeds, the run ends without hitting its timeout.
 */
describe('any sequence of events', () => {
  type Action = { kind: 'ok' | 'fail' | 'approve' | 'deny' | 'cancel' | 'lose' | 'duplicate' | 'resync' | 'agents' | 'rerun'; pick: number; wait: number }
  const stepArb = fc.record({
    deps: fc.uniqueArray(fc.nat({ max: 5 }), { maxLength: 2 }),
    kind: fc.constantFrom('agent', 'agent', 'gated', 'type'),
    retries: fc.constantFrom(0, 0, 1, 2),
    backoff: fc.constantFrom(0, 5),
    condition: fc.constantFrom(undefined, undefined, 'false', 'steps.s0.output.x == 1'),
  })
  const scenarioArb = fc.record({
    steps: fc.array(stepArb, { minLength: 2, maxLength: 6 }),
    failureStrategy: fc.constantFrom('failFast' as const, 'continueOnError' as const, 'stop' as const, 'rollback' as const),
    parallelism: fc.integer({ min: 1, max: 3 }),
    actions: fc.array(fc.record({
      kind: fc.constantFrom<Action['kind']>('ok', 'ok', 'ok', 'fail', 'approve', 'deny', 'cancel', 'lose', 'duplicate', 'resync', 'agents', 'rerun'),
      pick: fc.nat(),
      wait: fc.nat({ max: 8 }),
    }), { maxLength: 40 }),
  })

  it('every plan is idempotent, safe and the run always ends', () => {
    fc.assert(fc.property(scenarioArb, ({ steps: shape, failureStrategy, parallelism, actions }) => {
      const steps: WorkflowStep[] = shape.map((s, i) => {
        const step = aStep(`s${i}`, s.kind === 'gated' ? { agentRef: { name: 'gated' } } : {})
        if (s.kind === 'type') { delete step.agentRef; step.type = 'notification' }
        const deps = i === 0 ? [] : [...new Set(s.deps.map((d) => `s${d % i}`))]
        if (deps.length > 0) step.dependsOn = deps
        if (s.retries > 0) step.retryPolicy = { maxRetries: s.retries, backoffSeconds: s.backoff }
        if (s.condition && i > 0) step.condition = s.condition
        return step
      })
      const allAgents = agentsOf(anAgent(), anAgent({ name: 'gated', humanApprovalRequired: true }))
      let agents = allAgents
      let wf = withSpec({ steps, parallelism, failureStrategy, timeout: '10h' })
      let t = 0
      const jobs = new Map<string, JobFact>()
      const created = new Set<string>()
      const outputs = new Map<string, Map<string, string>>()
      const outputsOf = (w: Workflow) => outputs.get(runIdOf(w)) ?? outputs.set(runIdOf(w), new Map()).get(runIdOf(w))!
      const currentJobs = (w: Workflow) => [...jobs.values()].filter((j) => j.runId === runIdOf(w)).map((j) => ({ ...j }))

      const step = (given: JobFact[], complete: boolean) => {
        const facts = complete ? [...given, ...currentJobs(wf).filter((j) => !given.some((g) => g.name === j.name))] : given
        const now = at(t)
        const planned = planWorkflow(factsFor(wf, { jobs: facts, jobsComplete: complete, agents, outputs: outputsOf(wf) }), now)
        const plan = planned === UNCHANGED ? emptyPlan() : planned
        for (const name of plan.deleteJobs) jobs.delete(name)
        for (const s of plan.startJobs) {
          expect(created.has(s.jobName), `Job ${s.jobName} created twice`).toBe(false)
          created.add(s.jobName)
          jobs.set(s.jobName, { name: s.jobName, workflow: 'wf', step: s.step, runId: plan.runId!, attempt: s.attempt, state: 'Active' })
          if (s.attempt !== 'rollback') expect(wf.metadata.annotations?.[`purko.io/deny-${s.step}`]).not.toBe('true')
        }
        const next = applyStatus(wf, plan)
        for (const w of plan.outputWrites) outputsOf(next).set(w.step, w.json)
        const again = planWorkflow(factsFor(next, {
          jobs: complete ? currentJobs(next) : facts, jobsComplete: complete, agents, outputs: outputsOf(next),
        }), now)
        expect(again, 're-planning on the plan\'s own result').toBe(UNCHANGED)
        expect(mayNeedWork(next)).toBe(false)
        const states = [...decodeStepStates(next).values()]
        if (!isTerminalPhase(next.status?.phase)) {
          expect(states.filter((s) => s.phase === 'Running' || (s.phase === 'Pending' && s.nextAttemptAt)).length).toBeLessThanOrEqual(parallelism)
        } else if (complete) {
          expect(currentJobs(next).filter((j) => j.state === 'Active').map((j) => j.name)).toEqual([])
        }
        wf = next
      }
      const annotateWith = (extra: Record<string, string>) => { wf = annotate(wf, extra) }

      step([], false)
      let reruns = 0
      for (const action of actions) {
        t += action.wait
        const active = currentJobs(wf).filter((j) => j.state === 'Active')
        const gated = steps.filter((s) => s.agentRef?.name === 'gated')
        switch (action.kind) {
          case 'ok':
          case 'fail': {
            if (active.length === 0) break
            const job = jobs.get(active[action.pick % active.length]!.name)!
            job.state = action.kind === 'ok' ? 'Succeeded' : 'Failed'
            job.result = action.kind === 'ok' ? okResult({ x: 1 }) : failedResult('boom')
            step([{ ...job }], false)
            break
          }
          case 'approve':
          case 'deny':
            if (gated.length > 0) annotateWith({ [`purko.io/${action.kind}-${gated[action.pick % gated.length]!.name}`]: 'true' })
            step([], true)
            break
          case 'cancel':
            annotateWith({ 'purko.io/cancel': 'true' })
            step([], true)
            break
          case 'lose':
            if (active.length > 0) jobs.delete(active[action.pick % active.length]!.name)
            step([], true)
            break
          case 'duplicate': {
            const done = currentJobs(wf).filter((j) => j.state !== 'Active')
            if (done.length > 0) step([done[action.pick % done.length]!], false)
            break
          }
          case 'agents':
            agents = agents === allAgents ? agentsOf(anAgent({ name: 'gated', humanApprovalRequired: true })) : allAgents
            step([], true)
            break
          case 'rerun': {
            if (reruns >= 2) break
            reruns++
            const kept = Object.entries(wf.metadata.annotations ?? {}).filter(([k]) =>
              k !== 'purko.io/cancel' && !k.startsWith('purko.io/approve-') && !k.startsWith('purko.io/deny-'))
            wf = { ...wf, metadata: { ...wf.metadata, annotations: { ...Object.fromEntries(kept), 'purko.io/rerun': `r${reruns}` } } }
            step([], true)
            break
          }
          default:
            step([], true)
        }
      }

      // Approve everything not denied and let every Job succeed: the run must end on its own.
      agents = allAgents
      for (const s of steps) {
        if (s.agentRef?.name === 'gated' && wf.metadata.annotations?.[`purko.io/deny-${s.name}`] !== 'true') annotateWith({ [`purko.io/approve-${s.name}`]: 'true' })
      }
      for (let round = 0; !isTerminalPhase(wf.status?.phase); round++) {
        expect(round, 'rounds until the run ends').toBeLessThan(50)
        t += 30
        for (const job of currentJobs(wf)) {
          if (job.state === 'Active') jobs.set(job.name, { ...job, state: 'Succeeded', result: okResult({ x: 1 }) })
        }
        step([], true)
      }
      expect(complete(wf)?.reason).not.toBe('WorkflowTimeout')
    }), { numRuns: propertyRuns(300) })
  }, 120_000)
})

/** Agent a1 with a cost limit and the total recorded so far. */
const budgeted = (guardrails: Record<string, unknown>, totalCostUSD: number, recordedAttempts?: string[]): Agent => {
  const agent = anAgent()
  return { ...agent, spec: { ...agent.spec, guardrails }, status: { metrics: { totalCostUSD, ...(recordedAttempts ? { recordedAttempts } : {}) } } }
}
const attemptKey = (step: string, attempt: number | 'rollback') => `${WF_UID}/${runIdOf()}/${step}/${attempt}`
const withUsage = (tokensIn: number, tokensOut: number, cost: number, extra: Record<string, unknown> = {}) =>
  okResult({ ...extra, _metrics: { tokens_in: tokensIn, tokens_out: tokensOut, cost_usd: cost } })

describe('agent identity', () => {
  it('keeps a step Pending, names the ServiceAccount and namespace, and creates no Job until the identity exists', () => {
    const first = planAndSettle(aWorkflow(), T0, { identities: new Set() })
    expect(first.plan.startJobs).toEqual([])
    expect(stepOf(first.wf, 's1')).toMatchObject({
      phase: 'Pending',
      error: expect.stringMatching(/^Waiting for ServiceAccount "agent-a1-sa" in namespace "ai-agents": step "s1" runs as agent "a1"/),
    })
    // agent-changed makes it a moment after the Agent is applied: nobody has to act, so not a Warning.
    expect(first.plan.transitions).toContainEqual(expect.objectContaining({ kind: 'step.waiting', reason: 'AgentIdentityPending', type: 'Normal', data: expect.objectContaining({ step: 's1' }) }))
    // Still missing a minute later: nothing to write, nothing to announce again.
    expect(planWorkflow(factsFor(first.wf, { identities: new Set() }), T1)).toBe(UNCHANGED)

    const { plan, wf } = planAndSettle(first.wf, T1)
    expect(started(plan)).toEqual(['s1'])
    expect(stepOf(wf, 's1')).toEqual({ name: 's1', phase: 'Running', jobName: jobOf('s1'), startTime: T1 })
  })

  it('names the account spec.runtime.serviceAccountName asks for', () => {
    const agent = anAgent()
    const own = { ...agent, spec: { ...agent.spec, runtime: { serviceAccountName: 'triage-sa' } } } as Agent
    const { wf } = planAndSettle(aWorkflow(), T0, { agents: agentsOf(own), identities: new Set() })
    expect(stepOf(wf, 's1')?.error).toContain('ServiceAccount "triage-sa" in namespace "ai-agents"')
  })

  it('explains that an agent of another namespace needs its ServiceAccount in the Workflow\'s namespace', () => {
    const wf = withSpec({ steps: [aStep('s1', { agentRef: { name: 'a1', namespace: 'shared' } })] })
    const { plan, wf: next } = planAndSettle(wf, T0, { agents: agentsOf(anAgent({ namespace: 'shared' })), identities: new Set() })
    expect(plan.startJobs).toEqual([])
    expect(stepOf(next, 's1')?.error).toBe('Waiting for ServiceAccount "agent-a1-sa" in namespace "ai-agents": step "s1" runs as agent shared/a1, '
      + 'and a pod can only use a ServiceAccount of its own namespace; create "agent-a1-sa" in "ai-agents" (agent-changed makes it only in "shared")')
    // A person has to create it: a Warning.
    expect(plan.transitions).toContainEqual(expect.objectContaining({ kind: 'step.waiting', reason: 'AgentIdentityPending', type: 'Warning', data: expect.objectContaining({ step: 's1' }) }))
  })

  it('holds back only the steps of the agent without an identity', () => {
    const steps = [aStep('s1'), aStep('s2', { agentRef: { name: 'b' } })]
    const agents = agentsOf(anAgent(), anAgent({ name: 'b' }))
    const { plan, wf } = planAndSettle(withSpec({ steps, parallelism: 2 }), T0, { agents, identities: new Set(['ai-agents/b']) })
    expect(started(plan)).toEqual(['s2'])
    expect(phasesOf(wf)).toEqual({ s1: 'Pending', s2: 'Running' })
  })

  it('waits for it before a compensation Job too, then rolls back', () => {
    let run = planAndSettle(withSpec({ steps: aChain(2), failureStrategy: 'rollback' }), T0)
    run = finish(run.wf, T1, { step: 's1' })
    run = finish(run.wf, T2, { step: 's2', state: 'Failed' }, { identities: new Set() })
    expect(run.plan.startJobs).toEqual([])
    expect(complete(run.wf)).toMatchObject({ reason: 'RollbackInProgress', message: expect.stringContaining('Waiting for ServiceAccount "agent-a1-sa"') })
    expect(run.plan.transitions).toContainEqual(expect.objectContaining({ reason: 'AgentIdentityPending', type: 'Normal', data: expect.objectContaining({ step: 's1' }) }))
    expect(planWorkflow(factsFor(run.wf, { identities: new Set() }), T3)).toBe(UNCHANGED)
    run = planAndSettle(run.wf, T3)
    expect(run.plan.startJobs).toEqual([expect.objectContaining({ step: 's1', attempt: 'rollback' })])
  })
})

describe('cost limits', () => {
  it.each<[string, Record<string, unknown>, number, string]>([
    ['costLimitUSD', { costLimitUSD: 1 }, 1.5, 'Total cost $1.50 exceeds limit $1.00'],
    ['purko\'s "$x.xx" costLimit', { costLimit: '$2.50' }, 3, 'Total cost $3.00 exceeds limit $2.50'],
  ])('starts no step of an agent over its %s, with purko\'s message and one Warning', (_, guardrails, total, purko) => {
    const agents = agentsOf(budgeted(guardrails, total))
    const { plan, wf } = planAndSettle(aWorkflow(), T0, { agents })
    expect(plan.startJobs).toEqual([])
    expect(stepOf(wf, 's1')).toMatchObject({ phase: 'Pending', error: expect.stringContaining(purko) })
    expect(stepOf(wf, 's1')?.error).toMatch(/^Waiting for budget of agent "a1": .*kinetic\.dev\/reset-cost/)
    expect(plan.transitions).toContainEqual(expect.objectContaining({ kind: 'step.waiting', reason: 'CostLimitExceeded', type: 'Warning', data: expect.objectContaining({ step: 's1' }) }))
  })

  it.each<[string, Agent]>([
    ['the limit is raised', budgeted({ costLimitUSD: 5 }, 1.5)],
    ['the cost is reset', budgeted({ costLimitUSD: 1 }, 0)],
    ['the limit is removed', anAgent()],
  ])('starts the waiting step once %s', (_, released) => {
    const first = planAndSettle(aWorkflow(), T0, { agents: agentsOf(budgeted({ costLimitUSD: 1 }, 1.5)) })
    const { plan, wf } = planAndSettle(first.wf, T1, { agents: agentsOf(released) })
    expect(started(plan)).toEqual(['s1'])
    expect(stepOf(wf, 's1')).toEqual({ name: 's1', phase: 'Running', jobName: jobOf('s1'), startTime: T1 })
  })

  it('allows a total equal to the limit (purko\'s rule: strictly greater is over)', () => {
    expect(started(planAndSettle(aWorkflow(), T0, { agents: agentsOf(budgeted({ costLimitUSD: 1 }, 1)) }).plan)).toEqual(['s1'])
  })

  it('follows a total that moves while the step waits without announcing the wait again', () => {
    const first = planAndSettle(aWorkflow(), T0, { agents: agentsOf(budgeted({ costLimitUSD: 1 }, 1.5)) })
    const { plan, wf } = planAndSettle(first.wf, T1, { agents: agentsOf(budgeted({ costLimitUSD: 1 }, 2)) })
    expect(stepOf(wf, 's1')?.error).toContain('Total cost $2.00 exceeds limit $1.00')
    expect(plan.transitions).toEqual([])
  })

  it('lets running steps finish and holds back what comes after them', () => {
    const steps = [aStep('s1'), aStep('s2'), aStep('s3', { dependsOn: ['s1'] })]
    const run = planAndSettle(withSpec({ steps, parallelism: 2 }), T0, { agents: agentsOf(budgeted({ costLimitUSD: 1 }, 0)) })
    expect(started(run.plan)).toEqual(['s1', 's2'])
    // s1's own cost takes the agent over the limit in the plan that records it.
    const facts = factsFor(run.wf, { agents: agentsOf(budgeted({ costLimitUSD: 1 }, 0.5)), jobs: [aJobFact({ step: 's1', result: withUsage(10, 20, 0.75) })] })
    const plan = changes(planWorkflow(facts, T1))
    expect(plan.deleteJobs).toEqual([])
    expect(plan.startJobs).toEqual([])
    const next = applyStatus(run.wf, plan)
    expect(phasesOf(next)).toEqual({ s1: 'Succeeded', s2: 'Running', s3: 'Pending' })
    expect(stepOf(next, 's3')?.error).toContain('Total cost $1.25 exceeds limit $1.00')
    // Once the metrics write has landed the agent shows the same total, and nothing changes.
    const recorded = budgeted({ costLimitUSD: 1 }, 1.25, [attemptKey('s1', 0)])
    expect(planWorkflow(factsFor(next, { agents: agentsOf(recorded), outputs: new Map([['s1', plan.outputWrites[0]!.json]]) }), T1)).toBe(UNCHANGED)
  })

  it('does not hold back a compensation: undoing work is not new work', () => {
    let run = planAndSettle(withSpec({ steps: aChain(2), failureStrategy: 'rollback' }), T0)
    run = finish(run.wf, T1, { step: 's1' })
    run = finish(run.wf, T2, { step: 's2', state: 'Failed' }, { agents: agentsOf(budgeted({ costLimitUSD: 1 }, 9)) })
    expect(run.plan.startJobs).toEqual([expect.objectContaining({ step: 's1', attempt: 'rollback' })])
  })
})

describe('finished attempts (agent metrics)', () => {
  it('reports a success with the tokens and cost of its _metrics and the time since the step started', () => {
    const first = planAndSettle(aWorkflow(), T0)
    const { plan } = finish(first.wf, T1, { step: 's1', result: withUsage(100, 20, 0.25, { response: 'ok' }) })
    expect(plan.finishedAttempts).toEqual([{ agentKey: 'ai-agents/a1', key: attemptKey('s1', 0), ok: true, tokens: 120, costUSD: 0.25, latencyMs: 60_000 }])
  })

  it('takes the latency up to when the Job finished, not when the event arrived', () => {
    const first = planAndSettle(aWorkflow(), T0)
    const job = { ...aJobFact({ workflow: first.wf }), finishedAt: '2026-01-01T00:00:42.000Z' }
    const plan = changes(planWorkflow(factsFor(first.wf, { jobs: [job] }), T5))
    expect(plan.finishedAttempts[0]?.latencyMs).toBe(42_000)
  })

  it('reports every failed attempt, also those that are retried, each under its own key', () => {
    let run = planAndSettle(withSpec({ steps: [aStep('s1', { retryPolicy: { maxRetries: 1, backoffSeconds: 1 } })] }), T0)
    const failure = { ok: false as const, class: 'error' as const, error: 'model refused', usage: { tokens: 7, costUSD: 0.01 } }
    run = finish(run.wf, T1, { step: 's1', state: 'Failed', result: failure })
    expect(run.plan.finishedAttempts).toEqual([{ agentKey: 'ai-agents/a1', key: attemptKey('s1', 0), ok: false, tokens: 7, costUSD: 0.01, latencyMs: 60_000 }])
    run = planAndSettle(run.wf, T2)
    expect(started(run.plan)).toEqual(['s1'])
    expect(run.plan.finishedAttempts).toEqual([])
    run = finish(run.wf, T3, { step: 's1', attempt: 1, state: 'Failed' })
    expect(run.plan.finishedAttempts).toEqual([expect.objectContaining({ key: attemptKey('s1', 1), ok: false, tokens: 0, costUSD: 0 })])
    expect(run.wf.status?.phase).toBe('Failed')
  })

  it('reports nothing for a duplicate result, a type-only step or a step that was never started', () => {
    const first = planAndSettle(aWorkflow(), T0)
    const done = finish(first.wf, T1, { step: 's1' })
    const duplicate = planWorkflow(factsFor(done.wf, { jobs: [aJobFact()] }), T2)
    expect(duplicate === UNCHANGED ? [] : duplicate.finishedAttempts).toEqual([])
    const notify = planAndSettle(withSpec({ steps: [aStep('n', { agentRef: undefined, type: 'notification' })] }), T0)
    expect(notify.plan.finishedAttempts).toEqual([])
  })

  it('counts a lost Job as a failed attempt of its agent', () => {
    const first = planAndSettle(aWorkflow(), T0)
    const { plan } = planAndSettle(first.wf, T1, { jobs: [], jobsComplete: true })
    expect(plan.finishedAttempts).toEqual([expect.objectContaining({ key: attemptKey('s1', 0), ok: false })])
  })

  it('counts compensations, failed or not, under the step\'s rollback key', () => {
    let run = planAndSettle(withSpec({ steps: aChain(3), failureStrategy: 'rollback' }), T0)
    run = finish(run.wf, T1, { step: 's1' })
    run = finish(run.wf, T2, { step: 's2' })
    run = finish(run.wf, T3, { step: 's3', state: 'Failed' })
    run = finish(run.wf, T4, { step: 's2', attempt: 'rollback', result: withUsage(1, 2, 0.5) })
    expect(run.plan.finishedAttempts).toEqual([expect.objectContaining({ key: attemptKey('s2', 'rollback'), ok: true, tokens: 3, costUSD: 0.5 })])
    run = finish(run.wf, T5, { step: 's1', attempt: 'rollback', state: 'Failed' })
    expect(run.plan.finishedAttempts).toEqual([expect.objectContaining({ key: attemptKey('s1', 'rollback'), ok: false })])
  })

  it('counts a cross-namespace agent\'s attempts for the agent in its own namespace', () => {
    const wf = withSpec({ steps: [aStep('s1', { agentRef: { name: 'a1', namespace: 'shared' } })] })
    const agents = agentsOf(anAgent({ namespace: 'shared' }))
    const first = planAndSettle(wf, T0, { agents })
    const { plan } = finish(first.wf, T1, { step: 's1' }, { agents })
    expect(plan.finishedAttempts).toEqual([expect.objectContaining({ agentKey: 'shared/a1' })])
  })
})

describe('agentsThatMayStart', () => {
  it('lists the agents of steps not started yet, and none once the run is over', () => {
    const steps = [aStep('s1'), aStep('s2', { agentRef: { name: 'b', namespace: 'shared' }, dependsOn: ['s1'] })]
    const wf = withSpec({ steps })
    expect([...agentsThatMayStart(wf)].sort()).toEqual(['ai-agents/a1', 'shared/b'])
    const running = planAndSettle(wf, T0, { agents: agentsOf(anAgent(), anAgent({ name: 'b', namespace: 'shared' })) }).wf
    expect([...agentsThatMayStart(running)]).toEqual(['shared/b'])
    const failed = finish(running, T1, { step: 's1', state: 'Failed' }).wf
    expect(failed.status?.phase).toBe('Failed')
    expect([...agentsThatMayStart(failed)]).toEqual([])
  })

  it('keeps the agents of succeeded steps under the rollback strategy, for their compensations', () => {
    const wf = withSpec({ steps: aChain(2), failureStrategy: 'rollback' })
    const run = finish(planAndSettle(wf, T0).wf, T1, { step: 's1' }).wf
    expect([...agentsThatMayStart(run)]).toEqual(['ai-agents/a1'])
  })
})
