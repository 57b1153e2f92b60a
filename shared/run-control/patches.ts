/**
 * What each run-control action checks on the object it acts on, and the one patch it writes:
 * purko's annotations, beside the verified identity of the person who asked. Pure: the user and
 * the time come in as arguments.
 */
import type { CoreV1Event } from '@kubernetes/client-node'
import { kubernetesEventFor, type ObjectRef } from '../core/kube-events.js'
import type { Agent } from '../schemas/agent.js'
import { SHU_HA_RI_LEVELS } from '../schemas/agent.js'
import {
  ANNOTATION_APPROVE_PREFIX, ANNOTATION_APPROVE_PROMOTION, ANNOTATION_CANCEL, ANNOTATION_DECISION_PREFIX, ANNOTATION_DENY_PREFIX,
  ANNOTATION_REQUESTED_BY,
} from '../schemas/labels.js'
import type { Workflow } from '../schemas/workflow.js'
import { badRequest, conflict, notFound } from './errors.js'
import type { PromotionLevel } from './request.js'
import { cancelRefusal, decisionRefusal, rerunAnnotations, rerunRefusal, type RunRefusal } from './run-checks.js'


/** Who asked, as the TokenReview said, and when. */
export interface Actor {
  user: string
  /** The authenticated caller that acted for `user` by impersonation (e.g. the console's ServiceAccount). */
  via?: string
  now: string
}

/** Pure: the actor as Event messages name them: "<user>", or "<user> via <caller>" when impersonated. */
export function actorName(actor: Actor): string {
  return actor.via ? `${actor.user} via ${actor.via}` : actor.user
}

/** A step decision as `kinetic.dev/decision-<step>` records it (JSON). */
export interface DecisionRecord {
  verdict: 'approved' | 'denied'
  user: string
  /** The caller that acted for `user` by impersonation. */
  via?: string
  time: string
  reason?: string
}

/** Who asked for a cancel or rerun, as `kinetic.dev/requested-by` records it (JSON). */
export interface RequestRecord {
  /** What was asked: the planner names the user in a cancel only from a cancel's record. */
  action: 'cancel' | 'rerun'
  user: string
  /** The caller that acted for `user` by impersonation. */
  via?: string
  time: string
  reason?: string
}

/** The Event component run-control's Events name. */
export const EVENT_COMPONENT = 'kinetic-run-control'

/** Most characters of a promotion approval value the autonomy engine keeps. */
export const MAX_PROMOTION_VALUE = 253

const path = (wf: Workflow) => `${wf.metadata.namespace}/${wf.metadata.name}`

/** Pure: 400 for a template, 404 for a step the spec lacks, 409 for a finished run or a started step. */
function refuse(wf: Workflow, refusal: RunRefusal | undefined, what: string, step = ''): void {
  if (!refusal) return
  switch (refusal.kind) {
    case 'template':
      throw badRequest(`Workflow ${path(wf)} is a template (purko.io/template: "true"), which never runs itself, so it has nothing to ${what}; start a run of it with POST /api/run/${wf.metadata.namespace}/${wf.metadata.name}`)
    case 'unknown-step':
      throw notFound(`Workflow ${path(wf)} has no step "${step}"`)
    case 'run-finished':
      throw conflict(what === 'cancel'
        ? `Workflow ${path(wf)} has already finished (${refusal.phase}); there is nothing to cancel`
        : `Workflow ${path(wf)} has already finished (${refusal.phase}); its steps can no longer be approved or denied`)
    case 'step-started':
      throw conflict(`Step "${step}" of Workflow ${path(wf)} is already ${refusal.phase}; only a step that has not started can be approved or denied`)
  }
}

/**
 * Pure: refuses a decision that cannot take effect: 400 for a template, 404 for a step the
 * spec does not have, 409 when the run or the step has already finished or started (a step not
 * reached yet may be decided ahead of its turn).
 */
export function checkDecision(wf: Workflow, step: string): void {
  refuse(wf, decisionRefusal(wf, step), 'approve or deny', step)
}

/** Pure: the decision record, JSON as `kinetic.dev/decision-<step>` holds it. */
export function decisionRecord(verdict: DecisionRecord['verdict'], actor: Actor, reason?: string): string {
  const record: DecisionRecord = { verdict, user: actor.user, ...(actor.via ? { via: actor.via } : {}), time: actor.now, ...(reason ? { reason } : {}) }
  return JSON.stringify(record)
}

/**
 * Pure: the one merge patch of a decision: purko's `purko.io/approve-<step>` or `deny-<step>`
 * set to "true", the opposite one removed (the latest decision counts), and the decision record.
 */
export function decisionAnnotations(wf: Workflow, step: string, verdict: DecisionRecord['verdict'], actor: Actor, reason?: string): Record<string, string | null> {
  const [own, opposite] = verdict === 'approved'
    ? [ANNOTATION_APPROVE_PREFIX, ANNOTATION_DENY_PREFIX]
    : [ANNOTATION_DENY_PREFIX, ANNOTATION_APPROVE_PREFIX]
  const annotations: Record<string, string | null> = {
    [`${own}${step}`]: 'true',
    [`${ANNOTATION_DECISION_PREFIX}${step}`]: decisionRecord(verdict, actor, reason),
  }
  if (wf.metadata.annotations?.[`${opposite}${step}`] !== undefined) annotations[`${opposite}${step}`] = null
  return annotations
}

/** Pure: 400 for a template, 409 when the run has already finished. */
export function checkCancel(wf: Workflow): void {
  refuse(wf, cancelRefusal(wf), 'cancel')
}

