// A minimal OCI Distribution client (scripts/build-image.mjs and build-base-image.mjs push with
// it): image references, authentication from the registry's challenge, a private CA, redirects to
// blob storage, manifests and blobs read with their digests checked, and pushes that send only
// the blobs the registry lacks.
import { request as httpsRequest } from 'node:https'
import { rootCertificates } from 'node:tls'
import { sha256Digest } from './image-layer.mjs'

/** The manifest media types a registry may answer with. */
export const OCI_MANIFEST = 'application/vnd.oci.image.manifest.v1+json'
export const OCI_INDEX = 'application/vnd.oci.image.index.v1+json'
export const DOCKER_MANIFEST = 'application/vnd.docker.distribution.manifest.v2+json'
export const DOCKER_LIST = 'application/vnd.docker.distribution.manifest.list.v2+json'
const ACCEPT = [OCI_MANIFEST, OCI_INDEX, DOCKER_MANIFEST, DOCKER_LIST].join(', ')

/** Splits `<host>/<repo>[:tag][@sha256:...]` into registry host, repository and reference; throws on anything else. */
export function parseReference(ref) {
  const slash = ref.indexOf('/')
  const host = slash > 0 ? ref.slice(0, slash) : ''
  // Without a registry host the reference would silently mean some default registry; require one.
  if (!host || !(host.includes('.') || host.includes(':') || host === 'localhost')) {
    throw new Error(`image reference "${ref}" must start with a registry host, e.g. <registry>/<repository>`)
  }
  let rest = ref.slice(slash + 1)
  let digest
  const at = rest.indexOf('@')
  if (at >= 0) {
    digest = rest.slice(at + 1)
    rest = rest.slice(0, at)
    if (!/^sha256:[a-f0-9]{64}$/.test(digest)) throw new Error(`image reference "${ref}" has an invalid digest`)
  }
  let tag
  const colon = rest.lastIndexOf(':')
  if (colon > rest.lastIndexOf('/')) {
    tag = rest.slice(colon + 1)
    rest = rest.slice(0, colon)
    if (!/^[\w][\w.-]{0,127}$/.test(tag)) throw new Error(`image reference "${ref}" has an invalid tag`)
  }
  if (!/^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:\/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*$/.test(rest)) {
    throw new Error(`image reference "${ref}" has an invalid repository name`)
  }
  return { host, repository: rest, tag, digest, name: `${host}/${rest}` }
}

