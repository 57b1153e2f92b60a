/**
 * What the list pages share: reading a kind across namespaces as far as the person may, phase
 * badges, tables that scroll inside their box, paging and filter forms. Pure except
 * `listVisible`, which reads through the person's Kube adapter.
 */
import { ForbiddenError } from '../../core/errors.js'
import type { ConsoleRequest } from '../context.js'
import { html, join, type Html } from '../html.js'
import { phaseClass } from '../phase.js'

/** What a list page could read: the items, and the namespaces it was refused. */
export interface Visible<T> {
  items: T[]
  /** Namespaces listed one by one that were still refused. */
  forbidden: string[]
  /** True when the list across all namespaces was refused and config.namespaces were read instead. */
  perNamespace: boolean
}

/**
 * Everything of one kind the person may see: the list across all namespaces, or, when that is
 * refused, each of `config.namespaces` on its own (those still refused are named). A refusal in
 * every namespace is the person's answer too, so it is thrown as the ForbiddenError it is.
 */
export async function listVisible<T>(
  req: ConsoleRequest,
  all: () => Promise<T[]>,
  inNamespace: (namespace: string) => Promise<T[]>,
): Promise<Visible<T>> {
  try {
    return { items: await all(), forbidden: [], perNamespace: false }
  } catch (err) {
    if (!(err instanceof ForbiddenError)) throw err
    const namespaces = [...new Set(req.config.namespaces)]
    if (namespaces.length === 0) throw err
    const items: T[] = []
    const forbidden: string[] = []
    const results = await Promise.allSettled(namespaces.map((ns) => inNamespace(ns)))
    results.forEach((result, i) => {
      if (result.status === 'fulfilled') items.push(...result.value)
      else if (result.reason instanceof ForbiddenError) forbidden.push(namespaces[i]!)
      else throw result.reason
    })
    if (forbidden.length === namespaces.length) throw err
    return { items, forbidden, perNamespace: true }
  }
}

/** Pure: the note above a list read namespace by namespace. */
export function visibilityNote(visible: Visible<unknown>, what: string): Html {
  if (!visible.perNamespace) return html``
  const refused = visible.forbidden.length > 0
    ? html` You may not see ${what} in ${visible.forbidden.length === 1 ? 'namespace' : 'namespaces'} ${visible.forbidden.join(', ')}.`
    : html``
  return html`<p class="note" role="note">You may not list ${what} across all namespaces; showing the configured namespaces you may read.${refused}</p>`
}

/** Pure: a phase as a badge: its text always, the colour and glyph only adding to it. */
export function phaseBadge(phase: string | undefined, text?: string): Html {
  return html`<span class="badge phase-${phaseClass(phase)}">${text ?? phase ?? 'Unknown'}</span>`
}

/** Pure: a table inside a box that scrolls sideways on narrow screens (focusable, so keyboards can scroll it). */
export function scrollTable(label: string, headers: readonly (string | { text: string; num?: boolean })[], rows: readonly Html[]): Html {
  const head = join(headers.map((h) => (typeof h === 'string' ? html`<th scope="col">${h}</th>` : html`<th scope="col"${h.num ? html` class="num"` : ''}>${h.text}</th>`)))
  return html`<div class="table-scroll" role="region" aria-label="${label}" tabindex="0"><table><thead><tr>${head}</tr></thead><tbody>${join(rows)}</tbody></table></div>`
}

/** Pure: a link to a namespaced object's page, names escaped in text and path. */
export function objectLink(base: string, namespace: string | undefined, name: string | undefined): Html {
  const path = `${base}/${encodeURIComponent(namespace ?? '')}/${encodeURIComponent(name ?? '')}`
  return html`<a href="${path}">${name ?? ''}</a>`
}

