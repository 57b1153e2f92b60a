import { estimateExpressionCost } from './cel-cost.js'
import { MAX_UINT64 } from './cel-cost-values.js'
import { celDecl, MAX_REQUEST_SIZE_BYTES } from './cel-types.js'
import { fieldCause, isObject, type FieldCause } from './field-error.js'
import type { JsonSchemaProps } from './structural.js'

/**
 * The API server's CEL cost budget for a CRD: each rule's estimated cost, times the most times
 * its schema node can occur in one object, must stay within the per-expression limit, each
 * messageExpression too (counted once), and all of them together within the limit for the
 * whole schema. A CRD over budget is refused with Forbidden causes worded as the server words them.
 */

/** Most estimated cost one rule or messageExpression may have. */
export const PER_EXPRESSION_COST_LIMIT = 10_000_000n
/** Most estimated cost all rules and messageExpressions of one openAPIV3Schema may have together. */
export const SCHEMA_COST_LIMIT = 100_000_000n
/** Rules below this cost are not named among those that made the total exceed its limit. */
const NAMED_CONTRIBUTION = SCHEMA_COST_LIMIT / 100n
const MOST_NAMED = 4

/** The parts of a CustomResourceDefinition the budget reads. */
export interface CrdSchemas {
  spec?: { versions?: { name?: string; schema?: { openAPIV3Schema?: JsonSchemaProps } }[] }
}

/** One openAPIV3Schema as the API server validates it: where it reports errors and which versions use it. */
export interface SchemaLocation {
  /** `spec.validation.openAPIV3Schema` when every version has the same schema, else `spec.versions[i].schema.openAPIV3Schema`. */
  field: string
  schema: JsonSchemaProps
  /** The version whose schema this is (the first one for a shared schema). */
  version: string
}

/**
 * Pure: where the API server validates each schema of a CRD. Like the server, a schema that
 * every version shares is validated once and reported under `spec.validation`.
 */
export function schemaLocations(crd: CrdSchemas): SchemaLocation[] {
  const versions = crd.spec?.versions ?? []
  const first = versions[0]
  if (!first) return []
  const same = versions.every((v) => canonical(v.schema) === canonical(first.schema))
  if (same) {
    const schema = first.schema?.openAPIV3Schema
    return schema ? [{ field: 'spec.validation.openAPIV3Schema', schema, version: first.name ?? '' }] : []
  }
  return versions.flatMap((v, i) => {
    const schema = v.schema?.openAPIV3Schema
    return schema ? [{ field: `spec.versions[${i}].schema.openAPIV3Schema`, schema, version: v.name ?? '' }] : []
  })
}

/**
 * Pure: the Forbidden causes the API server gives a CRD whose CEL rules are over budget (empty
 * when within it). On update, pass the stored CRD: a version whose schema did not change is
 * then exempt from the per-expression limits (not from the total), as on the server.
 */
export function celCostCauses(crd: CrdSchemas, old?: CrdSchemas): FieldCause[] {
  const oldSchemas = new Map<string, string>()
  for (const v of old?.spec?.versions ?? []) if (v.name) oldSchemas.set(v.name, canonical(v.schema?.openAPIV3Schema))
  return schemaLocations(crd).flatMap((loc) => schemaCostCauses(loc.schema, loc.field, oldSchemas.get(loc.version) === canonical(loc.schema)))
}

interface Contribution {
  field: string
  cost: bigint
}

interface Walk {
  causes: FieldCause[]
  total: bigint
  expensive: Contribution[]
  exempt: boolean
}

/** Pure: the Forbidden causes of one openAPIV3Schema reported at `field`; `exempt` lifts the per-expression limits. */
export function schemaCostCauses(schema: JsonSchemaProps, field: string, exempt = false): FieldCause[] {
  const w: Walk = { causes: [], total: 0n, expensive: [], exempt }
  walk(schema, field, 1n, true, w)
  if (w.total > SCHEMA_COST_LIMIT) {
    for (const e of w.expensive) w.causes.push(fieldCause(e.field, 'FieldValueForbidden', 'Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema'))
    w.causes.push(fieldCause(field, 'FieldValueForbidden', `Forbidden: ${costErrorMessage('x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema', w.total, SCHEMA_COST_LIMIT)}`))
  }
  return w.causes
}

