// Handles: dev.knative.apiserver.resource.update for batch/v1 Jobs labelled purko.io/workflow.
// Trigger: knative/triggers/step-job-finished.yaml (kind Job, from the one ApiServerSource; Jobs without purko.io/workflow are answered 202).
// Writes: the step output (outputs ConfigMap), the next step Jobs, and Workflow status.
import type { Hono } from 'hono'
import { z } from 'zod'
import type { EngineDeps } from '../../shared/workflow/controller.js'
import type { FunctionKube } from './kube-verbs.js'
import { baseApp } from '../../shared/http/app.js'
import { RESOURCE_UPDATE, resourceEvents, type AcceptedEvents } from '../../shared/http/event-guard.js'
import { readCloudEvent } from '../../shared/http/cloudevent.js'
import { jobFactFrom } from '../../shared/workflow/plan/job-facts.js'
import type { V1Job } from '@kubernetes/client-node'

// The planner is loaded on the first Job that needs it: Jobs still running or not ours never do.
const engine = () => import('../../shared/workflow/controller.js')

/** Event data: the Job as the watch delivered it (Resource mode). */
const JobEventData = z.looseObject({
  metadata: z.looseObject({ name: z.string().min(1), namespace: z.string().min(1), labels: z.record(z.string(), z.string()).optional() }),
  status: z.looseObject({}).optional(),
})

/** What this function's Triggers deliver (knative/triggers/); anything else posted is refused with 400. */
export const EVENTS: readonly AcceptedEvents[] = [
  ...resourceEvents(['Job'], [RESOURCE_UPDATE]),
]

/** The step-job-finished function: captures a finished step's output and advances the DAG. */
export function createApp(deps: EngineDeps<FunctionKube>): Hono {
  const app = baseApp(deps.log, undefined, EVENTS)
  app.post('/', async (c) => {
    const event = await readCloudEvent(c, JobEventData)
    const job = event.data as V1Job
    const fact = jobFactFrom(job)
    if (!fact || fact.state === 'Active') return c.body(null, 202) // not ours, or still running
    const namespace = event.data.metadata.namespace
    const { reconcileWorkflow } = await engine()
    const outcome = await reconcileWorkflow(deps, namespace, fact.workflow, { kind: 'job', job: fact })
    deps.log.info(
      { ceId: event.id, ceType: event.type, namespace, name: fact.workflow, job: fact.name, state: fact.state, result: outcome.result, created: outcome.plan?.created.length ?? 0 },
      'Advanced Workflow',
    )
    return c.body(null, 202)
  })
  return app
}
