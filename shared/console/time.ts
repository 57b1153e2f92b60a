/**
 * Times as a person reads them: "3 min ago" with the exact instant a hover away, and durations
 * such as "1 h 2 min". Pure and free of Node imports: the browser bundle (client/common.ts)
 * uses the same wording when it refreshes relative times.
 */
import { html, type Html } from './html.js'

const MINUTE = 60
const HOUR = 60 * MINUTE
const DAY = 24 * HOUR

/** Pure: a span of time in its largest unit only, e.g. `45 s`, `3 min`, `2 h`, `4 d` (what relative times need). */
export function roughDuration(ms: number): string {
  const s = Math.floor(Math.max(0, ms) / 1000)
  if (s < MINUTE) return `${s} s`
  if (s < HOUR) return `${Math.floor(s / MINUTE)} min`
  if (s < DAY) return `${Math.floor(s / HOUR)} h`
  return `${Math.floor(s / DAY)} d`
}

/**
 * Pure: a duration in its two largest units, e.g. `45 s`, `3 min 20 s`, `1 h 2 min`, `2 d 3 h`;
 * '' for a negative or unknown span. A zero second unit is left out (`1 h`, not `1 h 0 min`).
 */
export function durationText(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return ''
  const s = Math.floor(ms / 1000)
  const two = (big: number, bigUnit: string, small: number, smallUnit: string) =>
    (small === 0 ? `${big} ${bigUnit}` : `${big} ${bigUnit} ${small} ${smallUnit}`)
  if (s < MINUTE) return `${s} s`
  if (s < HOUR) return two(Math.floor(s / MINUTE), 'min', s % MINUTE, 's')
  if (s < DAY) return two(Math.floor(s / HOUR), 'h', Math.floor((s % HOUR) / MINUTE), 'min')
  return two(Math.floor(s / DAY), 'd', Math.floor((s % DAY) / HOUR), 'h')
}

/** Pure: how far `at` lies from `now`: "just now" within 5 s, else "3 min ago" or "in 2 h". */
export function relativeText(at: number, now: number): string {
  const delta = now - at
  if (Math.abs(delta) < 5000) return 'just now'
  return delta > 0 ? `${roughDuration(delta)} ago` : `in ${roughDuration(-delta)}`
}

/** Pure: the exact instant, in UTC so every reader and every test sees the same text: `2026-12-01 09:30:00 UTC`. */
export function absoluteText(at: number): string {
  return `${new Date(at).toISOString().slice(0, 19).replace('T', ' ')} UTC`
}

/**
 * Pure: `<time datetime=ISO title=absolute>relative</time>`; nothing for a missing or unreadable
 * time. The class `rel` is what the common client script refreshes every 30 s.
 */
export function timeTag(iso: string | undefined, now: Date): Html {
  if (!iso) return html``
  const at = Date.parse(iso)
  if (Number.isNaN(at)) return html``
  return html`<time class="rel" datetime="${new Date(at).toISOString()}" title="${absoluteText(at)}">${relativeText(at, now.getTime())}</time>`
}

/** Pure: the time between two instants (end default `now`), '' when the start is unknown. */
export function elapsedText(start: string | undefined, end: string | undefined, now: Date): string {
  if (!start) return ''
  const from = Date.parse(start)
  const to = end ? Date.parse(end) : now.getTime()
  if (Number.isNaN(from) || Number.isNaN(to)) return ''
  return durationText(to - from)
}
