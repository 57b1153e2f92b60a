import type { IncomingMessage, ServerResponse } from 'node:http'
import { parse as parseYaml } from 'yaml'
import type { Logger } from '../../shared/log.js'
import { ApiError, badRequest, methodNotAllowed, noSuchResource, notFound, withoutEmpty } from './api-error.js'
import { apiGroup, apiVersions, groupList, resourceList, SERVER_VERSION } from './discovery.js'
import type { ObjectStore } from './object-store.js'
import type { DeleteOptions, ManagerOptions, PatchType, Stored, Target, WriteOptions } from './store/store-types.js'
import { openApiV2Document, openApiV3Document, openApiV3Index } from './openapi.js'
import { openApiV2Protobuf } from './openapi-v2-protobuf.js'
import { decodeProtobufObject } from './protobuf.js'
import { bodyHint } from './decoding.js'
import { apiVersionOf, groupResource } from './resource-type.js'
import { answerReview, reviewAt } from './reviews.js'
import { parseFieldSelector, parseLabelSelector } from './selectors.js'
import { toTable, type IncludeObject } from './table.js'
import type { KubeObject, WatchEventType } from './types.js'

/** The media type of the protobuf OpenAPI v2 document. */
const OPENAPI_V2_PROTOBUF = 'application/com.github.proto-openapi.spec.v2@v1.0+protobuf'

/** Request bodies above this are refused before parsing, like the real server's 3 MiB cap. */
const MAX_BODY_BYTES = 3 * 1024 * 1024

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

interface Route {
  t: Target
  ns?: string
  name?: string
  sub?: string
  watch: boolean
}

const PATCH_TYPES: Record<string, PatchType> = {
  'application/merge-patch+json': 'merge',
  'application/json-patch+json': 'json',
  'application/strategic-merge-patch+json': 'strategic',
  'application/apply-patch+yaml': 'apply',
}

function sendJson(res: ServerResponse, code: number, body: string, warnings: string[] = []): void {
  const headers: Record<string, string | string[]> = { 'Content-Type': 'application/json', 'Cache-Control': 'no-cache, private' }
  if (warnings.length) headers.Warning = warnings.map((w) => `299 - ${JSON.stringify(w)}`)
  res.writeHead(code, headers)
  res.end(body)
}

function sendError(res: ServerResponse, err: ApiError): void {
  if (res.headersSent) {
    res.end()
    return
  }
  sendJson(res, err.code, JSON.stringify(err.toStatus()))
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    req.on('data', (chunk: Buffer) => {
      size += chunk.length
      if (size > MAX_BODY_BYTES) {
        reject(new ApiError(413, 'RequestEntityTooLarge', `Request entity too large: limit is ${MAX_BODY_BYTES}`))
        req.resume()
        return
      }
      chunks.push(chunk)
    })
    req.on('end', () => resolve(Buffer.concat(chunks)))
    req.on('error', reject)
  })
}

/**
 * Decodes a request body, refusing what does not decode in the real server's words: a create or
 * update names the kind it expected and shows the start of the body, a patch says so. Syntax
 * errors are explained by JavaScript's parser rather than Go's, except for an empty body.
 */
function parseBody(raw: Buffer, contentType: string, kind: string, patch: boolean): unknown {
  const text = raw.toString('utf8')
  const yaml = contentType.includes('yaml')
  if (!text.trim()) {
    if (patch || yaml) return undefined
    throw badRequest(`the object provided is unrecognized (must be of type ${kind}): couldn't get version/kind; json parse error: unexpected end of JSON input (<empty>)`)
  }
  let value: unknown
  try {
    value = yaml ? parseYaml(text) : JSON.parse(text)
  } catch (err) {
    const why = firstLower((err as Error).message.split('\n')[0] ?? '')
    if (yaml) throw badRequest(`error decoding YAML: error converting YAML to JSON: yaml: ${why}`)
    if (patch) throw badRequest(`error decoding patch: ${why}`)
    throw badRequest(`the object provided is unrecognized (must be of type ${kind}): couldn't get version/kind; json parse error: ${why} (${bodyHint(raw)})`)
  }
  if (!patch && !yaml && (value === null || typeof value !== 'object' || Array.isArray(value))) {
    if (value === null) throw badRequest(`the object provided is unrecognized (must be of type ${kind}): Object 'Kind' is missing in 'null' (${bodyHint(raw)})`)
    const type = Array.isArray(value) ? 'array' : typeof value === 'boolean' ? 'bool' : typeof value
    throw badRequest(`the object provided is unrecognized (must be of type ${kind}): couldn't get version/kind; json parse error: json: cannot unmarshal ${type} into Go value of type struct { APIVersion string "json:\\"apiVersion,omitempty\\""; Kind string "json:\\"kind,omitempty\\"" } (${bodyHint(raw)})`)
  }
  return value
}

