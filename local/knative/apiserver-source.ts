import { randomUUID } from 'node:crypto'
import { setMaxListeners } from 'node:events'
import type { Logger } from '../../shared/log.js'
import type { KEvent } from './cloud-event.js'
import { KubeHttpError, type KubeHttp, type KubeObject, type WatchEvent } from './kube-http.js'
import { isEmptySelector, selectorMatches, selectorQuery, type LabelSelector } from './label-selector.js'
import type { ApiServerSourceSpec, Manifest } from './manifests.js'
import { collectionPath, subjectFor } from './resource-path.js'

/** Where a source sends: resolves with the HTTP-like status of the sink. */
export type EventSink = (event: KEvent) => Promise<number>

/** A running ApiServerSource emulation. */
export interface RunningSource {
  name: string
  /** Resolves once every watch has listed and is watching (no event before this is lost). */
  ready: Promise<void>
  stop(): Promise<void>
}

const RETRY_MS = 1000

/**
 * Emulates one ApiServerSource as Knative's adapter behaves: one list+watch per resource
 * (cluster-wide for `namespaceSelector: {}` or a non-empty selector, else the source's
 * namespace), no events for objects that exist at start, every MODIFIED as an update,
 * re-list and resume on 410 Gone (changes in the gap are lost), events sent one at a time.
 */
export function startApiServerSource(
  source: Manifest<ApiServerSourceSpec>,
  kube: KubeHttp,
  sink: EventSink,
  log: Logger,
): RunningSource {
  const controller = new AbortController()
  const spec = source.spec
  // Each watch holds two abort listeners on the one signal (its request and its stream); a source
  // of many kinds (recipe-children has eight) would otherwise trip Node's leak warning at ten.
  setMaxListeners(10 + 2 * (spec.resources?.length ?? 0), controller.signal)
  const mode = spec.mode ?? 'Reference'
  if (mode !== 'Resource' && mode !== 'Reference') throw new Error(`ApiServerSource ${source.metadata.name}: mode must be Resource or Reference, not ${String(mode)}`)
  const nsSelector = spec.namespaceSelector
  const clusterWide = nsSelector !== undefined
  const nsFilter = nsSelector && !isEmptySelector(nsSelector) ? nsSelector : undefined
  const slog = log.child({ source: source.metadata.name })
  const readies: Promise<void>[] = []
  const loops: Promise<void>[] = []

  for (const resource of spec.resources ?? []) {
    const path = collectionPath(resource.apiVersion, resource.kind, clusterWide ? undefined : source.metadata.namespace)
    let markReady!: () => void
    readies.push(new Promise<void>((r) => { markReady = r }))
    const onEvent = async (ev: WatchEvent) => {
      const obj = ev.object
      if (nsFilter && !(await namespaceMatches(kube, nsFilter, obj.metadata?.namespace))) return
      if (spec.owner && !hasControllerOwner(obj, spec.owner)) return
      const verb = ev.type === 'ADDED' ? 'add' : ev.type === 'MODIFIED' ? 'update' : 'delete'
      const event = buildEvent(kube.server, mode, verb, obj, spec.ceOverrides?.extensions ?? {})
      // The watch waits for this before it reads its next event: sending is one at a time per
      // watch, as each of Knative's reflectors blocks on its send, and side by side across the
      // source's resources, as its reflectors run in parallel.
      try {
        const status = await sink(event)
        if (status >= 300) slog.error({ ceId: event.id, ceType: event.type, subject: event.subject, status }, 'Sink did not accept the event; the adapter does not resend it')
      } catch (err) {
        slog.error({ ceId: event.id, ceType: event.type, subject: event.subject, err: String(err) }, 'Could not send the event; it is lost')
      }
    }
    loops.push(runWatch(kube, path, selectorQuery(resource.selector), onEvent, markReady, controller.signal, slog, `${resource.kind}.${resource.apiVersion}`))
  }

  return {
    name: source.metadata.name,
    ready: Promise.all(readies).then(() => undefined),
    async stop() {
      controller.abort()
      await Promise.allSettled(loops)
    },
  }
}

