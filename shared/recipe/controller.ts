/**
 * The WorkflowRecipe controller (spec §7) as the shell drives it: its reads (gather.ts,
 * deletion.ts), one pure plan composing the drift, lifecycle and deletion planners
 * (plan/recipe-plan.ts), its child writes (act.ts) and its status write. A recipe plans, writes
 * and plans again up to four times in one reconcile (a fresh recipe goes Candidate…Deploying,
 * applies, then sees what it applied) and retries a lost race three times.
 */
import { armTickAlarmIfSooner, type ReconcileFrom } from '../ticks/alarm.js'
import { ConflictError } from '../core/errors.js'
import { UNCHANGED, type ControllerPlan, type Transition } from '../core/plan.js'
import { announce, reconcile, type Controller, type Reconciled } from '../engine/controller.js'
import type { CloudEventNaming } from '../engine/kinetic-events.js'
import { canonicalJson } from './plan/digest.js'
import { FINALIZER } from './plan/lifecycle/annotations.js'
import { isTemplate } from './plan/render.js'
import { planRecipeDeletion, planRecipePass, type DeletionFacts, type DeletionStep, type PassFacts, type PassPlan } from './plan/recipe-plan.js'
import type { WorkflowRecipe, WorkflowRecipeStatus } from '../schemas/workflowrecipe.js'
import { recordRecipeSpans } from '../telemetry/recipe-progress.js'
import { act } from './act.js'
import { deleteWave, deletionFacts, writeDeletionParent } from './deletion.js'
import type { RecipeDeps } from './deps.js'
import type { RecipeKube } from './kube-verbs.js'
import { passFacts, startFacts, type StartFacts } from './gather.js'
import { RecipeReads } from './reads.js'
import type { RecipeWork } from './work.js'

export type { RecipeDeps } from './deps.js'

const KIND = 'WorkflowRecipe'

/**
 * What one reconcile did: the shell's result (`applied` only when something was written or told,
 * since a recipe's passes may plan without writing), plus its cost for logs and benchmarks.
 */
export type RecipeReconciled = Reconciled<RecipePlan> & {
  /** The recipe's phase once the reconcile ended. */
  phase?: string
  /** Writes to the API server (children, snapshots, the recipe). */
  writes: number
  /** Reads made to plan. */
  reads: number
}

const IN_FLIGHT = new Set(['Candidate', 'Approved', 'Pending', 'Deploying', 'Testing', 'RollingBack'])
const SETTLED = new Set(['Active', 'Degraded'])

/**
 * An event about this recipe needs a reconcile: no status yet, a new generation, a deadline
 * passed, a revision in flight, or a deletion. Echoes of our own status writes are none of these.
 */
export function recipeIsDue(recipe: WorkflowRecipe, now: string): boolean {
  const st = recipe.status
  if (recipe.metadata.deletionTimestamp) return true
  if (!st?.phase) return true
  if ((recipe.metadata.generation ?? 0) > (st.observedGeneration ?? 0)) return true
  if (st.nextCheckAt && Date.parse(st.nextCheckAt) <= Date.parse(now)) return true
  return IN_FLIGHT.has(st.phase) && !isTemplate(recipe)
}

/**
 * The resync tick's share (spec §7.10, §7.8, §7.4): everything due, plus settled recipes (drift and
 * readiness are re-checked every tick) and recipes whose outcome a policy change may alter.
 */
export function recipeNeedsResync(recipe: WorkflowRecipe, now: string): boolean {
  if (recipeIsDue(recipe, now)) return true
  const phase = recipe.status?.phase ?? ''
  return SETTLED.has(phase) || phase === 'PendingApproval' || phase === 'Rejected'
}

/**
 * Pure: when the recipes tick should next look at this recipe: now when it is due (in flight,
 * deleting, a new generation, a passed deadline), else its next deadline; undefined at rest
 * (settled recipes are re-checked by the hourly heartbeat and by their children's events).
 */
