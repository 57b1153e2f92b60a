import type { ServerResponse } from 'node:http'
import { ApiError } from './api-error.js'
import { queryFlag, type Route } from './http-request.js'
import { partial, type Rendering } from './http-response.js'
import type { ObjectStore } from './object-store.js'
import { apiVersionOf } from './resource-type.js'
import { parseFieldSelector, parseLabelSelector } from './selectors.js'
import type { Stored } from './store/store-types.js'
import { toTable } from './table.js'
import type { WatchEventType } from './types.js'

/**
 * The API server's streamed answers: a watch (events, bookmarks, timeoutSeconds) and a pod's
 * log (tailLines, limitBytes, follow). Each open stream registers how to end it in `streams`,
 * so shutting down ends them all.
 */

/** What a stream needs of the server. */
export interface StreamContext {
  store: ObjectStore
  /** The open streams, each as the function that ends it. */
  streams: Set<() => void>
  /** How often a watch with allowWatchBookmarks=true receives a BOOKMARK. */
  bookmarkIntervalMs: number
}

/** Streams the events of a watch until the client goes, the timeout passes or the server shuts down. */
export function watch(context: StreamContext, res: ServerResponse, route: Route, query: URLSearchParams, how: Rendering): void {
  const { store, streams } = context
  parseLabelSelector(query.get('labelSelector'))
  parseFieldSelector(query.get('fieldSelector'), store.fieldSelectorRules(route.target.rt))
  res.writeHead(200, { 'Content-Type': 'application/json', 'Cache-Control': 'no-cache, private', 'Transfer-Encoding': 'chunked' })
  res.flushHeaders()
  const { rt, version } = route.target
  const apiVersion = apiVersionOf(rt.group, version)
  const bookmarks = queryFlag(query, 'allowWatchBookmarks')
  const write = (line: string): void => {
    if (!res.writableEnded) res.write(line)
  }
  const eventLine = (type: WatchEventType, stored: Stored): string => {
    if (how.kind === 'json') return store.watchLine(type, stored, route.target)
    const obj = store.objectAt(stored, route.target)
    const object = how.kind === 'table' ? toTable(rt, version, [obj], { include: how.include, now: Date.now() }) : partial(obj)
    return `${JSON.stringify({ type, object })}\n`
  }
  const bookmark = (rv: string, initialEnd: boolean): void => {
    const metadata: Record<string, unknown> = { resourceVersion: rv }
    if (initialEnd) metadata.annotations = { 'k8s.io/initial-events-end': 'true' }
    write(`${JSON.stringify({ type: 'BOOKMARK', object: { kind: rt.kind, apiVersion, metadata } })}\n`)
  }
  let stop: () => void = () => {}
  const timers: NodeJS.Timeout[] = []
  const finish = (): void => {
    stop()
    for (const t of timers) clearTimeout(t)
    streams.delete(finish)
    if (!res.writableEnded) res.end()
  }
  streams.add(finish)
  res.on('close', finish)
  try {
    stop = store.watchIn(route.target, {
      namespace: route.ns,
      labelSelector: query.get('labelSelector') ?? undefined,
      fieldSelector: query.get('fieldSelector') ?? undefined,
      resourceVersion: query.get('resourceVersion') ?? undefined,
      sendInitialEvents: queryFlag(query, 'sendInitialEvents'),
      allowWatchBookmarks: bookmarks,
    }, {
      event: (type, stored) => write(eventLine(type, stored)),
      bookmark,
    })
  } catch (err) {
    if (!(err instanceof ApiError)) throw err
    write(`${JSON.stringify({ type: 'ERROR', object: err.toStatus() })}\n`)
    finish()
    return
  }
  if (bookmarks) {
    const interval = setInterval(() => bookmark(store.resourceVersion, false), context.bookmarkIntervalMs)
    interval.unref()
    timers.push(interval)
  }
  const timeout = Number(query.get('timeoutSeconds') ?? 0)
  if (timeout > 0) {
    const t = setTimeout(() => {
      if (bookmarks) bookmark(store.resourceVersion, false)
      finish()
    }, timeout * 1000)
    t.unref()
    timers.push(t)
  }
}

/** Serves a pod's log, and with follow=true what is written to it afterwards. */
export function podLog(context: StreamContext, res: ServerResponse, route: Route, query: URLSearchParams): void {
  const { store, streams } = context
  const ns = route.ns as string
  const name = route.name as string
  const tail = query.get('tailLines')
  const text = store.podLog(ns, name, tail !== null ? { tailLines: Number(tail) } : {})
  // A pod no node runs and nothing wrote for has no log to serve or follow: 204, as kube-apiserver
  // answers for an unscheduled pod. (The Job runner's pods have a nodeName; tests that write a
  // log for a pod stand in for whatever runs it.)
  const nodeName = (store.find(route.target.rt, ns, name)?.obj.spec as { nodeName?: string } | undefined)?.nodeName
  if (!nodeName && !store.podLog(ns, name)) {
    res.writeHead(204)
    res.end()
    return
  }
  // limitBytes caps everything served, the followed part included, as on a real kubelet.
  const limit = Number(query.get('limitBytes') ?? 0)
  let left = Number.isFinite(limit) && limit > 0 ? limit : Infinity
  const capped = (chunk: string): string => {
    if (left === Infinity) return chunk
    const bytes = Buffer.from(chunk)
    const kept = bytes.subarray(0, left)
    left -= kept.length
    return kept.toString()
  }
  if (!queryFlag(query, 'follow')) {
    res.writeHead(200, { 'Content-Type': 'text/plain' })
    res.end(capped(text))
    return
  }
  res.writeHead(200, { 'Content-Type': 'text/plain', 'Transfer-Encoding': 'chunked' })
  res.write(capped(text))
  let stop: () => void = () => {}
  const finish = (): void => {
    stop()
    streams.delete(finish)
    if (!res.writableEnded) res.end()
  }
  streams.add(finish)
  res.on('close', finish)
  if (left <= 0) {
    finish()
    return
  }
  stop = store.followPodLog(ns, name, (chunk) => {
    if (chunk === null) return finish()
    res.write(capped(chunk))
    if (left <= 0) finish()
  })
}
