/**
 * The child Workflow of a recipe with `steps[]` (spec §5.10): a purko `Workflow` in the
 * recipe's namespace, owned by the recipe, named `shorten(<recipe>-wf-<h8>, 63)` with `<h8>`
 * over the canonical rendered Workflow spec (so an unchanged Workflow keeps its name and is not
 * run again). `${...}` Workflow syntax passes through untouched. Pure.
 */
import { API_VERSION } from '../../schemas/labels.js'
import type { RenderedStep, RenderedWorkflow } from './rendered.js'
import { canonicalJson } from './digest.js'
import { childLabels, type RecipeRef } from './labels.js'
import { childWorkflowName } from './names.js'
import { childMeta, type Manifest } from './objects.js'
import { compact } from './pod-template.js'

/** One Workflow step from a rendered recipe step (`agent` → `agentRef`, `task` merged into `input`, `timeoutSeconds` → `timeout`). */
export function workflowStepOf(step: RenderedStep): Record<string, unknown> {
  const input = step.input !== undefined || step.task !== undefined
    ? { ...(step.input ?? {}), ...(step.task !== undefined ? { task: step.task } : {}) }
    : undefined
  return compact({
    name: step.name,
    description: step.description,
    agentRef: { name: step.agent },
    dependsOn: step.dependsOn && step.dependsOn.length > 0 ? [...step.dependsOn] : undefined,
    inputFrom: step.inputFrom && step.inputFrom.length > 0 ? step.inputFrom.map((i) => compact({ step: i.step, outputKey: i.outputKey })) : undefined,
    condition: step.condition,
    retryPolicy: step.retryPolicy ? compact({ ...step.retryPolicy }) : undefined,
    timeout: step.timeoutSeconds !== undefined ? { timeoutSeconds: step.timeoutSeconds } : undefined,
    input,
    model: step.model ? compact({ ...step.model }) : undefined,
  })
}

/** The Workflow `spec` (`parallelism`, `failureStrategy`, `timeout`, `parameters`, `description`, `steps`). */
export function workflowSpecOf(description: string | undefined, settings: RenderedWorkflow | undefined, steps: RenderedStep[]): Record<string, unknown> {
  const parameters = settings?.parameters
  return compact({
    description,
    parallelism: settings?.parallelism ?? 1,
    failureStrategy: settings?.failureStrategy ?? 'failFast',
    timeout: settings?.timeout ?? '30m',
    parameters: parameters && Object.keys(parameters).length > 0 ? { ...parameters } : undefined,
    steps: steps.map(workflowStepOf),
  })
}

/** The desired child Workflow (without digest). */
export function childWorkflowManifest(recipe: RecipeRef, description: string | undefined, settings: RenderedWorkflow | undefined, steps: RenderedStep[], revision: number): Manifest {
  const spec = workflowSpecOf(description, settings, steps)
  return {
    apiVersion: API_VERSION,
    kind: 'Workflow',
    metadata: childMeta(recipe, childWorkflowName(recipe.name, canonicalJson(spec)), recipe.namespace, childLabels(recipe, 'workflow', revision)),
    spec,
  }
}