const firstLower = (s: string) => s.charAt(0).toLowerCase() + s.slice(1)


function bool(q: URLSearchParams, key: string): boolean {
  const v = q.get(key)
  return v === 'true' || v === '1'
}

function writeOptions(q: URLSearchParams, req: IncomingMessage): WriteOptions & ManagerOptions & { force?: boolean } {
  const out: WriteOptions & ManagerOptions & { force?: boolean } = {}
  if (q.getAll('dryRun').includes('All')) out.dryRun = true
  const fv = q.get('fieldValidation')
  if (fv === 'Strict' || fv === 'Warn' || fv === 'Ignore') out.fieldValidation = fv
  const fm = q.get('fieldManager')
  if (fm) out.fieldManager = fm
  // Like the real server: a write that names no manager is recorded under its User-Agent's first part.
  const ua = String(req.headers['user-agent'] ?? '')
  out.defaultManager = ua ? (ua.split('/')[0] as string) : 'unknown'
  if (bool(q, 'force')) out.force = true
  return out
}

type Rendering = { kind: 'json' } | { kind: 'table'; include: IncludeObject } | { kind: 'partial' }

function rendering(accept: string | undefined, q: URLSearchParams): Rendering {
  if (!accept) return { kind: 'json' }
  if (accept.includes('as=Table')) {
    const inc = q.get('includeObject')
    return { kind: 'table', include: inc === 'None' || inc === 'Object' ? inc : 'Metadata' }
  }
  if (accept.includes('as=PartialObjectMetadata')) return { kind: 'partial' }
  return { kind: 'json' }
}

function partial(obj: KubeObject): object {
  return { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: obj.metadata }
}

