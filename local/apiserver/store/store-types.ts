// The types the store's parts share and its callers pass: how a kind is named, what a stored
// object is, the options of each verb and what a write answers.
import type { ManagerEntry } from '../managed-fields.js'
import type { ResourceType } from '../resource-type.js'
import type { KubeObject, WatchEventType } from '../types.js'

/** etcd's default request limit; larger objects are refused like the real server refuses them. */
export const MAX_OBJECT_BYTES = 1.5 * 1024 * 1024

/** Identifies a kind for in-process calls: `{ apiVersion: 'batch/v1', kind: 'Job' }`. */
export interface TypeRef {
  apiVersion: string
  kind: string
}

/** A resource type at one served version: what every store operation works on. */
export interface Target {
  rt: ResourceType
  version: string
}

/** A stored object with its serialized form cached (stored objects are never mutated). */
export interface Stored {
  obj: KubeObject
  json: string
  lines?: Map<string, string>
}

/** Options shared by writes. */
export interface WriteOptions {
  /** Validate and compute the result without storing it (`?dryRun=All`). */
  dryRun?: boolean
  /** `Strict` turns unknown (pruned) fields into a 400; `Warn` (the default) only warns. */
  fieldValidation?: 'Strict' | 'Warn' | 'Ignore'
}

/** The patch flavours the server accepts, named after their content types. */
export type PatchType = 'merge' | 'json' | 'strategic' | 'apply'

/** Who writes: the field manager recorded in managedFields. */
export interface ManagerOptions {
  /** The `fieldManager` the client named; required for `apply`. */
  fieldManager?: string
  /** The manager when the client names none (the User-Agent's first part over HTTP). */
  defaultManager?: string
}

/** Options for `patch`. */
export interface PatchOptions extends WriteOptions, ManagerOptions {
  type: PatchType
  subresource?: 'status'
  /** For `apply`: take over fields other managers own instead of answering 409. */
  force?: boolean
}

/** Options for `delete`. */
export interface DeleteOptions {
  /** Background and Foreground both delete dependents at once here; Orphan strips their ownerReferences. */
  propagationPolicy?: 'Background' | 'Foreground' | 'Orphan'
  preconditions?: { uid?: string; resourceVersion?: string }
  dryRun?: boolean
}

/** Options for `list`. */
export interface ListOptions {
  namespace?: string
  labelSelector?: string
  fieldSelector?: string
  limit?: number
  continue?: string
}

/** Options for `watch`. */
export interface WatchOptions {
  namespace?: string
  labelSelector?: string
  fieldSelector?: string
  /** Resume after this version; unset or "0" starts with synthetic ADDED events for what exists. */
  resourceVersion?: string
  /** Also send the initial ADDED events when resuming, followed by an initial-events-end BOOKMARK. */
  sendInitialEvents?: boolean
  allowWatchBookmarks?: boolean
}

/** The result of a write: the stored object and any warnings for the `Warning` header. */
export interface WriteResult {
  stored: Stored
  warnings: string[]
  /** For deletes: false while finalizers keep the object. */
  deleted?: boolean
  /** True when the write created the object (a create, or a server-side apply of a new object). */
  created?: boolean
}

/** Receives watch events; the HTTP layer writes lines, in-process watchers get copies. */
export interface WatchSink {
  event(type: WatchEventType, stored: Stored): void
  bookmark(resourceVersion: string, initialEventsEnd: boolean): void
}

/** Handle for an in-process watch. */
export interface WatchHandle {
  stop(): void
}

/** Options for the store. */
export interface StoreOptions {
  /** Watch events retained for resume; older resourceVersions answer 410 Gone. Default 10,000. */
  historySize?: number
  /** Clock for timestamps. */
  now?: () => Date
  /** The uid of each new object. Default: a random UUID, as kube-apiserver gives. */
  newUid?: () => string
  /** Largest serialized object accepted. Default 1.5 MiB. */
  maxObjectBytes?: number
  /** Namespaces that exist from the start. */
  namespaces?: string[]
}

/** Create and update options inside the store: server-side apply passes the managedFields it planned. */
export type CreateOptions = WriteOptions & ManagerOptions & { managed?: ManagerEntry[] }

/** Update options inside the store: a create's, plus the status subresource. */
export type UpdateOptions = CreateOptions & { subresource?: 'status' }

/** One page of a list: stored objects, the list's resourceVersion, and the token for the next page. */
export interface ListPage {
  items: Stored[]
  resourceVersion: string
  continue?: string
}

/** A JSON object, as request bodies and patches arrive. */
export type Obj = Record<string, unknown>
export const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v)
