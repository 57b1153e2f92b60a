/**
 * The OpenAPI schema of a custom resource kind, as kube-apiserver publishes it from the CRD's
 * structural schema: the version's openAPIV3Schema (descriptions included) with
 * `x-kubernetes-int-or-string` unfolded into its anyOf, `metadata` replaced by a reference to
 * ObjectMeta, `apiVersion` and `kind` by TypeMeta's, embedded resources given the same three,
 * and the kind's group-version-kind. The v2 flavour drops what OpenAPI v2 clients (older
 * kubectl) cannot read: junctors, nullable types, the insides of fields that keep unknown
 * fields, a root that keeps unknown fields altogether, and every default. Pure.
 */
import type { JSONSchemaProps } from './validation.js'

/** `v3` (components, `allOf` references) or `v2` (definitions, plain `$ref`). */
export type Flavour = 'v3' | 'v2'

type Schema = Record<string, unknown>

const META = 'io.k8s.apimachinery.pkg.apis.meta.v1'
const CONVENTIONS = 'https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md'

/** What the server says of the fields every kind has (TypeMeta and the metadata references). */
export const FIELD_DESCRIPTIONS = {
  apiVersion: `APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: ${CONVENTIONS}#resources`,
  kind: `Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: ${CONVENTIONS}#types-kinds`,
  metadata: `Standard object's metadata. More info: ${CONVENTIONS}#metadata`,
  listMetadata: `Standard list metadata. More info: ${CONVENTIONS}#types-kinds`,
  embeddedApiVersion: `apiVersion defines the versioned schema of this representation of an object. More info: ${CONVENTIONS}#resources`,
  embeddedKind: `kind is a string value representing the type of this object. In CamelCase. More info: ${CONVENTIONS}#types-kinds`,
}

/** `purko.io`, `v1alpha1`, `Agent` -> `io.purko.v1alpha1.Agent`, the model name of a kind. */
export function modelName(group: string, version: string, kind: string): string {
  return `${group.split('.').reverse().join('.')}.${version}.${kind}`
}

/** The name of an apimachinery meta type's model (`ObjectMeta` -> `io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta`). */
export const metaModel = (name: string): string => `${META}.${name}`

/** Where a model is in each flavour's document. */
export const refTarget = (flavour: Flavour, model: string): string => (flavour === 'v3' ? `#/components/schemas/${model}` : `#/definitions/${model}`)

/** A reference to a model, as each flavour writes it (with a description beside it when given). */
export function ref(flavour: Flavour, model: string, description?: string): Schema {
  const target = refTarget(flavour, model)
  const described = description ? { description } : {}
  return flavour === 'v3' ? { ...described, allOf: [{ $ref: target }] } : { ...described, $ref: target }
}

/** The custom resource kind's schema for one served version. */
export function kindSchema(
  flavour: Flavour,
  kind: { group: string; version: string; kind: string },
  source: JSONSchemaProps | undefined,
  selectableFields: string[] = [],
): Schema {
  let out: Schema
  if (!source || (flavour === 'v2' && source['x-kubernetes-preserve-unknown-fields'] === true)) {
    // Properties beside a root that keeps unknown fields would make older kubectl refuse them.
    out = { type: 'object' }
  } else {
    const schema = published(structural(source))
    if (flavour === 'v2') toV2(schema)
    out = { ...schema, properties: { ...(schema.properties as Schema | undefined), ...typeMeta(), metadata: ref(flavour, metaModel('ObjectMeta'), FIELD_DESCRIPTIONS.metadata) } }
    addEmbedded(out, flavour)
  }
  out['x-kubernetes-group-version-kind'] = [{ group: kind.group, kind: kind.kind, version: kind.version }]
  if (selectableFields.length) out['x-kubernetes-selectable-fields'] = selectableFields.map((p) => ({ fieldPath: p.replace(/^\./, '') }))
  return flavour === 'v2' ? withoutDefaults(out) : out
}

