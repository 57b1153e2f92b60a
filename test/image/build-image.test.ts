import { execFile } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { gunzipSync, gzipSync } from 'node:zlib'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { parse } from 'yaml'
import { buildImage } from '../../scripts/build-image.mjs'
import { createTar, type ImageConfig } from '../../scripts/image-layer.mjs'
import type { ImageManifest } from '../../scripts/registry-client.mjs'
import { FakeRegistry, digestOf } from './fake-registry.js'

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..')
const script = join(root, 'scripts', 'build-image.mjs')

const OCI_MANIFEST = 'application/vnd.oci.image.manifest.v1+json'
const OCI_INDEX = 'application/vnd.oci.image.index.v1+json'
const OCI_CONFIG = 'application/vnd.oci.image.config.v1+json'
const DOCKER_MANIFEST = 'application/vnd.docker.distribution.manifest.v2+json'
const DOCKER_CONFIG = 'application/vnd.docker.container.image.v1+json'

const EXECUTOR = 'process.stdout.write("OUTPUT:{}\\n")\n'
const FUNCTION = 'console.log("workflow-changed")\n'

interface TarMember {
  name: string
  mode: number
  uid: number
  gid: number
  mtime: number
  type: string
  data: Buffer
}

// Reads a ustar archive independently of the code under test, checking every header's checksum.
function readTar(tar: Buffer): TarMember[] {
  const members: TarMember[] = []
  let offset = 0
  const text = (start: number, length: number) => tar.subarray(offset + start, offset + start + length).toString('utf8').replace(/\0.*$/s, '')
  const num = (start: number, length: number) => Number.parseInt(text(start, length).trim() || '0', 8)
  while (offset + 512 <= tar.length && tar.subarray(offset, offset + 512).some((b) => b !== 0)) {
    const header = Buffer.from(tar.subarray(offset, offset + 512))
    const stored = num(148, 8)
    header.fill(0x20, 148, 156)
    expect(header.reduce((sum, b) => sum + b, 0)).toBe(stored)
    expect(text(257, 6)).toBe('ustar')
    const prefix = text(345, 155)
    const size = num(124, 12)
    members.push({
      name: prefix ? `${prefix}/${text(0, 100)}` : text(0, 100),
      mode: num(100, 8),
      uid: num(108, 8),
      gid: num(116, 8),
      mtime: num(136, 12),
      type: text(156, 1),
      data: Buffer.from(tar.subarray(offset + 512, offset + 512 + size)),
    })
    offset += 512 + Math.ceil(size / 512) * 512
  }
  return members
}

interface Base {
  repo: string
  manifestDigest: string
  layerDigest: string
  diffId: string
  config: ImageConfig
}

// A synthetic base image: one tiny layer (a fake node binary) and a config with PATH set.
function seedBase(registry: FakeRegistry, repo: string, options: { docker?: boolean; tag?: string; architecture?: string } = {}): Base {
  const layerTar = createTar([
    { path: 'usr/', type: 'dir' },
    { path: 'usr/bin/', type: 'dir' },
    { path: 'usr/bin/node', type: 'file', data: `#!fake node ${options.architecture ?? 'amd64'}\n` },
  ])
  const layer = gzipSync(layerTar)
  const layerDigest = registry.putBlob(repo, layer)
  const config: ImageConfig = {
    architecture: options.architecture ?? 'amd64',
    os: 'linux',
    config: { Env: ['PATH=/usr/local/sbin:/usr/local/bin:/usr/bin:/bin', 'SSL_CERT_FILE=/etc/ssl/certs/ca.crt'], Cmd: ['node'], User: '0' },
    rootfs: { type: 'layers', diff_ids: [digestOf(layerTar)] },
    history: [{ created: '2026-01-01T00:00:00Z', created_by: 'base layer' }],
  }
  const configBytes = JSON.stringify(config)
  const configDigest = registry.putBlob(repo, configBytes)
  const mediaType = options.docker ? DOCKER_MANIFEST : OCI_MANIFEST
  const manifestDigest = registry.putManifest(
    repo,
    {
      schemaVersion: 2,
      mediaType,
      config: { mediaType: options.docker ? DOCKER_CONFIG : OCI_CONFIG, digest: configDigest, size: configBytes.length },
      layers: [
        {
          mediaType: options.docker ? 'application/vnd.docker.image.rootfs.diff.tar.gzip' : 'application/vnd.oci.image.layer.v1.tar+gzip',
          digest: layerDigest,
          size: layer.length,
        },
      ],
    },
    mediaType,
    options.tag,
  )
  return { repo, manifestDigest, layerDigest, diffId: digestOf(layerTar), config }
}

