// Handles: dev.knative.apiserver.resource.{add,update} for purko.io WorkflowRecipes, and
// dev.knative.sources.ping from recipes-resync (hourly heartbeat) and recipes-resync-alarm
// (while a recipe is in flight or has a deadline: shared/ticks/alarm-plan.ts).
// Triggers: knative/triggers/workflowrecipe-changed.yaml (kind WorkflowRecipe),
// workflowrecipe-changed-resync.yaml (kineticsource=recipesresync).
// Writes: the finalizer and status of WorkflowRecipes, their children (workloads, Services, copied
// Secrets, MCPServers, test Jobs, the child Workflow), revision ConfigMaps, and Events.
import type { Hono } from 'hono'
import { z } from 'zod'
import { sweep } from '../../shared/engine/limited.js'
import type { RecipeDeps } from '../../shared/recipe/controller.js'
import type { FunctionKube } from './kube-verbs.js'
import { baseApp } from '../../shared/http/app.js'
import { PING, RESOURCE_ADD, RESOURCE_UPDATE, resourceEvents, type AcceptedEvents } from '../../shared/http/event-guard.js'
import { readCloudEvent } from '../../shared/http/cloudevent.js'
import { objectEventData, objectKeyOf } from '../../shared/http/object-event.js'
import { ANNOTATION_APPROVE, ANNOTATION_DEPRECATE, ANNOTATION_REJECT, ANNOTATION_RETRY, ANNOTATION_ROLLBACK } from '../../shared/recipe/plan/lifecycle/annotations.js'
import { isTemplate } from '../../shared/recipe/plan/render.js'
import { earliest } from '../../shared/ticks/alarm-plan.js'
import { readAlarm, settleTickAlarm } from '../../shared/ticks/alarm.js'
import { WorkflowRecipeSchema, type WorkflowRecipe } from '../../shared/schemas/workflowrecipe.js'

// The controller loads on the first event that needs it.
const engine = () => import('../../shared/recipe/controller.js')

const ObjectEventData = objectEventData('WorkflowRecipe')
const PingData = z.unknown()
const PING_TYPE = 'dev.knative.sources.ping'
/** Recipes reconciled at once by the resync tick; each may apply a wave of children. */
const CONCURRENCY = 4
/** Most recipes one tick takes, the longest overdue first; the rest are still due a minute later. */
const MAX_PER_TICK = 256
/** No reconcile starts after this much of a tick, so the tick ends well within the Service's 90 s. */
const START_BUDGET_MS = 40_000

/** Phases in which nothing happens until a fact, an annotation or a deadline changes (spec §7.1); a template rests in Candidate (§7.7). */
const RESTING: ReadonlySet<string> = new Set(['Active', 'Degraded', 'PendingApproval', 'Failed', 'Rejected', 'Deprecated', 'RollbackFailed'])

/**
 * Pure: whether the recipe in an event is one of our own status or finalizer writes coming back,
 * with nothing new to act on: not deleting, this generation observed, resting, every user action
 * (retry, rollback, deprecate, approve, reject, template) already what the status recorded.
 * When in doubt it answers false, and the recipe is re-planned (which writes nothing if nothing changed).
 */
export function isSettledEcho(recipe: WorkflowRecipe): boolean {
  const { metadata: meta, status } = recipe
  if (meta.deletionTimestamp || !status?.phase) return false
  const resting = isTemplate(recipe) ? status.phase === 'Candidate' && status.reason === 'Template' : RESTING.has(status.phase)
  if (!resting) return false
  if (meta.generation === undefined || meta.generation !== status.observedGeneration) return false
  const ann = meta.annotations ?? {}
  if (ann[ANNOTATION_RETRY] !== undefined && ann[ANNOTATION_RETRY] !== status.observedRetry) return false
  if (ann[ANNOTATION_ROLLBACK] !== undefined && ann[ANNOTATION_ROLLBACK] !== status.observedRollback) return false
  if ((ann[ANNOTATION_DEPRECATE] === 'true') !== (status.phase === 'Deprecated')) return false
  const G = String(meta.generation)
  const approved = status.conditions?.find((c) => c.type === 'Approved')
  for (const key of [ANNOTATION_APPROVE, ANNOTATION_REJECT]) {
    const value = ann[key]
    if (value === undefined) continue
    // A decision on this generation is acted on while it waits for one.
    if (value === G) {
      if (status.phase === 'PendingApproval') return false
      continue
    }
    // Any other value is ignored once, and the Approved condition of this generation says so.
    if (approved?.observedGeneration !== meta.generation || !(approved.message ?? '').includes(`${key}=${JSON.stringify(value)}`)) return false
  }
  return true
}