/** Pure: the CloudEvent Knative's adapter sends for one watch event. */
export function buildEvent(server: string, mode: 'Resource' | 'Reference', verb: 'add' | 'update' | 'delete', obj: KubeObject, overrides: Record<string, string>): KEvent {
  const apiVersion = String(obj.apiVersion ?? '')
  const kind = String(obj.kind ?? '')
  const name = String(obj.metadata?.name ?? '')
  const namespace = String(obj.metadata?.namespace ?? '')
  const ref: Record<string, string> = { kind }
  if (namespace) ref.namespace = namespace
  ref.name = name
  ref.apiVersion = apiVersion
  return {
    specversion: '1.0',
    id: randomUUID(),
    type: `dev.knative.apiserver.${mode === 'Resource' ? 'resource' : 'ref'}.${verb}`,
    source: server,
    subject: subjectFor(apiVersion, kind, namespace, name),
    time: new Date().toISOString(),
    datacontenttype: 'application/json',
    extensions: { kind, apiversion: apiVersion, name, namespace, ...overrides },
    data: mode === 'Resource' ? obj : ref,
  }
}

async function runWatch(
  kube: KubeHttp,
  path: string,
  labelSelector: string,
  onEvent: (ev: WatchEvent) => Promise<void>,
  markReady: () => void,
  signal: AbortSignal,
  log: Logger,
  what: string,
): Promise<void> {
  const sel = labelSelector ? `&labelSelector=${encodeURIComponent(labelSelector)}` : ''
  let rv: string | undefined
  while (!signal.aborted) {
    try {
      if (rv === undefined) {
        // The list only establishes where to watch from: Knative's store ignores Replace.
        const list = await kube.request<{ metadata?: { resourceVersion?: string } }>('GET', `${path}?${sel.slice(1)}`)
        rv = list.metadata?.resourceVersion ?? '0'
      }
      let gone = false
      markReady()
      await kube.watch(`${path}?watch=1&allowWatchBookmarks=true&resourceVersion=${rv}${sel}`, async (ev) => {
        if (ev.type === 'ERROR') {
          const code = (ev.object as { code?: number }).code
          if (code === 410) gone = true
          else log.warn({ resource: what, status: ev.object }, 'Watch reported an error')
          return
        }
        const next = ev.object.metadata?.resourceVersion
        if (next) rv = next
        if (ev.type === 'BOOKMARK') return
        await onEvent(ev)
      }, signal)
      if (gone) {
        log.warn({ resource: what }, 'Watch expired (410 Gone): listing again; changes in the gap are lost, as with Knative')
        rv = undefined
      }
    } catch (err) {
      if (signal.aborted) return
      if (err instanceof KubeHttpError && err.status === 410) {
        log.warn({ resource: what }, 'Watch expired (410 Gone): listing again; changes in the gap are lost, as with Knative')
        rv = undefined
        continue
      }
      if (err instanceof KubeHttpError && err.status === 404) {
        log.error({ resource: what, path }, 'Resource does not exist on the API server (Knative guesses the plural from the kind); retrying')
      } else {
        log.warn({ resource: what, err: String(err) }, 'Watch failed; retrying')
      }
      await new Promise((r) => setTimeout(r, RETRY_MS))
    }
  }
}

async function namespaceMatches(kube: KubeHttp, selector: LabelSelector, namespace: string | undefined): Promise<boolean> {
  if (!namespace) return false
  const ns = await kube.get(`/api/v1/namespaces/${encodeURIComponent(namespace)}`).catch(() => null)
  return ns !== null && selectorMatches(selector, ns.metadata?.labels)
}

function hasControllerOwner(obj: KubeObject, owner: { apiVersion?: string; kind?: string }): boolean {
  return (obj.metadata?.ownerReferences ?? []).some(
    (r) => r.controller === true && (!owner.apiVersion || r.apiVersion === owner.apiVersion) && (!owner.kind || r.kind === owner.kind),
  )
}
