import { parse, type ParseResult } from '@marcbachmann/cel-js'
import type { StatusCause } from './api-error.js'
import type { KubeObject } from './types.js'

/**
 * Structural-schema enforcement for custom resources, kept behind `SchemaValidatorFactory`
 * so the API server can swap in another implementation (for example a shared ajv-based one)
 * without touching the store: pass `validatorFactory` to `startApiServer`.
 */

/** The subset of apiextensions.k8s.io/v1 JSONSchemaProps the validator understands. */
export interface JSONSchemaProps {
  type?: string
  format?: string
  description?: string
  properties?: Record<string, JSONSchemaProps>
  items?: JSONSchemaProps
  additionalProperties?: JSONSchemaProps | boolean
  required?: string[]
  enum?: unknown[]
  default?: unknown
  nullable?: boolean
  pattern?: string
  minLength?: number
  maxLength?: number
  minimum?: number
  maximum?: number
  exclusiveMinimum?: boolean
  exclusiveMaximum?: boolean
  multipleOf?: number
  minItems?: number
  maxItems?: number
  uniqueItems?: boolean
  minProperties?: number
  maxProperties?: number
  allOf?: JSONSchemaProps[]
  anyOf?: JSONSchemaProps[]
  oneOf?: JSONSchemaProps[]
  not?: JSONSchemaProps
  'x-kubernetes-preserve-unknown-fields'?: boolean
  'x-kubernetes-int-or-string'?: boolean
  'x-kubernetes-embedded-resource'?: boolean
  'x-kubernetes-list-type'?: 'atomic' | 'set' | 'map'
  'x-kubernetes-list-map-keys'?: string[]
  'x-kubernetes-validations'?: ValidationRule[]
}

/** One `x-kubernetes-validations` entry. */
export interface ValidationRule {
  rule: string
  message?: string
  messageExpression?: string
  reason?: 'FieldValueInvalid' | 'FieldValueForbidden' | 'FieldValueRequired' | 'FieldValueDuplicate'
  fieldPath?: string
  optionalOldSelf?: boolean
}

/** What a validation pass found: field errors (empty means valid) and the pruned unknown fields. */
export interface ValidationResult {
  causes: StatusCause[]
  unknownFields: string[]
}

/** Defaults and prunes an object in place, then validates it; `old` enables transition rules. */
export interface SchemaValidator {
  validate(obj: KubeObject, old?: KubeObject): ValidationResult
}

/** Builds a validator for one version's openAPIV3Schema; throws SchemaCompileError for bad rules. */
export type SchemaValidatorFactory = (schema: JSONSchemaProps) => SchemaValidator

/** A schema whose CEL rules do not compile; `causes` carry paths relative to the schema root. */
export class SchemaCompileError extends Error {
  constructor(readonly causes: StatusCause[]) {
    super(causes.map((c) => `${c.field}: ${c.message}`).join(', '))
    this.name = 'SchemaCompileError'
  }
}

interface CompiledRule {
  rule: ValidationRule
  program: ParseResult
  message?: ParseResult
  transition: boolean
}

type Obj = Record<string, unknown>
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v)

/** The default factory: hand-written structural validation plus CEL via @marcbachmann/cel-js. */
export const createSchemaValidator: SchemaValidatorFactory = (schema) => {
  const rules = new WeakMap<JSONSchemaProps, CompiledRule[]>()
  const compileErrors: StatusCause[] = []
  const anyRules = compileRules(schema, 'openAPIV3Schema', rules, compileErrors)
  if (compileErrors.length) throw new SchemaCompileError(compileErrors)
  return {
    validate(obj, old) {
      const ctx: Ctx = { causes: [], unknownFields: [], rules: new WeakMap() }
      const root = obj as unknown as Obj
      const oldRoot = old as unknown as Obj | undefined
      applyObject(root, schema, '', ctx, ROOT_KEEP)
      if (!anyRules) return { causes: ctx.causes, unknownFields: ctx.unknownFields }
      // Like the real server, CEL rules only run on objects free of "blocking" schema errors.
      if (ctx.causes.some((c) => BLOCKING.has(c.reason))) {
        ctx.causes.push({ reason: 'FieldValueInvalid', field: '<nil>', message: 'Invalid value: "null": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation' })
      } else {
        ctx.rules = rules
        walkRules(root, schema, '', oldRoot, ctx)
      }
      return { causes: ctx.causes, unknownFields: ctx.unknownFields }
    },
  }
}

const BLOCKING = new Set(['FieldValueNotSupported', 'FieldValueRequired', 'FieldValueTooLong', 'FieldValueTooMany', 'FieldValueTypeInvalid'])