function parseChallenge(header) {
  const match = /^\s*(\w+)\s*(.*)$/.exec(header ?? '')
  if (!match) return undefined
  const params = {}
  for (const part of (match[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)) params[part[1]] = part[2]
  return { scheme: match[1].toLowerCase(), params }
}

const REDIRECTS = new Set([301, 302, 303, 307, 308])

/**
 * A fetch-shaped function over node:https that trusts `ca` (PEM) besides Node's own roots for
 * https: URLs: Node 20's global fetch cannot take a CA per request, and a registry with a private
 * CA is common. Redirects are not followed here; RegistryClient.request follows them.
 */
export function fetchTrusting(pem) {
  // Kept with the public roots: a token realm or blob storage may be publicly signed.
  const ca = [...rootCertificates, pem]
  return (input, init = {}) => {
    const url = new URL(input)
    if (url.protocol !== 'https:') return globalThis.fetch(url, init)
    const method = init.method ?? 'GET'
    return new Promise((resolve, reject) => {
      const req = httpsRequest(url, { method, headers: init.headers, ca }, (res) => {
        const chunks = []
        res.on('data', (chunk) => chunks.push(chunk))
        res.on('error', reject)
        res.on('end', () => {
          const headers = new Headers()
          for (const [key, value] of Object.entries(res.headers)) {
            for (const one of [value].flat()) if (one !== undefined) headers.append(key, one)
          }
          const status = res.statusCode ?? 0
          const empty = method === 'HEAD' || status === 204 || status === 304
          resolve(new Response(empty ? null : Buffer.concat(chunks), { status, headers }))
        })
      })
      req.on('error', reject)
      req.end(init.body)
    })
  }
}

/**
 * A minimal OCI Distribution client for one registry host: anonymous, basic, or bearer tokens
 * from the challenge; https unless the host is loopback or `insecure` (`tls` or a `ca` force https).
 */
export class RegistryClient {
  constructor(host, options = {}) {
    this.host = host
    const local = /^(127\.0\.0\.1|localhost|\[::1\])(:\d+)?$/.test(host)
    const tls = options.tls || options.ca !== undefined
    this.base = `${!tls && (options.insecure || local) ? 'http' : 'https'}://${host}`
    this.user = options.user
    this.password = options.password
    this.fetch = options.fetch ?? (options.ca ? fetchTrusting(options.ca) : globalThis.fetch)
    this.authorization = undefined
  }

  basic() {
    return this.user ? `Basic ${Buffer.from(`${this.user}:${this.password ?? ''}`).toString('base64')}` : undefined
  }

  async authorize(challenge) {
    if (challenge?.scheme === 'basic' && this.user) {
      // A second basic challenge after sending these credentials means they are wrong.
      if (this.authorization === this.basic()) return false
      this.authorization = this.basic()
      return true
    }
    if (challenge?.scheme !== 'bearer' || !challenge.params.realm) return false
    const url = new URL(challenge.params.realm)
    if (challenge.params.service) url.searchParams.set('service', challenge.params.service)
    if (challenge.params.scope) url.searchParams.set('scope', challenge.params.scope)
    const headers = {}
    const basic = this.basic()
    if (basic) headers.authorization = basic
    const response = await this.fetch(url, { headers })
    if (!response.ok) throw new Error(`token request to ${url.origin}${url.pathname} failed: HTTP ${response.status}`)
    const body = await response.json()
    const token = body.token ?? body.access_token
    if (!token) throw new Error(`token response from ${url.origin}${url.pathname} carries no token`)
    this.authorization = `Bearer ${token}`
    return true
  }

  /**
   * Sends a request to a registry path or absolute URL, answering one 401 challenge and following
   * redirects (registries send blob downloads and uploads to their storage); returns the Response.
   */
  async request(method, pathOrUrl, init = {}) {
    const registry = new URL(this.base).origin
    const send = async () => {
      let url = new URL(pathOrUrl, this.base)
      let verb = method
      let body = init.body
      for (let hop = 0; ; hop++) {
        const headers = { ...(init.headers ?? {}) }
        // Storage behind a redirect authenticates by its signed URL; credentials stay with the registry.
        if (this.authorization && url.origin === registry) headers.authorization = this.authorization
        const response = await this.fetch(url, { method: verb, headers, body, redirect: 'manual' }).catch((error) => {
          // fetch says only "fetch failed"; the reason (refused, certificate, DNS) is its cause.
          const cause = error?.cause?.code ?? error?.cause?.message ?? error?.code ?? error?.message ?? String(error)
          throw new Error(`cannot reach ${url.origin} (${verb} ${url.pathname}): ${cause}`)
        })
        const location = response.headers.get('location')
        if (!REDIRECTS.has(response.status) || !location) return response
        await response.arrayBuffer()
        if (hop === 5) throw new Error(`${this.host} redirected ${method} ${url.pathname} more than 5 times`)
        url = new URL(location, url)
        if (response.status === 303 && verb !== 'HEAD') {
          verb = 'GET'
          body = undefined
        }
      }
    }
    let response = await send()
    if (response.status === 401 && (await this.authorize(parseChallenge(response.headers.get('www-authenticate'))))) {
      await response.arrayBuffer()
      response = await send()
    }
    return response
  }
}

// Registries explain failures as {errors: [{code, message}]}; anything else is shown as text.
export async function failure(response, what) {
  const text = await response.text().catch(() => '')
  let detail = text.slice(0, 300)
  try {
    const errors = JSON.parse(text).errors
    if (Array.isArray(errors) && errors.length > 0) detail = errors.map((e) => [e.code, e.message].filter(Boolean).join(': ')).join('; ')
  } catch {
    // not JSON: keep the text
  }
  const hint = response.status === 401 ? ' (check REGISTRY_USER/REGISTRY_PASSWORD)' : ''
  return new Error(`${what}: HTTP ${response.status}${hint}${detail ? ` ${detail}` : ''}`)
}

/** Reads a manifest by tag or digest, checking a digest reference against the bytes. */
export async function getManifest(client, repository, reference) {
  const what = `reading manifest ${reference} from ${client.host}/${repository}`
  const response = await client.request('GET', `/v2/${repository}/manifests/${reference}`, { headers: { accept: ACCEPT } })
  if (response.status === 404) throw new Error(`base image ${client.host}/${repository}:${reference} not found (HTTP 404)`)
  if (!response.ok) throw await failure(response, what)
  const bytes = Buffer.from(await response.arrayBuffer())
  const digest = sha256Digest(bytes)
  if (reference.startsWith('sha256:') && digest !== reference) {
    throw new Error(`manifest ${client.host}/${repository}@${reference} does not match its digest (got ${digest})`)
  }
  const manifest = JSON.parse(bytes.toString('utf8'))
  const mediaType = manifest.mediaType ?? (response.headers.get('content-type') ?? '').split(';')[0]
  return { manifest, mediaType, digest, bytes }
}

/** Reads a blob, checking it against its digest. */
export async function getBlob(client, repository, digest, what) {
  const step = `${what} ${digest} from ${client.host}/${repository}`
  const response = await client.request('GET', `/v2/${repository}/blobs/${digest}`)
  if (!response.ok) throw await failure(response, step)
  const data = Buffer.from(await response.arrayBuffer())
  if (sha256Digest(data) !== digest) throw new Error(`${step}: the content does not match its digest (got ${sha256Digest(data)})`)
  return data
}

/** Whether the repository holds the blob. */
export async function hasBlob(client, repository, digest, what) {
  const response = await client.request('HEAD', `/v2/${repository}/blobs/${digest}`)
  if (response.status === 200) return true
  if (response.status === 404) return false
  throw await failure(response, `checking for ${what} ${digest} in ${client.host}/${repository}`)
}

// A registry that stored something else than what was sent says so in Docker-Content-Digest.
export function checkStoredDigest(response, expected, step) {
  const stored = response.headers.get('docker-content-digest')
  if (stored && stored !== expected) throw new Error(`${step}: the registry stored ${stored}, not ${expected}`)
}

/** Ends an upload at `location` with the whole blob. */
export async function finishUpload(client, location, digest, data, step) {
  const url = new URL(location, client.base)
  url.searchParams.set('digest', digest)
  const response = await client.request('PUT', url.href, {
    headers: { 'content-type': 'application/octet-stream', 'content-length': String(data.length) },
    body: data,
  })
  if (response.status !== 201) throw await failure(response, step)
  checkStoredDigest(response, digest, step)
  await response.arrayBuffer()
}

/** Starts a blob upload (or, with a `mount` query, a cross-repository mount). */
export async function startUpload(client, repository, query = '') {
  return client.request('POST', `/v2/${repository}/blobs/uploads/${query}`, { headers: { 'content-length': '0' } })
}

/** Uploads a blob in one request after starting the upload. */
export async function uploadBlob(client, repository, digest, data, what) {
  const step = `uploading ${what} ${digest} to ${client.host}/${repository}`
  const response = await startUpload(client, repository)
  if (response.status !== 202) throw await failure(response, step)
  await response.arrayBuffer()
  const location = response.headers.get('location')
  if (!location) throw new Error(`${step}: the registry started an upload without a Location`)
  await finishUpload(client, location, digest, data, step)
}

/**
 * Pushes blobs the registry lacks ({what, digest, data}), then the manifest under `reference`
 * (a tag, or its own digest). The manifest goes last, so a failure part way leaves nothing
 * tagged and a rerun only sends what is still missing. Resolves to the manifest digest.
 */
export async function pushImage(client, repository, blobs, manifestBytes, mediaType, reference) {
  for (const blob of blobs) {
    if (!(await hasBlob(client, repository, blob.digest, blob.what))) await uploadBlob(client, repository, blob.digest, blob.data, blob.what)
  }
  const digest = sha256Digest(manifestBytes)
  const step = `pushing manifest ${digest} to ${client.host}/${repository}${reference === digest ? '' : `:${reference}`}`
  const put = await client.request('PUT', `/v2/${repository}/manifests/${reference ?? digest}`, {
    headers: { 'content-type': mediaType },
    body: manifestBytes,
  })
  if (put.status !== 201) throw await failure(put, step)
  checkStoredDigest(put, digest, step)
  await put.arrayBuffer()
  return digest
}
