import http from 'node:http'
import https from 'node:https'
import { createInterface } from 'node:readline'
import type { KubeConfig } from '@kubernetes/client-node'

/** A JSON object as the Kubernetes API returns it. */
export type KubeObject = Record<string, unknown> & {
  apiVersion?: string
  kind?: string
  metadata?: {
    name?: string
    namespace?: string
    uid?: string
    resourceVersion?: string
    labels?: Record<string, string>
    annotations?: Record<string, string>
    ownerReferences?: Array<{ apiVersion: string; kind: string; name: string; uid: string; controller?: boolean }>
    creationTimestamp?: string
    deletionTimestamp?: string
    [key: string]: unknown
  }
}

/** One line of a watch stream. */
export interface WatchEvent {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR'
  object: KubeObject
}

/** A non-2xx answer from the API server, with the Kubernetes Status body when there was one. */
export class KubeHttpError extends Error {
  constructor(readonly status: number, readonly body: unknown, method: string, path: string) {
    super(`${method} ${path} answered ${status}: ${statusMessage(body)}`)
    this.name = 'KubeHttpError'
  }
}

/** A whole answer of the API server: status, headers (each one's values in order, names lower-case) and body. */
export interface KubeResponse<T = unknown> {
  status: number
  headers: Record<string, string[]>
  /** Parsed JSON, or the text when the body is not JSON. */
  body: T
  /** The body as sent. */
  text: string
}

/**
 * The texts of the API server's `Warning` headers (`299 - "unknown field \"spec.x\""` ->
 * `unknown field "spec.x"`), as kubectl prints them; one header may carry several, comma-joined.
 */
export function warningTexts(values: string[] | undefined): string[] {
  const out: string[] = []
  for (const value of values ?? []) {
    for (const m of value.matchAll(/\d{3} \S+ "((?:[^"\\]|\\.)*)"/g)) out.push((m[1] as string).replace(/\\(.)/g, '$1'))
  }
  return out
}

interface ResourceInfo { plural: string; namespaced: boolean }

/**
 * A small Kubernetes REST client over node:http(s) that works against any API server the
 * KubeConfig names (TLS and credentials come from the KubeConfig). Used by the local plumbing,
 * which needs raw list/watch with resourceVersion control that the generated client hides.
 */
export class KubeHttp {
  private readonly discovery = new Map<string, Map<string, ResourceInfo>>()

  constructor(private readonly kc: KubeConfig) {}

  /** The API server URL of the current context, exactly as the KubeConfig spells it. */
  get server(): string {
    const server = this.kc.getCurrentCluster()?.server
    if (!server) throw new Error('The KubeConfig has no current cluster')
    return server.replace(/\/+$/, '')
  }

  /** Sends one request; resolves with the parsed body on 2xx, KubeHttpError otherwise. */
  async request<T = KubeObject>(method: string, path: string, body?: unknown, contentType = 'application/json'): Promise<T> {
    const { status, text } = await this.raw(method, path, body, contentType)
    const parsed = text.length > 0 ? parseJson(text) : undefined
    if (status < 200 || status >= 300) throw new KubeHttpError(status, parsed ?? text, method, path)
    return parsed as T
  }

  /**
   * Sends one request and resolves with the whole answer, whatever its status: for callers that
   * need response headers (such as the API server's `Warning` headers) or a non-2xx body.
   */
  async send<T = unknown>(method: string, path: string, body?: unknown, contentType = 'application/json', headers: Record<string, string> = {}): Promise<KubeResponse<T>> {
    const res = await this.open(method, path, body, contentType, undefined, headers)
    const text = await readAll(res)
    const parsed = text.length > 0 ? parseJson(text) : undefined
    return { status: res.statusCode ?? 0, headers: res.headersDistinct as Record<string, string[]>, body: (parsed ?? text) as T, text }
  }

  /** Opens a GET whose body the caller reads as it streams (a watch), whatever its status. */
  stream(path: string, signal: AbortSignal, headers: Record<string, string> = {}): Promise<http.IncomingMessage> {
    return this.open('GET', path, undefined, 'application/json', signal, headers)
  }

  /** GET that resolves null on 404. */
  async get<T = KubeObject>(path: string): Promise<T | null> {
    try {
      return await this.request<T>('GET', path)
    } catch (err) {
      if (err instanceof KubeHttpError && err.status === 404) return null
      throw err
    }
  }

