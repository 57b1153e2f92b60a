// Sends the same request to the real kube-apiserver and to the embedded API server, and turns
// each answer into what a client sees: status code, headers, body. The normalisers below
// replace only what must differ between two servers (identities, times, resourceVersions).
import type { KubeConfig } from '@kubernetes/client-node'
import { KubeHttp, warningTexts } from '../../local/knative/kube-http.js'

/** One server's answer as a client sees it. */
export interface Answer {
  status: number
  /** The `Warning` header texts, unquoted (`unknown field "spec.x"`). */
  warnings: string[]
  contentType: string
  /** Parsed JSON when the body was JSON, else undefined. */
  body: any
  text: string
}

/** Options of one request. */
export interface RequestOptions {
  contentType?: string
  accept?: string
}

/** Both servers' answers to the same request. */
export interface Pair {
  real: Answer
  local: Answer
}

/** A Kubernetes Status cause. */
export interface Cause {
  reason?: string
  field?: string
  message?: string
}

/** One API server reached with a KubeConfig's credentials. */
export class Side {
  private readonly kube: KubeHttp

  constructor(readonly name: string, kc: KubeConfig) {
    this.kube = new KubeHttp(kc)
  }

  /** Sends one request and reads the whole answer, whatever its status. */
  async request(method: string, path: string, body?: unknown, opts: RequestOptions = {}): Promise<Answer> {
    const res = await this.kube.send(method, path, body, opts.contentType, this.headers(opts))
    const json = res.text.length > 0 && typeof res.body !== 'string' ? res.body : undefined
    return { status: res.status, warnings: warningTexts(res.headers.warning), contentType: res.headers['content-type']?.[0] ?? '', body: json, text: res.text }
  }

  /**
   * Opens a watch and collects its events until `until` says enough (or the timeout passes),
   * then closes it. Resolves with the events and the HTTP status.
   */
  async watch(path: string, until: (events: any[]) => boolean, timeoutMs = 5_000): Promise<{ status: number; events: any[] }> {
    const ac = new AbortController()
    const res = await this.kube.stream(path, ac.signal, this.headers({}))
    const events: any[] = []
    let buffer = ''
    return await new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer)
        ac.abort()
        res.destroy()
        resolve({ status: res.statusCode ?? 0, events })
      }
      const timer = setTimeout(done, timeoutMs)
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => {
        buffer += chunk
        let nl: number
        while ((nl = buffer.indexOf('\n')) >= 0) {
          const line = buffer.slice(0, nl).trim()
          buffer = buffer.slice(nl + 1)
          if (line) events.push(JSON.parse(line))
        }
        if (until(events)) done()
      })
      res.on('end', done)
      res.on('error', done)
    })
  }

  // The same client identity on both sides, so default field managers agree.
  private headers(opts: RequestOptions): Record<string, string> {
    return { Accept: opts.accept ?? 'application/json', 'User-Agent': 'kinetic-differential/1.0' }
  }
}

/** The real server and the embedded one, side by side. */
export class DualClient {
  readonly real: Side
  readonly local: Side

  constructor(real: KubeConfig, local: KubeConfig) {
    this.real = new Side('real', real)
    this.local = new Side('embedded', local)
  }

  /** Sends the same request to both servers (one after the other, real first). */
  async both(method: string, path: string, body?: unknown, opts: RequestOptions = {}): Promise<Pair> {
    const real = await this.real.request(method, path, body, opts)
    const local = await this.local.request(method, path, body, opts)
    return { real, local }
  }

  /** Sends the request to both and throws, naming the side, unless both answer 2xx. */
  async ok(method: string, path: string, body?: unknown, opts: RequestOptions = {}): Promise<Pair> {
    const pair = await this.both(method, path, body, opts)
    for (const side of [pair.real, pair.local]) {
      if (side.status < 200 || side.status >= 300) {
        throw new Error(`${side === pair.real ? 'real' : 'embedded'} server answered ${method} ${path} with ${side.status}: ${side.text.slice(0, 500)}`)
      }
    }
    return pair
  }
}

// ------------------------------------------------------------------ normalisers

const SERVER_OWNED_META = ['uid', 'resourceVersion', 'creationTimestamp', 'deletionTimestamp'] as const

/**
 * A copy of an object (or list, Table, Status, watch event) with the values two servers can
 * never share replaced by placeholders: uids, resourceVersions, timestamps, managedFields
 * times, and the times and ages derived from them. Everything else is kept as it is.
 */
export function normalise(value: unknown): any {
  if (Array.isArray(value)) return value.map(normalise)
  if (!isObj(value)) return value
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(value)) out[k] = normalise(v)
  if (isObj(out.metadata)) out.metadata = normaliseMeta(out.metadata)
  if (Array.isArray(out.conditions)) {
    out.conditions = out.conditions.map((c) => (isObj(c) && 'lastTransitionTime' in c ? { ...c, lastTransitionTime: '<time>' } : c))
  }
  if (Array.isArray(out.ownerReferences)) out.ownerReferences = out.ownerReferences.map((r) => (isObj(r) ? { ...r, uid: '<uid>' } : r))
  if (out.kind === 'Status' && isObj(out.details) && 'uid' in out.details) out.details = { ...out.details, uid: '<uid>' }
  return out
}

function normaliseMeta(meta: Record<string, unknown>): Record<string, unknown> {
  const out = { ...meta }
  for (const k of SERVER_OWNED_META) if (k in out) out[k] = `<${k}>`
  if (Array.isArray(out.managedFields)) {
    // Entries are ordered by their times (seconds), which two servers cross at different moments.
    const order = (m: unknown) => (isObj(m) ? [m.operation, m.manager, m.apiVersion, m.subresource ?? ''].join('\u0000') : '')
    out.managedFields = out.managedFields
      .map((m) => (isObj(m) && 'time' in m ? { ...m, time: '<time>' } : m))
      .sort((a, b) => order(a).localeCompare(order(b)))
  }
  if (Array.isArray(out.ownerReferences)) out.ownerReferences = out.ownerReferences.map((r) => (isObj(r) ? { ...r, uid: '<uid>' } : r))
  return out
}

/** The causes of a Status, sorted (the real server orders them by Go map iteration, which varies per request). */
export function causesOf(answer: Answer): Cause[] {
  const causes = (answer.body?.details?.causes ?? []) as Cause[]
  return [...causes].map((c) => ({ reason: c.reason, field: c.field, message: c.message }))
    .sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)))
}

/**
 * What an `Invalid` Status message must read given its own causes, in the order they were
 * listed: `<prefix>: cause` for one distinct cause, `<prefix>: [c1, c2]` for several.
 */
export function invalidMessage(prefix: string, causes: Cause[]): string {
  const listed = [...new Set(causes.map((c) => (c.field ? `${c.field}: ${c.message}` : String(c.message))))]
  return `${prefix}: ${listed.length === 1 ? listed[0] : `[${listed.join(', ')}]`}`
}

/** A Status body without its causes (compared separately, as a set). */
export function statusShape(answer: Answer): unknown {
  const body = answer.body
  if (!isObj(body) || body.kind !== 'Status') return body
  const details = isObj(body.details) ? { ...body.details } : undefined
  if (details) delete details.causes
  return normalise({ ...body, ...(details ? { details } : {}) })
}

/** The names of a list's items, in order. */
export function namesOf(answer: Answer): string[] {
  return ((answer.body?.items ?? []) as Array<{ metadata?: { name?: string } }>).map((i) => i.metadata?.name ?? '')
}

function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}
