import { errorBody } from '../../shared/crd/field-error.js'
import { badRequest } from './api-error.js'
import type { FieldSelectorRefusal } from './resource-type.js'
import type { KubeObject } from './types.js'

/** A parsed selector; `matches` answers for one object. */
export interface Selector {
  readonly empty: boolean
  matches(obj: KubeObject): boolean
  /**
   * Label selectors: requirements every match satisfies by carrying the key with one of the
   * values (`=`, `==`, `in`), or the key at all (`exists`: values undefined); a store may take
   * its candidates from a label index by these instead of scanning everything.
   */
  readonly needs?: ReadonlyArray<{ key: string; values?: readonly string[] }>
}

const everything: Selector = { empty: true, matches: () => true }

// ---------------------------------------------------------------- label selectors

type Op = 'in' | 'notin' | '=' | '==' | '!=' | 'gt' | 'lt' | 'exists' | '!'

interface Requirement {
  key: string
  op: Op
  values: string[]
}

type Tok = 'id' | 'end' | ',' | '(' | ')' | '!' | '=' | '==' | '!=' | '>' | '<' | 'in' | 'notin' | 'error'

const SYMBOLS = new Map<string, Tok>([
  [')', ')'], [',', ','], ['!', '!'], ['==', '=='], ['=', '='], ['>', '>'], ['<', '<'], ['!=', '!='], ['(', '('],
])
const isSpecial = (ch: string) => '=!(),><'.includes(ch)
const isSpace = (ch: string) => ch === ' ' || ch === '\t' || ch === '\r' || ch === '\n'

// The tokens of a selector, lexed the way the API server's selector parser does: runs of
// operator characters form the longest known operator, anything else up to a space or an
// operator is an identifier (or the keywords `in` and `notin`).
function lex(src: string): Array<{ tok: Tok; lit: string }> {
  const out: Array<{ tok: Tok; lit: string }> = []
  let i = 0
  for (;;) {
    while (i < src.length && isSpace(src[i] as string)) i++
    if (i >= src.length) {
      out.push({ tok: 'end', lit: '' })
      return out
    }
    const ch = src[i] as string
    if (isSpecial(ch)) {
      let buffer = ''
      let last: { tok: Tok; lit: string } | undefined
      while (i < src.length && isSpecial(src[i] as string)) {
        buffer += src[i]
        const known = SYMBOLS.get(buffer)
        if (known) {
          last = { tok: known, lit: buffer }
          i++
        } else if (last) break
        else i++
      }
      out.push(last ?? { tok: 'error', lit: `error expected: keyword found '${buffer}'` })
      continue
    }
    let word = ''
    while (i < src.length && !isSpecial(src[i] as string) && !isSpace(src[i] as string)) word += src[i++]
    out.push({ tok: word === 'in' || word === 'notin' ? word : 'id', lit: word })
  }
}

const QUALIFIED_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/

const regexError = (msg: string, fmt: string, ...examples: string[]) =>
  `${msg} (e.g. ${examples.map((e) => `'${e}', `).join(' or ')}regex used for validation is '${fmt}')`
const QUALIFIED_MSG = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
const QUALIFIED_FMT = '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]'

/** The API server's label-key check (a qualified name with an optional DNS-subdomain prefix); empty when valid. */
export function qualifiedNameErrors(value: string): string[] {
  const errs: string[] = []
  const parts = value.split('/')
  let name: string
  if (parts.length === 1) name = parts[0] as string
  else if (parts.length === 2) {
    const prefix = parts[0] as string
    name = parts[1] as string
    if (prefix.length === 0) errs.push('prefix part must be non-empty')
    else {
      if (prefix.length > 253) errs.push('prefix part must be no more than 253 characters')
      if (!DNS_SUBDOMAIN.test(prefix)) {
        errs.push(`prefix part ${regexError("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character", '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*', 'example.com')}`)
      }
    }
  } else {
    return [`a qualified name ${regexError(QUALIFIED_MSG, QUALIFIED_FMT, 'MyName', 'my.name', '123-abc')} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`]
  }
  if (name.length === 0) errs.push('name part must be non-empty')
  else if (name.length > 63) errs.push('name part must be no more than 63 characters')
  if (!QUALIFIED_NAME.test(name)) errs.push(`name part ${regexError(QUALIFIED_MSG, QUALIFIED_FMT, 'MyName', 'my.name', '123-abc')}`)
  return errs
}

function labelValueErrors(value: string): string[] {
  const errs: string[] = []
  if (value.length > 63) errs.push('must be no more than 63 characters')
  if (!LABEL_VALUE.test(value)) {
    errs.push(regexError("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character", `(${QUALIFIED_FMT})?`, 'MyValue', 'my_value', '12345'))
  }
  return errs
}

class SelectorSyntaxError extends Error {}

