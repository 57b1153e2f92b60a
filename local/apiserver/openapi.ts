import { SERVER_VERSION, servedGroupVersions } from './discovery.js'
import type { ResourceRegistry } from './resource-registry.js'

/**
 * Minimal OpenAPI v3 documents. kubectl reads them to learn that the server validates fields
 * itself (the `fieldValidation` query parameter on each kind's PATCH operation); with that
 * answer it sends manifests as they are and lets the server report unknown or invalid fields.
 * No component schemas are published, so kubectl falls back to its built-in types for
 * strategic merge patches and never needs the v2 document.
 */

const gvPath = (group: string, version: string): string => (group ? `apis/${group}/${version}` : `api/${version}`)

/** GET /openapi/v3: the index of per-group-version documents. */
export function openApiV3Index(registry: ResourceRegistry): object {
  const paths: Record<string, { serverRelativeURL: string }> = {}
  for (const { group, version } of servedGroupVersions(registry)) {
    const p = gvPath(group, version)
    paths[p] = { serverRelativeURL: `/openapi/v3/${p}?hash=${registry.revision}` }
  }
  return { paths }
}

const queryParam = (name: string) => ({ name, in: 'query', schema: { type: 'string', uniqueItems: true } })

/** GET /openapi/v3/api/v1 or /openapi/v3/apis/<group>/<version>; undefined when not served. */
export function openApiV3Document(registry: ResourceRegistry, group: string, version: string): object | undefined {
  const rts = registry.all().filter((rt) => rt.group === group && rt.versions.includes(version))
  if (!rts.length) return undefined
  const paths: Record<string, object> = {}
  const prefix = `/${gvPath(group, version)}`
  for (const rt of rts) {
    const gvk = { group, version, kind: rt.kind }
    const base = rt.namespaced ? `${prefix}/namespaces/{namespace}/${rt.plural}` : `${prefix}/${rt.plural}`
    const op = (verb: string, action: string) => ({
      operationId: `${verb}${rt.kind}`,
      'x-kubernetes-action': action,
      'x-kubernetes-group-version-kind': gvk,
      parameters: [queryParam('dryRun'), queryParam('fieldManager'), queryParam('fieldValidation')],
      responses: { '200': { description: 'OK' } },
    })
    paths[base] = { post: op('create', 'post') }
    paths[`${base}/{name}`] = { put: op('replace', 'put'), patch: { ...op('patch', 'patch'), parameters: [queryParam('dryRun'), queryParam('fieldManager'), queryParam('fieldValidation'), queryParam('force')] } }
  }
  return {
    openapi: '3.0.0',
    info: { title: 'Kubernetes', version: SERVER_VERSION.gitVersion },
    paths,
    components: { schemas: {} },
  }
}
