/**
 * The template language (spec §4): the grammar of §4.1 (the `\{{` escape, placeholders,
 * the reference forms), the references of spec §4.2, the `??` fallback of §4.3 (only for workloads
 * excluded by includeWhen), rendering per spec §3.1 and the errors and field checks of §4.4
 * (replicas, image references, five-field cron, quantities, the 16384-character limit) with the
 * exact messages. Pure.
 */
import { isQuantity } from '../../quantity.js'
import { renderValue, type TypedValue } from './cel.js'
import type { RecipeIdentity } from './computed.js'
import type { SpecError } from './rendered.js'

export const MAX_RENDERED_LENGTH = 16384

export type Segment =
  | { kind: 'text'; text: string }
  | { kind: 'ref'; ref: string; fallback?: string; offset: number; source: string }

export type ParsedTemplate = { ok: true; segments: Segment[] } | { ok: false; offset: number }

const IDENT = '[A-Za-z_][A-Za-z0-9_]*'
const LABEL = '[a-z](?:[-a-z0-9]*[a-z0-9])?'
const ATTR = `(?:name|namespace|serviceName|host|port|url|mcpUrl|ports\\.${LABEL})`
const REFERENCE = `(?:inputs\\.${IDENT}|computed\\.${IDENT}|recipe\\.(?:name|namespace|profile)|workloads\\.${LABEL}\\.${ATTR})`
// The fallback: a double-quoted literal of printable ASCII without quotes or backslashes.
const PLACEHOLDER = new RegExp(`\\{\\{[ \\t]*(${REFERENCE})(?:[ \\t]*\\?\\?[ \\t]*"([\\x20\\x21\\x23-\\x5B\\x5D-\\x7E]*)")?[ \\t]*\\}\\}`, 'y')

/** Pure: spec §4.1. A `{{` that starts neither `\{{` nor a well-formed placeholder fails at its offset. */
export function parseTemplate(template: string): ParsedTemplate {
  const segments: Segment[] = []
  let text = ''
  let i = 0
  while (i < template.length) {
    const open = template.indexOf('{{', i)
    if (open < 0) { text += template.slice(i); break }
    if (open > i && template[open - 1] === '\\') {
      text += template.slice(i, open - 1) + '{{'
      i = open + 2
      continue
    }
    text += template.slice(i, open)
    PLACEHOLDER.lastIndex = open
    const m = PLACEHOLDER.exec(template)
    if (!m) return { ok: false, offset: open }
    if (text) { segments.push({ kind: 'text', text }); text = '' }
    const segment: Segment = { kind: 'ref', ref: m[1]!, offset: open, source: m[0] }
    if (m[2] !== undefined) segment.fallback = m[2]
    segments.push(segment)
    i = open + m[0].length
  }
  if (text) segments.push({ kind: 'text', text })
  return { ok: true, segments }
}

/** Pure: the template that renders exactly `text` (every `{{` escaped as `\{{`). */
export function escapeTemplate(text: string): string {
  return text.split('{{').join('\\{{')
}

/** Pure: whether a string contains any placeholder syntax at all (`{{`). */
export function hasPlaceholder(text: string): boolean {
  return text.includes('{{')
}

/** What templates know about a declared workload (spec §4.2); values are static. */
export interface WorkloadRef {
  included: boolean
  /** Main child object name (spec §5.2): `base(w)`, for a Job workload `base(w)-<h8>` once its spec is rendered. */
  name: string
  /**
   * Set while `name` cannot be given (a Job workload whose name depends, through its own
   * rendered spec, on itself): the `<why>` of the `TemplateUnresolved` error for `.name`, or
   * `null` when the cause is already reported as another error.
   */
  nameUnresolved?: string | null
  namespace: string
  /** Service (or, for stdio, MCPServer) name; absent when the workload has no Service (spec §4.2). */
  serviceName?: string
  /** Service ports in order (stdio: none). */
  ports: Array<{ name: string; port: number }>
  /** First Service port (stdio: mcp.port). */
  port?: number
  /** `http://<host>:<mcp.port><mcp.path>` when the workload has a transport. */
  mcpUrl?: string
}

export interface TemplateContext {
  inputs: Map<string, TypedValue>
  failedInputs: Set<string>
  computed: Map<string, TypedValue>
  failedComputed: Set<string>
  recipe: RecipeIdentity
  workloads: Map<string, WorkloadRef>
  /** Templates (spec §7.7): a reference to a value that failed already is left as written instead of failing the field. */
  leaveUnresolved?: boolean
}

