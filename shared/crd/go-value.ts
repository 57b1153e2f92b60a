/**
 * Go values printed the way kube-apiserver prints them inside its messages: a string with `%q`,
 * a float64 with `%v`, anything composite with `encoding/json`. TypeScript holds decoded JSON,
 * so a whole number stands for Go's int64 and any other number for float64; a `GoStruct` stands
 * for a Go struct, whose fields keep their declaration order where a map's keys are sorted.
 */

/** A Go struct value: its exported fields, by Go name, in declaration order. */
export class GoStruct {
  constructor(readonly fields: ReadonlyArray<readonly [name: string, value: unknown]>) {}
}

// strconv.IsPrint: letters, marks, numbers, punctuation, symbols and the ASCII space.
const PRINTABLE = /^[\p{L}\p{M}\p{N}\p{P}\p{S} ]$/u
const QUOTE_ESCAPES: Record<string, string> = { '\x07': '\\a', '\b': '\\b', '\f': '\\f', '\n': '\\n', '\r': '\\r', '\t': '\\t', '\v': '\\v', '"': '\\"', '\\': '\\\\' }

/** Pure: Go's `%q` of a string (strconv.Quote): printable runes as they are, the rest escaped. */
export function goQuote(s: string): string {
  let out = '"'
  for (const ch of wellFormed(s)) {
    const cp = ch.codePointAt(0) as number
    const named = QUOTE_ESCAPES[ch]
    if (named) out += named
    else if (PRINTABLE.test(ch)) out += ch
    else if (cp < 0x80) out += `\\x${hex(cp, 2)}`
    else if (cp < 0x10000) out += `\\u${hex(cp, 4)}`
    else out += `\\U${hex(cp, 8)}`
  }
  return `${out}"`
}

/** Pure: Go's `%v` of a float64: the shortest digits, in exponent form below 1e-4 and from 1e6 on. */
export function goFloat(x: number): string {
  if (Object.is(x, -0)) return '-0'
  if (x === 0) return '0'
  const [mantissa = '', exp = '0'] = x.toExponential().split('e')
  const exponent = Number(exp)
  if (exponent < -4 || exponent >= 6) return `${mantissa}e${exponent < 0 ? '-' : '+'}${String(Math.abs(exponent)).padStart(2, '0')}`
  return String(x)
}

/** Pure: Go's `%v` of a number as decoded JSON holds it: an int64 for a whole number, else a float64. */
export function goNumber(x: number): string {
  return isInt64(x) ? BigInt(x).toString() : goFloat(x)
}

/** Pure: Go's `json.Marshal` of a decoded JSON value or a GoStruct: map keys sorted, `<`, `>` and `&` escaped. */
export function goJson(value: unknown): string {
  if (value === null || value === undefined) return 'null'
  if (typeof value === 'string') return jsonString(value)
  // A whole number is an int64; a float64's JSON text is the same as JavaScript's.
  if (typeof value === 'number') return isInt64(value) ? BigInt(value).toString() : JSON.stringify(value)
  if (typeof value === 'bigint' || typeof value === 'boolean') return String(value)
  if (value instanceof GoStruct) return `{${value.fields.map(([k, v]) => `${jsonString(k)}:${goJson(v)}`).join(',')}}`
  if (Array.isArray(value)) return `[${value.map(goJson).join(',')}]`
  const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined)
  entries.sort(([a], [b]) => byCodePoint(a, b))
  return `{${entries.map(([k, v]) => `${jsonString(k)}:${goJson(v)}`).join(',')}}`
}

// encoding/json's string escaping (HTMLEscape on, as json.Marshal has it).
const JSON_ESCAPES: Record<string, string> = { '"': '\\"', '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t', '\b': '\\b', '\f': '\\f' }

function jsonString(s: string): string {
  let out = '"'
  for (const ch of wellFormed(s)) {
    const cp = ch.codePointAt(0) as number
    const named = JSON_ESCAPES[ch]
    if (named) out += named
    else if (cp < 0x20 || ch === '<' || ch === '>' || ch === '&' || cp === 0x2028 || cp === 0x2029) out += `\\u${hex(cp, 4)}`
    else out += ch
  }
  return `${out}"`
}

/** A Go string is UTF-8: a lone surrogate reaches it as U+FFFD, as the API server's JSON decoder writes it. */
function wellFormed(s: string): string[] {
  return Array.from(s, (ch) => (ch.length === 1 && ch >= '\ud800' && ch <= '\udfff' ? '\ufffd' : ch))
}

/** Go compares strings byte-wise; UTF-8 byte order is code point order. */
function byCodePoint(a: string, b: string): number {
  const x = Array.from(a)
  const y = Array.from(b)
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const d = (x[i]?.codePointAt(0) as number) - (y[i]?.codePointAt(0) as number)
    if (d !== 0) return d
  }
  return x.length - y.length
}

function isInt64(x: number): boolean {
  return Number.isInteger(x) && Math.abs(x) < 2 ** 63
}

function hex(n: number, width: number): string {
  return n.toString(16).padStart(width, '0')
}
