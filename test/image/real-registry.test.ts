// The image tier: Kinetic's base and app image pushed to a real registry (Debian's
// docker-registry), read back by skopeo, unpacked by umoci, and every entry point run with the
// unpacked root filesystem as its root directory (chroot), so nothing of the checkout helps it.
import { execFile, spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { chmodSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { request } from 'node:http'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parse } from 'yaml'
import { startApiServer } from '../../local/apiserver/index.js'
import type { ApiServer } from '../../local/apiserver/index.js'
import { freePort } from '../../local/free-port.js'
import { CA_BUNDLE, NODE_PATH, buildBase, buildBaseImage } from '../../scripts/build-base-image.mjs'
import { buildImage } from '../../scripts/build-image.mjs'
import { ENTRYPOINT, USER } from '../../scripts/image-layer.mjs'
import { PROBES, functionNames, serviceEnv } from './entry-points.js'
import type { Probe } from './entry-points.js'
import { imageTierUnavailable, startRegistry } from './registry-tier.js'
import type { RealRegistry } from './registry-tier.js'

const run = promisify(execFile)
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..')
const OCI_MANIFEST = 'application/vnd.oci.image.manifest.v1+json'
const OCI_CONFIG = 'application/vnd.oci.image.config.v1+json'
const OCI_LAYER = 'application/vnd.oci.image.layer.v1.tar+gzip'
const unavailable = imageTierUnavailable()
if (unavailable) console.log(unavailable)
const describeImage = unavailable ? describe.skip : describe
// Without root, umoci unpacks rootless and a user namespace stands in for root's chroot.
const asRoot = process.getuid?.() === 0

async function skopeo(...args: string[]): Promise<string> {
  return (await run('skopeo', args, { maxBuffer: 16 * 1024 * 1024 })).stdout
}

/** Builds dist/ once for a test file, into a temp dir (scripts/build.mjs --outdir). */
async function buildDist(dir: string): Promise<string> {
  const dist = join(dir, 'dist')
  await run(process.execPath, [join(root, 'scripts', 'build.mjs'), '--outdir', dist], { cwd: root, maxBuffer: 16 * 1024 * 1024 })
  return dist
}

function send(port: number, probe: Pick<Probe, 'method' | 'path' | 'headers' | 'body'>): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method: probe.method, path: probe.path, headers: probe.headers, agent: false }, (res) => {
      res.resume()
      res.on('end', () => resolve(res.statusCode ?? 0))
    })
    req.on('error', reject)
    req.end(probe.body)
  })
}

/** Runs `argv` inside `rootfs` as the image's user, with exactly `env` (nothing of the host's). */
function chrootArgs(rootfs: string, argv: string[]): { command: string; args: string[] } {
  if (asRoot) return { command: 'chroot', args: [`--userspec=${USER}`, rootfs, ...argv] }
  return { command: 'unshare', args: ['--user', '--map-root-user', 'chroot', rootfs, ...argv] }
}

interface Started {
  status: number
  answer: number
  logs: string
  /** From spawn to the first readiness answer, for the printed figures (not asserted). */
  readyMs: number
}

async function startInRootfs(rootfs: string, script: string, env: Record<string, string>, probe: Probe): Promise<Started> {
  const port = await freePort()
  const { command, args } = chrootArgs(rootfs, [NODE_PATH, script])
  const spawned = Date.now()
  const child = spawn(command, args, { env: { ...env, PORT: String(port) }, stdio: ['ignore', 'ignore', 'pipe'] })
  let logs = ''
  child.stderr.on('data', (chunk: Buffer) => (logs += chunk.toString()))
  const exited = new Promise<void>((done) => child.once('exit', () => done()))
  try {
    for (let attempt = 0; attempt < 400; attempt++) {
      if (child.exitCode !== null) throw new Error(`${script} exited with ${child.exitCode}: ${logs.slice(-800)}`)
      const status = await send(port, { method: 'GET', path: '/health/readiness', headers: {} }).catch(() => 0)
      if (status !== 0) return { status, readyMs: Date.now() - spawned, answer: await send(port, probe), logs }
      await new Promise((done) => setTimeout(done, 50))
    }
    throw new Error(`${script} did not answer on port ${port}: ${logs.slice(-800)}`)
  } finally {
    child.kill('SIGKILL')
    await exited
  }
}