/** Runs CEL rules bottom-up over the (already defaulted and pruned) value. */
function walkRules(value: unknown, s: JSONSchemaProps, path: string, old: unknown, ctx: Ctx): void {
  if (!ctx.rules.has(s) && !subtreeHasRules.get(s)) return
  if (isObj(value)) {
    const props = s.properties
    const additional = isObj(s.additionalProperties) ? (s.additionalProperties as JSONSchemaProps) : undefined
    const oldObj = isObj(old) ? old : undefined
    for (const [key, v] of Object.entries(value)) {
      if (path === '' && ROOT_KEEP.has(key)) continue
      const child = props?.[key] ?? additional
      if (child && v !== null) walkRules(v, child, props?.[key] ? join(path, key) : `${path}[${key}]`, oldObj?.[key], ctx)
    }
  } else if (Array.isArray(value) && s.items) {
    const mapKeys = s['x-kubernetes-list-map-keys'] ?? []
    const oldByKey = s['x-kubernetes-list-type'] === 'map' && Array.isArray(old) ? new Map(old.map((o) => [listKey(o, mapKeys), o])) : undefined
    value.forEach((item, i) => {
      if (item !== null) walkRules(item, s.items as JSONSchemaProps, `${path}[${i}]`, oldByKey?.get(listKey(item, mapKeys)), ctx)
    })
  }
  runRules(value, s, path, old, ctx)
}

/** Schemas with rules somewhere below them, so walkRules can skip rule-free subtrees. */
const subtreeHasRules = new WeakMap<JSONSchemaProps, boolean>()

function compileRules(s: JSONSchemaProps, path: string, out: WeakMap<JSONSchemaProps, CompiledRule[]>, errors: StatusCause[]): boolean {
  let found = false
  const list = s['x-kubernetes-validations']
  if (list?.length) {
    const compiled: CompiledRule[] = []
    list.forEach((rule, i) => {
      try {
        const program = parse(rule.rule)
        const entry: CompiledRule = { rule, program, transition: /\boldSelf\b/.test(rule.rule) }
        if (rule.messageExpression) entry.message = parse(rule.messageExpression)
        compiled.push(entry)
      } catch (err) {
        errors.push({
          reason: 'FieldValueInvalid',
          field: `${path}.x-kubernetes-validations[${i}].rule`,
          message: `Invalid value: ${JSON.stringify(rule.rule)}: compilation failed: ${firstLine(err)}`,
        })
      }
    })
    out.set(s, compiled)
    found = true
  }
  let below = false
  for (const [k, child] of Object.entries(s.properties ?? {})) below = compileRules(child, `${path}.properties[${k}]`, out, errors) || below
  if (s.items) below = compileRules(s.items, `${path}.items`, out, errors) || below
  if (isObj(s.additionalProperties)) below = compileRules(s.additionalProperties as JSONSchemaProps, `${path}.additionalProperties`, out, errors) || below
  subtreeHasRules.set(s, below)
  return found || below
}

function firstLine(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).split('\n')[0] ?? ''
}

interface Ctx {
  causes: StatusCause[]
  unknownFields: string[]
  rules: WeakMap<JSONSchemaProps, CompiledRule[]>
}

const ROOT_KEEP = new Set(['apiVersion', 'kind', 'metadata'])

function join(path: string, key: string): string {
  return path ? `${path}.${key}` : key
}

function typeName(v: unknown): string {
  if (v === null) return 'null'
  if (Array.isArray(v)) return 'array'
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number'
  return typeof v
}

function show(v: unknown): string {
  if (isObj(v)) return '"object"'
  if (Array.isArray(v)) return '"array"'
  return JSON.stringify(v)
}

function add(ctx: Ctx, field: string, reason: string, message: string): void {
  ctx.causes.push({ reason, field, message })
}

function invalidValue(ctx: Ctx, field: string, value: unknown, detail: string): void {
  add(ctx, field, 'FieldValueInvalid', `Invalid value: ${show(value)}: ${detail}`)
}

/** Defaults, prunes and checks one value in place, then runs the CEL rules attached to it. */
function walk(value: unknown, s: JSONSchemaProps, path: string, ctx: Ctx): void {
  if (!typeMatches(value, s)) {
    const expected = s['x-kubernetes-int-or-string'] ? 'integer or string' : (s.type ?? 'object')
    add(ctx, path, 'FieldValueTypeInvalid', `Invalid value: ${JSON.stringify(typeName(value))}: ${path || 'body'} in body must be of type ${expected}: ${JSON.stringify(typeName(value))}`)
    return
  }
  if (isObj(value)) {
    applyObject(value, s, path, ctx, s['x-kubernetes-embedded-resource'] ? ROOT_KEEP : undefined)
  } else if (Array.isArray(value)) {
    applyArray(value, s, path, ctx)
  } else {
    checkScalar(value, s, path, ctx)
  }
  checkCombinators(value, s, path, ctx)
}

