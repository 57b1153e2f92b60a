/**
 * The run page's script (bundled for the browser by shared/console/assets.ts): keeps the page
 * current from /live/workflows/... by changing classes and text only (every box has a fixed
 * size, so nothing moves), announces run phase changes, opens a step's detail in a panel, and
 * follows a step's log. Without it the page is complete as served and every step is a link.
 */
// Type only: the server's patch shape, erased from the browser bundle.
import type { RunPatch } from '../run/live.js'
import { phaseClass } from '../phase.js'
import { durationText } from '../time.js'

/** Where a group node's phase bar sits (shared/console/run/dag-svg.ts). */
const BAR_Y = '27'
const BAR_HEIGHT = '12'
const RECONNECT_MS = 3000
const LABEL_CHARS = 26

function clip(text: string, chars: number): string {
  return text.length <= chars ? text : `${text.slice(0, chars - 1)}\u2026`
}

function setPhaseClass(el: Element, cls: string): void {
  for (const c of Array.from(el.classList)) if (c.startsWith('phase-')) el.classList.remove(c)
  el.classList.add(`phase-${cls}`)
}

function setText(el: Element | null | undefined, text: string): void {
  if (el && el.textContent !== text) el.textContent = text
}

/** Sets a duration and whether it keeps counting (`data-started`, read by tickDurations). */
function setDuration(el: HTMLElement | null, text: string, runningSince: string): void {
  if (!el) return
  if (runningSince) el.dataset.started = runningSince
  else delete el.dataset.started
  setText(el, text)
}

/** Counts every running duration on from its start, so it moves each second between patches. */
function tickDurations(): void {
  const now = Date.now()
  for (const el of Array.from(document.querySelectorAll<HTMLElement>('[data-started]'))) {
    const started = Date.parse(el.dataset.started ?? '')
    // A browser clock behind the server's never shows a negative time.
    if (!Number.isNaN(started)) setText(el, durationText(Math.max(0, now - started)))
  }
}

function byStep(root: ParentNode, selector: string, step: string): HTMLElement[] {
  return Array.from(root.querySelectorAll<HTMLElement>(`${selector}[data-step="${CSS.escape(step)}"]`))
}

function announce(root: HTMLElement, text: string): void {
  const region = root.querySelector<HTMLElement>('[data-announce]') ?? document.getElementById('announcer')
  if (!region) return
  region.textContent = ''
  window.setTimeout(() => { region.textContent = text }, 50)
}

function applyGroups(root: HTMLElement, groups: [string, number][][]): void {
  groups.forEach((counts, index) => {
    const node = root.querySelector<SVGGElement>(`g.node.group[data-group="${index}"]`)
    const bar = node?.querySelector('g.group-bar')
    const box = node?.querySelector('rect.group-box')
    if (!node || !bar || !box) return
    const total = counts.reduce((sum, [, n]) => sum + n, 0)
    const width = Number(box.getAttribute('width') ?? '0') - 20
    let offset = 0
    const rects = counts.map(([phase, n]) => {
      const rect = document.createElementNS('http://www.w3.org/2000/svg', 'rect')
      const w = (width * n) / Math.max(1, total)
      rect.setAttribute('class', `bar phase-${phaseClass(phase)}`)
      rect.setAttribute('x', (10 + offset).toFixed(1))
      rect.setAttribute('y', BAR_Y)
      rect.setAttribute('width', w.toFixed(1))
      rect.setAttribute('height', BAR_HEIGHT)
      offset += w
      return rect
    })
    bar.replaceChildren(...rects)
    const tally = counts.map(([phase, n]) => `${n} ${phase}`).join(', ')
    setText(node.querySelector('.group-counts'), clip(tally, 52))
    const title = node.querySelector('title')
    if (title) setText(title, `${(title.textContent ?? '').split(' \u2014 ')[0]} \u2014 ${tally}`)
  })
}

