/**
 * The shell of recipe-policy-changed (spec §10.4, §10.5): reads recipes, policies and
 * namespace labels, lets the pure planner (shared/recipe/plan/policy-reevaluation.ts) pick the
 * recipes worth re-planning and the policy statuses that changed, re-plans each recipe through
 * reconcileRecipe (which reads everything again) and writes the statuses, guarded by
 * resourceVersion.
 */
import { ConflictError, TransientError } from '../core/errors.js'
import type { Kube } from '../kube/port.js'
import type { Logger } from '../log.js'
import type { NamespaceLabels, PolicyInput } from './plan/policy.js'
import {
  evaluateRecipe, namespacesOf, needsReevaluation, planPolicyStatuses, recipesAffectedBy, renderForPolicies, sortRecipes,
  type PolicyStatusWrite,
} from './plan/policy-reevaluation.js'
import type { WorkflowRecipe } from '../schemas/workflowrecipe.js'
import { forEachLimited, sweep } from '../engine/limited.js'
import { reconcileRecipe, type RecipeDeps } from './controller.js'
import type { RecipePolicyKube } from './kube-verbs.js'

/** Recipes re-planned at once; each is a handful of API calls. */
const CONCURRENCY = 4
/** Namespaces read at once. */
const NAMESPACE_READS = 8
/**
 * No re-plan starts after this much of an invocation, so it ends within the Service's 90 s;
 * what is left still looks stale to the next tick (its recorded policy outcome differs from a
 * fresh one), which re-plans it.
 */
const START_BUDGET_MS = 40_000

/** What one invocation did, for the log line and tests. */
export interface ReevaluationOutcome {
  /** Recipes re-planned (attempted). */
  recipes: number
  /** Of those, the ones whose reconcile wrote something. */
  applied: number
  failed: number
  /** Re-plans not started because the tick's budget was spent. */
  deferred: number
  /** Policy statuses written. */
  statuses: number
}

/** Labels of namespaces, each read at most once per invocation; a missing namespace has none. */
class NamespaceLabelCache {
  private readonly labels: Record<string, Readonly<Record<string, string>> | undefined> = {}
  private readonly read = new Set<string>()
  constructor(private readonly kube: Pick<Kube, 'getNamespace'>) {}

  async load(names: readonly string[]): Promise<NamespaceLabels> {
    const missing = names.filter((n) => !this.read.has(n))
    await forEachLimited(missing, NAMESPACE_READS, async (name) => {
      this.read.add(name)
      const ns = await this.kube.getNamespace(name)
      this.labels[name] = ns?.metadata?.labels ?? undefined
    })
    return this.labels
  }
}

/**
 * After an add, update or delete of policy `name`: re-plans every recipe the policy matches now
 * or matched (the event's copy of the policy counts, which is the only one left after a delete),
 * then writes the policy's status when it changed. TransientError when a re-plan failed, after
 * the status was written, so the Broker redelivers; the resync tick would get there too.
 */
export async function reevaluatePolicy(deps: RecipeDeps<RecipePolicyKube>, name: string, fromEvent: PolicyInput | null, log: Logger): Promise<ReevaluationOutcome> {
  const [current, recipes] = await Promise.all([deps.kube.getRecipePolicy(name), deps.kube.listAllRecipes()])
  const cache = new NamespaceLabelCache(deps.kube)
  const versions = [current, fromEvent].filter((p): p is PolicyInput => p !== null)
  const affected = recipesAffectedBy(name, versions, recipes, await cache.load(namespacesOf(recipes, [])))
  const { applied, failed, deferred } = await replan(deps, affected, log, START_BUDGET_MS)
  let statuses = 0
  if (current) {
    const rendered = renderForPolicies(affected, deps.recipes)
    const labels = await cache.load(namespacesOf(affected, rendered))
    const written = await writeStatuses(deps.kube, planPolicyStatuses([current], rendered, labels, deps.now().toISOString()), log)
    if (written.error !== undefined) throw written.error // 409 on a lost race: the redelivery plans on the fresh policy
    statuses = written.count
  }
  if (failed > 0) throw new TransientError(`Could not re-plan ${failed} of ${affected.length} WorkflowRecipes after a change of WorkflowRecipePolicy ${name}`)
  return { recipes: affected.length, applied, failed, deferred, statuses }
}

/**
 * The policy resync tick: one LIST of recipes and one of policies, a fresh evaluation of every
 * recipe, a re-plan of each whose recorded policy outcome is stale or that waits in a state a
 * policy change can end (spec §10.4), then every policy status that changed. Failures are logged
 * and left to the next tick.
 */
export async function reevaluateAllPolicies(deps: RecipeDeps<RecipePolicyKube>, log: Logger): Promise<ReevaluationOutcome> {
  const [recipes, policies] = await Promise.all([deps.kube.listAllRecipes(), deps.kube.listRecipePolicies()])
  const rendered = renderForPolicies(recipes, deps.recipes)
  const labels = await new NamespaceLabelCache(deps.kube).load(namespacesOf(recipes, rendered))
  const due = sortRecipes(rendered.filter((r) => needsReevaluation(r.recipe, evaluateRecipe(r, policies, labels))).map((r) => r.recipe))
  const { applied, failed, deferred } = await replan(deps, due, log, START_BUDGET_MS)
  const written = await writeStatuses(deps.kube, planPolicyStatuses(policies, rendered, labels, deps.now().toISOString()), log)
  return { recipes: due.length, applied, failed: failed + written.failed, deferred, statuses: written.count }
}

/** Re-plans each recipe (at most CONCURRENCY at once); none starts once `budgetMs` has passed. */
async function replan(deps: RecipeDeps<RecipePolicyKube>, recipes: readonly WorkflowRecipe[], log: Logger, budgetMs: number) {
  return sweep(recipes, CONCURRENCY, log, 'Could not re-plan WorkflowRecipe', async (r) =>
    (await reconcileRecipe(deps, r.metadata.namespace ?? 'default', r.metadata.name ?? '')).result === 'applied',
  { now: deps.now, ms: budgetMs })
}

/** Writes each planned status; trouble with one policy does not stop the others, and the first error is handed back. */
async function writeStatuses(kube: Pick<Kube, 'replaceRecipePolicyStatus'>, writes: readonly PolicyStatusWrite[], log: Logger): Promise<{ count: number; failed: number; error?: unknown }> {
  let count = 0
  let failed = 0
  let error: unknown
  for (const w of writes) {
    try {
      await kube.replaceRecipePolicyStatus(w.name, w.resourceVersion, w.status)
      count++
    } catch (err) {
      failed++
      error ??= err
      log[err instanceof ConflictError ? 'info' : 'warn']({ name: w.name, err: (err as Error).message }, `Could not write status of WorkflowRecipePolicy ${w.name}`)
    }
  }
  return error === undefined ? { count, failed } : { count, failed, error }
}
