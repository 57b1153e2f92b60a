import type { ColumnDefinition, KubeObject } from './types.js'
import type { JSONSchemaProps, SchemaValidator } from './validation.js'

/** One Table column: its definition plus how to compute the cell for an object. */
export interface TableColumn {
  definition: ColumnDefinition
  cell(obj: KubeObject, now: number): unknown
}

/** Everything the server knows about one served resource (built-in or from a CRD). */
export interface ResourceType {
  /** API group; '' for the core group. */
  group: string
  /** Served versions, preferred first. */
  versions: string[]
  /** The version objects are stored at (their `apiVersion` in the store). */
  storageVersion: string
  plural: string
  singular: string
  kind: string
  listKind: string
  namespaced: boolean
  shortNames: string[]
  categories: string[]
  /** True when writes to the main resource ignore `.status` and `/status` writes only `.status`. */
  statusSubresource: boolean
  /** Extra read-only subresources (for example `log` on pods). */
  extraSubresources: string[]
  /** The real server answers DELETE with the object for these (pods, services, namespaces, CRDs); others get a Status. */
  returnDeletedObject: boolean
  /** Table columns for a given served version (Name is added first unless `ownNameColumn`). */
  columns(version: string): TableColumn[]
  /** True when `columns` already places the name (Events lead with Last Seen). */
  ownNameColumn?: boolean
  /** Schema enforcement for a served version; undefined for schema-less built-ins. */
  validator?(version: string): SchemaValidator | undefined
  /** The CRD that defines this resource, when it is a custom resource. */
  crdName?: string
  /** A custom resource's openAPIV3Schema for a served version (what its OpenAPI schema is built from). */
  openApiSchema?(version: string): JSONSchemaProps | undefined
  /** A custom resource's `selectableFields` JSONPaths for a served version. */
  selectableFields?(version: string): string[]
  /** A built-in kind's top-level fields besides apiVersion, kind and metadata; the decoder drops others. */
  topLevelFields?: string[]
  /** True when objects carry `metadata.generation` (kinds with a spec the server tracks; every custom resource). */
  generation?: boolean
  /**
   * Field selectors the kind supports beyond `metadata.name` and `metadata.namespace`, and how
   * the real server words the refusal of any other field.
   */
  fieldSelectors?: { fields: string[]; refusal: FieldSelectorRefusal }
}

/**
 * The three wordings kube-apiserver v1.34 uses for an unsupported field selector:
 * `"x" is not a known field selector: only "metadata.name", "metadata.namespace"` (`known`),
 * `field label not supported: x` (`label`), `field label "x" not supported for Job` (`kind`).
 */
export type FieldSelectorRefusal = 'known' | 'label' | 'kind'

/** True when the kind's objects carry `metadata.generation`. */
export function tracksGeneration(rt: ResourceType): boolean {
  return rt.generation === true || rt.crdName !== undefined
}

/** The field selectors a kind accepts, and its refusal wording (custom resources: name and namespace, `label`). */
export function fieldSelectorsOf(rt: ResourceType): { fields: string[]; refusal: FieldSelectorRefusal } {
  const own = rt.fieldSelectors ?? { fields: [], refusal: rt.crdName ? 'label' : 'known' }
  const meta = rt.namespaced || rt.kind !== 'Namespace' ? ['metadata.name', 'metadata.namespace'] : ['metadata.name']
  return { fields: [...meta, ...own.fields], refusal: own.refusal }
}

/** `configmaps`, `jobs.batch`, `workflows.purko.io`: the key the store and messages use. */
export function groupResource(rt: Pick<ResourceType, 'group' | 'plural'>): string {
  return rt.group ? `${rt.plural}.${rt.group}` : rt.plural
}

/** `v1` for the core group, `group/version` otherwise. */
export function apiVersionOf(group: string, version: string): string {
  return group ? `${group}/${version}` : version
}

/** Splits an apiVersion into group and version (`v1` has group ''). */
export function splitApiVersion(apiVersion: string): { group: string; version: string } {
  const slash = apiVersion.indexOf('/')
  return slash < 0 ? { group: '', version: apiVersion } : { group: apiVersion.slice(0, slash), version: apiVersion.slice(slash + 1) }
}
