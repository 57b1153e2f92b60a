/**
 * The transitions that take precedence over the recipe's phase (spec §7.3): first sight (T1),
 * deprecation (T26, T27), a new generation (T2), the template rule (spec §7.7) and the
 * edge-triggered retry and rollback annotations (T24, T23).
 */
import type { WorkflowRecipeStatus } from '../../../schemas/workflowrecipe.js'
import { annotationOf, ANNOTATION_DEPRECATE, ANNOTATION_RETRY, ANNOTATION_ROLLBACK } from './annotations.js'
import { announce, enterPhase, truncate, type HandlerOutcome, type PlanningContext } from './context.js'
import { reachedActive, revisionEntry, updateRevisionEntry } from './revisions.js'

const TEMPLATE_MESSAGE = 'Template: validated, never deployed'

function isDeprecationRequested(ctx: PlanningContext): boolean {
  return annotationOf(ctx.recipe, ANNOTATION_DEPRECATE) === 'true'
}

function isNewGeneration(ctx: PlanningContext): boolean {
  return ctx.generation > (ctx.status.observedGeneration ?? 0)
}

/** spec §7.3 T1: a recipe seen for the first time enters Candidate; a template does so with reason Template (spec §7.7). */
export function enterCandidateOnFirstSight(ctx: PlanningContext): HandlerOutcome {
  const { status, generation } = ctx
  if (status.phase) return 'next'
  status.observedGeneration = generation
  if (ctx.template) enterPhase(ctx, 'Candidate', 'Template', TEMPLATE_MESSAGE)
  else enterPhase(ctx, 'Candidate', 'Created', `Recipe created; validating generation ${generation}`)
  return 'acted'
}

/**
 * A Deprecated recipe (spec §7.3 T27, §7.6): back to Candidate once `purko.io/deprecate` is no longer
 * "true"; a new generation is recorded and ignored; retry and rollback values are only noted.
 */
export function handleDeprecatedRecipe(ctx: PlanningContext): HandlerOutcome {
  const { status, generation } = ctx
  if (status.phase !== 'Deprecated') return 'next'
  if (!isDeprecationRequested(ctx)) {
    enterPhase(ctx, 'Candidate', 'Undeprecated', `No longer deprecated; re-evaluating generation ${generation}`)
    return 'acted'
  }
  if (isNewGeneration(ctx)) {
    status.observedGeneration = generation
    announce(ctx, 'SpecChangeIgnored', `generation ${generation} ignored: the recipe is deprecated`)
    return 'acted'
  }
  return actOnEdgeTriggeredAnnotations(ctx) === 'acted' ? 'acted' : 'stay'
}

/** spec §7.3 T26: `purko.io/deprecate: "true"` retires the recipe from any phase; its children stay as they are. */
export function deprecateOnRequest(ctx: PlanningContext): HandlerOutcome {
  if (!isDeprecationRequested(ctx)) return 'next'
  ctx.upToDate = { status: 'False', reason: 'Deprecated', message: 'the recipe is deprecated' }
  enterPhase(ctx, 'Deprecated', 'Deprecated', 'Deprecated by its owner; children are left as they are')
  return 'acted'
}

/**
 * spec §7.3 T2, §7.6: a new generation goes back to Candidate. An in-flight revision is abandoned (its
 * test Jobs and child Workflow go unless it was still Pending), and an older generation's approval is dropped.
 */
export function restartOnNewGeneration(ctx: PlanningContext): HandlerOutcome {
  const { status, generation, now } = ctx
  if (!isNewGeneration(ctx)) return 'next'
  status.observedGeneration = generation
  let abandoned = ''
  if (status.phase === 'Pending' || status.phase === 'Deploying' || status.phase === 'Testing') {
    const revision = status.revision ?? 0
    if (revisionEntry(status, revision)?.state === 'InProgress') updateRevisionEntry(status, revision, { state: 'Abandoned', finishedAt: now, reason: 'NewGeneration' })
    if (status.phase !== 'Pending') ctx.abandonedRevision = revision
    abandoned = `; revision ${revision} abandoned`
  }
  if (status.approval && status.approval.generation !== generation) delete status.approval
  enterPhase(ctx, 'Candidate', 'NewGeneration', `Generation ${generation} is being validated${abandoned}`)
  return 'acted'
}

