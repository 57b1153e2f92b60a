/**
 * The working copy of one Workflow plan: the run's step states, phase and status as the plan
 * moves them, the writes collected so far, and the small moves every part of the planner makes
 * (set the phase, stop a Job, announce a transition). `finish` turns it into the plan.
 */
import type { StepPhase, Workflow, WorkflowPhase, WorkflowStatus, WorkflowStep } from '../../schemas/workflow.js'
import { ANNOTATION_RUN_ID } from '../../schemas/labels.js'
import { setCondition } from '../../core/conditions.js'
import { isFinishedStepPhase, runControlDigest } from './run-status.js'
import { decodeStepStates, encodeStepStates, type StepState } from './step-states.js'
import { sameJson } from './json-values.js'
import { UNCHANGED } from '../../core/plan.js'
import { runTransition, stepOf, type RunHappening } from './transitions.js'
import type { WorkflowPlan } from './types.js'

/** Mutable working copy of one plan; every method is pure with respect to the outside world. */
export class RunBuilder {
  readonly steps: readonly WorkflowStep[]
  readonly stepsByName: Map<string, WorkflowStep>
  readonly states: Map<string, StepState>
  phase: WorkflowPhase | undefined
  status: WorkflowStatus
  readonly plan: WorkflowPlan
  readonly annotations: Readonly<Record<string, string>>

  constructor(readonly workflow: Workflow, readonly runId: string, previous: WorkflowStatus, readonly now: string, readonly order: readonly number[]) {
    this.steps = workflow.spec.steps
    this.stepsByName = new Map(this.steps.map((step) => [step.name, step]))
    this.annotations = workflow.metadata.annotations ?? {}
    this.status = { ...previous }
    this.phase = previous.phase
    this.states = decodeStepStates({ ...workflow, status: previous })
    this.plan = { runId, deleteJobs: [], startJobs: [], outputWrites: [], finishedAttempts: [], annotations: null, status: null, transitions: [], cancelRuns: [] }
  }

  start(rerun: boolean, warning?: string): void {
    this.resetForNewRun()
    this.phase = 'Running'
    if (this.annotations[ANNOTATION_RUN_ID] !== this.runId) this.plan.annotations = { [ANNOTATION_RUN_ID]: this.runId }
    this.transition({
      kind: 'run.started', type: 'Normal', reason: rerun ? 'RunRestarted' : 'RunStarted',
      message: `Started run ${this.runId} of ${this.steps.length} steps`,
    })
    if (warning) this.transition({ kind: 'run.started', type: 'Warning', reason: 'UnknownConcurrencyPolicy', message: warning })
  }

  /** A fresh run's status: only the fields a template's own reconciler keeps survive. */
  resetForNewRun(): void {
    this.status = { ...templateFields(this.workflow.status), runId: this.runId, startTime: this.now }
    for (const step of this.steps) this.states.set(step.name, { retryCount: 0 })
  }

  /** Closes the plan: counters, step states, conditions, and UNCHANGED when nothing moved. */
  finish(): WorkflowPlan | typeof UNCHANGED {
    const status: WorkflowStatus = { ...this.status }
    status.phase = this.phase ?? 'Running'
    status.runId = this.runId
    status.observedGeneration = this.workflow.metadata.generation
    status.runControl = runControlDigest(this.annotations)
    status.totalSteps = this.steps.length
    status.completedSteps = this.countPhase('Succeeded') + this.countPhase('Skipped')
    status.failedSteps = this.countPhase('Failed')
    const encoded = encodeStepStates(this.steps, this.states)
    status.stepStatuses = encoded.stepStatuses
    if (encoded.stepPhases !== undefined) status.stepPhases = encoded.stepPhases
    else delete status.stepPhases
    if (!status.conditions?.some((condition) => condition.type === 'SpecValid' && condition.status === 'False')) {
      status.conditions = setCondition(status.conditions, {
        type: 'SpecValid', status: 'True', reason: 'Valid', message: 'The step graph is valid',
        observedGeneration: this.workflow.metadata.generation,
      }, this.now)
    }
    const unchanged = sameJson(status, this.workflow.status)
    const writes = this.plan.deleteJobs.length + this.plan.startJobs.length + this.plan.outputWrites.length + this.plan.finishedAttempts.length
    if (unchanged && writes === 0 && this.plan.annotations === null) return UNCHANGED
    return { ...this.plan, status: unchanged ? null : status }
  }

