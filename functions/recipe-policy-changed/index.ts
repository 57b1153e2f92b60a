// Handles: dev.knative.apiserver.resource.{add,update,delete} for purko.io WorkflowRecipePolicies, and
// dev.knative.sources.ping from recipe-policies-resync (every 5 minutes).
// Triggers: knative/triggers/recipe-policy-changed.yaml (kind WorkflowRecipePolicy),
// recipe-policy-changed-resync.yaml (kineticsource=recipepolicyresync).
// Writes: WorkflowRecipePolicy status; through reconcileRecipe, whatever re-planning a recipe writes.
import type { Hono } from 'hono'
import { z } from 'zod'
import type { RecipeDeps } from '../../shared/recipe/controller.js'
import type { FunctionKube } from './kube-verbs.js'
import { baseApp } from '../../shared/http/app.js'
import { PING, RESOURCE_ADD, RESOURCE_DELETE, RESOURCE_UPDATE, resourceEvents, type AcceptedEvents } from '../../shared/http/event-guard.js'
import { readCloudEvent } from '../../shared/http/cloudevent.js'
import { WorkflowRecipePolicySchema } from '../../shared/schemas/workflowrecipepolicy.js'

// The recipe engine (renderer, planners) loads on the first event that needs it: echoes never do.
const engine = () => import('../../shared/recipe/policies.js')

/** A cluster-scoped policy: the whole object (Resource mode) or an ObjectReference (Reference mode). */
const PolicyEventData = z.looseObject({
  kind: z.string().optional(),
  name: z.string().optional(),
  metadata: z.looseObject({ name: z.string().min(1) }).optional(),
}).refine((d) => d.metadata !== undefined || (d.name !== undefined && d.name !== ''), 'neither a WorkflowRecipePolicy nor an ObjectReference')
const PingData = z.unknown()
const PING_TYPE = 'dev.knative.sources.ping'

/** What this function's Triggers deliver (knative/triggers/); anything else posted is refused with 400. */
export const EVENTS: readonly AcceptedEvents[] = [
  ...resourceEvents(['WorkflowRecipePolicy'], [RESOURCE_ADD, RESOURCE_UPDATE, RESOURCE_DELETE]),
  { kineticsource: 'recipepolicyresync', types: [PING] },
]

/** The recipe-policy-changed function: re-evaluates recipes when a policy changes, and keeps policy statuses current. */
export function createApp(deps: RecipeDeps<FunctionKube>): Hono {
  const app = baseApp(deps.log, undefined, EVENTS)
  app.post('/', async (c) => {
    if (c.req.header('ce-type') === PING_TYPE) {
      const event = await readCloudEvent(c, PingData)
      const log = deps.log.child({ ceId: event.id, ceType: event.type })
      const { reevaluateAllPolicies } = await engine()
      const outcome = await reevaluateAllPolicies(deps, log)
      log.info(outcome, 'WorkflowRecipePolicy resync finished')
      return c.body(null, 202)
    }
    const event = await readCloudEvent(c, PolicyEventData)
    const log = deps.log.child({ ceId: event.id, ceType: event.type })
    const name = event.data.metadata?.name ?? event.data.name!
    const seen = event.data.metadata ? WorkflowRecipePolicySchema.safeParse(event.data) : undefined
    const policy = seen?.success ? seen.data : null
    // Our own status writes come back as updates of an observed generation. Skipping one loses
    // nothing: a spec change bumps the generation, and the resync tick re-evaluates everything.
    if (event.type.endsWith('.update') && policy && policy.metadata.generation !== undefined
      && policy.metadata.generation === policy.status?.observedGeneration && policy.status.lastEvaluationTime !== undefined) {
      return c.body(null, 202)
    }
    const { reevaluatePolicy } = await engine()
    const outcome = await reevaluatePolicy(deps, name, policy, log)
    log.info({ name, ...outcome }, 'Re-evaluated WorkflowRecipes after a WorkflowRecipePolicy change')
    return c.body(null, 202)
  })
  return app
}