/** The list kind's schema (`AgentList`: items of the kind, ListMeta). */
export function listSchema(flavour: Flavour, kind: { group: string; version: string; kind: string; listKind: string; plural: string }, selectableFields: string[] = []): Schema {
  const out: Schema = {
    description: `${kind.listKind} is a list of ${kind.kind}`,
    type: 'object',
    required: ['items'],
    properties: {
      ...typeMeta(),
      items: {
        description: `List of ${kind.plural}. More info: ${CONVENTIONS}`,
        type: 'array',
        items: { $ref: refTarget(flavour, modelName(kind.group, kind.version, kind.kind)) },
      },
      metadata: ref(flavour, metaModel('ListMeta'), FIELD_DESCRIPTIONS.listMetadata),
    },
    'x-kubernetes-group-version-kind': [{ group: kind.group, kind: kind.listKind, version: kind.version }],
  }
  if (selectableFields.length) out['x-kubernetes-selectable-fields'] = selectableFields.map((p) => ({ fieldPath: p.replace(/^\./, '') }))
  return out
}

function typeMeta(): Schema {
  return {
    apiVersion: { description: FIELD_DESCRIPTIONS.apiVersion, type: 'string' },
    kind: { description: FIELD_DESCRIPTIONS.kind, type: 'string' },
  }
}

// The keys a structural schema keeps; anything else cannot be in a CRD the server accepted.
const STRUCTURAL_KEYS = new Set([
  'type', 'description', 'title', 'default', 'nullable', 'format', 'example', 'externalDocs',
  'maximum', 'exclusiveMaximum', 'minimum', 'exclusiveMinimum', 'maxLength', 'minLength', 'pattern',
  'maxItems', 'minItems', 'uniqueItems', 'multipleOf', 'enum', 'maxProperties', 'minProperties', 'required',
  'items', 'properties', 'additionalProperties', 'allOf', 'anyOf', 'oneOf', 'not',
  'x-kubernetes-preserve-unknown-fields', 'x-kubernetes-embedded-resource', 'x-kubernetes-int-or-string',
  'x-kubernetes-list-map-keys', 'x-kubernetes-list-type', 'x-kubernetes-map-type', 'x-kubernetes-validations',
])
// Published only when set: false, empty and zero-length values are what Go leaves out.
const FLAGS = ['nullable', 'exclusiveMaximum', 'exclusiveMinimum', 'uniqueItems', 'x-kubernetes-preserve-unknown-fields', 'x-kubernetes-embedded-resource', 'x-kubernetes-int-or-string']
const WHEN_NON_EMPTY = ['type', 'description', 'title', 'format', 'pattern', 'required', 'enum', 'x-kubernetes-list-map-keys', 'x-kubernetes-validations', 'properties', 'allOf', 'anyOf', 'oneOf', 'x-kubernetes-list-type', 'x-kubernetes-map-type']

/** Pure: a deep copy of the schema as the structural schema round trip leaves it. */
function structural(s: JSONSchemaProps): Schema {
  const out: Schema = {}
  for (const [key, value] of Object.entries(s)) {
    if (!STRUCTURAL_KEYS.has(key) || value === undefined || value === null) continue
    if (FLAGS.includes(key) && value !== true) continue
    if (WHEN_NON_EMPTY.includes(key) && (value === '' || (Array.isArray(value) && value.length === 0) || (typeof value === 'object' && !Array.isArray(value) && Object.keys(value as object).length === 0))) continue
    if (key === 'properties') out.properties = Object.fromEntries(Object.entries(value as Record<string, JSONSchemaProps>).map(([k, v]) => [k, structural(v)]))
    else if (key === 'items' || key === 'not') out[key] = structural(value as JSONSchemaProps)
    else if (key === 'additionalProperties') out[key] = typeof value === 'boolean' ? value : structural(value as JSONSchemaProps)
    else if (key === 'allOf' || key === 'anyOf' || key === 'oneOf') out[key] = (value as JSONSchemaProps[]).map(structural)
    else out[key] = structuredClone(value)
  }
  return out
}

const isIntOrStringPattern = (xs: unknown): boolean =>
  Array.isArray(xs) && xs.length === 2 && JSON.stringify(xs[0]) === '{"type":"integer"}' && JSON.stringify(xs[1]) === '{"type":"string"}'

