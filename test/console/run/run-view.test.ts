import { describe, expect, it } from 'vitest'
import { currentRunId } from '../../../shared/workflow/plan/run-status.js'
import { stepListFingerprint } from '../../../shared/workflow/plan/step-states.js'
import { outputText, phaseCounts, runView, workflowView } from '../../../shared/console/run/run-view.js'
import {
  ANNOTATION_RERUN, ANNOTATION_TEMPLATE, ANNOTATION_TRIGGER_SOURCE, ANNOTATION_TRIGGER_TYPE, ANNOTATION_WORKFLOW_TEMPLATE,
} from '../../../shared/schemas/labels.js'
import type { StepStatus, Workflow } from '../../../shared/schemas/workflow.js'
import { aChain, aStep, aWorkflow } from '../../fixtures/workflows.js'

const NOW = new Date('2026-12-01T12:00:00.000Z')

function running(steps: StepStatus[], extra: Partial<Workflow['spec']> = {}): Workflow {
  const wf = aWorkflow({ spec: { steps: [aStep('build'), aStep('test', { dependsOn: ['build'] }), aStep('ship', { dependsOn: ['test'] })], ...extra } })
  wf.status = { phase: 'Running', runId: currentRunId(wf), startTime: '2026-12-01T11:50:00Z', stepStatuses: steps, completedSteps: 1, totalSteps: 3 }
  return wf
}

describe('the view of a run', () => {
  it('shows a step waiting for approval as Waiting, in words, with what it waits for', () => {
    const view = runView(running([{ name: 'build', phase: 'Pending', error: 'Waiting for human approval (set annotation purko.io/approve-build=true)' }]), NOW)
    expect(view.steps[0]).toMatchObject({ phase: 'Waiting', label: 'Waiting for approval', awaitingApproval: true, reason: expect.stringContaining('approve-build') })
  })

  it('shows a retry backoff as Retry pending with the attempt it will make and the last error', () => {
    const view = runView(running([{ name: 'build', phase: 'Pending', retryCount: 2, nextAttemptAt: '2026-12-01T12:01:00Z', error: 'exit 1\nstack' }]), NOW)
    expect(view.steps[0]).toMatchObject({ phase: 'Waiting', label: 'Retry pending', retries: 2, attempts: 2 })
    expect(view.steps[0]!.reason).toBe('attempt 3 after 2026-12-01T12:01:00Z; last error: exit 1')
  })

  it.each([
    ['a false condition', undefined, 'its condition is false'],
    ['a cancelled run', 'Cancelled', 'Cancelled'],
    ['a condition that failed to evaluate', 'Condition error: unknown name x', 'Condition error: unknown name x'],
  ])('says why a step was skipped: %s', (_, error, reason) => {
    const view = runView(running([{ name: 'build', phase: 'Skipped', ...(error ? { error } : {}) }]), NOW)
    expect(view.steps[0]).toMatchObject({ phase: 'Skipped', label: 'Skipped', reason, attempts: 0 })
  })

  it('times a running step until now and a finished one until it finished, and counts attempts', () => {
    const view = runView(running([
      { name: 'build', phase: 'Succeeded', startTime: '2026-12-01T11:50:00Z', completionTime: '2026-12-01T11:52:30Z', jobName: 'wf-build-1' },
      { name: 'test', phase: 'Running', startTime: '2026-12-01T11:58:00Z', retryCount: 1 },
    ]), NOW)
    expect(view.steps.map((s) => [s.name, s.durationMs, s.attempts])).toEqual([['build', 150_000, 1], ['test', 120_000, 2], ['ship', undefined, 0]])
    expect(view.steps[0]!.jobName).toBe('wf-build-1')
    expect(view.steps[2]).toMatchObject({ label: 'Not started', reason: 'after test' })
    expect(view.durationMs).toBe(600_000)
    expect(view.progress).toEqual({ completed: 1, failed: 0, total: 3 })
  })

  it('keeps a failed step\'s whole error and puts its first line in the notes', () => {
    const view = runView(running([{ name: 'build', phase: 'Failed', error: 'exit 2\nline two' }]), NOW)
    expect(view.steps[0]).toMatchObject({ error: 'exit 2\nline two', reason: 'exit 2' })
  })

  it('reads the one-character record of a large run', () => {
    const wf = aWorkflow({ spec: { steps: aChain(300) } })
    const phases = 'S'.repeat(150) + 'R' + '-'.repeat(149)
    // The fingerprint makes the record valid for exactly this step list.
    wf.status = { phase: 'Running', runId: currentRunId(wf), stepPhases: `${stepListFingerprint(wf.spec.steps)}:${phases}` }
    const counts = phaseCounts(runView(wf, NOW).steps)
    expect(counts).toEqual([['Running', 1], ['Pending', 149], ['Succeeded', 150]])
  })

  it('shows a rerun about to start as not started, as run-control reads it', () => {
    const wf = running([{ name: 'build', phase: 'Failed', error: 'boom' }])
    wf.metadata.annotations = { [ANNOTATION_RERUN]: '2026-12-01T11:59:00Z' }
    const view = runView(wf, NOW)
    expect(view.phase).toBe('Pending')
    expect(view.steps[0]).toMatchObject({ phase: 'Pending', label: 'Not started' })
  })

  it('names the template and trigger a run came from, and lists its parameters sorted', () => {
    const wf = running([], { parameters: { zone: 'eu', branch: 'main' } })
    wf.metadata.annotations = { [ANNOTATION_WORKFLOW_TEMPLATE]: 'nightly', [ANNOTATION_TRIGGER_TYPE]: 'schedule', [ANNOTATION_TRIGGER_SOURCE]: '0 2 * * *' }
    const view = runView(wf, NOW)
    expect(view).toMatchObject({ template: 'nightly', trigger: { type: 'schedule', source: '0 2 * * *' }, parameters: [['branch', 'main'], ['zone', 'eu']] })
  })

  it('reads a template as a template: its schedule and runs, no steps to draw', () => {
    const wf = aWorkflow({ annotations: { [ANNOTATION_TEMPLATE]: 'true' }, spec: { trigger: { schedule: { cron: '0 2 * * *', suspend: true } } } })
    wf.status = { recentRuns: [{ name: 'wf-1', phase: 'Succeeded' }], activeRuns: 0 }
    const view = workflowView(wf, NOW)
    expect(view).toMatchObject({ kind: 'template', schedule: { cron: '0 2 * * *', suspended: true }, recentRuns: [{ name: 'wf-1' }] })
  })
})

describe('a step output as shown', () => {
  it('pretty-prints JSON text and objects', () => {
    expect(outputText('{"a":1,"b":[2]}').text).toBe('{\n  "a": 1,\n  "b": [\n    2\n  ]\n}')
    expect(outputText({ ok: true }).text).toBe('{\n  "ok": true\n}')
  })

  it('shows text that is not JSON as it is', () => {
    expect(outputText('plain words')).toEqual({ text: 'plain words' })
  })

  it('cuts at 16 KiB and says how many bytes were left out', () => {
    const big = JSON.stringify('x'.repeat(20_000))
    const shown = outputText(big)
    expect(Buffer.byteLength(shown.text)).toBe(16 * 1024)
    expect(shown.truncatedBytes).toBe(20_002 - 16 * 1024)
  })

  it('never cuts a character in half', () => {
    const shown = outputText('é'.repeat(10), 5)
    expect(shown.text).toBe('éé')
    expect(shown.truncatedBytes).toBe(16)
  })
})
