import { describe } from 'vitest'
import { findKubeAssets, KUBE_BINARIES, NODE_KUBE_BINARIES } from '../../cluster/kube-assets.js'
import { nodePrerequisiteGap } from '../../cluster/node/index.js'

/** Set to 1 (CI does) to fail instead of skip when the node tier cannot run here. */
export const REQUIRE_NODE = process.env.KINETIC_REQUIRE_NODE === '1'

const assets = findKubeAssets([...KUBE_BINARIES, ...NODE_KUBE_BINARIES])
const gap = assets.available ? nodePrerequisiteGap() : assets.reason
if (gap && REQUIRE_NODE) throw new Error(`KINETIC_REQUIRE_NODE=1 but the node tier cannot run: ${gap}`)
if (gap) console.warn(`Node tier skipped: ${gap}`)

/** `describe` when this machine can run a real node (root, binaries, Debian packages), `describe.skip` otherwise. */
export const describeNode = gap ? describe.skip : describe

/** The folder holding the cluster's binaries; throws when the tier is skipped. */
export function nodeBinDir(): string {
  if (!assets.available) throw new Error(assets.reason)
  return assets.dir
}
