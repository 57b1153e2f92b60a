import { RefusedError, apiMessage } from '../core/errors.js'
import { childUses } from '../kube/child-uses.js'
import type { ChildObject, Kube, KubeVerbs } from '../kube/port.js'
import type { Workflow } from '../schemas/workflow.js'
import { isTemplate, templateRunSelector } from './run-builder.js'
import { pingSourceName } from './plan/ping-source.js'
import {
  isEmptyPlan, planTemplate, type FireOutcome, type TemplateInput, type TemplatePlan,
} from './plan/template-plan.js'
import { ENGINE_VERBS, reconcile, type Controller, type EngineDeps, type Reconciled } from '../engine/controller.js'
import { UNCHANGED, type ControllerPlan } from '../core/plan.js'

/** Why the template is reconciled: it (or one of its runs) changed, or its PingSource fired. */
export type TemplateTrigger =
  | { kind: 'changed' }
  /** A ping: its event time, and the uid of the template the PingSource was made for. */
  | { kind: 'fired'; time: string | undefined; uid: string }

/** What one reconcile did, and what the trigger came to (which the plan alone does not say). */
export type ReconciledTemplate = Reconciled<TemplateWork> & {
  /** The ping was for an earlier Workflow of the same name: nothing was read further (result `gone`). */
  otherTemplate?: true
  /** How a ping was handled: the fire time it stands for and what became of it. */
  fire?: { time: string | null; outcome: FireOutcome }
}

interface TemplateFacts {
  runs: Workflow[]
  pingSource: ChildObject | null
}

/** The template planner's plan, and the runs its child writes created. */
export interface TemplateWork extends ControllerPlan {
  plan: TemplatePlan
  /** Names of the runs created here (a run found already there is not among them). */
  created: string[]
}

/** The port verbs of reconciling a template: it, its runs, its PingSource (the one child kind it passes). */
export const TEMPLATE_VERBS = [
  ...ENGINE_VERBS, 'getWorkflow', 'listWorkflowsIn', 'createWorkflow', 'deleteWorkflow', 'patchWorkflowStatus', 'getChild', 'applyChild', 'deleteChild',
] as const satisfies readonly (keyof Kube)[]
export const TEMPLATE_CHILD_USES = childUses(['getChild', 'applyChild', 'deleteChild'], ['PingSource'])
export type TemplateKube = KubeVerbs<typeof TEMPLATE_VERBS>

/**
 * Reads a template fresh, plans, and applies the plan in a fixed order: PingSource, new runs
 * (deterministic names: a duplicate fire finds its run), the template status last
 * (resourceVersion-guarded; a lost race is ConflictError, so the Broker redelivers), then the
 * prunes, then Events. A schedule that cannot be used is a condition and a Warning, not an error.
 */
export async function reconcileTemplate(deps: EngineDeps<TemplateKube>, namespace: string, name: string, trigger: TemplateTrigger): Promise<ReconciledTemplate> {
  let otherTemplate = false
  let fire: ReconciledTemplate['fire']
  const controller = templateController(deps, trigger, {
    otherTemplate: () => { otherTemplate = true },
    fire: (f) => { fire = f },
  })
  const done = await reconcile(controller, deps, namespace, name)
  return { ...done, ...(otherTemplate ? { otherTemplate: true as const } : {}), ...(fire ? { fire } : {}) }
}

/** For logs: the result, with a ping for an earlier template of the same name told apart from a gone one. */
export function templateResult(done: ReconciledTemplate): string {
  return done.otherTemplate ? 'other-template' : done.result
}

/** For logs: the runs a reconcile created and deleted. */
export function templateRuns(done: ReconciledTemplate): { created: string[]; deleted: string[] } {
  return { created: done.plan?.created ?? [], deleted: done.plan?.plan.deleteRuns.map((d) => d.name) ?? [] }
}

interface Observer {
  otherTemplate(): void
  fire(fire: NonNullable<TemplatePlan['fire']>): void
}

