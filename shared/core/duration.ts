/**
 * Go duration strings, which purko's manifests use (`guardrails.maxExecutionTime`, retry
 * `backoff`, workflow `timeout`) and which its status messages print.
 */

const UNIT_SECONDS: Record<string, number> = {
  ns: 1e-9, us: 1e-6, 'µs': 1e-6, 'μs': 1e-6, ms: 1e-3, s: 1, m: 60, h: 3600,
}
const COMPONENT = /^(\d*)(?:\.(\d*))?(ns|us|µs|μs|ms|s|m|h)/

/** Pure: seconds in a Go `time.ParseDuration` string (`1h30m`, `300ms`, `1.5h`, `-2s`; no `d`), null when invalid. */
export function parseGoDuration(s: string): number | null {
  let rest = s
  let sign = 1
  if (rest.startsWith('-') || rest.startsWith('+')) {
    if (rest[0] === '-') sign = -1
    rest = rest.slice(1)
  }
  if (rest === '0') return 0
  if (rest === '') return null
  let total = 0
  while (rest !== '') {
    const m = COMPONENT.exec(rest)
    if (!m) return null
    const [whole, int = '', frac = ''] = m
    if (int === '' && frac === '') return null
    total += Number(`${int || '0'}.${frac || '0'}`) * UNIT_SECONDS[m[3]!]!
    rest = rest.slice(whole.length)
  }
  // Work in whole nanoseconds, as Go does, so `1.5h` and `90m` compare equal.
  return (sign * Math.round(total * 1e9)) / 1e9
}

function withFraction(value: bigint, digits: number): string {
  const scale = 10n ** BigInt(digits)
  const whole = value / scale
  const frac = (value % scale).toString().padStart(digits, '0').replace(/0+$/, '')
  return frac === '' ? whole.toString() : `${whole}.${frac}`
}

/** Pure: Go `time.Duration.String()` of a number of seconds (`5s`, `31m5s`, `1h0m0s`, `300ms`, `0s`). */
export function formatGoDuration(seconds: number): string {
  const ns = BigInt(Math.round(seconds * 1e9))
  if (ns === 0n) return '0s'
  const sign = ns < 0n ? '-' : ''
  const u = ns < 0n ? -ns : ns
  if (u < 1000n) return `${sign}${u}ns`
  if (u < 1_000_000n) return `${sign}${withFraction(u, 3)}µs`
  if (u < 1_000_000_000n) return `${sign}${withFraction(u, 6)}ms`
  const hours = u / 3_600_000_000_000n
  const minutes = (u / 60_000_000_000n) % 60n
  const secs = withFraction(u % 60_000_000_000n, 9)
  if (hours > 0n) return `${sign}${hours}h${minutes}m${secs}s`
  if (minutes > 0n) return `${sign}${minutes}m${secs}s`
  return `${sign}${secs}s`
}
