import { badRequest, expired } from '../api-error.js'
import type { Selector } from '../selectors.js'
import type { WatchEventType } from '../types.js'
import type { Stored, WatchSink } from './store-types.js'

/** One change, as the history keeps it for watches that resume. */
export interface HistoryEntry {
  rv: number
  type: 'ADDED' | 'MODIFIED' | 'DELETED'
  gr: string
  stored: Stored
  prev?: Stored
  /** `prev` at this entry's resourceVersion: what watchers the object left are sent. */
  left?: Stored
}

/** A running watch of one resource: what it selects and where its events go. */
export interface Watcher {
  ns?: string
  label: Selector
  field: Selector
  apiVersion: string
  sink: WatchSink
}

/**
 * The watch side of the store: the ring of recent changes a watch can resume from, the
 * resourceVersion each custom resource has been served since, and the running watches, which
 * get every recorded change that their selectors see.
 */
export class WatchHistory {
  private entries: HistoryEntry[] = []
  private evictedUpTo = 0
  private readonly servedSince = new Map<string, number>()
  private readonly watchers = new Map<string, Set<Watcher>>()

  /** `size`: the changes kept for resume; older resourceVersions answer 410 Gone. */
  constructor(private readonly size: number) {}

  /** Keeps a change and sends it to the watches of its resource. */
  record(entry: HistoryEntry): void {
    this.entries.push(entry)
    // Trimming in batches keeps appends O(1) amortized for large windows.
    if (this.entries.length > this.size && (this.size < 1024 || this.entries.length >= this.size * 2)) {
      const drop = this.entries.length - this.size
      this.evictedUpTo = (this.entries[drop - 1] as HistoryEntry).rv
      this.entries = this.entries.slice(drop)
    }
    const set = this.watchers.get(entry.gr)
    if (set) for (const watcher of set) this.deliver(watcher, entry)
  }

  /** A newly served resource's history starts at `rv` (its CRD's write), unless it started before. */
  startServing(gr: string, rv: number): void {
    if (!this.servedSince.has(gr)) this.servedSince.set(gr, rv)
  }

  /** The resource is no longer served (its CRD is gone); a later CRD starts its history again. */
  stopServing(gr: string): void {
    this.servedSince.delete(gr)
  }

  /** Sends a resuming watcher what happened after `resourceVersion`; 410 when that is older than the history. */
  replay(gr: string, watcher: Watcher, resourceVersion: string): void {
    const from = Number(resourceVersion)
    if (!Number.isInteger(from) || from < 0) throw badRequest(`invalid resource version: ${resourceVersion}`)
    // Like the real server's watch cache, a kind's history starts when it is first served.
    const floor = Math.max(this.evictedUpTo, this.servedSince.get(gr) ?? 0)
    if (from < floor) throw expired(from, floor)
    let i = lowerBound(this.entries, from + 1)
    for (; i < this.entries.length; i++) {
      const entry = this.entries[i] as HistoryEntry
      if (entry.gr === gr) this.deliver(watcher, entry)
    }
  }

  /** Adds a watcher for the changes to come; returns the function that removes it. */
  subscribe(gr: string, watcher: Watcher): () => void {
    let set = this.watchers.get(gr)
    if (!set) this.watchers.set(gr, (set = new Set()))
    set.add(watcher)
    return () => {
      set.delete(watcher)
    }
  }

  private deliver(watcher: Watcher, entry: HistoryEntry): void {
    const ns = entry.stored.obj.metadata.namespace ?? ''
    if (watcher.ns !== undefined && watcher.ns !== ns) return
    const nowMatches = watcher.label.matches(entry.stored.obj) && watcher.field.matches(entry.stored.obj)
    let type: WatchEventType | undefined
    if (entry.type !== 'MODIFIED') type = nowMatches ? entry.type : undefined
    else {
      const before = entry.prev ? watcher.label.matches(entry.prev.obj) && watcher.field.matches(entry.prev.obj) : false
      type = nowMatches ? (before ? 'MODIFIED' : 'ADDED') : before ? 'DELETED' : undefined
    }
    if (!type) return
    let stored = entry.stored
    if (type === 'DELETED' && entry.type === 'MODIFIED' && entry.prev) {
      // An object leaving the selection is reported as it was when it last matched, at the new resourceVersion.
      stored = entry.left ??= leftSelection(entry.prev, entry.rv)
    }
    try {
      watcher.sink.event(type, stored)
    } catch {
      // A broken sink (a dead connection) must not fail the write that fed it; it just stops watching.
      this.watchers.get(entry.gr)?.delete(watcher)
    }
  }
}

function leftSelection(prev: Stored, rv: number): Stored {
  const obj = { ...prev.obj, metadata: { ...prev.obj.metadata, resourceVersion: String(rv) } }
  return { obj, json: JSON.stringify(obj) }
}

function lowerBound(history: HistoryEntry[], rv: number): number {
  let lo = 0
  let hi = history.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if ((history[mid] as HistoryEntry).rv < rv) lo = mid + 1
    else hi = mid
  }
  return lo
}
