/**
 * The one log line each run-control request writes: who did what to which object and how it
 * ended. Pure. It never names the token, the parameters' values or the reason's text.
 */
import type { Action } from './request.js'

export interface RequestLogFields {
  action: string
  namespace?: string
  name?: string
  step?: string
  user?: string
  status: number
  outcome: string
  ms: number
  [extra: string]: unknown
}

/** Pure: the object an action names, as log fields. */
export function targetFields(action: Action): { namespace: string; name: string; step?: string } {
  switch (action.kind) {
    case 'approve':
    case 'deny':
    case 'logs':
      return { namespace: action.namespace, name: action.workflow, step: action.step }
    case 'cancel':
    case 'rerun':
      return { namespace: action.namespace, name: action.workflow }
    case 'run':
      return { namespace: action.namespace, name: action.template }
    case 'promote':
      return { namespace: action.namespace, name: action.agent }
  }
}

/** Pure: the fields of a request's log line; `outcome` is `ok` or the error code answered. */
export function requestLogFields(
  kind: string, action: Action | undefined, user: string | undefined, status: number, outcome: string, ms: number,
): RequestLogFields {
  return {
    action: kind,
    ...(action ? targetFields(action) : {}),
    ...(user !== undefined ? { user } : {}),
    status,
    outcome,
    ms: Math.round(ms),
  }
}
