// The real kube-apiserver and the embedded API server, each with its own kubectl: a suite runs
// the same command line on both and compares what a person reads.
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, inject } from 'vitest'
import { startApiServer, type ApiServer } from '../../local/apiserver/index.js'
import type { ControlPlane, ControlPlaneOptions } from '../../cluster/control-plane.js'
import { REQUIRE_CLUSTER, type KubeAssets } from '../../cluster/kube-assets.js'
import { findKubectl, Kubectl, type KubectlResult } from './kubectl.js'
import { describeCluster, useControlPlane } from './tier.js'

const assets: KubeAssets = inject('kubeAssets')
const lookup = findKubectl(assets.available ? assets.dir : undefined)
if (assets.available && !lookup.available) {
  if (REQUIRE_CLUSTER) throw new Error(`KINETIC_REQUIRE_CLUSTER=1 but the kubectl tests cannot run: ${lookup.reason}`)
  console.warn(`kubectl tests skipped: ${lookup.reason}`)
}

/** `describe` when the control plane and kubectl are there, `describe.skip` otherwise. */
export const describeKubectl = lookup.available ? describeCluster : describe.skip

/** The kubectl both sides run, and its version (`v1.32.3`). */
export const kubectlVersion = lookup.available ? lookup.version : 'none'

/** Both sides' answers to one command line. */
export interface SidePair {
  real: KubectlResult
  local: KubectlResult
}

/** The two servers, a kubectl for each, and the embedded server for what only it can do. */
export interface KubectlSides {
  readonly real: Kubectl
  readonly local: Kubectl
  readonly server: ApiServer
  readonly plane: ControlPlane
  /** Runs `kubectl <args>` on both sides at once. */
  both(args: string[], opts?: { input?: string; timeoutMs?: number }): Promise<SidePair>
}

/** One control plane and one embedded server for the enclosing suite, with a kubectl each. */
export function useKubectlSides(opts: Omit<ControlPlaneOptions, 'binDir'> = {}): KubectlSides {
  const cp = useControlPlane(opts)
  let server: ApiServer | undefined
  let real: Kubectl | undefined
  let local: Kubectl | undefined
  beforeAll(async () => {
    if (!lookup.available || !assets.available) return
    server = await startApiServer()
    const dir = mkdtempSync(join(tmpdir(), 'kinetic-kubectl-'))
    writeFileSync(join(dir, 'embedded.kubeconfig'), server.kubeconfig(), { mode: 0o600 })
    real = new Kubectl('real', lookup.path, cp.current.adminKubeconfigPath)
    local = new Kubectl('embedded', lookup.path, join(dir, 'embedded.kubeconfig'))
  }, 60_000)
  afterAll(async () => {
    await server?.close()
  })
  const need = <T>(v: T | undefined, what: string): T => {
    if (v === undefined) throw new Error(`${what} is not running (see the beforeAll error)`)
    return v
  }
  return {
    get real() { return need(real, 'kubectl for the real server') },
    get local() { return need(local, 'kubectl for the embedded server') },
    get server() { return need(server, 'The embedded API server') },
    get plane() { return cp.current },
    async both(args, runOpts) {
      const [r, l] = await Promise.all([need(real, 'kubectl').run(args, runOpts), need(local, 'kubectl').run(args, runOpts)])
      return { real: r, local: l }
    },
  }
}
