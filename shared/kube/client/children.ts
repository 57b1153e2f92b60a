import { Observable, PatchStrategy, setHeaderOptions, type ConfigurationOptions, type ObservableMiddleware, type RequestContext, type ResponseContext } from '@kubernetes/client-node'
import { apiMessage, ConflictError, RefusedError } from '../../core/errors.js'
import { API_GROUP, API_VERSION_NAME } from '../../schemas/labels.js'
import type { ChildKind, ChildObject } from '../port.js'
import { apiStatus, classifyApiError, FIELD_MANAGER, itemsOf, selector, type KubeApi, type ResourceRef } from './kube-api.js'

/**
 * The core group is served under `/api/v1`, not `/apis/<group>/<version>`. Children of every
 * group go through CustomObjectsApi (plain JSON in and out: no typed models turning timestamps
 * into Dates or dropping fields), so core requests name this placeholder group and a
 * middleware moves them to the core path.
 */
const CORE_PLACEHOLDER = 'core.kinetic.invalid'
const CORE_PATH: ConfigurationOptions<ObservableMiddleware> = {
  middleware: [{
    pre: (request: RequestContext) => {
      request.setUrl(request.getUrl().replace(`/apis/${CORE_PLACEHOLDER}/v1/`, '/api/v1/'))
      return new Observable(Promise.resolve(request))
    },
    post: (response: ResponseContext) => new Observable(Promise.resolve(response)),
  }],
  middlewareMergeStrategy: 'append',
}

/** Where each recipe child kind is served (all namespaced). */
export const CHILD_RESOURCES: Record<ChildKind, ResourceRef> = {
  Secret: { group: '', version: 'v1', plural: 'secrets' },
  Service: { group: '', version: 'v1', plural: 'services' },
  Deployment: { group: 'apps', version: 'v1', plural: 'deployments' },
  StatefulSet: { group: 'apps', version: 'v1', plural: 'statefulsets' },
  DaemonSet: { group: 'apps', version: 'v1', plural: 'daemonsets' },
  Job: { group: 'batch', version: 'v1', plural: 'jobs' },
  CronJob: { group: 'batch', version: 'v1', plural: 'cronjobs' },
  MCPServer: { group: API_GROUP, version: API_VERSION_NAME, plural: 'mcpservers' },
  Workflow: { group: API_GROUP, version: API_VERSION_NAME, plural: 'workflows' },
  // A scheduled template's own PingSource (Knative Eventing).
  PingSource: { group: 'sources.knative.dev', version: 'v1', plural: 'pingsources' },
}

/** The CustomObjectsApi coordinates of a child kind, and the per-call options that reach it. */
function childRef(kind: ChildKind): { ref: ResourceRef; options: typeof CORE_PATH | undefined } {
  const resource = CHILD_RESOURCES[kind]
  if (!resource) throw new Error(`${String(kind)} is not a recipe child kind`)
  return resource.group === ''
    ? { ref: { ...resource, group: CORE_PLACEHOLDER }, options: CORE_PATH }
    : { ref: resource, options: undefined }
}

function childApiVersion(kind: ChildKind): string {
  const { group, version } = CHILD_RESOURCES[kind]
  return group === '' ? version : `${group}/${version}`
}

function withKind(kind: ChildKind, object: ChildObject): ChildObject {
  return { ...object, apiVersion: object.apiVersion ?? childApiVersion(kind), kind: object.kind ?? kind }
}

/**
 * Deletes a child with the given propagation: the port's `deleteChild`, and `deleteWorkflow`
 * (a Workflow is one kind of child). 404 and a failed uid precondition are not errors; a failed resourceVersion one is a
 * ConflictError.
 */
export async function deleteChildObject(
  api: KubeApi, kind: ChildKind, namespace: string, name: string, opts: { propagationPolicy: 'Foreground' | 'Background'; uid?: string; resourceVersion?: string },
): Promise<void> {
  const { ref, options } = childRef(kind)
  const preconditions = { ...(opts.uid ? { uid: opts.uid } : {}), ...(opts.resourceVersion ? { resourceVersion: opts.resourceVersion } : {}) }
  const body = { propagationPolicy: opts.propagationPolicy, ...(Object.keys(preconditions).length > 0 ? { preconditions } : {}) }
  try {
    await api.custom.deleteNamespacedCustomObject({ ...ref, namespace, name, propagationPolicy: opts.propagationPolicy, body }, options)
  } catch (err) {
    const code = apiStatus(err)
    if (code === 404) return
    // The version we read changed since: the caller re-reads and decides again.
    if (code === 409 && opts.resourceVersion) throw new ConflictError(`Could not delete ${kind} ${namespace}/${name}: it changed since it was read`, { cause: err })
    // A failed uid precondition: the object we meant is gone and another now holds the name.
    if (code === 409 && opts.uid) return
    throw classifyApiError(err, `Could not delete ${kind} ${namespace}/${name}`)
  }
}

