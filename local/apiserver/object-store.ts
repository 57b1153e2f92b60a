import { randomUUID } from 'node:crypto'
import {
  alreadyExists,
  ApiError,
  badRequest,
  conflict,
  forbidden,
  formatCause,
  invalid,
  noSuchResource,
  notFound,
} from './api-error.js'
import { builtinResources } from './builtin-resources.js'
import { deepEqual, generatedName, nameCauses, specChanged, timestamp } from './object-meta.js'
import { bodyHint, pruneDecoded, strictPatchError, typedPatchError } from './decoding.js'
import { KUBECTL_APPLY_MANAGER, syncLastApplied, takeoverFields } from './last-applied.js'
import { planApply, readEntries, type ManagerEntry } from './managed-fields.js'
import { jsonPatch, mergePatch, strategicMergePatch } from './patch.js'
import { ResourceRegistry } from './resource-registry.js'
import { apiVersionOf, groupResource, tracksGeneration, type ResourceType } from './resource-type.js'
import { parseFieldSelector, parseLabelSelector, type FieldSelectorRules } from './selectors.js'
import type { KubeObject, WatchEvent, WatchEventType } from './types.js'
import { invalid as invalidField } from '../../shared/crd/field-error.js'
import { definedResourceKey, isCrdResource, serveCrd } from './store/crd-registration.js'
import { trackFields, writerFor } from './store/field-ownership.js'
import { decodeDefaults, prepareCreate, prepareUpdate } from './store/kind-strategies.js'
import { Ledger } from './store/ledger.js'
import * as listing from './store/listing.js'
import { ObjectTable } from './store/object-table.js'
import * as views from './store/object-views.js'
import { isTerminalPod, PodLogs } from './store/pod-logs.js'
import { SchemaChecks, sortUnknown } from './store/schema-checks.js'
import {
  isObj,
  MAX_OBJECT_BYTES,
  type DeleteOptions,
  type ListOptions,
  type ListPage,
  type ManagerOptions,
  type Obj,
  type PatchOptions,
  type Stored,
  type StoreOptions,
  type Target,
  type TypeRef,
  type WatchHandle,
  type WatchOptions,
  type WatchSink,
  type WriteOptions,
  type WriteResult,
} from './store/store-types.js'
import { WatchHistory, type Watcher } from './store/watch-history.js'

const DEFAULT_NAMESPACES = ['default', 'kube-system', 'kube-public', 'kube-node-lease', 'ai-agents', 'purko-system']
const PROTECTED_NAMESPACES = new Set(['default', 'kube-system', 'kube-public'])
/** The garbage collector's finalizers for Foreground and Orphan deletion. */
const FOREGROUND = 'foregroundDeletion'
const ORPHAN = 'orphan'

/**
 * The in-memory object store behind the embedded API server: every verb, watch, finalizers,
 * cascade deletion and CRD registration. The HTTP layer and in-process callers (the Knative
 * emulation, the Job runner) share the same code paths, so they see the same semantics.
 * Every method is synchronous; failures throw `ApiError` carrying the Kubernetes Status.
 */
export class ObjectStore {
  /** The served resources; CRDs add to it as they are created. */
  readonly registry = new ResourceRegistry()
  private readonly table = new ObjectTable()
  private readonly logs = new PodLogs()
  private readonly history: WatchHistory
  private readonly ledger: Ledger
  private readonly checks: SchemaChecks
  private readonly now: () => Date

  constructor(opts: StoreOptions = {}) {
    this.history = new WatchHistory(opts.historySize ?? 10_000)
    this.ledger = new Ledger(this.table, this.history, this.logs, opts.maxObjectBytes ?? MAX_OBJECT_BYTES)
    this.checks = new SchemaChecks(this.table)
    this.now = opts.now ?? (() => new Date())
    for (const rt of builtinResources()) this.registry.register(rt)
    for (const ns of opts.namespaces ?? DEFAULT_NAMESPACES) this.ensureNamespace(ns)
  }

  /** The current global resourceVersion (a string integer, as on the wire). */
  get resourceVersion(): string {
    return String(this.ledger.resourceVersion)
  }

  // ---------------------------------------------------------------- in-process API

