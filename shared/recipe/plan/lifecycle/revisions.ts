/**
 * Revision bookkeeping in a recipe's status (spec §7.9): the `revisions[]` entries, which revision
 * a phase observes, where a rollback goes, and which snapshots may go. Pure.
 */
import type { WorkflowRecipe, WorkflowRecipeStatus } from '../../../schemas/workflowrecipe.js'
import type { LifecycleFacts } from '../lifecycle-facts.js'

type RevisionEntry = NonNullable<WorkflowRecipeStatus['revisions']>[number]

/** Snapshots kept beside the current, last good and in-flight revisions, unless the spec says otherwise. */
const DEFAULT_HISTORY_LIMIT = 5

/** Pure: the `revisions[]` entry of a revision; undefined for revision 0 or one not listed. */
export function revisionEntry(status: WorkflowRecipeStatus, revision: number | undefined): RevisionEntry | undefined {
  return revision ? status.revisions?.find((e) => e.revision === revision) : undefined
}

/** Merges `patch` into the `revisions[]` entry of `revision` (no entry: nothing changes). */
export function updateRevisionEntry(status: WorkflowRecipeStatus, revision: number, patch: Partial<RevisionEntry>): void {
  status.revisions = (status.revisions ?? []).map((e) => (e.revision === revision ? { ...e, ...patch } : e))
}

/** Pure: a revision once reached `Active` (spec §7.2, §7.3 T5): its entry says so, or it is the last good one. */
export function reachedActive(status: WorkflowRecipeStatus, revision: number): boolean {
  const entry = revisionEntry(status, revision)
  return revision > 0 && (revision === status.lastGoodRevision || entry?.state === 'Active' || entry?.state === 'Superseded')
}

/** Pure: the revision whose readiness the phase observes (the shell gathers facts for this one). */
export function observedRevision(status: WorkflowRecipeStatus): number {
  if (status.phase === 'Pending' || status.phase === 'Deploying' || status.phase === 'Testing') return status.revision ?? 0
  if (status.phase === 'RollingBack') return rollbackTarget(status)
  return status.currentRevision ?? 0
}

/** Pure: where a rollback goes: the requested revision, else the last good one. */
export function rollbackTarget(status: WorkflowRecipeStatus): number {
  return status.reason === 'ManualRollback' ? Number(status.observedRollback) : (status.lastGoodRevision ?? 0)
}

/**
 * Pure: the snapshots older than the newest `revisionHistoryLimit` revisions, oldest first, never
 * those of the current, last good or highest revision, nor the target of a rollback under way (spec §7.9).
 */
export function snapshotsToPrune(status: WorkflowRecipeStatus, recipe: WorkflowRecipe, facts: LifecycleFacts): number[] {
  const limit = recipe.spec.revisionHistoryLimit ?? DEFAULT_HISTORY_LIMIT
  const highest = status.revision ?? 0
  const keep = new Set([status.currentRevision ?? 0, status.lastGoodRevision ?? 0, highest])
  if (status.phase === 'RollingBack') keep.add(rollbackTarget(status))
  return [...facts.snapshots].filter((n) => n <= highest - limit && !keep.has(n)).sort((a, b) => a - b)
}
