/**
 * The transitions of a revision on its way out (spec §7.3 T12-T18): Pending waits for its
 * prerequisites, Deploying for its workloads and child Workflow, Testing for its tests; a
 * failure rolls back to the last good revision when it can.
 */
import type { TestFact } from '../lifecycle-facts.js'
import { enterPhase, type Failure, type HandlerOutcome, type PlanningContext } from './context.js'
import { addSeconds, hasPassed, progressDeadlineSeconds } from './deadlines.js'
import { allWorkloadsReady, deploymentFailure, hasSteps, readinessFor, testFailure, testResultsFor } from './readiness-checks.js'
import { updateRevisionEntry } from './revisions.js'

/** Announces a finished test Job of the revision under test as `test.finished` (spec §13); a running one is skipped. */
function announceTestFinished(ctx: PlanningContext, test: TestFact): void {
  if (test.phase !== 'Succeeded' && test.phase !== 'Failed') return
  ctx.transitions.push({
    kind: 'test.finished', type: test.phase === 'Failed' ? 'Warning' : 'Normal', reason: 'TestFinished', message: `test "${test.name}" ${test.phase === 'Failed' ? 'failed' : 'succeeded'}`,
    record: false, data: { test: test.name, jobName: test.jobName, outcome: test.phase, revision: ctx.status.revision ?? 0, generation: ctx.generation },
  })
}

/**
 * spec §7.3 T15, T16 and T18: revision N failed. With `rollback.automatic` on and a last good revision
 * whose snapshot exists, the recipe rolls back to it; otherwise it is Failed.
 */
function failRevision(ctx: PlanningContext, failure: Failure): HandlerOutcome {
  const { status, recipe, facts } = ctx
  const revision = status.revision ?? 0
  updateRevisionEntry(status, revision, { state: 'Failed', finishedAt: ctx.now, reason: failure.reason })
  const lastGood = status.lastGoodRevision ?? 0
  const automatic = recipe.spec.rollback?.automatic !== false
  if (automatic && lastGood > 0 && lastGood !== revision && facts.snapshots.includes(lastGood)) {
    enterPhase(ctx, 'RollingBack', 'AutomaticRollback', `revision ${revision} failed: ${failure.reason}: ${failure.message}; rolling back to revision ${lastGood}`)
  } else {
    enterPhase(ctx, 'Failed', failure.reason, failure.message)
  }
  return 'acted'
}

/**
 * spec §7.3 T17: revision N becomes current and last good, its entry Active and the former Active one
 * Superseded; its finished tests are announced before the phase change.
 */
function activateRevision(ctx: PlanningContext): HandlerOutcome {
  const { status } = ctx
  const revision = status.revision ?? 0
  status.revisions = (status.revisions ?? []).map((e) => (e.revision === revision ? { ...e, state: 'Active', finishedAt: ctx.now } : e.state === 'Active' ? { ...e, state: 'Superseded' } : e))
  status.currentRevision = revision
  status.lastGoodRevision = revision
  ctx.upToDate = { status: 'True', reason: 'UpToDate', message: `revision ${revision} runs generation ${ctx.generation}` }
  for (const test of testResultsFor(ctx, revision)) announceTestFinished(ctx, test)
  enterPhase(ctx, 'Active', 'RevisionActive', `Revision ${revision} is active`)
  return 'acted'
}

/** Pending (spec §7.3 T12, T13): deploy once every prerequisite holds (spec §7.4); fail when they do not within the progress deadline. */
export function fromPending(ctx: PlanningContext): HandlerOutcome {
  const { status, recipe, facts, now } = ctx
  if (facts.prerequisites.length === 0) { // T12
    enterPhase(ctx, 'Deploying', 'PrerequisitesMet', `Prerequisites met; deploying revision ${status.revision ?? 0}`)
    return 'acted'
  }
  const deadlineSeconds = progressDeadlineSeconds(recipe)
  if (hasPassed(addSeconds(status.phaseTransitionTime ?? now, deadlineSeconds), now)) { // T13
    updateRevisionEntry(status, status.revision ?? 0, { state: 'Failed', finishedAt: now, reason: 'PrerequisitesTimeout' })
    enterPhase(ctx, 'Failed', 'PrerequisitesTimeout', `prerequisites not met within ${deadlineSeconds}s: ${facts.prerequisites.map((p) => p.message).join('; ')}`)
    return 'acted'
  }
  return 'stay'
}

/**
 * Deploying (spec §7.3 T14-T16): `currentRevision` turns to N with N's first write (spec §7.9); a failure
 * fails the revision; with every workload Ready, nothing left to prune (spec §7.11) and the
 * child Workflow (if any) done, testing begins, also when there are no tests.
 */
export function fromDeploying(ctx: PlanningContext): HandlerOutcome {
  const { status, recipe, facts } = ctx
  const revision = status.revision ?? 0
  const readiness = readinessFor(ctx, revision)
  if (readiness?.applied && status.currentRevision !== revision) status.currentRevision = revision
  const failure = deploymentFailure(ctx, readiness)
  if (failure) return failRevision(ctx, failure)
  const workflowDone = !hasSteps(recipe) || (facts.workflow?.revision === revision && (facts.workflow.phase === 'Succeeded' || facts.workflow.phase === 'CompletedWithErrors'))
  if (allWorkloadsReady(ctx, readiness) && readiness!.pruned && workflowDone) { // T14
    const tests = (recipe.spec.tests ?? []).length
    enterPhase(ctx, 'Testing', tests > 0 ? 'Testing' : 'NoTests', tests > 0 ? `Every workload of revision ${revision} is Ready; running ${tests} test${tests === 1 ? '' : 's'}` : `Every workload of revision ${revision} is Ready; no tests`)
    return 'acted'
  }
  return 'stay'
}

/**
 * Testing (spec §7.3 T17, T18): with no tests the revision is active at once; a failed or timed-out test
 * fails it; once every test succeeded, with the workloads still Ready, it is active.
 */
export function fromTesting(ctx: PlanningContext): HandlerOutcome {
  const revision = ctx.status.revision ?? 0
  const specTests = ctx.recipe.spec.tests ?? []
  if (specTests.length === 0) return activateRevision(ctx)
  const results = testResultsFor(ctx, revision)
  const failure = testFailure(ctx, results)
  if (failure) {
    for (const test of results) announceTestFinished(ctx, test)
    return failRevision(ctx, failure)
  }
  const byName = new Map(results.map((t) => [t.name, t]))
  const readiness = readinessFor(ctx, revision)
  const stillReady = !readiness || allWorkloadsReady(ctx, readiness)
  if (stillReady && specTests.every((t) => byName.get(t.name)?.phase === 'Succeeded')) return activateRevision(ctx)
  return 'stay'
}
