import { overBudget, costLimitMessage } from '../agent/cost-limit.js'
import { usageFromJson, type AttemptRecord } from '../agent/metrics.js'
import { agentServiceAccountName } from '../agent/names.js'
import { notSharedMessage } from '../agent/sharing.js'
import type { Agent } from '../schemas/agent.js'
import type { Condition, StepPhase, Workflow, WorkflowPhase, WorkflowStatus, WorkflowStep } from '../schemas/workflow.js'
import {
  ANNOTATION_APPROVE_PREFIX, ANNOTATION_CANCEL, ANNOTATION_CANCEL_REASON, ANNOTATION_DECISION_PREFIX, ANNOTATION_DENY_PREFIX,
  ANNOTATION_RERUN, ANNOTATION_REQUESTED_BY, ANNOTATION_RUN_ID, ANNOTATION_RESET_COST, ANNOTATION_TEMPLATE,
} from '../schemas/labels.js'
import { admitRun, type Admission, type RunCancel } from '../triggers/concurrency.js'
import { evaluateCondition } from './condition.js'
import { setCondition } from './conditions.js'
import { topologicalOrder, validateSteps } from './dag.js'
import { parseGoDuration, formatGoDuration } from './duration.js'
import type { JobFact, StepResult } from './job-facts.js'
import { stepJobName } from './job-builder.js'
import type { OutputWrite } from './outputs.js'
import { retryDecision } from './retry.js'
import { runIdFor } from './run-id.js'
import { currentRunId, isFinishedStepPhase, isQueuedStatus, isRetriableSpecFailure, isTerminalPhase, mayNeedWork, runControlDigest } from './run-status.js'
import { decodeStepStates, DETAILED_STATUS_MAX_STEPS, encodeStepStates, stepListChanged, type StepState } from './step-states.js'

/**
 * Most step Jobs one run keeps going at once, whatever `spec.parallelism` asks. Each running step
 * is a status entry and each start an API call inside one event, so an unbounded value would
 * make status and requests outgrow what the API server accepts.
 */
export const MAX_PARALLELISM = 200

export { currentRunId, isTerminalPhase, mayNeedWork, runControlDigest }

/** Workflow deadline when `spec.timeout` is not set (purko's 30 minutes). */
export const DEFAULT_WORKFLOW_TIMEOUT_SECONDS = 30 * 60

/** At most this many waiting steps (missing agent, approval) are marked Pending with their reason. */
const MAX_WAITING_STEPS_SHOWN = 100

/** Everything the planner knows: fresh state from the API server plus facts from events. */
export interface WorkflowFacts {
  workflow: Workflow
  /** Step Jobs seen (from the event, or from a list); results filled where the planner needs them. */
  jobs: readonly JobFact[]
  /** True when `jobs` is every Job of the current run, so a missing Job really is missing. */
  jobsComplete: boolean
  /** Agents by `namespace/name`. */
  agents: ReadonlyMap<string, Agent>
  /**
   * Agents (by `namespace/name`) of other namespaces that steps name but that do not allow the
   * Workflow's namespace (`kinetic.dev/allow-workflows-from`): their steps wait, saying so.
   */
  unsharedAgents?: ReadonlySet<string>
  /**
   * Agents (by `namespace/name`) whose ServiceAccount is known to exist in the Workflow's
   * namespace; steps of any other agent wait instead of creating a Job no pod can start for.
   */
  identities: ReadonlySet<string>
  /** Step → output JSON of the current run. */
  outputs: ReadonlyMap<string, string>
  /**
   * Provider choices (by `choiceKeyOf`: the agent's `namespace/name`, plus the step's provider
   * override) whose model key no Secret of the Workflow's namespace can hold yet, with the
   * message saying how to fix it; their steps wait instead of starting a pod that would hang on
   * a missing Secret.
   */
  credentialWaits?: ReadonlyMap<string, string>
  /** Provider choices (by `choiceKeyOf`) whose starting steps carry this message in their status. */
  stepNotes?: ReadonlyMap<string, string>
  /**
   * The other runs of this run's template (same namespace), read only when its concurrency policy
   * decides whether it may start (`needsSiblings`); absent means none.
   */
  siblings?: readonly Workflow[]
}

/** A step Job the plan wants created. */
export interface StepStart {
  step: string
  attempt: number | 'rollback'
  jobName: string
  agentKey: string
}

/** A step attempt (or compensation) that finished in this plan, for its Agent's metrics. */
export interface FinishedAttempt extends AttemptRecord {
  /** The Agent it counts for, `namespace/name` (its own namespace when agentRef names one). */
  agentKey: string
}

/** A state transition worth telling users about (Kubernetes Event and CloudEvent). */
export interface Transition {
  kind: 'run.started' | 'run.queued' | 'run.blocked' | 'run.finished' | 'step.started' | 'step.approved' | 'step.finished' | 'step.waiting' | 'spec.invalid'
  type: 'Normal' | 'Warning'
  reason: string
  message: string
  step?: string
  phase?: string
}

/** What to write, in the fixed order: Jobs and outputs first, annotations, status last. */
export interface WorkflowPlan {
  runId: string | null
  deleteJobs: string[]
  startJobs: StepStart[]
  outputWrites: OutputWrite[]
  /** Every attempt that finished here, retried ones included: each ran and may have cost money. */
  finishedAttempts: FinishedAttempt[]
  annotations: Record<string, string> | null
  status: WorkflowStatus | null
  transitions: Transition[]
  /** Active runs of the same template a concurrency `replace` cancels before this run starts. */
  cancelRuns: RunCancel[]
}

/** The plan that writes nothing. */
export const NO_CHANGES: WorkflowPlan = Object.freeze({
  runId: null, deleteJobs: [], startJobs: [], outputWrites: [], finishedAttempts: [], annotations: null, status: null, transitions: [], cancelRuns: [],
}) as WorkflowPlan



/** Pure: the agent lookup key of a step (its own namespace, else the Workflow's). */
export function agentKeyOf(workflow: Workflow, step: WorkflowStep): string {
  return `${step.agentRef?.namespace || workflow.metadata.namespace}/${step.agentRef?.name ?? ''}`
}

/**
 * Pure: the key of a step's provider choice: its agent's key, followed by `@<provider>` when
 * the step's `model.provider` (spec §5.10) names a provider (`@` never occurs in
 * an agent key), so steps of one agent on different providers get their own choice.
 */