  /** JSON merge patch. */
  mergePatch<T = KubeObject>(path: string, patch: unknown): Promise<T> {
    return this.request<T>('PATCH', path, patch, 'application/merge-patch+json')
  }

  /** Plain text GET (pod logs). */
  async text(path: string): Promise<string> {
    const { status, text } = await this.raw('GET', path)
    if (status < 200 || status >= 300) throw new KubeHttpError(status, parseJson(text) ?? text, 'GET', path)
    return text
  }

  /**
   * Opens a watch and calls `onEvent` for each line, awaiting it before reading the next one
   * (so a slow consumer holds the stream, as a client-go reflector does). Resolves when the
   * server closes the stream or `signal` aborts; rejects on a non-2xx answer.
   */
  async watch(path: string, onEvent: (event: WatchEvent) => Promise<void>, signal: AbortSignal): Promise<void> {
    const res = await this.open('GET', path, undefined, 'application/json', signal)
    const status = res.statusCode ?? 0
    if (status < 200 || status >= 300) {
      const text = await readAll(res)
      throw new KubeHttpError(status, parseJson(text) ?? text, 'GET', path)
    }
    const lines = createInterface({ input: res, crlfDelay: Infinity })
    // Destroying the response alone does not end readline's iterator; closing it does.
    const stop = () => {
      lines.close()
      res.destroy()
    }
    signal.addEventListener('abort', stop, { once: true })
    res.once('close', () => lines.close())
    try {
      for await (const line of lines) {
        if (signal.aborted) break
        if (line.trim().length === 0) continue
        const event = parseJson(line) as WatchEvent | undefined
        if (!event || typeof event.type !== 'string') continue
        await onEvent(event)
      }
    } catch (err) {
      if (!signal.aborted) throw err
    } finally {
      signal.removeEventListener('abort', stop)
      res.destroy()
    }
  }

  /**
   * The REST path of a kind: `/api/v1/...` or `/apis/<group>/<version>/...`, from discovery
   * (the real plural, cached). Null when the API server does not serve the kind.
   */
  async pathFor(apiVersion: string, kind: string, namespace?: string, name?: string): Promise<string | null> {
    const info = await this.resourceInfo(apiVersion, kind)
    if (!info) return null
    const base = apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`
    const ns = info.namespaced && namespace ? `/namespaces/${encodeURIComponent(namespace)}` : ''
    return `${base}${ns}/${info.plural}${name ? `/${encodeURIComponent(name)}` : ''}`
  }

  /** Forgets cached discovery, e.g. after CRDs were created. */
  forgetDiscovery(): void {
    this.discovery.clear()
  }

  /**
   * Creates the object, or replaces it when it exists (keeping the live resourceVersion):
   * what `kubectl apply` amounts to for objects only this tool manages.
   */
  async apply(obj: KubeObject, defaultNamespace = 'default'): Promise<KubeObject> {
    const apiVersion = obj.apiVersion
    const kind = obj.kind
    const name = obj.metadata?.name
    if (!apiVersion || !kind || !name) throw new Error('Cannot apply an object without apiVersion, kind and metadata.name')
    const info = await this.resourceInfo(apiVersion, kind)
    if (!info) throw new Error(`The API server does not serve ${kind} in ${apiVersion}`)
    const namespace = info.namespaced ? (obj.metadata?.namespace ?? defaultNamespace) : undefined
    const { namespace: _ignored, ...clusterMeta } = obj.metadata ?? {}
    const body = info.namespaced ? { ...obj, metadata: { ...obj.metadata, namespace } } : { ...obj, metadata: clusterMeta }
    const collection = (await this.pathFor(apiVersion, kind, namespace)) as string
    try {
      return await this.request('POST', collection, body)
    } catch (err) {
      if (!(err instanceof KubeHttpError) || err.status !== 409) throw err
    }
    const itemPath = `${collection}/${encodeURIComponent(name)}`
    const live = await this.request(`GET`, itemPath)
    const replacement = { ...body, metadata: { ...body.metadata, resourceVersion: live.metadata?.resourceVersion } }
    return this.request('PUT', itemPath, replacement)
  }

  private async resourceInfo(apiVersion: string, kind: string): Promise<ResourceInfo | null> {
    let kinds = this.discovery.get(apiVersion)
    if (!kinds) {
      const path = apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`
      const list = await this.get<{ resources?: Array<{ name: string; kind: string; namespaced: boolean }> }>(path)
      if (!list) return null
      kinds = new Map()
      for (const r of list.resources ?? []) {
        if (r.name.includes('/')) continue
        kinds.set(r.kind, { plural: r.name, namespaced: r.namespaced })
      }
      this.discovery.set(apiVersion, kinds)
    }
    return kinds.get(kind) ?? null
  }

  private async raw(method: string, path: string, body?: unknown, contentType = 'application/json'): Promise<{ status: number; text: string }> {
    const res = await this.open(method, path, body, contentType)
    return { status: res.statusCode ?? 0, text: await readAll(res) }
  }

  private async open(method: string, path: string, body: unknown, contentType: string, signal?: AbortSignal, headers: Record<string, string> = {}): Promise<http.IncomingMessage> {
    const url = new URL(this.server + path)
    const opts: https.RequestOptions = {
      method,
      hostname: url.hostname,
      port: url.port,
      path: url.pathname + url.search,
      headers: { Accept: 'application/json', ...headers },
    }
    await this.kc.applyToHTTPSOptions(opts)
    const payload = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body)
    if (payload !== undefined) {
      opts.headers = { ...opts.headers, 'Content-Type': contentType, 'Content-Length': Buffer.byteLength(payload) }
    }
    const transport = url.protocol === 'https:' ? https : http
    return new Promise((resolve, reject) => {
      const req = transport.request({ ...opts, signal }, resolve)
      req.on('error', reject)
      if (payload !== undefined) req.write(payload)
      req.end()
    })
  }
}