  /** Resolves `{apiVersion, kind}` to a served resource; 404 when nothing serves it. */
  target(type: TypeRef): Target {
    const rt = this.registry.byKind(type.apiVersion, type.kind)
    if (!rt) throw noSuchResource()
    const slash = type.apiVersion.indexOf('/')
    return { rt, version: slash < 0 ? type.apiVersion : type.apiVersion.slice(slash + 1) }
  }

  /** A copy of the object, or undefined when it does not exist. */
  get(type: TypeRef, namespace: string | undefined, name: string): KubeObject | undefined {
    const t = this.target(type)
    const s = this.find(t.rt, this.nsFor(t.rt, namespace), name)
    return s ? views.copyAt(s, t) : undefined
  }

  /** Copies of the matching objects plus the list's resourceVersion. */
  list(type: TypeRef, opts: ListOptions = {}): { items: KubeObject[]; resourceVersion: string; continue?: string } {
    const t = this.target(type)
    const page = this.listIn(t, opts)
    const out: { items: KubeObject[]; resourceVersion: string; continue?: string } = {
      items: page.items.map((s) => views.copyAt(s, t)),
      resourceVersion: page.resourceVersion,
    }
    if (page.continue) out.continue = page.continue
    return out
  }

  /** Creates the object (kind from its apiVersion/kind); 409 when it exists, 422 when invalid. */
  create(obj: KubeObject, opts: WriteOptions = {}): KubeObject {
    const t = this.target(obj)
    return views.copyAt(this.createIn(t, structuredClone(obj), undefined, opts).stored, t)
  }

  /** Replaces the object (or only its status); 409 when `metadata.resourceVersion` is stale. */
  update(obj: KubeObject, opts: WriteOptions & { subresource?: 'status' } = {}): KubeObject {
    const t = this.target(obj)
    const name = obj.metadata?.name
    if (!name) throw badRequest('name is required')
    return views.copyAt(this.updateIn(t, this.nsFor(t.rt, obj.metadata.namespace), name, structuredClone(obj), opts).stored, t)
  }

  /** Applies a merge, JSON, strategic or server-side-apply patch. */
  patch(type: TypeRef, namespace: string | undefined, name: string, patch: unknown, opts: PatchOptions): KubeObject {
    const t = this.target(type)
    return views.copyAt(this.patchIn(t, this.nsFor(t.rt, namespace), name, structuredClone(patch), opts).stored, t)
  }

  /**
   * Deletes the object; returns its last state. While finalizers remain the object stays,
   * with `deletionTimestamp` set. Dependents (by ownerReference uid) are deleted too.
   */
  delete(type: TypeRef, namespace: string | undefined, name: string, opts: DeleteOptions = {}): KubeObject {
    const t = this.target(type)
    return views.copyAt(this.deleteIn(t, this.nsFor(t.rt, namespace), name, opts).stored, t)
  }

  /**
   * Watches a kind; events arrive asynchronously and in order, as copies. A resourceVersion
   * older than the retained history throws ApiError 410 (Expired).
   */
  watch(type: TypeRef, opts: WatchOptions, onEvent: (event: WatchEvent) => void): WatchHandle {
    const t = this.target(type)
    const queue: WatchEvent[] = []
    let scheduled = false
    let stopped = false
    const flush = (): void => {
      scheduled = false
      while (queue.length && !stopped) onEvent(queue.shift() as WatchEvent)
    }
    const push = (e: WatchEvent): void => {
      queue.push(e)
      if (!scheduled) {
        scheduled = true
        queueMicrotask(flush)
      }
    }
    const kind = t.rt.kind
    const apiVersion = apiVersionOf(t.rt.group, t.version)
    const stop = this.watchIn(t, opts, {
      event: (type, stored) => push({ type, object: views.copyAt(stored, t) }),
      bookmark: (rv, initialEnd) => {
        const metadata: KubeObject['metadata'] = { resourceVersion: rv }
        if (initialEnd) metadata.annotations = { 'k8s.io/initial-events-end': 'true' }
        push({ type: 'BOOKMARK', object: { apiVersion, kind, metadata } })
      },
    })
    return {
      stop: () => {
        stopped = true
        stop()
      },
    }
  }

  /** Appends text to a pod's log (what `GET .../pods/<name>/log` serves); the pod need not exist yet. */
  appendPodLog(namespace: string, pod: string, text: string): void {
    this.logs.append(namespace, pod, text)
  }

