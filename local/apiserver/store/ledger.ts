import { tooLarge } from '../api-error.js'
import { groupResource, type ResourceType } from '../resource-type.js'
import type { KubeObject } from '../types.js'
import type { ObjectTable } from './object-table.js'
import { isPodResource, isTerminalPod, type PodLogs } from './pod-logs.js'
import type { Stored } from './store-types.js'
import type { WatchHistory } from './watch-history.js'

/**
 * Every change to the store goes through here. A change takes the next value of the one global
 * resourceVersion counter, lands in the object table, is recorded in the watch history (which
 * sends it to the watches) and, for a pod that finished or went away, ends its log followers.
 */
export class Ledger {
  private rv = 0

  constructor(
    private readonly table: ObjectTable,
    private readonly history: WatchHistory,
    private readonly logs: PodLogs,
    private readonly maxObjectBytes: number,
  ) {}

  /** The resourceVersion of the last change (0 before any). */
  get resourceVersion(): number {
    return this.rv
  }

  /** Serializes an object about to be stored; 413 when it is over the size limit. */
  serialize(obj: KubeObject): Stored {
    // Stamped with the version the next write will get, so put() rarely has to serialize again.
    obj.metadata.resourceVersion = String(this.rv + 1)
    let json = JSON.stringify(obj)
    if (json.length > this.maxObjectBytes / 3 && Buffer.byteLength(json) > this.maxObjectBytes) {
      // Like the real server, an object that only fits without its managedFields is stored without them.
      if (obj.metadata.managedFields === undefined) throw tooLarge()
      delete obj.metadata.managedFields
      json = JSON.stringify(obj)
      if (Buffer.byteLength(json) > this.maxObjectBytes) throw tooLarge()
    }
    return { obj, json }
  }

  /** Stores a created (ADDED) or changed (MODIFIED, replacing `prev`) object. */
  put(rt: ResourceType, ns: string, name: string, stored: Stored, prev: Stored | undefined, type: 'ADDED' | 'MODIFIED'): void {
    const rv = ++this.rv
    if (stored.obj.metadata.resourceVersion !== String(rv)) {
      stored.obj.metadata.resourceVersion = String(rv)
      stored.json = JSON.stringify(stored.obj)
    }
    const gr = groupResource(rt)
    this.table.set(gr, ns, name, stored, prev)
    this.history.record({ rv, type, gr, stored, ...(prev ? { prev } : {}) })
    if (isPodResource(rt) && isTerminalPod(stored.obj)) this.logs.end(ns, name)
  }

  /** Takes an object out of the store (DELETED, as `finalObj`); returns what was recorded. */
  erase(rt: ResourceType, ns: string, name: string, finalObj: KubeObject): Stored {
    const gr = groupResource(rt)
    const prev = this.table.findByKey(gr, ns, name)
    const rv = ++this.rv
    finalObj.metadata.resourceVersion = String(rv)
    const stored: Stored = { obj: finalObj, json: JSON.stringify(finalObj) }
    this.table.delete(gr, ns, name, prev, finalObj.metadata.uid)
    this.history.record({ rv, type: 'DELETED', gr, stored, ...(prev ? { prev } : {}) })
    if (isPodResource(rt)) this.logs.drop(ns, name)
    return stored
  }
}
