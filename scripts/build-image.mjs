// npm run image: builds Kinetic's one container image without a Docker daemon. It pulls a base
// image's manifest from an OCI Distribution registry, adds one reproducible layer holding dist/
// under /app, and pushes the result, so the same dist/ always yields the same manifest digest.
import { createHash } from 'node:crypto'
import { readFileSync, readdirSync, writeFileSync } from 'node:fs'
import { request as httpsRequest } from 'node:https'
import { rootCertificates } from 'node:tls'
import { join, relative, resolve, sep } from 'node:path'
import { pathToFileURL } from 'node:url'
import { gzipSync } from 'node:zlib'
import { parseDocument } from 'yaml'
import { readOptions } from './script-cli.mjs'

const OCI_MANIFEST = 'application/vnd.oci.image.manifest.v1+json'
const OCI_INDEX = 'application/vnd.oci.image.index.v1+json'
const DOCKER_MANIFEST = 'application/vnd.docker.distribution.manifest.v2+json'
const DOCKER_LIST = 'application/vnd.docker.distribution.manifest.list.v2+json'
const OCI_LAYER = 'application/vnd.oci.image.layer.v1.tar+gzip'
const DOCKER_LAYER = 'application/vnd.docker.image.rootfs.diff.tar.gzip'
const ACCEPT = [OCI_MANIFEST, OCI_INDEX, DOCKER_MANIFEST, DOCKER_LIST].join(', ')

/** The command every container of the image runs unless it names its own: the step executor. */
export const ENTRYPOINT = ['node', 'dist/executor/main.js']
/** The non-root user the image runs as (distroless "nonroot"). */
export const USER = '65532:65532'
/** Where dist/ lands inside the image; also the working directory. */
export const APP_DIR = '/app'
// Fixed timestamp so that config and history never depend on when the build ran.
const EPOCH = '1970-01-01T00:00:00Z'

/** Returns the lowercase hex sha256 of `data` prefixed with `sha256:`. */
export function sha256Digest(data) {
  return `sha256:${createHash('sha256').update(data).digest('hex')}`
}

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

function octal(value, width) {
  // ustar numeric fields: zero-padded octal digits followed by a NUL.
  const text = value.toString(8)
  if (text.length > width - 1) throw new Error(`tar field overflow: ${value}`)
  return text.padStart(width - 1, '0') + '\0'
}

function splitName(name) {
  if (Buffer.byteLength(name) <= 100) return { name, prefix: '' }
  // Long paths go into the 155-byte prefix, split at a slash.
  for (let i = name.length - 1; i > 0; i--) {
    if (name[i] !== '/') continue
    const prefix = name.slice(0, i)
    const rest = name.slice(i + 1)
    if (Buffer.byteLength(prefix) <= 155 && Buffer.byteLength(rest) <= 100 && rest.length > 0) return { name: rest, prefix }
  }
  throw new Error(`path too long for a ustar archive: ${name}`)
}

const TYPE_FLAGS = { file: '0', symlink: '2', dir: '5' }

function tarHeader(entry, size) {
  const header = Buffer.alloc(512)
  const { name, prefix } = splitName(entry.path)
  const put = (text, offset, length) => header.write(text, offset, length, 'utf8')
  const flag = TYPE_FLAGS[entry.type]
  if (!flag) throw new Error(`tar entry ${entry.path} has unknown type ${entry.type}`)
  put(name, 0, 100)
  put(octal(entry.mode ?? (entry.type === 'file' ? 0o644 : entry.type === 'dir' ? 0o755 : 0o777), 8), 100, 8)
  put(octal(entry.uid ?? 0, 8), 108, 8)
  put(octal(entry.gid ?? 0, 8), 116, 8)
  put(octal(size, 12), 124, 12)
  put(octal(0, 12), 136, 12)
  put('        ', 148, 8)
  put(flag, 156, 1)
  if (entry.type === 'symlink') {
    if (Buffer.byteLength(entry.target ?? '') > 100 || !entry.target) throw new Error(`symlink ${entry.path} needs a target of at most 100 bytes`)
    put(entry.target, 157, 100)
  }
  put('ustar\0', 257, 6)
  put('00', 263, 2)
  put('root', 265, 32)
  put('root', 297, 32)
  put(octal(0, 8), 329, 8)
  put(octal(0, 8), 337, 8)
  put(prefix, 345, 155)
  let sum = 0
  for (const byte of header) sum += byte
  put(sum.toString(8).padStart(6, '0') + '\0 ', 148, 8)
  return header
}

/**
 * Writes a POSIX ustar archive of `entries` ({path, type: 'dir'|'file'|'symlink', data?, target?,
 * mode?, uid?, gid?}) in byte order of their paths, with mtime 0; unless an entry says otherwise,
 * uid/gid 0, mode 0755 for directories and 0644 for files.
 */
