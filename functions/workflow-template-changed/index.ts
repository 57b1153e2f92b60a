// Handles: dev.knative.apiserver.resource.{add,update,delete} for purko.io Workflows (the same
// ApiServerSource as workflow-changed, its own Trigger).
// Trigger: knative/triggers/workflow-template-changed.yaml (kind Workflow, from the one ApiServerSource).
// Writes: a template's PingSource, its scheduled runs (catch-up), its status, pruned runs.
import type { Hono } from 'hono'
import { z } from 'zod'
import type { EngineDeps } from '../../shared/engine/controller.js'
import type { FunctionKube } from './kube-verbs.js'
import { reconcileTemplate, templateResult, templateRuns } from '../../shared/template/controller.js'
import { baseApp } from '../../shared/http/app.js'
import { RESOURCE_ADD, RESOURCE_DELETE, RESOURCE_UPDATE, resourceEvents, type AcceptedEvents } from '../../shared/http/event-guard.js'
import { readCloudEvent } from '../../shared/http/cloudevent.js'
import { objectEventData } from '../../shared/http/object-event.js'
import { isTerminalPhase } from '../../shared/workflow/plan/run-status.js'
import { ObjectMetaSchema } from '../../shared/schemas/object-meta.js'
import { WorkflowStatusSchema, type Workflow } from '../../shared/schemas/workflow.js'
import { isTemplate, templateOf } from '../../shared/template/run-builder.js'
import { recentRunOf } from '../../shared/template/plan/template-plan.js'

/** Event data: a whole Workflow (Resource mode) or an ObjectReference (Reference mode). */
const WorkflowEventData = objectEventData('Workflow')

/** What the function looks at in an event's Workflow: metadata, the trigger block, the status. */
const SeenSchema = z.looseObject({
  metadata: ObjectMetaSchema,
  spec: z.looseObject({ trigger: z.unknown().optional() }).optional(),
  status: WorkflowStatusSchema.optional(),
})

/** The event's Workflow as the run-builder predicates read it (only metadata and spec.trigger matter). */
function seenWorkflow(data: unknown): Workflow | null {
  const seen = SeenSchema.safeParse(data)
  if (!seen.success) return null
  return { apiVersion: 'purko.io/v1alpha1', kind: 'Workflow', metadata: seen.data.metadata, spec: { steps: [], ...(seen.data.spec ?? {}) }, ...(seen.data.status ? { status: seen.data.status } : {}) } as unknown as Workflow
}

/** What this function's Triggers deliver (knative/triggers/); anything else posted is refused with 400. */
export const EVENTS: readonly AcceptedEvents[] = [
  ...resourceEvents(['Workflow'], [RESOURCE_ADD, RESOURCE_UPDATE, RESOURCE_DELETE]),
]

/** The workflow-template-changed function: keeps templates' schedules, histories and status. */
export function createApp(deps: EngineDeps<FunctionKube>): Hono {
  const app = baseApp(deps.log, undefined, EVENTS)
  app.post('/', async (c) => {
    const event = await readCloudEvent(c, WorkflowEventData)
    const log = deps.log.child({ ceId: event.id, ceType: event.type })
    const deleted = event.type.endsWith('.delete')
    const data = event.data
    const namespace = data.metadata?.namespace ?? data.namespace!
    const name = data.metadata?.name ?? data.name!
    let seen = data.metadata ? seenWorkflow(data) : null
    if (!seen && !deleted) {
      // Reference mode: one GET says what it is.
      seen = await deps.kube.getWorkflow(namespace, name)
      if (!seen) return c.body(null, 202)
    }
    if (!seen) return c.body(null, 202) // a deleted object named only by reference: nothing to learn
    const template = templateOf(seen)
    if (template !== undefined) {
      // A run: its template's activeRuns, recentRuns and history may change.
      if (await runAlreadyListed(deps, namespace, template, seen, deleted)) return c.body(null, 202)
      const outcome = await reconcileTemplate(deps, namespace, template, { kind: 'changed' })
      log.info({ namespace, template, run: name, result: templateResult(outcome), ...templateRuns(outcome) }, 'Reconciled template of a run')
      return c.body(null, 202)
    }
    // A template's deletion takes its PingSource and runs with it (ownerReferences); a plain
    // Workflow is none of this function's business.
    if (deleted || !isTemplate(seen)) return c.body(null, 202)
    const outcome = await reconcileTemplate(deps, namespace, name, { kind: 'changed' })
    log.info({ namespace, name, result: templateResult(outcome), ...templateRuns(outcome) }, 'Reconciled template')
    return c.body(null, 202)
  })
  return app
}

/**
 * One GET of the template: whether its status already shows this run as it is now (the echo
 * of a step update that changed neither phase nor times), so there is nothing to write.
 */
async function runAlreadyListed(deps: EngineDeps<FunctionKube>, namespace: string, template: string, run: Workflow, deleted: boolean): Promise<boolean> {
  const parent = await deps.kube.getWorkflow(namespace, template)
  if (!parent) return true
  const listed = parent.status?.recentRuns?.find((r) => r.name === run.metadata.name)
  if (deleted) return listed === undefined && isTerminalPhase(run.status?.phase)
  if (!listed) return false
  const now = recentRunOf(run)
  return JSON.stringify([now.name, now.phase, now.trigger, now.startTime, now.completionTime])
    === JSON.stringify([listed.name, listed.phase, listed.trigger, listed.startTime, listed.completionTime])
}
