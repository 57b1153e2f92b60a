import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv'
import * as ajvFormats from 'ajv-formats'
import { parse } from '@marcbachmann/cel-js'
import type { JsonSchemaProps, ValidationRule } from './structural.js'

/** One rejected field, with a Kubernetes-style path such as `spec.steps[1].name`. */
export interface FieldCause {
  field: string
  message: string
}

/** Outcome of validateAgainstCrd: the defaulted, pruned object, or every cause of rejection. */
export type CrdValidationResult =
  | { ok: true; object: Record<string, unknown> }
  | { ok: false; causes: FieldCause[] }

/** The parts of an apiextensions.k8s.io/v1 CustomResourceDefinition validation needs. */
export interface CrdLike {
  spec: {
    versions: { name: string; storage?: boolean; schema?: { openAPIV3Schema?: JsonSchemaProps } }[]
  }
}

/** Options of validateAgainstCrd. */
export interface ValidateOptions {
  /** The stored object on update; enables transition rules that use `oldSelf`. */
  oldObject?: unknown
}

/** Message Kubernetes adds when schema errors keep the CEL rules from running. */
export const CEL_SKIPPED_MESSAGE =
  'some validation rules were not checked because the object was invalid; correct the existing errors to complete validation'

const PRESERVE = 'x-kubernetes-preserve-unknown-fields'
const BLOCKING_KEYWORDS = new Set(['type', 'enum'])

type Json = Record<string, unknown>
type CelProgram = ReturnType<typeof parse>

const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: true })
;(ajvFormats.default as unknown as (a: Ajv) => void)(ajv)
ajv.addFormat('int64', true).addFormat('int32', true).addFormat('byte', true).addFormat('double', true).addFormat('float', true)

const compiledSchemas = new WeakMap<JsonSchemaProps, ValidateFunction>()
const compiledRules = new Map<string, CelProgram>()

/**
 * Pure: validates an object against a CRD the way the API server does (prune unknown fields,
 * apply `default`s, check the OpenAPI schema, list-map keys and `x-kubernetes-validations`);
 * never mutates its input; throws only when the CRD itself is unusable.
 */
export function validateAgainstCrd(crd: CrdLike, object: unknown, options: ValidateOptions = {}): CrdValidationResult {
  const schema = schemaFor(crd, object)
  if (!isObject(object)) return { ok: false, causes: [{ field: '<root>', message: 'Invalid value: the object must be a JSON object' }] }
  const value = pruneAndDefault(schema, object, true) as Json

  const causes: FieldCause[] = []
  let validate = compiledSchemas.get(schema)
  if (!validate) {
    validate = ajv.compile(schema)
    compiledSchemas.set(schema, validate)
  }
  const schemaErrors = validate(value) ? [] : (validate.errors ?? [])
  causes.push(...schemaErrors.map((e) => causeFromAjv(e, value)))
  checkStructure(schema, value, '', causes)

  // Like the API server: a value of the wrong type or outside its enum would make CEL rules misfire.
  if (schemaErrors.some((e) => BLOCKING_KEYWORDS.has(e.keyword))) {
    causes.push({ field: '<root>', message: CEL_SKIPPED_MESSAGE })
  } else {
    const old = options.oldObject === undefined ? undefined : pruneAndDefault(schema, options.oldObject, true)
    checkRules(schema, value, old, '', causes)
  }
  return causes.length === 0 ? { ok: true, object: value } : { ok: false, causes: dedupe(causes) }
}

/** Pure: the openAPIV3Schema of the version named by the object's apiVersion (the storage version otherwise). */
export function schemaFor(crd: CrdLike, object: unknown): JsonSchemaProps {
  const apiVersion = isObject(object) && typeof object.apiVersion === 'string' ? object.apiVersion : ''
  const wanted = apiVersion.includes('/') ? apiVersion.slice(apiVersion.indexOf('/') + 1) : apiVersion
  const version = crd.spec.versions.find((v) => v.name === wanted) ?? crd.spec.versions.find((v) => v.storage)
  const schema = version?.schema?.openAPIV3Schema
  if (!schema) throw new Error('The CRD has no openAPIV3Schema for this version')
  return schema
}

