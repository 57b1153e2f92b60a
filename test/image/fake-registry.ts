// An in-memory OCI Distribution registry on 127.0.0.1 with just the routes the image build uses:
// manifests by tag and digest, blob HEAD/GET, uploads (POST with optional cross-repo mount, then
// PUT ?digest=), an optional bearer-token challenge, and faults a real registry can show: any
// status on a route, a wrong Docker-Content-Digest, and blob downloads redirected to storage.
import { createHash, randomUUID } from 'node:crypto'
import { createServer } from 'node:http'
import type { IncomingMessage, Server, ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

/**
 * Options of the fake: `bearer` demands a token (optionally fetched with basic auth); `mount: false`
 * declines mounts; `blobsAt` answers blob GET/HEAD with a 307 to that registry (as registries send
 * downloads to their storage).
 */
export interface FakeRegistryOptions {
  bearer?: { token: string; user?: string; password?: string }
  mount?: boolean
  blobsAt?: FakeRegistry
}

/**
 * A fault for requests matching `method` and `path` (tested against the path without query),
 * `times` times (default: every time). With `status` the request is answered with it and `body`;
 * without, it is handled normally and `headers` replace the answer's headers (a lying registry).
 */
export interface Fault {
  method: string
  path: RegExp
  status?: number
  body?: string
  headers?: Record<string, string>
  times?: number
}

/** One request the fake answered, for asserting on the protocol flow. */
export interface RecordedRequest {
  method: string
  path: string
  authorization: string | undefined
  status: number
}

interface StoredManifest {
  bytes: Buffer
  mediaType: string
}

interface Repo {
  manifests: Map<string, StoredManifest>
  blobs: Map<string, Buffer>
}

/** Returns `sha256:<hex>` of `data`. */
export function digestOf(data: Uint8Array | string): string {
  return `sha256:${createHash('sha256').update(data).digest('hex')}`
}

/** A running fake registry; `host` is `127.0.0.1:<port>`. */
export class FakeRegistry {
  readonly requests: RecordedRequest[] = []
  private readonly repos = new Map<string, Repo>()
  private readonly uploads = new Map<string, string>()
  private readonly faults: Fault[] = []
  private server: Server | undefined
  host = ''

  constructor(private readonly options: FakeRegistryOptions = {}) {}

  /** Starts listening on an ephemeral port. */
  async start(): Promise<this> {
    const server = createServer((req, res) => {
      const chunks: Buffer[] = []
      req.on('data', (chunk: Buffer) => chunks.push(chunk))
      req.on('end', () => {
        const status = this.handle(req, Buffer.concat(chunks), res)
        this.requests.push({ method: req.method ?? '', path: req.url ?? '', authorization: req.headers.authorization, status })
      })
    })
    this.server = server
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done))
    this.host = `127.0.0.1:${(server.address() as AddressInfo).port}`
    return this
  }

  /** Stops the server. */
  async stop(): Promise<void> {
    const server = this.server
    if (!server) return
    server.closeAllConnections()
    await new Promise<void>((done) => server.close(() => done()))
  }

  private repo(name: string): Repo {
    let repo = this.repos.get(name)
    if (!repo) {
      repo = { manifests: new Map(), blobs: new Map() }
      this.repos.set(name, repo)
    }
    return repo
  }

  /** Adds a fault; the first matching fault with times left applies. */
  fail(fault: Fault): this {
    this.faults.push({ ...fault })
    return this
  }

  private takeFault(method: string, path: string): Fault | undefined {
    const fault = this.faults.find((f) => f.method === method && f.path.test(path) && (f.times === undefined || f.times > 0))
    if (fault?.times !== undefined) fault.times--
    return fault
  }

  /** Stores a blob in `repo` and returns its digest. */
  putBlob(repo: string, data: Uint8Array | string): string {
    const bytes = Buffer.from(data)
    const digest = digestOf(bytes)
    this.repo(repo).blobs.set(digest, bytes)
    return digest
  }

  /** Stores a manifest (serialised as given) under its digest and optionally a tag; returns the digest. */
  putManifest(repo: string, manifest: unknown, mediaType: string, tag?: string): string {
    const bytes = Buffer.from(JSON.stringify(manifest))
    const digest = digestOf(bytes)
    this.repo(repo).manifests.set(digest, { bytes, mediaType })
    if (tag) this.repo(repo).manifests.set(tag, { bytes, mediaType })
    return digest
  }

  /** Returns a stored blob, or undefined. */
  blob(repo: string, digest: string): Buffer | undefined {
    return this.repos.get(repo)?.blobs.get(digest)
  }

  /** Returns a stored manifest's bytes and media type, or undefined. */
  manifest(repo: string, reference: string): StoredManifest | undefined {
    return this.repos.get(repo)?.manifests.get(reference)
  }

  private handle(req: IncomingMessage, body: Buffer, res: ServerResponse): number {
    const url = new URL(req.url ?? '/', `http://${this.host}`)
    const fault = this.takeFault(req.method ?? '', url.pathname)
    const send = (status: number, headers: Record<string, string> = {}, payload?: Buffer | string): number => {
      res.writeHead(status, { ...headers, ...(fault?.status === undefined ? fault?.headers : {}) })
      res.end(req.method === 'HEAD' ? undefined : payload)
      return status
    }
    if (fault?.status !== undefined) return send(fault.status, { 'content-type': 'application/json', ...fault.headers }, fault.body)
    const bearer = this.options.bearer
    if (url.pathname === '/token' && bearer) {
      if (bearer.user) {
        const expected = `Basic ${Buffer.from(`${bearer.user}:${bearer.password ?? ''}`).toString('base64')}`
        if (req.headers.authorization !== expected) return send(401)
      }
      return send(200, { 'content-type': 'application/json' }, JSON.stringify({ token: bearer.token }))
    }
    if (bearer && req.headers.authorization !== `Bearer ${bearer.token}`) {
      const repo = /^\/v2\/(.+?)\/(?:manifests|blobs)\//.exec(url.pathname)?.[1] ?? ''
      const challenge = `Bearer realm="http://${this.host}/token",service="fake-registry",scope="repository:${repo}:pull,push"`
      return send(401, { 'www-authenticate': challenge }, JSON.stringify({ errors: [{ code: 'UNAUTHORIZED' }] }))
    }

    const upload = /^\/v2\/(.+)\/blobs\/uploads\/(.*)$/.exec(url.pathname)
    if (upload) {
      const name = upload[1] ?? ''
      if (req.method === 'POST') {
        const mount = url.searchParams.get('mount')
        const from = url.searchParams.get('from')
        const source = mount && from ? this.repos.get(from)?.blobs.get(mount) : undefined
        if (mount && source && this.options.mount !== false) {
          this.repo(name).blobs.set(mount, source)
          return send(201, { location: `/v2/${name}/blobs/${mount}`, 'docker-content-digest': mount })
        }
        const id = randomUUID()
        this.uploads.set(id, name)
        return send(202, { location: `/v2/${name}/blobs/uploads/${id}?state=opaque`, 'docker-upload-uuid': id })
      }
      if (req.method === 'PUT') {
        const id = upload[2] ?? ''
        const digest = url.searchParams.get('digest') ?? ''
        if (this.uploads.get(id) !== name) return send(404)
        if (url.searchParams.get('state') !== 'opaque') return send(400)
        if (digestOf(body) !== digest) return send(400, {}, JSON.stringify({ errors: [{ code: 'DIGEST_INVALID' }] }))
        this.uploads.delete(id)
        this.repo(name).blobs.set(digest, body)
        return send(201, { location: `/v2/${name}/blobs/${digest}`, 'docker-content-digest': digest })
      }
      return send(405)
    }

    const blob = /^\/v2\/(.+)\/blobs\/(sha256:[a-f0-9]{64})$/.exec(url.pathname)
    if (blob && (req.method === 'GET' || req.method === 'HEAD') && this.options.blobsAt) {
      return send(307, { location: `http://${this.options.blobsAt.host}${url.pathname}` })
    }
    if (blob && (req.method === 'GET' || req.method === 'HEAD')) {
      const data = this.blob(blob[1] ?? '', blob[2] ?? '')
      if (!data) return send(404)
      return send(200, { 'content-length': String(data.length), 'docker-content-digest': blob[2] ?? '' }, data)
    }

    const manifest = /^\/v2\/(.+)\/manifests\/([^/]+)$/.exec(url.pathname)
    if (manifest) {
      const name = manifest[1] ?? ''
      const reference = manifest[2] ?? ''
      if (req.method === 'GET' || req.method === 'HEAD') {
        const stored = this.manifest(name, reference)
        if (!stored) return send(404, { 'content-type': 'application/json' }, JSON.stringify({ errors: [{ code: 'MANIFEST_UNKNOWN' }] }))
        const accept = req.headers.accept ?? ''
        if (!accept.includes(stored.mediaType)) return send(404)
        return send(200, { 'content-type': stored.mediaType, 'docker-content-digest': digestOf(stored.bytes) }, stored.bytes)
      }
      if (req.method === 'PUT') {
        const parsed = JSON.parse(body.toString('utf8')) as { config?: { digest: string }; layers?: Array<{ digest: string }> }
        const repo = this.repo(name)
        const missing = [parsed.config, ...(parsed.layers ?? [])].filter((d) => !d || !repo.blobs.has(d.digest))
        if (missing.length > 0) return send(400, {}, JSON.stringify({ errors: [{ code: 'MANIFEST_BLOB_UNKNOWN' }] }))
        const digest = digestOf(body)
        if (reference.startsWith('sha256:') && reference !== digest) return send(400)
        const stored = { bytes: body, mediaType: req.headers['content-type'] ?? '' }
        repo.manifests.set(digest, stored)
        repo.manifests.set(reference, stored)
        return send(201, { location: `/v2/${name}/manifests/${digest}`, 'docker-content-digest': digest })
      }
    }
    return send(404)
  }
}