function parseRequirements(src: string): Requirement[] {
  const toks = lex(src)
  let pos = 0
  // In a value position the keywords `in` and `notin` are plain identifiers.
  const look = (values: boolean) => {
    const t = toks[pos] as { tok: Tok; lit: string }
    return values && (t.tok === 'in' || t.tok === 'notin') ? { tok: 'id' as Tok, lit: t.lit } : t
  }
  const next = (values: boolean) => {
    const t = look(values)
    if (pos < toks.length - 1) pos++
    return t
  }
  const fail = (msg: string): never => {
    throw new SelectorSyntaxError(msg)
  }

  const requirement = (): Requirement => {
    let op: Op | undefined
    let t = next(true)
    if (t.tok === '!') {
      op = '!'
      t = next(true)
    }
    if (t.tok !== 'id') fail(`found '${t.lit}', expected: identifier`)
    const key = t.lit
    const keyErrs = qualifiedNameErrors(key)
    if (keyErrs.length) fail(`<nil>: ${errorBody('FieldValueInvalid', key, keyErrs.join('; '))}`)
    // `!key` is complete by itself; whatever follows is the caller's to judge.
    if (op === '!') return { key, op, values: [] }
    const after = look(true).tok
    if (after === 'end' || after === ',') return { key, op: 'exists', values: [] }
    const o = next(false)
    const binary: Partial<Record<Tok, Op>> = { in: 'in', notin: 'notin', '=': '=', '==': '==', '!=': '!=', '>': 'gt', '<': 'lt' }
    const bop = binary[o.tok]
    if (!bop) return fail(`found '${o.lit}', expected: in, notin, =, ==, !=, gt, lt`)
    let values: string[]
    if (bop === 'in' || bop === 'notin') values = setValues()
    else {
      const v = look(true)
      if (v.tok === 'end' || v.tok === ',') values = ['']
      else {
        const w = next(true)
        if (w.tok !== 'id') fail(`found '${w.lit}', expected: identifier`)
        values = [w.lit]
      }
    }
    values = [...new Set(values)].sort()
    const errs: string[] = []
    if (bop === 'gt' || bop === 'lt') {
      values.forEach((v, i) => {
        if (!/^[+-]?\d+$/.test(v)) errs.push(`values[${i}]: ${errorBody('FieldValueInvalid', v, "for 'Gt', 'Lt' operators, the value must be an integer")}`)
      })
    }
    values.forEach((v, i) => {
      const ve = labelValueErrors(v)
      if (ve.length) errs.push(`values[${i}][${key}]: ${errorBody('FieldValueInvalid', v, ve.join('; '))}`)
    })
    if (errs.length) fail(errs.length === 1 ? (errs[0] as string) : `[${errs.join(', ')}]`)
    return { key, op: bop, values }
  }

  const setValues = (): string[] => {
    const open = next(true)
    if (open.tok !== '(') fail(`found '${open.lit}' expected: '('`)
    const first = look(true)
    if (first.tok === ')') {
      next(true)
      return ['']
    }
    if (first.tok !== 'id' && first.tok !== ',') fail(`found '${first.lit}', expected: ',', ')' or identifier`)
    const out: string[] = []
    for (;;) {
      const t = next(true)
      if (t.tok === 'id') {
        out.push(t.lit)
        const after = look(true)
        if (after.tok === ',') continue
        if (after.tok === ')') break
        fail(`found '${after.lit}', expected: ',' or ')'`)
      } else if (t.tok === ',') {
        if (out.length === 0) out.push('')
        const after = look(true)
        if (after.tok === ')') {
          out.push('')
          break
        }
        if (after.tok === ',') {
          next(true)
          out.push('')
        }
      } else fail(`found '${t.lit}', expected: ',', or identifier`)
    }
    const close = next(true)
    if (close.tok !== ')') fail(`found '${first.lit}', expected: ')'`)
    return out
  }

  const reqs: Requirement[] = []
  for (;;) {
    const t = look(true)
    if (t.tok === 'end') return reqs
    if (t.tok !== 'id' && t.tok !== '!') fail(`found '${t.lit}', expected: !, identifier, or 'end of string'`)
    try {
      reqs.push(requirement())
    } catch (err) {
      if (err instanceof SelectorSyntaxError) throw new SelectorSyntaxError(`unable to parse requirement: ${err.message}`)
      throw err
    }
    const sep = next(true)
    if (sep.tok === 'end') return reqs
    if (sep.tok !== ',') fail(`found '${sep.lit}', expected: ',' or 'end of string'`)
    const after = look(true)
    if (after.tok !== 'id' && after.tok !== '!') fail(`found '${after.lit}', expected: identifier after ','`)
  }
}

function test(req: Requirement, value: string | undefined): boolean {
  switch (req.op) {
    case 'exists':
      return value !== undefined
    case '!':
      return value === undefined
    case '=':
    case '==':
    case 'in':
      return value !== undefined && req.values.includes(value)
    case '!=':
    case 'notin':
      return value === undefined || !req.values.includes(value)
    case 'gt':
    case 'lt': {
      if (value === undefined || !/^[+-]?\d+$/.test(value)) return false
      const a = BigInt(value)
      const b = BigInt(req.values[0] as string)
      return req.op === 'gt' ? a > b : a < b
    }
  }
}

