import {
  ANNOTATION_DELIVERY_ID, ANNOTATION_SCHEDULED_TIME, ANNOTATION_TEMPLATE, ANNOTATION_TRIGGER_ROUTE,
  ANNOTATION_TRIGGER_SOURCE, ANNOTATION_TRIGGER_TYPE, ANNOTATION_WORKFLOW_TEMPLATE, API_VERSION, LABEL_TEMPLATE,
} from '../schemas/labels.js'
import type { Workflow, WorkflowStep } from '../schemas/workflow.js'
import { labelValue } from '../workflow/plan/job-builder.js'
import { sha256Hex } from '../core/sha256.js'

/** What started a run of a template. */
export type TriggerType = 'schedule' | 'webhook' | 'manual'

/** Everything needed to build one run of a template. */
export interface RunRequest {
  template: Workflow
  type: TriggerType
  /** The cron (schedule), the source name (webhook) or the user (manual). */
  source: string
  /** The 8-hex tail of the run name (scheduleSuffix, deliverySuffix or randomSuffix). */
  suffix: string
  /** Webhook: how the template was chosen (`explicit`, `rule:<name>`). */
  route?: string
  /** Schedule: the fire time the run stands for (RFC 3339, UTC). */
  scheduledTime?: string
  /** Webhook: the delivery id the sender gave. */
  deliveryId?: string
  /** Merged over the template's spec.parameters key by key. */
  parameters?: Record<string, string>
  /** Replacement input of a step; undefined keeps the step's own input. */
  inputFor?: (step: WorkflowStep) => Record<string, unknown> | undefined
}

/** Longest Kubernetes object name. */
const MAX_OBJECT_NAME = 253

/** Pure: the run's name, `<template>-<kind>-<suffix>`, the template part cut so the whole is ≤ 253 characters. */
export function runName(template: string, kind: 'sched' | 'run', suffix: string): string {
  const tail = `-${kind}-${suffix}`
  const head = template.slice(0, MAX_OBJECT_NAME - tail.length).replace(/[-.]+$/, '')
  return `${head}${tail}`
}

/** Pure: the schedule suffix of a fire time: its unix seconds & 0xffffffff as 8 hex digits (duplicates collapse). */
export function scheduleSuffix(fireTime: Date): string {
  const seconds = Math.floor(fireTime.getTime() / 1000)
  return (seconds >>> 0).toString(16).padStart(8, '0')
}

/** Pure: the webhook suffix of a delivery: the first 8 hex of sha256(`${templateUid}|${deliveryId}`). */
export function deliverySuffix(templateUid: string, deliveryId: string): string {
  return sha256Hex(`${templateUid}|${deliveryId}`).slice(0, 8)
}

/** 8 random hex digits (Web Crypto, so the module stays free of `node:` imports). */
export function randomSuffix(): string {
  const bytes = new Uint8Array(4)
  globalThis.crypto.getRandomValues(bytes)
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('')
}

/** Pure: the template a run was created from (`purko.io/workflow-template`), if it is a run. */
export function templateOf(wf: Workflow): string | undefined {
  const name = wf.metadata.annotations?.[ANNOTATION_WORKFLOW_TEMPLATE]
  return name === undefined || name === '' ? undefined : name
}

/**
 * Pure: whether a Workflow is a template: annotated `purko.io/template: "true"`, or carrying a
 * `spec.trigger.schedule.cron`. A run of a template is never itself a template.
 */
export function isTemplate(wf: Workflow): boolean {
  if (templateOf(wf) !== undefined) return false
  if (wf.metadata.annotations?.[ANNOTATION_TEMPLATE] === 'true') return true
  const cron = wf.spec.trigger?.schedule?.cron
  return typeof cron === 'string' && cron.trim() !== ''
}

/** Pure: the label selector of a template's runs. */
export function templateRunSelector(template: string): Record<string, string> {
  return { [LABEL_TEMPLATE]: labelValue(template) }
}

/**
 * Pure: one run of a template. The spec is the template's without `trigger` (parameters merged,
 * inputs replaced where `inputFor` says so); metadata carries only the trigger annotations, the
 * template label and a controller ownerReference to the template — nothing else of the template's.
 */
export function buildRun(req: RunRequest): Workflow {
  const { template } = req
  const templateName = template.metadata.name ?? ''
  const kind = req.type === 'schedule' ? 'sched' : 'run'
  const { trigger: _trigger, ...rest } = structuredClone(template.spec)
  const spec: Workflow['spec'] = { ...rest }
  if (req.parameters !== undefined && Object.keys(req.parameters).length > 0) {
    spec.parameters = { ...(rest.parameters ?? {}), ...req.parameters }
  }
  if (req.inputFor !== undefined) {
    const inputFor = req.inputFor
    spec.steps = rest.steps.map((step) => {
      const input = inputFor(step)
      return input === undefined ? step : { ...step, input: structuredClone(input) }
    })
  }
  const annotations: Record<string, string> = {
    [ANNOTATION_WORKFLOW_TEMPLATE]: templateName,
    [ANNOTATION_TRIGGER_TYPE]: req.type,
    [ANNOTATION_TRIGGER_SOURCE]: req.source,
  }
  if (req.route !== undefined) annotations[ANNOTATION_TRIGGER_ROUTE] = req.route
  if (req.scheduledTime !== undefined) annotations[ANNOTATION_SCHEDULED_TIME] = req.scheduledTime
  if (req.deliveryId !== undefined) annotations[ANNOTATION_DELIVERY_ID] = req.deliveryId
  const metadata: Workflow['metadata'] = {
    name: runName(templateName, kind, req.suffix),
    labels: templateRunSelector(templateName),
    annotations,
    ownerReferences: [{
      apiVersion: API_VERSION,
      kind: 'Workflow',
      name: templateName,
      uid: template.metadata.uid ?? '',
      controller: true,
      blockOwnerDeletion: false,
    }],
  }
  if (template.metadata.namespace !== undefined) metadata.namespace = template.metadata.namespace
  return { apiVersion: API_VERSION, kind: 'Workflow', metadata, spec }
}
