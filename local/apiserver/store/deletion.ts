// The delete verb: preconditions, finalizers, graceful pods, and the propagation policies,
// which hand the dependents to the garbage collector.
import { ApiError, forbidden, notFound } from '../api-error.js'
import { timestamp } from '../object-meta.js'
import type { ResourceType } from '../resource-type.js'
import { deleteDependents, emptyNamespace, finishNamespace, FOREGROUND, ORPHAN, orphanDependents, releaseGcFinalizer, removeObject } from './garbage-collector.js'
import type { StoreState } from './state.js'
import type { DeleteOptions, Obj, Stored, Target, WriteResult } from './store-types.js'

/** Namespaces the real server refuses to delete. */
const PROTECTED_NAMESPACES = new Set(['default', 'kube-system', 'kube-public'])

/**
 * Deletes an object, honouring finalizers, preconditions and propagation. `deleted` is false
 * when the object stays for now (finalizers, or a Foreground/Orphan deletion that was still
 * waiting on dependents); `stored` is then the object as the real server answers with it.
 */
export function deleteObject(state: StoreState, t: Target, ns: string, name: string, opts: DeleteOptions): WriteResult {
  const { rt } = t
  const prev = state.table.find(rt, ns, name)
  if (!prev) throw notFound(rt, name)
  const meta = prev.obj.metadata
  const preconditionFailed = (detail: string) =>
    new ApiError(409, 'Conflict', `Operation cannot be fulfilled on ${rt.group ? `${rt.kind}.${rt.group}` : rt.kind} "${name}": ${detail}`, { name, group: rt.group, kind: rt.kind })
  if (opts.preconditions?.uid && opts.preconditions.uid !== meta.uid) {
    throw preconditionFailed(`the UID in the precondition (${opts.preconditions.uid}) does not match the UID in record (${meta.uid}). The object might have been deleted and then recreated`)
  }
  if (opts.preconditions?.resourceVersion && opts.preconditions.resourceVersion !== meta.resourceVersion) {
    throw preconditionFailed(`the ResourceVersion in the precondition (${opts.preconditions.resourceVersion}) does not match the ResourceVersion in record (${meta.resourceVersion}). The object might have been modified`)
  }
  const isNamespace = rt.kind === 'Namespace' && !rt.group
  if (isNamespace && PROTECTED_NAMESPACES.has(name)) {
    throw forbidden(`namespaces "${name}" is forbidden: this namespace may not be deleted`)
  }
  if (opts.dryRun) return { stored: prev, warnings: [], deleted: !(meta.finalizers?.length) }

  // Foreground and Orphan deletions go through the garbage collector's finalizer, as on the
  // real server: the owner is marked (deletionTimestamp plus the finalizer) and the answer is
  // that marked object; the collector, run inline here, then handles the dependents and
  // removes its finalizer, which deletes the owner once no other finalizer holds it.
  const gcFinalizer = isNamespace || !meta.uid ? undefined : opts.propagationPolicy === 'Foreground' ? FOREGROUND : opts.propagationPolicy === 'Orphan' ? ORPHAN : undefined
  if (gcFinalizer) {
    const marked = markDeleted(state, rt, ns, name, prev, gcFinalizer)
    if (gcFinalizer === ORPHAN) orphanDependents(state, meta.uid as string)
    else deleteDependents(state, meta.uid as string, 'Foreground')
    releaseGcFinalizer(state, rt, ns, name)
    return { stored: marked, warnings: [], deleted: false }
  }

  if (meta.finalizers?.length || isNamespace) {
    const current = meta.deletionTimestamp ? prev : markDeleted(state, rt, ns, name, prev)
    if (isNamespace) {
      emptyNamespace(state, name)
      const removed = finishNamespace(state, name)
      if (removed) return { stored: removed, warnings: [], deleted: true }
      if (!state.table.find(rt, ns, name)) return { stored: current, warnings: [], deleted: true }
    }
    return { stored: current, warnings: [], deleted: false }
  }
  const last = structuredClone(prev.obj)
  if (rt.kind === 'Pod' && !rt.group) {
    // Pods are deleted gracefully; one that never ran goes at once, with a zero grace period.
    last.metadata.deletionTimestamp = timestamp(state.now())
    last.metadata.deletionGracePeriodSeconds = 0
  }
  return { stored: removeObject(state, rt, ns, name, last), warnings: [], deleted: true }
}

/** Sets deletionTimestamp (bumping generation, as the real server does) and adds a finalizer; stores and returns the result. */
function markDeleted(state: StoreState, rt: ResourceType, ns: string, name: string, prev: Stored, finalizer?: string): Stored {
  const next = structuredClone(prev.obj)
  const meta = next.metadata
  const changed = !meta.deletionTimestamp || (finalizer !== undefined && !(meta.finalizers ?? []).includes(finalizer))
  if (!changed) return prev
  if (!meta.deletionTimestamp) {
    meta.deletionTimestamp = timestamp(state.now())
    // Namespaces are not deleted gracefully, so they get no grace period.
    if (!(rt.kind === 'Namespace' && !rt.group)) meta.deletionGracePeriodSeconds = 0
    if (meta.generation !== undefined) meta.generation += 1
    if (rt.kind === 'Namespace' && !rt.group) next.status = { ...(next.status as Obj | undefined), phase: 'Terminating' }
  }
  if (finalizer && !(meta.finalizers ?? []).includes(finalizer)) meta.finalizers = [...(meta.finalizers ?? []), finalizer]
  const stored = state.ledger.serialize(next)
  state.ledger.put(rt, ns, name, stored, prev, 'MODIFIED')
  return stored
}
