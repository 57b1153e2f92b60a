import { statSync } from 'node:fs'
import { join } from 'node:path'
import { CONTROL_PLANE_BINARIES, NODE_BINARIES, kubeCacheDir } from './versions.mjs'

/** The binaries the cluster tier starts. */
export const KUBE_BINARIES = CONTROL_PLANE_BINARIES
export type KubeBinary = (typeof KUBE_BINARIES)[number]

/** What a real node adds (npm run cluster, the node tier). */
export const NODE_KUBE_BINARIES = NODE_BINARIES
export type NodeKubeBinary = (typeof NODE_KUBE_BINARIES)[number]

/** Where the binaries were found, or why they were not. */
export type KubeAssets =
  | { available: true; dir: string; source: string }
  | { available: false; reason: string }

/** Set to 1 (CI does) to fail instead of skip when the binaries are missing. */
export const REQUIRE_CLUSTER = process.env.KINETIC_REQUIRE_CLUSTER === '1'

/** The folder `npm run cluster:build` fills: `${XDG_CACHE_HOME:-~/.cache}/kinetic/kube/<versions>/bin`. */
export function builtKubeDir(): string {
  return join(kubeCacheDir(), 'bin')
}

const HOW_TO_ENABLE =
  'run `npm run cluster:build` (builds them from the Go module registry into ' +
  `${builtKubeDir()}), or set KINETIC_KUBE_ASSETS (or KUBEBUILDER_ASSETS) to a folder holding them`

/**
 * Finds the control-plane binaries (or, with `wanted`, any of the cluster's binaries):
 * `KINETIC_KUBE_ASSETS`, then envtest's `KUBEBUILDER_ASSETS` (used as they are), else the folder
 * `npm run cluster:build` writes.
 */
export function findKubeAssets(wanted: readonly string[] = KUBE_BINARIES): KubeAssets {
  for (const name of ['KINETIC_KUBE_ASSETS', 'KUBEBUILDER_ASSETS'] as const) {
    const dir = process.env[name]
    if (!dir) continue
    const missing = wanted.filter((b) => !isExecutable(join(dir, b)))
    if (missing.length > 0) return { available: false, reason: `${name}=${dir} lacks ${missing.join(', ')}` }
    return { available: true, dir, source: name }
  }
  const dir = builtKubeDir()
  const missing = wanted.filter((b) => !isExecutable(join(dir, b)))
  if (missing.length === wanted.length) return { available: false, reason: `no ${wanted.join(', ')}: ${HOW_TO_ENABLE}` }
  if (missing.length > 0) return { available: false, reason: `${dir} lacks ${missing.join(', ')}: ${HOW_TO_ENABLE}` }
  return { available: true, dir, source: 'npm run cluster:build' }
}

function isExecutable(path: string): boolean {
  try {
    const s = statSync(path)
    return s.isFile() && (s.mode & 0o111) !== 0
  } catch {
    return false
  }
}
