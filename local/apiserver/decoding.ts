import { errorBody } from '../../shared/crd/field-error.js'
import { goJson } from '../../shared/crd/go-value.js'
import { ApiError, badRequest } from './api-error.js'
import type { ResourceType } from './resource-type.js'
import type { KubeObject } from './types.js'
import type { JSONSchemaProps } from './validation.js'

/**
 * Unknown fields as the real server's decoder finds them: ObjectMeta (and its owner references
 * and managedFields entries) for every kind, the top-level fields of the built-in kinds, and,
 * for custom resources, whatever the schema prunes. Unknown fields are dropped; their paths are
 * what `fieldValidation` warns about or refuses.
 */

type Obj = Record<string, unknown>
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v)

const OBJECT_META = new Set([
  'name', 'generateName', 'namespace', 'selfLink', 'uid', 'resourceVersion', 'generation', 'creationTimestamp',
  'deletionTimestamp', 'deletionGracePeriodSeconds', 'labels', 'annotations', 'ownerReferences', 'finalizers', 'managedFields',
])
const OWNER_REFERENCE = new Set(['apiVersion', 'kind', 'name', 'uid', 'controller', 'blockOwnerDeletion'])
const MANAGED_FIELDS_ENTRY = new Set(['manager', 'operation', 'apiVersion', 'time', 'fieldsType', 'fieldsV1', 'subresource'])
const TYPE_META = new Set(['apiVersion', 'kind', 'metadata'])

function pruneItems(list: unknown, known: Set<string>, path: string, out: string[]): void {
  if (!Array.isArray(list)) return
  list.forEach((item, i) => {
    if (!isObj(item)) return
    for (const k of Object.keys(item)) {
      if (!known.has(k)) {
        delete item[k]
        out.push(`${path}[${i}].${k}`)
      }
    }
  })
}

// ObjectMeta is typed on the real server, so its empty optional maps and lists do not survive decoding.
const OMIT_EMPTY_META = ['labels', 'annotations', 'ownerReferences', 'finalizers']
// Likewise the empty maps of the built-in kinds whose fields are all optional.
const OMIT_EMPTY_TOP = ['data', 'binaryData', 'stringData']

const isEmpty = (v: unknown) => (Array.isArray(v) ? v.length === 0 : isObj(v) && Object.keys(v).length === 0)

/** Drops unknown ObjectMeta fields in place; returns their paths in the order met. */
export function pruneMetadata(meta: Obj, path = 'metadata'): string[] {
  const out: string[] = []
  for (const k of OMIT_EMPTY_META) if (isEmpty(meta[k])) delete meta[k]
  for (const k of Object.keys(meta)) {
    if (k === 'ownerReferences') pruneItems(meta[k], OWNER_REFERENCE, `${path}.ownerReferences`, out)
    else if (k === 'managedFields') pruneItems(meta[k], MANAGED_FIELDS_ENTRY, `${path}.managedFields`, out)
    else if (!OBJECT_META.has(k)) {
      delete meta[k]
      out.push(`${path}.${k}`)
    }
  }
  return out
}

/**
 * Drops the unknown fields the decoder finds without a schema (ObjectMeta, and a built-in
 * kind's top level) in place, and returns their paths in the order the decoder reports them:
 * input order for built-in kinds (custom resources sort theirs with the schema's).
 */
export function pruneDecoded(rt: ResourceType, obj: KubeObject): string[] {
  const out: string[] = []
  for (const k of Object.keys(obj)) {
    if (k === 'metadata') {
      if (isObj(obj.metadata)) out.push(...pruneMetadata(obj.metadata))
    } else if (rt.topLevelFields && !TYPE_META.has(k) && !rt.topLevelFields.includes(k)) {
      delete obj[k]
      out.push(k)
    } else if (rt.topLevelFields && OMIT_EMPTY_TOP.includes(k) && isEmpty(obj[k])) delete obj[k]
  }
  return out
}

/**
 * The paths a custom resource schema would prune from `value`, found by reading only (no copy,
 * no validation): what the decoder reports for parts of a request the server then ignores.
 */
