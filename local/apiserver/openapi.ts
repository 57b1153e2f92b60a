import { createHash } from 'node:crypto'
import { SERVER_VERSION, servedGroupVersions } from './discovery.js'
import { kindSchema, listSchema, modelName, type Flavour } from './openapi-crd.js'
import { metaSchemas } from './openapi-meta.js'
import type { ResourceRegistry } from './resource-registry.js'
import type { ResourceType } from './resource-type.js'

/**
 * The OpenAPI documents: v3 per group-version (`/openapi/v3/apis/<group>/<version>`, listed by
 * `/openapi/v3` with a content hash) and the one v2 document (`/openapi/v2`). Custom resource
 * kinds get their published schemas (`openapi-crd.ts`, what `kubectl explain` reads) and the
 * meta types they refer to. Built-in kinds, which this server keeps schema-less, have none.
 * Each kind's create, replace and patch operations declare the `fieldValidation` parameter, so
 * kubectl leaves field validation to the server and reports its errors.
 */

const gvPath = (group: string, version: string): string => (group ? `apis/${group}/${version}` : `api/${version}`)
const RELEASE = `${SERVER_VERSION.major}.${SERVER_VERSION.minor}`

const served = (registry: ResourceRegistry, group: string, version: string): ResourceType[] =>
  registry.all().filter((rt) => rt.group === group && rt.versions.includes(version))

/** The operations kubectl looks at: create, replace and patch with their query parameters. */
function paths(flavour: Flavour, rts: ResourceType[], version: string): Record<string, object> {
  const param = (name: string) =>
    flavour === 'v3' ? { name, in: 'query', schema: { type: 'string', uniqueItems: true } } : { uniqueItems: true, type: 'string', name, in: 'query' }
  const out: Record<string, object> = {}
  for (const rt of rts) {
    const gvk = { group: rt.group, version, kind: rt.kind }
    const prefix = `/${gvPath(rt.group, version)}`
    const base = rt.namespaced ? `${prefix}/namespaces/{namespace}/${rt.plural}` : `${prefix}/${rt.plural}`
    const op = (verb: string, action: string, extra: string[] = []) => ({
      operationId: `${verb}${rt.kind}`,
      parameters: ['dryRun', 'fieldManager', 'fieldValidation', ...extra].map(param),
      responses: { '200': { description: 'OK' } },
      'x-kubernetes-action': action,
      'x-kubernetes-group-version-kind': gvk,
    })
    out[base] = { post: op('create', 'post') }
    out[`${base}/{name}`] = { put: op('replace', 'put'), patch: op('patch', 'patch', ['force']) }
  }
  return out
}

/** The group-versions of built-in kinds (where DeleteOptions is registered). */
const builtInGroupVersions = (registry: ResourceRegistry) =>
  servedGroupVersions(registry).filter(({ group, version }) => served(registry, group, version).some((rt) => !rt.crdName))

/** The schemas of the custom resource kinds served at a version, with their lists. */
function kindSchemas(flavour: Flavour, rts: ResourceType[], version: string): Record<string, object> {
  const out: Record<string, object> = {}
  for (const rt of rts) {
    const kind = { group: rt.group, version, kind: rt.kind, listKind: rt.listKind, plural: rt.plural }
    const selectable = rt.selectableFields?.(version) ?? []
    out[modelName(rt.group, version, rt.kind)] = kindSchema(flavour, kind, rt.openApiSchema?.(version), selectable)
    out[modelName(rt.group, version, rt.listKind)] = listSchema(flavour, kind, selectable)
  }
  return out
}

/** GET /openapi/v3/api/v1 or /openapi/v3/apis/<group>/<version>; undefined when not served. */
export function openApiV3Document(registry: ResourceRegistry, group: string, version: string): object | undefined {
  const rts = served(registry, group, version)
  if (!rts.length) return undefined
  const custom = rts.filter((rt) => rt.crdName)
  if (!custom.length) return { openapi: '3.0.0', info: { title: 'Kubernetes', version: RELEASE }, paths: paths('v3', rts, version), components: { schemas: {} } }
  return {
    openapi: '3.0.0',
    info: { title: 'Kubernetes CRD Swagger', version: 'v0.1.0' },
    paths: paths('v3', custom, version),
    components: { schemas: { ...metaSchemas('v3', builtInGroupVersions(registry)), ...kindSchemas('v3', custom, version) } },
  }
}

const hashes = new WeakMap<ResourceRegistry, { revision: number; byPath: Map<string, string> }>()

/** The document's content hash, as the index names it (clients cache a document by its URL). */
function contentHash(registry: ResourceRegistry, group: string, version: string): string {
  let cache = hashes.get(registry)
  if (!cache || cache.revision !== registry.revision) {
    cache = { revision: registry.revision, byPath: new Map() }
    hashes.set(registry, cache)
  }
  const key = gvPath(group, version)
  let hash = cache.byPath.get(key)
  if (hash === undefined) {
    hash = createHash('sha512').update(JSON.stringify(openApiV3Document(registry, group, version) ?? null)).digest('hex').toUpperCase()
    cache.byPath.set(key, hash)
  }
  return hash
}

/** GET /openapi/v3: the index of per-group-version documents. */
export function openApiV3Index(registry: ResourceRegistry): object {
  const index: Record<string, { serverRelativeURL: string }> = {}
  for (const { group, version } of servedGroupVersions(registry)) {
    const p = gvPath(group, version)
    index[p] = { serverRelativeURL: `/openapi/v3/${p}?hash=${contentHash(registry, group, version)}` }
  }
  return { paths: index }
}

/** GET /openapi/v2: every served kind's operations and every custom resource kind's schema. */
export function openApiV2Document(registry: ResourceRegistry): object {
  const paths2: Record<string, object> = {}
  const definitions: Record<string, object> = metaSchemas('v2', builtInGroupVersions(registry))
  for (const { group, version } of servedGroupVersions(registry)) {
    const rts = served(registry, group, version)
    Object.assign(paths2, paths('v2', rts, version))
    Object.assign(definitions, kindSchemas('v2', rts.filter((rt) => rt.crdName), version))
  }
  return { swagger: '2.0', info: { title: 'Kubernetes', version: RELEASE }, paths: paths2, definitions }
}
