import { createHash } from 'node:crypto'
import { CloudEvent, HTTP } from 'cloudevents'
import type { Logger } from '../log.js'
import type { Workflow } from '../schemas/workflow.js'
import type { WorkflowPlan } from '../reconcile/workflow-plan.js'

/** Prefix of every CloudEvent type Kinetic emits; no Trigger of ours subscribes to these. */
export const KINETIC_EVENT_PREFIX = 'dev.kinetic.'

/** Publishes Kinetic's own CloudEvents (run started, step finished, ...) for `kn` and event-display users. */
export interface KineticEvents {
  publish(workflow: Workflow, plan: WorkflowPlan): Promise<void>
}

/** Pure: the CloudEvents a plan's transitions become; ids are derived so retries repeat them. */
export function kineticEventsFor(source: string, workflow: Workflow, plan: WorkflowPlan): CloudEvent<Record<string, unknown>>[] {
  const namespace = workflow.metadata.namespace ?? ''
  const name = workflow.metadata.name ?? ''
  const subject = `/apis/purko.io/v1alpha1/namespaces/${namespace}/workflows/${name}`
  return plan.transitions.map((t) => new CloudEvent<Record<string, unknown>>({
    id: createHash('sha256').update(`${plan.runId}|${t.kind}|${t.reason}|${t.step ?? ''}|${t.message}`).digest('hex').slice(0, 32),
    type: `${KINETIC_EVENT_PREFIX}workflow.${t.kind}`,
    source,
    subject,
    datacontenttype: 'application/json',
    data: { namespace, workflow: name, runId: plan.runId, reason: t.reason, message: t.message, ...(t.step ? { step: t.step } : {}), ...(t.phase ? { phase: t.phase } : {}) },
  }))
}

/** Sends events to `sink` (a Broker URL) in binary mode; without a sink they are only logged. */
export function httpKineticEvents(sink: string | undefined, source: string, log: Logger): KineticEvents {
  return {
    async publish(workflow, plan) {
      if (!sink || plan.transitions.length === 0) return
      for (const event of kineticEventsFor(source, workflow, plan)) {
        const message = HTTP.binary(event)
        try {
          const res = await fetch(sink, { method: 'POST', headers: message.headers as Record<string, string>, body: message.body as string })
          if (!res.ok) log.warn({ ceId: event.id, ceType: event.type, status: res.status }, 'Event sink refused a Kinetic event')
        } catch (err) {
          log.warn({ ceId: event.id, ceType: event.type, err: (err as Error).message }, 'Could not deliver a Kinetic event')
        }
      }
    },
  }
}

/** A publisher that drops everything (tests, and processes without a sink). */
export const noKineticEvents: KineticEvents = { publish: async () => {} }
