import { describe, expect, it } from 'vitest'
import {
  decodeStepStates, DETAILED_STATUS_MAX_STEPS, encodeStepStates, stepListFingerprint, type StepState,
} from '../../shared/workflow/plan/step-states.js'
import type { StepPhase, WorkflowStep } from '../../shared/schemas/workflow.js'
import { aChain, aWorkflow } from '../fixtures/workflows.js'

const T = '2026-01-01T00:00:00.000Z'
const PHASES: (StepPhase | undefined)[] = [undefined, 'Pending', 'Running', 'Succeeded', 'Failed', 'Skipped', 'RollingBack', 'RolledBack']

/** Step i gets phase PHASES[i % 8], with the details a planner would keep for that phase. */
function statesFor(steps: readonly WorkflowStep[]): Map<string, StepState> {
  return new Map(steps.map((step, i) => {
    const phase = PHASES[i % PHASES.length]
    const state: StepState = { retryCount: 0 }
    if (phase) state.phase = phase
    if (phase === 'Running') Object.assign(state, { jobName: `wf-${step.name}-run`, startTime: T, retryCount: 2 })
    if (phase === 'Pending') Object.assign(state, { error: 'Waiting for human approval', nextAttemptAt: T, retryCount: 1 })
    if (phase === 'Failed') Object.assign(state, { error: 'boom', completionTime: T, jobName: `wf-${step.name}-run` })
    if (phase === 'RollingBack') Object.assign(state, { compensationJobName: `wf-${step.name}-rb` })
    if (phase === 'Succeeded' || phase === 'Skipped' || phase === 'RolledBack') state.completionTime = T
    if (phase === 'Succeeded') state.outputRef = 'wf-outputs'
    return [step.name, state]
  }))
}

function roundTrip(steps: readonly WorkflowStep[], states: Map<string, StepState>): Map<string, StepState> {
  const encoded = encodeStepStates(steps, states)
  return decodeStepStates(aWorkflow({ spec: { steps: [...steps] }, status: encoded }))
}

describe('encodeStepStates and decodeStepStates', () => {
  it('keep every detail of a run with at most 200 steps and write no stepPhases', () => {
    const steps = aChain(DETAILED_STATUS_MAX_STEPS)
    const states = statesFor(steps)
    const encoded = encodeStepStates(steps, states)
    expect(encoded.stepPhases).toBeUndefined()
    expect(encoded.stepStatuses).toHaveLength(steps.length - steps.length / PHASES.length)
    expect(roundTrip(steps, states)).toEqual(states)
  })

  it('keep phases of finished steps as one character each above 200 steps', () => {
    const steps = aChain(DETAILED_STATUS_MAX_STEPS + 8)
    const encoded = encodeStepStates(steps, statesFor(steps))
    // A fingerprint of the step list, a colon, then one character per step.
    expect(encoded.stepPhases).toHaveLength(9 + steps.length)
    expect(encoded.stepPhases?.slice(0, 9)).toBe(`${stepListFingerprint(steps)}:`)
    expect(encoded.stepPhases?.slice(9, 17)).toBe('-PRSFKBD')
    // Only steps that are not finished keep their details; Failed is finished.
    expect(new Set(encoded.stepStatuses.map((s) => s.phase))).toEqual(new Set(['Pending', 'Running', 'RollingBack']))
  })

  it('round-trip phases exactly above 200 steps and the details of unfinished steps', () => {
    const steps = aChain(DETAILED_STATUS_MAX_STEPS + 8)
    const states = statesFor(steps)
    const decoded = roundTrip(steps, states)
    for (const [name, state] of states) {
      const finished = state.phase === 'Succeeded' || state.phase === 'Skipped' || state.phase === 'RolledBack' || state.phase === 'Failed'
      expect(decoded.get(name)).toEqual(finished ? { phase: state.phase, retryCount: 0 } : state)
    }
  })

  it.each([DETAILED_STATUS_MAX_STEPS, DETAILED_STATUS_MAX_STEPS + 1])('is a fixed point when re-encoded (%i steps)', (count) => {
    const steps = aChain(count)
    const first = encodeStepStates(steps, statesFor(steps))
    const again = encodeStepStates(steps, decodeStepStates(aWorkflow({ spec: { steps }, status: first })))
    expect(again).toEqual(first)
  })

  it('reads a status without step information as every step not started', () => {
    const steps = aChain(3)
    const decoded = decodeStepStates(aWorkflow({ spec: { steps } }))
    expect([...decoded.values()]).toEqual([{ retryCount: 0 }, { retryCount: 0 }, { retryCount: 0 }])
  })

  it('ignores status entries of steps no longer in the spec', () => {
    const wf = aWorkflow({ status: { stepStatuses: [{ name: 'gone', phase: 'Running' }, { name: 's1', phase: 'Succeeded' }] } })
    expect([...decodeStepStates(wf)]).toEqual([['s1', { phase: 'Succeeded', retryCount: 0 }]])
  })

  it('keeps a 10,000-step status with a thousand failures small', () => {
    const steps = aChain(10_000)
    const states = new Map<string, StepState>(steps.map((s, i) => [s.name, i < 1_000
      ? { phase: 'Failed', error: 'e'.repeat(1024), jobName: `wf-${s.name}-run`, completionTime: T, retryCount: 3 }
      : { retryCount: 0 }]))
    expect(JSON.stringify(encodeStepStates(steps, states)).length).toBeLessThan(64 * 1024)
  })

  it('keeps a 10,000-step status small', () => {
    const steps = aChain(10_000)
    const states = new Map<string, StepState>(steps.map((s, i) => [s.name, { phase: i < 9_000 ? 'Succeeded' : 'Pending', retryCount: 0 }]))
    states.set('s9001', { phase: 'Running', jobName: 'wf-s9001-abc', startTime: T, retryCount: 0 })
    const bytes = JSON.stringify(encodeStepStates(steps, states)).length
    // Pending steps are listed individually; even so the whole thing stays far below etcd's limit.
    expect(bytes).toBeLessThan(64 * 1024)
  })
})
