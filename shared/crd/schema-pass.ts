import { duplicate, invalid, isObject, joinPath, notSupported, required, tooLong, tooMany, typeInvalid, typeName, type FieldCause } from './field-error.js'
import { goJson, goQuote } from './go-value.js'
import type { JsonSchemaProps } from './structural.js'

/**
 * The OpenAPI half of custom resource validation: pruning, defaulting and the
 * openAPIV3Schema keywords, applied in place the way the API server decodes a request.
 */

/** What one pass over an object found: causes of rejection and the paths of pruned unknown fields. */
export interface SchemaPassResult {
  causes: FieldCause[]
  unknownFields: string[]
}

/** Fields of the root the API server handles itself: never pruned, defaulted or checked against the schema. */
export const ROOT_FIELDS: ReadonlySet<string> = new Set(['apiVersion', 'kind', 'metadata'])

type Json = Record<string, unknown>

/** Mutates `root`: prunes unknown fields, drops non-nullable nulls, fills `default`s, and reports every schema violation. */
export function applySchema(root: Json, schema: JsonSchemaProps): SchemaPassResult {
  const out: SchemaPassResult = { causes: [], unknownFields: [] }
  applyObject(root, schema, '', out, ROOT_FIELDS)
  return out
}

function walk(value: unknown, s: JsonSchemaProps, path: string, out: SchemaPassResult): void {
  if (!typeMatches(value, s)) {
    const expected = s['x-kubernetes-int-or-string'] ? 'integer,string' : (s.type ?? 'object')
    const got = typeName(value)
    out.causes.push(typeInvalid(path, got, `${path || 'body'} in body must be of type ${expected}: ${goQuote(got)}`))
    return
  }
  if (isObject(value)) applyObject(value, s, path, out, s['x-kubernetes-embedded-resource'] ? ROOT_FIELDS : undefined)
  else if (Array.isArray(value)) applyArray(value, s, path, out)
  else checkScalar(value, s, path, out)
  checkEnum(value, s, path, out)
  checkCombinators(value, s, path, out)
}

function typeMatches(v: unknown, s: JsonSchemaProps): boolean {
  if (s['x-kubernetes-int-or-string']) return typeof v === 'string' || (typeof v === 'number' && Number.isInteger(v))
  switch (s.type) {
    case 'object':
      return isObject(v)
    case 'array':
      return Array.isArray(v)
    case 'string':
      return typeof v === 'string'
    case 'integer':
      return typeof v === 'number' && Number.isInteger(v)
    case 'number':
      return typeof v === 'number'
    case 'boolean':
      return typeof v === 'boolean'
    default:
      return true
  }
}

function additionalSchema(s: JsonSchemaProps): JsonSchemaProps | undefined {
  return isObject(s.additionalProperties) ? (s.additionalProperties as JsonSchemaProps) : undefined
}

function applyObject(value: Json, s: JsonSchemaProps, path: string, out: SchemaPassResult, keep?: ReadonlySet<string>): void {
  const props = s.properties
  const additional = additionalSchema(s)
  const preserve = s['x-kubernetes-preserve-unknown-fields'] === true || s.additionalProperties === true
  for (const key of Object.keys(value)) {
    if (keep?.has(key)) continue
    const child = props?.[key] ?? additional
    if (!child) {
      if (!preserve) {
        delete value[key]
        out.unknownFields.push(joinPath(path, key))
      }
    } else if (value[key] === null && !child.nullable) delete value[key]
  }
  for (const [key, child] of Object.entries(props ?? {})) {
    if (keep?.has(key)) continue
    if (value[key] === undefined && child.default !== undefined) value[key] = structuredClone(child.default)
  }
  for (const key of Object.keys(value)) {
    if (keep?.has(key)) continue
    const child = props?.[key] ?? additional
    const v = value[key]
    if (!child || v === null) continue
    walk(v, child, props?.[key] ? joinPath(path, key) : `${path}[${key}]`, out)
  }
  for (const req of s.required ?? []) {
    if (value[req] === undefined) out.causes.push(required(joinPath(path, req)))
  }
  const n = Object.keys(value).length
  if (s.minProperties !== undefined && n < s.minProperties) out.causes.push(invalid(path, n, `${path || 'body'} in body should have at least ${s.minProperties} properties`))
  if (s.maxProperties !== undefined && n > s.maxProperties) out.causes.push(tooMany(path, n, s.maxProperties))
}

/** Pure: the identity of a list-map item, built from its key fields. */
export function listMapKey(item: unknown, keys: readonly string[]): string {
  return JSON.stringify(keys.map((k) => (isObject(item) ? item[k] : undefined)))
}

function applyArray(value: unknown[], s: JsonSchemaProps, path: string, out: SchemaPassResult): void {
  const listType = s['x-kubernetes-list-type']
  const mapKeys = s['x-kubernetes-list-map-keys'] ?? []
  value.forEach((item, i) => {
    if (s.items && (item !== null || s.items.nullable)) walk(item, s.items, `${path}[${i}]`, out)
  })
  if (s.minItems !== undefined && value.length < s.minItems) out.causes.push(invalid(path, value.length, `${path} in body should have at least ${s.minItems} items`))
  if (s.maxItems !== undefined && value.length > s.maxItems) out.causes.push(tooMany(path, value.length, s.maxItems))
  if (listType === 'map' || listType === 'set' || s.uniqueItems) {
    const seen = new Set<string>()
    value.forEach((item, i) => {
      const key = listType === 'map' ? listMapKey(item, mapKeys) : goJson(item)
      if (seen.has(key)) {
        // A list map reports the item's key fields, a set the item itself.
        const shown = listType === 'map' ? Object.fromEntries(mapKeys.map((k) => [k, isObject(item) ? item[k] : undefined])) : item
        out.causes.push(duplicate(`${path}[${i}]`, shown))
      }
      seen.add(key)
    })
  }
}