function applyPatch(root: HTMLElement, patch: RunPatch): void {
  const previous = root.dataset.phase
  root.dataset.rv = patch.rv
  root.dataset.phase = patch.phase
  const badge = root.querySelector('[data-run-phase] .badge')
  if (badge) {
    setPhaseClass(badge, phaseClass(patch.phase))
    setText(badge, patch.phase)
  }
  if (previous !== patch.phase) announce(root, `Run is now ${patch.phase}`)
  const progress = root.querySelector<HTMLProgressElement>('[data-run-progress]')
  if (progress) {
    progress.max = patch.progress.total
    progress.value = patch.progress.completed
  }
  const { completed, failed, total } = patch.progress
  setText(root.querySelector('[data-run-progress-text]'), `${completed}/${total} done${failed ? `, ${failed} failed` : ''}`)
  setDuration(root.querySelector<HTMLElement>('[data-run-duration]'), patch.duration || '\u2014', patch.runningSince)
  setText(root.querySelector('[data-run-message]'), patch.message)
  for (const [step, [cls, label, duration, reason, runningSince]] of Object.entries(patch.steps)) {
    for (const node of byStep(root, 'g.node', step)) {
      setPhaseClass(node, cls)
      setText(node.querySelector('.node-phase'), clip(label, LABEL_CHARS))
      setText(node.querySelector('title'), `${step}: ${label}`)
    }
    for (const row of byStep(root, 'tr', step)) {
      const cell = row.querySelector('.step-phase .badge')
      if (cell) {
        setPhaseClass(cell, cls)
        setText(cell, label)
      }
      setDuration(row.querySelector<HTMLElement>('.step-duration'), duration, runningSince)
      setText(row.querySelector('.step-reason'), reason)
    }
    // The step open in the panel shows its phase in its heading.
    for (const detail of byStep(root, 'article.step-detail', step)) {
      const badge = detail.querySelector('h1 .step-phase .badge')
      if (badge) {
        setPhaseClass(badge, cls)
        setText(badge, label)
      }
      setDuration(detail.querySelector<HTMLElement>('dd.step-duration'), duration || '\u2014', runningSince)
    }
  }
  if (patch.groups) applyGroups(root, patch.groups)
  applyActions(root, patch.actions)
}

function applyActions(root: HTMLElement, actions: RunPatch['actions']): void {
  const toggle = (el: Element | null, show: boolean) => { if (el instanceof HTMLElement) el.hidden = !show }
  toggle(root.querySelector('[data-action="cancel"]'), actions.cancel)
  toggle(root.querySelector('[data-action="rerun"]'), actions.rerun)
  const shown = new Set<string>()
  for (const el of Array.from(root.querySelectorAll<HTMLElement>('.run-actions [data-action="decide"]'))) {
    const step = el.dataset.step ?? ''
    if (actions.decide.includes(step)) shown.add(step)
    else toSlot(el) // decided: its room stays, unseen, so the page below does not move up
  }
  // A step newly waiting for approval has no form on this page yet: the server renders it.
  if (actions.decide.some((s) => !shown.has(s))) void refreshActions(root)
}

/** A decided step's forms become room kept for the next ones: unseen, out of reach, the same size. */
function toSlot(el: HTMLElement): void {
  el.dataset.action = 'slot'
  delete el.dataset.step
  el.classList.add('action-slot')
  el.setAttribute('aria-hidden', 'true')
  el.inert = true
}

let refreshing: Promise<void> | undefined
let refreshAgain = false

/**
 * Fetches the actions area as the server decides it now (the person's rights included) and adds
 * the forms this page lacks, leaving the others (and whatever is typed in them) in place. When
 * the area cannot be fetched, a note offers a reload instead.
 */