// Children first, then the node's own rules: the order the server reports them in.
// `cardinality` is how often the node can occur in one object; null when unbounded.
function walk(s: JsonSchemaProps, path: string, cardinality: bigint | null, root: boolean, w: Walk): void {
  const below = childCardinality(s, cardinality)
  if (isObject(s.additionalProperties)) walk(s.additionalProperties as JsonSchemaProps, `${path}.additionalProperties`, below, false, w)
  for (const [name, child] of Object.entries(s.properties ?? {})) walk(child, `${path}.properties[${name}]`, below, false, w)
  if (isObject(s.items)) walk(s.items, `${path}.items`, below, false, w)
  const rules = s['x-kubernetes-validations'] ?? []
  if (rules.length === 0) return
  const decl = celDecl(s, root || s['x-kubernetes-embedded-resource'] === true)
  if (!decl) return
  // Below an unbounded list or map, the node counts as often as its smallest form fits in a request.
  const times = cardinality ?? MAX_REQUEST_SIZE_BYTES / (decl.minSerializedSize + 1n)
  rules.forEach((rule, i) => {
    if (typeof rule.rule !== 'string' || rule.rule.trim() === '') return
    const at = `${path}.x-kubernetes-validations[${i}]`
    const estimate = estimateExpressionCost(rule.rule, decl, { optionalOldSelf: rule.optionalOldSelf === true })
    if (!estimate) return
    const cost = multiplyGuarded(estimate.max, times)
    if (!w.exempt && cost > PER_EXPRESSION_COST_LIMIT) w.causes.push(fieldCause(`${at}.rule`, 'FieldValueForbidden', `Forbidden: ${costErrorMessage('estimated rule cost', cost, PER_EXPRESSION_COST_LIMIT)}`))
    observe(w, `${at}.rule`, cost)
    if (!rule.messageExpression) return
    // A messageExpression runs once per failing rule, so it is not multiplied.
    const message = estimateExpressionCost(rule.messageExpression, decl, { optionalOldSelf: rule.optionalOldSelf === true })
    if (!message) return
    if (!w.exempt && message.max > PER_EXPRESSION_COST_LIMIT) w.causes.push(fieldCause(`${at}.messageExpression`, 'FieldValueForbidden', `Forbidden: ${costErrorMessage('estimated messageExpression cost', message.max, PER_EXPRESSION_COST_LIMIT)}`))
    observe(w, `${at}.messageExpression`, message.max)
  })
}

function childCardinality(s: JsonSchemaProps, cardinality: bigint | null): bigint | null {
  if (cardinality === null) return null
  let times: bigint | null = 1n
  if (s.type === 'object' && s.additionalProperties !== undefined) times = s.maxProperties !== undefined ? nonNegative(s.maxProperties) : null
  else if (s.type === 'array') times = s.maxItems !== undefined ? nonNegative(s.maxItems) : null
  return times === null ? null : multiplyGuarded(cardinality, times)
}

function observe(w: Walk, field: string, cost: bigint): void {
  w.total = w.total + cost > MAX_UINT64 ? MAX_UINT64 : w.total + cost
  if (cost < NAMED_CONTRIBUTION) return
  w.expensive.push({ field, cost })
  w.expensive.sort((a, b) => (a.cost === b.cost ? 0 : a.cost > b.cost ? -1 : 1))
  w.expensive.length = Math.min(w.expensive.length, MOST_NAMED)
}

function multiplyGuarded(base: bigint, times: bigint): bigint {
  if (base === 0n) return 0n
  return MAX_UINT64 / base < times ? MAX_UINT64 : base * times
}

function nonNegative(n: number): bigint {
  return n < 0 ? 0n : BigInt(Math.trunc(n))
}

/** Pure: the server's wording of a cost over its limit: the factor with six decimals below 1.5, one decimal up to 100, "more than 100x" beyond. */
export function costErrorMessage(what: string, cost: bigint, limit: bigint): string {
  const ratio = Number(cost) / Number(limit)
  const factor = ratio > 100 ? 'more than 100x' : ratio < 1.5 ? `${toFixedExact(ratio, 6)}x` : `${toFixedExact(ratio, 1)}x`
  return `${what} exceeds budget by factor of ${factor} (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)`
}

/** Pure: a non-negative double in fixed notation, rounded half to even on its exact binary value (as Go prints it). */
export function toFixedExact(x: number, digits: number): string {
  const view = new DataView(new ArrayBuffer(8))
  view.setFloat64(0, x)
  const bits = view.getBigUint64(0)
  const exponent = Number((bits >> 52n) & 0x7ffn)
  const fraction = bits & ((1n << 52n) - 1n)
  const mantissa = exponent === 0 ? fraction : fraction | (1n << 52n)
  const shift = (exponent === 0 ? 1 : exponent) - 1075
  let num = mantissa * 10n ** BigInt(digits)
  let den = 1n
  if (shift >= 0) num <<= BigInt(shift)
  else den <<= BigInt(-shift)
  let q = num / den
  const twice = 2n * (num % den)
  if (twice > den || (twice === den && q % 2n === 1n)) q += 1n
  const s = q.toString().padStart(digits + 1, '0')
  return digits === 0 ? s : `${s.slice(0, -digits)}.${s.slice(-digits)}`
}

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`
  if (isObject(value)) return `{${Object.keys(value).sort().map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`).join(',')}}`
  return value === undefined ? 'null' : JSON.stringify(value)
}
