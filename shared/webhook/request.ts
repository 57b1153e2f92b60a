/**
 * The pure parts of a webhook request: its path, its delivery id, its body, and the run it asks
 * for (purko's dashboard route for template runs).
 */
import { buildRun, deliverySuffix } from '../template/run-builder.js'
import { ANNOTATION_DELIVERY_KEY } from '../schemas/labels.js'
import type { Workflow } from '../schemas/workflow.js'
import { isObject, type Normalized, type Payload } from './normalize.js'
import { payloadParameters, webhookInputFor } from './run-inputs.js'

/** Largest body accepted. */
export const MAX_BODY_BYTES = 1024 * 1024
/** Largest run object created (etcd keeps objects up to 1.5 MiB; a payload is copied into each step without input). */
export const MAX_RUN_BYTES = 1_400_000
/** Delivery id headers, in the order they are read. */
export const DELIVERY_HEADERS = ['x-github-delivery', 'x-kinetic-delivery', 'idempotency-key'] as const
/** Longest delivery id accepted. */
export const MAX_DELIVERY_ID = 256

/** purko's answer to a path without a namespace. */
export const PATH_ERROR = 'path must be /api/trigger/{namespace} or /api/trigger/{namespace}/{workflow-name}'

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/

/** Pure: whether a string is a Kubernetes object name (DNS-1123 subdomain). */
export function isObjectName(name: string): boolean {
  return name.length <= 253 && DNS_SUBDOMAIN.test(name)
}

/** Where a trigger goes: a namespace, and the template when the path names one. */
export type TriggerTarget = { namespace: string; workflow?: string } | { error: string }

/**
 * Pure: `/api/trigger/{ns}` or `/api/trigger/{ns}/{workflow}` (a trailing slash allowed). An
 * empty namespace is purko's error; a namespace or name Kubernetes would not accept, or more
 * segments, are refused too.
 */
export function parseTriggerPath(path: string): TriggerTarget {
  const rest = path.replace(/^\/api\/trigger\/?/, '')
  const parts = rest.replace(/\/$/, '').split('/').map((p) => {
    try {
      return decodeURIComponent(p)
    } catch {
      return '\u0000'
    }
  })
  const [namespace = '', workflow, ...extra] = parts
  if (namespace === '' || extra.length > 0 || workflow === '') return { error: PATH_ERROR }
  if (namespace.length > 63 || !DNS_LABEL.test(namespace)) return { error: `${PATH_ERROR}: "${namespace.slice(0, 80)}" is not a namespace name` }
  if (workflow !== undefined && !isObjectName(workflow)) return { error: `${PATH_ERROR}: "${workflow.slice(0, 80)}" is not a Workflow name` }
  return workflow === undefined ? { namespace } : { namespace, workflow }
}

/** Pure: the delivery id of a request (the first header present, trimmed), none, or why it cannot be used. */
export function deliveryIdOf(header: (name: string) => string | undefined): { id?: string } | { error: string } {
  for (const name of DELIVERY_HEADERS) {
    const v = header(name)?.trim()
    if (!v) continue
    if (v.length > MAX_DELIVERY_ID) return { error: `${name} must be at most ${MAX_DELIVERY_ID} characters` }
    if (!/^[\x20-\x7e]+$/.test(v)) return { error: `${name} must be printable ASCII` }
    return { id: v }
  }
  return {}
}

/**
 * Pure: the body as a JSON object. An empty body is `{}` (a bare POST starts a run with no
 * payload); anything else that is not a JSON object is refused (purko would go on with `{}`).
 */
export function parsePayload(raw: Uint8Array): { payload: Payload } | { error: string } {
  const text = new TextDecoder('utf-8', { fatal: false }).decode(raw)
  if (text.trim() === '') return { payload: {} }
  let decoded: unknown
  try {
    decoded = JSON.parse(text)
  } catch {
    return { error: 'body must be a JSON object' }
  }
  if (!isObject(decoded)) return { error: 'body must be a JSON object' }
  return { payload: decoded }
}

/** What the run is made of, besides the template. */
export interface WebhookRunRequest {
  template: Workflow
  payload: Payload
  normalized: Normalized
  /** `explicit` or `rule:<name>`. */
  route: string
  /** The sender's delivery id header: recorded, never trusted (it is not signed). */
  deliveryId?: string
  /** What names the run (deliveryKey: derived from what the signature covers). */
  deliveryKey?: string
  /** Used when there is no delivery key (`randomSuffix()` in the shell). */
  randomSuffix: string
}

/**
 * Pure: the run a webhook asks for: named from the template's uid and the delivery key when
 * there is one (a redelivery or a replay names the same run), parameters from the payload, and
 * the webhook input for every step without one.
 */
export function webhookRun(req: WebhookRunRequest): Workflow {
  const uid = req.template.metadata.uid ?? ''
  const run = buildRun({
    template: req.template,
    type: 'webhook',
    source: req.normalized.source,
    suffix: req.deliveryKey !== undefined ? deliverySuffix(uid, req.deliveryKey) : req.randomSuffix,
    route: req.route,
    ...(req.deliveryId !== undefined ? { deliveryId: req.deliveryId } : {}),
    parameters: payloadParameters(req.payload),
    inputFor: webhookInputFor(req.normalized, req.payload),
  })
  if (req.deliveryKey !== undefined) run.metadata.annotations = { ...run.metadata.annotations, [ANNOTATION_DELIVERY_KEY]: req.deliveryKey }
  return run
}

/** Pure: the size of a run as the API server will store it (JSON bytes). */
export function runBytes(run: Workflow): number {
  return new TextEncoder().encode(JSON.stringify(run)).length
}