export function recipeAlarmDue(recipe: WorkflowRecipe, now: string): string | undefined {
  if (recipeIsDue(recipe, now)) return now
  return recipe.status?.nextCheckAt
}

/** Pure: the due time a status write adds (in flight: now; else its deadline), for the recipes alarm. */
function statusAlarmDue(recipe: WorkflowRecipe, status: WorkflowRecipeStatus, now: string): string | undefined {
  if (status.phase && IN_FLIGHT.has(status.phase) && !isTemplate(recipe)) return now
  return status.nextCheckAt
}

/** What the recipe planner is told: a pass of a live recipe, or a deletion step; with the reconcile's working state. */
interface RecipeFacts {
  work: RecipeWork
  /** Workloads whose children the API server refused this reconcile (a later pass does not write them again). */
  failures: Map<string, string>
  start?: StartFacts
  pass?: PassFacts
  deletion?: DeletionFacts
}

interface RecipePlan extends ControllerPlan {
  work: RecipeWork
  pass?: PassPlan
  deletion?: DeletionStep
  /** The status the recipe has once the parent is written. */
  status: WorkflowRecipeStatus
  /** This pass's writes changed what the planner sees. */
  acted: boolean
}

/**
 * Reads a WorkflowRecipe fresh and moves it along its lifecycle (spec §7): render, policies,
 * prerequisites, readiness, tests and drift become facts; the pure planners decide; children are
 * written (finalizer and snapshot first), status last, guarded by resourceVersion. A lost race
 * re-plans from fresh state a few times, then reaches the Broker as a 409.
 */
export async function reconcileRecipe(deps: RecipeDeps<RecipeKube>, namespace: string, name: string, options: ReconcileFrom = {}): Promise<RecipeReconciled> {
  const done = await reconcile(recipeController(deps, options.tick !== true), deps, namespace, name)
  if (!done.plan) return { result: done.result, writes: 0, reads: 1 }
  const { work, transitions } = done.plan
  const phase = done.plan.deletion ? work.recipe.status?.phase : done.plan.status.phase
  return {
    plan: done.plan,
    result: work.writes > 0 || transitions.length > 0 ? 'applied' : 'unchanged',
    writes: work.writes, reads: work.reads.calls.reads + 1, ...(phase ? { phase } : {}),
  }
}

