import { z } from 'zod'

/** A node of an apiextensions.k8s.io/v1 JSONSchemaProps tree (the keys Kinetic's CRDs use). */
export interface JsonSchemaProps {
  type?: string
  description?: string
  format?: string
  properties?: Record<string, JsonSchemaProps>
  additionalProperties?: JsonSchemaProps | boolean
  items?: JsonSchemaProps
  required?: string[]
  enum?: unknown[]
  default?: unknown
  nullable?: boolean
  minimum?: number
  maximum?: number
  exclusiveMinimum?: boolean | number
  exclusiveMaximum?: boolean | number
  minLength?: number
  maxLength?: number
  pattern?: string
  minItems?: number
  maxItems?: number
  minProperties?: number
  maxProperties?: number
  anyOf?: JsonSchemaProps[]
  oneOf?: JsonSchemaProps[]
  allOf?: JsonSchemaProps[]
  not?: JsonSchemaProps
  'x-kubernetes-preserve-unknown-fields'?: boolean
  'x-kubernetes-int-or-string'?: boolean
  'x-kubernetes-embedded-resource'?: boolean
  'x-kubernetes-list-type'?: 'atomic' | 'set' | 'map'
  'x-kubernetes-list-map-keys'?: string[]
  'x-kubernetes-map-type'?: 'granular' | 'atomic'
  'x-kubernetes-validations'?: ValidationRule[]
  [key: string]: unknown
}

/** One CEL rule as written under `x-kubernetes-validations`. */
export interface ValidationRule {
  rule: string
  message?: string
  messageExpression?: string
  fieldPath?: string
  reason?: string
  optionalOldSelf?: boolean
}

/** Thrown when a zod schema has a shape a structural CRD schema cannot express. */
export class NotStructuralError extends Error {
  constructor(path: string, detail: string) {
    super(`${path || '<root>'}: ${detail}`)
    this.name = 'NotStructuralError'
  }
}

const INT_BOUND = Number.MAX_SAFE_INTEGER
const PRESERVE = 'x-kubernetes-preserve-unknown-fields'

/** Pure: converts a zod schema into a Kubernetes structural OpenAPI v3 schema; NotStructuralError on shapes it cannot express. */
export function toStructural(schema: z.ZodType): JsonSchemaProps {
  const raw = z.toJSONSchema(schema, { target: 'openapi-3.0', io: 'input', unrepresentable: 'any' })
  return fixNode(raw as Record<string, unknown>, '')
}

/** Pure: the openAPIV3Schema of a CRD whose root is the given zod object (apiVersion/kind/metadata as Kubernetes expects them). */
export function toCrdSchema(schema: z.ZodType): JsonSchemaProps {
  const root = toStructural(schema)
  if (root.type !== 'object' || !root.properties) throw new NotStructuralError('', 'the root must be an object')
  const { apiVersion: _a, kind: _k, metadata: _m, ...rest } = root.properties
  const out: JsonSchemaProps = { type: 'object' }
  if (root.description !== undefined) out.description = root.description
  out.properties = {
    apiVersion: { type: 'string', description: 'APIVersion defines the versioned schema of this representation of an object.' },
    kind: { type: 'string', description: 'Kind is a string value representing the REST resource this object represents.' },
    metadata: { type: 'object' },
    ...rest,
  }
  if (root[PRESERVE]) out[PRESERVE] = true
  if (root['x-kubernetes-validations']) out['x-kubernetes-validations'] = root['x-kubernetes-validations']
  return out
}