export function choiceKeyOf(workflow: Workflow, step: WorkflowStep): string {
  const key = agentKeyOf(workflow, step)
  return step.model?.provider === undefined ? key : `${key}@${step.model.provider}`
}



/**
 * Pure: the next state of a Workflow run and the writes that get there. Re-planning on the
 * plan's own result gives NO_CHANGES, so duplicate and echoed events write nothing.
 */
export function planWorkflow(facts: WorkflowFacts, now: string): WorkflowPlan {
  const wf = facts.workflow
  const meta = wf.metadata
  const annotations = meta.annotations ?? {}
  if (meta.deletionTimestamp || annotations[ANNOTATION_TEMPLATE] === 'true') return NO_CHANGES

  const runId = runIdFor(meta.uid ?? '', annotations[ANNOTATION_RERUN])
  const previous = wf.status ?? {}
  const sameRun = previous.runId === runId && !isRetriableSpecFailure(wf)
  if (sameRun && isTerminalPhase(previous.phase)) return NO_CHANGES

  const order = topologicalOrder(wf.spec.steps)
  const run = new RunBuilder(wf, runId, sameRun ? previous : templateFields(previous), now, order ?? [])
  const issues = validateSteps(wf.spec.steps, order)
  if (issues.length > 0) return run.invalid(issues)

  if (!sameRun) {
    const rerun = previous.runId !== undefined && previous.runId !== runId
    // A rerun supersedes a run still in progress: its Jobs would only burn resources now.
    if (rerun && !isTerminalPhase(previous.phase)) run.killJobsOf(decodeStepStates({ ...wf, status: previous }))
    // A cancelled run is not held back: it starts only to end at once.
    const admission: Admission = annotations[ANNOTATION_CANCEL] === 'true' ? { kind: 'start' } : admitRun(wf, facts.siblings ?? [])
    if (admission.kind === 'wait') return run.queue(admission.position, admission.message)
    if (admission.kind === 'skip') return run.skip(admission.reason, admission.message)
    if (admission.kind === 'replace') run.plan.cancelRuns.push(...admission.cancel)
    run.start(rerun, admission.kind === 'start' ? admission.warning : undefined)
  }
  if (annotations[ANNOTATION_CANCEL] === 'true') return run.cancel(facts)
  if (sameRun && stepListChanged(wf)) return run.stepsChanged(facts)

  run.observeJobs(facts)
  if (run.timedOut()) return run.finish()
  run.applyDenials()

  if (run.phase === 'RollingBack') {
    run.advanceRollback(facts)
    return run.finish()
  }
  if (run.failedCount() > 0 && run.handleFailure(facts)) return run.finish()
  run.schedule(facts)
  // A denial whose turn came during scheduling is handled now, so re-planning changes nothing.
  if (run.failedCount() > 0 && run.handleFailure(facts)) return run.finish()
  run.completeIfDone()
  return run.finish()
}


/** Mutable working copy of one plan; every method is pure with respect to the outside world. */
class RunBuilder {
  readonly steps: readonly WorkflowStep[]
  readonly byName: Map<string, WorkflowStep>
  readonly states: Map<string, StepState>
  phase: WorkflowPhase | undefined
  status: WorkflowStatus
  readonly plan: WorkflowPlan
  private readonly annotations: Record<string, string>

  constructor(readonly wf: Workflow, readonly runId: string, previous: WorkflowStatus, readonly now: string, readonly order: readonly number[]) {
    this.steps = wf.spec.steps
    this.byName = new Map(this.steps.map((s) => [s.name, s]))
    this.annotations = wf.metadata.annotations ?? {}
    this.status = { ...previous }
    this.phase = previous.phase
    this.states = decodeStepStates({ ...wf, status: previous })
    this.plan = { runId, deleteJobs: [], startJobs: [], outputWrites: [], finishedAttempts: [], annotations: null, status: null, transitions: [], cancelRuns: [] }
  }

  start(rerun: boolean, warning?: string): void {
    this.reset()
    this.phase = 'Running'
    if (this.annotations[ANNOTATION_RUN_ID] !== this.runId) this.plan.annotations = { [ANNOTATION_RUN_ID]: this.runId }
    this.transition({
      kind: 'run.started', type: 'Normal', reason: rerun ? 'RunRestarted' : 'RunStarted',
      message: `Started run ${this.runId} of ${this.steps.length} steps`,
    })
    if (warning) this.transition({ kind: 'run.started', type: 'Warning', reason: 'UnknownConcurrencyPolicy', message: warning })
  }

  /** A fresh run's status: only the fields a template's own reconciler keeps survive. */
  private reset(): void {
    this.status = { ...templateFields(this.wf.status), runId: this.runId, startTime: this.now }
    for (const step of this.steps) this.states.set(step.name, { retryCount: 0 })
  }

  /**
   * The run waits for its template's concurrency policy: phase Pending with its queue position
   * and no run id yet. Announced once; a new position only updates the status.
   */
  queue(position: number, message: string): WorkflowPlan {
    const previous = this.wf.status ?? {}
    const wasQueued = isQueuedStatus(previous)
    const status: WorkflowStatus = {
      ...templateFields(previous),
      phase: 'Pending',
      message,
      queuePosition: position,
      observedGeneration: this.wf.metadata.generation,
      runControl: runControlDigest(this.annotations),
      conditions: setCondition(wasQueued ? previous.conditions : undefined, { type: 'Complete', status: 'False', reason: 'Queued', message }, this.now),
    }
    if (!wasQueued) this.transition({ kind: 'run.queued', type: 'Normal', reason: 'Queued', message, phase: 'Pending' })
    const unchanged = sameJson(status, this.wf.status)
    if (unchanged && this.plan.deleteJobs.length === 0) return NO_CHANGES
    return { ...this.plan, status: unchanged ? null : status }
  }

  /** The run ends before it starts: concurrency forbid with whenBusy skip, or replaced by a newer run. */
  skip(reason: string, message: string): WorkflowPlan {
    this.reset()
    this.status.completionTime = this.now
    this.setPhase('Cancelled', reason, message)
    this.transition({ kind: 'run.finished', type: 'Normal', reason, message, phase: 'Cancelled' })
    return this.finish()
  }

