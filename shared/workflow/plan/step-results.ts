/**
 * What the step Jobs say: a run adopts Jobs whose start it never recorded, records each finished
 * attempt's result (success with its output, a retry after a backoff, or failure), counts every
 * attempt for its Agent's metrics, and notices Jobs that disappeared. Pure.
 */
import { usageFromJson } from '../../agent/plan/metrics.js'
import type { Agent } from '../../schemas/agent.js'
import type { WorkflowStep } from '../../schemas/workflow.js'
import { stepJobName } from './job-builder.js'
import type { StepResult } from './job-facts.js'
import { retryDecision } from './retry.js'
import type { StepState } from './step-states.js'
import { agentKeyOf } from './agent-keys.js'
import type { RunBuilder } from './run-builder.js'
import type { WorkflowFacts } from './types.js'

/** Applies what the Jobs say: adoption of unrecorded Jobs, results, retries, lost Jobs. */
export function observeJobs(run: RunBuilder, facts: WorkflowFacts): void {
  const seen = new Set<string>()
  for (const job of facts.jobs) {
    if (job.runId !== run.runId || job.attempt === 'rollback') continue
    const step = run.stepsByName.get(job.step)
    const state = run.states.get(job.step)
    if (!step || !state) continue
    if (job.name !== stepJobName(run.workflow.metadata.name ?? '', step.name, run.runId, state.retryCount)) continue
    seen.add(job.step)
    if (state.phase !== undefined && state.phase !== 'Running' && state.phase !== 'Pending') continue
    if (state.phase !== 'Running') {
      // Created by a plan whose status write was lost (crash or lost race): adopt it.
      state.phase = 'Running'
      state.jobName = job.name
      state.startTime ??= run.now
      delete state.nextAttemptAt
    }
    if (job.state === 'Active') {
      // Only a resync looks at pods (the shell's notePodsNotStarting): a Job event says nothing of them.
      if (facts.jobsComplete) notePodStart(run, step, state, job.podWaiting)
      continue
    }
    if (!job.result) continue
    recordResult(run, step, state, job.result, job.finishedAt)
  }
  if (!facts.jobsComplete) return
  for (const [name, state] of run.states) {
    if (state.phase === 'Running' && !seen.has(name)) {
      recordResult(run, run.stepsByName.get(name)!, state, {
        ok: false, class: 'error', error: `Job ${state.jobName ?? ''} disappeared before it finished`,
      })
    }
  }
}

/** Starts the part of a step's message that says why its pod has not started. */
export const POD_NOT_STARTED = 'Pod not started: '

/**
 * A Running step whose pod the kubelet keeps waiting (an image it cannot pull, a missing Secret)
 * says why in its message, beside any note it started with, and once as a Warning; the words go
 * when the pod starts. The step keeps running: its timeout ends it if the pod never starts.
 */
function notePodStart(run: RunBuilder, step: WorkflowStep, state: StepState, waiting: string | undefined): void {
  const message = state.message ?? ''
  const at = message.indexOf(POD_NOT_STARTED)
  const note = (at < 0 ? message : message.slice(0, at)).replace(/; $/, '')
  const why = waiting === undefined ? '' : `${POD_NOT_STARTED}${waiting.slice(0, 512)}`
  const next = [note, why].filter(Boolean).join('; ')
  if (next === message) return
  if (next) state.message = next
  else delete state.message
  if (why && at < 0) run.transition({ kind: 'step.waiting', type: 'Warning', reason: 'PodNotStarting', message: `Step ${step.name}: ${waiting}`, step: step.name, phase: 'Running' })
}

/** A finished attempt moves its step on: Succeeded, Pending for a retry, or Failed. */
function recordResult(run: RunBuilder, step: WorkflowStep, state: StepState, result: StepResult, finishedAt?: string): void {
  // The attempt is over: whatever its pod waited for is no longer news.
  notePodStart(run, step, state, undefined)
  countAttempt(run, step, state.retryCount, result, state.startTime, finishedAt)
  if (result.ok) {
    state.phase = 'Succeeded'
    state.completionTime = run.now
    delete state.error
    run.plan.outputWrites.push({ step: step.name, json: result.json })
    run.transition({ kind: 'step.finished', type: 'Normal', reason: 'StepSucceeded', message: `Step ${step.name} succeeded`, step: step.name, phase: 'Succeeded' })
    return
  }
  const decision = retryDecision(step, state.retryCount, result)
  if (decision.retry) {
    state.phase = 'Pending'
    state.retryCount += 1
    state.error = result.error
    state.nextAttemptAt = addSeconds(run.now, decision.delaySeconds)
    delete state.jobName
    delete state.completionTime
    run.transition({
      kind: 'step.finished', type: 'Warning', reason: 'StepRetrying', step: step.name, phase: 'Pending',
      message: `Step ${step.name} failed (${result.error}); retry ${state.retryCount} in ${decision.delaySeconds}s`,
    })
    return
  }
  state.phase = 'Failed'
  state.completionTime = run.now
  state.error = result.error
  run.transition({ kind: 'step.finished', type: 'Warning', reason: 'StepFailed', message: `Step ${step.name} failed: ${result.error}`, step: step.name, phase: 'Failed' })
}

/** Adds a finished attempt to the plan's metrics, keyed so that counting it twice is impossible. */
export function countAttempt(
  run: RunBuilder, step: WorkflowStep, attempt: number | 'rollback', result: StepResult | undefined, startedAt: string | undefined, finishedAt: string | undefined,
): void {
  if (!step.agentRef?.name) return
  const usage = result?.ok ? usageFromJson(result.json) : result?.usage ?? { tokens: 0, costUSD: 0 }
  const end = Date.parse(finishedAt ?? run.now)
  const start = Date.parse(startedAt ?? finishedAt ?? run.now)
  run.plan.finishedAttempts.push({
    agentKey: agentKeyOf(run.workflow, step),
    key: `${run.workflow.metadata.uid ?? ''}/${run.runId}/${step.name}/${attempt}`,
    ok: result?.ok === true,
    tokens: usage.tokens,
    costUSD: usage.costUSD,
    latencyMs: Number.isFinite(end - start) ? Math.max(0, end - start) : 0,
    ...(usage.model !== undefined ? { model: usage.model, tokensIn: usage.tokensIn ?? 0, tokensOut: usage.tokensOut ?? 0 } : {}),
  })
}

/** The Agent's recorded cost plus what this plan's own finished attempts add to it. */
export function projectedCost(run: RunBuilder, agentKey: string, agent: Agent): number {
  const metrics = agent.status?.metrics
  const recorded = new Set(metrics?.recordedAttempts ?? [])
  let total = metrics?.totalCostUSD ?? 0
  for (const attempt of run.plan.finishedAttempts) if (attempt.agentKey === agentKey && !recorded.has(attempt.key)) total += attempt.costUSD
  return total
}

function addSeconds(iso: string, seconds: number): string {
  return new Date(Date.parse(iso) + seconds * 1000).toISOString()
}
