/**
 * CONTENT_FILTERS: redaction applied to every string in the step's output before it is
 * printed. Filter names follow purko's (`no-pii`, `no-secrets-in-output`, `regex:<p>:<r>`) and
 * the short forms `pii` and `secrets`. Every pattern, the agent author's and the built-in ones,
 * runs on RE2 (shared/cel/regex.ts): the text is model output, which anyone who can put words in
 * front of the model shapes, so redaction takes time linear in its length.
 */
import type { RE2JS } from 're2js'
import { compileEcmaScriptOnRe2, compileRe2 } from '../shared/cel/regex.js'

/** One parsed filter; `unknown` keeps a name we cannot enforce so the run can warn about it. */
export type ContentFilter =
  | { kind: 'pii' }
  | { kind: 'secrets' }
  | { kind: 'regex'; pattern: RE2JS; replacement: string }
  | { kind: 'unknown'; name: string }

const PII_NAMES = new Set(['pii', 'no-pii', 'redact-pii'])
const SECRET_NAMES = new Set(['secrets', 'no-secrets', 'no-secrets-in-output', 'redact-secrets'])

/**
 * Pure: the filters named by CONTENT_FILTERS, which may be a JSON array of names, a JSON array
 * of `{type|name, pattern?, replacement?}` objects, a JSON object of `name: true` flags, or a
 * comma-separated list. Throws with a message when a regex filter does not compile.
 */
export function parseContentFilters(text: string): ContentFilter[] {
  const trimmed = text.trim()
  if (trimmed === '') return []
  let value: unknown
  try {
    value = JSON.parse(trimmed)
  } catch {
    value = trimmed.split(',').map((s) => s.trim()).filter((s) => s !== '')
  }
  const entries: unknown[] = Array.isArray(value)
    ? value
    : typeof value === 'string'
      ? [value]
      : value !== null && typeof value === 'object'
        ? Object.entries(value).filter(([, on]) => on !== false).map(([name]) => name)
        : []
  return entries.map(toFilter)
}

function toFilter(entry: unknown): ContentFilter {
  if (typeof entry === 'string') return fromName(entry)
  if (entry !== null && typeof entry === 'object') {
    const o = entry as Record<string, unknown>
    const name = String(o.type ?? o.name ?? '')
    if (name === 'regex' && typeof o.pattern === 'string') {
      return regexFilter(o.pattern, typeof o.replacement === 'string' ? o.replacement : '***REDACTED***')
    }
    return fromName(name)
  }
  return { kind: 'unknown', name: String(entry) }
}

function fromName(raw: string): ContentFilter {
  const name = raw.trim()
  const lower = name.toLowerCase()
  if (PII_NAMES.has(lower)) return { kind: 'pii' }
  if (SECRET_NAMES.has(lower)) return { kind: 'secrets' }
  if (lower.startsWith('regex:')) {
    // `regex:<pattern>:<replacement>`: the replacement is after the last colon so patterns may contain colons.
    const body = name.slice('regex:'.length)
    const cut = body.lastIndexOf(':')
    return cut < 0 ? regexFilter(body, '***REDACTED***') : regexFilter(body.slice(0, cut), body.slice(cut + 1))
  }
  return { kind: 'unknown', name }
}

function regexFilter(pattern: string, replacement: string): ContentFilter {
  try {
    return { kind: 'regex', pattern: compileEcmaScriptOnRe2(pattern), replacement }
  } catch (err) {
    throw new Error(`regex filter ${JSON.stringify(pattern)} does not compile: ${(err as Error).message}`)
  }
}

/** Every match of `re` in `text` replaced, as String.prototype.replace with a global pattern does. */
function replaceAll(text: string, re: RE2JS, replacement: string | ((match: string, ...groups: string[]) => string)): string {
  if (typeof replacement === 'string') return re.matcher(text).replaceAll(replacement)
  const m = re.matcher(text)
  let out = ''
  let last = 0
  while (m.find()) {
    const groups = Array.from({ length: m.groupCount() }, (_, i) => m.group(i + 1) ?? '')
    out += text.slice(last, m.start()) + replacement(m.group() ?? '', ...groups)
    last = m.end()
  }
  return last === 0 ? text : out + text.slice(last)
}