/** Pure: the conditions of an object as a table, or a line saying there are none. */
export function conditionsTable(conditions: readonly { type: string; status: string; reason?: string; message?: string; lastTransitionTime?: string }[] | undefined, timeTag: (iso: string | undefined) => Html): Html {
  if (!conditions || conditions.length === 0) return html`<p class="empty">No conditions reported.</p>`
  return scrollTable('Conditions', ['Type', 'Status', 'Reason', 'Message', 'Since'], conditions.map((c) =>
    html`<tr><td>${c.type}</td><td>${c.status}</td><td>${c.reason ?? ''}</td><td>${c.message ?? ''}</td><td>${timeTag(c.lastTransitionTime)}</td></tr>`))
}

/** Which page of a list is shown. */
export interface PageWindow {
  page: number
  pages: number
  /** Index of the first item shown (0-based) and one past the last. */
  from: number
  to: number
  total: number
}

/** Pure: the window of `?page=` (1-based; out of range is clamped) over `total` items. */
export function pageWindow(total: number, pageParam: string | null, size: number): PageWindow {
  const pages = Math.max(1, Math.ceil(total / size))
  const asked = Number.parseInt(pageParam ?? '1', 10)
  const page = Math.min(pages, Math.max(1, Number.isFinite(asked) ? asked : 1))
  const from = Math.min(total, (page - 1) * size)
  return { page, pages, from, to: Math.min(total, from + size), total }
}

/** Pure: "showing 51–100 of 340" with links to the pages before and after, keeping the filters. */
export function pager(url: URL, w: PageWindow, noun: string): Html {
  if (w.total === 0) return html``
  const link = (page: number) => {
    const next = new URL(url.toString())
    if (page === 1) next.searchParams.delete('page')
    else next.searchParams.set('page', String(page))
    return `${next.pathname}${next.search}`
  }
  const prev = w.page > 1 ? html`<a href="${link(w.page - 1)}" rel="prev">Previous page</a>` : html``
  const next = w.page < w.pages ? html`<a href="${link(w.page + 1)}" rel="next">Next page</a>` : html``
  return html`<nav class="pager" aria-label="Pages of ${noun}"><span>showing ${w.from + 1}–${w.to} of ${w.total} ${noun}</span>${prev}${next}${w.pages > 1 ? html`<span class="muted">page ${w.page} of ${w.pages}</span>` : ''}</nav>`
}

/** One filter select: its label, query name, the values seen in the data, and the one chosen. */
export interface FilterSelect {
  name: string
  label: string
  values: readonly string[]
  chosen: string
  /** The text of the "no filter" option, e.g. "all namespaces". */
  all: string
}

/** Pure: a GET form of selects (works without the script; with it a change applies at once). */
export function filterForm(action: string, selects: readonly FilterSelect[], clearHref: string): Html {
  const fields = selects.map((s) => {
    const values = s.chosen && !s.values.includes(s.chosen) ? [...s.values, s.chosen] : [...s.values]
    const options = join([html`<option value="">${s.all}</option>`, ...values.map((v) => html`<option value="${v}"${v === s.chosen ? html` selected` : ''}>${v}</option>`)])
    return html`<label>${s.label}<select name="${s.name}">${options}</select></label>`
  })
  const anyChosen = selects.some((s) => s.chosen !== '')
  return html`<form class="filters" method="get" action="${action}" role="search" aria-label="Filters">${join(fields)}<button type="submit" class="button">Apply</button>${anyChosen ? html`<a href="${clearHref}">Clear filters</a>` : ''}</form>`
}

/** Pure: sorted distinct non-empty values. */
export function distinct(values: Iterable<string | undefined>): string[] {
  return [...new Set([...values].filter((v): v is string => typeof v === 'string' && v !== ''))].sort()
}

/** Pure: a number as a percentage with at most one decimal (`97.5%`), '' when unknown. */
export function percent(rate: number | undefined): string {
  if (rate === undefined || !Number.isFinite(rate)) return ''
  return `${Math.round(rate * 1000) / 10}%`
}

/** Pure: US dollars with two decimals (four below a cent), '' when unknown. */
export function usd(amount: number | undefined): string {
  if (amount === undefined || !Number.isFinite(amount)) return ''
  return amount > 0 && amount < 0.01 ? `$${amount.toFixed(4)}` : `$${amount.toFixed(2)}`
}