/** Pure: a copy of the value without the fields the schema does not declare (unless it preserves them), with `default`s filled in. */
export function pruneAndDefault(schema: JsonSchemaProps | undefined, value: unknown, isRoot = false): unknown {
  if (Array.isArray(value)) return value.map((item) => pruneAndDefault(schema?.items, item))
  if (!isObject(value)) return value
  if (!schema) return deepCopy(value) // inside a preserved unknown field: no schema, nothing to prune
  const props = schema.properties
  const additional = typeof schema.additionalProperties === 'object' ? schema.additionalProperties : undefined
  const preserve = schema[PRESERVE] === true || schema.additionalProperties === true
  const out: Json = {}
  for (const [key, child] of Object.entries(value)) {
    if (isRoot && key === 'metadata') {
      out[key] = deepCopy(child) // ObjectMeta is the API server's own business
      continue
    }
    const sub = props?.[key] ?? additional
    if (sub) {
      out[key] = child === null && sub.default !== undefined && !sub.nullable
        ? pruneAndDefault(sub, deepCopy(sub.default))
        : pruneAndDefault(sub, child)
    } else if (preserve || (isRoot && (key === 'apiVersion' || key === 'kind'))) {
      out[key] = deepCopy(child)
    }
  }
  for (const [key, sub] of Object.entries(props ?? {})) {
    if (out[key] === undefined && sub.default !== undefined) out[key] = pruneAndDefault(sub, deepCopy(sub.default))
  }
  return out
}

function deepCopy(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(deepCopy)
  if (!isObject(value)) return value
  const out: Json = {}
  for (const [key, child] of Object.entries(value)) out[key] = deepCopy(child)
  return out
}

function causeFromAjv(error: ErrorObject, root: unknown): FieldCause {
  const field = fieldPath(error.instancePath, root)
  const value = valueAt(error.instancePath, root)
  const p = error.params as Record<string, unknown>
  switch (error.keyword) {
    case 'required':
      return { field: join(field, String(p.missingProperty)), message: 'Required value' }
    case 'enum':
      return {
        field,
        message: `Unsupported value: ${JSON.stringify(value)}: supported values: ${(p.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`,
      }
    case 'type':
      return { field, message: `Invalid value: "${typeName(value)}": ${field} in body must be of type ${String(p.type)}: "${typeName(value)}"` }
    case 'minimum':
      return { field, message: `Invalid value: ${JSON.stringify(value)}: ${field} in body should be greater than or equal to ${String(p.limit)}` }
    case 'maximum':
      return { field, message: `Invalid value: ${JSON.stringify(value)}: ${field} in body should be less than or equal to ${String(p.limit)}` }
    case 'minLength':
      return { field, message: `Invalid value: ${JSON.stringify(value)}: ${field} in body should be at least ${String(p.limit)} chars long` }
    case 'maxLength':
      return { field, message: `Too long: may not be longer than ${String(p.limit)}` }
    case 'pattern':
      return { field, message: `Invalid value: ${JSON.stringify(value)}: ${field} in body should match '${String(p.pattern)}'` }
    case 'minItems':
      return { field, message: `Invalid value: ${Array.isArray(value) ? value.length : 0}: ${field} in body should have at least ${String(p.limit)} items` }
    case 'maxItems':
      return { field, message: `Too many: ${Array.isArray(value) ? value.length : 0}: must have at most ${String(p.limit)} items` }
    case 'format':
      return { field, message: `Invalid value: ${JSON.stringify(value)}: ${field} in body must be of type ${String(p.format)}: ${JSON.stringify(value)}` }
    default:
      return { field, message: `Invalid value: ${error.message ?? error.keyword}` }
  }
}

function checkStructure(schema: JsonSchemaProps, value: unknown, path: string, causes: FieldCause[]): void {
  if (value === undefined || value === null) return
  if (schema['x-kubernetes-int-or-string'] && !(typeof value === 'string' || Number.isInteger(value))) {
    causes.push({ field: path || '<root>', message: `Invalid value: ${JSON.stringify(value)}: must be an integer or a string` })
  }
  if (Array.isArray(value)) {
    const listType = schema['x-kubernetes-list-type']
    if (listType === 'map' || listType === 'set') {
      const keys = schema['x-kubernetes-list-map-keys'] ?? []
      const seen = new Set<string>()
      value.forEach((item, i) => {
        const identity = listType === 'map' && isObject(item)
          ? JSON.stringify(Object.fromEntries(keys.map((k) => [k, item[k]])))
          : JSON.stringify(item)
        if (seen.has(identity)) causes.push({ field: `${path}[${i}]`, message: `Duplicate value: ${identity}` })
        seen.add(identity)
      })
    }
    if (schema.items) value.forEach((item, i) => checkStructure(schema.items as JsonSchemaProps, item, `${path}[${i}]`, causes))
    return
  }
  if (!isObject(value)) return
  const additional = typeof schema.additionalProperties === 'object' ? schema.additionalProperties : undefined
  for (const [key, child] of Object.entries(value)) {
    const sub = schema.properties?.[key] ?? additional
    if (sub) checkStructure(sub, child, join(path, key), causes)
  }
}

