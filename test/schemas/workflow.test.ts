import { describe, expect, it } from 'vitest'
import { WorkflowSchema, WorkflowStatusSchema, STEP_PHASES, WORKFLOW_PHASES, FAILURE_STRATEGIES } from '../../shared/schemas/workflow.js'

const minimal = {
  apiVersion: 'purko.io/v1alpha1',
  kind: 'Workflow',
  metadata: { name: 'wf', namespace: 'ai-agents' },
  spec: { steps: [{ name: 'plan', agentRef: { name: 'planner' } }, { name: 'ship', type: 'notification', retryPolicy: { backoff: 'exponential' } }] },
}

describe('WorkflowSchema', () => {
  it('applies the defaults of the CRD: parallelism 1, failFast, and maxRetries 3 inside a retryPolicy', () => {
    const wf = WorkflowSchema.parse(minimal)
    expect(wf.spec.parallelism).toBe(1)
    expect(wf.spec.failureStrategy).toBe('failFast')
    expect(wf.spec.steps[1]!.retryPolicy).toEqual({ maxRetries: 3, backoff: 'exponential' })
    expect(wf.spec.steps[0]!.retryPolicy).toBeUndefined()
  })

  it('keeps values that were set instead of the defaults', () => {
    const wf = WorkflowSchema.parse({ ...minimal, spec: { ...minimal.spec, parallelism: 4, failureStrategy: 'rollback' } })
    expect([wf.spec.parallelism, wf.spec.failureStrategy]).toEqual([4, 'rollback'])
  })

  it('keeps fields it does not know at every level purko preserves them', () => {
    const wf = WorkflowSchema.parse({
      ...minimal,
      extra: 1,
      metadata: { ...minimal.metadata, managedFields: [{ manager: 'kubectl' }] },
      spec: { ...minimal.spec, retryPolicy: { maxRetries: 2 }, steps: [{ name: 'plan', type: 'x', future: true, agentRef: { name: 'a', extra: 'y' } }] },
      status: { phase: 'Running', custom: 'z', stepStatuses: [{ name: 'plan', phase: 'Running', podName: 'p' }] },
    })
    expect(wf).toMatchObject({ extra: 1, metadata: { managedFields: [{ manager: 'kubectl' }] } })
    expect(wf.spec).toMatchObject({ retryPolicy: { maxRetries: 2 }, steps: [{ future: true, agentRef: { extra: 'y' } }] })
    expect(wf.status).toMatchObject({ custom: 'z', stepStatuses: [{ podName: 'p' }] })
  })

  it.each([
    ['a duration string', '1h30m'],
    ['an object', { timeoutSeconds: 5400 }],
  ])('accepts %s as spec.timeout', (_, timeout) => {
    expect(WorkflowSchema.parse({ ...minimal, spec: { ...minimal.spec, timeout } }).spec.timeout).toEqual(timeout)
  })

  it('takes the webhook secret as an object reference', () => {
    const trigger = { type: 'webhook', webhook: { path: '/hooks/wf', secret: { name: 'hmac', key: 'token' } } }
    expect(WorkflowSchema.parse({ ...minimal, spec: { ...minimal.spec, trigger } }).spec.trigger).toEqual(trigger)
  })

  it.each<[string, unknown]>([
    ['an unknown failureStrategy', { ...minimal.spec, failureStrategy: 'sometimes' }],
    ['a step without a name', { steps: [{ type: 'x' }] }],
    ['no steps at all', { steps: [] }],
    ['parallelism 0', { ...minimal.spec, parallelism: 0 }],
  ])('rejects %s', (_, spec) => {
    expect(WorkflowSchema.safeParse({ ...minimal, spec }).success).toBe(false)
  })

  it('fills in apiVersion and kind when a caller builds an object without them', () => {
    const { apiVersion: _a, kind: _k, ...bare } = minimal
    expect(WorkflowSchema.parse(bare)).toMatchObject({ apiVersion: 'purko.io/v1alpha1', kind: 'Workflow' })
  })

  it('offers all four failure strategies and the phases Kinetic writes', () => {
    expect(FAILURE_STRATEGIES).toEqual(['failFast', 'continueOnError', 'stop', 'rollback'])
    expect(WORKFLOW_PHASES).toContain('RollingBack')
    expect(STEP_PHASES).toContain('RolledBack')
  })
})

describe('WorkflowStatusSchema', () => {
  it("reads a status with Kinetic's run bookkeeping and conditions", () => {
    const status = {
      phase: 'Running',
      observedGeneration: 3,
      runId: 'r-1',
      runControl: 'abc',
      totalSteps: 2,
      completedSteps: 1,
      conditions: [{ type: 'Complete', status: 'False', lastTransitionTime: '2026-01-01T00:00:00Z', reason: 'Running', message: 'm' }],
      stepStatuses: [{ name: 'plan', phase: 'Failed', retryCount: 1, nextAttemptAt: '2026-01-01T00:01:00Z', outputRef: 'wf-outputs', jobName: 'wf-plan-g3' }],
    }
    expect(WorkflowStatusSchema.parse(status)).toEqual(status)
  })

  it.each<[string, unknown]>([
    ['a step phase outside the enum', { stepStatuses: [{ name: 'a', phase: 'Paused' }] }],
    ['a condition status other than True/False/Unknown', { conditions: [{ type: 'X', status: 'Yes', lastTransitionTime: '2026-01-01T00:00:00Z' }] }],
    ['a step status without a name', { stepStatuses: [{ phase: 'Running' }] }],
  ])('rejects %s', (_, status) => {
    expect(WorkflowStatusSchema.safeParse(status).success).toBe(false)
  })
})