type Resolution = { ok: true; value: TypedValue } | { ok: false; why: string | null }

const str = (value: string): TypedValue => ({ type: 'string', value })
const int = (value: number): TypedValue => ({ type: 'int', value: BigInt(value) })

/** Pure: spec §4.2/§4.3 resolution of one reference; `why: null` = already reported elsewhere. */
export function resolveReference(ref: string, fallback: string | undefined, ctx: TemplateContext): Resolution {
  const parts = ref.split('.')
  const root = parts[0]!
  if (root === 'inputs') {
    const v = ctx.inputs.get(parts[1]!)
    if (v) return { ok: true, value: v }
    return { ok: false, why: ctx.failedInputs.has(parts[1]!) ? null : `no input "${parts[1]}"` }
  }
  if (root === 'computed') {
    const v = ctx.computed.get(parts[1]!)
    if (v) return { ok: true, value: v }
    return { ok: false, why: ctx.failedComputed.has(parts[1]!) ? null : `no computed value "${parts[1]}"` }
  }
  if (root === 'recipe') {
    const key = parts[1] as 'name' | 'namespace' | 'profile'
    return { ok: true, value: str(ctx.recipe[key]) }
  }
  const wname = parts[1]!
  const attr = parts[2]!
  const w = ctx.workloads.get(wname)
  if (!w) return { ok: false, why: `no workload "${wname}"` }
  if (!w.included) {
    if (fallback !== undefined) return { ok: true, value: str(fallback) }
    return { ok: false, why: `workload "${wname}" is excluded by includeWhen` }
  }
  if (attr === 'name') {
    return w.nameUnresolved !== undefined ? { ok: false, why: w.nameUnresolved } : { ok: true, value: str(w.name) }
  }
  if (attr === 'namespace') return { ok: true, value: str(w.namespace) }
  if (attr === 'mcpUrl') {
    return w.mcpUrl === undefined ? { ok: false, why: `workload "${wname}" has no transport` } : { ok: true, value: str(w.mcpUrl) }
  }
  if (w.serviceName === undefined || w.port === undefined) return { ok: false, why: `workload "${wname}" has no Service` }
  const host = `${w.serviceName}.${w.namespace}.svc`
  switch (attr) {
    case 'serviceName': return { ok: true, value: str(w.serviceName) }
    case 'host': return { ok: true, value: str(host) }
    case 'port': return { ok: true, value: int(w.port) }
    case 'url': return { ok: true, value: str(`http://${host}:${w.port}`) }
  }
  const portName = parts.slice(3).join('.')
  const port = w.ports.find((p) => p.name === portName)
  if (!port) return { ok: false, why: `workload "${wname}" has no port "${portName}"` }
  return { ok: true, value: int(port.port) }
}

/** Field-specific value checks of spec §4.4. */
export type FieldCheck = 'image' | 'replicas' | 'cron' | 'quantity'

export type FieldOutcome =
  | { ok: true; text: string; value: TypedValue | null }
  | { ok: false; errors: SpecError[] }

const NOT: Record<FieldCheck | 'length', string> = {
  image: 'a valid image reference',
  replicas: 'an integer in 0..1000',
  cron: 'a five-field cron expression',
  quantity: 'a Kubernetes quantity',
  length: `at most ${MAX_RENDERED_LENGTH} characters`,
}

/**
 * Pure: renders one templatable field. `owner` is `workload "<w>"`, `test "<t>"`, `step "<s>"`
 * or `workflow`; `field` as spec §4.4 names it (`image`, `env[NAME]`, ...). `value` is the typed
 * value when the template is exactly one placeholder (what `replicas` needs). Errors of one
 * field: the syntax error alone, or every unresolved reference, or the value check.
 */
