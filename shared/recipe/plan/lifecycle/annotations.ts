/**
 * The annotations a person sets on a WorkflowRecipe to steer its lifecycle (spec §7.2), the
 * finalizer the planner asks for (spec §11), and the approval command it shows (spec §7.5). Pure.
 */
import type { WorkflowRecipe } from '../../../schemas/workflowrecipe.js'

export const FINALIZER = 'purko.io/recipe-finalizer'
export const ANNOTATION_APPROVE = 'purko.io/approve'
export const ANNOTATION_REJECT = 'purko.io/reject'
export const ANNOTATION_APPROVED_BY = 'purko.io/approved-by'
export const ANNOTATION_RETRY = 'purko.io/retry'
export const ANNOTATION_ROLLBACK = 'purko.io/rollback'
export const ANNOTATION_DEPRECATE = 'purko.io/deprecate'

/** Pure: the value of one annotation of the recipe; undefined when it is not set. */
export function annotationOf(recipe: WorkflowRecipe, key: string): string | undefined {
  return recipe.metadata.annotations?.[key]
}

/** Pure: who approved or rejected, from `purko.io/approved-by`; `unknown` when nobody is named. */
export function approverOf(recipe: WorkflowRecipe): string {
  return annotationOf(recipe, ANNOTATION_APPROVED_BY) ?? 'unknown'
}

/** Pure: the command a person runs to approve generation G (spec §7.5; the recipes MCP server shows it too). */
export function approveCommand(namespace: string, name: string, generation: number): string {
  return `kubectl annotate -n ${namespace} workflowrecipe/${name} ${ANNOTATION_APPROVE}=${generation}`
}