/** Builds the node:http handler that speaks the Kubernetes REST API over an ObjectStore. */
export function createRequestHandler(store: ObjectStore, opts: HandlerOptions): RequestHandler {
  const streams = new Set<() => void>()

  function route(segs: string[]): Route | undefined {
    let group = ''
    let version: string
    let rest: string[]
    if (segs[0] === 'api') {
      version = segs[1] as string
      rest = segs.slice(2)
    } else {
      group = segs[1] as string
      version = segs[2] as string
      rest = segs.slice(3)
    }
    const av = apiVersionOf(group, version)
    let watch = false
    if (rest[0] === 'watch') {
      watch = true
      rest = rest.slice(1)
    }
    let ns: string | undefined
    if (rest[0] === 'namespaces' && rest.length >= 3 && store.registry.byPlural(av, rest[2] as string)?.namespaced) {
      ns = rest[1]
      rest = rest.slice(2)
    }
    if (rest.length === 0 || rest.length > 3) return undefined
    const rt = store.registry.byPlural(av, rest[0] as string)
    if (!rt) return undefined
    const r: Route = { t: { rt, version }, watch }
    if (ns !== undefined) r.ns = ns
    if (rest[1] !== undefined) r.name = rest[1]
    if (rest[2] !== undefined) r.sub = rest[2]
    if (!rt.namespaced && ns !== undefined) return undefined
    if (rt.namespaced && ns === undefined && r.name !== undefined) return undefined
    if (r.sub !== undefined && !(r.sub === 'status' && rt.statusSubresource) && !rt.extraSubresources.includes(r.sub)) return undefined
    return r
  }

  function renderOne(res: ServerResponse, code: number, r: Route, stored: Stored, how: Rendering, warnings: string[] = []): void {
    if (how.kind === 'table') {
      const table = toTable(r.t.rt, r.t.version, [store.objectAt(stored, r.t)], { include: how.include, now: Date.now() })
      sendJson(res, code, JSON.stringify(table), warnings)
    } else if (how.kind === 'partial') {
      sendJson(res, code, JSON.stringify(partial(stored.obj)), warnings)
    } else {
      sendJson(res, code, store.jsonAt(stored, r.t), warnings)
    }
  }

  function list(res: ServerResponse, r: Route, q: URLSearchParams, how: Rendering): void {
    const limit = Number(q.get('limit') ?? 0)
    const page = store.listIn(r.t, {
      namespace: r.ns,
      labelSelector: q.get('labelSelector') ?? undefined,
      fieldSelector: q.get('fieldSelector') ?? undefined,
      limit: Number.isFinite(limit) ? limit : 0,
      continue: q.get('continue') ?? undefined,
    })
    if (how.kind === 'table') {
      const table = toTable(r.t.rt, r.t.version, page.items.map((s) => store.objectAt(s, r.t)), {
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
    const head = `{"kind":${JSON.stringify(r.t.rt.listKind)},"apiVersion":${JSON.stringify(apiVersionOf(r.t.rt.group, r.t.version))},"metadata":${JSON.stringify(meta)},"items":[`
    sendJson(res, 200, `${head}${page.items.map((s) => store.jsonAt(s, r.t)).join(',')}]}`)
  }

  function watch(res: ServerResponse, r: Route, q: URLSearchParams, how: Rendering): void {
    parseLabelSelector(q.get('labelSelector'))
    parseFieldSelector(q.get('fieldSelector'), store.fieldSelectorRules(r.t.rt))
    res.writeHead(200, { 'Content-Type': 'application/json', 'Cache-Control': 'no-cache, private', 'Transfer-Encoding': 'chunked' })
    res.flushHeaders()
    const { rt, version } = r.t
    const apiVersion = apiVersionOf(rt.group, version)
    const bookmarks = bool(q, 'allowWatchBookmarks')
    const write = (line: string): void => {
      if (!res.writableEnded) res.write(line)
    }
    const eventLine = (type: WatchEventType, stored: Stored): string => {
      if (how.kind === 'json') return store.watchLine(type, stored, r.t)
      const obj = store.objectAt(stored, r.t)
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
      stop = store.watchIn(r.t, {
        namespace: r.ns,
        labelSelector: q.get('labelSelector') ?? undefined,
        fieldSelector: q.get('fieldSelector') ?? undefined,
        resourceVersion: q.get('resourceVersion') ?? undefined,
        sendInitialEvents: bool(q, 'sendInitialEvents'),
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
      const interval = setInterval(() => bookmark(store.resourceVersion, false), opts.bookmarkIntervalMs)
      interval.unref()
      timers.push(interval)
    }
    const timeout = Number(q.get('timeoutSeconds') ?? 0)
    if (timeout > 0) {
      const t = setTimeout(() => {
        if (bookmarks) bookmark(store.resourceVersion, false)
        finish()
      }, timeout * 1000)
      t.unref()
      timers.push(t)
    }
  }

  function podLog(res: ServerResponse, r: Route, q: URLSearchParams): void {
    const ns = r.ns as string
    const name = r.name as string
    const tail = q.get('tailLines')
    const text = store.podLog(ns, name, tail !== null ? { tailLines: Number(tail) } : {})
    // A pod no node runs and nothing wrote for has no log to serve or follow: 204, as kube-apiserver
    // answers for an unscheduled pod. (The Job runner's pods have a nodeName; tests that write a
    // log for a pod stand in for whatever runs it.)
    const nodeName = (store.find(r.t.rt, ns, name)?.obj.spec as { nodeName?: string } | undefined)?.nodeName
    if (!nodeName && !store.podLog(ns, name)) {
      res.writeHead(204)
      res.end()
      return
    }
    // limitBytes caps everything served, the followed part included, as on a real kubelet.
    const limit = Number(q.get('limitBytes') ?? 0)
    let left = Number.isFinite(limit) && limit > 0 ? limit : Infinity
    const capped = (chunk: string): string => {
      if (left === Infinity) return chunk
      const bytes = Buffer.from(chunk)
      const kept = bytes.subarray(0, left)
      left -= kept.length
      return kept.toString()
    }
    if (!bool(q, 'follow')) {
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

  function orphanDependentsFalse(body: unknown, q: URLSearchParams): boolean {
    return q.get('orphanDependents') === 'false' || (typeof body === 'object' && body !== null && (body as Record<string, unknown>).orphanDependents === false)
  }

  function deleteOptions(body: unknown, q: URLSearchParams): DeleteOptions {
    const out: DeleteOptions = {}
    const b = (body && typeof body === 'object' ? body : {}) as Record<string, unknown>
    const policy = q.get('propagationPolicy') ?? b.propagationPolicy
    if (policy === 'Background' || policy === 'Foreground' || policy === 'Orphan') out.propagationPolicy = policy
    else if (policy !== undefined && policy !== null) throw badRequest(`invalid propagationPolicy: ${String(policy)}`)
    if (b.orphanDependents === true || q.get('orphanDependents') === 'true') out.propagationPolicy = 'Orphan'
    if (b.preconditions && typeof b.preconditions === 'object') out.preconditions = b.preconditions as DeleteOptions['preconditions'] & object
    if (q.getAll('dryRun').includes('All') || (Array.isArray(b.dryRun) && b.dryRun.includes('All'))) out.dryRun = true
    return out
  }

  // 200 whether or not the object is gone at once; 202 only for the deprecated
  // orphanDependents=false while the object stays (what the real server does, for old clients).
  function deleted(res: ServerResponse, r: Route, stored: Stored, done: boolean, how: Rendering, accepted: boolean): void {
    const code = accepted && !done ? 202 : 200
    if (r.t.rt.returnDeletedObject || !done) {
      renderOne(res, code, r, stored, how)
      return
    }
    const details = withoutEmpty({ name: stored.obj.metadata.name, group: r.t.rt.group, kind: r.t.rt.plural, uid: stored.obj.metadata.uid })
    sendJson(res, code, JSON.stringify({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', details }))
  }

  async function resource(req: IncomingMessage, res: ServerResponse, r: Route, q: URLSearchParams): Promise<void> {
    const method = req.method ?? 'GET'
    const how = rendering(req.headers.accept, q)
    const { rt } = r.t
    const ns = rt.namespaced ? (r.ns ?? '') : ''
    if (r.sub === 'log') {
      if (method !== 'GET') throw methodNotAllowed()
      podLog(res, r, q)
      return
    }
    const sub = r.sub === 'status' ? ('status' as const) : undefined
    if (method === 'GET') {
      if (r.name === undefined) {
        if (r.watch || bool(q, 'watch')) watch(res, r, q, how)
        else list(res, r, q, how)
        return
      }
      if (r.watch || bool(q, 'watch')) {
        q.set('fieldSelector', `metadata.name=${r.name}`)
        watch(res, r, q, how)
        return
      }
      const stored = store.find(rt, ns, r.name)
      if (!stored) throw notFound(rt, r.name)
      renderOne(res, 200, r, stored, how)
      return
    }
    const contentType = String(req.headers['content-type'] ?? 'application/json')
    if (contentType.includes('cbor')) {
      throw new ApiError(415, 'UnsupportedMediaType', 'the body of the request was in an unknown format - accepted media types include: application/json, application/yaml')
    }
    const raw = await readBody(req)
    const body = contentType.includes('protobuf') ? decodeProtobufObject(raw) : parseBody(raw, contentType, rt.kind, method === 'PATCH' || method === 'DELETE')
    const wopts = writeOptions(q, req)
    if (method === 'POST') {
      if (r.name !== undefined) throw methodNotAllowed()
      if (rt.namespaced && r.ns === undefined) throw methodNotAllowed()
      const result = store.createIn(r.t, body, r.ns, wopts)
      renderOne(res, 201, r, result.stored, how, result.warnings)
      opts.log.debug({ verb: 'create', resource: groupResource(rt), namespace: r.ns, name: result.stored.obj.metadata.name }, 'Created object')
      return
    }
    if (method === 'PUT') {
      if (r.name === undefined) throw methodNotAllowed()
      const result = store.updateIn(r.t, ns, r.name, body, { ...wopts, ...(sub ? { subresource: sub } : {}) })
      renderOne(res, 200, r, result.stored, how, result.warnings)
      return
    }
    if (method === 'PATCH') {
      if (r.name === undefined) throw methodNotAllowed()
      const type = PATCH_TYPES[contentType.split(';')[0]?.trim() ?? '']
      if (!type) throw new ApiError(415, 'UnsupportedMediaType', `the body of the request was in an unknown format - accepted media types include: ${Object.keys(PATCH_TYPES).join(', ')}`)
      const result = store.patchIn(r.t, ns, r.name, body, { ...wopts, type, ...(sub ? { subresource: sub } : {}) })
      renderOne(res, result.created ? 201 : 200, r, result.stored, how, result.warnings)
      return
    }
    if (method === 'DELETE') {
      if (sub) throw methodNotAllowed()
      const dopts = deleteOptions(body, q)
      if (r.name !== undefined) {
        const result = store.deleteIn(r.t, ns, r.name, dopts)
        deleted(res, r, result.stored, result.deleted !== false, how, orphanDependentsFalse(body, q))
        return
      }
      const page = store.listIn(r.t, { namespace: r.ns, labelSelector: q.get('labelSelector') ?? undefined, fieldSelector: q.get('fieldSelector') ?? undefined })
      const items: string[] = []
      for (const s of page.items) {
        try {
          items.push(store.jsonAt(store.deleteIn(r.t, s.obj.metadata.namespace ?? '', s.obj.metadata.name as string, dopts).stored, r.t))
        } catch (err) {
          if (!(err instanceof ApiError && err.code === 404)) throw err
        }
      }
      sendJson(res, 200, `{"kind":${JSON.stringify(rt.listKind)},"apiVersion":${JSON.stringify(apiVersionOf(rt.group, r.t.version))},"metadata":{"resourceVersion":${JSON.stringify(store.resourceVersion)}},"items":[${items.join(',')}]}`)
      return
    }
    throw methodNotAllowed()
  }

  function nonResource(req: IncomingMessage, res: ServerResponse, segs: string[], registryPath: string): boolean {
    const reg = store.registry
    let body: object | undefined
    if (registryPath === '/openapi/v2') {
      openApiV2(req, res)
      return true
    }
    if (registryPath === '/version') body = { ...SERVER_VERSION, gitCommit: '', gitTreeState: 'clean', buildDate: '1970-01-01T00:00:00Z', goVersion: `node${process.versions.node}`, compiler: 'node', platform: `${process.platform}/${process.arch}` }
    else if (registryPath === '/healthz' || registryPath === '/livez' || registryPath === '/readyz') {
      res.writeHead(200, { 'Content-Type': 'text/plain' })
      res.end('ok')
      return true
    } else if (registryPath === '/api') body = apiVersions(opts.serverAddress())
    else if (registryPath === '/apis') body = groupList(reg)
    else if (segs[0] === 'api' && segs.length === 2) body = resourceList(reg, '', segs[1] as string)
    else if (segs[0] === 'apis' && segs.length === 2) body = apiGroup(reg, segs[1] as string)
    else if (segs[0] === 'apis' && segs.length === 3) body = resourceList(reg, segs[1] as string, segs[2] as string)
    else if (registryPath === '/openapi/v3') body = openApiV3Index(reg)
    else if (segs[0] === 'openapi' && segs[1] === 'v3') {
      const rest = segs.slice(2)
      if (rest[0] === 'api' && rest.length === 2) body = openApiV3Document(reg, '', rest[1] as string)
      else if (rest[0] === 'apis' && rest.length === 3) body = openApiV3Document(reg, rest[1] as string, rest[2] as string)
      if (!body) throw noSuchResource()
    } else if (segs[0] === 'api' || segs[0] === 'apis') return false
    else throw noSuchResource()
    if (!body) throw noSuchResource()
    sendJson(res, 200, JSON.stringify(body))
    return true
  }

  // client-go asks for the protobuf form only; other clients get JSON.
  function openApiV2(req: IncomingMessage, res: ServerResponse): void {
    const doc = openApiV2Document(store.registry) as Record<string, unknown>
    const accept = String(req.headers.accept ?? '')
    const protobuf = accept.split(',').map((a) => a.split(';')[0]?.trim()).find((a) => a === OPENAPI_V2_PROTOBUF || a === 'application/json' || a === '*/*') === OPENAPI_V2_PROTOBUF
    if (protobuf) {
      // Answered under the name kube-apiserver gives it (a `@` is not valid in a Content-Type).
      res.writeHead(200, { 'Content-Type': 'application/com.github.proto-openapi.spec.v2.v1.0+protobuf', 'Cache-Control': 'no-cache, private' })
      res.end(openApiV2Protobuf(doc))
      return
    }
    sendJson(res, 200, JSON.stringify(doc))
  }

  async function dispatch(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = req.url ?? '/'
    const qAt = url.indexOf('?')
    const path = qAt < 0 ? url : url.slice(0, qAt)
    const q = new URLSearchParams(qAt < 0 ? '' : url.slice(qAt + 1))
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
      nonResource(req, res, segs, normalized)
      return
    }
    const r = route(segs)
    if (!r) throw noSuchResource()
    await resource(req, res, r, q)
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
