import { randomUUID } from 'node:crypto'
import { badRequest, noSuchResource, notFound } from './api-error.js'
import { builtinResources } from './builtin-resources.js'
import { ResourceRegistry } from './resource-registry.js'
import { apiVersionOf, groupResource, type ResourceType } from './resource-type.js'
import { parseFieldSelector, parseLabelSelector, type FieldSelectorRules } from './selectors.js'
import type { KubeObject, WatchEvent, WatchEventType } from './types.js'
import { createObject, ensureNamespace, updateObject } from './store/create-update.js'
import { deleteObject } from './store/deletion.js'
import { Ledger } from './store/ledger.js'
import * as listing from './store/listing.js'
import { ObjectTable } from './store/object-table.js'
import * as views from './store/object-views.js'
import { patchObject } from './store/patching.js'
import { isTerminalPod, PodLogs } from './store/pod-logs.js'
import { SchemaChecks } from './store/schema-checks.js'
import type { StoreState } from './store/state.js'
import {
  MAX_OBJECT_BYTES,
  type CreateOptions,
  type DeleteOptions,
  type ListOptions,
  type ListPage,
  type PatchOptions,
  type Stored,
  type StoreOptions,
  type Target,
  type TypeRef,
  type UpdateOptions,
  type WatchHandle,
  type WatchOptions,
  type WatchSink,
  type WriteOptions,
  type WriteResult,
} from './store/store-types.js'
import { WatchHistory, type Watcher } from './store/watch-history.js'

const DEFAULT_NAMESPACES = ['default', 'kube-system', 'kube-public', 'kube-node-lease', 'ai-agents', 'purko-system']

/**
 * The in-memory object store behind the embedded API server: every verb, watch, finalizers,
 * cascade deletion and CRD registration. The HTTP layer and in-process callers (the Knative
 * emulation, the Job runner) share the same code paths, so they see the same semantics.
 * Every method is synchronous; failures throw `ApiError` carrying the Kubernetes Status.
 *
 * This class is the entry point; the work is done by its parts in `store/`: the object table
 * and its indexes, the ledger every change goes through, the watch history, pod logs, the
 * write verbs, schema checks, CRD registration, field ownership and the garbage collector.
 */
export class ObjectStore {
  /** The served resources; CRDs add to it as they are created. */
  readonly registry = new ResourceRegistry()
  private readonly table = new ObjectTable()
  private readonly logs = new PodLogs()
  private readonly history: WatchHistory
  private readonly ledger: Ledger
  private readonly state: StoreState

  constructor(opts: StoreOptions = {}) {
    this.history = new WatchHistory(opts.historySize ?? 10_000)
    this.ledger = new Ledger(this.table, this.history, this.logs, opts.maxObjectBytes ?? MAX_OBJECT_BYTES)
    this.state = {
      registry: this.registry,
      table: this.table,
      history: this.history,
      ledger: this.ledger,
      schemas: new SchemaChecks(this.table),
      now: opts.now ?? (() => new Date()),
      newUid: opts.newUid ?? randomUUID,
      deleteIn: (t, ns, name, deleteOpts) => this.deleteIn(t, ns, name, deleteOpts),
    }
    for (const rt of builtinResources()) this.registry.register(rt)
    for (const ns of opts.namespaces ?? DEFAULT_NAMESPACES) ensureNamespace(this.state, ns)
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
    const stored = this.find(t.rt, this.nsFor(t.rt, namespace), name)
    return stored ? views.copyAt(stored, t) : undefined
  }

  /** Copies of the matching objects plus the list's resourceVersion. */
  list(type: TypeRef, opts: ListOptions = {}): { items: KubeObject[]; resourceVersion: string; continue?: string } {
    const t = this.target(type)
    const page = this.listIn(t, opts)
    const out: { items: KubeObject[]; resourceVersion: string; continue?: string } = {
      items: page.items.map((stored) => views.copyAt(stored, t)),
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
  createIn(t: Target, body: unknown, urlNs: string | undefined, opts: CreateOptions): WriteResult {
    return createObject(this.state, t, body, urlNs, opts)
  }

  /** Replaces an object (PUT), or only its status when `subresource` is 'status'. */
  updateIn(t: Target, ns: string, name: string, body: unknown, opts: UpdateOptions): WriteResult {
    return updateObject(this.state, t, ns, name, body, opts)
  }

  /** Patches an object; server-side apply creates it when missing. */
  patchIn(t: Target, ns: string, name: string, patch: unknown, opts: PatchOptions): WriteResult {
    return patchObject(this.state, t, ns, name, patch, opts)
  }

  /**
   * Deletes an object, honouring finalizers, preconditions and propagation. `deleted` is false
   * when the object stays for now (finalizers, or a Foreground/Orphan deletion that was still
   * waiting on dependents); `stored` is then the object as the real server answers with it.
   */
  deleteIn(t: Target, ns: string, name: string, opts: DeleteOptions): WriteResult {
    return deleteObject(this.state, t, ns, name, opts)
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
      for (const stored of this.listIn(t, { namespace: watcher.ns, labelSelector: opts.labelSelector, fieldSelector: opts.fieldSelector }).items) {
        sink.event('ADDED', stored)
      }
      if (opts.sendInitialEvents && opts.allowWatchBookmarks) sink.bookmark(this.resourceVersion, true)
    } else this.history.replay(gr, watcher, rvText)
    return this.history.subscribe(gr, watcher)
  }

  // ---------------------------------------------------------------- internals

  private nsFor(rt: ResourceType, namespace: string | undefined): string {
    return rt.namespaced ? namespace || 'default' : ''
  }
}
