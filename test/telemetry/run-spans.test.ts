import { describe, expect, it } from 'vitest'
import { approvalSpanId, backoffSpanId, runSpanId, runTraceId, stepSpanId } from '../../shared/telemetry/ids.js'
import { endedWork } from '../../shared/telemetry/run-spans.js'
import type { StepStatus, WorkflowStatus } from '../../shared/schemas/workflow.js'
import { aStep, aWorkflow } from '../fixtures/workflows.js'

const RUN = 'run-1'
const T0 = '2026-01-01T00:00:00Z'
const T1 = '2026-01-01T00:00:10Z'
const T2 = '2026-01-01T00:00:25Z'
const NOW = '2026-01-01T00:00:30Z'
const ms = (t: string) => Date.parse(t)

const running = (name: string, jobName: string, retryCount = 0): StepStatus => ({ name, phase: 'Running', jobName, startTime: T1, retryCount })
const status = (steps: StepStatus[], extra: Partial<WorkflowStatus> = {}): WorkflowStatus => ({ phase: 'Running', runId: RUN, startTime: T0, stepStatuses: steps, ...extra })
const twoSteps = { steps: [aStep('plan'), aStep('publish', { dependsOn: ['plan'] })] }

describe('the spans a status write ends', () => {
  it('ends a step attempt that finished as a child of the run root, keyed by its Job, from Job creation to completion', () => {
    const wf = aWorkflow({ spec: twoSteps, status: status([running('plan', 'wf-plan-run-1')]) })
    const next = status([{ name: 'plan', phase: 'Succeeded', jobName: 'wf-plan-run-1', startTime: T1, completionTime: T2 }])
    const { spans, steps } = endedWork(wf, next, NOW)
    expect(spans).toHaveLength(1)
    expect(spans[0]).toMatchObject({
      name: 'step plan', traceId: runTraceId(RUN), spanId: stepSpanId('wf-plan-run-1'), parentSpanId: runSpanId(RUN),
      startMs: ms(T1), endMs: ms(T2),
      attributes: { 'kinetic.step.name': 'plan', 'kinetic.step.phase': 'Succeeded', 'kinetic.step.attempt': 0, 'k8s.job.name': 'wf-plan-run-1', 'kinetic.agent': 'a1' },
    })
    expect(spans[0]!.error).toBeUndefined()
    // Queued when the run began (it has no dependencies), Job created at its start time.
    expect(spans[0]!.events?.map((e) => [e.name, e.atMs])).toEqual([['queued', ms(T0)], ['job.created', ms(T1)], ['finished', ms(T2)]])
    expect(steps).toEqual([{ phase: 'Succeeded', seconds: 15 }])
  })

  it('marks when the attempt\'s pod started, between the Job\'s creation and the end', () => {
    const wf = aWorkflow({ spec: twoSteps, status: status([running('plan', 'wf-plan-run-1')]) })
    const next = status([{ name: 'plan', phase: 'Succeeded', jobName: 'wf-plan-run-1', startTime: T1, completionTime: T2 }])
    const podStarted = '2026-01-01T00:00:14Z'
    const [span] = endedWork(wf, next, NOW, { podStarts: new Map([['wf-plan-run-1', podStarted]]) }).spans
    expect(span!.events?.map((e) => [e.name, e.atMs])).toEqual([['queued', ms(T0)], ['job.created', ms(T1)], ['pod.started', ms(podStarted)], ['finished', ms(T2)]])
    // Another Job's start says nothing of this attempt.
    const [other] = endedWork(wf, next, NOW, { podStarts: new Map([['wf-plan-run-0', podStarted]]) }).spans
    expect(other!.events?.map((e) => e.name)).not.toContain('pod.started')
  })

  it('ends a retried attempt as an error span named Retrying, then a backoff span until the retry is due; the retry gets a span of its own later', () => {
    const wf = aWorkflow({ spec: twoSteps, status: status([running('plan', 'wf-plan-run-1')]) })
    const due = '2026-01-01T00:00:38Z'
    const retried = status([{ name: 'plan', phase: 'Pending', retryCount: 1, error: 'model overloaded', nextAttemptAt: due }])
    const [span, backoff, ...rest] = endedWork(wf, retried, NOW).spans
    expect(span).toMatchObject({ spanId: stepSpanId('wf-plan-run-1'), endMs: ms(NOW), error: 'model overloaded', attributes: { 'kinetic.step.phase': 'Retrying', 'kinetic.step.retries': 1 } })
    expect(backoff).toMatchObject({
      name: 'backoff plan', traceId: runTraceId(RUN), spanId: backoffSpanId(RUN, 'plan', 1), parentSpanId: runSpanId(RUN),
      startMs: ms(NOW), endMs: ms(due), attributes: { 'kinetic.step.attempt': 1, 'kinetic.step.backoff.seconds': 8 },
    })
    expect(backoff!.error).toBeUndefined()
    expect(rest).toEqual([])
    // The same write planned again (a redelivery) gives the same ids, so a collector keeps one of each.
    expect(endedWork(wf, retried, NOW).spans.map((s) => s.spanId)).toEqual([span!.spanId, backoff!.spanId])
  })

  it('has no backoff span for an attempt that failed for good', () => {
    const wf = aWorkflow({ spec: twoSteps, status: status([running('plan', 'wf-plan-run-1')]) })
    const failed = status([{ name: 'plan', phase: 'Failed', jobName: 'wf-plan-run-1', startTime: T1, completionTime: T2, error: 'boom' }])
    expect(endedWork(wf, failed, NOW).spans.map((s) => s.name)).toEqual(['step plan'])
  })

  it('ends the wait for approval when the approved step starts, from the moment its dependencies finished', () => {
    const before = status([{ name: 'plan', phase: 'Succeeded', completionTime: T1 }, { name: 'publish', phase: 'Pending', error: 'Waiting for human approval' }])
    const wf = aWorkflow({ spec: twoSteps, status: before })
    const next = status([{ name: 'plan', phase: 'Succeeded', completionTime: T1 }, { name: 'publish', phase: 'Running', jobName: 'wf-publish-run-1', startTime: NOW }])
    const spans = endedWork(wf, next, NOW, { approved: ['publish'] }).spans
    expect(spans).toEqual([expect.objectContaining({
      name: 'approval publish', spanId: approvalSpanId(RUN, 'publish'), parentSpanId: runSpanId(RUN), startMs: ms(T1), endMs: ms(NOW),
    })])
  })

  it('ends the run root when the run reaches a final phase, with an error status when it failed', () => {
    const wf = aWorkflow({ spec: twoSteps, status: status([running('plan', 'wf-plan-run-1')]) })
    const next = status([{ name: 'plan', phase: 'Failed', jobName: 'wf-plan-run-1', startTime: T1, completionTime: T2, error: 'boom' }], {
      phase: 'Failed', completionTime: T2, message: 'Step plan failed', failedSteps: 1, totalSteps: 2,
    })
    const { spans, run } = endedWork(wf, next, NOW)
    const root = spans.find((s) => s.spanId === runSpanId(RUN))
    expect(root).toMatchObject({ name: 'run wf', traceId: runTraceId(RUN), startMs: ms(T0), endMs: ms(T2), error: 'Step plan failed', attributes: { 'kinetic.run.phase': 'Failed', 'kinetic.run.steps.failed': 1 } })
    expect(root!.parentSpanId).toBeUndefined()
    expect(run).toEqual({ phase: 'Failed', seconds: 25 })
  })

  it('ends nothing when re-planned on its own output (a redelivery writes no second span)', () => {
    const next = status([{ name: 'plan', phase: 'Succeeded', jobName: 'wf-plan-run-1', startTime: T1, completionTime: T2 }], { phase: 'Succeeded', completionTime: T2 })
    expect(endedWork(aWorkflow({ spec: twoSteps, status: next }), next, NOW)).toEqual({ spans: [], steps: [] })
  })

  it('ends nothing of an older run: a rerun starts its own trace', () => {
    const wf = aWorkflow({ spec: twoSteps, status: { ...status([running('plan', 'wf-plan-run-0')]), runId: 'run-0' } })
    const next = status([{ name: 'plan', phase: 'Running', jobName: 'wf-plan-run-1', startTime: NOW }])
    expect(endedWork(wf, next, NOW).spans).toEqual([])
  })
})
