import type { StepPhase, StepStatus, Workflow, WorkflowStep } from '../../schemas/workflow.js'

/**
 * Above this many steps, finished steps are kept only as one character each in
 * `status.stepPhases`, so a 10,000-step run's status stays a few kilobytes instead of
 * megabytes. Smaller runs list every step in `stepStatuses`, as purko does.
 */
export const DETAILED_STATUS_MAX_STEPS = 200

/** The planner's working view of one step of the current run. */
export interface StepState {
  phase?: StepPhase
  jobName?: string
  startTime?: string
  completionTime?: string
  error?: string
  retryCount: number
  nextAttemptAt?: string
  outputRef?: string
  compensationJobName?: string
  /** What the step's attempt should know about (an LLMProvider fallback, an unregistered MCP server). */
  message?: string
}

const PHASE_CODES: Record<StepPhase, string> = {
  Pending: 'P', Running: 'R', Succeeded: 'S', Failed: 'F', Skipped: 'K', RollingBack: 'B', RolledBack: 'D',
}
const CODE_PHASES = new Map(Object.entries(PHASE_CODES).map(([phase, code]) => [code, phase as StepPhase]))
const NOT_STARTED = '-'

/**
 * Pure: a short fingerprint of the step names in order. The compact record is positional, so it
 * carries this fingerprint and is only read back against the same step list.
 */
export function stepListFingerprint(steps: readonly WorkflowStep[]): string {
  // FNV-1a (32-bit): cheap on 10,000 names, and a change detector needs no cryptography.
  let hash = 0x811c9dc5
  for (const step of steps) {
    for (let i = 0; i < step.name.length; i++) {
      hash ^= step.name.charCodeAt(i)
      hash = Math.imul(hash, 0x01000193)
    }
    hash ^= 0x0a
    hash = Math.imul(hash, 0x01000193)
  }
  return (hash >>> 0).toString(16).padStart(8, '0')
}

/** Pure: true when the compact record was written for a different step list (the spec was edited mid-run). */
export function stepListChanged(workflow: Workflow): boolean {
  const compact = workflow.status?.stepPhases
  if (typeof compact !== 'string' || compact.length === 0) return false
  const match = /^([0-9a-f]{8}):/.exec(compact)
  return match !== null && match[1] !== stepListFingerprint(workflow.spec.steps)
}

/** Pure: step name → state, read from `stepStatuses` and the compact `stepPhases`. */
export function decodeStepStates(workflow: Workflow): Map<string, StepState> {
  const steps = workflow.spec.steps
  const states = new Map<string, StepState>()
  const stored = typeof workflow.status?.stepPhases === 'string' && !stepListChanged(workflow) ? workflow.status.stepPhases : ''
  const compact = /^[0-9a-f]{8}:/.test(stored) ? stored.slice(9) : stored
  steps.forEach((step, i) => {
    const phase = CODE_PHASES.get(compact[i] ?? NOT_STARTED)
    states.set(step.name, phase ? { phase, retryCount: 0 } : { retryCount: 0 })
  })
  for (const entry of workflow.status?.stepStatuses ?? []) {
    if (!states.has(entry.name)) continue
    states.set(entry.name, fromStatus(entry))
  }
  return states
}

/** Pure: the status fields that carry step states, in spec order (compact above the threshold). */
export function encodeStepStates(
  steps: readonly WorkflowStep[],
  states: ReadonlyMap<string, StepState>,
): { stepStatuses: StepStatus[]; stepPhases?: string } {
  const detailed = steps.length <= DETAILED_STATUS_MAX_STEPS
  const stepStatuses: StepStatus[] = []
  let stepPhases = ''
  for (const step of steps) {
    const state = states.get(step.name)
    stepPhases += state?.phase ? PHASE_CODES[state.phase] : NOT_STARTED
    if (!state?.phase) continue
    // Failed is finished too: under continueOnError thousands of failed steps, each with up to
    // 1 KiB of error text, would otherwise outgrow etcd's object limit. Events keep the errors.
    if (!detailed && (state.phase === 'Succeeded' || state.phase === 'Skipped' || state.phase === 'RolledBack' || state.phase === 'Failed')) continue
    stepStatuses.push(toStatus(step.name, state))
  }
  return detailed ? { stepStatuses } : { stepStatuses, stepPhases: `${stepListFingerprint(steps)}:${stepPhases}` }
}

function fromStatus(entry: StepStatus): StepState {
  const state: StepState = { retryCount: entry.retryCount ?? 0 }
  if (entry.phase) state.phase = entry.phase
  if (entry.jobName) state.jobName = entry.jobName
  if (entry.startTime) state.startTime = entry.startTime
  if (entry.completionTime) state.completionTime = entry.completionTime
  if (entry.error) state.error = entry.error
  if (entry.nextAttemptAt) state.nextAttemptAt = entry.nextAttemptAt
  if (entry.outputRef) state.outputRef = entry.outputRef
  if (entry.compensationJobName) state.compensationJobName = entry.compensationJobName
  if (entry.message) state.message = entry.message
  return state
}

function toStatus(name: string, s: StepState): StepStatus {
  const entry: StepStatus = { name }
  if (s.phase) entry.phase = s.phase
  if (s.jobName) entry.jobName = s.jobName
  if (s.startTime) entry.startTime = s.startTime
  if (s.completionTime) entry.completionTime = s.completionTime
  if (s.error) entry.error = s.error
  if (s.retryCount > 0) entry.retryCount = s.retryCount
  if (s.nextAttemptAt) entry.nextAttemptAt = s.nextAttemptAt
  if (s.outputRef) entry.outputRef = s.outputRef
  if (s.compensationJobName) entry.compensationJobName = s.compensationJobName
  if (s.message) entry.message = s.message
  return entry
}