function fixNode(node: Record<string, unknown>, path: string): JsonSchemaProps {
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(node)) {
    if (key === '$schema' || key === 'propertyNames' || key === 'id') continue
    out[key] = value
  }

  if (Object.keys(out).filter((k) => k !== 'description' && k !== 'default').length === 0) {
    // z.unknown() / z.any(): anything goes, which Kubernetes spells as preserve-unknown-fields.
    return { ...out, [PRESERVE]: true } as JsonSchemaProps
  }

  if ('const' in out) {
    out.enum = [out.const]
    delete out.const
  }

  for (const key of ['anyOf', 'oneOf'] as const) {
    const alts = out[key] as Record<string, unknown>[] | undefined
    if (!alts) continue
    const types = alts.map((a) => a.type).sort()
    if (out[PRESERVE] === true) {
      delete out[key] // the schema author chose "any value" for this union
    } else if (alts.length === 2 && types[0] === 'integer' && types[1] === 'string') {
      delete out[key]
      out['x-kubernetes-int-or-string'] = true
    } else {
      throw new NotStructuralError(path, `${key} cannot be expressed structurally; mark the union with x-kubernetes-preserve-unknown-fields`)
    }
  }
  if (out.allOf || out.not || out.$ref) throw new NotStructuralError(path, 'allOf, not and $ref are not supported')

  if (out.type === 'integer') {
    if (out.minimum === -INT_BOUND) delete out.minimum
    if (out.maximum === INT_BOUND) delete out.maximum
  }

  if (out.properties) {
    const props = out.properties as Record<string, Record<string, unknown>>
    const fixed: Record<string, JsonSchemaProps> = {}
    for (const [name, child] of Object.entries(props)) fixed[name] = fixNode(child, `${path}.${name}`)
    if (isEmptyAdditional(out.additionalProperties)) out[PRESERVE] = true
    delete out.additionalProperties
    if (Object.keys(fixed).length > 0) out.properties = fixed
    else delete out.properties
  } else if (out.additionalProperties !== undefined) {
    if (isEmptyAdditional(out.additionalProperties)) {
      delete out.additionalProperties
      out[PRESERVE] = true
    } else if (out.additionalProperties === false) {
      delete out.additionalProperties
    } else {
      out.additionalProperties = fixNode(out.additionalProperties as Record<string, unknown>, `${path}[*]`)
    }
  }

  if (Array.isArray(out.items)) throw new NotStructuralError(path, 'tuple arrays are not structural')
  if (out.items) out.items = fixNode(out.items as Record<string, unknown>, `${path}[]`)

  if (Array.isArray(out.required) && out.required.length === 0) delete out.required
  return out as JsonSchemaProps
}

function isEmptyAdditional(value: unknown): boolean {
  return value === true || (typeof value === 'object' && value !== null && Object.keys(value).length === 0)
}

/** Pure: every violation of the Kubernetes structural-schema rules in a CRD schema (empty when structural). */
export function structuralViolations(schema: JsonSchemaProps, path = '', isRoot = true): string[] {
  const at = path || '<root>'
  const problems: string[] = []
  for (const key of ['anyOf', 'oneOf', 'allOf', 'not', '$ref', 'definitions', 'propertyNames', 'const', '$schema']) {
    if (key in schema) problems.push(`${at}: ${key} is not allowed`)
  }
  const preserve = schema[PRESERVE] === true
  const intOrString = schema['x-kubernetes-int-or-string'] === true
  if (!schema.type && !preserve && !intOrString) problems.push(`${at}: type is required`)
  if (schema.type && intOrString) problems.push(`${at}: type must be empty with x-kubernetes-int-or-string`)
  if (schema.properties && schema.additionalProperties !== undefined) {
    problems.push(`${at}: additionalProperties and properties are mutually exclusive`)
  }
  if (schema.additionalProperties === false) problems.push(`${at}: additionalProperties false is not allowed`)
  if ((schema.properties || schema.additionalProperties !== undefined) && schema.type !== 'object') {
    problems.push(`${at}: properties need type object`)
  }
  if (schema.items && schema.type !== 'array') problems.push(`${at}: items need type array`)
  if (schema.type === 'array' && !schema.items) problems.push(`${at}: arrays need items`)
  if (schema['x-kubernetes-list-type'] === 'map') {
    const keys = schema['x-kubernetes-list-map-keys'] ?? []
    const item = schema.items
    if (keys.length === 0) problems.push(`${at}: list-type map needs list-map-keys`)
    if (!item || item.type !== 'object') problems.push(`${at}: list-type map needs object items`)
    for (const k of keys) {
      const prop = item?.properties?.[k]
      if (!prop) problems.push(`${at}: list-map key ${k} is not a property of the items`)
      else if (!(item?.required ?? []).includes(k) && prop.default === undefined) {
        problems.push(`${at}: list-map key ${k} must be required or defaulted`)
      }
    }
  }
  if (isRoot && schema.properties?.metadata) {
    const meta = schema.properties.metadata
    const allowed = new Set(['type', 'properties', 'description'])
    if (Object.keys(meta).some((k) => !allowed.has(k))) problems.push('metadata: only type and name/generateName are allowed')
  }
  for (const [name, child] of Object.entries(schema.properties ?? {})) {
    problems.push(...structuralViolations(child, path ? `${path}.${name}` : name, false))
  }
  if (schema.items) problems.push(...structuralViolations(schema.items, `${path}[]`, false))
  if (typeof schema.additionalProperties === 'object') {
    problems.push(...structuralViolations(schema.additionalProperties, `${path}[*]`, false))
  }
  return problems
}
