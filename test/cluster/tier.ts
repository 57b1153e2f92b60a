import { afterAll, beforeAll, describe, inject } from 'vitest'
import { startControlPlane, type ControlPlane, type ControlPlaneOptions } from '../../cluster/control-plane.js'
import type { KubeAssets } from '../../cluster/kube-assets.js'

// Found once per run by global-setup.ts, which also prints the one line when the tier is skipped.
const assets: KubeAssets = inject('kubeAssets')

/** The folder of the control-plane binaries; throws when the tier is skipped. */
export function kubeBinDir(): string {
  if (!assets.available) throw new Error(assets.reason)
  return assets.dir
}

/** `describe` when the control-plane binaries are there, `describe.skip` otherwise. */
export const describeCluster = assets.available ? describe : describe.skip

/**
 * One control plane for the enclosing suite: started in beforeAll, stopped in afterAll (also
 * when a test failed). Read `.current` inside tests. Namespaces isolate the tests sharing it.
 */
export function useControlPlane(opts: Omit<ControlPlaneOptions, 'binDir'> = {}): { readonly current: ControlPlane } {
  let cp: ControlPlane | undefined
  beforeAll(async () => {
    if (!assets.available) return
    cp = await startControlPlane({ ...opts, binDir: assets.dir })
    console.log(`Control plane${opts.controllerManager ? ' with kube-controller-manager' : ''} ready in ${(cp.startMs / 1000).toFixed(1)} s at ${cp.server}`)
  }, 120_000)
  afterAll(async () => {
    await cp?.stop()
  }, 60_000)
  return {
    get current() {
      if (!cp) throw new Error('The control plane is not running (it failed to start; see the beforeAll error)')
      return cp
    },
  }
}
