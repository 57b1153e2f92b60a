import { readFileSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { Ajv, type ValidateFunction } from 'ajv'
import { parseDocuments, ROOT } from './manifests.js'

/** Knative's own CRDs, copied from the eventing and serving repositories (see SOURCES.txt). */
export const CRD_DIR = join(ROOT, 'test', 'fixtures', 'knative-crds')

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