  invalid(issues: { reason: string; message: string }[]): WorkflowPlan {
    const first = issues[0]!
    const message = issues.map((i) => i.message).join('; ')
    this.phase = 'Failed'
    this.killJobsOf(this.states)
    this.status.runId = this.runId
    this.status.startTime ??= this.now
    this.status.completionTime ??= this.now
    this.status.conditions = setCondition(this.status.conditions, {
      type: 'SpecValid', status: 'False', reason: first.reason, message, observedGeneration: this.wf.metadata.generation,
    }, this.now)
    this.setPhase('Failed', 'InvalidSpec', message)
    if (this.status.message !== this.wf.status?.message || this.wf.status?.phase !== 'Failed') {
      this.transition({ kind: 'spec.invalid', type: 'Warning', reason: 'InvalidSpec', message })
    }
    return this.finish()
  }

  /** Large runs record steps by position; a step list edited mid-run cannot be matched up safely. */
  stepsChanged(facts: WorkflowFacts): WorkflowPlan {
    for (const job of facts.jobs) {
      if (job.runId === this.runId && job.state === 'Active' && !this.plan.deleteJobs.includes(job.name)) this.plan.deleteJobs.push(job.name)
    }
    for (const s of this.states.values()) if (s.phase === 'Running' || s.phase === 'RollingBack') this.killJobOf(s)
    this.status.completionTime = this.now
    const message = `The step list changed while this run of more than ${DETAILED_STATUS_MAX_STEPS} steps was in progress; `
      + 'set a new purko.io/rerun annotation to run the edited Workflow'
    this.setPhase('Failed', 'StepsChanged', message)
    this.transition({ kind: 'run.finished', type: 'Warning', reason: 'StepsChanged', message, phase: 'Failed' })
    return this.finish()
  }

  cancel(facts: WorkflowFacts): WorkflowPlan {
    // Jobs whose start was never recorded (a crash before the status write) are stopped too.
    for (const job of facts.jobs) {
      if (job.runId === this.runId && job.state === 'Active' && !this.plan.deleteJobs.includes(job.name)) this.plan.deleteJobs.push(job.name)
    }
    for (const [name, s] of this.states) {
      if (s.phase === 'Running' || s.phase === 'RollingBack') {
        this.killJobOf(s)
        this.states.set(name, { ...s, phase: 'Skipped', completionTime: this.now, error: 'Cancelled' })
      } else if (s.phase === 'Pending') {
        this.states.set(name, { ...s, phase: 'Skipped', completionTime: this.now, error: 'Cancelled' })
      }
    }
    this.status.completionTime = this.now
    const { reason, message } = cancelCause(this.annotations)
    this.setPhase('Cancelled', reason, message)
    this.transition({ kind: 'run.finished', type: 'Normal', reason, message, phase: 'Cancelled' })
    return this.finish()
  }

  /** Applies what the Jobs say: adoption of unrecorded Jobs, results, retries, lost Jobs. */
  observeJobs(facts: WorkflowFacts): void {
    const seen = new Set<string>()
    for (const job of facts.jobs) {
      if (job.runId !== this.runId || job.attempt === 'rollback') continue
      const step = this.byName.get(job.step)
      const state = this.states.get(job.step)
      if (!step || !state) continue
      if (job.name !== stepJobName(this.wf.metadata.name ?? '', step.name, this.runId, state.retryCount)) continue
      seen.add(job.step)
      if (state.phase !== undefined && state.phase !== 'Running' && state.phase !== 'Pending') continue
      if (state.phase !== 'Running') {
        // Created by a plan whose status write was lost (crash or lost race): adopt it.
        state.phase = 'Running'
        state.jobName = job.name
        state.startTime ??= this.now
        delete state.nextAttemptAt
      }
      if (job.state === 'Active' || !job.result) continue
      this.recordResult(step, state, job.result, job.finishedAt)
    }
    if (!facts.jobsComplete) return
    for (const [name, state] of this.states) {
      if (state.phase === 'Running' && !seen.has(name)) {
        this.recordResult(this.byName.get(name)!, state, {
          ok: false, class: 'error', error: `Job ${state.jobName ?? ''} disappeared before it finished`,
        })
      }
    }
  }

  private recordResult(step: WorkflowStep, state: StepState, result: StepResult, finishedAt?: string): void {
    this.countAttempt(step, state.retryCount, result, state.startTime, finishedAt)
    if (result.ok) {
      state.phase = 'Succeeded'
      state.completionTime = this.now
      delete state.error
      this.plan.outputWrites.push({ step: step.name, json: result.json })
      this.transition({ kind: 'step.finished', type: 'Normal', reason: 'StepSucceeded', message: `Step ${step.name} succeeded`, step: step.name, phase: 'Succeeded' })
      return
    }
    const decision = retryDecision(step, state.retryCount, result)
    if (decision.retry) {
      state.phase = 'Pending'
      state.retryCount += 1
      state.error = result.error
      state.nextAttemptAt = addSeconds(this.now, decision.delaySeconds)
      delete state.jobName
      delete state.completionTime
      this.transition({
        kind: 'step.finished', type: 'Warning', reason: 'StepRetrying', step: step.name, phase: 'Pending',
        message: `Step ${step.name} failed (${result.error}); retry ${state.retryCount} in ${decision.delaySeconds}s`,
      })
      return
    }
    state.phase = 'Failed'
    state.completionTime = this.now
    state.error = result.error
    this.transition({ kind: 'step.finished', type: 'Warning', reason: 'StepFailed', message: `Step ${step.name} failed: ${result.error}`, step: step.name, phase: 'Failed' })
  }

  /** Adds a finished attempt to the plan's metrics, keyed so that counting it twice is impossible. */
  private countAttempt(step: WorkflowStep, attempt: number | 'rollback', result: StepResult | undefined, startedAt: string | undefined, finishedAt: string | undefined): void {
    if (!step.agentRef?.name) return
    const usage = result?.ok ? usageFromJson(result.json) : result?.usage ?? { tokens: 0, costUSD: 0 }
    const end = Date.parse(finishedAt ?? this.now)
    const start = Date.parse(startedAt ?? finishedAt ?? this.now)
    this.plan.finishedAttempts.push({
      agentKey: agentKeyOf(this.wf, step),
      key: `${this.wf.metadata.uid ?? ''}/${this.runId}/${step.name}/${attempt}`,
      ok: result?.ok === true,
      tokens: usage.tokens,
      costUSD: usage.costUSD,
      latencyMs: Number.isFinite(end - start) ? Math.max(0, end - start) : 0,
      ...(usage.model !== undefined ? { model: usage.model, tokensIn: usage.tokensIn ?? 0, tokensOut: usage.tokensOut ?? 0 } : {}),
    })
  }