  /** A pod's log, optionally only the last `tailLines` lines; 404 when the pod does not exist. */
  podLog(namespace: string, pod: string, opts: { tailLines?: number } = {}): string {
    const rt = this.registry.byKey('pods') as ResourceType
    if (!this.find(rt, namespace, pod)) throw notFound(rt, pod)
    return this.logs.read(namespace, pod, opts.tailLines)
  }

  /**
   * Follows a pod's log: `onChunk` gets each appended piece, then null once the pod is gone or
   * has reached Succeeded/Failed. Returns a function that stops following.
   */
  followPodLog(namespace: string, pod: string, onChunk: (chunk: string | null) => void): () => void {
    const rt = this.registry.byKey('pods') as ResourceType
    const current = this.find(rt, namespace, pod)
    if (!current || isTerminalPod(current.obj)) {
      queueMicrotask(() => onChunk(null))
      return () => {}
    }
    return this.logs.follow(namespace, pod, onChunk)
  }

  // ---------------------------------------------------------------- core operations (shared with HTTP)

  /** The stored object, or undefined. */
  find(rt: ResourceType, ns: string, name: string): Stored | undefined {
    return this.table.find(rt, ns, name)
  }

  /** Serialized JSON of a stored object at the requested version. */
  jsonAt(stored: Stored, t: Target): string {
    return views.jsonAt(stored, t)
  }

  /** The object at the requested version, sharing structure with the stored one (do not mutate). */
  objectAt(stored: Stored, t: Target): KubeObject {
    return views.objectAt(stored, t)
  }

  /** One watch event line (JSON plus newline), cached per stored object. */
  watchLine(type: WatchEventType, stored: Stored, t: Target): string {
    return views.watchLine(type, stored, t)
  }

  /** The field selectors a kind supports, for the selector parser. */
  fieldSelectorRules(rt: ResourceType): FieldSelectorRules {
    return listing.fieldSelectorRules(rt)
  }

  /** Lists stored objects in namespace/name order, honouring selectors, limit and continue. */
  listIn(t: Target, opts: ListOptions): ListPage {
    return listing.listPage(this.table, t, opts, String(this.ledger.resourceVersion))
  }

  /** Creates an object from a request body (`urlNs` is the namespace in the path, if any). */
  createIn(t: Target, body: unknown, urlNs: string | undefined, opts: WriteOptions & ManagerOptions & { managed?: ManagerEntry[] }): WriteResult {
    const { rt } = t
    const obj = this.checkBody(t, body)
    const decoded = pruneDecoded(rt, obj)
    // Status is dropped on create, but the decoder has already met its unknown fields.
    if (rt.statusSubresource && obj.status !== undefined) decoded.push(...this.checks.unknownIn(t, { status: obj.status }))
    if (opts.fieldValidation === 'Strict') this.checks.refuseUnknown(t, obj, decoded)
    const meta = obj.metadata
    let ns = ''
    if (rt.namespaced) {
      if (urlNs && meta.namespace && meta.namespace !== urlNs) {
        throw badRequest('the namespace of the provided object does not match the namespace sent on the request')
      }
      ns = urlNs || meta.namespace || 'default'
    }
    let name = meta.name
    if (!name) {
      if (!meta.generateName) {
        throw invalid(rt, '', this.checks.withSchemaCauses(t, obj, [{ reason: 'FieldValueRequired', field: 'metadata.name', message: 'Required value: name or generateName is required' }]))
      }
      do name = generatedName(meta.generateName)
      while (this.find(rt, ns, name))
    }
    const causes = nameCauses(name, rt.kind === 'Namespace')
    if (causes.length) throw invalid(rt, name, this.checks.withSchemaCauses(t, obj, causes))
    if (this.find(rt, ns, name)) throw alreadyExists(rt, name)
    if (rt.namespaced) this.checkNamespaceWritable(rt, ns, name, opts.dryRun)

    for (const k of ['resourceVersion', 'uid', 'creationTimestamp', 'deletionTimestamp', 'deletionGracePeriodSeconds', 'generation', 'selfLink', 'managedFields']) delete meta[k]
    meta.name = name
    if (rt.namespaced) meta.namespace = ns
    else delete meta.namespace
    meta.uid = randomUUID()
    meta.creationTimestamp = timestamp(this.now())
    if (tracksGeneration(rt)) meta.generation = 1
    // As on the real server: decoding (and defaulting) comes first, then field tracking, then
    // what the kind's strategy sets, which no manager owns.
    decodeDefaults(rt, obj)
    if (rt.statusSubresource) delete obj.status
    const warnings = this.checks.enforce(t, obj, undefined, opts.fieldValidation, decoded)
    trackFields(t, this.checks.shapeOf(t), undefined, obj, opts, this.now)
    prepareCreate(this.registry, rt, obj, this.now)
    const stored = this.ledger.serialize(obj)
    if (opts.dryRun) {
      delete obj.metadata.resourceVersion
      return { stored: { obj, json: JSON.stringify(obj) }, warnings, created: true }
    }
    if (isCrdResource(rt)) serveCrd(this.registry, this.history, this.ledger.resourceVersion + 1, obj)
    this.ledger.put(rt, ns, name, stored, undefined, 'ADDED')
    return { stored, warnings, created: true }
  }