/** Visits the schema's own nodes (root, properties, items, additionalProperties), parents first. */
function visit(s: Schema, fn: (node: Schema) => void): void {
  fn(s)
  if (s.items && typeof s.items === 'object') visit(s.items as Schema, fn)
  for (const p of Object.values((s.properties ?? {}) as Record<string, Schema>)) visit(p, fn)
  if (s.additionalProperties && typeof s.additionalProperties === 'object') visit(s.additionalProperties as Schema, fn)
}

/** Unfolds `x-kubernetes-int-or-string` into an anyOf of integer and string, as the server publishes it. */
function published(s: Schema): Schema {
  visit(s, (node) => {
    if (node['x-kubernetes-int-or-string'] !== true) return
    const allOf = node.allOf as Schema[] | undefined
    if (isIntOrStringPattern(node.anyOf) || isIntOrStringPattern(allOf?.[0]?.anyOf)) return
    const pattern = [{ type: 'integer' }, { type: 'string' }]
    if (!node.anyOf) node.anyOf = pattern
    else node.allOf = [{ anyOf: pattern }, ...(allOf ?? [])]
  })
  return s
}

/** What OpenAPI v2 cannot say, dropped in place. */
function toV2(s: Schema): void {
  visit(s, (node) => {
    for (const junctor of ['allOf', 'anyOf', 'oneOf', 'not']) delete node[junctor]
    if (node.nullable === true) {
      delete node.type
      delete node.nullable
      delete node.items
      delete node.properties
    }
    if (node['x-kubernetes-preserve-unknown-fields'] === true) {
      delete node.items
      delete node.properties
    }
    if (node.items === undefined && node.type === 'array') delete node.type
    if (node['x-kubernetes-preserve-unknown-fields'] === true && node.type === 'object') delete node.type
    const props = (node.properties ?? {}) as Record<string, Schema>
    const nullable = Object.keys(props).filter((k) => props[k]!.nullable === true)
    const additional = node.additionalProperties as Schema | undefined
    if (Array.isArray(node.required) && typeof additional === 'object' && additional.nullable === true) delete node.required
    else if (Array.isArray(node.required) && nullable.length) {
      const kept = (node.required as string[]).filter((r) => !nullable.includes(r))
      if (kept.length) node.required = kept
      else delete node.required
    }
  })
}

/** Gives every `x-kubernetes-embedded-resource` node apiVersion, kind and metadata (not in v2 where it keeps unknown fields). */
function addEmbedded(s: Schema, flavour: Flavour): void {
  for (const p of Object.values((s.properties ?? {}) as Record<string, Schema>)) addEmbedded(p, flavour)
  if (s.items && typeof s.items === 'object') addEmbedded(s.items as Schema, flavour)
  if (s.additionalProperties && typeof s.additionalProperties === 'object') addEmbedded(s.additionalProperties as Schema, flavour)
  if (flavour === 'v2' && s['x-kubernetes-preserve-unknown-fields'] === true) return
  if (s['x-kubernetes-embedded-resource'] !== true) return
  s.properties = {
    ...(s.properties as Schema | undefined),
    apiVersion: { description: FIELD_DESCRIPTIONS.embeddedApiVersion, type: 'string' },
    kind: { description: FIELD_DESCRIPTIONS.embeddedKind, type: 'string' },
    metadata: ref(flavour, metaModel('ObjectMeta'), FIELD_DESCRIPTIONS.metadata),
  }
  const required = [...((s.required as string[] | undefined) ?? [])]
  for (const r of ['kind', 'apiVersion']) if (!required.includes(r)) required.push(r)
  s.required = required
}

/** The schema without any `default` (v2 publishes none). */
function withoutDefaults(s: Schema): Schema {
  const out: Schema = {}
  for (const [k, v] of Object.entries(s)) {
    if (k === 'default') continue
    if (k === 'properties') out[k] = Object.fromEntries(Object.entries(v as Record<string, Schema>).map(([p, ps]) => [p, withoutDefaults(ps)]))
    else if ((k === 'items' || k === 'additionalProperties') && v && typeof v === 'object') out[k] = withoutDefaults(v as Schema)
    else out[k] = v
  }
  return out
}