export function createTar(entries) {
  const sorted = [...entries].sort((a, b) => Buffer.compare(Buffer.from(a.path), Buffer.from(b.path)))
  const blocks = []
  for (const entry of sorted) {
    const data = entry.type === 'file' ? Buffer.from(entry.data ?? '') : Buffer.alloc(0)
    blocks.push(tarHeader(entry, data.length), data)
    const pad = (512 - (data.length % 512)) % 512
    if (pad) blocks.push(Buffer.alloc(pad))
  }
  blocks.push(Buffer.alloc(1024))
  return Buffer.concat(blocks)
}

/** Gzips `data` with a header that carries no file name, mtime 0 and a fixed OS byte, so output depends only on input. */
export function deterministicGzip(data, level = 9) {
  const gz = gzipSync(data, { level })
  // zlib stamps the OS it was built for; fix it to "unknown" so every platform agrees.
  gz[9] = 0xff
  return gz
}

function collect(distDir, withSourcemaps) {
  const entries = [{ path: 'app/', type: 'dir' }, { path: 'app/dist/', type: 'dir' }]
  const walk = (dir) => {
    for (const item of readdirSync(dir, { withFileTypes: true })) {
      const full = join(dir, item.name)
      const inside = `app/dist/${relative(distDir, full).split(sep).join('/')}`
      if (item.isDirectory()) {
        entries.push({ path: `${inside}/`, type: 'dir' })
        walk(full)
      } else if (item.isFile()) {
        if (!withSourcemaps && item.name.endsWith('.map')) continue
        entries.push({ path: inside, type: 'file', data: readFileSync(full) })
      }
    }
  }
  walk(distDir)
  return entries
}

/** Builds the app layer from `distDir`: the tar (dist/** under app/dist/), its gzip, the compressed digest and the diff_id. */
export function buildAppLayer(distDir, options = {}) {
  const entries = collect(resolve(distDir), options.withSourcemaps === true)
  if (!entries.some((e) => e.path === 'app/dist/executor/main.js')) {
    throw new Error(`${distDir} has no executor/main.js (the image entrypoint); run npm run build first`)
  }
  const tar = createTar(entries)
  const gzip = deterministicGzip(tar)
  return { tar, gzip, digest: sha256Digest(gzip), diffId: sha256Digest(tar), size: gzip.length }
}