/** Formats the API server checks; any other format (int64, password, ...) is accepted as the server does. */
const FORMATS: Record<string, RegExp> = {
  'date-time': /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/,
  datetime: /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/,
  date: /^\d{4}-\d{2}-\d{2}$/,
  uuid: /^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$/,
  byte: /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/,
  ipv4: /^((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$/,
}

// An integer value is compared with the bound truncated to an integer, and the message shows
// that truncated bound: the API server's validator checks integers natively.
function bound(value: number, b: number): number {
  return Number.isInteger(value) ? Math.trunc(b) : b
}

function exceedsLower(value: number, s: JsonSchemaProps): string | undefined {
  if (typeof s.exclusiveMinimum === 'number') {
    const b = bound(value, s.exclusiveMinimum)
    return value <= b ? `greater than ${b}` : undefined
  }
  if (s.minimum === undefined) return undefined
  const b = bound(value, s.minimum)
  const exclusive = s.exclusiveMinimum === true
  return (exclusive ? value <= b : value < b) ? `greater than ${exclusive ? '' : 'or equal to '}${b}` : undefined
}

function exceedsUpper(value: number, s: JsonSchemaProps): string | undefined {
  if (typeof s.exclusiveMaximum === 'number') {
    const b = bound(value, s.exclusiveMaximum)
    return value >= b ? `less than ${b}` : undefined
  }
  if (s.maximum === undefined) return undefined
  const b = bound(value, s.maximum)
  const exclusive = s.exclusiveMaximum === true
  return (exclusive ? value >= b : value > b) ? `less than ${exclusive ? '' : 'or equal to '}${b}` : undefined
}

// The order and grouping of the API server's validator: a string's length and pattern checks
// stop at the first failure, then its format; a number's multipleOf, maximum and minimum all
// report; the enum comes after them (checkEnum).
function checkScalar(value: unknown, s: JsonSchemaProps, path: string, out: SchemaPassResult): void {
  if (typeof value === 'string') {
    const len = [...value].length
    if (s.maxLength !== undefined && len > s.maxLength) out.causes.push(tooLong(path, s.maxLength))
    else if (s.minLength !== undefined && len < s.minLength) out.causes.push(invalid(path, value, `${path} in body should be at least ${s.minLength} chars long`))
    else if (s.pattern !== undefined && !new RegExp(s.pattern, 'u').test(value)) out.causes.push(invalid(path, value, `${path} in body should match '${s.pattern}'`))
    const format = s.format === undefined ? undefined : FORMATS[s.format]
    if (format && !format.test(value)) {
      out.causes.push(typeInvalid(path, value, `${path} in body must be of type ${s.format}: ${goQuote(value)}`))
    }
  }
  if (typeof value === 'number') {
    if (typeof s.multipleOf === 'number' && value % s.multipleOf !== 0) out.causes.push(invalid(path, value, `${path} in body should be a multiple of ${s.multipleOf}`))
    const high = exceedsUpper(value, s)
    if (high) out.causes.push(invalid(path, value, `${path} in body should be ${high}`))
    const low = exceedsLower(value, s)
    if (low) out.causes.push(invalid(path, value, `${path} in body should be ${low}`))
  }
}

// Any value, an object or a list too, must equal one of the enum's values.
function checkEnum(value: unknown, s: JsonSchemaProps, path: string, out: SchemaPassResult): void {
  if (s.enum && !s.enum.some((e) => goJson(e) === goJson(value))) out.causes.push(notSupported(path, value, s.enum))
}

/** Whether a value satisfies a sub-schema, checked on a copy so a combinator never prunes or defaults the real object. */
function passes(value: unknown, s: JsonSchemaProps): boolean {
  const probe: SchemaPassResult = { causes: [], unknownFields: [] }
  walk(structuredClone(value), { ...s, 'x-kubernetes-preserve-unknown-fields': true }, 'x', probe)
  return probe.causes.length === 0
}

// Known difference: the real server words these failures differently ("\"spec.x\" must validate
// all the schemas (allOf)" on the object itself, with the sub-schemas' own causes); none of
// Kinetic's CRDs uses the combinators.
function checkCombinators(value: unknown, s: JsonSchemaProps, path: string, out: SchemaPassResult): void {
  const shown = isObject(value) || Array.isArray(value) ? typeName(value) : value
  for (const sub of s.allOf ?? []) if (!passes(value, sub)) out.causes.push(invalid(path, shown, `${path} in body must match all schemas in allOf`))
  if (s.anyOf && !s.anyOf.some((sub) => passes(value, sub))) out.causes.push(invalid(path, shown, `${path} in body must match at least one schema in anyOf`))
  if (s.oneOf && s.oneOf.filter((sub) => passes(value, sub)).length !== 1) out.causes.push(invalid(path, shown, `${path} in body must match exactly one schema in oneOf`))
  if (s.not && passes(value, s.not)) out.causes.push(invalid(path, shown, `${path} in body must not match the schema in not`))
}