/** A template never leaves Candidate (spec §7.7): one found elsewhere returns there, and in Candidate nothing fires. */
export function holdTemplateInCandidate(ctx: PlanningContext): HandlerOutcome {
  if (!ctx.template) return 'next'
  if (ctx.status.phase !== 'Candidate') {
    enterPhase(ctx, 'Candidate', 'Template', TEMPLATE_MESSAGE)
    return 'acted'
  }
  ctx.status.reason = 'Template'
  return 'stay'
}

/** spec §7.2: the phases in which a retry is acted on (T24); elsewhere it is only noted. */
function isRetryAllowed(status: WorkflowRecipeStatus): boolean {
  if (status.phase === 'Failed' || status.phase === 'RollbackFailed') return true
  if (status.phase === 'Rejected') return status.reason === 'PolicyViolation' || status.reason === 'ApprovalExpired'
  if (status.phase === 'Active' || status.phase === 'Degraded') {
    const upToDate = status.conditions?.find((c) => c.type === 'UpToDate')
    return upToDate?.status === 'False' && (upToDate.reason === 'RolledBack' || upToDate.reason === 'ManualRollback')
  }
  return false
}

/** spec §7.3 T24: a new `purko.io/retry` value re-attempts the latest generation as a new revision, where spec §7.2 allows it. */
function retryOnRequest(ctx: PlanningContext, value: string): HandlerOutcome {
  const { status } = ctx
  status.observedRetry = truncate(value, 253)
  if (isRetryAllowed(status)) {
    enterPhase(ctx, 'Candidate', 'RetryRequested', `Retry "${value}" requested: re-attempting generation ${ctx.generation} as a new revision`)
  } else {
    announce(ctx, 'RetryIgnored', `${ANNOTATION_RETRY}="${value}" ignored in phase ${status.phase}`)
  }
  return 'acted'
}

/** spec §7.3 T23: a new `purko.io/rollback` value returns to that revision if it once ran Active and its snapshot is still there. */
function rollBackOnRequest(ctx: PlanningContext, value: string): HandlerOutcome {
  const { status } = ctx
  status.observedRollback = truncate(value, 253)
  const target = /^[1-9][0-9]*$/.test(value) ? Number(value) : 0
  const inState = status.phase === 'Active' || status.phase === 'Degraded' || status.phase === 'Failed' || status.phase === 'RollbackFailed'
  if (inState && target > 0 && reachedActive(status, target) && ctx.facts.snapshots.includes(target)) {
    enterPhase(ctx, 'RollingBack', 'ManualRollback', `Rolling back to revision ${target} (${ANNOTATION_ROLLBACK})`)
  } else {
    const why = !inState ? `in phase ${status.phase}` : `revision ${value} never reached Active or has no snapshot`
    announce(ctx, 'RollbackIgnored', `${ANNOTATION_ROLLBACK}="${value}" ignored: ${why}`)
  }
  return 'acted'
}

/**
 * The edge-triggered annotations (spec §7.2): a retry (T24) or rollback (T23) value that differs
 * from the one recorded in status is acted on, or noted as ignored, exactly once.
 */
export function actOnEdgeTriggeredAnnotations(ctx: PlanningContext): HandlerOutcome {
  const retry = annotationOf(ctx.recipe, ANNOTATION_RETRY)
  if (retry !== undefined && retry !== ctx.status.observedRetry) return retryOnRequest(ctx, retry)
  const rollback = annotationOf(ctx.recipe, ANNOTATION_ROLLBACK)
  if (rollback !== undefined && rollback !== ctx.status.observedRollback) return rollBackOnRequest(ctx, rollback)
  return 'next'
}
