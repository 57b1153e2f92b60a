import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Logger } from '../../shared/log.js'
import { ApiError, methodNotAllowed, noSuchResource, notFound, withoutEmpty } from './api-error.js'
import { nonResource } from './http-non-resource.js'
import { deleteOptions, orphanDependentsFalse, parseBody, PATCH_TYPES, queryFlag, readBody, routeOf, writeOptions, type Route } from './http-request.js'
import { partial, rendering, sendError, sendJson, type Rendering } from './http-response.js'
import { podLog, watch, type StreamContext } from './http-streams.js'
import type { ObjectStore } from './object-store.js'
import { decodeProtobufObject } from './protobuf.js'
import { apiVersionOf, groupResource } from './resource-type.js'
import { answerReview, reviewAt } from './reviews.js'
import type { Stored } from './store/store-types.js'
import { toTable } from './table.js'

/**
 * The API server's HTTP front end: routes each request to the ObjectStore's verbs and answers
 * as kube-apiserver does. Reading requests is http-request.ts, writing answers http-response.ts,
 * watches and pod logs http-streams.ts, and discovery, OpenAPI and health http-non-resource.ts.
 */

/** Options for the HTTP front end. */
export interface HandlerOptions {
  log: Logger
  /** How often a watch with allowWatchBookmarks=true receives a BOOKMARK. */
  bookmarkIntervalMs: number
  /** host:port reported in /api. */
  serverAddress: () => string
}

/** The request handler plus a way to end every open watch or log stream (for shutdown). */
export interface RequestHandler {
  handle(req: IncomingMessage, res: ServerResponse): void
  closeStreams(): void
}