function refreshActions(root: HTMLElement): Promise<void> {
  if (refreshing) {
    refreshAgain = true
    return refreshing
  }
  const section = root.querySelector<HTMLElement>('.run-actions')
  const href = root.dataset.actionsHref
  const stale = root.querySelector<HTMLElement>('[data-action-stale]')
  if (!section || !href) {
    if (stale) stale.hidden = false
    return Promise.resolve()
  }
  const run = async () => {
    try {
      const response = await fetch(href, { credentials: 'same-origin' })
      if (!response.ok) throw new Error(`HTTP ${response.status}`)
      const fresh = document.createElement('template')
      fresh.innerHTML = await response.text()
      const decided = Array.from(fresh.content.querySelectorAll<HTMLElement>('[data-action="decide"]'))
      const steps = new Set(decided.map((el) => el.dataset.step ?? ''))
      for (const el of Array.from(section.querySelectorAll<HTMLElement>('[data-action="decide"]'))) {
        if (!steps.has(el.dataset.step ?? '')) toSlot(el)
      }
      // New forms take the room kept for them, else go before cancel and rerun, where the server puts them.
      const before = section.querySelector('[data-action="cancel"]')
      for (const el of decided) {
        if (section.querySelector(`[data-action="decide"][data-step="${CSS.escape(el.dataset.step ?? '')}"]`)) continue
        for (const button of Array.from(el.querySelectorAll<HTMLButtonElement>('button[data-needs-script]'))) button.disabled = false
        const slot = section.querySelector('[data-action="slot"]')
        if (slot) slot.replaceWith(el)
        else section.insertBefore(el, before)
        announce(root, `Step ${el.dataset.step ?? ''} waits for approval`)
      }
      for (const kind of ['cancel', 'rerun']) {
        const now = fresh.content.querySelector<HTMLElement>(`[data-action="${kind}"]`)
        const here = section.querySelector<HTMLElement>(`[data-action="${kind}"]`)
        if (now && here) here.hidden = now.hidden
      }
      if (stale) stale.hidden = true
    } catch {
      if (stale) stale.hidden = false
    }
  }
  refreshing = run().finally(() => {
    refreshing = undefined
    // The stream moved on while this was read: read again once.
    if (refreshAgain) {
      refreshAgain = false
      void refreshActions(root)
    }
  })
  return refreshing
}

function followRun(root: HTMLElement): void {
  const base = root.dataset.live
  if (!base) return
  let source: EventSource | undefined
  let live = false
  const open = () => {
    // The page's current resourceVersion, so a reconnect starts where the page is.
    const url = new URL(base, window.location.href)
    url.searchParams.set('rv', root.dataset.rv ?? '')
    source = new EventSource(url.toString())
    source.addEventListener('open', () => { live = true })
    source.addEventListener('run', (e) => applyPatch(root, JSON.parse((e as MessageEvent<string>).data) as RunPatch))
    source.addEventListener('gone', () => {
      stop()
      announce(root, 'This run was deleted')
    })
    source.addEventListener('error', (e) => {
      const data = (e as MessageEvent<string>).data
      stop()
      if (typeof data === 'string' && data !== '') {
        announce(root, (JSON.parse(data) as { message?: string }).message ?? 'Live updates stopped')
        return
      }
      // A dropped connection: reopen with the latest resourceVersion rather than the first URL.
      window.setTimeout(open, RECONNECT_MS)
    })
  }
  const stop = () => {
    live = false
    source?.close()
    source = undefined
  }
  // The stream shows the effect of an action; the common script need not reload the page.
  document.addEventListener('kinetic:action', (e) => { if (live) e.preventDefault() })
  open()
}

