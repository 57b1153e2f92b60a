/** Object metadata as the embedded API server reads and writes it (a loose view of ObjectMeta). */
export interface ObjectMeta {
  name?: string
  generateName?: string
  namespace?: string
  uid?: string
  resourceVersion?: string
  generation?: number
  creationTimestamp?: string
  deletionTimestamp?: string
  deletionGracePeriodSeconds?: number
  labels?: Record<string, string>
  annotations?: Record<string, string>
  finalizers?: string[]
  ownerReferences?: OwnerReference[]
  [key: string]: unknown
}

/** A reference from a dependent to its owner; cascade deletion follows `uid`. */
export interface OwnerReference {
  apiVersion: string
  kind: string
  name: string
  uid: string
  controller?: boolean
  blockOwnerDeletion?: boolean
}

/** Any Kubernetes object: apiVersion, kind, metadata and whatever else the kind carries. */
export interface KubeObject {
  apiVersion: string
  kind: string
  metadata: ObjectMeta
  [key: string]: unknown
}

/** The kind of a watch event as it appears on the wire. */
export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR'

/** One watch event delivered to an in-process watcher. */
export interface WatchEvent {
  type: WatchEventType
  object: KubeObject
}

/** A column of a Table response (meta.k8s.io/v1 TableColumnDefinition). */
export interface ColumnDefinition {
  name: string
  type: string
  format: string
  description: string
  priority: number
}

/** A CRD's additionalPrinterColumns entry. */
export interface PrinterColumn {
  name: string
  type: string
  format?: string
  description?: string
  priority?: number
  jsonPath: string
}
