import type { WorkflowRecipe, WorkflowRecipeStatus } from '../schemas/workflowrecipe.js'
import { spanSink } from './exporter.js'
import { recipeSpans } from './recipe-spans.js'

/** After a recipe's status write landed: records the revision, workload and test spans it ended. */
export function recordRecipeSpans(recipe: WorkflowRecipe, next: WorkflowRecipeStatus, now: string): void {
  const sink = spanSink()
  if (!sink.enabled) return
  for (const span of recipeSpans(recipe, next, now)) sink.record(span)
}