  /** The Agent's recorded cost plus what this plan's own finished attempts add to it. */
  private projectedCost(agentKey: string, agent: Agent): number {
    const metrics = agent.status?.metrics
    const recorded = new Set(metrics?.recordedAttempts ?? [])
    let total = metrics?.totalCostUSD ?? 0
    for (const a of this.plan.finishedAttempts) if (a.agentKey === agentKey && !recorded.has(a.key)) total += a.costUSD
    return total
  }

  timedOut(): boolean {
    const limit = workflowTimeoutSeconds(this.wf)
    const started = this.status.startTime ? Date.parse(this.status.startTime) : NaN
    const elapsed = (Date.parse(this.now) - started) / 1000
    if (!Number.isFinite(elapsed) || elapsed <= limit) return false
    for (const s of this.states.values()) {
      if (s.phase === 'Running' || s.phase === 'RollingBack') this.killJobOf(s)
    }
    this.status.completionTime = this.now
    const message = `Workflow exceeded timeout of ${formatGoDuration(limit)} (elapsed: ${formatGoDuration(Math.round(elapsed))})`
    this.setPhase('Failed', 'WorkflowTimeout', message)
    this.transition({ kind: 'run.finished', type: 'Warning', reason: 'WorkflowTimeout', message, phase: 'Failed' })
    return true
  }

  /**
   * `purko.io/deny-<step>: "true"` ends a step that has not started once its turn comes (its
   * dependencies are met); the failure strategy follows. Applied earlier, a denial would fail the
   * run (failFast) or release the step's dependents (continueOnError) ahead of its own dependencies.
   */
  applyDenials(): void {
    const continueOnError = this.wf.spec.failureStrategy === 'continueOnError'
    // Walk the annotations, not the steps: a 10,000-step run usually has none.
    const denied = Object.keys(this.annotations)
      .filter((k) => k.startsWith(ANNOTATION_DENY_PREFIX) && this.annotations[k] === 'true')
      .map((k) => k.slice(ANNOTATION_DENY_PREFIX.length))
    for (const step of this.steps.filter((s) => denied.includes(s.name))) {
      const state = this.states.get(step.name)!
      if (state.phase !== undefined && state.phase !== 'Pending') continue
      if (!this.dependenciesMet(step, continueOnError)) continue
      this.deny(step, state)
    }
  }

  private isDenied(step: WorkflowStep): boolean {
    return this.annotations[`${ANNOTATION_DENY_PREFIX}${step.name}`] === 'true'
  }

  private deny(step: WorkflowStep, state: StepState): void {
    const record = decisionOf(this.annotations, step.name, 'denied')
    state.phase = 'Failed'
    state.completionTime = this.now
    state.error = record ? `Denied by ${record.user}${record.reason ? `: ${record.reason}` : ''}` : 'Denied by user'
    delete state.nextAttemptAt
    const message = record ? `Step ${step.name} denied by ${record.user}${record.reason ? `: ${record.reason}` : ''}` : `Step ${step.name} denied`
    this.transition({ kind: 'step.finished', type: 'Warning', reason: 'StepDenied', message, step: step.name, phase: 'Failed' })
  }

  failedCount(): number {
    let n = 0
    for (const s of this.states.values()) if (s.phase === 'Failed') n++
    return n
  }

  /** Applies the failure strategy; true when the run's course is decided for this plan. */
  handleFailure(facts: WorkflowFacts): boolean {
    const strategy = this.wf.spec.failureStrategy ?? 'failFast'
    if (strategy === 'continueOnError') return false
    if (strategy === 'failFast') {
      this.skipUnfinished(true, 'Stopped: another step failed (failFast)')
      this.status.completionTime = this.now
      this.setPhase('Failed', 'StepFailed', 'A step failed with failFast strategy')
      this.transition({ kind: 'run.finished', type: 'Warning', reason: 'StepFailed', message: 'A step failed with failFast strategy', phase: 'Failed' })
      return true
    }
    if (strategy === 'stop') {
      // Running steps are allowed to finish; nothing new starts.
      if (this.countPhase('Running') > 0) {
        this.summarise('StepFailed', 'A step failed with stop strategy; waiting for running steps to finish')
        return true
      }
      this.skipUnfinished(false, 'Stopped: another step failed (stop)')
      this.status.completionTime = this.now
      this.setPhase('Failed', 'StepFailed', 'A step failed with stop strategy')
      this.transition({ kind: 'run.finished', type: 'Warning', reason: 'StepFailed', message: 'A step failed with stop strategy', phase: 'Failed' })
      return true
    }
    this.skipUnfinished(true, 'Stopped: another step failed (rollback)')
    this.phase = 'RollingBack'
    this.advanceRollback(facts)
    return true
  }