function checkRules(schema: JsonSchemaProps, value: unknown, old: unknown, path: string, causes: FieldCause[]): void {
  if (value === undefined || value === null) return
  const rules = schema['x-kubernetes-validations']
  if (rules && rules.length > 0) {
    const self = toCel(schema, value)
    const oldSelf = old === undefined || old === null ? undefined : toCel(schema, old)
    for (const rule of rules) {
      const failure = evaluateRule(rule, self, oldSelf)
      if (failure !== null) causes.push({ field: join(path, (rule.fieldPath ?? '').replace(/^\./, '')) || '<root>', message: failure })
    }
  }
  if (Array.isArray(value)) {
    if (!schema.items) return
    const oldItems = Array.isArray(old) ? correlate(schema, value, old) : []
    value.forEach((item, i) => checkRules(schema.items as JsonSchemaProps, item, oldItems[i], `${path}[${i}]`, causes))
    return
  }
  if (!isObject(value)) return
  const oldObj = isObject(old) ? old : undefined
  const additional = typeof schema.additionalProperties === 'object' ? schema.additionalProperties : undefined
  for (const [key, child] of Object.entries(value)) {
    const sub = schema.properties?.[key] ?? additional
    if (sub) checkRules(sub, child, oldObj?.[key], join(path, key), causes)
  }
}

/** Kubernetes correlates old and new list items only for list-type map (by key) and set/atomic lists not at all. */
function correlate(schema: JsonSchemaProps, items: unknown[], oldItems: unknown[]): unknown[] {
  if (schema['x-kubernetes-list-type'] !== 'map') return []
  const keys = schema['x-kubernetes-list-map-keys'] ?? []
  const identity = (item: unknown) => (isObject(item) ? JSON.stringify(keys.map((k) => item[k])) : '')
  const byKey = new Map(oldItems.map((item) => [identity(item), item]))
  return items.map((item) => byKey.get(identity(item)))
}

/** Returns null when the rule holds, else the message Kubernetes would report. */
function evaluateRule(rule: ValidationRule, self: unknown, oldSelf: unknown): string | null {
  const usesOld = /\boldSelf\b/.test(rule.rule)
  if (usesOld && oldSelf === undefined && !rule.optionalOldSelf) return null // transition rules only run on update
  const vars: Record<string, unknown> = { self }
  if (usesOld) vars.oldSelf = oldSelf
  let result: unknown
  try {
    result = program(rule.rule)(vars)
  } catch (err) {
    return `Invalid value: ${rule.rule}: ${(err as Error).message.split('\n')[0] ?? 'evaluation error'}`
  }
  if (result === true) return null
  if (rule.messageExpression) {
    try {
      const message = program(rule.messageExpression)(vars)
      if (typeof message === 'string' && message.trim() !== '') return message
    } catch {
      // Kubernetes falls back to `message` when messageExpression fails.
    }
  }
  return rule.message ?? `failed rule: ${rule.rule}`
}

function program(source: string): CelProgram {
  let compiled = compiledRules.get(source)
  if (!compiled) {
    compiled = parse(source)
    compiledRules.set(source, compiled)
  }
  return compiled
}

/** Pure: the CEL view of a value: schema integers become CEL ints (bigint), the rest stays as decoded JSON. */
export function toCel(schema: JsonSchemaProps | undefined, value: unknown): unknown {
  if (typeof value === 'number') {
    const isInt = schema?.type === 'integer' || schema?.['x-kubernetes-int-or-string'] === true
    return isInt && Number.isInteger(value) ? BigInt(value) : value
  }
  if (Array.isArray(value)) return value.map((item) => toCel(schema?.items, item))
  if (isObject(value)) {
    const additional = typeof schema?.additionalProperties === 'object' ? schema.additionalProperties : undefined
    const out: Json = {}
    for (const [key, child] of Object.entries(value)) out[key] = toCel(schema?.properties?.[key] ?? additional, child)
    return out
  }
  return value
}

function fieldPath(pointer: string, root: unknown): string {
  let path = ''
  let node: unknown = root
  for (const raw of pointer.split('/').slice(1)) {
    const segment = raw.replace(/~1/g, '/').replace(/~0/g, '~')
    if (Array.isArray(node)) {
      path += `[${segment}]`
      node = node[Number(segment)]
    } else {
      path = join(path, segment)
      node = isObject(node) ? node[segment] : undefined
    }
  }
  return path || '<root>'
}

function valueAt(pointer: string, root: unknown): unknown {
  let node: unknown = root
  for (const raw of pointer.split('/').slice(1)) {
    const segment = raw.replace(/~1/g, '/').replace(/~0/g, '~')
    node = Array.isArray(node) ? node[Number(segment)] : isObject(node) ? node[segment] : undefined
  }
  return node
}

function typeName(value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'array'
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number'
  return typeof value
}

function join(path: string, key: string): string {
  if (key === '') return path
  if (path === '' || path === '<root>') return key
  return `${path}.${key}`
}

function dedupe(causes: FieldCause[]): FieldCause[] {
  const seen = new Set<string>()
  return causes.filter((c) => {
    const id = `${c.field}\u0000${c.message}`
    if (seen.has(id)) return false
    seen.add(id)
    return true
  })
}

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}
