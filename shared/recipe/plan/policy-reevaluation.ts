/**
 * Re-evaluation after a WorkflowRecipePolicy changed and at the policy resync tick
 * (spec §10.4, §10.5): which recipes to re-plan, which namespaces' labels evaluation reads, and each
 * policy's next status from the latest evaluation of every recipe it matches.
 *
 * Pure: recipes, policies and namespace labels come in as read; `now` is an argument. The
 * re-plan itself is the recipe reconciler's (it reads everything again), so what this module
 * decides is only which recipes are worth that work.
 */
import type { WorkflowRecipe } from '../../schemas/workflowrecipe.js'
import type { WorkflowRecipePolicy, WorkflowRecipePolicyStatus } from '../../schemas/workflowrecipepolicy.js'
import type { RecipeConfig } from './config.js'
import { canonicalJson } from './digest.js'
import {
  evaluatePolicies, policyMatches, policyStatus, policyViolations, recipePolicyStatus,
  type NamespaceLabels, type PolicyInput, type PolicyOutcome, type RecipeEvaluation,
} from './policy.js'
import { renderRecipe } from './render.js'
import type { RenderOk } from './rendered.js'

/** A recipe whose latest generation renders, with that rendering: the only recipes with a latest evaluation. */
export interface RenderedRecipe {
  recipe: WorkflowRecipe
  rendered: RenderOk
}

/** Pure: whether the recipe is being deleted (deletion never looks at policies, spec §11). */
export function isDeleting(recipe: WorkflowRecipe): boolean {
  return recipe.metadata.deletionTimestamp !== undefined && recipe.metadata.deletionTimestamp !== null
}

/**
 * Pure: spec §1 steps 1-5 of each recipe's latest generation. Recipes being deleted and recipes whose
 * latest generation is invalid are left out: neither has an evaluation to count. Templates are
 * kept, as their PolicyCompliant is evaluated with their own values (spec §7.7).
 */
export function renderForPolicies(recipes: readonly WorkflowRecipe[], config: RecipeConfig): RenderedRecipe[] {
  const out: RenderedRecipe[] = []
  for (const recipe of recipes) {
    if (isDeleting(recipe)) continue
    const rendered = renderRecipe(recipe, config)
    if (rendered.ok) out.push({ recipe, rendered })
  }
  return out
}

/** Pure: the recipe's own namespace (namespaceSelector) and the target namespaces of its workloads and tests (spec §10.6), sorted, once each. */
export function namespacesOf(recipes: readonly WorkflowRecipe[], rendered: readonly RenderedRecipe[]): string[] {
  const names = new Set<string>()
  for (const r of recipes) names.add(recipeNamespace(r))
  for (const { rendered: out } of rendered) {
    for (const w of out.workloads) names.add(w.namespace)
    for (const t of out.tests) names.add(t.namespace)
  }
  return [...names].sort()
}

/** The namespace renderRecipe assumes for a recipe without one. */
function recipeNamespace(recipe: WorkflowRecipe): string {
  return recipe.metadata.namespace ?? 'default'
}

/** Pure: spec §10.2 outcome of every matching policy and Pod Security for one rendered recipe (no rule reads the built objects). */
export function evaluateRecipe(r: RenderedRecipe, policies: readonly PolicyInput[], labels: NamespaceLabels): PolicyOutcome {
  return evaluatePolicies(r.recipe, r.rendered, undefined, policies, labels)
}

const MESSAGE_MAX = 1024

/**
 * Pure: the latest evaluations of the recipes `policy` matches, with only that policy's
 * violations. Each policy is evaluated on its own (spec §10.2), so the built-in Pod Security check is
 * never attributed to a policy that happens to be named `pod-security`.
 */
export function policyEvaluations(policy: PolicyInput, rendered: readonly RenderedRecipe[], labels: NamespaceLabels): RecipeEvaluation[] {
  return rendered
    .filter((r) => policyMatches(policy, r.recipe, labels))
    .map((r) => ({
      namespace: recipeNamespace(r.recipe),
      recipe: r.recipe.metadata.name ?? '',
      violations: policyViolations(policy, r.recipe, r.rendered).map((v) => ({ ...v, message: cut(v.message, MESSAGE_MAX) })),
    }))
}

/** A policy status to write: the resourceVersion it was planned on guards the write. */
export interface PolicyStatusWrite {
  name: string
  resourceVersion: string
  status: WorkflowRecipePolicyStatus
}

/**
 * Pure: the status writes of spec §10.5 for `policies`: one per policy whose status changed (an
 * evaluation time alone is no change, so a second run over the same state plans nothing).
 */
export function planPolicyStatuses(
  policies: readonly WorkflowRecipePolicy[], rendered: readonly RenderedRecipe[], labels: NamespaceLabels, now: string,
): PolicyStatusWrite[] {
  const writes: PolicyStatusWrite[] = []
  for (const policy of policies) {
    const status = policyStatus(policy, policyEvaluations(policy, rendered, labels), now)
    if (status) writes.push({ name: policy.metadata.name ?? '', resourceVersion: policy.metadata.resourceVersion ?? '', status })
  }
  return writes
}

/**
 * Pure: the recipes to re-plan after policy `name` was created, changed or deleted (spec §10.4): every
 * recipe one of the known versions of the policy matches (the fresh one, and the one the event
 * carried, which on a delete is the last), or whose last evaluation listed it. Recipes being
 * deleted are left to deletion. In namespace, then name order.
 */
export function recipesAffectedBy(
  name: string, versions: readonly PolicyInput[], recipes: readonly WorkflowRecipe[], labels: NamespaceLabels,
): WorkflowRecipe[] {
  return sortRecipes(recipes.filter((r) => !isDeleting(r) && (
    (r.status?.policy?.evaluated ?? []).includes(name) || versions.some((p) => policyMatches(p, r, labels)))))
}

/**
 * Pure: whether the resync tick should re-plan a rendered recipe given a fresh outcome: what
 * its status records of the policies differs from it (a violation appeared or went away, a
 * policy started or stopped matching), it could not be evaluated last time, or it waits in a
 * state that T25 leaves (`Rejected` by policy, `PendingApproval`, whose recorded evaluation is
 * the one it was parked with).
 */
export function needsReevaluation(recipe: WorkflowRecipe, outcome: PolicyOutcome): boolean {
  const st = recipe.status
  if (st?.phase === 'PendingApproval') return true
  if (st?.phase === 'Rejected' && st.reason === 'PolicyViolation') return true
  const compliant = st?.conditions?.find((c) => c.type === 'PolicyCompliant')
  if (compliant?.status === 'Unknown') return true
  const fresh = recipePolicyStatus(outcome)
  const recorded = { ...fresh, violations: fresh.violations.map((v) => ({ ...v, message: cut(v.message, MESSAGE_MAX) })) }
  return canonicalJson(st?.policy ?? null) !== canonicalJson(recorded)
}

/** Pure: namespace, then name order. */
export function sortRecipes(recipes: readonly WorkflowRecipe[]): WorkflowRecipe[] {
  const keyOf = (r: WorkflowRecipe) => [recipeNamespace(r), r.metadata.name ?? ''] as const
  return [...recipes].sort((a, b) => {
    const [an, ax] = keyOf(a)
    const [bn, bx] = keyOf(b)
    return an < bn ? -1 : an > bn ? 1 : ax < bx ? -1 : ax > bx ? 1 : 0
  })
}

function cut(text: string, max: number): string {
  return text.length > max ? text.slice(0, max) : text
}
