/**
 * The run pages' one seam onto what other console modules provide (the 404 page, the time tag,
 * action forms, which actions a person may take). Until those modules land these are small
 * stand-ins with the same contracts; then this file only re-exports them.
 */
import { accessFor } from '../../run-control/access.js'
import type { Action } from '../../run-control/request.js'
import type { ConsoleRequest, PageResult } from '../context.js'
import { html, type Html } from '../html.js'

/** The 404 page for something that is not there (or not visible to this person). */
export function notFoundPage(what: string): PageResult {
  return { status: 404, title: 'Not found', nav: 'error', body: html`<h1>Not found</h1><p>${what} was not found, or you may not see it.</p>` }
}

/** Pure: a human duration, e.g. `4m 12s`. */
export function durationText(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return ''
  const s = Math.floor(ms / 1000)
  if (s < 60) return `${s}s`
  const m = Math.floor(s / 60)
  if (m < 60) return `${m}m ${s % 60}s`
  const h = Math.floor(m / 60)
  if (h < 24) return `${h}h ${m % 60}m`
  return `${Math.floor(h / 24)}d ${h % 24}h`
}

/** Pure: `<time datetime title>relative</time>`, nothing for a missing time. */
export function timeTag(iso: string | undefined, now: Date): Html {
  if (!iso) return html``
  const at = Date.parse(iso)
  if (Number.isNaN(at)) return html``
  const delta = now.getTime() - at
  const text = delta >= 0 ? `${durationText(delta)} ago` : `in ${durationText(-delta)}`
  return html`<time datetime="${iso}" title="${new Date(at).toISOString()}">${text}</time>`
}

/** A form posting one run-control action through the console (the common client script submits it). */
export function actionForm(o: {
  path: string; label: string; reason?: boolean; parameters?: Record<string, string>; extra?: Record<string, string>; danger?: boolean; confirm?: string
}): Html {
  const params = Object.entries(o.parameters ?? {}).map(([k, v]) =>
    html`<label>${k} <input name="parameters.${k}" value="${v}"></label>`)
  return html`<form class="action-form" method="post" action="${o.path}" data-action-form${o.confirm ? html` data-confirm="${o.confirm}"` : ''}${o.extra ? html` data-extra="${JSON.stringify(o.extra)}"` : ''}>${params}${o.reason ? html`<label>Reason <input name="reason" maxlength="1024"></label>` : ''}<button type="submit"${o.danger ? html` class="danger"` : ''}>${o.label}</button></form>`
}

/** Which of these actions the person may take: false for all when the console is read only. */
export async function allowedActions(req: ConsoleRequest, actions: Action[]): Promise<boolean[]> {
  if (!req.config.actions) return actions.map(() => false)
  const asked = actions.map((a) => accessFor(a))
  const answers = await req.kube.reviewSelfAccess(asked.flat())
  let at = 0
  return asked.map((attrs) => {
    const mine = answers.slice(at, at + attrs.length)
    at += attrs.length
    return mine.length === attrs.length && mine.every(Boolean)
  })
}
