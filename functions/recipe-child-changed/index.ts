// Handles: dev.knative.apiserver.resource.{add,update,delete} for the children of WorkflowRecipes
// (Deployments, StatefulSets, DaemonSets, Jobs, CronJobs, Services, MCPServers, Workflows labelled
// purko.io/recipe).
// Trigger: knative/triggers/recipe-child-changed.yaml (kineticsource=resources, the kinds below). The
// Trigger passes every object of those kinds the source watches (all Workflows and MCPServers, step
// Jobs, MCP Deployments): one without the purko.io/recipe labels is answered 202 without an API call.
// Writes: what the owning recipe needs (its status, children, revision ConfigMaps, Events): a
// child that became Ready moves Deploying on, one that failed or went away is noticed at once.
import type { Hono } from 'hono'
import type { RecipeDeps } from '../../shared/recipe/controller.js'
import type { FunctionKube } from './kube-verbs.js'
import { baseApp } from '../../shared/http/app.js'
import { RESOURCE_ADD, RESOURCE_DELETE, RESOURCE_UPDATE, resourceEvents, type AcceptedEvents } from '../../shared/http/event-guard.js'
import { readCloudEvent } from '../../shared/http/cloudevent.js'
import { objectEventData } from '../../shared/http/object-event.js'
import { LABEL_RECIPE, LABEL_RECIPE_NAMESPACE } from '../../shared/recipe/plan/labels.js'

// The controller loads on the first event that names a recipe.
const engine = () => import('../../shared/recipe/controller.js')

const ObjectEventData = objectEventData('recipe child')

/** Pure: the recipe a child's labels name, or null when they name none (then it is not ours to act on). */
export function ownerOf(labels: unknown): { namespace: string; name: string } | null {
  if (typeof labels !== 'object' || labels === null) return null
  const namespace = (labels as Record<string, unknown>)[LABEL_RECIPE_NAMESPACE]
  const name = (labels as Record<string, unknown>)[LABEL_RECIPE]
  if (typeof namespace !== 'string' || namespace === '' || typeof name !== 'string' || name === '') return null
  return { namespace, name }
}

/** The kinds a WorkflowRecipe deploys or runs (spec §15): its Trigger's `kind` filters. */
export const RECIPE_CHILD_KINDS = ['Deployment', 'StatefulSet', 'DaemonSet', 'Job', 'CronJob', 'Service', 'MCPServer', 'Workflow']

/** What this function's Triggers deliver (knative/triggers/); anything else posted is refused with 400. */
export const EVENTS: readonly AcceptedEvents[] = [
  ...resourceEvents(RECIPE_CHILD_KINDS, [RESOURCE_ADD, RESOURCE_UPDATE, RESOURCE_DELETE]),
]

/** The recipe-child-changed function: re-plans the recipe that owns a changed child. */
export function createApp(deps: RecipeDeps<FunctionKube>): Hono {
  const app = baseApp(deps.log, undefined, EVENTS)
  app.post('/', async (c) => {
    const event = await readCloudEvent(c, ObjectEventData)
    const log = deps.log.child({ ceId: event.id, ceType: event.type })
    // Reference mode carries no labels; the source sends whole objects.
    const owner = ownerOf(event.data.metadata?.labels)
    if (!owner) return c.body(null, 202)
    const { reconcileRecipe } = await engine()
    const outcome = await reconcileRecipe(deps, owner.namespace, owner.name)
    log.info({
      namespace: owner.namespace, name: owner.name, child: `${event.data.kind ?? 'object'} ${event.data.metadata?.namespace}/${event.data.metadata?.name}`,
      result: outcome.result, writes: outcome.writes, phase: outcome.phase,
    }, 'Reconciled WorkflowRecipe after a child change')
    return c.body(null, 202)
  })
  return app
}
