// npm run cluster: a one-node Kubernetes on this machine (needs root and Debian's containerd,
// runc, containernetworking-plugins, iptables, conntrack, docker-registry, gcc). Builds the
// Kubernetes binaries from the Go module registry on first use, starts the node, prints its
// kubeconfig and leaves it running. `npm run cluster -- --stop` removes exactly what it started.
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { readOptions } from '../scripts/script-cli.mjs'
import { builtKubeDir } from './kube-assets.js'
import { KnativeError, installKnative } from './knative/install.js'
import { NodeError, startNode, stopNode } from './node/index.js'

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const DEFAULT_DIR = join(repoRoot, '.kinetic', 'cluster')

const USAGE = `usage: npm run cluster [-- --dir <folder>] [--knative] [--audit] [--stop]
Starts a one-node Kubernetes (control plane, kubelet with containerd, CNI, kube-proxy, CoreDNS,
a local image registry on 127.0.0.1:5000) and prints its kubeconfig. --stop removes it.
  --dir      the node's folder (default ${DEFAULT_DIR})
  --knative  then installs Knative Serving and Eventing with Traefik (docs/architecture/knative-cluster.md),
             building them first (npm run knative:build); on a node already running, installs only
  --audit    the API server records every request's metadata in <dir>/control-plane/audit.log
             (bench/knative-idle.ts --audit counts Kinetic's API calls from it)`

async function main(argv: string[]): Promise<number> {
  const read = readOptions(argv, { dir: { type: 'string' }, stop: { type: 'boolean', default: false }, knative: { type: 'boolean', default: false }, audit: { type: 'boolean', default: false } }, USAGE)
  if (read.exit !== undefined) return read.exit
  const dir = resolve((read.values.dir as string | undefined) ?? DEFAULT_DIR)
  if (read.values.stop) {
    const removed = await stopNode(dir)
    console.log(removed.length > 0 ? `Stopped the node in ${dir}: removed ${removed.join(', ')}` : `No node was running in ${dir}`)
    return 0
  }
  const build = spawnSync(process.execPath, [join(repoRoot, 'cluster', 'build.mjs')], { stdio: ['ignore', 'ignore', 'inherit'] })
  if (build.status !== 0) return 1
  if (read.values.knative) {
    const knativeBuild = spawnSync(process.execPath, [join(repoRoot, 'cluster', 'knative', 'build.mjs')], { stdio: ['ignore', 'ignore', 'inherit'] })
    if (knativeBuild.status !== 0) return 1
  }
  const say = (line: string) => console.error(`cluster: ${line}`)
  try {
    let kubeconfig = join(dir, 'kubeconfig')
    if (!(read.values.knative && existsSync(kubeconfig))) {
      const node = await startNode({ dir, binDir: builtKubeDir(), auditLog: read.values.audit as boolean, log: say })
      say(`ready in ${(node.timings.dnsReadyMs / 1000).toFixed(1)} s; images go to ${node.registry}; stop with: npm run cluster -- --stop${dir === DEFAULT_DIR ? '' : ` --dir ${dir}`}`)
      kubeconfig = node.kubeconfig
    }
    if (read.values.knative) {
      const knative = await installKnative({ kubeconfig, kubeBinDir: builtKubeDir(), registryPort: 5000, log: (line) => console.error(`knative: ${line}`) })
      const t = knative.timings
      say(`Knative installed: images pushed in ${(t.imagesMs / 1000).toFixed(1)} s, applied at ${(t.appliedMs / 1000).toFixed(1)} s, ready at ${(t.readyMs / 1000).toFixed(1)} s`)
    }
    say(`kubectl --kubeconfig ${kubeconfig} get nodes`)
    console.log(kubeconfig)
    return 0
  } catch (err) {
    console.error(`cluster: ${err instanceof NodeError || err instanceof KnativeError ? err.message : (err as Error).stack}`)
    return 1
  }
}

process.exitCode = await main(process.argv.slice(2))
