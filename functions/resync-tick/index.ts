// Handles: dev.knative.sources.ping from the resync PingSource (every minute).
// Trigger: knative/triggers/resync-tick.yaml (source kineticsource=resync).
// Writes: whatever each unfinished Workflow needs: timeouts, due retries, results of lost events.
import type { Hono } from 'hono'
import { z } from 'zod'
import { reconcileWorkflow, type EngineDeps } from '../../shared/engine/reconcile-workflow.js'
import { baseApp } from '../../shared/http/app.js'
import { readCloudEvent } from '../../shared/http/cloudevent.js'
import { ConflictError } from '../../shared/errors.js'
import { isTerminalPhase, mayNeedWork } from '../../shared/reconcile/run-status.js'

/** Ping data is free-form (and absent when the PingSource sets none). */
const PingData = z.unknown()

/** Workflows reconciled at once; the API server, not this process, is the bottleneck. */
const CONCURRENCY = 4

/** The resync-tick function: re-drives every unfinished Workflow from fresh state. */
export function createApp(deps: EngineDeps): Hono {
  const app = baseApp(deps.log)
  app.post('/', async (c) => {
    const event = await readCloudEvent(c, PingData)
    const log = deps.log.child({ ceId: event.id, ceType: event.type })
    const workflows = (await deps.kube.listWorkflows()).filter((wf) => !isTerminalPhase(wf.status?.phase) || mayNeedWork(wf))
    let failed = 0
    let applied = 0
    const queue = [...workflows]
    const worker = async () => {
      for (let wf = queue.shift(); wf; wf = queue.shift()) {
        const namespace = wf.metadata.namespace ?? 'default'
        const name = wf.metadata.name ?? ''
        try {
          const outcome = await reconcileWorkflow(deps, namespace, name, { kind: 'full' })
          if (outcome.result === 'applied') applied++
        } catch (err) {
          // One Workflow's trouble must not starve the others; the next tick retries it.
          failed++
          const level = err instanceof ConflictError ? 'info' : 'warn'
          log[level]({ namespace, name, err: (err as Error).message }, 'Could not resync Workflow')
        }
      }
    }
    await Promise.all(Array.from({ length: Math.min(CONCURRENCY, workflows.length) }, worker))
    log.info({ workflows: workflows.length, applied, failed }, 'Resync finished')
    return c.body(null, 202)
  })
  return app
}
