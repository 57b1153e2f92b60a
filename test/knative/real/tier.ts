import { existsSync } from 'node:fs'
import { describe } from 'vitest'
import { findKubeAssets, KUBE_BINARIES, NODE_KUBE_BINARIES } from '../../../cluster/kube-assets.js'
import { knBinary, knativeBinDir, missingKnativeBinaries } from '../../../cluster/knative/install.js'
import { nodePrerequisiteGap } from '../../../cluster/node/index.js'

/** Set to 1 to fail instead of skip when the Knative tier cannot run here. */
export const REQUIRE_KNATIVE = process.env.KINETIC_REQUIRE_KNATIVE === '1'

const assets = findKubeAssets([...KUBE_BINARIES, ...NODE_KUBE_BINARIES])
const missing = missingKnativeBinaries()
const gap = !assets.available
  ? assets.reason
  : nodePrerequisiteGap()
    ?? (missing.length > 0 ? `no Knative binaries in ${knativeBinDir()} (${missing.length} missing): run npm run knative:build` : undefined)
    ?? (existsSync(knBinary()) ? undefined : `no kn at ${knBinary()}: run npm run knative:build`)
if (gap && REQUIRE_KNATIVE) throw new Error(`KINETIC_REQUIRE_KNATIVE=1 but the Knative tier cannot run: ${gap}`)
if (gap) console.warn(`Knative tier skipped: ${gap}`)

/** `describe` when this machine can run a real node with Knative, `describe.skip` otherwise. */
export const describeKnative = gap ? describe.skip : describe

/** The folder holding the cluster's binaries; throws when the tier is skipped. */
export function kubeBinDir(): string {
  if (!assets.available) throw new Error(assets.reason)
  return assets.dir
}
