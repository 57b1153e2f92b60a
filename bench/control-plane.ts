// Cluster tier benchmark: how long the real control plane takes to start from nothing (etcd +
// kube-apiserver, and with kube-controller-manager), and what it holds in memory once ready.
// Run: node --import tsx bench/control-plane.ts   (BENCH_CONTROL_PLANE_RUNS=3)
import { readFileSync } from 'node:fs'
import { startControlPlane } from '../cluster/control-plane.js'
import { processesUsing } from '../cluster/processes.js'
import { findKubeAssets } from '../cluster/kube-assets.js'

const RUNS = Number(process.env.BENCH_CONTROL_PLANE_RUNS ?? 3)
const assets = findKubeAssets()
if (!assets.available) {
  console.log(`No control-plane binaries: ${assets.reason}`)
  process.exit(1)
}

// Resident memory of the servers (not their lifeline shells), in MiB.
function rssMiB(dir: string): number {
  let kib = 0
  for (const pid of processesUsing(dir)) {
    try {
      const status = readFileSync(`/proc/${pid}/status`, 'utf8')
      if (/^Name:\s+bash$/m.test(status)) continue
      kib += Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1] ?? 0)
    } catch {
      // exited meanwhile
    }
  }
  return kib / 1024
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)] as number
const rows: string[][] = []
for (const controllerManager of [false, true]) {
  const starts: number[] = []
  const rss: number[] = []
  // Sequential: two control planes at once would compete for the same cores.
  for (let i = 0; i < RUNS; i++) {
    const cp = await startControlPlane({ binDir: assets.dir, controllerManager })
    starts.push(cp.startMs / 1000)
    rss.push(rssMiB(cp.dir))
    await cp.stop()
  }
  rows.push([
    controllerManager ? 'etcd + kube-apiserver + kube-controller-manager' : 'etcd + kube-apiserver',
    median(starts).toFixed(1), Math.min(...starts).toFixed(1), Math.max(...starts).toFixed(1), median(rss).toFixed(0),
  ])
}
console.log(`Control plane start, spawn to ready (/readyz ok; with the controller manager: default ServiceAccount made), ${RUNS} runs (Node ${process.version})`)
const head = ['components', 'median s', 'min s', 'max s', 'RSS MiB']
const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] as string).length)))
const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i] as number)).join(' | ')
console.log(line(head))
console.log(widths.map((w) => '-'.repeat(w)).join('-|-'))
for (const r of rows) console.log(line(r))
