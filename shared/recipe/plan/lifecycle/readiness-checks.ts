/**
 * How far the observed revision got, as the transitions ask it: readiness of its workloads
 * (spec §6), a deployment that failed for good, and its test results (spec §7.3 T14-T20). Pure.
 */
import type { WorkflowRecipe } from '../../../schemas/workflowrecipe.js'
import type { ReadinessFacts, TestFact } from '../lifecycle-facts.js'
import { readinessTimeout, type NotReadyWorkload } from '../readiness.js'
import type { Failure, PlanningContext } from './context.js'
import { addSeconds, hasPassed, progressDeadlineSeconds, testTimeoutSeconds } from './deadlines.js'

/** A settled revision's first workload that is not Ready (spec §7.3 T19). */
export interface SettledProblem {
  reason: 'ChildMissing' | 'WorkloadNotReady'
  message: string
}

/** Pure: the recipe has agentic steps, so each revision has a child Workflow (spec §2.10). */
export function hasSteps(recipe: WorkflowRecipe): boolean {
  return (recipe.spec.steps ?? []).length > 0
}

/** Pure: the readiness facts when they are about `revision`; facts about another revision are stale. */
export function readinessFor(ctx: PlanningContext, revision: number): ReadinessFacts | undefined {
  const readiness = ctx.facts.readiness
  return readiness && revision > 0 && readiness.revision === revision ? readiness : undefined
}

/** Pure: the included workloads that are not Ready, in `resolved.order`, as the deadline check takes them. */
export function notReadyWorkloads(ctx: PlanningContext, readiness: ReadinessFacts | undefined): NotReadyWorkload[] {
  const specOf = new Map((ctx.recipe.spec.workloads ?? []).map((w) => [w.name, w]))
  const order = ctx.facts.render.ok ? ctx.facts.render.resolved.order : []
  const byName = new Map((readiness?.workloads ?? []).map((w) => [w.name, w]))
  return order.filter((name) => !byName.get(name)?.ready).map((name) => {
    const w = byName.get(name)
    const timeout = specOf.get(name)?.readinessTimeoutSeconds
    return {
      name,
      kind: w?.kind ?? specOf.get(name)?.kind ?? 'Deployment',
      detail: w?.message ?? (w?.missing !== false ? 'not applied yet' : 'not ready'),
      ...(w?.firstAppliedAt ? { firstAppliedAt: w.firstAppliedAt } : {}),
      ...(timeout !== undefined ? { readinessTimeoutSeconds: timeout } : {}),
    }
  })
}

/** Pure: every workload of the rendered order is reported Ready. */
export function allWorkloadsReady(ctx: PlanningContext, readiness: ReadinessFacts | undefined): boolean {
  if (!readiness || !ctx.facts.render.ok) return false
  const byName = new Map(readiness.workloads.map((w) => [w.name, w]))
  return ctx.facts.render.resolved.order.every((n) => byName.get(n)?.ready === true)
}

/** Pure: during a rollback the snapshot's own order applies: every reported workload must be Ready. */
export function everyReportedWorkloadReady(readiness: ReadinessFacts): boolean {
  return readiness.workloads.length > 0 && readiness.workloads.every((w) => w.ready)
}

/** Pure: readiness of the running revision while settled: every reported workload Ready (no report: assume so). */
export function settledProblem(readiness: ReadinessFacts | undefined): SettledProblem | undefined {
  const w = readiness?.workloads.find((x) => !x.ready)
  if (!w) return undefined
  if (w.missing) return { reason: 'ChildMissing', message: `${w.kind} ${w.namespace ?? ''}/${w.objectName ?? w.name} of workload "${w.name}" is missing` }
  return { reason: 'WorkloadNotReady', message: `workload "${w.name}" (${w.kind}) is not ready: ${w.message ?? 'not ready'}` }
}

/**
 * Pure: why revision N's deployment failed for good (spec §7.3 T15, T16): the first workload (in
 * order) that failed, else its child Workflow, else an expired deadline (spec §6).
 */
export function deploymentFailure(ctx: PlanningContext, readiness: ReadinessFacts | undefined): Failure | undefined {
  const { status, recipe, facts, now } = ctx
  const revision = status.revision ?? 0
  const failed = readiness?.workloads.find((w) => w.failed)
  if (failed?.failed) return { reason: failed.failed.reason, message: failed.failed.message }
  if (hasSteps(recipe) && facts.workflow?.revision === revision && facts.workflow.phase === 'Failed') {
    return { reason: 'WorkflowFailed', message: facts.workflow.message ?? `the child Workflow of revision ${revision} failed` }
  }
  const deadline = readinessTimeout(notReadyWorkloads(ctx, readiness), status.phaseTransitionTime ?? now, progressDeadlineSeconds(recipe), now)
  return deadline.expired ? { reason: 'ReadinessTimeout', message: deadline.expired.message } : undefined
}

/** Pure: the test results when they are about `revision` (none otherwise). */
export function testResultsFor(ctx: PlanningContext, revision: number): TestFact[] {
  return ctx.facts.tests?.revision === revision ? ctx.facts.tests.results : []
}

/**
 * Pure: the first test that failed or ran out of time (spec §7.3 T18): its Job failed, with
 * `DeadlineExceeded` meaning a timeout, or it started more than `timeoutSeconds` ago.
 */
export function testFailure(ctx: PlanningContext, results: TestFact[]): Failure | undefined {
  for (const t of results) {
    const timeout = testTimeoutSeconds(ctx.recipe, t.name)
    if (t.phase === 'Failed') {
      if (t.failedReason === 'DeadlineExceeded') return { reason: 'TestTimeout', message: `test "${t.name}" did not finish within ${timeout}s` }
      return { reason: 'TestFailed', message: `test "${t.name}" failed${t.message ? `: ${t.message}` : ''}` }
    }
    if (t.phase !== 'Succeeded' && t.startTime && hasPassed(addSeconds(t.startTime, timeout), ctx.now)) {
      return { reason: 'TestTimeout', message: `test "${t.name}" did not finish within ${timeout}s` }
    }
  }
  return undefined
}
