// The patch verb: JSON merge, JSON and strategic merge patches become updates; server-side
// apply merges a configuration along the schema with field ownership (../managed-fields.ts).
import { ApiError, badRequest, conflict, notFound } from '../api-error.js'
import { pruneDecoded, strictPatchError, typedPatchError } from '../decoding.js'
import { KUBECTL_APPLY_MANAGER, syncLastApplied, takeoverFields } from '../last-applied.js'
import { planApply, readEntries } from '../managed-fields.js'
import { jsonPatch, mergePatch, strategicMergePatch } from '../patch.js'
import type { KubeObject } from '../types.js'
import { writerFor } from './field-ownership.js'
import { jsonAt } from './object-views.js'
import { sortUnknown } from './schema-checks.js'
import type { StoreState } from './state.js'
import { isObj, type Obj, type PatchOptions, type Stored, type Target, type WriteResult } from './store-types.js'
import { createObject, updateObject } from './create-update.js'

/** Patches an object; server-side apply creates it when missing. */
export function patchObject(state: StoreState, t: Target, ns: string, name: string, patch: unknown, opts: PatchOptions): WriteResult {
  const { rt } = t
  const prev = state.table.find(rt, ns, name)
  if (opts.type === 'apply') return applyObject(state, t, ns, name, prev, patch, opts)
  if (!prev) throw notFound(rt, name)
  // Parsing the cached JSON is the cheapest deep copy of a stored object.
  const base = JSON.parse(jsonAt(prev, t)) as Obj
  let next: unknown
  switch (opts.type) {
    case 'merge':
      next = mergePatch(base, patch)
      break
    case 'json':
      next = jsonPatch(base, patch)
      break
    case 'strategic':
      if (rt.crdName) {
        throw new ApiError(415, 'UnsupportedMediaType', 'the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml')
      }
      next = strategicMergePatch(base, patch)
      break
  }
  if (!isObj(next)) throw badRequest('the patch must produce an object')
  if (opts.fieldValidation === 'Strict') {
    const probe = structuredClone(next) as KubeObject
    const unknown = sortUnknown(rt, [...pruneDecoded(rt, probe), ...state.schemas.unknownIn(t, probe)])
    if (unknown.length) throw strictPatchError(next, unknown)
  }
  const meta = (isObj(next.metadata) ? next.metadata : (next.metadata = {})) as Obj
  if (meta.resourceVersion !== undefined && meta.resourceVersion !== prev.obj.metadata.resourceVersion) throw conflict(rt, name)
  meta.resourceVersion = prev.obj.metadata.resourceVersion
  return updateObject(state, t, ns, name, next, opts)
}

/**
 * Server-side apply: the configuration merged into the live object along the schema, fields
 * this manager applied before and no longer does removed, and 409 for fields other managers
 * own unless `force`. A missing object is created (201).
 */
function applyObject(state: StoreState, t: Target, ns: string, name: string, prev: Stored | undefined, patch: unknown, opts: PatchOptions): WriteResult {
  const { rt } = t
  if (!opts.fieldManager) {
    throw new ApiError(422, 'Invalid', 'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch', {
      group: 'meta.k8s.io', kind: 'PatchOptions',
      causes: [{ reason: 'FieldValueRequired', message: 'Required value: is required for apply patch', field: 'fieldManager' }],
    })
  }
  if (!isObj(patch)) throw badRequest('the applied configuration must be an object')
  if (typeof patch.apiVersion !== 'string' || typeof patch.kind !== 'string' || !patch.apiVersion || !patch.kind) {
    const av = typeof patch.apiVersion === 'string' ? patch.apiVersion : ''
    throw badRequest(`invalid object type: ${av.includes('/') ? av : `/${av}`}, Kind=${typeof patch.kind === 'string' ? patch.kind : ''}`)
  }
  const meta = (isObj(patch.metadata) ? patch.metadata : {}) as Obj
  if (meta.name !== undefined && meta.name !== name) {
    throw badRequest(`the name of the object (${String(meta.name)}) does not match the name on the URL (${name})`)
  }
  const probe = structuredClone(patch) as KubeObject
  if (isObj(probe.metadata)) delete probe.metadata.managedFields
  const unknown = [...pruneDecoded(rt, probe), ...state.schemas.unknownIn(t, probe)]
  if (unknown.length) throw typedPatchError(rt, t.version, String(meta.namespace ?? ''), name, unknown)
  if (!prev && opts.subresource === 'status') throw notFound(rt, name)

  const live = prev ? (JSON.parse(jsonAt(prev, t)) as Obj) : undefined
  const writer = writerFor(t, opts.fieldManager, 'Apply', state.now, opts.subresource)
  const applied = { ...patch, metadata: { ...meta, name } }
  const shape = state.schemas.shapeOf(t)
  const byKubectl = opts.fieldManager === KUBECTL_APPLY_MANAGER
  const plan = planApply(live, applied, shape, readEntries((live?.metadata as Obj | undefined)?.managedFields), writer, opts.force === true, byKubectl ? takeoverFields(live, shape) : undefined)
  if (byKubectl) plan.merged = syncLastApplied(plan.merged, patch)
  if (!prev) return createObject(state, t, plan.merged, rt.namespaced ? ns : undefined, { ...opts, managed: plan.entries })
  const merged = plan.merged as KubeObject
  if (!isObj(merged.metadata)) merged.metadata = {}
  merged.metadata.resourceVersion ??= prev.obj.metadata.resourceVersion as string
  return updateObject(state, t, ns, name, merged, { ...opts, managed: plan.entries })
}
