// The real cluster's own costs, printed (never asserted): building the binaries from the Go module
// registry (cold with BENCH_COLD=1: empty module and build caches in a temp folder, which takes
// many minutes; otherwise the cached rerun), then a node from nothing to control plane ready, Node
// Ready, cluster DNS ready and a first Pod Running (its image pulled from the local registry).
// Needs root and the node's Debian packages; says why and exits 0 when it cannot run.
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { findKubeAssets, KUBE_BINARIES, NODE_KUBE_BINARIES } from '../cluster/kube-assets.js'
import { nodePrerequisiteGap, startNode, stopNode } from '../cluster/node/index.js'
import { pushBinaryImage } from '../cluster/node/images.js'
import { freePort } from '../local/free-port.js'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const cold = process.env.BENCH_COLD === '1'
const scratch = mkdtempSync(join(tmpdir(), 'kinetic-bench-node-'))

// The build: each module group's time is on the script's own lines ("... built in N s").
const env = cold
  ? { ...process.env, XDG_CACHE_HOME: join(scratch, 'cache'), GOCACHE: join(scratch, 'go-build'), GOMODCACHE: join(scratch, 'go-mod') }
  : process.env
const t0 = Date.now()
const build = spawnSync(process.execPath, [join(root, 'cluster', 'build.mjs')], { env, encoding: 'utf8' })
const buildMs = Date.now() - t0
for (const line of build.stderr.split('\n')) if (/built in|ready in/.test(line)) console.log(`build ${cold ? '(cold)' : '(cached)'}: ${line.replace(/^kube-build: /, '')}`)
console.log(`build ${cold ? 'cold' : 'cached rerun'}: ${(buildMs / 1000).toFixed(1)} s in all`)
if (build.status !== 0) {
  console.log(`build failed: ${build.stderr.trim().split('\n').pop()}`)
  process.exit(1)
}
const binDir = build.stdout.trim()
if (cold) rmSync(join(scratch, 'go-mod'), { recursive: true, force: true })

const gap = findKubeAssets([...KUBE_BINARIES, ...NODE_KUBE_BINARIES]).available ? nodePrerequisiteGap() : 'binaries missing'
if (gap) {
  console.log(`node not measured: ${gap}`)
  process.exit(0)
}
const dir = join(scratch, 'node')
try {
  const started = Date.now()
  const node = await startNode({ dir, binDir, apiServerPort: await freePort(), registryPort: await freePort() })
  const t = node.timings
  console.log(`node: control plane ready ${(t.controlPlaneMs / 1000).toFixed(1)} s, Node Ready ${(t.nodeReadyMs / 1000).toFixed(1)} s, cluster DNS ready ${(t.dnsReadyMs / 1000).toFixed(1)} s`)
  // A first Pod of an image the node has not pulled yet: etcd as a one-layer image (27 MB).
  const image = await pushBinaryImage(Number(node.registry.split(':')[1]), { repository: 'bench/etcd', tag: 'bench', path: '/etcd', binary: join(binDir, 'etcd'), user: '65532:65532' })
  const podStart = Date.now()
  await node.admin.request('POST', '/api/v1/namespaces/default/pods', {
    apiVersion: 'v1', kind: 'Pod', metadata: { name: 'first' },
    spec: { containers: [{ name: 'etcd', image, args: ['--data-dir', '/tmp/etcd'] }] },
  })
  for (;;) {
    const pod = await node.admin.get<{ status?: { phase?: string } }>('/api/v1/namespaces/default/pods/first')
    if (pod?.status?.phase === 'Running') break
    if (Date.now() - podStart > 120_000) throw new Error(`first Pod not Running in 120 s (phase ${pod?.status?.phase})`)
    await new Promise((r) => setTimeout(r, 100))
  }
  console.log(`first Pod Running ${((Date.now() - podStart) / 1000).toFixed(1)} s after its create (image pulled from the local registry); ${((Date.now() - started) / 1000).toFixed(1)} s from nothing`)
  const stopAt = Date.now()
  await stopNode(dir)
  console.log(`npm run cluster -- --stop: ${((Date.now() - stopAt) / 1000).toFixed(1)} s`)
} finally {
  await stopNode(dir)
  rmSync(scratch, { recursive: true, force: true })
}