function runCli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(process.execPath, [script, ...args], { cwd: root, timeout: 20_000 }, (error, stdout, stderr) => {
      done({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr })
    })
  })
}

function pushed(registry: FakeRegistry, repo: string, digest: string): { manifest: ImageManifest; config: ImageConfig; mediaType: string } {
  const stored = registry.manifest(repo, digest)
  if (!stored) throw new Error(`no manifest ${digest} in ${repo}`)
  const manifest = JSON.parse(stored.bytes.toString('utf8')) as ImageManifest
  const config = JSON.parse(registry.blob(repo, manifest.config.digest)?.toString('utf8') ?? 'null') as ImageConfig
  return { manifest, config, mediaType: stored.mediaType }
}

let work: string
let dist: string
let registry: FakeRegistry

beforeEach(async () => {
  work = mkdtempSync(join(tmpdir(), 'kinetic-image-'))
  dist = join(work, 'dist')
  mkdirSync(join(dist, 'executor'), { recursive: true })
  mkdirSync(join(dist, 'functions', 'workflow-changed'), { recursive: true })
  writeFileSync(join(dist, 'executor', 'main.js'), EXECUTOR)
  writeFileSync(join(dist, 'executor', 'main.js.map'), '{"version":3}')
  writeFileSync(join(dist, 'functions', 'workflow-changed', 'main.js'), FUNCTION)
  registry = await new FakeRegistry().start()
})

afterEach(async () => {
  await registry.stop()
  rmSync(work, { recursive: true, force: true })
})

describe('createTar', () => {
  it('stores paths over 100 bytes in the ustar prefix and pads file data to 512-byte blocks', () => {
    const long = `app/dist/${'functions/'.repeat(9)}a-very-long-entry-point-name.js`
    const exact = 'x'.repeat(512)
    const tar = createTar([
      { path: long, type: 'file', data: 'long' },
      { path: 'app/empty.js', type: 'file', data: '' },
      { path: 'app/exact.js', type: 'file', data: exact },
    ])
    expect(long.length).toBeGreaterThan(100)
    // Three headers, one data block for "long", one for the 512 bytes, none for the empty file, two end blocks.
    expect(tar.length).toBe(512 * (3 + 1 + 1 + 2))
    expect(readTar(tar).map((m) => [m.name, m.data.toString()])).toEqual([
      [long, 'long'],
      ['app/empty.js', ''],
      ['app/exact.js', exact],
    ])
  })
})

