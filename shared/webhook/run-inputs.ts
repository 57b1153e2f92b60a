/**
 * What a webhook payload gives the run (as in purko): parameters from its top-level keys, and the
 * input of every step that has none.
 */
import { goFormatValue } from '../core/go-format.js'
import type { WorkflowStep } from '../schemas/workflow.js'
import { isObject, type Normalized, type Payload } from './normalize.js'

/** The payload key purko's docs tell senders to put parameters under. */
export const PARAMETERS_KEY = 'parameters'

/** A parameter value as purko writes it: strings verbatim, anything else Go `%v`. */
const parameterValue = (v: unknown): string => (typeof v === 'string' ? v : goFormatValue(v))

/**
 * Pure: the run's parameters from a payload. Every top-level key is one parameter (purko); a
 * top-level `parameters` object (what purko's docs tell senders to send) is merged key by key
 * instead, over the top-level keys, rather than becoming one parameter `parameters` holding
 * `map[...]` as purko's code makes it.
 */
export function payloadParameters(payload: Payload): Record<string, string> {
  const out: Record<string, string> = {}
  const nested = payload[PARAMETERS_KEY]
  for (const [k, v] of Object.entries(payload)) {
    if (k === PARAMETERS_KEY && isObject(nested)) continue
    out[k] = parameterValue(v)
  }
  if (isObject(nested)) for (const [k, v] of Object.entries(nested)) out[k] = parameterValue(v)
  return out
}

/** Pure: whether a step takes the webhook input: its input is absent or `{}` (purko: ≤ 2 bytes of JSON). */
export function takesWebhookInput(step: WorkflowStep): boolean {
  return step.input === undefined || Object.keys(step.input).length === 0
}

/**
 * Pure: the `inputFor` of a webhook run: steps without an input get `{description, task,
 * webhook_payload, webhook_source}` (task = the description); the others keep theirs.
 */
export function webhookInputFor(n: Normalized, payload: Payload): (step: WorkflowStep) => Record<string, unknown> | undefined {
  const input = { description: n.description, task: n.description, webhook_payload: payload, webhook_source: n.source }
  return (step) => (takesWebhookInput(step) ? input : undefined)
}