function readAll(res: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    res.on('data', (c: Buffer) => chunks.push(c))
    res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')))
    res.on('error', reject)
  })
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

function statusMessage(body: unknown): string {
  if (body && typeof body === 'object' && 'message' in body) return String((body as { message: unknown }).message)
  return typeof body === 'string' ? body.slice(0, 200) : 'no message'
}

/** What a list-and-watch loop reports. */
export interface ListWatchHandlers {
  /** Every item of a (re-)list, with the list's kind filled in; then `synced` is called. */
  onList(items: KubeObject[]): void | Promise<void>
  /** ADDED, MODIFIED and DELETED events after the list (bookmarks and errors are handled here). */
  onEvent(event: WatchEvent): void | Promise<void>
  /** Called after each list, once the watch is about to start. */
  synced?(): void
  /** A watch failure other than 410 Gone, before the retry. */
  onError?(err: unknown): void
}

/**
 * Lists `path` (a collection; `query` is appended to both the list and the watch) and watches
 * from the list's resourceVersion until `signal` aborts, listing again after a 410 Gone or a
 * closed stream that cannot be resumed, and retrying other failures after `retryMs`.
 */
export async function listAndWatch(kube: KubeHttp, path: string, query: string, handlers: ListWatchHandlers, signal: AbortSignal, retryMs = 500): Promise<void> {
  const q = query ? `&${query.replace(/^[?&]/, '')}` : ''
  let rv: string | undefined
  while (!signal.aborted) {
    try {
      if (rv === undefined) {
        const list = await kube.request<{ kind?: string; metadata?: { resourceVersion?: string }; items?: KubeObject[] }>('GET', `${path}?${q.slice(1)}`)
        const kind = list.kind?.replace(/List$/, '')
        const apiVersion = (list as { apiVersion?: string }).apiVersion
        await handlers.onList((list.items ?? []).map((item) => ({ ...(apiVersion ? { apiVersion } : {}), ...(kind ? { kind } : {}), ...item })))
        rv = list.metadata?.resourceVersion ?? '0'
      }
      handlers.synced?.()
      let gone = false
      await kube.watch(`${path}?watch=1&allowWatchBookmarks=true&resourceVersion=${rv}${q}`, async (ev) => {
        if (ev.type === 'ERROR') {
          if ((ev.object as { code?: number }).code === 410) gone = true
          return
        }
        if (ev.object.metadata?.resourceVersion) rv = ev.object.metadata.resourceVersion
        if (ev.type === 'BOOKMARK') return
        await handlers.onEvent(ev)
      }, signal)
      if (gone) rv = undefined
    } catch (err) {
      if (signal.aborted) return
      if (err instanceof KubeHttpError && err.status === 410) {
        rv = undefined
        continue
      }
      handlers.onError?.(err)
      // The wait ends early when the loop is stopped, so stopping never waits out a retry.
      await new Promise<void>((r) => {
        const done = () => { clearTimeout(t); signal.removeEventListener('abort', done); r() }
        const t = setTimeout(done, retryMs)
        signal.addEventListener('abort', done, { once: true })
      })
    }
  }
}