describe('build-image CLI', () => {
  it('pushes base layers plus one app layer, prints <repo>@digest and pins knative/kustomization.yaml', async () => {
    const base = seedBase(registry, 'base/node')
    const knative = join(work, 'knative')
    mkdirSync(knative)
    writeFileSync(
      join(knative, 'kustomization.yaml'),
      '# installs Kinetic\nresources:\n  - services/a.yaml\n# pin the image\nimages:\n  - name: other\n    newName: other\n  - name: kinetic\n    newName: kinetic\n    newTag: dev\n',
    )
    const result = await runCli([
      '--base', `${registry.host}/base/node@${base.manifestDigest}`,
      '--to', `${registry.host}/team/kinetic`,
      '--dist', dist,
      '--set-image', knative,
    ])
    expect(result.stderr).not.toContain('build-image:')
    expect(result.code).toBe(0)
    const reference = result.stdout.trim().split('\n')[0] ?? ''
    expect(reference).toMatch(new RegExp(`^${registry.host}/team/kinetic@sha256:[a-f0-9]{64}$`))
    const digest = reference.split('@')[1] ?? ''

    const { manifest, mediaType } = pushed(registry, 'team/kinetic', digest)
    expect(mediaType).toBe(OCI_MANIFEST)
    expect(manifest.layers).toHaveLength(2)
    expect(manifest.layers[0]?.digest).toBe(base.layerDigest)
    expect(manifest.layers[1]?.mediaType).toBe('application/vnd.oci.image.layer.v1.tar+gzip')
    expect(manifest.annotations?.['org.opencontainers.image.base.digest']).toBe(base.manifestDigest)
    // Same registry: the base layer is mounted from the base repository, not uploaded again.
    expect(registry.requests.some((r) => r.method === 'POST' && r.path.includes('mount=') && r.status === 201)).toBe(true)

    const kustomization = parse(readFileSync(join(knative, 'kustomization.yaml'), 'utf8')) as { images: Array<Record<string, string>> }
    expect(kustomization.images).toEqual([
      { name: 'other', newName: 'other' },
      { name: 'kinetic', newName: `${registry.host}/team/kinetic`, digest },
    ])
    expect(readFileSync(join(knative, 'kustomization.yaml'), 'utf8')).toContain('# pin the image')
    expect(result.stderr).toContain(`images kinetic -> ${reference}`)
    expect(result.stderr).toContain('copies it into KINETIC_EXECUTOR_IMAGE')
  })

  it('exits non-zero with a clear message when the base image does not exist', async () => {
    const result = await runCli([
      '--base', `${registry.host}/base/missing:20`,
      '--to', `${registry.host}/team/kinetic`,
      '--dist', dist,
    ])
    expect(result.code).toBe(1)
    expect(result.stdout).toBe('')
    expect(result.stderr).toContain(`base image ${registry.host}/base/missing:20 not found`)
  })

  it('exits with usage naming the missing --base', async () => {
    const result = await runCli(['--to', `${registry.host}/team/kinetic`])
    expect(result.code).toBe(2)
    expect(result.stderr).toContain('--base is required')
  })
})