  /** Compensates succeeded steps one at a time, dependents before their dependencies. */
  advanceRollback(facts: WorkflowFacts): void {
    const name = this.wf.metadata.name ?? ''
    for (const job of facts.jobs) {
      if (job.runId !== this.runId || job.attempt !== 'rollback' || job.state === 'Active') continue
      const state = this.states.get(job.step)
      if (state?.phase !== 'RollingBack' || state.compensationJobName !== job.name) continue
      state.phase = 'RolledBack'
      if (job.state === 'Failed') state.error = `Compensation failed: ${job.result && !job.result.ok ? job.result.error : 'job failed'}`
      const step = this.byName.get(job.step)
      // A compensation is an invocation of the agent too, and it costs tokens like any other.
      if (step) {
        this.countAttempt(step, 'rollback', job.result ?? (job.state === 'Failed' ? { ok: false, class: 'error', error: 'job failed' } : undefined), job.startedAt, job.finishedAt)
      }
      this.transition({ kind: 'step.finished', type: job.state === 'Failed' ? 'Warning' : 'Normal', reason: 'StepRolledBack', message: `Step ${job.step} rolled back`, step: job.step, phase: 'RolledBack' })
    }
    if (facts.jobsComplete) {
      const present = new Set(facts.jobs.filter((j) => j.runId === this.runId).map((j) => j.name))
      for (const [name, state] of this.states) {
        if (state.phase !== 'RollingBack' || !state.compensationJobName || present.has(state.compensationJobName)) continue
        state.phase = 'RolledBack'
        state.error = `Compensation failed: Job ${state.compensationJobName} disappeared before it finished`
        this.countAttempt(this.byName.get(name)!, 'rollback', { ok: false, class: 'error', error: 'disappeared' }, undefined, undefined)
        this.transition({ kind: 'step.finished', type: 'Warning', reason: 'StepRolledBack', message: `Step ${name} rolled back`, step: name, phase: 'RolledBack' })
      }
    }
    const inProgress = this.steps.find((s) => this.states.get(s.name)?.phase === 'RollingBack')
    if (inProgress) {
      // Same wording as when the compensation started, so re-planning writes nothing.
      this.summarise('RollbackInProgress', `Rolling back step ${inProgress.name}`)
      return
    }
    const order = this.order
    for (let k = order.length - 1; k >= 0; k--) {
      const step = this.steps[order[k]!]!
      const state = this.states.get(step.name)!
      if (state.phase !== 'Succeeded') continue
      if (!step.agentRef?.name) {
        state.phase = 'RolledBack'
        continue
      }
      const agentKey = agentKeyOf(this.wf, step)
      const agent = facts.agents.get(agentKey)
      if (!agent) {
        // Compensation needs the agent; wait for it as a normal step would (the workflow timeout still applies).
        this.summarise('RollbackInProgress', `Agent "${step.agentRef.name}" not found to roll back step "${step.name}"`)
        return
      }
      // Its Job runs as the agent too. A budget does not hold back a compensation: undoing
      // half-done work matters more than the cost of one more Job per step.
      if (!facts.identities.has(agentKey)) {
        const message = identityMessage(this.wf, step, agent)
        if (this.wf.status?.message !== message) {
          this.transition({ kind: 'step.waiting', type: identityWaitType(this.wf, agent), reason: 'AgentIdentityPending', message, step: step.name, phase: 'Succeeded' })
        }
        this.summarise('RollbackInProgress', message)
        return
      }
      const jobName = stepJobName(name, step.name, `${this.runId}-rb`, 0)
      state.phase = 'RollingBack'
      state.compensationJobName = jobName
      this.plan.startJobs.push({ step: step.name, attempt: 'rollback', jobName, agentKey })
      this.transition({ kind: 'step.started', type: 'Normal', reason: 'CompensationStarted', message: `Rolling back step ${step.name}`, step: step.name, phase: 'RollingBack' })
      this.summarise('RollbackInProgress', `Rolling back step ${step.name}`)
      this.phase = 'RollingBack'
      this.status.phase = 'RollingBack'
      return
    }
    const rolledBack = this.steps.filter((s) => this.states.get(s.name)?.phase === 'RolledBack').map((s) => s.name)
    this.status.completionTime = this.now
    const message = `Rolled back ${rolledBack.length} steps: ${rolledBack.join(', ')}`
    this.setPhase('Failed', 'RolledBack', message)
    this.transition({ kind: 'run.finished', type: 'Warning', reason: 'RolledBack', message, phase: 'Failed' })
  }

  /** Starts every step whose turn has come, within the parallelism cap, in dependency order. */
  schedule(facts: WorkflowFacts): void {
    const order = this.order
    const continueOnError = this.wf.spec.failureStrategy === 'continueOnError'
    // A step backing off before its retry keeps its slot: otherwise each failure frees a slot for a
    // new step, and under a failing provider thousands of steps pile up waiting (each listed in status).
    let running = 0
    for (const s of this.states.values()) if (s.phase === 'Running' || holdsRetrySlot(s)) running++
    const cap = Math.min(this.wf.spec.parallelism ?? 1, MAX_PARALLELISM)
    const outputs = conditionOutputs(facts.outputs, this.plan.outputWrites)
    const parameters = this.wf.spec.parameters ?? {}
    const name = this.wf.metadata.name ?? ''
    let waiting = 0
    for (const index of order) {
      const step = this.steps[index]!
      const state = this.states.get(step.name)!
      if (state.phase !== undefined && state.phase !== 'Pending') continue
      if (!this.dependenciesMet(step, continueOnError)) continue
      if (this.isDenied(step)) {
        // Its turn came within this plan (a dependency just completed here); any other strategy
        // than continueOnError stops here and the caller applies it.
        this.deny(step, state)
        if (continueOnError) continue
        break
      }
      if (state.nextAttemptAt && Date.parse(state.nextAttemptAt) > Date.parse(this.now)) continue
      if (step.condition && state.retryCount === 0) {
        const verdict = evaluateCondition(step.condition, { outputs: outputs.value, parameters })
        if (!verdict.ok || !verdict.value) {
          state.phase = 'Skipped'
          state.completionTime = this.now
          if (!verdict.ok) state.error = `Condition error: ${verdict.error}`
          this.transition({ kind: 'step.finished', type: verdict.ok ? 'Normal' : 'Warning', reason: verdict.ok ? 'StepSkipped' : verdict.reason === 'CostLimitExceeded' ? 'ConditionCostLimitExceeded' : 'ConditionError', message: verdict.ok ? `Step ${step.name} skipped: condition is false` : `Step ${step.name} skipped: ${verdict.error}`, step: step.name, phase: 'Skipped' })
          continue
        }
      }
      if (!step.agentRef?.name) {
        state.phase = 'Succeeded'
        state.completionTime = this.now
        this.transition({ kind: 'step.finished', type: 'Normal', reason: 'StepSucceeded', message: `Step ${step.name} (${step.type ?? 'no agent'}) completed`, step: step.name, phase: 'Succeeded' })
        continue
      }
      const agentKey = agentKeyOf(this.wf, step)
      const agent = facts.agents.get(agentKey)
      if (!agent && facts.unsharedAgents?.has(agentKey)) {
        this.wait(step, state, notSharedMessage(step.agentRef.namespace ?? '', step.agentRef.name, step.name, this.wf.metadata.namespace ?? ''), 'AgentNotShared', waiting)
        waiting++
        continue
      }
      if (!agent) {
        this.wait(step, state, `Agent "${step.agentRef.name}" not found for step "${step.name}"`, 'AgentNotFound', waiting)
        waiting++
        continue
      }
      if (!facts.identities.has(agentKey)) {
        this.wait(step, state, identityMessage(this.wf, step, agent), 'AgentIdentityPending', waiting, identityWaitType(this.wf, agent))
        waiting++
        continue
      }
      const credentialWait = facts.credentialWaits?.get(choiceKeyOf(this.wf, step))
      if (credentialWait) {
        this.wait(step, state, credentialWait, 'LLMCredentialsUnavailable', waiting)
        waiting++
        continue
      }
      const budget = overBudget({ spec: agent.spec, status: { metrics: { totalCostUSD: this.projectedCost(agentKey, agent) } } })
      if (budget.over) {
        this.wait(step, state, budgetMessage(step, agent, budget.totalUSD, budget.limitUSD), 'CostLimitExceeded', waiting)
        waiting++
        continue
      }
      if (agent.spec.guardrails?.humanApprovalRequired === true && this.annotations[`${ANNOTATION_APPROVE_PREFIX}${step.name}`] !== 'true') {
        this.wait(step, state, `Waiting for human approval (set annotation ${ANNOTATION_APPROVE_PREFIX}${step.name}=true)`, 'ApprovalRequired', waiting)
        waiting++
        continue
      }
      if (holdsRetrySlot(state)) {
        // Starts in the slot it kept.
      } else if (running >= cap) {
        // Its agent is there and approved now; it only waits for a slot, so the old reason would mislead.
        if (isWaitingMessage(state.error)) delete state.error
        continue
      } else {
        running++
      }
      const jobName = stepJobName(name, step.name, this.runId, state.retryCount)
      state.phase = 'Running'
      state.jobName = jobName
      state.startTime = this.now
      delete state.nextAttemptAt
      delete state.completionTime
      if (isWaitingMessage(state.error)) delete state.error
      const note = facts.stepNotes?.get(choiceKeyOf(this.wf, step))
      if (note) state.message = note
      else delete state.message
      this.plan.startJobs.push({ step: step.name, attempt: state.retryCount, jobName, agentKey })
      if (agent.spec.guardrails?.humanApprovalRequired === true && state.retryCount === 0) {
        const record = decisionOf(this.annotations, step.name, 'approved')
        this.transition({
          kind: 'step.approved', type: 'Normal', reason: 'StepApproved', step: step.name, phase: 'Running',
          message: record ? `Step ${step.name} approved by ${record.user}${record.reason ? `: ${record.reason}` : ''}` : `Step ${step.name} approved`,
        })
      }
      this.transition({ kind: 'step.started', type: 'Normal', reason: 'StepStarted', message: `Started step ${step.name} as Job ${jobName}`, step: step.name, phase: 'Running' })
    }
    this.summarise('StepsInProgress', `${this.countPhase('Succeeded') + this.countPhase('Skipped')}/${this.steps.length} steps completed, ${this.countPhase('Running')} running${waiting > 0 ? `, ${waiting} waiting` : ''}`)
  }