  /** Replaces an object (PUT), or only its status when `subresource` is 'status'. */
  updateIn(t: Target, ns: string, name: string, body: unknown, opts: WriteOptions & ManagerOptions & { subresource?: 'status'; managed?: ManagerEntry[] }): WriteResult {
    const { rt } = t
    const prev = this.find(rt, ns, name)
    if (!prev) throw notFound(rt, name)
    const incoming = this.checkBody(t, body)
    const decoded = pruneDecoded(rt, incoming)
    if (rt.statusSubresource) {
      // The decoder meets the unknown fields of the parts the subresource then ignores.
      if (opts.subresource === 'status') {
        const { status: _status, ...rest } = incoming
        decoded.push(...this.checks.unknownIn(t, rest))
      } else if (incoming.status !== undefined) decoded.push(...this.checks.unknownIn(t, { status: incoming.status }))
    }
    if (opts.fieldValidation === 'Strict') this.checks.refuseUnknown(t, incoming, decoded)
    if (incoming.metadata.name && incoming.metadata.name !== name) {
      throw badRequest(`the name of the object (${incoming.metadata.name}) does not match the name on the URL (${name})`)
    }
    if (rt.namespaced && incoming.metadata.namespace && incoming.metadata.namespace !== ns) {
      throw badRequest('the namespace of the provided object does not match the namespace sent on the request')
    }
    const sentRv = incoming.metadata.resourceVersion
    if (!sentRv && rt.crdName) {
      // Custom resources do not allow unconditional updates; the real server words this with the resource, not the kind.
      // The value is the resourceVersion the server parsed, a uint64 0.
      const cause = invalidField('metadata.resourceVersion', 0, 'must be specified for an update')
      throw new ApiError(422, 'Invalid', `${groupResource(rt)} "${name}" is invalid: ${formatCause(cause)}`, { name, group: rt.group, kind: rt.plural, causes: [cause] })
    }
    if (sentRv && sentRv !== prev.obj.metadata.resourceVersion) throw conflict(rt, name)

    const old = this.objectAt(prev, t)
    let next: KubeObject
    if (opts.subresource === 'status') {
      next = JSON.parse(this.jsonAt(prev, t)) as KubeObject
      if (incoming.status === undefined) delete next.status
      else next.status = incoming.status
      if (incoming.metadata.managedFields !== undefined) next.metadata.managedFields = incoming.metadata.managedFields
    } else {
      next = incoming
      if (rt.statusSubresource) {
        if (old.status === undefined) delete next.status
        else next.status = structuredClone(old.status)
      }
      const meta = next.metadata
      for (const k of ['uid', 'creationTimestamp', 'deletionTimestamp', 'deletionGracePeriodSeconds', 'generation'] as const) {
        if (old.metadata[k] === undefined) delete meta[k]
        else meta[k] = old.metadata[k] as never
      }
      delete meta.selfLink
      // A client that sends no managedFields keeps the recorded ones.
      if (meta.managedFields === undefined && old.metadata.managedFields !== undefined) meta.managedFields = structuredClone(old.metadata.managedFields)
      meta.name = name
      if (rt.namespaced) meta.namespace = ns
      else delete meta.namespace
      if (old.metadata.deletionTimestamp) {
        const before = new Set(old.metadata.finalizers ?? [])
        const added = (meta.finalizers ?? []).filter((f) => !before.has(f))
        if (added.length) {
          const cause = {
            reason: 'FieldValueForbidden',
            field: 'metadata.finalizers',
            message: `Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{${added.map((f) => JSON.stringify(f)).join(', ')}}`,
          }
          throw invalid(rt, name, [cause])
        }
      }
    }
    next.metadata.resourceVersion = old.metadata.resourceVersion as string
    prepareUpdate(rt, next, old, this.now)
    const warnings = this.checks.enforce(t, next, old, opts.fieldValidation, decoded, opts.subresource)
    // Compared once defaults are in, as the real server decodes (and defaults) before comparing.
    if (opts.subresource !== 'status' && tracksGeneration(rt) && specChanged(old, next)) next.metadata.generation = (old.metadata.generation ?? 0) + 1
    trackFields(t, this.checks.shapeOf(t), old, next, opts, this.now, opts.subresource)
    if (deepEqual(next, old)) return { stored: prev, warnings }

    const finalizing = next.metadata.deletionTimestamp && !(next.metadata.finalizers?.length)
    const stored = this.ledger.serialize(next)
    if (opts.dryRun) {
      next.metadata.resourceVersion = old.metadata.resourceVersion as string
      return { stored: { obj: next, json: JSON.stringify(next) }, warnings }
    }
    if (finalizing) return { stored: this.remove(rt, ns, name, next), warnings, deleted: true }
    if (isCrdResource(rt)) serveCrd(this.registry, this.history, this.ledger.resourceVersion + 1, next)
    this.ledger.put(rt, ns, name, stored, prev, 'MODIFIED')
    return { stored, warnings }
  }