function typeMatches(v: unknown, s: JSONSchemaProps): boolean {
  if (s['x-kubernetes-int-or-string']) return typeof v === 'string' || (typeof v === 'number' && Number.isInteger(v))
  switch (s.type) {
    case undefined:
      return true
    case 'object':
      return isObj(v)
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

function applyObject(value: Obj, s: JSONSchemaProps, path: string, ctx: Ctx, keep?: Set<string>): void {
  const props = s.properties
  const additional = isObj(s.additionalProperties) ? (s.additionalProperties as JSONSchemaProps) : undefined
  const preserve = s['x-kubernetes-preserve-unknown-fields'] === true || s.additionalProperties === true
  for (const key of Object.keys(value)) {
    if (keep?.has(key)) continue
    const child = props?.[key] ?? additional
    if (!child) {
      if (!preserve) {
        delete value[key]
        ctx.unknownFields.push(join(path, key))
      }
    } else if (value[key] === null && !child.nullable) delete value[key]
  }
  if (props) {
    for (const [key, child] of Object.entries(props)) {
      if (keep?.has(key)) continue
      if (value[key] === undefined && child.default !== undefined) value[key] = structuredClone(child.default)
    }
  }
  for (const key of Object.keys(value)) {
    if (keep?.has(key)) continue
    const child = props?.[key] ?? additional
    if (!child) continue
    const childPath = props?.[key] ? join(path, key) : `${path}[${key}]`
    const v = value[key]
    if (v === null) continue
    walk(v, child, childPath, ctx)
  }
  for (const req of s.required ?? []) {
    if (value[req] === undefined) add(ctx, join(path, req), 'FieldValueRequired', 'Required value')
  }
  const n = Object.keys(value).length
  if (s.minProperties !== undefined && n < s.minProperties) invalidValue(ctx, path, value, `${path || 'body'} in body should have at least ${s.minProperties} properties`)
  if (s.maxProperties !== undefined && n > s.maxProperties) add(ctx, path, 'FieldValueTooMany', `Too many: ${n}: must have at most ${s.maxProperties} items`)
}

function listKey(item: unknown, keys: string[]): string {
  return JSON.stringify(keys.map((k) => (isObj(item) ? item[k] : undefined)))
}

function applyArray(value: unknown[], s: JSONSchemaProps, path: string, ctx: Ctx): void {
  const listType = s['x-kubernetes-list-type']
  const mapKeys = s['x-kubernetes-list-map-keys'] ?? []
  for (let i = 0; i < value.length; i++) {
    const item = value[i]
    if (item === null && !s.items?.nullable) continue
    if (s.items) {
      walk(item, s.items, `${path}[${i}]`, ctx)
    }
  }
  if (s.minItems !== undefined && value.length < s.minItems) invalidValue(ctx, path, value.length, `${path} in body should have at least ${s.minItems} items`)
  if (s.maxItems !== undefined && value.length > s.maxItems) add(ctx, path, 'FieldValueTooMany', `Too many: ${value.length}: must have at most ${s.maxItems} items`)
  if (listType === 'map' || listType === 'set' || s.uniqueItems) {
    const seen = new Set<string>()
    value.forEach((item, i) => {
      const key = listType === 'map' ? listKey(item, mapKeys) : JSON.stringify(item)
      if (seen.has(key)) {
        const shown = listType === 'map' ? JSON.stringify(Object.fromEntries(mapKeys.map((k) => [k, isObj(item) ? item[k] : undefined]))) : JSON.stringify(item)
        add(ctx, `${path}[${i}]`, 'FieldValueDuplicate', `Duplicate value: ${shown}`)
      }
      seen.add(key)
    })
  }
}

function checkScalar(value: unknown, s: JSONSchemaProps, path: string, ctx: Ctx): void {
  if (s.enum && !s.enum.some((e) => e === value)) {
    add(ctx, path, 'FieldValueNotSupported', `Unsupported value: ${JSON.stringify(value)}: supported values: ${s.enum.map((e) => JSON.stringify(e)).join(', ')}`)
  }
  if (typeof value === 'string') {
    const len = [...value].length
    if (s.maxLength !== undefined && len > s.maxLength) add(ctx, path, 'FieldValueTooLong', `Too long: may not be more than ${s.maxLength} bytes`)
    if (s.minLength !== undefined && len < s.minLength) invalidValue(ctx, path, value, `${path} in body should be at least ${s.minLength} chars long`)
    if (s.pattern !== undefined && !new RegExp(s.pattern, 'u').test(value)) invalidValue(ctx, path, value, `${path} in body should match '${s.pattern}'`)
  }
  if (typeof value === 'number') {
    if (s.minimum !== undefined && (s.exclusiveMinimum ? value <= s.minimum : value < s.minimum)) {
      invalidValue(ctx, path, value, `${path} in body should be greater than ${s.exclusiveMinimum ? '' : 'or equal to '}${s.minimum}`)
    }
    if (s.maximum !== undefined && (s.exclusiveMaximum ? value >= s.maximum : value > s.maximum)) {
      invalidValue(ctx, path, value, `${path} in body should be less than ${s.exclusiveMaximum ? '' : 'or equal to '}${s.maximum}`)
    }
    if (s.multipleOf !== undefined && value % s.multipleOf !== 0) invalidValue(ctx, path, value, `${path} in body should be a multiple of ${s.multipleOf}`)
  }
}

function passes(value: unknown, s: JSONSchemaProps): boolean {
  const probe: Ctx = { causes: [], unknownFields: [], rules: new WeakMap() }
  walk(structuredClone(value), { ...s, 'x-kubernetes-preserve-unknown-fields': true }, 'x', probe)
  return probe.causes.length === 0
}

function checkCombinators(value: unknown, s: JSONSchemaProps, path: string, ctx: Ctx): void {
  for (const sub of s.allOf ?? []) if (!passes(value, sub)) invalidValue(ctx, path, value, `${path} in body must match all schemas in allOf`)
  if (s.anyOf && !s.anyOf.some((sub) => passes(value, sub))) invalidValue(ctx, path, value, `${path} in body must match at least one schema in anyOf`)
  if (s.oneOf && s.oneOf.filter((sub) => passes(value, sub)).length !== 1) invalidValue(ctx, path, value, `${path} in body must match exactly one schema in oneOf`)
  if (s.not && passes(value, s.not)) invalidValue(ctx, path, value, `${path} in body must not match the schema in not`)
}

/** Converts JSON to CEL values: integers become BigInt unless the schema says `number`. */
function toCel(value: unknown, s: JSONSchemaProps | undefined): unknown {
  if (typeof value === 'number') return Number.isInteger(value) && s?.type !== 'number' ? BigInt(value) : value
  if (Array.isArray(value)) return value.map((v) => toCel(v, s?.items))
  if (isObj(value)) {
    const out: Obj = {}
    const additional = isObj(s?.additionalProperties) ? (s?.additionalProperties as JSONSchemaProps) : undefined
    for (const [k, v] of Object.entries(value)) out[k] = toCel(v, s?.properties?.[k] ?? additional)
    return out
  }
  return value
}

function schemaTypeName(value: unknown, s: JSONSchemaProps): string {
  return s.type ?? typeName(value)
}

function runRules(value: unknown, s: JSONSchemaProps, path: string, old: unknown, ctx: Ctx): void {
  const compiled = ctx.rules.get(s)
  if (!compiled?.length) return
  let self: unknown
  let oldSelf: unknown
  for (const c of compiled) {
    if (c.transition && old === undefined && !c.rule.optionalOldSelf) continue
    self ??= toCel(value, s)
    if (old !== undefined) oldSelf ??= toCel(old, s)
    const vars: Obj = { self }
    if (old !== undefined) vars.oldSelf = oldSelf
    const field = c.rule.fieldPath ? join(path, c.rule.fieldPath.replace(/^\./, '')) : path
    let ok: unknown
    try {
      ok = c.program(vars)
    } catch (err) {
      invalidValue(ctx, field, schemaTypeName(value, s), `${firstLine(err)} evaluating rule: ${c.rule.rule}`)
      continue
    }
    if (ok === true) continue
    let message = c.rule.message ?? `failed rule: ${c.rule.rule}`
    if (c.message) {
      try {
        const m = c.message(vars)
        if (typeof m === 'string' && m.trim()) message = m
      } catch {
        // The static message or the rule text stands in when messageExpression itself fails.
      }
    }
    const reason = c.rule.reason ?? 'FieldValueInvalid'
    const shown = JSON.stringify(schemaTypeName(value, s))
    if (reason === 'FieldValueRequired') add(ctx, field, reason, `Required value: ${message}`)
    else if (reason === 'FieldValueForbidden') add(ctx, field, reason, `Forbidden: ${message}`)
    else if (reason === 'FieldValueDuplicate') add(ctx, field, reason, `Duplicate value: ${shown}: ${message}`)
    else add(ctx, field, reason, `Invalid value: ${shown}: ${message}`)
  }
}
