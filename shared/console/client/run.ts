/**
 * The run page's script (bundled for the browser by shared/console/assets.ts): keeps the page
 * current from /live/workflows/... by changing classes and text only (every box has a fixed
 * size, so nothing moves), announces run phase changes, opens a step's detail in a panel, and
 * follows a step's log. Without it the page is complete as served and every step is a link.
 * Its parts are in the folder run/ (page.ts, patch.ts, step-log.ts): assets.ts bundles each file
 * directly in client/ as a script of its own, and these are parts, not scripts.
 */
// Type only: the server's patch shape, erased from the browser bundle.
import type { RunPatch } from '../run/live.js'
import { announce, RECONNECT_MS, tickDurations } from './run/page.js'
import { applyPatch } from './run/patch.js'
import { followLog } from './run/step-log.js'

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
