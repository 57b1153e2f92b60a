/**
 * What a run-control request asks for, read from its path parameters, headers and JSON body.
 * Pure: every malformed request is a RunControlError (400), before anything is authorized.
 */
import { badRequest } from './errors.js'

/** Longest reason a decision, cancel, rerun or promotion approval may carry (it goes into an annotation and an Event). */
export const MAX_REASON = 1024
/** Largest request body accepted, in bytes. */
export const MAX_BODY_BYTES = 64 * 1024
/**
 * Longest step name an approval can name: `kinetic.dev/decision-<step>` must be a valid
 * annotation key, whose name part is at most 63 characters.
 */
export const MAX_DECIDABLE_STEP = 63 - 'decision-'.length
/** Longest Idempotency-Key honoured. */
export const MAX_IDEMPOTENCY_KEY = 255

/** One run-control action, with everything it needs and nothing else. */
export type Action =
  | { kind: 'approve' | 'deny'; namespace: string; workflow: string; step: string; reason?: string }
  | { kind: 'cancel'; namespace: string; workflow: string; reason?: string }
  | { kind: 'rerun'; namespace: string; workflow: string; parameters: Record<string, string>; reason?: string }
  | { kind: 'run'; namespace: string; template: string; parameters: Record<string, string>; idempotencyKey?: string }
  | { kind: 'logs'; namespace: string; workflow: string; step: string }
  | { kind: 'promote'; namespace: string; agent: string; level: PromotionLevel; reason?: string }

export type ActionKind = Action['kind']

/** The levels a promotion may be approved for (Shu-Ha-Ri: shu is where agents start). */
export const PROMOTION_LEVELS = ['ha', 'ri'] as const
export type PromotionLevel = (typeof PROMOTION_LEVELS)[number]

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/
const STEP_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/

/** Pure: a namespace name (DNS label), else 400. */
export function namespaceName(value: string | undefined): string {
  if (value === undefined || value.length > 63 || !DNS_LABEL.test(value)) throw badRequest(`Invalid namespace ${JSON.stringify(value ?? '')}`)
  return value
}

/** Pure: an object name (DNS subdomain), else 400. */
export function objectName(value: string | undefined, what: string): string {
  if (value === undefined || value.length > 253 || !DNS_SUBDOMAIN.test(value)) throw badRequest(`Invalid ${what} name ${JSON.stringify(value ?? '')}`)
  return value
}

/** Pure: a step name as the Workflow schema allows it, else 400. */
export function stepName(value: string | undefined): string {
  if (value === undefined || value.length > 253 || !STEP_NAME.test(value)) throw badRequest(`Invalid step name ${JSON.stringify(value ?? '')}`)
  return value
}

/**
 * Pure: the body as a JSON object; an empty body is `{}`. Anything else (not JSON, an array, a
 * string) is 400.
 */
export function jsonObject(text: string): Record<string, unknown> {
  if (text.trim() === '') return {}
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    throw badRequest('The body must be a JSON object')
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw badRequest('The body must be a JSON object')
  return value as Record<string, unknown>
}

/** Pure: the optional `reason` (a string of at most MAX_REASON characters; blank counts as none). */
export function reasonOf(body: Record<string, unknown>): string | undefined {
  const reason = body.reason
  if (reason === undefined || reason === null) return undefined
  if (typeof reason !== 'string') throw badRequest('"reason" must be a string')
  const trimmed = reason.trim()
  if (trimmed.length > MAX_REASON) throw badRequest(`"reason" is longer than ${MAX_REASON} characters`)
  return trimmed === '' ? undefined : trimmed
}

/**
 * Pure: the optional `parameters` object. Strings are kept as they are; numbers and booleans
 * become their JSON text (spec.parameters holds strings only); anything else is 400.
 */
export function parametersOf(body: Record<string, unknown>): Record<string, string> {
  const raw = body.parameters
  if (raw === undefined || raw === null) return {}
  if (typeof raw !== 'object' || Array.isArray(raw)) throw badRequest('"parameters" must be an object of strings')
  const out: Record<string, string> = {}
  for (const [key, value] of Object.entries(raw as Record<string, unknown>)) {
    if (key === '' || key.length > 253) throw badRequest(`Invalid parameter name ${JSON.stringify(key)}`)
    if (typeof value === 'string') out[key] = value
    else if (typeof value === 'number' || typeof value === 'boolean') out[key] = JSON.stringify(value)
    else throw badRequest(`Parameter "${key}" must be a string, number or boolean`)
  }
  return out
}

/** Pure: the `level` of a promotion approval (`ha` or `ri`, any case), else 400. */
export function levelOf(body: Record<string, unknown>): PromotionLevel {
  const level = typeof body.level === 'string' ? body.level.trim().toLowerCase() : undefined
  if (!PROMOTION_LEVELS.includes(level as PromotionLevel)) throw badRequest('"level" must be "ha" or "ri", the level the promotion is approved for')
  return level as PromotionLevel
}

/** Pure: the Idempotency-Key header, if given (printable ASCII, at most MAX_IDEMPOTENCY_KEY characters). */
export function idempotencyKeyOf(header: string | undefined): string | undefined {
  if (header === undefined) return undefined
  const key = header.trim()
  if (key === '') return undefined
  if (key.length > MAX_IDEMPOTENCY_KEY || !/^[\x21-\x7e]+$/.test(key)) throw badRequest(`Idempotency-Key must be at most ${MAX_IDEMPOTENCY_KEY} printable characters`)
  return key
}

/** What the router hands over: path parameters, the Idempotency-Key header, the body text. */
export interface RawRequest {
  params: Record<string, string | undefined>
  idempotencyKey?: string | undefined
  body: string
}

/**
 * Pure: the action of a route. `defaultNamespace` stands in for purko's name-only paths
 * (`/api/approve/{workflow}/{step}`, `/api/rerun/workflow/{name}`).
 */
export function parseAction(kind: ActionKind, raw: RawRequest, defaultNamespace: string): Action {
  const p = raw.params
  const namespace = namespaceName(p.namespace ?? defaultNamespace)
  // logs reads no body; the others take a JSON object or nothing.
  const body = kind === 'logs' ? {} : jsonObject(raw.body)
  const withReason = <T extends object>(action: T): T & { reason?: string } => {
    const reason = reasonOf(body)
    return reason === undefined ? action : { ...action, reason }
  }
  switch (kind) {
    case 'approve':
    case 'deny': {
      const step = stepName(p.step)
      if (step.length > MAX_DECIDABLE_STEP) throw badRequest(`Step name ${JSON.stringify(step)} is too long to be approved or denied (at most ${MAX_DECIDABLE_STEP} characters fit an annotation key)`)
      return withReason({ kind, namespace, workflow: objectName(p.workflow, 'workflow'), step })
    }
    case 'cancel':
      return withReason({ kind, namespace, workflow: objectName(p.workflow, 'workflow') })
    case 'rerun':
      return withReason({ kind, namespace, workflow: objectName(p.workflow, 'workflow'), parameters: parametersOf(body) })
    case 'run': {
      const key = idempotencyKeyOf(raw.idempotencyKey)
      return { kind, namespace, template: objectName(p.template, 'template'), parameters: parametersOf(body), ...(key ? { idempotencyKey: key } : {}) }
    }
    case 'logs':
      return { kind, namespace, workflow: objectName(p.workflow, 'workflow'), step: stepName(p.step) }
    case 'promote':
      return withReason({ kind, namespace, agent: objectName(p.agent, 'agent'), level: levelOf(body) })
  }
}
