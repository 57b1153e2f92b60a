import { forbidden, invalid, notSupported, required } from '../../shared/crd/field-error.js'
import type { StatusCause } from './api-error.js'
import { schemaUnknownPaths } from './decoding.js'
import { deepEqual } from './object-meta.js'
import type { KubeObject } from './types.js'
import { createSchemaValidator, type JSONSchemaProps } from './validation.js'

/**
 * The checks kube-apiserver makes on a CRD's openAPIV3Schema before anything else: a schema
 * per version, a structural schema (types everywhere, items for arrays, no $ref, junctors
 * without types), consistent list and map extensions, metadata limited to name and
 * generateName, and defaults that satisfy their own schema. Causes name the schema where the
 * real server does: `spec.validation.openAPIV3Schema` when every version has the same schema
 * (the server then checks it once), `spec.versions[i].schema.openAPIV3Schema` otherwise.
 */

type Obj = Record<string, unknown>
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v)

const TYPES = ['array', 'boolean', 'integer', 'number', 'object', 'string']
const JUNCTORS = ['allOf', 'anyOf', 'oneOf'] as const

interface CrdVersion {
  name?: string
  schema?: { openAPIV3Schema?: JSONSchemaProps }
}

/** Where each version's schema is reported, and the schema; one entry when all versions share it. */
export function schemaSites(crd: KubeObject): Array<{ field: string; schema: JSONSchemaProps | undefined; index: number }> {
  const versions = (((crd.spec as Obj | undefined)?.versions ?? []) as CrdVersion[])
  const schemas = versions.map((v) => v.schema?.openAPIV3Schema)
  if (versions.length > 0 && schemas.every((s) => s !== undefined && deepEqual(s, schemas[0]))) {
    return [{ field: 'spec.validation.openAPIV3Schema', schema: schemas[0], index: 0 }]
  }
  return versions.map((_, i) => ({ field: `spec.versions[${i}].schema.openAPIV3Schema`, schema: schemas[i], index: i }))
}

/** Every cause the real server finds in the CRD's schemas before it looks at CEL rules; empty when they are fine. */
export function crdSchemaCauses(crd: KubeObject): StatusCause[] {
  const out: StatusCause[] = []
  for (const site of schemaSites(crd)) {
    if (!site.schema) {
      out.push(required(site.field, 'schemas are required'))
      continue
    }
    checkRoot(site.schema, site.field, out)
  }
  return out
}

function checkRoot(s: JSONSchemaProps, path: string, out: StatusCause[]): void {
  if (!s.type) out.push(required(`${path}.type`, 'must not be empty at the root'))
  else if (s.type !== 'object') out.push(invalid(`${path}.type`, s.type, 'must be object at the root'))
  if (s.nullable === true) out.push(forbidden(`${path}.nullable`, 'nullable cannot be true at the root'))
  const meta = s.properties?.metadata
  if (meta) {
    const names = Object.keys(meta.properties ?? {})
    const onlyNames = names.every((n) => n === 'name' || n === 'generateName')
    const extra = Object.keys(meta).some((k) => !['type', 'properties', 'description'].includes(k))
    if (!onlyNames || extra || (meta.type !== undefined && meta.type !== 'object')) {
      out.push(forbidden(`${path}.properties[metadata]`, 'must not specify anything other than name and generateName, but metadata is implicitly specified'))
    }
  }
  checkNode(s, path, 'root', out)
}

type Level = 'root' | 'field' | 'item'

