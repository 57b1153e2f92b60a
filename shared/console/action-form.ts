/**
 * The markup of one action button: a form the common client script (client/common.ts) submits
 * as JSON with the `X-Kinetic-Console: 1` header the action endpoints demand. Pure.
 */
import { html, join, type Html } from './html.js'

/** What one action form asks for and sends. */
export interface ActionFormOptions {
  /** Where it posts: `/actions/...` (the run-control path after `/api/`). */
  path: string
  /** The button's text, e.g. "Approve". */
  label: string
  /** Offer a free-text reason (sent as `reason`). */
  reason?: boolean
  /** Parameters with their current values, editable before sending (sent as `parameters`). */
  parameters?: Record<string, string>
  /** Fixed JSON fields sent as they are, e.g. `{ level: 'ha' }`. */
  extra?: Record<string, string>
  /** Styled as a destructive action (cancel, deny). */
  danger?: boolean
  /** A question the person must confirm first. */
  confirm?: string
}

// Label ids come from what the form does, so the markup is the same on every render and two
// different actions on one page never share an id (FNV-1a; no cryptography needed).
function idFor(o: ActionFormOptions): string {
  let hash = 0x811c9dc5
  const text = `${o.path}|${o.label}`
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193)
  return `action-${(hash >>> 0).toString(16)}`
}

/**
 * Pure: the form. Without the client script the button stays disabled and a note says why, since
 * a plain form post cannot carry the header the endpoint requires.
 */
export function actionForm(o: ActionFormOptions): Html {
  const id = idFor(o)
  const reason = o.reason
    ? html`<label for="${id}-reason">Reason <span class="hint">(optional)</span></label><input id="${id}-reason" name="reason" type="text" maxlength="1024" autocomplete="off">`
    : html``
  const entries = Object.entries(o.parameters ?? {})
  const parameters = entries.length === 0
    ? html``
    : html`<fieldset class="parameters"><legend>Parameters</legend>${join(entries.map(([key, value], i) =>
      html`<label for="${id}-p${i}">${key}</label><input id="${id}-p${i}" data-parameter="${key}" type="text" value="${value}" autocomplete="off">`))}</fieldset>`
  return html`<form class="action-form" method="post" action="${o.path}" data-action-form${o.extra ? html` data-extra="${JSON.stringify(o.extra)}"` : ''}${o.confirm ? html` data-confirm="${o.confirm}"` : ''}>${reason}${parameters}<button type="submit" class="button${o.danger ? ' danger' : ''}" disabled data-needs-script>${o.label}</button><span class="action-result"></span><noscript><span class="hint">Actions need JavaScript.</span></noscript></form>`
}
