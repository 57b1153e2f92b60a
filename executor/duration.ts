const UNIT_MS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  'µs': 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
}

const PART = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)/y

/**
 * Pure: milliseconds for a Go duration string (`90s`, `1h30m`, `2.5m`) or a bare number of
 * seconds (`300`, `1.5`); null when the text is neither. The controller formats
 * `guardrails.maxExecutionTime` with Go's `%v`, so both shapes reach the executor.
 */
export function parseDurationMs(text: string): number | null {
  const s = text.trim()
  if (s === '') return null
  if (/^\d+(\.\d+)?$/.test(s)) return Number(s) * 1000
  let total = 0
  PART.lastIndex = 0
  let pos = 0
  while (pos < s.length) {
    PART.lastIndex = pos
    const m = PART.exec(s)
    if (!m || m.index !== pos) return null
    const unit = UNIT_MS[m[2] ?? '']
    if (unit === undefined) return null
    total += Number(m[1]) * unit
    pos = PART.lastIndex
  }
  return total
}
