import { durationText } from '../../time.js'

/**
 * Writing to the run page (for the run page's script, ../run.ts): text and phase classes changed
 * only where they differ, running durations that count on, announcements to screen readers.
 */

/** How long a dropped live stream waits before it is opened again. */
export const RECONNECT_MS = 3000

/** The text cut to `chars` characters, an ellipsis marking the cut. */
export function clip(text: string, chars: number): string {
  return text.length <= chars ? text : `${text.slice(0, chars - 1)}\u2026`
}

/** Replaces the element's `phase-*` class. */
export function setPhaseClass(el: Element, cls: string): void {
  for (const c of Array.from(el.classList)) if (c.startsWith('phase-')) el.classList.remove(c)
  el.classList.add(`phase-${cls}`)
}

/** Sets the text, touching the page only when it changes. */
export function setText(el: Element | null | undefined, text: string): void {
  if (el && el.textContent !== text) el.textContent = text
}

/** Sets a duration and whether it keeps counting (`data-started`, read by tickDurations). */
export function setDuration(el: HTMLElement | null, text: string, runningSince: string): void {
  if (!el) return
  if (runningSince) el.dataset.started = runningSince
  else delete el.dataset.started
  setText(el, text)
}

/** Counts every running duration on from its start, so it moves each second between patches. */
export function tickDurations(): void {
  const now = Date.now()
  for (const el of Array.from(document.querySelectorAll<HTMLElement>('[data-started]'))) {
    const started = Date.parse(el.dataset.started ?? '')
    // A browser clock behind the server's never shows a negative time.
    if (!Number.isNaN(started)) setText(el, durationText(Math.max(0, now - started)))
  }
}

/** The elements matching `selector` of one step. */
export function byStep(root: ParentNode, selector: string, step: string): HTMLElement[] {
  return Array.from(root.querySelectorAll<HTMLElement>(`${selector}[data-step="${CSS.escape(step)}"]`))
}

/** Says `text` through the page's live region. */
export function announce(root: HTMLElement, text: string): void {
  const region = root.querySelector<HTMLElement>('[data-announce]') ?? document.getElementById('announcer')
  if (!region) return
  region.textContent = ''
  window.setTimeout(() => { region.textContent = text }, 50)
}