/** The controller of one reconcile; `arms`: a status write arms the recipes alarm (not when the tick itself runs). */
function recipeController(deps: RecipeDeps<RecipeKube>, arms: boolean): Controller<WorkflowRecipe, RecipeFacts, RecipePlan, RecipeKube> {
  return {
    kind: KIND,
    passes: 4,
    conflictRetries: 3,
    read: (_, namespace, name) => deps.kube.getRecipe(namespace, name),
    async gather(_, recipe) {
      const work = startWork(deps, recipe)
      const failures = new Map<string, string>()
      if (recipe.metadata.deletionTimestamp) {
        if (!(recipe.metadata.finalizers ?? []).includes(FINALIZER)) return UNCHANGED
        work.snapshots = (await work.reads.snapshots(work.uid)).byRevision
        return { work, failures, deletion: await deletionFacts(work) }
      }
      // A snapshot of a revision status never recorded is a crash's leftover, possibly of an older generation: not a fact.
      if (!isTemplate(recipe)) {
        const { byRevision, damaged } = await work.reads.snapshots(work.uid)
        // Never guessed at: a damaged snapshot is no revision to deploy, roll back to or prune from.
        for (const message of damaged) deps.log.warn({ namespace: work.namespace, name: work.name }, message)
        work.snapshots = new Map([...byRevision].filter(([n]) => n <= (recipe.status?.revision ?? 0)))
      }
      const start = await startFacts(work)
      return { work, failures, start, pass: await passFacts(work, recipe, start, failures, false) }
    },
    plan(recipe, facts, now) {
      const { work } = facts
      if (facts.deletion) {
        const step = planRecipeDeletion(recipe, facts.deletion, now)
        return { work, deletion: step, status: step.status ?? recipe.status ?? {}, transitions: step.transitions, acted: false }
      }
      const pass = planRecipePass(recipe, facts.pass!, now)
      return { work, pass, status: pass.status, transitions: pass.transitions, acted: false }
    },
    async writeChildren(_, recipe, facts, plan) {
      const { work } = facts
      work.transitions = []
      if (plan.deletion) {
        await deleteWave(work, plan.deletion)
        return { ...plan, transitions: [...plan.transitions, ...work.transitions, ...plan.deletion.last] }
      }
      const acted = await act(work, { ...recipe, status: plan.status }, plan.pass!, facts.start!.rendered, facts.failures)
      return { ...plan, transitions: [...plan.transitions, ...work.transitions], acted }
    },
    async nextPass(_, __, facts, plan) {
      if (!plan.acted || !plan.pass) return UNCHANGED
      const current: WorkflowRecipe = { ...facts.work.recipe, status: plan.status }
      return { object: current, facts: { ...facts, pass: await passFacts(facts.work, current, facts.start!, facts.failures, plan.pass.policyWarned) } }
    },
    async writeParent(_, recipe, plan) {
      const { work } = plan
      if (plan.deletion) return writeDeletionParent(work, plan.deletion)
      const before = work.recipe.status ?? {}
      if (canonicalJson(plan.status) === canonicalJson(before)) return
      try {
        await deps.kube.replaceRecipeStatus(work.namespace, work.name, work.resourceVersion, plan.status)
      } catch (err) {
        // Another reconcile won the race and re-plans the phase; the writes this one made are
        // real all the same, so they are still told (the retry finds them done and says nothing).
        if (err instanceof ConflictError) {
          await announce(deps, KIND, recipe, seedOf(work, recipe), plan.transitions.filter(isWorldChange), undefined, recipeEventNaming(recipe, before))
        }
        throw err
      }
      work.writes++
      recordRecipeSpans(work.recipe, plan.status, work.now)
      // A revision now in flight, or a deadline sooner than the one before: the recipes alarm fires by then.
      if (arms) await armTickAlarmIfSooner(deps, 'recipes-resync', work.recipe.status ? statusAlarmDue(work.recipe, before, work.now) : undefined, statusAlarmDue(work.recipe, plan.status, work.now))
    },
    eventSeed: (recipe, plan) => seedOf(plan.work, recipe),
    cloudEvents: (recipe, plan) => recipeEventNaming(recipe, plan.deletion ? plan.work.recipe.status ?? {} : plan.status),
  }
}

function startWork(deps: RecipeDeps<RecipeKube>, recipe: WorkflowRecipe): RecipeWork {
  const namespace = recipe.metadata.namespace ?? ''
  return {
    deps, recipe, namespace, name: recipe.metadata.name ?? '', uid: recipe.metadata.uid ?? '',
    resourceVersion: recipe.metadata.resourceVersion ?? '',
    reads: new RecipeReads(deps.kube, namespace), snapshots: new Map(), transitions: [], writes: 0, builds: new Map(),
    now: deps.now().toISOString(),
  }
}

/** Event names and CloudEvent ids repeat for a redelivery that repeats a reconcile: the resourceVersion planned on. */
function seedOf(work: RecipeWork, recipe: WorkflowRecipe): string {
  return `${work.uid}/${recipe.metadata.resourceVersion ?? ''}`
}

/**
 * spec §13: `dev.kinetic.recipe.*`, `data.recipe`, the generation and revision in every event,
 * ids over `<uid>|<revision>|<type>|<detail>`.
 */
export function recipeEventNaming(recipe: WorkflowRecipe, status: WorkflowRecipeStatus): CloudEventNaming {
  const revision = status.revision ?? 0
  return { name: 'recipe', data: { generation: recipe.metadata.generation ?? 0, revision }, idScope: `${recipe.metadata.uid ?? ''}|${revision}` }
}

/** Transitions that report a write to a child (not a phase the next attempt re-plans). */
function isWorldChange(t: Transition): boolean {
  return t.kind.startsWith('workload.') || t.kind === 'drift.corrected'
}