  private wait(step: WorkflowStep, state: StepState, message: string, reason: string, waitingBefore: number, type: 'Warning' | 'Normal' = WARNING_WAITS.has(reason) ? 'Warning' : 'Normal'): void {
    if (state.phase === 'Pending' && state.error === message) return
    // Every marked step is listed in the status with its message (and announced); a 10,000-step
    // fan-out whose agent is missing would outgrow etcd's object limit, so the rest wait unmarked.
    if (state.phase !== 'Pending' && waitingBefore >= MAX_WAITING_STEPS_SHOWN) return
    // Still waiting for the same thing (a budget whose total moved): the status follows, but
    // people were told once already.
    const sameWait = state.phase === 'Pending' && state.error !== undefined && waitSubject(state.error) === waitSubject(message)
    state.phase = 'Pending'
    state.error = message
    if (sameWait) return
    this.transition({ kind: 'step.waiting', type, reason, message, step: step.name, phase: 'Pending' })
  }

  private dependenciesMet(step: WorkflowStep, continueOnError: boolean): boolean {
    for (const dep of step.dependsOn ?? []) {
      const phase = this.states.get(dep)?.phase
      if (phase === 'Succeeded' || phase === 'Skipped') continue
      if (continueOnError && phase === 'Failed') continue
      return false
    }
    return true
  }

  completeIfDone(): void {
    if (this.countDone() < this.steps.length) return
    const completed = this.countPhase('Succeeded') + this.countPhase('Skipped')
    const failed = this.countPhase('Failed')
    const { phase, reason, message } = completionPhase(completed, failed, this.steps.length, this.wf.spec.failureStrategy ?? 'failFast')
    this.status.completionTime = this.now
    this.setPhase(phase, reason, message)
    this.transition({ kind: 'run.finished', type: phase === 'Succeeded' ? 'Normal' : 'Warning', reason, message, phase })
  }

  /** Closes the plan: counters, step states, conditions, and NO_CHANGES when nothing moved. */
  finish(): WorkflowPlan {
    const status: WorkflowStatus = { ...this.status }
    status.phase = this.phase ?? 'Running'
    status.runId = this.runId
    status.observedGeneration = this.wf.metadata.generation
    status.runControl = runControlDigest(this.annotations)
    status.totalSteps = this.steps.length
    status.completedSteps = this.countPhase('Succeeded') + this.countPhase('Skipped')
    status.failedSteps = this.countPhase('Failed')
    const encoded = encodeStepStates(this.steps, this.states)
    status.stepStatuses = encoded.stepStatuses
    if (encoded.stepPhases !== undefined) status.stepPhases = encoded.stepPhases
    else delete status.stepPhases
    if (!status.conditions?.some((c) => c.type === 'SpecValid' && c.status === 'False')) {
      status.conditions = setCondition(status.conditions, {
        type: 'SpecValid', status: 'True', reason: 'Valid', message: 'The step graph is valid',
        observedGeneration: this.wf.metadata.generation,
      }, this.now)
    }
    const unchanged = sameJson(status, this.wf.status)
    const writes = this.plan.deleteJobs.length + this.plan.startJobs.length + this.plan.outputWrites.length + this.plan.finishedAttempts.length
    if (unchanged && writes === 0 && this.plan.annotations === null) return NO_CHANGES
    return { ...this.plan, status: unchanged ? null : status }
  }

  private setPhase(phase: WorkflowPhase, reason: string, message: string): void {
    this.phase = phase
    this.status.message = message
    this.status.conditions = setCondition(this.status.conditions, {
      type: 'Complete', status: phase === 'Succeeded' ? 'True' : 'False', reason, message,
    }, this.now)
  }

