// The image `npm run image` builds, measured: each layer's compressed and uncompressed size with
// what takes the room, and the cold start of one function run from the unpacked image's own root
// filesystem (chroot, as the non-root user, nothing from the host's node_modules) next to the same
// function run by the host's Node from the build's dist/. Against Debian's docker-registry, skopeo
// and umoci when installed (the image tier), else the in-memory fake registry and tar.
// Run: npm run bench -- image   (needs root for chroot)
import { execFile, spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { request } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import { gunzipSync } from 'node:zlib'
import { USER, type ImageConfig } from '../scripts/image-layer.mjs'
import { RegistryClient, type ImageManifest } from '../scripts/registry-client.mjs'
import { FakeRegistry } from '../test/image/fake-registry.js'
import { imageTierUnavailable, startRegistry } from '../test/image/registry-tier.js'
import { freePort } from '../local/free-port.js'
import { startStubApiServer } from './cold-start.js'
import { median, percentile } from './stats.js'

const run = promisify(execFile)
const ROOT = fileURLToPath(new URL('../', import.meta.url))
const RUNS = 10
/** The function whose start is measured: the Workflow engine's entry point, the largest bundle. */
const FUNCTION = 'workflow-changed'
const MANIFEST_TYPES = 'application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json'

/** The regular files of a ustar archive with their sizes (GNU long names are not used by our layers). */
export function tarFiles(tar: Buffer): Array<{ path: string; size: number }> {
  const out: Array<{ path: string; size: number }> = []
  for (let at = 0; at + 512 <= tar.length;) {
    const header = tar.subarray(at, at + 512)
    if (header.every((b) => b === 0)) break
    const text = (from: number, length: number) => header.subarray(from, from + length).toString('utf8').replace(/\0.*$/s, '')
    const size = Number.parseInt(text(124, 12).trim() || '0', 8)
    const prefix = text(345, 155)
    const type = text(156, 1)
    if (type === '0' || type === '') out.push({ path: prefix ? `${prefix}/${text(0, 100)}` : text(0, 100), size })
    at += 512 + Math.ceil(size / 512) * 512
  }
  return out
}

/** Sizes summed per group: a file's first `depth` path segments (the file itself when shallower). */
export function sizeByGroup(files: Array<{ path: string; size: number }>, depth: number): Array<[string, number]> {
  const groups = new Map<string, number>()
  for (const f of files) {
    const parts = f.path.split('/')
    const key = parts.length > depth ? `${parts.slice(0, depth).join('/')}/` : f.path
    groups.set(key, (groups.get(key) ?? 0) + f.size)
  }
  return [...groups].sort((a, b) => b[1] - a[1])
}

const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`
const kib = (bytes: number) => (bytes >= 1024 * 1024 ? mib(bytes) : `${(bytes / 1024).toFixed(0)} KiB`)

function get(port: number, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, agent: false }, (res) => {
      res.resume()
      res.once('end', () => resolve(res.statusCode ?? 0))
    })
    req.once('error', reject)
    req.end()
  })
}

/** Spawns `command args` with `env` plus PORT and polls /health/readiness until it answers 204; the milliseconds from spawn. */
async function timeToReady(command: string, args: string[], env: Record<string, string>, timeoutMs = 20_000): Promise<number> {
  const port = await freePort()
  const started = performance.now()
  const child = spawn(command, args, { env: { ...env, PORT: String(port) }, stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
  let exited: string | undefined
  const exit = new Promise<void>((resolve) => child.once('exit', (code, signal) => {
    exited = `exited with ${signal ?? code}`
    resolve()
  }))
  try {
    while (performance.now() - started < timeoutMs) {
      if (exited) throw new Error(`${command} ${args.join(' ')} ${exited} before it was ready: ${stderr.trim().slice(-500)}`)
      const status = await get(port, '/health/readiness').catch(() => 0)
      if (status === 204) return performance.now() - started
      await new Promise((resolve) => setTimeout(resolve, 2))
    }
    throw new Error(`${command} ${args.join(' ')} was not ready within ${timeoutMs} ms: ${stderr.trim().slice(-500)}`)
  } finally {
    if (!exited) child.kill('SIGKILL')
    await exit
  }
}

function kubeconfig(server: string): string {
  return [
    'apiVersion: v1', 'kind: Config',
    'clusters:', '- name: stub', `  cluster: { server: "${server}", insecure-skip-tls-verify: true }`,
    'users:', '- name: bench', '  user: { token: bench }',
    'contexts:', '- name: bench', '  context: { cluster: stub, user: bench, namespace: ai-agents }',
    'current-context: bench', '',
  ].join('\n')
}

/** Runs one of the repository's scripts as a process (as `npm run …` would) and returns what it printed on stdout. */
async function script(name: string, args: string[]): Promise<string> {
  const env = { ...process.env }
  delete env.NODE_OPTIONS
  const { stdout } = await run(process.execPath, [join(ROOT, 'scripts', name), ...args], { cwd: ROOT, env, maxBuffer: 64 * 1024 * 1024 })
  return stdout.trim()
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'kinetic-image-bench-'))
  const unavailable = imageTierUnavailable()
  const registry = unavailable === undefined ? await startRegistry() : await new FakeRegistry().start()
  const api = await startStubApiServer()
  try {
    console.log(unavailable === undefined
      ? `registry: Debian's docker-registry on ${registry.host}; unpacked with skopeo copy and umoci unpack`
      : `registry: the in-memory fake on ${registry.host} (${unavailable}); unpacked with tar`)
    // Its own dist/, so the shared one other processes may be reading is never replaced mid-run.
    const dist = join(dir, 'dist')
    await script('build.mjs', ['--outdir', dist])
    const base = await script('build-base-image.mjs', ['--to', `${registry.host}/kinetic-base`, '--insecure'])
    const image = await script('build-image.mjs', ['--base', base, '--to', `${registry.host}/kinetic`, '--dist', dist, '--insecure'])
    console.log(`base ${base}\nimage ${image}`)

    const client = new RegistryClient(registry.host, { insecure: true })
    const digest = image.slice(image.indexOf('@') + 1)
    const response = await client.request('GET', `/v2/kinetic/manifests/${digest}`, { headers: { accept: MANIFEST_TYPES } })
    const manifest = await response.json() as ImageManifest
    const blob = async (d: string) => Buffer.from(await (await client.request('GET', `/v2/kinetic/blobs/${d}`)).arrayBuffer())
    const config = JSON.parse((await blob(manifest.config.digest)).toString('utf8')) as ImageConfig
    const history = (config.history ?? []).filter((h) => h.empty_layer !== true)

    const rows = []
    const contents: string[] = []
    const layers: Buffer[] = []
    for (const [i, layer] of manifest.layers.entries()) {
      const gzip = await blob(layer.digest)
      layers.push(gzip)
      const tar = gunzipSync(gzip)
      const files = tarFiles(tar)
      const label = i === manifest.layers.length - 1 ? 'app (dist/)' : `base ${i + 1}`
      rows.push({ layer: label, digest: layer.digest.slice(0, 19), compressed: mib(layer.size), uncompressed: mib(tar.length), files: files.length, 'created by': String(history[i]?.created_by ?? '').slice(0, 60) })
      const groups = sizeByGroup(files, 3).slice(0, 8)
      contents.push(`${label}: ${groups.map(([g, size]) => `${g} ${kib(size)}`).join(', ')}`)
      const bundles = sizeByGroup(files.filter((f) => f.path.startsWith('app/dist/functions/')), 4)
      if (bundles.length > 0) {
        const [largest, smallest] = [bundles[0]!, bundles[bundles.length - 1]!]
        contents.push(`  ${bundles.length} function bundles (each self-contained): largest ${largest[0]} ${kib(largest[1])}, smallest ${smallest[0]} ${kib(smallest[1])}`)
      }
    }
    const total = manifest.layers.reduce((sum, l) => sum + l.size, 0)
    const totalTar = layers.reduce((sum, gz) => sum + gunzipSync(gz).length, 0)
    console.log(`\nImage layers (${manifest.layers.length}; ${mib(total)} compressed, ${mib(totalTar)} uncompressed; config User ${config.config?.User}, Entrypoint ${JSON.stringify(config.config?.Entrypoint)})`)
    console.table(rows)
    console.log('What takes the room (uncompressed, largest first):')
    for (const line of contents) console.log(`  ${line}`)

    // The root filesystem a node unpacks, the way the tier's tools do it.
    let rootfs: string
    if (unavailable === undefined) {
      const layout = join(dir, 'layout')
      await run('skopeo', ['copy', '--src-tls-verify=false', `docker://${image}`, `oci:${layout}:kinetic`])
      await run('umoci', ['unpack', '--image', `${layout}:kinetic`, join(dir, 'bundle')])
      rootfs = join(dir, 'bundle', 'rootfs')
    } else {
      rootfs = join(dir, 'rootfs')
      mkdirSync(rootfs)
      for (const [i, gzip] of layers.entries()) {
        const file = join(dir, `layer-${i}.tar.gz`)
        writeFileSync(file, gzip)
        await run('tar', ['-xzf', file, '-C', rootfs, '--numeric-owner', '--same-permissions'])
      }
    }
    const { stdout: du } = await run('du', ['-sb', rootfs])
    console.log(`\nunpacked root filesystem: ${mib(Number(du.split('\t')[0]))}`)

    const hostConfig = join(dir, 'kubeconfig')
    writeFileSync(hostConfig, kubeconfig(api.url))
    // Inside the image the kubeconfig sits in its /tmp, readable by the non-root user.
    writeFileSync(join(rootfs, 'tmp', 'kubeconfig'), kubeconfig(api.url), { mode: 0o644 })
    const imageEnv = Object.fromEntries((config.config?.Env ?? []).map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)]))
    const common = { LOG_LEVEL: 'warn', HOME: '/home/nonroot' }
    const fromImage = () => timeToReady('chroot', [`--userspec=${config.config?.User ?? USER}`, rootfs, '/usr/bin/node', `/app/dist/functions/${FUNCTION}/main.js`], {
      ...imageEnv, ...common, KUBECONFIG: '/tmp/kubeconfig',
    })
    const fromRepo = () => timeToReady(process.execPath, [join(dist, 'functions', FUNCTION, 'main.js')], {
      PATH: process.env.PATH ?? '', ...common, KUBECONFIG: hostConfig,
    })
    if (process.getuid?.() !== 0) {
      console.log('\nCold start from the image skipped: chroot needs root (run the bench as root, or in a user namespace)')
      return
    }
    const times = { image: [] as number[], repo: [] as number[] }
    // Interleaved, so a slow moment of the machine hits both alike.
    for (let i = 0; i < RUNS; i++) {
      times.image.push(await fromImage())
      times.repo.push(await fromRepo())
    }
    console.log(`\nCold start of ${FUNCTION}: spawn to the first 204 from /health/readiness (${RUNS} runs each, interleaved; Node ${process.versions.node})`)
    console.table([
      { run: `from the image (chroot ${rootfs.slice(dir.length + 1)}, user ${config.config?.User})`, 'median ms': Math.round(median(times.image)), 'p95 ms': Math.round(percentile(times.image, 95)) },
      { run: 'from the build\'s dist/ (host node)', 'median ms': Math.round(median(times.repo)), 'p95 ms': Math.round(percentile(times.repo, 95)) },
    ])
  } finally {
    await api.close()
    await registry.stop()
    rmSync(dir, { recursive: true, force: true })
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((err: unknown) => {
    console.error(err)
    process.exitCode = 1
  })
}