describe('buildImage', () => {
  it('writes dist/ as a reproducible ustar layer under app/dist whose diff_id is in the config', async () => {
    seedBase(registry, 'base/node', { tag: '20' })
    const result = await buildImage({ base: `${registry.host}/base/node:20`, to: `${registry.host}/kinetic`, dist })
    const { manifest, config } = pushed(registry, 'kinetic', result.digest)
    const appLayer = manifest.layers[1]
    if (!appLayer) throw new Error('no app layer')
    const gz = registry.blob('kinetic', appLayer.digest)
    if (!gz) throw new Error('app layer was not uploaded')
    expect(digestOf(gz)).toBe(appLayer.digest)
    expect(appLayer.size).toBe(gz.length)
    // The gzip header names no file and carries mtime 0.
    expect(gz[3]! & 0x08).toBe(0)
    expect(gz.readUInt32LE(4)).toBe(0)

    const tar = gunzipSync(gz)
    const members = readTar(tar)
    expect(members.map((m) => m.name)).toEqual([
      'app/',
      'app/dist/',
      'app/dist/executor/',
      'app/dist/executor/main.js',
      'app/dist/functions/',
      'app/dist/functions/workflow-changed/',
      'app/dist/functions/workflow-changed/main.js',
    ])
    for (const member of members) {
      expect(member).toMatchObject({ uid: 0, gid: 0, mtime: 0, mode: member.type === '5' ? 0o755 : 0o644 })
      expect(member.type).toBe(member.name.endsWith('/') ? '5' : '0')
    }
    expect(members.find((m) => m.name === 'app/dist/executor/main.js')?.data.toString()).toBe(EXECUTOR)
    expect(members.find((m) => m.name === 'app/dist/functions/workflow-changed/main.js')?.data.toString()).toBe(FUNCTION)

    expect(config.rootfs.diff_ids).toHaveLength(2)
    expect(config.rootfs.diff_ids[1]).toBe(digestOf(tar))
    expect(config.config).toMatchObject({
      Entrypoint: ['node', 'dist/executor/main.js'],
      Cmd: null,
      WorkingDir: '/app',
      User: '65532:65532',
      Env: ['PATH=/usr/local/sbin:/usr/local/bin:/usr/bin:/bin', 'SSL_CERT_FILE=/etc/ssl/certs/ca.crt'],
    })
    expect(config.history).toHaveLength(2)
    expect(manifest.config.digest).toBe(digestOf(registry.blob('kinetic', manifest.config.digest) ?? ''))
  })

  it('gives the same manifest digest for the same dist, and a different one when dist changes', async () => {
    const base = seedBase(registry, 'base/node')
    const options = { base: `${registry.host}/base/node@${base.manifestDigest}`, to: `${registry.host}/kinetic`, dist }
    const first = await buildImage(options)
    const second = await buildImage({ ...options, to: `${registry.host}/kinetic:v1` })
    expect(second.digest).toBe(first.digest)
    expect(second.layer.gzip.equals(first.layer.gzip)).toBe(true)
    expect(registry.manifest('kinetic', 'v1')?.bytes.equals(registry.manifest('kinetic', first.digest)?.bytes ?? Buffer.alloc(0))).toBe(true)

    writeFileSync(join(dist, 'executor', 'main.js'), `${EXECUTOR}// changed\n`)
    const third = await buildImage(options)
    expect(third.digest).not.toBe(first.digest)
  })

  it('includes source maps only with withSourcemaps', async () => {
    const base = seedBase(registry, 'base/node')
    const options = { base: `${registry.host}/base/node@${base.manifestDigest}`, to: `${registry.host}/kinetic`, dist }
    const without = readTar((await buildImage(options)).layer.tar).map((m) => m.name)
    const withMaps = readTar((await buildImage({ ...options, withSourcemaps: true })).layer.tar).map((m) => m.name)
    expect(without).not.toContain('app/dist/executor/main.js.map')
    expect(withMaps).toContain('app/dist/executor/main.js.map')
  })

  it('picks the linux/amd64 image from an index base, or the platform asked for', async () => {
    const arm = seedBase(registry, 'base/node', { architecture: 'arm64' })
    const amd = seedBase(registry, 'base/node', { architecture: 'amd64' })
    const entry = (digest: string, architecture: string) => ({
      mediaType: OCI_MANIFEST,
      digest,
      size: registry.manifest('base/node', digest)?.bytes.length ?? 0,
      platform: { os: 'linux', architecture },
    })
    registry.putManifest(
      'base/node',
      { schemaVersion: 2, mediaType: OCI_INDEX, manifests: [entry(arm.manifestDigest, 'arm64'), entry(amd.manifestDigest, 'amd64')] },
      OCI_INDEX,
      '20',
    )
    const amd64 = await buildImage({ base: `${registry.host}/base/node:20`, to: `${registry.host}/kinetic`, dist })
    expect(amd64.manifest.layers[0]?.digest).toBe(amd.layerDigest)
    expect(amd64.config.architecture).toBe('amd64')
    expect(amd64.manifest.annotations?.['org.opencontainers.image.base.digest']).toBe(amd.manifestDigest)

    const arm64 = await buildImage({ base: `${registry.host}/base/node:20`, to: `${registry.host}/kinetic`, dist, platform: 'linux/arm64' })
    expect(arm64.manifest.layers[0]?.digest).toBe(arm.layerDigest)

    await expect(
      buildImage({ base: `${registry.host}/base/node:20`, to: `${registry.host}/kinetic`, dist, platform: 'linux/s390x' }),
    ).rejects.toThrow('base image has no linux/s390x manifest (offers: linux/arm64, linux/amd64)')
  })

  it('keeps a Docker schema 2 base in the Docker media types', async () => {
    const base = seedBase(registry, 'base/node', { docker: true })
    const result = await buildImage({ base: `${registry.host}/base/node@${base.manifestDigest}`, to: `${registry.host}/kinetic`, dist })
    const { manifest, mediaType } = pushed(registry, 'kinetic', result.digest)
    expect(mediaType).toBe(DOCKER_MANIFEST)
    expect(manifest.config.mediaType).toBe(DOCKER_CONFIG)
    expect(manifest.layers[1]?.mediaType).toBe('application/vnd.docker.image.rootfs.diff.tar.gzip')
    expect(manifest.annotations).toBeUndefined()
  })

  it('copies base layers between registries by download and upload', async () => {
    const target = await new FakeRegistry({ mount: false }).start()
    try {
      const base = seedBase(registry, 'base/node')
      const result = await buildImage({ base: `${registry.host}/base/node@${base.manifestDigest}`, to: `${target.host}/kinetic`, dist })
      expect(result.reference).toBe(`${target.host}/kinetic@${result.digest}`)
      expect(target.blob('kinetic', base.layerDigest)).toEqual(registry.blob('base/node', base.layerDigest))
      expect(target.manifest('kinetic', result.digest)).toBeDefined()
      expect(target.requests.some((r) => r.path.includes('mount='))).toBe(false)
    } finally {
      await target.stop()
    }
  })

  it('answers a bearer challenge with a token fetched using REGISTRY_USER/REGISTRY_PASSWORD style credentials', async () => {
    const secured = await new FakeRegistry({ bearer: { token: 's3cret-token', user: 'robot', password: 'pw' } }).start()
    try {
      const base = seedBase(secured, 'base/node')
      const options = { base: `${secured.host}/base/node@${base.manifestDigest}`, to: `${secured.host}/kinetic`, dist }
      await expect(buildImage(options)).rejects.toThrow('HTTP 401')
      const result = await buildImage({ ...options, user: 'robot', password: 'pw' })
      expect(secured.manifest('kinetic', result.digest)).toBeDefined()
      expect(secured.requests.some((r) => r.path.startsWith('/token') && r.status === 200)).toBe(true)
      expect(secured.requests.filter((r) => r.path.startsWith('/v2/') && r.status !== 401).every((r) => r.authorization === 'Bearer s3cret-token')).toBe(true)
    } finally {
      await secured.stop()
    }
  })

  it('refuses a dist without the executor entrypoint and a reference without a registry host', async () => {
    const base = seedBase(registry, 'base/node')
    rmSync(join(dist, 'executor'), { recursive: true })
    await expect(buildImage({ base: `${registry.host}/base/node@${base.manifestDigest}`, to: `${registry.host}/kinetic`, dist })).rejects.toThrow(
      'has no executor/main.js',
    )
    await expect(buildImage({ base: 'node:20', to: `${registry.host}/kinetic`, dist })).rejects.toThrow('must start with a registry host')
  })
})

