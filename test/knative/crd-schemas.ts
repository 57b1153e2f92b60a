import { readFileSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { Ajv, type ValidateFunction } from 'ajv'
import { referenceDir } from '../support/reference.js'
import { parseDocuments } from './manifests.js'

/** Knative's own CRDs (eventing and serving), from the reference material beside the project. */
export const CRD_DIR = join(referenceDir(), 'knative', 'crds')

type Schema = Record<string, any>

/**
 * Makes a CRD schema behave like the API server's pruning plus the Knative webhook's strict
 * decoding: an object that declares properties and does not preserve unknown fields rejects
 * any other property. Without this, ajv would accept a misspelled field silently.
 */
export function closeUnknownFields(schema: Schema): Schema {
  const out: Schema = { ...schema }
  if (out.properties) {
    out.properties = Object.fromEntries(Object.entries(out.properties as Record<string, Schema>)
      .map(([key, value]) => [key, closeUnknownFields(value)]))
    if (!out['x-kubernetes-preserve-unknown-fields'] && out.additionalProperties === undefined) {
      out.additionalProperties = false
    }
  }
  if (out.items) out.items = closeUnknownFields(out.items as Schema)
  if (out.additionalProperties && typeof out.additionalProperties === 'object') {
    out.additionalProperties = closeUnknownFields(out.additionalProperties as Schema)
  }
  return out
}

/** One validator per `<group>/<version>/<Kind>` for every served version of every CRD. */
export function loadCrdValidators(dir: string = CRD_DIR): Map<string, ValidateFunction> {
  // strict:false because CRD schemas carry x-kubernetes-* and openAPI keywords ajv does not know.
  const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: false })
  const validators = new Map<string, ValidateFunction>()
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.yaml'))) {
    for (const crd of parseDocuments(readFileSync(join(dir, file), 'utf8'), file)) {
      if (crd.kind !== 'CustomResourceDefinition') continue
      for (const version of crd.spec.versions as Schema[]) {
        if (!version.served) continue
        const schema = closeUnknownFields(version.schema.openAPIV3Schema as Schema)
        // apiVersion, kind and metadata are implied for every CRD; the schemas rarely list them.
        schema.properties = { apiVersion: { type: 'string' }, kind: { type: 'string' }, metadata: { type: 'object' }, ...schema.properties }
        validators.set(`${crd.spec.group}/${version.name}/${crd.spec.names.kind}`, ajv.compile(schema))
      }
    }
  }
  return validators
}

/**
 * Paths in `value` that use a field the schema marks "accessible behind a feature flag": Knative
 * Serving's webhook rejects those unless the cluster enables the flag.
 */
export function featureFlaggedFields(schema: Schema, value: unknown, path = ''): string[] {
  const flagged = typeof schema.description === 'string' && /behind a feature flag/.test(schema.description) ? [path] : []
  if (Array.isArray(value) && schema.items) {
    return [...flagged, ...value.flatMap((item, i) => featureFlaggedFields(schema.items as Schema, item, `${path}[${i}]`))]
  }
  if (value && typeof value === 'object' && schema.properties) {
    const properties = schema.properties as Record<string, Schema>
    return [...flagged, ...Object.entries(value).flatMap(([key, child]) =>
      properties[key] ? featureFlaggedFields(properties[key], child, `${path}.${key}`) : [])]
  }
  return flagged
}

/** The raw openAPIV3Schema of one served CRD version, by `<group>/<version>/<Kind>`. */
export function loadCrdSchema(key: string, dir: string = CRD_DIR): Schema {
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.yaml'))) {
    for (const crd of parseDocuments(readFileSync(join(dir, file), 'utf8'), file)) {
      if (crd.kind !== 'CustomResourceDefinition') continue
      for (const version of crd.spec.versions as Schema[]) {
        if (`${crd.spec.group}/${version.name}/${crd.spec.names.kind}` === key) return version.schema.openAPIV3Schema as Schema
      }
    }
  }
  throw new Error(`no CRD version ${key} in ${dir}`)
}
