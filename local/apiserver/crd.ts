import { celCostCauses, schemaLocations } from '../../shared/crd/cel-budget.js'
import { invalid, notSupported, required } from '../../shared/crd/field-error.js'
import type { StatusCause } from './api-error.js'
import { compileJsonPath } from './jsonpath.js'
import type { ResourceType } from './resource-type.js'
import { printerColumns } from './table.js'
import type { KubeObject, PrinterColumn } from './types.js'
import { SchemaCompileError, type JSONSchemaProps, type SchemaValidator, type SchemaValidatorFactory } from './validation.js'

interface CrdVersion {
  name?: string
  served?: boolean
  storage?: boolean
  schema?: { openAPIV3Schema?: JSONSchemaProps }
  subresources?: { status?: object; scale?: object }
  additionalPrinterColumns?: PrinterColumn[]
  selectableFields?: { jsonPath?: string }[]
}

interface CrdSpec {
  group?: string
  scope?: string
  names?: { plural?: string; singular?: string; kind?: string; listKind?: string; shortNames?: string[]; categories?: string[] }
  versions?: CrdVersion[]
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/

/**
 * Checks a CustomResourceDefinition the way the real API server does for the parts that
 * matter here (names, versions, CEL rules that must compile and fit the server's cost budget)
 * and, when it is valid, builds the served resource type; otherwise returns causes.
 */
export function resourceTypeFromCrd(crd: KubeObject, factory: SchemaValidatorFactory): { type?: ResourceType; causes: StatusCause[] } {
  const spec = (crd.spec ?? {}) as CrdSpec
  const causes: StatusCause[] = []
  const req = (field: string): void => void causes.push(required(field))
  const names = spec.names ?? {}
  if (!spec.group) req('spec.group')
  if (!names.plural) req('spec.names.plural')
  else if (!DNS_LABEL.test(names.plural)) causes.push(invalid('spec.names.plural', names.plural, "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-'"))
  if (!names.kind) req('spec.names.kind')
  if (spec.scope !== 'Namespaced' && spec.scope !== 'Cluster') {
    causes.push(notSupported('spec.scope', spec.scope ?? '', ['Cluster', 'Namespaced']))
  }
  if (spec.group && names.plural && crd.metadata.name !== `${names.plural}.${spec.group}`) {
    causes.push(invalid('metadata.name', crd.metadata.name, 'must be spec.names.plural+"."+spec.group'))
  }
  const versions = spec.versions ?? []
  if (versions.length === 0) req('spec.versions')
  const storage = versions.filter((v) => v.storage)
  if (versions.length && storage.length !== 1) {
    // Known difference: the real server shows every version in full (its internal structs) as the value.
    causes.push(invalid('spec.versions', versions.map((v) => v.name), 'must have exactly one version marked as storage version'))
  }
  const validators = new Map<string, SchemaValidator>()
  const columns = new Map<string, ReturnType<typeof printerColumns>>()
  // A schema every version shares is checked once, under spec.validation, as on the real server.
  const shared = schemaLocations(crd as { spec?: CrdSpec })[0]?.field.startsWith('spec.validation') === true
  versions.forEach((v, i) => {
    if (!v.name) req(`spec.versions[${i}].name`)
    const schema = v.schema?.openAPIV3Schema
    if (!schema) req(`spec.versions[${i}].schema.openAPIV3Schema`)
    else {
      try {
        if (v.name) validators.set(v.name, factory(schema))
      } catch (err) {
        if (!(err instanceof SchemaCompileError)) throw err
        if (!shared || i === 0) for (const c of err.causes) causes.push({ ...c, field: `${shared ? 'spec.validation' : `spec.versions[${i}].schema`}.${c.field}` })
      }
    }
    for (const [j, c] of (v.additionalPrinterColumns ?? []).entries()) {
      try {
        compileJsonPath(c.jsonPath)
      } catch (err) {
        causes.push(invalid(`spec.versions[${i}].additionalPrinterColumns[${j}].jsonPath`, c.jsonPath, (err as Error).message))
      }
    }
    if (v.name && causes.length === 0) columns.set(v.name, printerColumns(v.additionalPrinterColumns))
  })
  causes.push(...celCostCauses(crd as { spec?: CrdSpec }))
  if (causes.length) return { causes }
  const served = versions.filter((v) => v.served !== false).map((v) => v.name as string)
  const storageVersion = storage[0]?.name as string
  const kind = names.kind as string
  // What the OpenAPI documents are built from, safe from later changes to the CRD object.
  const published = structuredClone(versions)
  const type: ResourceType = {
    group: spec.group as string,
    versions: served,
    storageVersion,
    plural: names.plural as string,
    singular: names.singular || kind.toLowerCase(),
    kind,
    listKind: names.listKind || `${kind}List`,
    namespaced: spec.scope === 'Namespaced',
    shortNames: names.shortNames ?? [],
    categories: names.categories ?? [],
    statusSubresource: versions.some((v) => v.subresources?.status !== undefined),
    extraSubresources: [],
    returnDeletedObject: false,
    columns: (version) => columns.get(version) ?? [],
    validator: (version) => validators.get(version),
    crdName: crd.metadata.name as string,
    openApiSchema: (version) => published.find((v) => v.name === version)?.schema?.openAPIV3Schema,
    selectableFields: (version) => (published.find((v) => v.name === version)?.selectableFields ?? []).flatMap((f) => (f.jsonPath ? [f.jsonPath] : [])),
  }
  return { type, causes }
}

/** The status the real server reports once a CRD's names are accepted and it is established. */
export function establishedStatus(crd: KubeObject, now: string): Record<string, unknown> {
  const spec = (crd.spec ?? {}) as CrdSpec
  const storage = (spec.versions ?? []).find((v) => v.storage)?.name
  const condition = (type: string, reason: string, message: string) => ({ type, status: 'True', lastTransitionTime: now, reason, message })
  return {
    acceptedNames: { ...spec.names, singular: spec.names?.singular || spec.names?.kind?.toLowerCase(), listKind: spec.names?.listKind || `${spec.names?.kind}List` },
    conditions: [
      condition('NamesAccepted', 'NoConflicts', 'no conflicts found'),
      condition('Established', 'InitialNamesAccepted', 'the initial names have been accepted'),
    ],
    storedVersions: storage ? [storage] : [],
  }
}