async function installCrds(api: ApiServer): Promise<void> {
  for (const file of readdirSync(join(root, 'crds')).filter((name) => name.endsWith('.purko.io.yaml'))) {
    const response = await fetch(`${api.url}/apis/apiextensions.k8s.io/v1/customresourcedefinitions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(parse(readFileSync(join(root, 'crds', file), 'utf8'))),
    })
    if (response.status !== 201) throw new Error(`CRD ${file}: HTTP ${response.status} ${await response.text()}`)
  }
}

describeImage('the image tier', () => {
  // dist/ and the base are built once for the file and shared by every registry flavour.
  let work: string
  let dist: string
  let built: ReturnType<typeof buildBase>

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'kinetic-image-'))
    const started = Date.now()
    ;[dist, built] = await Promise.all([buildDist(work), Promise.resolve().then(() => buildBase())])
    const mb = (bytes: number) => `${(bytes / 1e6).toFixed(1)} MB`
    console.log(`dist/ and base built in ${((Date.now() - started) / 1000).toFixed(1)} s; base layer ${mb(built.layer.size)} gzip, ${mb(built.layer.tar.length)} tar`)
  }, 600_000)
  afterAll(() => {
    if (work) rmSync(work, { recursive: true, force: true })
  })

  describe('on a real registry (plain HTTP)', () => {
    let registry: RealRegistry
    let baseRef: string

    beforeAll(async () => {
      registry = await startRegistry()
      baseRef = (await buildBaseImage({ to: `${registry.host}/kinetic-base:20`, built })).reference
    }, 120_000)
    afterAll(async () => {
      await registry?.stop()
    })

    it('pushes a base that skopeo reads: OCI media types, linux/amd64, user 65532, PATH, what went in as labels, same digest when rebuilt', async () => {
      expect(baseRef).toBe(`${registry.host}/kinetic-base@${built.digest}`)
      const raw = JSON.parse(await skopeo('inspect', '--raw', ...registry.skopeoFlags(), `docker://${baseRef}`))
      expect(raw).toMatchObject({ schemaVersion: 2, mediaType: OCI_MANIFEST, config: { mediaType: OCI_CONFIG }, layers: [{ mediaType: OCI_LAYER, digest: built.layer.digest }] })
      const inspected = JSON.parse(await skopeo('inspect', ...registry.skopeoFlags(), `docker://${registry.host}/kinetic-base:20`))
      expect(inspected).toMatchObject({ Digest: built.digest, Architecture: 'amd64', Os: 'linux' })
      expect(inspected.Labels['dev.kinetic.base.node']).toBe(process.version)
      // Every file's Debian package is named with its version: node itself and the C/C++ runtime.
      expect(inspected.Labels['dev.kinetic.base.packages']).toMatch(/(^| )libc6=\S+/)
      expect(inspected.Labels['dev.kinetic.base.packages']).toMatch(/(^| )ca-certificates=\S+/)
      const config = JSON.parse(await skopeo('inspect', '--config', ...registry.skopeoFlags(), `docker://${baseRef}`))
      expect(config.config.User).toBe('65532:65532')
      expect(config.config.Env).toContain(`SSL_CERT_FILE=${CA_BUNDLE}`)
      expect(config.rootfs.diff_ids).toEqual([built.layer.diffId])
      // Same machine files in, same bytes out.
      expect(buildBase().digest).toBe(built.digest)
    })

    it('npm run image pushes base + app; skopeo inspect, inspect --raw/--config and copy to an OCI layout accept it', async () => {
      const { stdout, stderr } = await run(process.execPath, [join(root, 'scripts', 'build-image.mjs'), '--base', baseRef, '--to', `${registry.host}/kinetic:dev`, '--dist', dist])
      const reference = stdout.trim()
      expect(reference).toMatch(new RegExp(`^${registry.host}/kinetic@sha256:[a-f0-9]{64}$`))
      // Same registry: the base layer is mounted, not sent again.
      expect(stderr).toContain(`base layer ${built.layer.digest}: mounted`)
      const raw = await skopeo('inspect', '--raw', ...registry.skopeoFlags(), `docker://${registry.host}/kinetic:dev`)
      // The digest npm run image printed is the digest of the bytes the registry serves.
      expect(`${registry.host}/kinetic@sha256:${createHash('sha256').update(raw).digest('hex')}`).toBe(reference)
      const manifest = JSON.parse(raw)
      expect(manifest.mediaType).toBe(OCI_MANIFEST)
      expect(manifest.layers.map((l: { mediaType: string }) => l.mediaType)).toEqual([OCI_LAYER, OCI_LAYER])
      expect(manifest.layers[0].digest).toBe(built.layer.digest)
      expect(manifest.annotations['org.opencontainers.image.base.digest']).toBe(built.digest)
      const config = JSON.parse(await skopeo('inspect', '--config', ...registry.skopeoFlags(), `docker://${reference}`))
      expect(config).toMatchObject({ architecture: 'amd64', os: 'linux' })
      expect(config.config).toMatchObject({ User: USER, Entrypoint: ENTRYPOINT, WorkingDir: '/app' })
      expect(config.config.Labels).toMatchObject({ 'org.opencontainers.image.title': 'kinetic', 'dev.kinetic.base.node': process.version })
      expect(config.rootfs.diff_ids).toHaveLength(2)
      const layout = join(work, 'layout')
      await skopeo('copy', ...registry.skopeoFlags('src'), `docker://${reference}`, `oci:${layout}:dev`)
      const index = JSON.parse(readFileSync(join(layout, 'index.json'), 'utf8'))
      expect(index.manifests[0]).toMatchObject({ digest: reference.split('@')[1], annotations: { 'org.opencontainers.image.ref.name': 'dev' } })
      for (const layer of manifest.layers) expect(existsSync(join(layout, 'blobs', 'sha256', layer.digest.slice(7)))).toBe(true)
    }, 120_000)

    it('rebuilding the app from the same dist/ gives the same digest', async () => {
      const first = await buildImage({ base: baseRef, to: `${registry.host}/kinetic`, dist })
      const second = await buildImage({ base: baseRef, to: `${registry.host}/kinetic-again`, dist })
      expect(second.digest).toBe(first.digest)
      const config = JSON.parse(await skopeo('inspect', '--config', ...registry.skopeoFlags(), `docker://${second.reference}`))
      expect(config.rootfs.diff_ids[1]).toBe(first.layer.diffId)
    }, 60_000)

    describe('unpacked by umoci', () => {
      let rootfs: string
      let api: ApiServer
      let imageEnv: Record<string, string>

      beforeAll(async () => {
        const reference = (await buildImage({ base: baseRef, to: `${registry.host}/kinetic:run`, dist })).reference
        const layout = join(work, 'run-layout')
        await skopeo('copy', ...registry.skopeoFlags('src'), `docker://${reference}`, `oci:${layout}:run`)
        const bundle = join(work, 'bundle')
        await run('umoci', ['unpack', ...(asRoot ? [] : ['--rootless']), '--image', `${layout}:run`, bundle])
        rootfs = join(bundle, 'rootfs')
        const config = JSON.parse(await skopeo('inspect', '--config', ...registry.skopeoFlags(), `docker://${reference}`))
        imageEnv = Object.fromEntries((config.config.Env as string[]).map((entry) => [entry.slice(0, entry.indexOf('=')), entry.slice(entry.indexOf('=') + 1)]))
        api = await startApiServer()
        await installCrds(api)
        // chroot keeps the network namespace: 127.0.0.1 inside is the test's 127.0.0.1.
        writeFileSync(join(rootfs, 'tmp', 'kubeconfig'), api.kubeconfig())
        chmodSync(join(rootfs, 'tmp', 'kubeconfig'), 0o644)
      }, 120_000)
      afterAll(async () => {
        await api?.close()
      })

      it('holds only the runtime and dist/: no shell, no node_modules, nonroot in passwd, /tmp sticky', () => {
        expect(readdirSync(rootfs).sort()).toEqual(['app', 'etc', 'home', 'lib', 'lib64', 'root', 'tmp', 'usr'])
        expect(existsSync(join(rootfs, 'bin', 'sh'))).toBe(false)
        expect(existsSync(join(rootfs, 'app', 'node_modules'))).toBe(false)
        expect(readdirSync(join(rootfs, 'usr', 'bin'))).toEqual(['node'])
        expect(readFileSync(join(rootfs, 'etc', 'passwd'), 'utf8')).toContain('nonroot:x:65532:65532:')
        expect(readFileSync(join(rootfs, 'etc', 'group'), 'utf8')).toContain('nonroot:x:65532:')
        expect(readFileSync(join(rootfs, CA_BUNDLE), 'utf8')).toContain('BEGIN CERTIFICATE')
        // The entrypoint is relative to the working directory; it must be there.
        expect(existsSync(join(rootfs, 'app', ENTRYPOINT[1]!))).toBe(true)
      })

      it('the executor prints its OUTPUT line (offline provider) run from the root filesystem', async () => {
        const { command, args } = chrootArgs(rootfs, [ENTRYPOINT[0]!, `/app/${ENTRYPOINT[1]}`])
        const env = { ...imageEnv, STEP_NAME: 'plan', WORKFLOW_NAME: 'image-probe', STEP_INPUT: '{"task":"plan the release"}', MODEL_PROVIDER: 'offline' }
        const { stdout } = await run(command, args, { env })
        const lines = stdout.trim().split('\n')
        expect(lines).toHaveLength(1)
        expect(lines[0]).toMatch(/^OUTPUT:\{/)
        const output = JSON.parse(lines[0]!.slice('OUTPUT:'.length))
        expect(output).toMatchObject({ step: 'plan', workflow: 'image-probe', _metrics: { provider: 'offline' } })
        expect(output.response).toContain('plan the release')
      }, 30_000)

      it('the MCP bridge starts from the root filesystem and refuses a missing configuration with exit 2', async () => {
        const { command, args } = chrootArgs(rootfs, [NODE_PATH, '/app/dist/mcp-bridge/main.js'])
        const failed = await run(command, args, { env: imageEnv }).then(() => undefined, (error: { code: number; stdout: string; stderr: string }) => error)
        expect(failed?.code).toBe(2)
        expect(`${failed?.stdout}${failed?.stderr}`).toContain('MCP_BRIDGE_PORT is required')
      }, 30_000)

      it('every function answers /health/readiness and its probe, run from the root filesystem', async () => {
        const names = functionNames(root)
        expect(names.filter((name) => !PROBES[name]), 'functions without a probe in test/image/entry-points.ts').toEqual([])
        const results: Record<string, { readiness: number; answer: number; expected: number[]; readyMs: number }> = {}
        for (const name of names) {
          const probe = PROBES[name]!
          const env = { ...imageEnv, ...serviceEnv(root, name), KUBECONFIG: '/tmp/kubeconfig', LOG_LEVEL: 'warn' }
          const started = await startInRootfs(rootfs, `/app/dist/functions/${name}/main.js`, env, probe)
          results[name] = { readiness: started.status, answer: started.answer, expected: probe.statuses, readyMs: started.readyMs }
          if (!probe.statuses.includes(started.answer)) console.log(`${name}: ${probe.describe} answered ${started.answer}\n${started.logs.slice(-800)}`)
        }
        const figures = Object.entries(results).map(([name, r]) => `${name} ${r.readyMs}`)
        console.log(`ready from the unpacked image (ms from spawn to the first readiness answer, 50 ms polling): ${figures.join(', ')}`)
        for (const [name, result] of Object.entries(results)) {
          expect(result.readiness, `${name} readiness`).toBe(204)
          expect(result.expected, `${name} answered ${result.answer}`).toContain(result.answer)
        }
      }, 180_000)
    })
  })

  describe('on a real registry with TLS (private CA) and basic auth', () => {
    const registries: RealRegistry[] = []
    const auth = { user: 'kinetic', password: `pw-${process.pid}` }

    afterAll(async () => {
      for (const registry of registries) await registry.stop()
    })

    it('pushes base and app over TLS only when told the CA; skopeo with that CA reads the same digest', async () => {
      const registry = await startRegistry({ tls: true })
      registries.push(registry)
      // Without the CA the certificate is refused: nothing is trusted by accident.
      await expect(buildBaseImage({ to: `${registry.host}/kinetic-base`, built, tls: true })).rejects.toThrow(
        new RegExp(`cannot reach https://${registry.host} \\(HEAD /v2/kinetic-base/blobs/sha256:[a-f0-9]{64}\\): (SELF_SIGNED|UNABLE_TO_VERIFY|DEPTH_ZERO)`),
      )
      const base = await buildBaseImage({ to: `${registry.host}/kinetic-base`, built, ca: registry.ca })
      const caFile = join(work, 'ca.pem')
      writeFileSync(caFile, registry.ca!)
      const { stdout } = await run(process.execPath, [join(root, 'scripts', 'build-image.mjs'), '--base', base.reference, '--to', `${registry.host}/kinetic:tls`, '--dist', dist, '--ca', caFile])
      const inspected = JSON.parse(await skopeo('inspect', ...registry.skopeoFlags(), `docker://${registry.host}/kinetic:tls`))
      expect(`${registry.host}/kinetic@${inspected.Digest}`).toBe(stdout.trim())
      expect(inspected.Layers[0]).toBe(built.layer.digest)
    }, 120_000)

    it('basic auth: a wrong password fails naming registry, repository and step and tags nothing; the right one then pushes', async () => {
      const registry = await startRegistry({ tls: true, auth })
      registries.push(registry)
      const to = `${registry.host}/kinetic-base:20`
      const wrong = buildBaseImage({ to, built, ca: registry.ca, user: auth.user, password: 'not-the-password' })
      await expect(wrong).rejects.toThrow(`${registry.host}/kinetic-base: HTTP 401`)
      await expect(wrong).rejects.toThrow(/checking for base layer sha256:[a-f0-9]{64}/)
      const refused = await skopeo('inspect', ...registry.skopeoFlags(), `docker://${to}`).then(() => 'found', (error: { stderr: string }) => error.stderr)
      expect(refused).toMatch(/manifest unknown|not found/i)
      const base = await buildBaseImage({ to, built, ca: registry.ca, user: auth.user, password: auth.password })
      const app = await buildImage({ base: base.reference, to: `${registry.host}/kinetic:auth`, dist, ca: registry.ca, ...auth })
      const inspected = JSON.parse(await skopeo('inspect', ...registry.skopeoFlags(), `docker://${registry.host}/kinetic:auth`))
      expect(inspected.Digest).toBe(app.digest)
      // The password is never part of what the client reports.
      const message = await buildImage({ base: base.reference, to: `${registry.host}/kinetic:auth`, dist, ca: registry.ca, user: auth.user, password: 'wrong-again' })
        .then(() => 'pushed', (error: Error) => error.message)
      expect(message).toContain('HTTP 401')
      expect(message).not.toContain('wrong-again')
    }, 120_000)

    it('basic auth over plain HTTP on loopback works the same way', async () => {
      const registry = await startRegistry({ auth })
      registries.push(registry)
      const base = await buildBaseImage({ to: `${registry.host}/kinetic-base`, built, ...auth })
      const inspected = JSON.parse(await skopeo('inspect', '--no-tags', ...registry.skopeoFlags(), `docker://${base.reference}`))
      expect(inspected.Digest).toBe(built.digest)
    }, 60_000)
  })
})