  private summarise(reason: string, message: string): void {
    this.setPhase(this.phase === 'RollingBack' ? 'RollingBack' : 'Running', reason, message)
  }

  private skipUnfinished(killRunning: boolean, error: string): void {
    for (const [name, s] of this.states) {
      if (s.phase === 'Running' && killRunning) {
        this.killJobOf(s)
        this.states.set(name, { ...s, phase: 'Skipped', completionTime: this.now, error })
      } else if (s.phase === 'Pending' || s.phase === undefined) {
        this.states.set(name, { ...s, phase: 'Skipped', completionTime: this.now, error })
      }
    }
  }

  /** Deletes the Jobs of every running or compensating step in `states`. */
  killJobsOf(states: ReadonlyMap<string, StepState>): void {
    for (const s of states.values()) if (s.phase === 'Running' || s.phase === 'RollingBack') this.killJobOf(s)
  }

  private killJobOf(s: StepState): void {
    const job = s.phase === 'RollingBack' ? s.compensationJobName : s.jobName
    // A Job this very plan was about to create is simply not created.
    const planned = this.plan.startJobs.findIndex((j) => j.jobName === job)
    if (planned >= 0) {
      const [start] = this.plan.startJobs.splice(planned, 1)
      const i = this.plan.transitions.findIndex((t) => t.kind === 'step.started' && t.step === start!.step)
      if (i >= 0) this.plan.transitions.splice(i, 1)
      return
    }
    if (job && !this.plan.deleteJobs.includes(job)) this.plan.deleteJobs.push(job)
  }

  private countPhase(phase: StepPhase): number {
    let n = 0
    for (const s of this.states.values()) if (s.phase === phase) n++
    return n
  }

  private countDone(): number {
    let n = 0
    for (const s of this.states.values()) if (isFinishedStepPhase(s.phase)) n++
    return n
  }

  private transition(t: Transition): void {
    this.plan.transitions.push(t)
  }
}

/** Pure: purko's completion table (a run's phase from its completed and failed steps and the failure strategy). */
export function completionPhase(completed: number, failed: number, total: number, strategy: string):
  { phase: WorkflowPhase; reason: string; message: string } {
  if (failed === 0) return { phase: 'Succeeded', reason: 'AllStepsCompleted', message: 'All workflow steps completed' }
  if (completed === 0) return { phase: 'Failed', reason: 'AllStepsFailed', message: `0/${total} steps succeeded, ${failed} failed` }
  if (strategy === 'continueOnError') {
    return { phase: 'CompletedWithErrors', reason: 'CompletedWithErrors', message: `${completed}/${total} steps succeeded, ${failed} failed (continueOnError)` }
  }
  return { phase: 'Failed', reason: 'StepsFailed', message: `${completed}/${total} steps succeeded, ${failed} failed` }
}

/** Pure: the workflow deadline in seconds: `spec.timeout` as a duration string or {timeoutSeconds}, else 30 minutes. */
export function workflowTimeoutSeconds(wf: Workflow): number {
  const timeout = wf.spec.timeout
  if (typeof timeout === 'string') {
    // Zero or negative is "not set", as for {timeoutSeconds}; taken literally it would fail every run at once.
    const seconds = parseGoDuration(timeout)
    return seconds !== null && seconds > 0 ? seconds : DEFAULT_WORKFLOW_TIMEOUT_SECONDS
  }
  if (timeout && typeof timeout.timeoutSeconds === 'number' && timeout.timeoutSeconds > 0) return timeout.timeoutSeconds
  return DEFAULT_WORKFLOW_TIMEOUT_SECONDS
}

/** Status fields a template's own reconciler writes; a run of the same object keeps them when it (re)starts. */
const TEMPLATE_FIELDS = ['lastTriggerTime', 'lastScheduleTime', 'nextRunTime', 'activeRuns', 'recentRuns'] as const

function templateFields(status: WorkflowStatus | undefined): WorkflowStatus {
  const kept: WorkflowStatus = {}
  for (const field of TEMPLATE_FIELDS) if (status?.[field] !== undefined) (kept as Record<string, unknown>)[field] = status[field]
  return kept
}

/** A verified decision record (`kinetic.dev/decision-<step>`), as run-control writes it. */
interface DecisionRecord { verdict: 'approved' | 'denied'; user: string; time: string; reason?: string }

/**
 * The decision record of `step` when it is valid JSON of the expected shape and agrees with the
 * verdict acted on; anything else is ignored, as purko ignores what it does not know.
 */
function decisionOf(annotations: Readonly<Record<string, string>>, step: string, verdict: DecisionRecord['verdict']): DecisionRecord | null {
  const raw = annotations[`${ANNOTATION_DECISION_PREFIX}${step}`]
  if (raw === undefined) return null
  const value = safeParse(raw) as Partial<DecisionRecord> | undefined
  if (!value || typeof value !== 'object' || value.verdict !== verdict) return null
  if (typeof value.user !== 'string' || value.user === '' || typeof value.time !== 'string') return null
  const reason = typeof value.reason === 'string' && value.reason.trim() !== '' ? value.reason.trim() : undefined
  return { verdict, user: value.user, time: value.time, ...(reason ? { reason } : {}) }
}

/**
 * Why a run is cancelled: the controller's own reason (`kinetic.dev/cancel-reason`, written by a
 * concurrency `replace`), else who asked through run-control (`kinetic.dev/requested-by`), else
 * purko's wording for the bare annotation.
 */
function cancelCause(annotations: Readonly<Record<string, string>>): { reason: string; message: string } {
  const controller = annotations[ANNOTATION_CANCEL_REASON]?.trim()
  if (controller) return { reason: 'ReplacedByConcurrency', message: controller }
  const requested = safeParse(annotations[ANNOTATION_REQUESTED_BY] ?? '') as { action?: unknown; user?: unknown; reason?: unknown } | undefined
  // Only a cancel's own record names who cancelled (a rerun's record may still be there).
  if (requested && typeof requested === 'object' && requested.action === 'cancel' && typeof requested.user === 'string' && requested.user !== '') {
    const reason = typeof requested.reason === 'string' && requested.reason.trim() !== '' ? `: ${requested.reason.trim()}` : ''
    return { reason: 'UserCancelled', message: `Cancelled by ${requested.user}${reason}` }
  }
  return { reason: 'UserCancelled', message: 'Workflow cancelled via purko.io/cancel annotation' }
}

