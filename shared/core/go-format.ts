/**
 * Text formats of Go's standard library that purko's executors see in their environment. Kinetic
 * reproduces them byte for byte so that existing executor images parse what they always parsed.
 */

const HTML_UNSAFE = /[<>&\u2028\u2029]/g
const HTML_ESCAPES: Record<string, string> = {
  '<': '\\u003c', '>': '\\u003e', '&': '\\u0026', '\u2028': '\\u2028', '\u2029': '\\u2029',
}

// Go sorts map keys by their UTF-8 bytes, which is code point order (JS sorts UTF-16 units).
function byCodePoint(a: string, b: string): number {
  const ai = a[Symbol.iterator]()
  const bi = b[Symbol.iterator]()
  for (;;) {
    const x = ai.next()
    const y = bi.next()
    if (x.done || y.done) return x.done && y.done ? 0 : x.done ? -1 : 1
    const d = x.value.codePointAt(0)! - y.value.codePointAt(0)!
    if (d !== 0) return d
  }
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys)
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {}
    for (const key of Object.keys(value).sort(byCodePoint)) out[key] = sortKeys((value as Record<string, unknown>)[key])
    return out
  }
  return value
}

/** Pure: compact JSON with object keys sorted (what Go's `json.Marshal` of a map gives), without HTML escaping. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value)) ?? 'null'
}

/** Pure: Go `json.Marshal` text of a JSON value: sorted keys, compact, `<`, `>`, `&`, U+2028/9 escaped. */
export function goJson(value: unknown): string {
  return canonicalJson(value).replace(HTML_UNSAFE, (c) => HTML_ESCAPES[c]!)
}

/** Pure: Go `json.Marshal` text keeping the given key order (for Go structs, whose field order is fixed). */
export function goJsonOrdered(value: unknown): string {
  return (JSON.stringify(value) ?? 'null').replace(HTML_UNSAFE, (c) => HTML_ESCAPES[c]!)
}

/** Shortest round-trip digits and decimal exponent of a finite, non-zero number. */
function shortestDigits(x: number): { digits: string; exp: number } {
  const [mantissa, e] = Math.abs(x).toExponential().split('e') as [string, string]
  return { digits: mantissa.replace('.', ''), exp: Number(e) }
}

function plainDecimal(digits: string, exp: number): string {
  // exp is the power of ten of the first digit.
  if (exp < 0) return `0.${'0'.repeat(-exp - 1)}${digits}`
  if (digits.length <= exp + 1) return digits + '0'.repeat(exp + 1 - digits.length)
  return `${digits.slice(0, exp + 1)}.${digits.slice(exp + 1)}`
}

/** Pure: Go `strconv.FormatFloat(x, 'f', -1, 64)`: shortest decimal, never an exponent (`1.5`, `6`, `0.8`). */
export function goShortestDecimal(x: number): string {
  if (!Number.isFinite(x)) return String(x)
  if (x === 0) return '0'
  const { digits, exp } = shortestDigits(x)
  return (x < 0 ? '-' : '') + plainDecimal(digits, exp)
}

/** Pure: Go `%v` of a float64 (`'g'`, shortest): exponent form below 1e-4 and from 1e6 (`1000000` is `1e+06`). */
export function goFormatFloat(x: number): string {
  if (Number.isNaN(x)) return 'NaN'
  if (!Number.isFinite(x)) return x > 0 ? '+Inf' : '-Inf'
  if (x === 0) return Object.is(x, -0) ? '-0' : '0'
  const { digits, exp } = shortestDigits(x)
  const sign = x < 0 ? '-' : ''
  if (exp < -4 || exp >= 6) {
    const mantissa = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits
    const e = Math.abs(exp)
    return `${sign}${mantissa}e${exp < 0 ? '-' : '+'}${e < 10 ? `0${e}` : e}`
  }
  return sign + plainDecimal(digits, exp)
}

/** Pure: Go `%v` of a value decoded from JSON (numbers as float64, null as `<nil>`, strings as-is). */
export function goFormatValue(v: unknown): string {
  if (typeof v === 'number') return goFormatFloat(v)
  if (v === null || v === undefined) return '<nil>'
  if (typeof v === 'string') return v
  if (typeof v === 'boolean') return String(v)
  if (Array.isArray(v)) return `[${v.map(goFormatValue).join(' ')}]`
  const entries = Object.keys(v as object).sort(byCodePoint)
    .map((k) => `${k}:${goFormatValue((v as Record<string, unknown>)[k])}`)
  return `map[${entries.join(' ')}]`
}

/** Pure: Go `%.2f` (round half to even on exact ties, as Go does; JS `toFixed` rounds them up). */
export function goFixed2(x: number): string {
  const scaled = x * 100
  if (Number.isFinite(scaled) && !Number.isInteger(scaled) && Number.isInteger(scaled * 2) && scaled / 100 === x) {
    const down = Math.floor(scaled)
    const even = down % 2 === 0 ? down : down + 1
    return (even / 100).toFixed(2)
  }
  return x.toFixed(2)
}
