// npm run cluster: a one-node Kubernetes on this machine (needs root and Debian's containerd,
// runc, containernetworking-plugins, iptables, conntrack, docker-registry, gcc). Builds the
// Kubernetes binaries from the Go module registry on first use, starts the node, prints its
// kubeconfig and leaves it running. `npm run cluster -- --stop` removes exactly what it started.
import { spawnSync } from 'node:child_process'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { readOptions } from '../scripts/script-cli.mjs'
import { builtKubeDir } from './kube-assets.js'
import { NodeError, startNode, stopNode } from './node/index.js'

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const DEFAULT_DIR = join(repoRoot, '.kinetic', 'cluster')

const USAGE = `usage: npm run cluster [-- --dir <folder>] [--stop]
Starts a one-node Kubernetes (control plane, kubelet with containerd, CNI, kube-proxy, CoreDNS,
a local image registry on 127.0.0.1:5000) and prints its kubeconfig. --stop removes it.
  --dir   the node's folder (default ${DEFAULT_DIR})`

async function main(argv: string[]): Promise<number> {
  const read = readOptions(argv, { dir: { type: 'string' }, stop: { type: 'boolean', default: false } }, USAGE)
  if (read.exit !== undefined) return read.exit
  const dir = resolve((read.values.dir as string | undefined) ?? DEFAULT_DIR)
  if (read.values.stop) {
    const removed = await stopNode(dir)
    console.log(removed.length > 0 ? `Stopped the node in ${dir}: removed ${removed.join(', ')}` : `No node was running in ${dir}`)
    return 0
  }
  const build = spawnSync(process.execPath, [join(repoRoot, 'cluster', 'build.mjs')], { stdio: ['ignore', 'ignore', 'inherit'] })
  if (build.status !== 0) return 1
  try {
    const node = await startNode({ dir, binDir: builtKubeDir(), log: (line) => console.error(`cluster: ${line}`) })
    console.error(`cluster: ready in ${(node.timings.dnsReadyMs / 1000).toFixed(1)} s; images go to ${node.registry}; stop with: npm run cluster -- --stop${dir === DEFAULT_DIR ? '' : ` --dir ${dir}`}`)
    console.error(`cluster: kubectl --kubeconfig ${node.kubeconfig} get nodes`)
    console.log(node.kubeconfig)
    return 0
  } catch (err) {
    console.error(`cluster: ${err instanceof NodeError ? err.message : (err as Error).stack}`)
    return 1
  }
}

process.exitCode = await main(process.argv.slice(2))