  /** Patches an object; server-side apply creates it when missing. */
  patchIn(t: Target, ns: string, name: string, patch: unknown, opts: PatchOptions): WriteResult {
    const { rt } = t
    const prev = this.find(rt, ns, name)
    if (opts.type === 'apply') return this.apply(t, ns, name, prev, patch, opts)
    if (!prev) throw notFound(rt, name)
    // Parsing the cached JSON is the cheapest deep copy of a stored object.
    const base = JSON.parse(this.jsonAt(prev, t)) as Obj
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
      const unknown = sortUnknown(rt, [...pruneDecoded(rt, probe), ...this.checks.unknownIn(t, probe)])
      if (unknown.length) throw strictPatchError(next, unknown)
    }
    const meta = (isObj(next.metadata) ? next.metadata : (next.metadata = {})) as Obj
    if (meta.resourceVersion !== undefined && meta.resourceVersion !== prev.obj.metadata.resourceVersion) throw conflict(rt, name)
    meta.resourceVersion = prev.obj.metadata.resourceVersion
    return this.updateIn(t, ns, name, next, opts)
  }

  /**
   * Server-side apply: the configuration merged into the live object along the schema, fields
   * this manager applied before and no longer does removed, and 409 for fields other managers
   * own unless `force`. A missing object is created (201).
   */
  private apply(t: Target, ns: string, name: string, prev: Stored | undefined, patch: unknown, opts: PatchOptions): WriteResult {
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
    const unknown = [...pruneDecoded(rt, probe), ...this.checks.unknownIn(t, probe)]
    if (unknown.length) throw typedPatchError(rt, t.version, String(meta.namespace ?? ''), name, unknown)
    if (!prev && opts.subresource === 'status') throw notFound(rt, name)

    const live = prev ? (JSON.parse(this.jsonAt(prev, t)) as Obj) : undefined
    const writer = writerFor(t, opts.fieldManager, 'Apply', this.now, opts.subresource)
    const applied = { ...patch, metadata: { ...meta, name } }
    const shape = this.checks.shapeOf(t)
    const byKubectl = opts.fieldManager === KUBECTL_APPLY_MANAGER
    const plan = planApply(live, applied, shape, readEntries((live?.metadata as Obj | undefined)?.managedFields), writer, opts.force === true, byKubectl ? takeoverFields(live, shape) : undefined)
    if (byKubectl) plan.merged = syncLastApplied(plan.merged, patch)
    if (!prev) return this.createIn(t, plan.merged, rt.namespaced ? ns : undefined, { ...opts, managed: plan.entries })
    const merged = plan.merged as KubeObject
    if (!isObj(merged.metadata)) merged.metadata = {}
    merged.metadata.resourceVersion ??= prev.obj.metadata.resourceVersion as string
    return this.updateIn(t, ns, name, merged, { ...opts, managed: plan.entries })
  }

  /**
   * Deletes an object, honouring finalizers, preconditions and propagation. `deleted` is false
   * when the object stays for now (finalizers, or a Foreground/Orphan deletion that was still
   * waiting on dependents); `stored` is then the object as the real server answers with it.
   */
  deleteIn(t: Target, ns: string, name: string, opts: DeleteOptions): WriteResult {
    const { rt } = t
    const prev = this.find(rt, ns, name)
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
      const marked = this.markDeleted(rt, ns, name, prev, gcFinalizer)
      if (gcFinalizer === ORPHAN) this.orphanDependents(meta.uid as string)
      else this.deleteDependents(meta.uid as string, 'Foreground')
      this.releaseGcFinalizer(rt, ns, name)
      return { stored: marked, warnings: [], deleted: false }
    }

    if (meta.finalizers?.length || isNamespace) {
      const current = meta.deletionTimestamp ? prev : this.markDeleted(rt, ns, name, prev)
      if (isNamespace) {
        this.emptyNamespace(name)
        const removed = this.finishNamespace(name)
        if (removed) return { stored: removed, warnings: [], deleted: true }
        if (!this.find(rt, ns, name)) return { stored: current, warnings: [], deleted: true }
      }
      return { stored: current, warnings: [], deleted: false }
    }
    const last = structuredClone(prev.obj)
    if (rt.kind === 'Pod' && !rt.group) {
      // Pods are deleted gracefully; one that never ran goes at once, with a zero grace period.
      last.metadata.deletionTimestamp = timestamp(this.now())
      last.metadata.deletionGracePeriodSeconds = 0
    }
    return { stored: this.remove(rt, ns, name, last), warnings: [], deleted: true }
  }

  /** Sets deletionTimestamp (bumping generation, as the real server does) and adds a finalizer; stores and returns the result. */
  private markDeleted(rt: ResourceType, ns: string, name: string, prev: Stored, finalizer?: string): Stored {
    const next = structuredClone(prev.obj)
    const meta = next.metadata
    const changed = !meta.deletionTimestamp || (finalizer !== undefined && !(meta.finalizers ?? []).includes(finalizer))
    if (!changed) return prev
    if (!meta.deletionTimestamp) {
      meta.deletionTimestamp = timestamp(this.now())
      // Namespaces are not deleted gracefully, so they get no grace period.
      if (!(rt.kind === 'Namespace' && !rt.group)) meta.deletionGracePeriodSeconds = 0
      if (meta.generation !== undefined) meta.generation += 1
      if (rt.kind === 'Namespace' && !rt.group) next.status = { ...(next.status as Obj | undefined), phase: 'Terminating' }
    }
    if (finalizer && !(meta.finalizers ?? []).includes(finalizer)) meta.finalizers = [...(meta.finalizers ?? []), finalizer]
    const stored = this.ledger.serialize(next)
    this.ledger.put(rt, ns, name, stored, prev, 'MODIFIED')
    return stored
  }

  /** Drops the garbage collector's finalizers once nothing blocks them; the object goes when no finalizer is left. */
  private releaseGcFinalizer(rt: ResourceType, ns: string, name: string): void {
    const current = this.find(rt, ns, name)
    if (!current?.obj.metadata.deletionTimestamp) return
    const finalizers = current.obj.metadata.finalizers ?? []
    if (!finalizers.includes(FOREGROUND) && !finalizers.includes(ORPHAN)) return
    const uid = current.obj.metadata.uid as string
    const blocked = finalizers.includes(FOREGROUND) && this.table.dependentKeys(uid).some((key) => {
      const dep = this.lookupKey(key)
      return dep?.stored.obj.metadata.ownerReferences?.some((r) => r.uid === uid && r.blockOwnerDeletion === true)
    })
    if (blocked) return
    const next = structuredClone(current.obj)
    const left = finalizers.filter((f) => f !== ORPHAN && f !== FOREGROUND)
    if (left.length) next.metadata.finalizers = left
    else delete next.metadata.finalizers
    if (left.length === 0) {
      this.remove(rt, ns, name, next)
      return
    }
    this.ledger.put(rt, ns, name, this.ledger.serialize(next), current, 'MODIFIED')
  }

  /** Starts a watch; returns the function that ends it. Throws 410 for a too-old resourceVersion. */
  watchIn(t: Target, opts: WatchOptions, sink: WatchSink): () => void {
    const gr = groupResource(t.rt)
    const watcher: Watcher = {
      label: parseLabelSelector(opts.labelSelector),
      field: parseFieldSelector(opts.fieldSelector, listing.fieldSelectorRules(t.rt)),
      apiVersion: apiVersionOf(t.rt.group, t.version),
      sink,
    }
    if (t.rt.namespaced && opts.namespace) watcher.ns = opts.namespace
    const rvText = opts.resourceVersion
    const initial = !rvText || rvText === '0' || opts.sendInitialEvents === true
    if (initial) {
      for (const s of this.listIn(t, { namespace: watcher.ns, labelSelector: opts.labelSelector, fieldSelector: opts.fieldSelector }).items) {
        sink.event('ADDED', s)
      }
      if (opts.sendInitialEvents && opts.allowWatchBookmarks) sink.bookmark(this.resourceVersion, true)
    } else this.history.replay(gr, watcher, rvText)
    return this.history.subscribe(gr, watcher)
  }

  // ---------------------------------------------------------------- internals

  private nsFor(rt: ResourceType, namespace: string | undefined): string {
    return rt.namespaced ? namespace || 'default' : ''
  }

  private checkBody(t: Target, body: unknown): KubeObject {
    if (!isObj(body)) throw badRequest('the request body must be a JSON object')
    const av = apiVersionOf(t.rt.group, t.version)
    if (t.rt.crdName) {
      // Custom resources are decoded without a Go type, so the body itself must say what it is.
      if (body.kind === undefined) {
        const json = JSON.stringify(body)
        throw badRequest(`the object provided is unrecognized (must be of type ${t.rt.kind}): Object 'Kind' is missing in '${json}' (${bodyHint(Buffer.from(json))})`)
      }
      if (body.apiVersion === undefined) throw badRequest(`the API version in the data () does not match the expected API version (${av})`)
      if (body.kind !== t.rt.kind && body.apiVersion === av) {
        const name = isObj(body.metadata) && typeof body.metadata.name === 'string' ? body.metadata.name : ''
        const cause = invalidField('kind', body.kind, `must be ${t.rt.kind}`)
        throw new ApiError(422, 'Invalid', `${String(body.kind)}.${t.rt.group} ${JSON.stringify(name)} is invalid: kind: ${cause.message}`, { name, group: t.rt.group, kind: String(body.kind), causes: [cause] })
      }
    }
    if (body.apiVersion !== undefined && body.apiVersion !== av) {
      throw badRequest(`the API version in the data (${String(body.apiVersion)}) does not match the expected API version (${av})`)
    }
    if (body.kind !== undefined && body.kind !== t.rt.kind) {
      throw badRequest(`the kind in the data (${String(body.kind)}) does not match the expected kind (${t.rt.kind})`)
    }
    if (body.metadata !== undefined && !isObj(body.metadata)) throw badRequest('metadata must be an object')
    body.apiVersion = av
    body.kind = t.rt.kind
    if (!body.metadata) body.metadata = {}
    return body as KubeObject
  }

  private checkNamespaceWritable(rt: ResourceType, ns: string, name: string, dryRun: boolean | undefined): void {
    const nsRt = this.registry.byKey('namespaces') as ResourceType
    const existing = this.find(nsRt, '', ns)
    if (existing?.obj.metadata.deletionTimestamp) {
      throw forbidden(`${rt.group ? `${rt.plural}.${rt.group}` : rt.plural} "${name}" is forbidden: unable to create new content in namespace ${ns} because it is being terminated`)
    }
    if (!existing && !dryRun) this.ensureNamespace(ns)
  }

  /** Namespaces come into existence on first use, so tests and the runner never need to create them. */
  private ensureNamespace(ns: string): void {
    const rt = this.registry.byKey('namespaces') as ResourceType
    if (this.find(rt, '', ns)) return
    this.createIn({ rt, version: 'v1' }, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } }, undefined, {})
  }

  /** Removes an object for good: DELETED event, then dependents, CRD contents and namespace cleanup. */
  private remove(rt: ResourceType, ns: string, name: string, finalObj: KubeObject): Stored {
    const stored = this.ledger.erase(rt, ns, name, finalObj)
    const uid = finalObj.metadata.uid
    if (isCrdResource(rt)) this.uninstallCrd(finalObj)
    if (uid) this.cascade(uid)
    // An owner in Foreground deletion waits for its blocking dependents; this may have been the last.
    for (const ref of finalObj.metadata.ownerReferences ?? []) {
      const owner = ref?.uid ? this.table.locate(ref.uid) : undefined
      const ownerRt = owner && this.registry.byKey(owner.gr)
      if (owner && ownerRt) this.releaseGcFinalizer(ownerRt, owner.ns, owner.name)
    }
    if (rt.namespaced) this.finishNamespace(ns)
    return stored
  }

  private uninstallCrd(crd: KubeObject): void {
    const key = definedResourceKey(crd)
    const rt = this.registry.byKey(key)
    if (!rt?.crdName) return
    for (const [ns, byName] of this.table.resource(key) ?? []) {
      for (const [name, s] of [...byName]) this.remove(rt, ns, name, structuredClone(s.obj))
    }
    this.table.dropResource(key)
    this.history.stopServing(key)
    this.registry.unregister(key)
  }

  private lookupKey(key: string): { rt: ResourceType; ns: string; name: string; stored: Stored } | undefined {
    const found = this.table.dependent(key)
    const rt = found && this.registry.byKey(found.gr)
    return found && rt ? { rt, ns: found.ns, name: found.name, stored: found.stored } : undefined
  }

  /** The garbage collector, run inline: dependents whose owners are all gone are deleted. */
  private cascade(ownerUid: string): void {
    this.deleteDependents(ownerUid, 'Background')
    this.table.forgetDependents(ownerUid)
  }

  /** Deletes the dependents of an owner that have no other living owner. */
  private deleteDependents(ownerUid: string, propagationPolicy: 'Background' | 'Foreground'): void {
    for (const key of this.table.dependentKeys(ownerUid)) {
      const dep = this.lookupKey(key)
      if (!dep) continue
      const otherOwnerAlive = (dep.stored.obj.metadata.ownerReferences ?? []).some((r) => r.uid !== ownerUid && this.table.isLive(r.uid))
      if (otherOwnerAlive) continue
      try {
        this.deleteIn({ rt: dep.rt, version: dep.rt.storageVersion }, dep.ns, dep.name, { propagationPolicy })
      } catch (err) {
        if (!(err instanceof ApiError && err.code === 404)) throw err
      }
    }
  }

  private orphanDependents(ownerUid: string): void {
    for (const key of this.table.dependentKeys(ownerUid)) {
      const dep = this.lookupKey(key)
      if (!dep) continue
      const next = structuredClone(dep.stored.obj)
      next.metadata.ownerReferences = (next.metadata.ownerReferences ?? []).filter((r) => r.uid !== ownerUid)
      if (next.metadata.ownerReferences.length === 0) delete next.metadata.ownerReferences
      // The collector's update only removes fields, so it owns nothing; the removed ones leave every manager.
      const t = { rt: dep.rt, version: dep.rt.storageVersion }
      trackFields(t, this.checks.shapeOf(t), dep.stored.obj, next, { fieldManager: 'generic-garbage-collector' }, this.now)
      this.ledger.put(dep.rt, dep.ns, dep.name, this.ledger.serialize(next), dep.stored, 'MODIFIED')
    }
    this.table.forgetDependents(ownerUid)
  }

  private emptyNamespace(ns: string): void {
    for (const rt of this.registry.all()) {
      if (!rt.namespaced) continue
      for (const name of this.table.namesIn(rt, ns)) {
        try {
          this.deleteIn({ rt, version: rt.storageVersion }, ns, name, { propagationPolicy: 'Background' })
        } catch (err) {
          if (!(err instanceof ApiError && err.code === 404)) throw err
        }
      }
    }
  }

  /** Removes a terminating namespace once nothing is left in it; returns the removed object. */
  private finishNamespace(ns: string): Stored | undefined {
    const nsRt = this.registry.byKey('namespaces') as ResourceType
    const current = this.find(nsRt, '', ns)
    if (!current?.obj.metadata.deletionTimestamp || current.obj.metadata.finalizers?.length) return undefined
    for (const rt of this.registry.all()) {
      if (rt.namespaced && this.table.hasAnyIn(rt, ns)) return undefined
    }
    return this.remove(nsRt, '', ns, structuredClone(current.obj))
  }
}