/** Returns the image config for the base config plus the app layer: entrypoint, working dir, non-root user, base Env kept. */
export function appImageConfig(baseConfig, diffId) {
  const config = { ...(baseConfig.config ?? {}) }
  config.WorkingDir = APP_DIR
  config.Entrypoint = [...ENTRYPOINT]
  config.Cmd = null
  config.User = USER
  // The base's labels say what runtime is inside; these say what the image is.
  config.Labels = {
    ...(config.Labels ?? {}),
    'org.opencontainers.image.title': 'kinetic',
    'org.opencontainers.image.description': 'Kinetic functions, step executor and MCP bridge (dist/ under /app)',
  }
  const history = [...(baseConfig.history ?? [])]
  history.push({ created: EPOCH, created_by: 'kinetic build-image: dist/ as /app/dist', comment: 'kinetic app layer' })
  return {
    ...baseConfig,
    created: EPOCH,
    config,
    rootfs: { type: 'layers', diff_ids: [...(baseConfig.rootfs?.diff_ids ?? []), diffId] },
    history,
  }
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
async function failure(response, what) {
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

async function getManifest(client, repository, reference) {
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

function pickPlatform(index, platform) {
  const [os, architecture, variant] = platform.split('/')
  const found = (index.manifests ?? []).find(
    (m) =>
      m.platform?.os === os &&
      m.platform?.architecture === architecture &&
      (variant === undefined || m.platform?.variant === variant),
  )
  if (!found) {
    const offered = (index.manifests ?? []).map((m) => `${m.platform?.os}/${m.platform?.architecture}`).join(', ')
    throw new Error(`base image has no ${platform} manifest (offers: ${offered || 'none'})`)
  }
  return found.digest
}

async function resolveBase(client, ref, platform) {
  let current = await getManifest(client, ref.repository, ref.digest ?? ref.tag ?? 'latest')
  if (current.mediaType === OCI_INDEX || current.mediaType === DOCKER_LIST || (!current.manifest.layers && current.manifest.manifests)) {
    current = await getManifest(client, ref.repository, pickPlatform(current.manifest, platform))
  }
  // OCI manifests may omit mediaType; anything else (Docker schema 1, artifacts) cannot be extended.
  if (!current.mediaType && current.manifest.schemaVersion === 2 && Array.isArray(current.manifest.layers)) {
    current.mediaType = OCI_MANIFEST
  }
  if (current.mediaType !== OCI_MANIFEST && current.mediaType !== DOCKER_MANIFEST) {
    throw new Error(`base image manifest type "${current.mediaType}" is not supported (need OCI or Docker schema 2)`)
  }
  return current
}

async function getBlob(client, repository, digest, what) {
  const step = `${what} ${digest} from ${client.host}/${repository}`
  const response = await client.request('GET', `/v2/${repository}/blobs/${digest}`)
  if (!response.ok) throw await failure(response, step)
  const data = Buffer.from(await response.arrayBuffer())
  if (sha256Digest(data) !== digest) throw new Error(`${step}: the content does not match its digest (got ${sha256Digest(data)})`)
  return data
}

async function hasBlob(client, repository, digest, what) {
  const response = await client.request('HEAD', `/v2/${repository}/blobs/${digest}`)
  if (response.status === 200) return true
  if (response.status === 404) return false
  throw await failure(response, `checking for ${what} ${digest} in ${client.host}/${repository}`)
}

// A registry that stored something else than what was sent says so in Docker-Content-Digest.
function checkStoredDigest(response, expected, step) {
  const stored = response.headers.get('docker-content-digest')
  if (stored && stored !== expected) throw new Error(`${step}: the registry stored ${stored}, not ${expected}`)
}

async function finishUpload(client, location, digest, data, step) {
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

async function startUpload(client, repository, query = '') {
  return client.request('POST', `/v2/${repository}/blobs/uploads/${query}`, { headers: { 'content-length': '0' } })
}

async function uploadBlob(client, repository, digest, data, what) {
  const step = `uploading ${what} ${digest} to ${client.host}/${repository}`
  const response = await startUpload(client, repository)
  if (response.status !== 202) throw await failure(response, step)
  await response.arrayBuffer()
  const location = response.headers.get('location')
  if (!location) throw new Error(`${step}: the registry started an upload without a Location`)
  await finishUpload(client, location, digest, data, step)
}

async function copyBaseLayer(source, target, baseRepo, toRepo, layer, log) {
  if (await hasBlob(target, toRepo, layer.digest, 'base layer')) return 'present'
  const step = `uploading base layer ${layer.digest} to ${target.host}/${toRepo}`
  if (source.host === target.host) {
    const query = `?mount=${encodeURIComponent(layer.digest)}&from=${encodeURIComponent(baseRepo)}`
    const response = await startUpload(target, toRepo, query)
    if (response.status === 201) {
      checkStoredDigest(response, layer.digest, `mounting base layer ${layer.digest} into ${target.host}/${toRepo}`)
      await response.arrayBuffer()
      return 'mounted'
    }
    // 202 means the registry declined the mount and opened an ordinary upload instead.
    if (response.status === 202 && response.headers.get('location')) {
      await response.arrayBuffer()
      const data = await getBlob(source, baseRepo, layer.digest, 'reading base layer')
      await finishUpload(target, response.headers.get('location'), layer.digest, data, step)
      return 'uploaded'
    }
    throw await failure(response, `mounting base layer ${layer.digest} into ${target.host}/${toRepo}`)
  }
  log(`copying base layer ${layer.digest} (${layer.size} bytes)`)
  await uploadBlob(target, toRepo, layer.digest, await getBlob(source, baseRepo, layer.digest, 'reading base layer'), 'base layer')
  return 'uploaded'
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

/**
 * Builds and pushes the image: base manifest from `options.base`, one app layer from
 * `options.dist`, pushed to `options.to`; resolves to `{ reference, digest, manifest, config, layer }`
 * where `reference` is `<to-repo>@<digest>`. Same inputs always give the same digest.
 */
export async function buildImage(options) {
  const log = options.log ?? (() => {})
  const auth = { user: options.user ?? process.env.REGISTRY_USER, password: options.password ?? process.env.REGISTRY_PASSWORD }
  const baseRef = parseReference(options.base)
  const toRef = parseReference(options.to)
  if (toRef.digest) throw new Error(`--to "${options.to}" must not carry a digest; the digest is computed`)
  const transport = { insecure: options.insecure, fetch: options.fetch, ca: options.ca, tls: options.tls }
  const source = new RegistryClient(baseRef.host, { ...transport, ...auth })
  const target = toRef.host === baseRef.host ? source : new RegistryClient(toRef.host, { ...transport, ...auth })

  const base = await resolveBase(source, baseRef, options.platform ?? 'linux/amd64')
  log(`base ${baseRef.name}@${base.digest}`)
  const baseConfig = JSON.parse((await getBlob(source, baseRef.repository, base.manifest.config.digest, 'reading base config')).toString('utf8'))

  const layer = buildAppLayer(options.dist ?? 'dist', { withSourcemaps: options.withSourcemaps })
  log(`app layer ${layer.digest} (${layer.size} bytes, diff_id ${layer.diffId})`)
  const config = appImageConfig(baseConfig, layer.diffId)
  const configBytes = Buffer.from(JSON.stringify(config))
  const docker = base.mediaType === DOCKER_MANIFEST

  const manifest = { ...base.manifest }
  delete manifest.subject
  manifest.mediaType = base.mediaType
  manifest.config = { mediaType: base.manifest.config.mediaType, digest: sha256Digest(configBytes), size: configBytes.length }
  manifest.layers = [
    ...base.manifest.layers,
    { mediaType: docker ? DOCKER_LAYER : OCI_LAYER, digest: layer.digest, size: layer.size },
  ]
  if (!docker) {
    manifest.annotations = {
      ...(base.manifest.annotations ?? {}),
      'org.opencontainers.image.base.name': baseRef.name + (baseRef.tag ? `:${baseRef.tag}` : ''),
      'org.opencontainers.image.base.digest': base.digest,
    }
  }
  const manifestBytes = Buffer.from(JSON.stringify(manifest))
  const digest = sha256Digest(manifestBytes)

  for (const baseLayer of base.manifest.layers) {
    log(`base layer ${baseLayer.digest}: ${await copyBaseLayer(source, target, baseRef.repository, toRef.repository, baseLayer, log)}`)
  }
  await pushImage(
    target,
    toRef.repository,
    [
      { what: 'app layer', digest: layer.digest, data: layer.gzip },
      { what: 'image config', digest: manifest.config.digest, data: configBytes },
    ],
    manifestBytes,
    manifest.mediaType,
    toRef.tag ?? digest,
  )
  return { reference: `${toRef.name}@${digest}`, name: toRef.name, digest, manifest, config, layer }
}

/** Points the `kinetic` entry of `<dir>/kustomization.yaml`'s `images:` at `name@digest`, keeping comments and order. */
export function setKustomizeImage(dir, name, digest) {
  const file = join(dir, 'kustomization.yaml')
  const doc = parseDocument(readFileSync(file, 'utf8'))
  let images = doc.get('images')
  if (!images) {
    doc.set('images', doc.createNode([]))
    images = doc.get('images')
  }
  let entry = images.items.find((item) => item.get?.('name') === 'kinetic')
  if (!entry) {
    entry = doc.createNode({ name: 'kinetic' })
    images.items.push(entry)
  }
  entry.set('newName', name)
  entry.delete('newTag')
  entry.set('digest', digest)
  writeFileSync(file, doc.toString())
  return file
}

const USAGE = `usage: node scripts/build-image.mjs --base <registry>/<repo>(@sha256:...|:tag) --to <registry>/<repo>[:tag]
  [--dist dist] [--platform linux/amd64] [--insecure] [--ca <pem file>] [--with-sourcemaps] [--set-image <dir>]
  credentials: REGISTRY_USER / REGISTRY_PASSWORD; --ca trusts a private registry CA (https even on loopback)`

/** Runs the CLI with `argv`; prints the pushed reference on stdout and returns the exit code. */
export async function main(argv) {
  const read = readOptions(argv, {
    base: { type: 'string' },
    to: { type: 'string' },
    dist: { type: 'string', default: 'dist' },
    platform: { type: 'string', default: 'linux/amd64' },
    insecure: { type: 'boolean', default: false },
    ca: { type: 'string' },
    'with-sourcemaps': { type: 'boolean', default: false },
    'set-image': { type: 'string' },
      }, USAGE, ['base', 'to'])
  if (read.exit !== undefined) return read.exit
  const { values } = read
  try {
    const result = await buildImage({
      base: values.base,
      to: values.to,
      dist: values.dist,
      platform: values.platform,
      insecure: values.insecure,
      ca: values.ca ? readFileSync(values.ca, 'utf8') : undefined,
      withSourcemaps: values['with-sourcemaps'],
      log: (line) => process.stderr.write(`${line}\n`),
    })
    process.stdout.write(`${result.reference}\n`)
    if (values['set-image']) {
      const file = setKustomizeImage(values['set-image'], result.name, result.digest)
      process.stderr.write(
        `${file}: images kinetic -> ${result.reference}\n` +
          `step Jobs run the same image's entrypoint (the kustomization copies it into KINETIC_EXECUTOR_IMAGE)\n`,
      )
    }
    return 0
  } catch (error) {
    process.stderr.write(`build-image: ${error instanceof Error ? error.message : String(error)}\n`)
    return 1
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.exitCode = await main(process.argv.slice(2))
}
