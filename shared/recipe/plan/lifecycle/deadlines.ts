/**
 * The deadlines of the lifecycle (spec §7.10): derived from timestamps in the status and the
 * spec each time a recipe is planned, never kept in memory. Pure: `now` is always an argument.
 */
import type { WorkflowRecipe } from '../../../schemas/workflowrecipe.js'

const DEFAULT_PROGRESS_DEADLINE_SECONDS = 600
const DEFAULT_TEST_TIMEOUT_SECONDS = 300

/** Pure: the ISO time `seconds` after `iso`. */
export function addSeconds(iso: string, seconds: number): string {
  return new Date(Date.parse(iso) + seconds * 1000).toISOString()
}

/** Pure: the deadline is set and `now` is at or past it. */
export function hasPassed(deadline: string | undefined, now: string): boolean {
  return deadline !== undefined && Date.parse(deadline) <= Date.parse(now)
}

/** Pure: `spec.progressDeadlineSeconds` (Pending, Deploying, RollingBack), 600 unless set. */
export function progressDeadlineSeconds(recipe: WorkflowRecipe): number {
  return recipe.spec.progressDeadlineSeconds ?? DEFAULT_PROGRESS_DEADLINE_SECONDS
}

/** Pure: how long the test named `name` may run, 300 seconds unless its spec says otherwise. */
export function testTimeoutSeconds(recipe: WorkflowRecipe, name: string): number {
  return (recipe.spec.tests ?? []).find((t) => t.name === name)?.timeoutSeconds ?? DEFAULT_TEST_TIMEOUT_SECONDS
}