  setPhase(phase: WorkflowPhase, reason: string, message: string): void {
    this.phase = phase
    this.status.message = message
    this.status.conditions = setCondition(this.status.conditions, {
      type: 'Complete', status: phase === 'Succeeded' ? 'True' : 'False', reason, message,
    }, this.now)
  }

  /** Records how the run is getting on without ending it (rolling back stays rolling back). */
  summarise(reason: string, message: string): void {
    this.setPhase(this.phase === 'RollingBack' ? 'RollingBack' : 'Running', reason, message)
  }

  /** Marks every step that has not finished Skipped with `error`, stopping running ones when asked. */
  skipUnfinished(killRunning: boolean, error: string): void {
    for (const [name, state] of this.states) {
      if (state.phase === 'Running' && killRunning) {
        this.killJobOf(state)
        this.states.set(name, { ...state, phase: 'Skipped', completionTime: this.now, error })
      } else if (state.phase === 'Pending' || state.phase === undefined) {
        this.states.set(name, { ...state, phase: 'Skipped', completionTime: this.now, error })
      }
    }
  }

  /** Deletes the Jobs of every running or compensating step in `states`. */
  killJobsOf(states: ReadonlyMap<string, StepState>): void {
    for (const state of states.values()) if (state.phase === 'Running' || state.phase === 'RollingBack') this.killJobOf(state)
  }

  /** Deletes the Job of one running or compensating step. */
  killJobOf(state: StepState): void {
    const job = state.phase === 'RollingBack' ? state.compensationJobName : state.jobName
    // A Job this very plan was about to create is simply not created.
    const planned = this.plan.startJobs.findIndex((start) => start.jobName === job)
    if (planned >= 0) {
      const [start] = this.plan.startJobs.splice(planned, 1)
      const announced = this.plan.transitions.findIndex((transition) => transition.kind === 'step.started' && stepOf(transition) === start!.step)
      if (announced >= 0) this.plan.transitions.splice(announced, 1)
      return
    }
    if (job && !this.plan.deleteJobs.includes(job)) this.plan.deleteJobs.push(job)
  }

  /** Whether every dependency of `step` is done well enough for it to start. */
  dependenciesMet(step: WorkflowStep, continueOnError: boolean): boolean {
    for (const dependency of step.dependsOn ?? []) {
      const phase = this.states.get(dependency)?.phase
      if (phase === 'Succeeded' || phase === 'Skipped') continue
      if (continueOnError && phase === 'Failed') continue
      return false
    }
    return true
  }

  countPhase(phase: StepPhase): number {
    let count = 0
    for (const state of this.states.values()) if (state.phase === phase) count++
    return count
  }

  failedCount(): number {
    return this.countPhase('Failed')
  }

  /** How many steps have finished, whichever way. */
  countFinished(): number {
    let count = 0
    for (const state of this.states.values()) if (isFinishedStepPhase(state.phase)) count++
    return count
  }

  /** Announces what happened, as a transition of this run. */
  transition(what: RunHappening): void {
    this.plan.transitions.push(runTransition(this.runId, what))
  }
}

/** Status fields a template's own reconciler writes; a run of the same object keeps them when it (re)starts. */
const TEMPLATE_FIELDS = ['lastTriggerTime', 'lastScheduleTime', 'nextRunTime', 'activeRuns', 'recentRuns'] as const

/** The status fields of `status` a template's reconciler owns. */
export function templateFields(status: WorkflowStatus | undefined): WorkflowStatus {
  const kept: WorkflowStatus = {}
  for (const field of TEMPLATE_FIELDS) if (status?.[field] !== undefined) (kept as Record<string, unknown>)[field] = status[field]
  return kept
}