export function renderField(template: string, owner: string, field: string, ctx: TemplateContext, check?: FieldCheck, path?: string): FieldOutcome {
  const where = path === undefined ? {} : { field: path }
  const parsed = parseTemplate(template)
  if (!parsed.ok) {
    return { ok: false, errors: [{ reason: 'TemplateSyntaxError', message: `${owner}: ${field}: malformed placeholder at offset ${parsed.offset}`, ...where }] }
  }
  const errors: SpecError[] = []
  let silent = false
  let partial = false
  let text = ''
  let single: TypedValue | null = null
  const reported = new Set<string>()
  for (const segment of parsed.segments) {
    if (segment.kind === 'text') { text += segment.text; continue }
    const r = resolveReference(segment.ref, segment.fallback, ctx)
    if (!r.ok) {
      if (r.why === null && ctx.leaveUnresolved) { text += segment.source; partial = true }
      else if (r.why === null) silent = true
      else if (!reported.has(segment.ref)) {
        reported.add(segment.ref)
        errors.push({ reason: 'TemplateUnresolved', message: `${owner}: ${field}: unresolved reference "${segment.ref}": ${r.why}`, ...where })
      }
      continue
    }
    text += renderValue(r.value)
    if (parsed.segments.length === 1) single = r.value
  }
  if (errors.length > 0 || silent) return { ok: false, errors }
  const invalid = (what: FieldCheck | 'length'): FieldOutcome => ({
    ok: false,
    errors: [{ reason: 'InvalidTemplatedValue', message: `${owner}: ${field}: "${text.slice(0, 64)}" is not ${NOT[what]}`, ...where }],
  })
  if (text.length > MAX_RENDERED_LENGTH) return invalid('length')
  if (partial) return { ok: true, text, value: null }
  if (check === 'image' && !isImageReference(text)) return invalid('image')
  if (check === 'cron' && !isCronExpression(text)) return invalid('cron')
  if (check === 'quantity' && !isQuantity(text)) return invalid('quantity')
  if (check === 'replicas' && replicasOf(text, single) === null) return invalid('replicas')
  return { ok: true, text, value: single }
}

/** Pure: spec §4.4 replicas: an int, an integral double or a string of decimal digits, in 0..1000. */
export function replicasOf(text: string, single: TypedValue | null): number | null {
  let n: number
  if (single?.type === 'int') n = Number(single.value)
  else if (single?.type === 'double') n = single.value
  else if (/^[0-9]+$/.test(text)) n = Number(text)
  else return null
  return Number.isInteger(n) && n >= 0 && n <= 1000 ? n : null
}

// Image references as the container runtimes parse them (distribution's reference grammar).
const ALNUM = '[a-z0-9]+'
const PATH_COMPONENT = `${ALNUM}(?:(?:[._]|__|-+)${ALNUM})*`
const DOMAIN_COMPONENT = '(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])'
const DOMAIN = `(?:${DOMAIN_COMPONENT}(?:\\.${DOMAIN_COMPONENT})*|\\[[a-fA-F0-9:]+\\])(?::[0-9]+)?`
const IMAGE = new RegExp(
  `^((?:${DOMAIN}/)?${PATH_COMPONENT}(?:/${PATH_COMPONENT})*)(?::[\\w][\\w.-]{0,127})?(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?$`,
)

/** Pure: whether `text` is a valid container image reference (name ≤ 255, optional tag and digest). */
export function isImageReference(text: string): boolean {
  if (text.length > 4096) return false
  const m = IMAGE.exec(text)
  return m !== null && m[1]!.length <= 255
}

const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC']
const DAYS = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT']
const CRON_FIELDS: Array<{ min: number; max: number; names?: string[]; question?: boolean }> = [
  { min: 0, max: 59 },
  { min: 0, max: 23 },
  { min: 1, max: 31, question: true },
  { min: 1, max: 12, names: MONTHS },
  { min: 0, max: 7, names: DAYS, question: true },
]

function cronValue(text: string, spec: (typeof CRON_FIELDS)[number]): number | null {
  if (/^[0-9]{1,2}$/.test(text)) {
    const n = Number(text)
    return n >= spec.min && n <= spec.max ? n : null
  }
  if (spec.names) {
    const i = spec.names.indexOf(text.toUpperCase())
    if (i >= 0) return spec.names === MONTHS ? i + 1 : i
  }
  return null
}

/** Pure: whether `text` is a five-field cron expression (minute hour day-of-month month day-of-week) as Kubernetes CronJobs accept. */
export function isCronExpression(text: string): boolean {
  const fields = text.trim().split(/[ \t]+/)
  if (fields.length !== 5) return false
  return fields.every((field, i) => {
    const spec = CRON_FIELDS[i]!
    return field.split(',').every((item) => {
      const m = /^([^/]+)(?:\/([0-9]{1,2}))?$/.exec(item)
      if (!m) return false
      if (m[2] !== undefined && Number(m[2]) < 1) return false
      const range = m[1]!
      if (range === '*' || (range === '?' && spec.question)) return true
      const bounds = range.split('-')
      if (bounds.length === 1) return cronValue(bounds[0]!, spec) !== null
      if (bounds.length !== 2) return false
      const lo = cronValue(bounds[0]!, spec)
      const hi = cronValue(bounds[1]!, spec)
      return lo !== null && hi !== null && lo <= hi
    })
  })
}