/**
 * Parses a label selector with the API server's grammar and wording (`=`, `==`, `!=`, `in`,
 * `notin`, `gt` as `>`, `lt` as `<`, `key`, `!key`); 400 BadRequest on bad syntax or an invalid key or value.
 */
export function parseLabelSelector(src: string | null | undefined): Selector {
  if (!src || !src.trim()) return everything
  let reqs: Requirement[]
  try {
    reqs = parseRequirements(src)
  } catch (err) {
    if (err instanceof SelectorSyntaxError) throw badRequest(err.message)
    throw err
  }
  if (reqs.length === 0) return everything
  return {
    empty: false,
    needs: reqs.flatMap((r) => (r.op === '=' || r.op === '==' || r.op === 'in' ? [{ key: r.key, values: r.values }] : r.op === 'exists' ? [{ key: r.key }] : [])),
    matches: (obj) => {
      const labels = obj.metadata.labels
      return reqs.every((r) => test(r, labels?.[r.key]))
    },
  }
}

// ---------------------------------------------------------------- field selectors

/** Which fields a kind's field selectors may name, and how other fields are refused. */
export interface FieldSelectorRules {
  kind: string
  fields: string[]
  refusal: FieldSelectorRefusal
}

interface FieldTerm {
  field: string
  negate: boolean
  value: string
}

function splitTerms(src: string): string[] {
  const out: string[] = []
  let start = 0
  for (let i = 0; i < src.length; i++) {
    if (src[i] === '\\') i++
    else if (src[i] === ',') {
      out.push(src.slice(start, i))
      start = i + 1
    }
  }
  out.push(src.slice(start))
  return out
}

function unescape(value: string): string {
  let out = ''
  for (let i = 0; i < value.length; i++) {
    const ch = value[i] as string
    if (ch === ',' || ch === '=') throw badRequest(`invalid field selector: unescaped character in value: ${ch.codePointAt(0)}`)
    if (ch !== '\\') {
      out += ch
      continue
    }
    const nextCh = value[++i]
    if (nextCh === '\\' || nextCh === ',' || nextCh === '=') out += nextCh
    else throw badRequest(`invalid field selector: invalid escape sequence: \\${nextCh ?? ''}`)
  }
  return out
}

function refusal(rules: FieldSelectorRules, field: string): string {
  switch (rules.refusal) {
    case 'known':
      return `${JSON.stringify(field)} is not a known field selector: only "metadata.name", "metadata.namespace"`
    case 'label':
      return `field label not supported: ${field}`
    case 'kind':
      return `field label ${JSON.stringify(field)} not supported for ${rules.kind}`
  }
}

// Values the server derives for fields that are not plain strings in the object.
const FIELD_DEFAULTS: Record<string, string> = { 'spec.hostNetwork': 'false', 'status.successful': '0' }

function fieldValue(obj: KubeObject, path: string): string {
  if (path === 'source' && obj.kind === 'Event') return String((obj.source as { component?: string } | undefined)?.component ?? '')
  let v: unknown = obj
  for (const key of path.split('.')) {
    if (!v || typeof v !== 'object') {
      v = undefined
      break
    }
    v = (v as Record<string, unknown>)[key]
  }
  if (v === undefined || v === null) return FIELD_DEFAULTS[path] ?? ''
  return typeof v === 'object' ? JSON.stringify(v) : String(v)
}

/**
 * Parses a field selector the way the API server does (`field=value`, `field==value`,
 * `field!=value`, comma-separated, `\` escapes). With `rules`, a field the kind does not index
 * is refused with the server's wording for that kind (400 BadRequest).
 */
export function parseFieldSelector(src: string | null | undefined, rules?: FieldSelectorRules): Selector {
  if (!src) return everything
  const terms: FieldTerm[] = []
  for (const part of splitTerms(src).sort()) {
    if (part === '') continue
    const term = splitTerm(part)
    if (!term) throw badRequest(`invalid selector: '${src}'; can't understand '${part}'`)
    terms.push({ field: term.field, negate: term.op === '!=', value: unescape(term.value) })
  }
  if (rules) {
    for (const t of terms) if (!rules.fields.includes(t.field)) throw badRequest(refusal(rules, t.field))
  }
  if (terms.length === 0) return everything
  return {
    empty: false,
    matches: (obj) => terms.every((t) => (fieldValue(obj, t.field) === t.value) !== t.negate),
  }
}

function splitTerm(term: string): { field: string; op: string; value: string } | undefined {
  for (let i = 0; i < term.length; i++) {
    for (const op of ['!=', '==', '=']) {
      if (term.startsWith(op, i)) return { field: term.slice(0, i), op, value: term.slice(i + op.length) }
    }
  }
  return undefined
}

/** The exact `metadata.name` a field selector pins, for a direct map lookup instead of a scan. */
export function pinnedName(src: string | null | undefined): string | undefined {
  if (!src) return undefined
  for (const part of splitTerms(src)) {
    const t = splitTerm(part)
    if (t && t.field === 'metadata.name' && t.op !== '!=' && !t.value.includes('\\')) return t.value
  }
  return undefined
}