function followLog(panel: HTMLElement): () => void {
  const url = panel.dataset.logLive
  const pre = panel.querySelector<HTMLElement>('[data-log]')
  const follow = panel.querySelector<HTMLInputElement>('[data-log-follow]')
  const status = panel.querySelector<HTMLElement>('[data-log-status]')
  if (!url || !pre) return () => {}
  let source: EventSource | undefined
  let ended = false
  let pending: string[] = []
  let frame = 0
  // The id of the last line shown: a reopened stream starts after it (live.ts logEventsResponse).
  let lastId = ''
  let retry = 0
  const flush = () => {
    frame = 0
    if (pending.length === 0) return
    pre.append(document.createTextNode(pending.join('')))
    pending = []
    if (follow?.checked) pre.scrollTop = pre.scrollHeight
  }
  const finish = (text: string) => {
    ended = true
    window.clearTimeout(retry)
    source?.close()
    source = undefined
    flush()
    setText(status, text)
  }
  const open = () => {
    if (ended || source) return
    const target = new URL(url, window.location.href)
    if (lastId) target.searchParams.set('after', lastId)
    source = new EventSource(target.toString())
    source.addEventListener('reset', () => {
      pending = []
      pre.textContent = ''
      setText(status, 'Following the log.')
    })
    source.addEventListener('line', (e) => {
      const message = e as MessageEvent<string>
      if (message.lastEventId) lastId = message.lastEventId
      // A line's text may have been split over several data fields; they come back joined by \n.
      pending.push(`${message.data}\n`)
      if (!frame) frame = window.requestAnimationFrame(flush)
      setText(status, 'Following the log.')
    })
    source.addEventListener('gap', (e) => {
      pending.push(`\u2026 ${(JSON.parse((e as MessageEvent<string>).data) as { message: string }).message}\n`)
      if (!frame) frame = window.requestAnimationFrame(flush)
    })
    for (const name of ['end', 'truncated'] as const) {
      source.addEventListener(name, (e) => finish((JSON.parse((e as MessageEvent<string>).data) as { message: string }).message))
    }
    source.addEventListener('error', (e) => {
      const data = (e as MessageEvent<string>).data
      if (typeof data === 'string' && data !== '') {
        finish((JSON.parse(data) as { message?: string }).message ?? 'The log stream stopped.')
        return
      }
      // The connection dropped: reopen after the last line shown (EventSource's own retry would
      // give up on an error status, and cannot say where the page is), until the log ends.
      close()
      setText(status, 'Reconnecting to the log\u2026')
      window.clearTimeout(retry)
      retry = window.setTimeout(open, RECONNECT_MS)
    })
  }
  const close = () => {
    source?.close()
    source = undefined
  }
  // A hidden tab keeps no connection open; showing it again resumes after the last line shown.
  const onVisibility = () => {
    if (!document.hidden) return open()
    window.clearTimeout(retry)
    close()
  }
  document.addEventListener('visibilitychange', onVisibility)
  follow?.addEventListener('change', () => { if (follow.checked) pre.scrollTop = pre.scrollHeight })
  if (!document.hidden) open()
  return () => {
    document.removeEventListener('visibilitychange', onVisibility)
    ended = true
    window.clearTimeout(retry)
    close()
  }
}

function stepPanel(root: HTMLElement): void {
  const panel = root.querySelector<HTMLElement>('#step-panel')
  if (!panel) return
  let stopLog = () => {}
  const show = async (href: string) => {
    const url = new URL(href, window.location.href)
    url.searchParams.set('fragment', '1')
    const response = await fetch(url.toString(), { credentials: 'same-origin' })
    if (!response.ok) {
      window.location.assign(href)
      return
    }
    stopLog()
    panel.innerHTML = await response.text()
    const close = document.createElement('button')
    close.type = 'button'
    close.className = 'button panel-close'
    close.textContent = 'Close step'
    close.addEventListener('click', () => {
      stopLog()
      panel.hidden = true
      panel.replaceChildren()
    })
    panel.prepend(close)
    panel.hidden = false
    for (const button of Array.from(panel.querySelectorAll<HTMLButtonElement>('button[data-needs-script]'))) button.disabled = false
    const heading = panel.querySelector<HTMLElement>('h1')
    if (heading) {
      heading.tabIndex = -1
      heading.focus()
    }
    const log = panel.querySelector<HTMLElement>('.log-panel[data-log-live]')
    stopLog = log ? followLog(log) : () => {}
  }
  root.addEventListener('click', (event) => {
    const me = event as MouseEvent
    if (me.button !== 0 || me.metaKey || me.ctrlKey || me.shiftKey || me.altKey) return
    const target = event.target instanceof Element ? event.target.closest('a.step-link, a.node-link[data-step]') : null
    if (!target) return
    const href = target.getAttribute('href')
    if (!href) return
    event.preventDefault()
    void show(href).catch(() => window.location.assign(href))
  })
}

function start(): void {
  tickDurations()
  window.setInterval(tickDurations, 1000)
  const root = document.getElementById('run')
  if (root?.dataset.live) {
    followRun(root)
    stepPanel(root)
  }
  // The step page on its own (no JS panel): follow its log directly.
  for (const panel of Array.from(document.querySelectorAll<HTMLElement>('article.step-detail .log-panel[data-log-live]'))) {
    if (!panel.closest('#step-panel')) followLog(panel)
  }
}

if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start)
else start()