/** What this function's Triggers deliver (knative/triggers/); anything else posted is refused with 400. */
export const EVENTS: readonly AcceptedEvents[] = [
  ...resourceEvents(['WorkflowRecipe'], [RESOURCE_ADD, RESOURCE_UPDATE]),
  { kineticsource: 'recipesresync', types: [PING] },
]

/** The workflowrecipe-changed function: renders, deploys, tests and keeps each WorkflowRecipe. */
export function createApp(deps: RecipeDeps<FunctionKube>): Hono {
  const app = baseApp(deps.log, undefined, EVENTS)
  app.post('/', async (c) => {
    if (c.req.header('ce-type') === PING_TYPE) {
      await resync(deps, (await readCloudEvent(c, PingData)).id)
      return c.body(null, 202)
    }
    const event = await readCloudEvent(c, ObjectEventData)
    const log = deps.log.child({ ceId: event.id, ceType: event.type })
    // A deletion shows as an update with deletionTimestamp (the finalizer waits); the final delete is nothing to do.
    if (event.type.endsWith('.delete')) return c.body(null, 202)
    const data = event.data
    if (data.metadata) {
      // Resource mode: our own finalizer and status writes come back here.
      const seen = WorkflowRecipeSchema.safeParse(data)
      if (seen.success && isSettledEcho(seen.data)) {
        const { recipeIsDue } = await engine()
        if (!recipeIsDue(seen.data, deps.now().toISOString())) return c.body(null, 202)
      }
    }
    const { namespace, name } = objectKeyOf(data)
    const { reconcileRecipe } = await engine()
    const outcome = await reconcileRecipe(deps, namespace, name)
    log.info({ namespace, name, result: outcome.result, writes: outcome.writes, phase: outcome.phase }, 'Reconciled WorkflowRecipe')
    return c.body(null, 202)
  })
  return app
}

/**
 * The resync tick: one LIST of every WorkflowRecipe, then a reconcile of each that needs one: due
 * (its nextCheckAt has come: approval expiry, a readiness or test deadline), in flight, deleting,
 * or settled (drift and readiness are re-checked every tick, lost child events made up for).
 */
async function resync(deps: RecipeDeps<FunctionKube>, ceId: string): Promise<void> {
  const log = deps.log.child({ ceId, ceType: PING_TYPE })
  const now = deps.now().toISOString()
  // Read before the list: an arm after it makes the settle below a lost race (alarm-plan.ts).
  const alarm = await readAlarm(deps, 'recipes-resync')
  const all = await deps.kube.listAllRecipes()
  const { recipeNeedsResync, recipeAlarmDue, reconcileRecipe } = await engine()
  const due = all.filter((r) => recipeNeedsResync(r, now))
    .sort((a, b) => (a.status?.nextCheckAt ?? '').localeCompare(b.status?.nextCheckAt ?? ''))
    .slice(0, MAX_PER_TICK)
  const { applied, failed, deferred } = due.length === 0 ? { applied: 0, failed: 0, deferred: 0 }
    : await sweep(due, CONCURRENCY, log, 'Could not resync WorkflowRecipe', async (recipe) =>
      (await reconcileRecipe(deps, recipe.metadata.namespace ?? 'default', recipe.metadata.name ?? '', { tick: true })).result === 'applied',
    { now: deps.now, ms: START_BUDGET_MS })
  // What this round changed is looked at again a minute later; else the earliest deadline listed.
  const next = applied + failed + deferred > 0 ? now : earliest(all.map((r) => recipeAlarmDue(r, now)))
  await settleTickAlarm({ ...deps, log }, 'recipes-resync', alarm, next)
  log.info({ recipes: all.length, due: due.length, applied, failed, deferred }, 'WorkflowRecipe resync finished')
}
