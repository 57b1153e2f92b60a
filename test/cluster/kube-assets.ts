import { createHash } from 'node:crypto'
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { gunzipSync } from 'node:zlib'

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..')

/** The binaries the cluster tier starts. */
export const KUBE_BINARIES = ['etcd', 'kube-apiserver', 'kube-controller-manager'] as const
export type KubeBinary = (typeof KUBE_BINARIES)[number]

/** Where the binaries were found, or why they were not. */
export type KubeAssets =
  | { available: true; dir: string; source: string }
  | { available: false; reason: string }

/** Set to 1 (CI does) to fail instead of skip when the binaries are missing. */
export const REQUIRE_CLUSTER = process.env.KINETIC_REQUIRE_CLUSTER === '1'

const HOW_TO_ENABLE =
  'set KINETIC_KUBE_ASSETS (or KUBEBUILDER_ASSETS) to a folder with etcd, kube-apiserver and kube-controller-manager, or check out ../shared/kube beside the project'

/**
 * Finds the control-plane binaries: `KINETIC_KUBE_ASSETS`, then envtest's `KUBEBUILDER_ASSETS`
 * (used as they are), else the gzipped copies in `../shared/kube/bin`, decompressed once into a
 * cache folder keyed by their checksums (`KINETIC_KUBE_CACHE`, default the OS temp folder).
 */
export function findKubeAssets(): KubeAssets {
  for (const name of ['KINETIC_KUBE_ASSETS', 'KUBEBUILDER_ASSETS'] as const) {
    const dir = process.env[name]
    if (!dir) continue
    const missing = KUBE_BINARIES.filter((b) => !isExecutable(join(dir, b)))
    if (missing.length > 0) return { available: false, reason: `${name}=${dir} lacks ${missing.join(', ')}` }
    return { available: true, dir, source: name }
  }
  const packed = [join(repoRoot, '..', 'shared', 'kube', 'bin'), join(repoRoot, '..', '..', 'shared', 'kube', 'bin')].find((d) => existsSync(join(d, 'SHA256SUMS')))
  if (!packed) return { available: false, reason: `no control-plane binaries: ${HOW_TO_ENABLE}` }
  const sums = parseSums(readFileSync(join(packed, 'SHA256SUMS'), 'utf8'))
  const missing = KUBE_BINARIES.filter((b) => !existsSync(join(packed, `${b}.gz`)) || !sums.has(b))
  if (missing.length > 0) return { available: false, reason: `${packed} lacks ${missing.map((b) => `${b}.gz`).join(', ')} (or its SHA256SUMS line)` }
  const key = createHash('sha256').update(KUBE_BINARIES.map((b) => sums.get(b)).join(',')).digest('hex').slice(0, 16)
  const dir = join(process.env.KINETIC_KUBE_CACHE ?? join(tmpdir(), 'kinetic-kube-bin'), key)
  mkdirSync(dir, { recursive: true })
  for (const b of KUBE_BINARIES) {
    const target = join(dir, b)
    if (isExecutable(target)) continue
    const bytes = gunzipSync(readFileSync(join(packed, `${b}.gz`)))
    const sum = createHash('sha256').update(bytes).digest('hex')
    if (sum !== sums.get(b)) return { available: false, reason: `${b}.gz in ${packed} does not match its SHA256SUMS line (got ${sum})` }
    // Write then rename, so a parallel test file never runs a half-written binary.
    const partial = `${target}.${process.pid}.partial`
    writeFileSync(partial, bytes)
    chmodSync(partial, 0o755)
    renameSync(partial, target)
  }
  return { available: true, dir, source: packed }
}


function parseSums(text: string): Map<string, string> {
  const out = new Map<string, string>()
  for (const line of text.split('\n')) {
    const m = /^([0-9a-f]{64})\s+\*?(\S+)$/.exec(line.trim())
    if (m) out.set(m[2] as string, m[1] as string)
  }
  return out
}

function isExecutable(path: string): boolean {
  try {
    return statSync(path).isFile() && (statSync(path).mode & 0o111) !== 0
  } catch {
    return false
  }
}
