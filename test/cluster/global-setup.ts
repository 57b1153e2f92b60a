import type { TestProject } from 'vitest/node'
import { findKubeAssets, REQUIRE_CLUSTER, type KubeAssets } from '../../cluster/kube-assets.js'

declare module 'vitest' {
  export interface ProvidedContext {
    kubeAssets: KubeAssets
  }
}

/**
 * Once per test run: find (and on first use decompress) the control-plane binaries, print one
 * line when the cluster tier is skipped, and fail the run when CI requires the tier.
 */
export function setup(project: TestProject): void {
  const assets = findKubeAssets()
  if (!assets.available) {
    if (REQUIRE_CLUSTER) throw new Error(`KINETIC_REQUIRE_CLUSTER=1 but the cluster tier cannot run: ${assets.reason}`)
    console.warn(`Cluster tier skipped: ${assets.reason}`)
  }
  project.provide('kubeAssets', assets)
}