/** The port's verbs over a recipe's children, any kind of CHILD_RESOURCES, as plain JSON. */
export function childVerbs(api: KubeApi) {
  return {
    async getChild(kind: ChildKind, namespace: string, name: string): Promise<ChildObject | null> {
      const { ref, options } = childRef(kind)
      const raw = await api.orNull(() => api.custom.getNamespacedCustomObject({ ...ref, namespace, name }, options), `get ${kind} ${namespace}/${name}`)
      return raw === null ? null : withKind(kind, raw as ChildObject)
    },

    async listChildren(kind: ChildKind, namespace: string, labels: Record<string, string>): Promise<ChildObject[]> {
      const { ref, options } = childRef(kind)
      const list = await api.call(
        () => api.custom.listNamespacedCustomObject({ ...ref, namespace, labelSelector: selector(labels) }, options),
        `list ${kind} in ${namespace}`,
      )
      // List items of built-in kinds come without apiVersion/kind; callers compare whole objects.
      return itemsOf(list).map((item) => withKind(kind, item as ChildObject))
    },

    async applyChild(manifest: ChildObject): Promise<ChildObject> {
      const kind = manifest.kind as ChildKind
      const { ref, options } = childRef(kind)
      const namespace = manifest.metadata?.namespace ?? 'default'
      const name = manifest.metadata?.name ?? ''
      const what = `apply ${kind} ${namespace}/${name}`
      try {
        // A JSON body is valid YAML, so the apply content type takes it as it is.
        const raw = await api.custom.patchNamespacedCustomObject(
          { ...ref, namespace, name, body: manifest, fieldManager: FIELD_MANAGER, force: true },
          setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply, options),
        )
        return withKind(kind, raw as ChildObject)
      } catch (err) {
        const code = apiStatus(err)
        if (code !== undefined && code >= 400 && code < 500 && code !== 409 && code !== 429) {
          throw new RefusedError(apiMessage({ cause: err }), code, { cause: err })
        }
        throw classifyApiError(err, `Could not ${what}`)
      }
    },

    async createChild(manifest: ChildObject): Promise<ChildObject> {
      const kind = manifest.kind as ChildKind
      const { ref, options } = childRef(kind)
      const namespace = manifest.metadata?.namespace ?? 'default'
      const what = `create ${kind} ${namespace}/${manifest.metadata?.name ?? ''}`
      try {
        const raw = await api.custom.createNamespacedCustomObject({ ...ref, namespace, body: manifest }, options)
        return withKind(kind, raw as ChildObject)
      } catch (err) {
        // The kind is not served here (a cluster without Knative, for PingSources), or admission refused it.
        const code = apiStatus(err)
        if (code === 404 || code === 422) throw new RefusedError(`Could not ${what}: ${apiMessage({ cause: err })}`, code, { cause: err })
        throw classifyApiError(err, `Could not ${what}`)
      }
    },

    async patchChild(kind: ChildKind, namespace: string, name: string, resourceVersion: string, patch: Record<string, unknown>): Promise<ChildObject> {
      const { ref, options } = childRef(kind)
      const meta = (patch.metadata ?? {}) as Record<string, unknown>
      const body = { ...patch, metadata: { ...meta, resourceVersion } }
      const what = `patch ${kind} ${namespace}/${name}`
      try {
        const raw = await api.custom.patchNamespacedCustomObject({ ...ref, namespace, name, body }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch, options))
        return withKind(kind, raw as ChildObject)
      } catch (err) {
        if (apiStatus(err) === 404) throw new ConflictError(`Could not ${what}: it no longer exists`, { cause: err })
        throw classifyApiError(err, `Could not ${what}`)
      }
    },

    async deleteChild(
      kind: ChildKind, namespace: string, name: string, opts: { propagationPolicy: 'Foreground' | 'Background'; uid?: string; resourceVersion?: string },
    ): Promise<void> {
      await deleteChildObject(api, kind, namespace, name, opts)
    },
  }
}
