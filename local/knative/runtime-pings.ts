import { setMaxListeners } from 'node:events'
import { isDeepStrictEqual } from 'node:util'
import type { Logger } from '../../shared/log.js'
import type { EventSink } from './apiserver-source.js'
import { KubeHttpError, listAndWatch, type KubeHttp, type KubeObject } from './kube-http.js'
import type { Manifest, PingSourceSpec } from './manifests.js'
import { startPingSource, type RunningPing } from './ping-source.js'

/** Where the PingSources of every namespace are listed and watched. */
export const PINGSOURCES_PATH = '/apis/sources.knative.dev/v1/pingsources'

/** One PingSource of the API server as the emulation sees it. */
interface Entry {
  namespace: string
  name: string
  spec: PingSourceSpec
  /** Undefined when its schedule or time zone was refused (logged once per spec). */
  ping?: RunningPing
  error?: string
}

/** PingSources created at run time (not from knative/), each ticking as a RunningPing. */
export interface RuntimePings {
  /** Resolves once the first list is done (or the API server said it cannot be listed). */
  ready: Promise<void>
  /**
   * The running PingSource `namespace/name`, or `name` when only one namespace has it.
   * Throws when it is unknown, ambiguous, or its schedule was refused.
   */
  find(key: string): RunningPing | undefined
  /** `namespace/name` of every PingSource seen, running or refused. */
  keys(): string[]
  /** Starts ticking (and every PingSource seen later ticks at once). */
  start(): void
  /** Fast-forward of every runtime PingSource from now on (undefined: their schedules). */
  setInterval(intervalMs: number | undefined): void
  stop(): Promise<void>
}

export interface RuntimePingsOptions {
  kube: KubeHttp
  /** True for the PingSources of knative/, which the emulation runs from the YAML already. */
  isStatic: (namespace: string, name: string) => boolean
  /** Where a PingSource's events go (its `sink`, resolved locally). */
  sinkFor: (source: Manifest<PingSourceSpec>) => EventSink
  log: Logger
  intervalMs?: number
  /** Retry wait after a failed list or watch. Default 1 s. */
  retryMs?: number
}

/**
 * Pure: the Manifest the PingSource emulation runs for an object of the API server (its
 * namespace, name and spec; the rest of the object plays no part in ticking).
 */
export function pingManifest(obj: KubeObject): Manifest<PingSourceSpec> {
  const meta = obj.metadata ?? {}
  const namespace = meta.namespace ?? 'default'
  const name = meta.name ?? ''
  return {
    apiVersion: obj.apiVersion ?? 'sources.knative.dev/v1',
    kind: 'PingSource',
    metadata: { name, namespace, ...(meta.labels ? { labels: meta.labels } : {}) },
    spec: (obj.spec ?? {}) as PingSourceSpec,
    file: `(API server) ${namespace}/${name}`,
    raw: obj,
  }
}

/**
 * Lists and watches `sources.knative.dev/v1` PingSources in every namespace and runs each one
 * that knative/ does not declare: started when it appears (listed at start too: a PingSource
 * that exists ticks), restarted when its spec changes, stopped when it is deleted. A schedule
 * or time zone the emulation refuses is logged and the object is skipped until its spec
 * changes; it never stops the watch.
 */
export function watchRuntimePings(opts: RuntimePingsOptions): RuntimePings {
  const log = opts.log.child({ component: 'pingsources' })
  const entries = new Map<string, Entry>()
  const controller = new AbortController()
  setMaxListeners(20, controller.signal)
  let started = false
  let interval = opts.intervalMs
  let markReady!: () => void
  const ready = new Promise<void>((r) => { markReady = r })
  let reportedError = ''

  const stopEntry = (e: Entry) => e.ping?.stop()

  const upsert = (obj: KubeObject) => {
    const m = pingManifest(obj)
    const { namespace, name } = m.metadata
    if (!name || opts.isStatic(namespace, name)) return
    const key = `${namespace}/${name}`
    const old = entries.get(key)
    if (old && isDeepStrictEqual(old.spec, m.spec)) return
    if (old) stopEntry(old)
    const entry: Entry = { namespace, name, spec: m.spec }
    try {
      entry.ping = startPingSource(m, opts.sinkFor(m), log, interval)
      if (started) entry.ping.start()
      log.info({ pingSource: key, schedule: m.spec.schedule, timezone: m.spec.timezone, restarted: old !== undefined }, old ? 'PingSource changed: ticking on its new spec' : 'PingSource found: ticking')
    } catch (err) {
      entry.error = err instanceof Error ? err.message : String(err)
      log.error({ pingSource: key, schedule: m.spec.schedule, timezone: m.spec.timezone, err: entry.error }, 'PingSource refused (its schedule or time zone is invalid); it does not tick until its spec changes')
    }
    entries.set(key, entry)
  }

  const remove = (obj: KubeObject) => {
    const key = `${obj.metadata?.namespace ?? 'default'}/${obj.metadata?.name ?? ''}`
    const e = entries.get(key)
    if (!e) return
    stopEntry(e)
    entries.delete(key)
    log.info({ pingSource: key }, 'PingSource deleted: stopped')
  }

  const loop = listAndWatch(opts.kube, PINGSOURCES_PATH, '', {
    onList(items) {
      // A re-list (after 410 Gone) is the whole truth: what it lacks was deleted in the gap.
      const listed = new Set(items.map((o) => `${o.metadata?.namespace ?? 'default'}/${o.metadata?.name ?? ''}`))
      for (const [key, e] of entries) if (!listed.has(key)) remove({ metadata: { namespace: e.namespace, name: e.name } })
      for (const o of items) upsert(o)
    },
    onEvent(ev) {
      // A PingSource being deleted (finalizers) no longer ticks, as Knative's adapter drops it.
      if (ev.type === 'DELETED' || ev.object.metadata?.deletionTimestamp) remove(ev.object)
      else upsert(ev.object)
    },
    synced() {
      reportedError = ''
      markReady()
    },
    onError(err) {
      const text = err instanceof KubeHttpError && err.status === 404
        ? 'The API server does not serve sources.knative.dev/v1 PingSources; runtime PingSources do not tick (retrying)'
        : 'Listing or watching PingSources failed; retrying'
      const detail = String(err)
      if (detail !== reportedError) log.warn({ err: detail }, text)
      reportedError = detail
      // Not fatal and not worth waiting for: knative/'s own sources still run.
      markReady()
    },
  }, controller.signal, opts.retryMs ?? 1000)

  return {
    ready,
    find(key) {
      const hits = key.includes('/') ? [entries.get(key)].filter((e): e is Entry => e !== undefined) : [...entries.values()].filter((e) => e.name === key)
      if (hits.length === 0) return undefined
      if (hits.length > 1) throw new Error(`PingSource ${key} exists in several namespaces (${hits.map((e) => e.namespace).join(', ')}); name it as <namespace>/<name>`)
      const hit = hits[0] as Entry
      if (!hit.ping) throw new Error(`PingSource ${hit.namespace}/${hit.name} does not tick: ${hit.error ?? 'refused'}`)
      return hit.ping
    },
    keys: () => [...entries.keys()],
    start() {
      started = true
      for (const e of entries.values()) e.ping?.start()
    },
    setInterval(ms) {
      interval = ms
      for (const e of entries.values()) e.ping?.setInterval(ms)
    },
    async stop() {
      controller.abort()
      for (const e of entries.values()) stopEntry(e)
      entries.clear()
      await loop
    },
  }
}
