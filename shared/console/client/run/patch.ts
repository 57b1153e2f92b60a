// Type only: the server's patch shape, erased from the browser bundle.
import type { RunPatch } from '../../run/live.js'
import { phaseClass } from '../../phase.js'
import { announce, byStep, clip, setDuration, setPhaseClass, setText } from './page.js'

/**
 * Applying a live patch to the run page (for ../run.ts): classes and text only, every box keeps
 * its size, and the actions area gains the approval forms the server renders for it.
 */

/** Where a group node's phase bar sits (shared/console/run/dag-svg.ts). */
const BAR_Y = '27'
const BAR_HEIGHT = '12'
const LABEL_CHARS = 26

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

/** Brings the page to a run patch from the live stream: run phase, progress, steps, groups, actions. */
export function applyPatch(root: HTMLElement, patch: RunPatch): void {
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
