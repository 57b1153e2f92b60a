// The garbage collector and the namespace controller, run inline: what follows when an object
// leaves the store (its dependents, a CRD's objects, an owner waiting on it, an emptied
// namespace), Foreground and Orphan deletion's finalizers, and emptying a deleted namespace.
import { ApiError } from '../api-error.js'
import type { ResourceType } from '../resource-type.js'
import type { KubeObject } from '../types.js'
import { definedResourceKey, isCrdResource } from './crd-registration.js'
import { trackFields } from './field-ownership.js'
import type { StoreState } from './state.js'
import type { Stored } from './store-types.js'

/** The garbage collector's finalizer for Foreground deletion. */
export const FOREGROUND = 'foregroundDeletion'
/** The garbage collector's finalizer for Orphan deletion. */
export const ORPHAN = 'orphan'

/** Removes an object for good: DELETED event, then dependents, CRD contents and namespace cleanup. */
export function removeObject(state: StoreState, rt: ResourceType, ns: string, name: string, finalObj: KubeObject): Stored {
  const stored = state.ledger.erase(rt, ns, name, finalObj)
  const uid = finalObj.metadata.uid
  if (isCrdResource(rt)) removeDefinedResource(state, finalObj)
  if (uid) collectDependents(state, uid)
  // An owner in Foreground deletion waits for its blocking dependents; this may have been the last.
  for (const ref of finalObj.metadata.ownerReferences ?? []) {
    const owner = ref?.uid ? state.table.locate(ref.uid) : undefined
    const ownerRt = owner && state.registry.byKey(owner.gr)
    if (owner && ownerRt) releaseGcFinalizer(state, ownerRt, owner.ns, owner.name)
  }
  if (rt.namespaced) finishNamespace(state, ns)
  return stored
}

/** Deletes the dependents of an owner that have no other living owner. */
export function deleteDependents(state: StoreState, ownerUid: string, propagationPolicy: 'Background' | 'Foreground'): void {
  for (const key of state.table.dependentKeys(ownerUid)) {
    const dep = dependent(state, key)
    if (!dep) continue
    const otherOwnerAlive = (dep.stored.obj.metadata.ownerReferences ?? []).some((ref) => ref.uid !== ownerUid && state.table.isLive(ref.uid))
    if (otherOwnerAlive) continue
    deleteIgnoringGone(state, dep.rt, dep.ns, dep.name, propagationPolicy)
  }
}

/** Strips an owner's references from its dependents, which stay. */
export function orphanDependents(state: StoreState, ownerUid: string): void {
  for (const key of state.table.dependentKeys(ownerUid)) {
    const dep = dependent(state, key)
    if (!dep) continue
    const next = structuredClone(dep.stored.obj)
    next.metadata.ownerReferences = (next.metadata.ownerReferences ?? []).filter((ref) => ref.uid !== ownerUid)
    if (next.metadata.ownerReferences.length === 0) delete next.metadata.ownerReferences
    // The collector's update only removes fields, so it owns nothing; the removed ones leave every manager.
    const t = { rt: dep.rt, version: dep.rt.storageVersion }
    trackFields(t, state.schemas.shapeOf(t), dep.stored.obj, next, { fieldManager: 'generic-garbage-collector' }, state.now)
    state.ledger.put(dep.rt, dep.ns, dep.name, state.ledger.serialize(next), dep.stored, 'MODIFIED')
  }
  state.table.forgetDependents(ownerUid)
}

/** Drops the garbage collector's finalizers once nothing blocks them; the object goes when no finalizer is left. */
export function releaseGcFinalizer(state: StoreState, rt: ResourceType, ns: string, name: string): void {
  const current = state.table.find(rt, ns, name)
  if (!current?.obj.metadata.deletionTimestamp) return
  const finalizers = current.obj.metadata.finalizers ?? []
  if (!finalizers.includes(FOREGROUND) && !finalizers.includes(ORPHAN)) return
  const uid = current.obj.metadata.uid as string
  const blocked = finalizers.includes(FOREGROUND) && state.table.dependentKeys(uid).some((key) => {
    const dep = dependent(state, key)
    return dep?.stored.obj.metadata.ownerReferences?.some((ref) => ref.uid === uid && ref.blockOwnerDeletion === true)
  })
  if (blocked) return
  const next = structuredClone(current.obj)
  const left = finalizers.filter((f) => f !== ORPHAN && f !== FOREGROUND)
  if (left.length) next.metadata.finalizers = left
  else delete next.metadata.finalizers
  if (left.length === 0) {
    removeObject(state, rt, ns, name, next)
    return
  }
  state.ledger.put(rt, ns, name, state.ledger.serialize(next), current, 'MODIFIED')
}

/** Deletes everything in a namespace that is being deleted. */
export function emptyNamespace(state: StoreState, ns: string): void {
  for (const rt of state.registry.all()) {
    if (!rt.namespaced) continue
    for (const name of state.table.namesIn(rt, ns)) deleteIgnoringGone(state, rt, ns, name, 'Background')
  }
}

/** Removes a terminating namespace once nothing is left in it; returns the removed object. */
export function finishNamespace(state: StoreState, ns: string): Stored | undefined {
  const nsRt = state.registry.byKey('namespaces') as ResourceType
  const current = state.table.find(nsRt, '', ns)
  if (!current?.obj.metadata.deletionTimestamp || current.obj.metadata.finalizers?.length) return undefined
  for (const rt of state.registry.all()) {
    if (rt.namespaced && state.table.hasAnyIn(rt, ns)) return undefined
  }
  return removeObject(state, nsRt, '', ns, structuredClone(current.obj))
}

/** The collector's cascade after an owner is gone: dependents whose owners are all gone are deleted. */
function collectDependents(state: StoreState, ownerUid: string): void {
  deleteDependents(state, ownerUid, 'Background')
  state.table.forgetDependents(ownerUid)
}

/** A deleted CRD takes its kind with it: every object of the kind, its history and its serving. */
function removeDefinedResource(state: StoreState, crd: KubeObject): void {
  const key = definedResourceKey(crd)
  const rt = state.registry.byKey(key)
  if (!rt?.crdName) return
  for (const [ns, byName] of state.table.resource(key) ?? []) {
    for (const [name, stored] of [...byName]) removeObject(state, rt, ns, name, structuredClone(stored.obj))
  }
  state.table.dropResource(key)
  state.history.stopServing(key)
  state.registry.unregister(key)
}

/** Deletes through the store's delete verb; an object already gone is fine. */
function deleteIgnoringGone(state: StoreState, rt: ResourceType, ns: string, name: string, propagationPolicy: 'Background' | 'Foreground'): void {
  try {
    state.deleteIn({ rt, version: rt.storageVersion }, ns, name, { propagationPolicy })
  } catch (err) {
    if (!(err instanceof ApiError && err.code === 404)) throw err
  }
}

/** A dependent named by the owner index, as it is now; undefined once it (or its kind) is gone. */
function dependent(state: StoreState, key: string): { rt: ResourceType; ns: string; name: string; stored: Stored } | undefined {
  const found = state.table.dependent(key)
  const rt = found && state.registry.byKey(found.gr)
  return found && rt ? { rt, ns: found.ns, name: found.name, stored: found.stored } : undefined
}
