// Handles: dev.knative.sources.ping from the resync PingSource (the hourly heartbeat) and its
// alarm resync-alarm (every minute while a run is unfinished: shared/ticks/alarm-plan.ts).
// Trigger: knative/triggers/resync-tick.yaml (source kineticsource=resync).
// Reads: every Workflow, and the step Jobs of each namespace with unfinished runs; a run that may
// need work, fresh.
// Writes: whatever each unfinished Workflow needs: timeouts, due retries, results of lost events;
// then every scheduled template's catch-up (a run for a missed fire), PingSource and status.
import type { V1Job } from '@kubernetes/client-node'
import type { Hono } from 'hono'
import { z } from 'zod'
import { reconcileWorkflow, type EngineDeps } from '../../shared/workflow/controller.js'
import type { FunctionKube } from './kube-verbs.js'
import { baseApp } from '../../shared/http/app.js'
import { PING, type AcceptedEvents } from '../../shared/http/event-guard.js'
import { readCloudEvent } from '../../shared/http/cloudevent.js'
import { sweep } from '../../shared/engine/limited.js'
import { isTerminalPhase, mayNeedWork } from '../../shared/workflow/plan/run-status.js'
import { jobFactFrom, type JobFact } from '../../shared/workflow/plan/job-facts.js'
import { isQuietRun } from '../../shared/workflow/plan/quiet-run.js'
import { LABEL_WORKFLOW } from '../../shared/schemas/labels.js'
import { ForbiddenError } from '../../shared/core/errors.js'
import type { Logger } from '../../shared/log.js'
import { reconcileTemplate } from '../../shared/template/controller.js'
import { isTemplate } from '../../shared/template/run-builder.js'
import { readAlarm, settleTickAlarm } from '../../shared/ticks/alarm.js'

/** Ping data is free-form (and absent when the PingSource sets none). */
const PingData = z.unknown()

/** Workflows reconciled at once; the API server, not this process, is the bottleneck. */
const CONCURRENCY = 4

/** What this function's Triggers deliver (knative/triggers/); anything else posted is refused with 400. */
export const EVENTS: readonly AcceptedEvents[] = [
  { kineticsource: 'resync', types: [PING] },
]

/** The resync-tick function: re-drives every unfinished Workflow from fresh state. */
export function createApp(deps: EngineDeps<FunctionKube>): Hono {
  const app = baseApp(deps.log, undefined, EVENTS)
  app.post('/', async (c) => {
    const event = await readCloudEvent(c, PingData)
    const log = deps.log.child({ ceId: event.id, ceType: event.type })
    // Read before the list: an arm after it makes the settle below a lost race (alarm-plan.ts).
    const alarm = await readAlarm(deps, 'resync')
    const all = await deps.kube.listWorkflows()
    const unfinished = all.filter((wf) => !isTerminalPhase(wf.status?.phase) || mayNeedWork(wf))
    // One look at the step Jobs of each namespace with unfinished runs: a run whose Jobs are all
    // still running, with nothing due, needs no read of its own, so 1,000 busy runs cost a tick a
    // few lists instead of thousands of calls. Jobs are listed only where the namespace grants it.
    const jobs = jobsByRun(await stepJobsOf(deps, new Set(unfinished.map((wf) => wf.metadata.namespace ?? 'default')), log))
    const now = deps.now().toISOString()
    const workflows = unfinished.filter((wf) => !isQuietRun(wf, jobs.get(`${wf.metadata.namespace}/${wf.metadata.name}`) ?? [], now))
    const { applied, failed } = await sweep(workflows, CONCURRENCY, log, 'Could not resync Workflow', async (wf) =>
      (await reconcileWorkflow(deps, wf.metadata.namespace ?? 'default', wf.metadata.name ?? '', { kind: 'full' })).result === 'applied')
    // Catch-up: a ping that never came (adapter down, event lost) still gets its run here.
    const templates = all.filter((wf) => isTemplate(wf) && Boolean(wf.spec.trigger?.schedule?.cron?.trim()))
    const caught = await sweep(templates, CONCURRENCY, log, 'Could not resync template', async (wf) =>
      (await reconcileTemplate(deps, wf.metadata.namespace ?? 'default', wf.metadata.name ?? '', { kind: 'changed' })).result === 'applied')
    // Every minute while any run is unfinished; none at rest, when the hourly heartbeat is the safety net.
    const inFlight = unfinished.some((wf) => !isTemplate(wf))
    await settleTickAlarm({ ...deps, log }, 'resync', alarm, inFlight ? deps.now().toISOString() : undefined)
    log.info({ unfinished: unfinished.length, workflows: workflows.length, applied, failed, templates: templates.length, templatesApplied: caught.applied, templatesFailed: caught.failed }, 'Resync finished')
    return c.body(null, 202)
  })
  return app
}

/**
 * The step Jobs of `namespaces`. A namespace that has not opted in (403) gives none: its runs
 * are then not quiet, so each is reconciled and reports NamespaceNotEnabled itself.
 */
async function stepJobsOf(deps: EngineDeps<FunctionKube>, namespaces: ReadonlySet<string>, log: Logger): Promise<V1Job[]> {
  const lists = await Promise.all([...namespaces].map((namespace) => deps.kube.listJobsLabelled(namespace, LABEL_WORKFLOW).catch((err: unknown) => {
    if (!(err instanceof ForbiddenError)) throw err
    log.debug({ namespace }, 'Namespace has not opted in to Workflows: its runs are resynced one by one')
    return []
  })))
  return lists.flat()
}

/** Step Jobs by `namespace/workflow` (the owner's real name, also for shortened labels). */
function jobsByRun(jobs: readonly V1Job[]): Map<string, JobFact[]> {
  const byRun = new Map<string, JobFact[]>()
  for (const job of jobs) {
    const fact = jobFactFrom(job)
    if (!fact) continue
    const key = `${job.metadata?.namespace}/${fact.workflow}`
    const list = byRun.get(key)
    if (list) list.push(fact)
    else byRun.set(key, [fact])
  }
  return byRun
}
