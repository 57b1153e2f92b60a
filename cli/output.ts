import { stringify } from 'yaml'
import { UsageError } from './errors.js'

/** How objects are printed: a human table/text, or the objects as JSON or YAML. */
export type OutputFormat = 'table' | 'json' | 'yaml'

/** Pure: the `-o` value as a format; anything else is a usage error. */
export function outputFormat(value: string | undefined): OutputFormat {
  if (value === undefined || value === '' || value === 'table') return 'table'
  if (value === 'json' || value === 'yaml') return value
  throw new UsageError(`unknown output format "${value}" (use -o json or -o yaml)`)
}

/** Pure: objects as the format prints them; a list becomes a kubectl-style `List`. */
export function formatObjects(format: 'json' | 'yaml', value: unknown): string {
  const plain = JSON.parse(JSON.stringify(value)) as unknown
  return format === 'json' ? `${JSON.stringify(plain, null, 2)}\n` : stringify(plain)
}

/** Pure: a List of items as kubectl prints one with -o json/yaml. */
export function asList(items: readonly unknown[]): { apiVersion: 'v1'; kind: 'List'; items: readonly unknown[] } {
  return { apiVersion: 'v1', kind: 'List', items }
}

/** Pure: rows under upper-case headers, columns padded to their widest cell (kubectl's look). */
export function table(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)))
  const line = (cells: readonly string[]) => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!))).join('   ').trimEnd()
  return [line(headers), ...rows.map(line)].join('\n') + '\n'
}

/** Pure: seconds as a short human duration: `45s`, `3m20s`, `2h5m`, `3d4h`. */
export function humanDuration(totalSeconds: number): string {
  const s = Math.max(0, Math.floor(totalSeconds))
  if (s < 60) return `${s}s`
  const m = Math.floor(s / 60)
  if (m < 60) return s % 60 === 0 ? `${m}m` : `${m}m${s % 60}s`
  const h = Math.floor(m / 60)
  if (h < 24) return m % 60 === 0 ? `${h}h` : `${h}h${m % 60}m`
  const d = Math.floor(h / 24)
  return h % 24 === 0 ? `${d}d` : `${d}d${h % 24}h`
}

/** Pure: the time between two instants (end default now) as a human duration, '' when unknown. */
export function between(start: string | undefined, end: string | undefined, now: Date): string {
  if (!start) return ''
  const from = Date.parse(start)
  const to = end ? Date.parse(end) : now.getTime()
  if (Number.isNaN(from) || Number.isNaN(to)) return ''
  return humanDuration((to - from) / 1000)
}

/** Pure: how long ago an instant was (`5m ago`), or how far ahead (`in 5m`); '' when unknown. */
export function relative(time: string | undefined, now: Date): string {
  if (!time) return ''
  const at = Date.parse(time)
  if (Number.isNaN(at)) return ''
  const delta = (now.getTime() - at) / 1000
  return delta >= 0 ? `${humanDuration(delta)} ago` : `in ${humanDuration(-delta)}`
}