/** Pure: the `kinetic.dev/requested-by` JSON. */
export function requestRecord(action: RequestRecord['action'], actor: Actor, reason?: string): string {
  const record: RequestRecord = { action, user: actor.user, ...(actor.via ? { via: actor.via } : {}), time: actor.now, ...(reason ? { reason } : {}) }
  return JSON.stringify(record)
}

/** Pure: purko's `purko.io/cancel: "true"` and who asked. */
export function cancelAnnotations(actor: Actor, reason?: string): Record<string, string> {
  return { [ANNOTATION_CANCEL]: 'true', [ANNOTATION_REQUESTED_BY]: requestRecord('cancel', actor, reason) }
}

/** Pure: 400 for a template (a rerun of a template is a new run: POST /api/run). */
export function checkRerun(wf: Workflow): void {
  refuse(wf, rerunRefusal(wf), 'rerun')
}

/** Pure: the one patch of a rerun: its annotations (rerunAnnotations), who asked, and the parameter overrides. */
export function rerunPatch(wf: Workflow, parameters: Record<string, string>, actor: Actor, reason?: string): {
  annotations: Record<string, string | null>
  parameters?: Record<string, string>
} {
  const annotations = rerunAnnotations(wf, actor.now)
  annotations[ANNOTATION_REQUESTED_BY] = requestRecord('rerun', actor, reason)
  return Object.keys(parameters).length > 0 ? { annotations, parameters } : { annotations }
}

/** Pure: `<level> <user>[: reason]`, the `purko.io/approve-promotion` value the autonomy engine reads as "<level>[ free text]". */
export function promotionValue(level: PromotionLevel, actor: Actor, reason?: string): string {
  const value = `${level} ${actor.user}${reason ? `: ${reason}` : ''}`
  if (value.length > MAX_PROMOTION_VALUE) throw badRequest(`The approval "<level> <user>: <reason>" must fit ${MAX_PROMOTION_VALUE} characters; shorten the reason`)
  return value
}

/**
 * Pure: refuses a promotion approval that would be ignored or would overwrite another one: 409
 * when the Agent's level is known and `level` is not the next one, or when an earlier approval
 * is still waiting to be recorded by the autonomy engine.
 */
export function checkPromotion(agent: Agent, level: PromotionLevel, value: string): void {
  const where = `${agent.metadata.namespace}/${agent.metadata.name}`
  const pending = agent.metadata.annotations?.[ANNOTATION_APPROVE_PROMOTION]
  if (pending !== undefined && pending !== value) {
    throw conflict(`Agent ${where} has an approval the autonomy engine has not recorded yet ("${pending.slice(0, 200)}"); try again in a few seconds`)
  }
  const current = agent.status?.shuHaRi?.currentLevel
  if (current === undefined) return
  const next = SHU_HA_RI_LEVELS[SHU_HA_RI_LEVELS.indexOf(current) + 1]
  if (next === undefined) throw conflict(`Agent ${where} is already at ${current}, the highest level`)
  if (next !== level) throw conflict(`Agent ${where} is at ${current}: only a promotion to ${next} can be approved`)
}

/** Pure: a Kubernetes Event by run-control about a Workflow or an Agent, naming the user. */
export function runControlEvent(object: ObjectRef, reason: string, message: string, actor: Actor, type: 'Normal' | 'Warning' = 'Normal'): CoreV1Event {
  const event = kubernetesEventFor(object, `${actor.user}|${actor.now}`, { type, reason, message }, actor.now)
  return { ...event, source: { component: EVENT_COMPONENT }, reportingComponent: EVENT_COMPONENT, reportingInstance: EVENT_COMPONENT }
}

const withReason = (message: string, reason?: string) => (reason ? `${message}: ${reason}` : message)

/** Pure: "<actor> approved step <step>[: reason]" (StepApproved) or "<user> denied step <step>[: reason]" (StepDenied). */
export function decisionEvent(wf: Workflow, step: string, verdict: DecisionRecord['verdict'], actor: Actor, reason?: string): CoreV1Event {
  const reasonCode = verdict === 'approved' ? 'StepApproved' : 'StepDenied'
  return runControlEvent({ kind: 'Workflow', metadata: wf.metadata }, reasonCode, withReason(`${actorName(actor)} ${verdict} step ${step}`, reason), actor)
}

/** Pure: "<user> cancelled the run[: reason]" (CancelRequested). */
export function cancelEvent(wf: Workflow, actor: Actor, reason?: string): CoreV1Event {
  return runControlEvent({ kind: 'Workflow', metadata: wf.metadata }, 'CancelRequested', withReason(`${actorName(actor)} cancelled the run`, reason), actor)
}

/** Pure: "<user> asked for a rerun[ with parameters a, b][: reason]" (RerunRequested). */
export function rerunEvent(wf: Workflow, parameters: Record<string, string>, actor: Actor, reason?: string): CoreV1Event {
  const names = Object.keys(parameters)
  const message = `${actorName(actor)} asked for a rerun${names.length > 0 ? ` with parameters ${names.join(', ')}` : ''}`
  return runControlEvent({ kind: 'Workflow', metadata: wf.metadata }, 'RerunRequested', withReason(message, reason), actor)
}

/** Pure: "<user> started run <run>" on the template (RunTriggered). */
export function runEvent(template: Workflow, run: string, actor: Actor): CoreV1Event {
  return runControlEvent({ kind: 'Workflow', metadata: template.metadata }, 'RunTriggered', `${actorName(actor)} started run ${run}`, actor)
}

/** Pure: "<user> approved promotion to <level>[: reason]" on the Agent (PromotionApproved). */
export function promotionEvent(agent: Agent, level: PromotionLevel, actor: Actor, reason?: string): CoreV1Event {
  return runControlEvent({ kind: 'Agent', metadata: agent.metadata }, 'PromotionApproved', withReason(`${actorName(actor)} approved promotion to ${level}`, reason), actor)
}