export function schemaUnknownPaths(value: unknown, schema: JSONSchemaProps | undefined, path = '', root = true): string[] {
  const out: string[] = []
  if (schema) walkUnknown(value, schema, path, root ? TYPE_META : undefined, out)
  return out
}

function walkUnknown(value: unknown, s: JSONSchemaProps, path: string, keep: ReadonlySet<string> | undefined, out: string[]): void {
  if (isObj(value)) {
    const props = s.properties
    const additional = isObj(s.additionalProperties) ? (s.additionalProperties as JSONSchemaProps) : undefined
    const preserve = s['x-kubernetes-preserve-unknown-fields'] === true || s.additionalProperties === true
    const own = keep ?? (s['x-kubernetes-embedded-resource'] ? TYPE_META : undefined)
    for (const [key, v] of Object.entries(value)) {
      if (own?.has(key)) continue
      const child = props?.[key] ?? additional
      if (!child) {
        if (!preserve) out.push(path ? `${path}.${key}` : key)
        continue
      }
      if (v !== null) walkUnknown(v, child, props?.[key] ? (path ? `${path}.${key}` : key) : `${path}[${key}]`, undefined, out)
    }
  } else if (Array.isArray(value) && s.items) {
    value.forEach((item, i) => item !== null && walkUnknown(item, s.items as JSONSchemaProps, `${path}[${i}]`, undefined, out))
  }
}

const listed = (fields: string[]) => fields.map((f) => `unknown field ${JSON.stringify(f)}`).join(', ')

/** 400 for a create or update that `fieldValidation=Strict` refuses. */
export function strictDecodingError(rt: ResourceType, version: string, fields: string[]): ApiError {
  return badRequest(`${rt.kind} in version ${JSON.stringify(version)} cannot be handled as a ${rt.kind}: strict decoding error: ${listed(fields)}`)
}

/**
 * 422 for a patch that `fieldValidation=Strict` refuses: the real server reports the patched
 * object itself (as Go writes it, keys sorted) as the invalid value of the field `patch`.
 */
export function strictPatchError(patched: unknown, fields: string[]): ApiError {
  // The value is a Go string holding the patched object as Go's JSON encoder writes it.
  const detail = errorBody('FieldValueInvalid', goJson(patched), `strict decoding error: ${listed(fields)}`)
  return new ApiError(422, 'Invalid', ` "" is invalid: patch: ${detail}`, { causes: [{ reason: 'FieldValueInvalid', message: detail, field: 'patch' }] })
}

/**
 * 500 for a server-side apply whose configuration names fields the type does not declare,
 * worded as the real server does. With several such fields the real server names a subset
 * that follows Go map order; here it is the first of each object in name order.
 */
export function typedPatchError(rt: ResourceType, version: string, namespace: string, name: string, fields: string[]): ApiError {
  const firstPerParent = new Map<string, string>()
  for (const f of [...fields].sort()) {
    const parent = f.includes('.') ? f.slice(0, f.lastIndexOf('.')) : ''
    if (!firstPerParent.has(parent)) firstPerParent.set(parent, f)
  }
  const errs = [...firstPerParent.values()].sort().map((f) => `.${f}: field not declared in schema`)
  const detail = errs.length === 1 ? errs[0] : `errors:\n${errs.map((e) => `  ${e}`).join('\n')}`
  const gv = rt.group ? `${rt.group}/${version}` : `/${version}`
  const err = new ApiError(500, '', `failed to create typed patch object (${namespace}/${name}; ${gv}, Kind=${rt.kind}): ${detail}`)
  return err
}

/** The start of a body as the real server quotes it in decoding errors: text for an object, hex otherwise. */
export function bodyHint(raw: Buffer): string {
  if (raw.length === 0) return '<empty>'
  const head = raw.subarray(0, 30)
  const shown = raw[0] === 0x7b ? head.toString('utf8') : head.toString('hex')
  return raw.length > 30 ? `${shown} ...` : shown
}
