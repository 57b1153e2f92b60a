// Handles: dev.knative.apiserver.resource.{add,update} (and .ref.*) for purko.io Workflows.
// Trigger: knative/triggers/workflow-changed.yaml (kind Workflow, from the one ApiServerSource).
// Writes: step Jobs, outputs ConfigMaps, the run-id annotation and Workflow status.
import type { Hono } from 'hono'
import { z } from 'zod'
import type { EngineDeps } from '../../shared/workflow/controller.js'
import type { FunctionKube } from './kube-verbs.js'
import { baseApp } from '../../shared/http/app.js'
import { RESOURCE_ADD, RESOURCE_UPDATE, resourceEvents, type AcceptedEvents } from '../../shared/http/event-guard.js'
import { readCloudEvent } from '../../shared/http/cloudevent.js'
import { objectEventData } from '../../shared/http/object-event.js'
import { mayNeedWork, type RunView } from '../../shared/workflow/plan/run-status.js'
import { ObjectMetaSchema } from '../../shared/schemas/object-meta.js'
import { WorkflowStatusSchema } from '../../shared/schemas/workflow.js'

/** Metadata and status only: enough to recognise an echo without parsing (or loading) the rest. */
const RunViewSchema = z.looseObject({ metadata: ObjectMetaSchema, status: WorkflowStatusSchema.optional() })

// The planner is loaded on the first event that needs it: echoes of our own writes never do.
const engine = () => import('../../shared/workflow/controller.js')

/** Event data: a whole Workflow (Resource mode) or an ObjectReference (Reference mode). */
const WorkflowEventData = objectEventData('Workflow')

/** What this function's Triggers deliver (knative/triggers/); anything else posted is refused with 400. */
export const EVENTS: readonly AcceptedEvents[] = [
  ...resourceEvents(['Workflow'], [RESOURCE_ADD, RESOURCE_UPDATE]),
]

/** The workflow-changed function: starts runs, acts on approve/deny/cancel/rerun, reports spec errors. */
export function createApp(deps: EngineDeps<FunctionKube>): Hono {
  const app = baseApp(deps.log, undefined, EVENTS)
  app.post('/', async (c) => {
    const event = await readCloudEvent(c, WorkflowEventData)
    const log = deps.log.child({ ceId: event.id, ceType: event.type })
    if (event.type.endsWith('.delete')) return c.body(null, 202) // Jobs and ConfigMaps go with their owner
    const data = event.data
    if (data.metadata) {
      // Resource mode: our own status writes come back here; spot them without a GET.
      const seen = RunViewSchema.safeParse(data)
      if (seen.success && !mayNeedWork(seen.data as RunView)) return c.body(null, 202)
    }
    const namespace = data.metadata?.namespace ?? data.namespace!
    const name = data.metadata?.name ?? data.name!
    const { reconcileWorkflow } = await engine()
    const outcome = await reconcileWorkflow(deps, namespace, name, { kind: 'full' })
    log.info({ namespace, name, result: outcome.result, created: outcome.plan?.created.length ?? 0, phase: outcome.plan?.plan.status?.phase }, 'Reconciled Workflow')
    return c.body(null, 202)
  })
  return app
}