describe('a registry that fails part way', () => {
  const layerPut = /^\/v2\/kinetic\/blobs\/uploads\/.+/

  it('a full disk (507) on the app layer names registry, repository and step, tags nothing, and a retry pushes', async () => {
    const base = seedBase(registry, 'base/node')
    const options = { base: `${registry.host}/base/node@${base.manifestDigest}`, to: `${registry.host}/kinetic:v1`, dist }
    registry.fail({ method: 'PUT', path: layerPut, status: 507, body: JSON.stringify({ errors: [{ code: 'UNKNOWN', message: 'no space left on device' }] }), times: 1 })
    const error = await buildImage(options).then(() => undefined, (e: Error) => e)
    expect(error?.message).toMatch(new RegExp(`^uploading app layer sha256:[a-f0-9]{64} to ${registry.host}/kinetic: HTTP 507 UNKNOWN: no space left on device$`))
    expect(registry.manifest('kinetic', 'v1')).toBeUndefined()
    expect(registry.requests.some((r) => r.method === 'PUT' && r.path.includes('/manifests/'))).toBe(false)
    const result = await buildImage(options)
    expect(registry.manifest('kinetic', 'v1')?.bytes).toEqual(registry.manifest('kinetic', result.digest)?.bytes)
  })

  it('a 404 on a base blob names the blob, the registry and the repository', async () => {
    const base = seedBase(registry, 'base/node')
    registry.fail({ method: 'GET', path: /\/blobs\/sha256:/, status: 404, body: JSON.stringify({ errors: [{ code: 'BLOB_UNKNOWN', message: 'blob unknown to registry' }] }) })
    await expect(buildImage({ base: `${registry.host}/base/node@${base.manifestDigest}`, to: `${registry.host}/kinetic:v1`, dist })).rejects.toThrow(
      new RegExp(`^reading base config sha256:[a-f0-9]{64} from ${registry.host}/base/node: HTTP 404 BLOB_UNKNOWN: blob unknown to registry$`),
    )
    expect(registry.manifest('kinetic', 'v1')).toBeUndefined()
  })

  it('a registry that stores another digest than was sent is caught before the manifest is tagged', async () => {
    const base = seedBase(registry, 'base/node')
    const lie = `sha256:${'0'.repeat(64)}`
    registry.fail({ method: 'PUT', path: layerPut, headers: { 'docker-content-digest': lie }, times: 1 })
    const options = { base: `${registry.host}/base/node@${base.manifestDigest}`, to: `${registry.host}/kinetic:v1`, dist }
    await expect(buildImage(options)).rejects.toThrow(
      new RegExp(`^uploading app layer sha256:[a-f0-9]{64} to ${registry.host}/kinetic: the registry stored ${lie}, not sha256:`),
    )
    expect(registry.manifest('kinetic', 'v1')).toBeUndefined()
    // The blob itself landed intact, so the retry finds it and only sends what is missing.
    const result = await buildImage(options)
    expect(registry.manifest('kinetic', 'v1')).toBeDefined()
    expect(result.reference).toBe(`${registry.host}/kinetic@${result.digest}`)
  })

  it('a wrong Docker-Content-Digest on the manifest push fails naming the manifest', async () => {
    const base = seedBase(registry, 'base/node')
    registry.fail({ method: 'PUT', path: /\/manifests\//, headers: { 'docker-content-digest': `sha256:${'1'.repeat(64)}` }, times: 1 })
    await expect(buildImage({ base: `${registry.host}/base/node@${base.manifestDigest}`, to: `${registry.host}/kinetic:v1`, dist })).rejects.toThrow(
      new RegExp(`^pushing manifest sha256:[a-f0-9]{64} to ${registry.host}/kinetic:v1: the registry stored sha256:1{64}`),
    )
  })

  it('a 401 with basic auth names the registry, repository and step and hints at the credentials', async () => {
    const base = seedBase(registry, 'base/node')
    registry.fail({ method: 'HEAD', path: /^\/v2\/kinetic\/blobs\//, status: 401, headers: { 'www-authenticate': 'Basic realm="fake"' } })
    const error = await buildImage({ base: `${registry.host}/base/node@${base.manifestDigest}`, to: `${registry.host}/kinetic`, dist, user: 'robot', password: 'hunter2-secret' })
      .then(() => undefined, (e: Error) => e)
    expect(error?.message).toMatch(new RegExp(`^checking for base layer ${base.layerDigest} in ${registry.host}/kinetic: HTTP 401 \\(check REGISTRY_USER/REGISTRY_PASSWORD\\)`))
    expect(error?.message).not.toContain('hunter2-secret')
    // One retry with the credentials, then the error: no loop of challenges.
    expect(registry.requests.filter((r) => r.method === 'HEAD').map((r) => r.authorization !== undefined)).toEqual([false, true])
  })

  it('follows a 307 for blob downloads to another server, without sending it the registry credentials', async () => {
    const storage = await new FakeRegistry().start()
    const front = await new FakeRegistry({ blobsAt: storage, bearer: { token: 'front-token' } }).start()
    try {
      // The front holds the manifest; its blobs live in the storage it redirects to.
      const base = seedBase(storage, 'base/node')
      front.putManifest('base/node', JSON.parse(storage.manifest('base/node', base.manifestDigest)!.bytes.toString('utf8')), OCI_MANIFEST, '20')
      const result = await buildImage({ base: `${front.host}/base/node:20`, to: `${registry.host}/kinetic`, dist })
      expect(registry.blob('kinetic', base.layerDigest)).toEqual(storage.blob('base/node', base.layerDigest))
      expect(registry.manifest('kinetic', result.digest)).toBeDefined()
      expect(front.requests.filter((r) => r.status === 307).length).toBeGreaterThanOrEqual(2)
      expect(storage.requests.filter((r) => r.path.includes('/blobs/')).every((r) => r.authorization === undefined)).toBe(true)
    } finally {
      await front.stop()
      await storage.stop()
    }
  })

  it('an unreachable registry names its address', async () => {
    const base = seedBase(registry, 'base/node')
    await registry.stop()
    await expect(buildImage({ base: `${registry.host}/base/node@${base.manifestDigest}`, to: `${registry.host}/kinetic`, dist })).rejects.toThrow(
      `cannot reach http://${registry.host} (GET /v2/base/node/manifests/${base.manifestDigest}): ECONNREFUSED`,
    )
  })
})