/** Builds the node:http handler that speaks the Kubernetes REST API over an ObjectStore. */
export function createRequestHandler(store: ObjectStore, opts: HandlerOptions): RequestHandler {
  const streams = new Set<() => void>()
  const streaming: StreamContext = { store, streams, bookmarkIntervalMs: opts.bookmarkIntervalMs }

  function renderOne(res: ServerResponse, code: number, route: Route, stored: Stored, how: Rendering, warnings: string[] = []): void {
    if (how.kind === 'table') {
      const table = toTable(route.target.rt, route.target.version, [store.objectAt(stored, route.target)], { include: how.include, now: Date.now() })
      sendJson(res, code, JSON.stringify(table), warnings)
    } else if (how.kind === 'partial') {
      sendJson(res, code, JSON.stringify(partial(stored.obj)), warnings)
    } else {
      sendJson(res, code, store.jsonAt(stored, route.target), warnings)
    }
  }

  function list(res: ServerResponse, route: Route, query: URLSearchParams, how: Rendering): void {
    const limit = Number(query.get('limit') ?? 0)
    const page = store.listIn(route.target, {
      namespace: route.ns,
      labelSelector: query.get('labelSelector') ?? undefined,
      fieldSelector: query.get('fieldSelector') ?? undefined,
      limit: Number.isFinite(limit) ? limit : 0,
      continue: query.get('continue') ?? undefined,
    })
    if (how.kind === 'table') {
      const table = toTable(route.target.rt, route.target.version, page.items.map((s) => store.objectAt(s, route.target)), {
        include: how.include,
        resourceVersion: page.resourceVersion,
        continueToken: page.continue,
        now: Date.now(),
      })
      sendJson(res, 200, JSON.stringify(table))
      return
    }
    const meta = page.continue ? { resourceVersion: page.resourceVersion, continue: page.continue } : { resourceVersion: page.resourceVersion }
    if (how.kind === 'partial') {
      sendJson(res, 200, JSON.stringify({ kind: 'PartialObjectMetadataList', apiVersion: 'meta.k8s.io/v1', metadata: meta, items: page.items.map((s) => partial(s.obj)) }))
      return
    }
    const head = `{"kind":${JSON.stringify(route.target.rt.listKind)},"apiVersion":${JSON.stringify(apiVersionOf(route.target.rt.group, route.target.version))},"metadata":${JSON.stringify(meta)},"items":[`
    sendJson(res, 200, `${head}${page.items.map((s) => store.jsonAt(s, route.target)).join(',')}]}`)
  }

  // 200 whether or not the object is gone at once; 202 only for the deprecated
  // orphanDependents=false while the object stays (what the real server does, for old clients).
  function deleted(res: ServerResponse, route: Route, stored: Stored, done: boolean, how: Rendering, accepted: boolean): void {
    const code = accepted && !done ? 202 : 200
    if (route.target.rt.returnDeletedObject || !done) {
      renderOne(res, code, route, stored, how)
      return
    }
    const details = withoutEmpty({ name: stored.obj.metadata.name, group: route.target.rt.group, kind: route.target.rt.plural, uid: stored.obj.metadata.uid })
    sendJson(res, code, JSON.stringify({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', details }))
  }

  async function resource(req: IncomingMessage, res: ServerResponse, route: Route, query: URLSearchParams): Promise<void> {
    const method = req.method ?? 'GET'
    const how = rendering(req.headers.accept, query)
    const { rt } = route.target
    const ns = rt.namespaced ? (route.ns ?? '') : ''
    if (route.sub === 'log') {
      if (method !== 'GET') throw methodNotAllowed()
      podLog(streaming, res, route, query)
      return
    }
    const sub = route.sub === 'status' ? ('status' as const) : undefined
    if (method === 'GET') {
      if (route.name === undefined) {
        if (route.watch || queryFlag(query, 'watch')) watch(streaming, res, route, query, how)
        else list(res, route, query, how)
        return
      }
      if (route.watch || queryFlag(query, 'watch')) {
        query.set('fieldSelector', `metadata.name=${route.name}`)
        watch(streaming, res, route, query, how)
        return
      }
      const stored = store.find(rt, ns, route.name)
      if (!stored) throw notFound(rt, route.name)
      renderOne(res, 200, route, stored, how)
      return
    }
    const contentType = String(req.headers['content-type'] ?? 'application/json')
    if (contentType.includes('cbor')) {
      throw new ApiError(415, 'UnsupportedMediaType', 'the body of the request was in an unknown format - accepted media types include: application/json, application/yaml')
    }
    const raw = await readBody(req)
    const body = contentType.includes('protobuf') ? decodeProtobufObject(raw) : parseBody(raw, contentType, rt.kind, method === 'PATCH' || method === 'DELETE')
    const wopts = writeOptions(query, req)
    if (method === 'POST') {
      if (route.name !== undefined) throw methodNotAllowed()
      if (rt.namespaced && route.ns === undefined) throw methodNotAllowed()
      const result = store.createIn(route.target, body, route.ns, wopts)
      renderOne(res, 201, route, result.stored, how, result.warnings)
      opts.log.debug({ verb: 'create', resource: groupResource(rt), namespace: route.ns, name: result.stored.obj.metadata.name }, 'Created object')
      return
    }
    if (method === 'PUT') {
      if (route.name === undefined) throw methodNotAllowed()
      const result = store.updateIn(route.target, ns, route.name, body, { ...wopts, ...(sub ? { subresource: sub } : {}) })
      renderOne(res, 200, route, result.stored, how, result.warnings)
      return
    }
    if (method === 'PATCH') {
      if (route.name === undefined) throw methodNotAllowed()
      const type = PATCH_TYPES[contentType.split(';')[0]?.trim() ?? '']
      if (!type) throw new ApiError(415, 'UnsupportedMediaType', `the body of the request was in an unknown format - accepted media types include: ${Object.keys(PATCH_TYPES).join(', ')}`)
      const result = store.patchIn(route.target, ns, route.name, body, { ...wopts, type, ...(sub ? { subresource: sub } : {}) })
      renderOne(res, result.created ? 201 : 200, route, result.stored, how, result.warnings)
      return
    }
    if (method === 'DELETE') {
      if (sub) throw methodNotAllowed()
      const dopts = deleteOptions(body, query)
      if (route.name !== undefined) {
        const result = store.deleteIn(route.target, ns, route.name, dopts)
        deleted(res, route, result.stored, result.deleted !== false, how, orphanDependentsFalse(body, query))
        return
      }
      const page = store.listIn(route.target, { namespace: route.ns, labelSelector: query.get('labelSelector') ?? undefined, fieldSelector: query.get('fieldSelector') ?? undefined })
      const items: string[] = []
      for (const s of page.items) {
        try {
          items.push(store.jsonAt(store.deleteIn(route.target, s.obj.metadata.namespace ?? '', s.obj.metadata.name as string, dopts).stored, route.target))
        } catch (err) {
          if (!(err instanceof ApiError && err.code === 404)) throw err
        }
      }
      sendJson(res, 200, `{"kind":${JSON.stringify(rt.listKind)},"apiVersion":${JSON.stringify(apiVersionOf(rt.group, route.target.version))},"metadata":{"resourceVersion":${JSON.stringify(store.resourceVersion)}},"items":[${items.join(',')}]}`)
      return
    }
    throw methodNotAllowed()
  }

  async function dispatch(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = req.url ?? '/'
    const qAt = url.indexOf('?')
    const path = qAt < 0 ? url : url.slice(0, qAt)
    const query = new URLSearchParams(qAt < 0 ? '' : url.slice(qAt + 1))
    const segs = path.split('/').filter((s) => s.length > 0).map(decodeURIComponent)
    const normalized = `/${segs.join('/')}`
    const review = reviewAt(segs)
    if (review) {
      if (req.method !== 'POST') throw methodNotAllowed()
      const raw = await readBody(req)
      const contentType = String(req.headers['content-type'] ?? 'application/json')
      const body = contentType.includes('protobuf') ? decodeProtobufObject(raw) : parseBody(raw, contentType, review.kind, false)
      sendJson(res, 201, JSON.stringify(answerReview(review, body, req.headersDistinct, `${new Date().toISOString().slice(0, 19)}Z`)))
      return
    }
    const isResource = (segs[0] === 'api' && segs.length > 2) || (segs[0] === 'apis' && segs.length > 3)
    if (!isResource) {
      if (req.method !== 'GET' && req.method !== 'HEAD') throw methodNotAllowed()
      nonResource(store.registry, opts.serverAddress, req, res, segs, normalized)
      return
    }
    const route = routeOf(segs, store.registry)
    if (!route) throw noSuchResource()
    await resource(req, res, route, query)
  }

  return {
    handle(req, res) {
      const started = performance.now()
      dispatch(req, res)
        .catch((err: unknown) => {
          if (err instanceof ApiError) {
            sendError(res, err)
            return
          }
          opts.log.error({ err, method: req.method, url: req.url }, 'Request failed unexpectedly')
          sendError(res, new ApiError(500, 'InternalError', `an error on the server has prevented the request from succeeding: ${(err as Error)?.message ?? String(err)}`))
        })
        .finally(() => {
          if (opts.log.isLevelEnabled('debug')) {
            opts.log.debug({ method: req.method, url: req.url, code: res.statusCode, ms: Math.round(performance.now() - started) }, 'Handled request')
          }
        })
    },
    closeStreams() {
      for (const finish of [...streams]) finish()
    },
  }
}