/** Waits a person has to act on (create something, raise a limit); approval is the normal kind. */
const WARNING_WAITS: ReadonlySet<string> = new Set(['AgentNotFound', 'CostLimitExceeded', 'LLMCredentialsUnavailable'])

/**
 * An agent of the Workflow's own namespace gets its ServiceAccount from agent-changed, usually a
 * moment after both were applied: a Normal wait (a failure to make it is a Warning on the Agent).
 * An agent of another namespace needs a person to create the account here: a Warning.
 */
function identityWaitType(wf: Workflow, agent: Agent): 'Warning' | 'Normal' {
  return (agent.metadata.namespace ?? wf.metadata.namespace) === wf.metadata.namespace ? 'Normal' : 'Warning'
}

/** What a waiting message waits for: the part before its first `: ` (the details may change). */
function waitSubject(message: string): string {
  const i = message.indexOf(': ')
  return i < 0 ? message : message.slice(0, i)
}

/** Why a step of `agent` waits for its ServiceAccount, and what to do about it. */
function identityMessage(wf: Workflow, step: WorkflowStep, agent: Agent): string {
  const namespace = wf.metadata.namespace ?? ''
  const account = agentServiceAccountName(agent)
  const agentName = agent.metadata.name ?? ''
  const home = agent.metadata.namespace ?? namespace
  const head = `Waiting for ServiceAccount "${account}" in namespace "${namespace}"`
  if (home !== namespace) {
    return `${head}: step "${step.name}" runs as agent ${home}/${agentName}, and a pod can only use a ServiceAccount of its own namespace; `
      + `create "${account}" in "${namespace}" (agent-changed makes it only in "${home}")`
  }
  return `${head}: step "${step.name}" runs as agent "${agentName}", whose identity agent-changed has not created yet`
}

/** purko's QuotaAvailable message, with the agent and what releases the step. */
function budgetMessage(step: WorkflowStep, agent: Agent, totalUSD: number, limitUSD: number): string {
  return `Waiting for budget of agent "${agent.metadata.name ?? ''}": ${costLimitMessage(totalUSD, limitUSD)}; `
    + `step "${step.name}" starts once guardrails.costLimitUSD is raised or the cost is reset (annotation ${ANNOTATION_RESET_COST})`
}

function holdsRetrySlot(s: StepState): boolean {
  return s.phase === 'Pending' && s.nextAttemptAt !== undefined
}

function isWaitingMessage(error: string | undefined): boolean {
  return error !== undefined && (error.startsWith('Waiting for') || error.startsWith('Agent "'))
}

function conditionOutputs(stored: ReadonlyMap<string, string>, fresh: readonly OutputWrite[]): { value: Record<string, unknown> } {
  // Parsed lazily: most plans evaluate no condition, and large runs have many outputs.
  let cache: Record<string, unknown> | undefined
  return {
    get value() {
      if (cache) return cache
      cache = {}
      for (const [step, json] of stored) cache[step] = safeParse(json)
      for (const w of fresh) cache[w.step] = safeParse(w.json)
      return cache
    },
  }
}

function safeParse(json: string): unknown {
  try {
    return JSON.parse(json)
  } catch {
    return undefined
  }
}

function addSeconds(iso: string, seconds: number): string {
  return new Date(Date.parse(iso) + seconds * 1000).toISOString()
}

function sameJson(a: unknown, b: unknown): boolean {
  return stableStringify(a) === stableStringify(b)
}

function stableStringify(value: unknown): string {
  if (value === undefined) return 'undefined'
  if (value === null || typeof value !== 'object') return JSON.stringify(value)
  if (Array.isArray(value)) return `[${value.map(stableStringify).join(',')}]`
  const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableStringify(v)}`).join(',')}}`
}

export type { Condition }

/**
 * Pure: the Jobs whose pod logs the planner needs (finished Jobs of the current attempt of a
 * step that is not finished yet). Everything else — duplicates, echoes, old attempts — costs
 * no log read.
 */
export function jobsNeedingResults(workflow: Workflow, jobs: readonly JobFact[]): JobFact[] {
  const runId = runIdFor(workflow.metadata.uid ?? '', workflow.metadata.annotations?.[ANNOTATION_RERUN])
  if (workflow.status?.runId === runId && isTerminalPhase(workflow.status.phase)) return []
  const states = workflow.status?.runId === runId ? decodeStepStates(workflow) : new Map<string, StepState>()
  const name = workflow.metadata.name ?? ''
  return jobs.filter((job) => {
    if (job.runId !== runId || job.state === 'Active') return false
    // A finished compensation Job always needs planning, even when it succeeded, so it is listed too.
    if (job.attempt === 'rollback') return states.get(job.step)?.phase === 'RollingBack' && states.get(job.step)?.compensationJobName === job.name
    const state = states.get(job.step) ?? { retryCount: 0 }
    if (state.phase !== undefined && state.phase !== 'Running' && state.phase !== 'Pending') return false
    return job.name === stepJobName(name, job.step, runId, state.retryCount)
  })
}


/**
 * Pure: the agents (`namespace/name`) whose identity the next plan may need: those of steps of
 * the current run that have not started, and under the rollback strategy also of steps a
 * compensation may run for. A superset of what will start, and empty once the run is over, so
 * checking identities costs nothing for finished work.
 */
export function agentsThatMayStart(workflow: Workflow): Set<string> {
  const runId = runIdFor(workflow.metadata.uid ?? '', workflow.metadata.annotations?.[ANNOTATION_RERUN])
  const sameRun = workflow.status?.runId === runId
  if (sameRun && isTerminalPhase(workflow.status?.phase)) return new Set()
  const states = sameRun ? decodeStepStates(workflow) : new Map<string, StepState>()
  const rollback = workflow.spec.failureStrategy === 'rollback'
  const keys = new Set<string>()
  for (const step of workflow.spec.steps) {
    if (!step.agentRef?.name) continue
    const phase = states.get(step.name)?.phase
    if (phase === undefined || phase === 'Pending' || (rollback && (phase === 'Succeeded' || phase === 'Running' || phase === 'RollingBack'))) {
      keys.add(agentKeyOf(workflow, step))
    }
  }
  return keys
}
