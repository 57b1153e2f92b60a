// npm run image: builds Kinetic's one container image without a Docker daemon. It pulls a base
// image's manifest from an OCI Distribution registry, adds one reproducible layer holding dist/
// under /app, and pushes the result, so the same dist/ always yields the same manifest digest.
// The layer is image-layer.mjs, the registry client registry-client.mjs.
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { parseDocument } from 'yaml'
import { appImageConfig, buildAppLayer, sha256Digest } from './image-layer.mjs'
import {
  DOCKER_LIST, DOCKER_MANIFEST, OCI_INDEX, OCI_MANIFEST, RegistryClient, checkStoredDigest, failure, finishUpload, getBlob, getManifest,
  hasBlob, parseReference, pushImage, startUpload, uploadBlob,
} from './registry-client.mjs'
import { readOptions } from './script-cli.mjs'

const OCI_LAYER = 'application/vnd.oci.image.layer.v1.tar+gzip'
const DOCKER_LAYER = 'application/vnd.docker.image.rootfs.diff.tar.gzip'

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
