/** Formats an age the way kubectl's AGE column does (`45s`, `3m12s`, `5h`, `2d3h`, `3y`). */
export function humanDuration(ms: number): string {
  const seconds = Math.floor(ms / 1000)
  if (seconds < -1) return '<invalid>'
  if (seconds < 0) return '0s'
  if (seconds < 120) return `${seconds}s`
  const minutes = Math.floor(seconds / 60)
  if (minutes < 10) {
    const s = seconds % 60
    return s === 0 ? `${minutes}m` : `${minutes}m${s}s`
  }
  if (minutes < 180) return `${minutes}m`
  const hours = Math.floor(minutes / 60)
  if (hours < 8) {
    const m = minutes % 60
    return m === 0 ? `${hours}h` : `${hours}h${m}m`
  }
  if (hours < 48) return `${hours}h`
  if (hours < 24 * 8) {
    const h = hours % 24
    return h === 0 ? `${Math.floor(hours / 24)}d` : `${Math.floor(hours / 24)}d${h}h`
  }
  if (hours < 24 * 365 * 2) return `${Math.floor(hours / 24)}d`
  if (hours < 24 * 365 * 8) {
    const d = Math.floor(hours / 24) % 365
    return d === 0 ? `${Math.floor(hours / 24 / 365)}y` : `${Math.floor(hours / 24 / 365)}y${d}d`
  }
  return `${Math.floor(hours / 24 / 365)}y`
}

/** Age of an RFC 3339 timestamp relative to `now`, or `<unknown>` when absent. */
export function ageOf(timestamp: unknown, now: number): string {
  if (typeof timestamp !== 'string') return '<unknown>'
  const t = Date.parse(timestamp)
  return Number.isNaN(t) ? '<unknown>' : humanDuration(now - t)
}