const EMAIL = compileRe2(String.raw`[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}`)
const SSN = compileRe2(String.raw`\b\d{3}-\d{2}-\d{4}\b`)
// 13 to 19 digits, optionally grouped by single spaces or dashes; checked with Luhn below.
const CARD = compileRe2(String.raw`\b\d(?:[ -]?\d){12,18}\b`)
// International or national numbers with separators, not touching a word character or a dot on
// either side (checked in redactPii: RE2 has no lookaround), so IP addresses survive.
const PHONE = compileRe2(String.raw`(?:\+\d{1,3}[ -]?)?(?:\(\d{2,4}\)[ -]?|\d{2,4}[ -])\d{3,4}[ -]\d{3,4}`)
const WORD_OR_DOT = /[\w.]/

const SECRET_PATTERNS: readonly RE2JS[] = [
  String.raw`-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----`,
  String.raw`\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{16,}`,
  String.raw`\bgh[pousr]_[A-Za-z0-9]{30,}`,
  String.raw`\bgithub_pat_[A-Za-z0-9_]{30,}`,
  String.raw`\bxox[abprs]-[A-Za-z0-9-]{10,}`,
  String.raw`\bAKIA[0-9A-Z]{16}\b`,
  String.raw`\bAIza[0-9A-Za-z_-]{35}`,
  String.raw`\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`,
  String.raw`\b[Bb]earer\s+[A-Za-z0-9._~+/=-]{16,}`,
].map(compileRe2)
// `api_key = value`, `"token": "value"`, `password: value`: keep the name, hide the value.
const SECRET_ASSIGNMENT = compileRe2(
  String.raw`(?i)\b([A-Za-z0-9_-]*(?:api[_-]?key|secret|token|password|passwd|credential)[A-Za-z0-9_-]*)(["']?\s*[:=]\s*["']?)([^\s"',;]{4,})`,
)

function luhn(digits: string): boolean {
  let sum = 0
  for (let i = 0; i < digits.length; i++) {
    let d = Number(digits[digits.length - 1 - i])
    if (i % 2 === 1) {
      d *= 2
      if (d > 9) d -= 9
    }
    sum += d
  }
  return sum % 10 === 0
}

function redactPhones(text: string): string {
  const m = PHONE.matcher(text)
  let out = ''
  let last = 0
  let from = 0
  while (from <= text.length && m.find(from)) {
    const start = m.start()
    const end = m.end()
    if (WORD_OR_DOT.test(text[start - 1] ?? '') || WORD_OR_DOT.test(text[end] ?? '')) {
      // Not a number on its own; a match may still start later inside it (the pattern spans at most ~30 characters).
      from = start + 1
      continue
    }
    out += `${text.slice(last, start)}***PHONE***`
    last = end
    from = end
  }
  return last === 0 ? text : out + text.slice(last)
}

function redactPii(text: string): string {
  let out = replaceAll(text, EMAIL, '***EMAIL***')
  out = replaceAll(out, SSN, '***SSN***')
  out = replaceAll(out, CARD, (m) => (luhn(m.replace(/[ -]/g, '')) ? '***CARD***' : m))
  return redactPhones(out)
}

function redactSecrets(text: string): string {
  let out = text
  for (const p of SECRET_PATTERNS) out = replaceAll(out, p, '***REDACTED***')
  return replaceAll(out, SECRET_ASSIGNMENT, (_m, key = '', sep = '', value = '') =>
    value === '***REDACTED***' || /^\d{1,7}$/.test(value) ? `${key}${sep}${value}` : `${key}${sep}***REDACTED***`,
  )
}

/** Pure: the text with every filter applied in order; unknown filters change nothing. */
export function applyFilters(text: string, filters: readonly ContentFilter[]): string {
  let out = text
  for (const f of filters) {
    if (f.kind === 'pii') out = redactPii(out)
    else if (f.kind === 'secrets') out = redactSecrets(out)
    else if (f.kind === 'regex') out = replaceAll(out, f.pattern, f.replacement)
  }
  return out
}

/** Pure: a deep copy of a JSON value with every string (keys excluded) filtered. */
export function filterValue(value: unknown, filters: readonly ContentFilter[]): unknown {
  if (filters.length === 0) return value
  if (typeof value === 'string') return applyFilters(value, filters)
  if (Array.isArray(value)) return value.map((v) => filterValue(v, filters))
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, filterValue(v, filters)]))
  }
  return value
}