function templateController(deps: EngineDeps<TemplateKube>, trigger: TemplateTrigger, observe: Observer): Controller<Workflow, TemplateFacts, TemplateWork, TemplateKube> {
  const inputOf = (template: Workflow, facts: TemplateFacts, now: string, extra: Partial<TemplateInput> = {}): TemplateInput => ({
    template,
    runs: facts.runs,
    pingSource: facts.pingSource,
    sink: deps.config.eventSink,
    now,
    ...(trigger.kind === 'fired' ? { fired: { time: trigger.time ?? now } } : {}),
    ...extra,
  })
  return {
    kind: 'Workflow',
    async read(deps, namespace, name) {
      const template = await deps.kube.getWorkflow(namespace, name)
      // A ping for an earlier Workflow of the same name (deleted and made again): not this one's.
      if (template && trigger.kind === 'fired' && template.metadata.uid !== trigger.uid) {
        observe.otherTemplate()
        return null
      }
      return template
    },
    async gather({ kube }, template) {
      const namespace = template.metadata.namespace ?? 'default'
      const name = template.metadata.name ?? ''
      if (template.metadata.deletionTimestamp) return UNCHANGED
      const [runs, pingSource] = await Promise.all([
        isTemplate(template) ? kube.listWorkflowsIn(namespace, templateRunSelector(name)) : Promise.resolve([]),
        kube.getChild('PingSource', namespace, pingSourceName(name)),
      ])
      return { runs, pingSource }
    },
    plan(template, facts, now) {
      const plan = planTemplate(inputOf(template, facts, now))
      if (plan.fire) observe.fire(plan.fire)
      if (isEmptyPlan(plan)) return UNCHANGED
      return { plan, created: [], transitions: plan.transitions }
    },
    async writeChildren({ kube }, template, facts, work) {
      const namespace = template.metadata.namespace ?? 'default'
      let plan = work.plan
      if (plan.deletePingSource) {
        await kube.deleteChild('PingSource', namespace, plan.deletePingSource.name, {
          propagationPolicy: 'Background', ...(plan.deletePingSource.uid ? { uid: plan.deletePingSource.uid } : {}),
        })
      }
      if (plan.applyPingSource) {
        try {
          await kube.applyChild(plan.applyPingSource)
        } catch (err) {
          if (!(err instanceof RefusedError)) throw err
          // Knative's webhook is the last word on a schedule: say what it said, start nothing.
          const refused = planTemplate(inputOf(template, facts, deps.now().toISOString(), { pingSourceRefused: apiMessage(err) }))
          return { plan: refused, created: [], transitions: refused.transitions }
        }
      }
      if (plan.createRuns.length === 0) return work
      const created: string[] = []
      const made: Workflow[] = []
      for (const run of plan.createRuns) {
        const result = await kube.createWorkflow(run)
        if (result === 'exists') {
          made.push({ ...run, metadata: { ...run.metadata, creationTimestamp: deps.now().toISOString() } })
        } else {
          created.push(result.metadata.name ?? '')
          made.push(result)
        }
      }
      // The status from the runs as the API server stored them (their creation times), so the
      // echo of this write finds nothing to change.
      const settled = planTemplate(inputOf(template, { ...facts, runs: [...facts.runs, ...made] }, deps.now().toISOString()))
      plan = { ...plan, status: settled.status ?? plan.status, deleteRuns: settled.deleteRuns }
      return { plan, created, transitions: work.transitions }
    },
    async writeParent({ kube }, template, { plan }) {
      const namespace = template.metadata.namespace ?? 'default'
      const name = template.metadata.name ?? ''
      if (plan.status) await kube.patchWorkflowStatus(namespace, name, template.metadata.resourceVersion ?? '', plan.status)
      // Deletes last: a run goes only once the status that covers its fire is written.
      for (const run of plan.deleteRuns) await kube.deleteWorkflow(namespace, run.name, run.uid ? { uid: run.uid } : {})
    },
    eventSeed: (template) => `${template.metadata.uid ?? ''}/${template.metadata.generation ?? 0}`,
  }
}