function checkNode(s: JSONSchemaProps, path: string, level: Level, out: StatusCause[], inJunctor = false): void {
  if ('$ref' in s) out.push(forbidden(`${path}.$ref`, '$ref is not supported'))
  const preserve = s['x-kubernetes-preserve-unknown-fields']
  if (preserve === false) out.push(invalid(`${path}.x-kubernetes-preserve-unknown-fields`, false, 'must be true or undefined'))
  if (inJunctor) {
    if (s.type !== undefined) out.push(forbidden(`${path}.type`, 'must be empty to be structural'))
  } else if (level !== 'root') {
    if (!s.type && !s['x-kubernetes-int-or-string'] && preserve !== true && !s['x-kubernetes-embedded-resource']) {
      out.push(required(`${path}.type`, level === 'item' ? 'must not be empty for specified array items' : 'must not be empty for specified object fields'))
    }
  }
  if (s.type !== undefined && !TYPES.includes(s.type)) {
    out.push(notSupported(`${path}.type`, s.type, TYPES))
  }
  if (s.type === 'array' && !s.items && !inJunctor) out.push(required(`${path}.items`, 'must be specified'))
  if (s.properties && s.additionalProperties !== undefined && s.additionalProperties !== false) {
    out.push(forbidden(`${path}.additionalProperties`, 'additionalProperties and properties are mutual exclusive'))
  }
  if (typeof s.pattern === 'string') {
    try {
      new RegExp(s.pattern, 'u')
    } catch (err) {
      // The explanation after "isn't:" is Go's regexp package's in the real server.
      out.push(invalid(`${path}.pattern`, s.pattern, `must be a valid regular expression, but isn't: ${(err as Error).message}`))
    }
  }
  checkListExtensions(s, path, out)
  if (s.default !== undefined && !inJunctor) checkDefault(s, path, out)
  for (const [name, child] of Object.entries(s.properties ?? {})) {
    if (level === 'root' && name === 'metadata') continue
    if (isObj(child)) checkNode(child, `${path}.properties[${name}]`, 'field', out, inJunctor)
  }
  if (isObj(s.items)) checkNode(s.items as JSONSchemaProps, `${path}.items`, 'item', out, inJunctor)
  if (isObj(s.additionalProperties)) checkNode(s.additionalProperties as JSONSchemaProps, `${path}.additionalProperties`, 'field', out, inJunctor)
  // x-kubernetes-int-or-string may spell its two types out as anyOf (or allOf of anyOf), as generated CRDs do.
  const intOrString = s['x-kubernetes-int-or-string'] === true
  for (const j of JUNCTORS) {
    (s[j] ?? []).forEach((sub, i) => {
      if (!isObj(sub)) return
      if (intOrString && isIntOrStringJunctor(sub)) return
      checkNode(sub, `${path}.${j}[${i}]`, level, out, true)
    })
  }
  if (isObj(s.not)) checkNode(s.not as JSONSchemaProps, `${path}.not`, level, out, true)
}

function isIntOrStringJunctor(sub: JSONSchemaProps): boolean {
  if (sub.type === 'integer' || sub.type === 'string') return true
  return Array.isArray(sub.anyOf) && sub.anyOf.every((a) => isObj(a) && (a.type === 'integer' || a.type === 'string'))
}

function checkListExtensions(s: JSONSchemaProps, path: string, out: StatusCause[]): void {
  const listType = s['x-kubernetes-list-type']
  const keys = s['x-kubernetes-list-map-keys'] ?? []
  if (listType === 'map') {
    if (keys.length === 0) out.push(required(`${path}.x-kubernetes-list-map-keys`, 'must not be empty if x-kubernetes-list-type is map'))
    const item = s.items
    for (const k of keys) {
      const prop = item?.properties?.[k]
      if (prop && !(item?.required ?? []).includes(k) && prop.default === undefined) {
        out.push(required(`${path}.items.properties[${k}].default`, 'this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property'))
      }
    }
  } else if (keys.length > 0) {
    out.push(required(`${path}.x-kubernetes-list-type`, 'must be map if x-kubernetes-list-map-keys is non-empty'))
  }
  if (listType === 'set' && s.items?.type === 'object' && s.items['x-kubernetes-map-type'] !== 'atomic') {
    // The real server reports the items' x-kubernetes-list-type as the invalid value here (null when unset).
    out.push(invalid(`${path}.items.x-kubernetes-map-type`, s.items['x-kubernetes-list-type'] ?? null, 'must be atomic as item of a list with x-kubernetes-list-type=set'))
  }
}

// A default must be valid against its own schema and must not carry fields the schema prunes.
function checkDefault(s: JSONSchemaProps, path: string, out: StatusCause[]): void {
  const { default: value, ...rest } = s
  const wrapper: JSONSchemaProps = { type: 'object', properties: { v: rest } }
  let validator
  try {
    validator = createSchemaValidator(wrapper)
  } catch {
    return
  }
  const probe = { v: structuredClone(value) }
  if (schemaUnknownPaths(value, rest, '', false).length) {
    out.push(invalid(`${path}.default`, value, 'must not have unknown fields'))
    return
  }
  const { causes } = validator.validate(probe)
  for (const c of causes) {
    if (c.field === '<nil>') continue
    // The server validates the default as a document of its own, whose path is empty.
    const message = c.message.replace(new RegExp(`(^|: )${escapeRe(c.field)} in body`), '$1 in body')
    out.push({ reason: c.reason, field: `${path}.default${c.field.slice(1)}`, message })
  }
}

function escapeRe(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}
