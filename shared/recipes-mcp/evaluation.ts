/**
 * What deploy-recipe tells about the recipe it wrote (spec §14.3): sections 1-6 and 10 run
 * in-process through the controller's own functions (renderRecipe, buildManifests,
 * evaluatePolicies) to fill `specValid`, `errors`, `policy`, `approvalRequired` and `objects`;
 * `approveCommand` is spec §7.5's. Pure: the policies and namespace labels come in.
 */
import { mcpNamespaceOf, sandboxNamespaceOf, type RecipeConfig } from '../recipe/plan/config.js'
import { approveCommand } from '../recipe/plan/lifecycle/annotations.js'
import { buildManifests } from '../recipe/plan/manifests.js'
import { evaluatePolicies, type NamespaceLabels, type PolicyViolation } from '../recipe/plan/policy.js'
import { isTemplate, renderRecipe } from '../recipe/plan/render.js'
import type { SpecError } from '../recipe/plan/rendered.js'
import { WorkflowRecipeSchema, type WorkflowRecipe } from '../schemas/workflowrecipe.js'
import type { WorkflowRecipePolicy } from '../schemas/workflowrecipepolicy.js'

export interface DeployEvaluation {
  specValid: boolean
  errors: SpecError[]
  /** `unavailable` says what the server could not read to evaluate (policies, namespace labels). */
  policy: { compliant: boolean; evaluated: string[]; violations: PolicyViolation[]; unavailable?: string }
  approvalRequired: boolean
  approveCommand?: string
  objects: { kind: string; namespace: string; name: string }[]
}

const NOT_EVALUATED: DeployEvaluation['policy'] = { compliant: true, evaluated: [], violations: [] }

/** Pure: the namespaces whose labels the policies may read (the recipe's and both target namespaces, spec §1.1). */
export function evaluationNamespaces(namespace: string, config: RecipeConfig): string[] {
  return [...new Set([namespace, mcpNamespaceOf(config, namespace), sandboxNamespaceOf(config, namespace)])]
}

/**
 * Pure: the evaluation of the recipe as the API server stored it (or would, on a dry run). A
 * spec that does not render is not evaluated against policies, as the controller does; a
 * template creates no objects and is never approved (spec §7.7).
 */
export function evaluateDeployment(
  written: WorkflowRecipe, config: RecipeConfig, policies: readonly WorkflowRecipePolicy[], namespaceLabels: NamespaceLabels,
): DeployEvaluation {
  const parsed = WorkflowRecipeSchema.safeParse(written)
  if (!parsed.success) {
    const errors = parsed.error.issues.map((i) => ({ reason: 'InvalidSpec', field: i.path.map(String).join('.'), message: i.message }))
    return { specValid: false, errors, policy: NOT_EVALUATED, approvalRequired: false, objects: [] }
  }
  const recipe = parsed.data
  const rendered = renderRecipe(recipe, config)
  if (!rendered.ok) return { specValid: false, errors: rendered.errors, policy: NOT_EVALUATED, approvalRequired: false, objects: [] }
  const outcome = evaluatePolicies(recipe, rendered, undefined, policies, namespaceLabels)
  const policy = { compliant: outcome.compliant, evaluated: outcome.evaluated, violations: outcome.violations }
  if (isTemplate(recipe)) return { specValid: true, errors: [], policy, approvalRequired: false, objects: [] }
  const revision = (recipe.status?.revision ?? 0) + 1
  const objects = buildManifests(recipe, rendered, config, revision).children.map((c) => ({ kind: c.kind, namespace: c.namespace, name: c.name }))
  const approvalRequired = outcome.approval.required
  const generation = recipe.metadata.generation ?? 1
  return {
    specValid: true, errors: [], policy, approvalRequired, objects,
    ...(approvalRequired ? { approveCommand: approveCommand(recipe.metadata.namespace ?? 'default', recipe.metadata.name ?? '', generation) } : {}),
  }
}
