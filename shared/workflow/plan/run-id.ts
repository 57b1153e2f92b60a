import { sha256Hex } from '../../core/sha256.js'

/**
 * Pure: the id of a Workflow's current run. purko drew 4 random hex digits once; Kinetic derives
 * them from the object's uid and its `purko.io/rerun` annotation, so racing replicas agree on
 * the id and a rerun (a new annotation value) always gets a fresh one.
 */
export function runIdFor(uid: string, rerunToken: string | undefined): string {
  const prefix = (uid.replace(/[^a-z0-9]/g, '') || 'run').slice(0, 8)
  const suffix = sha256Hex(`${uid}\u0000${rerunToken ?? ''}`).slice(0, 4)
  return `${prefix}-${suffix}`
}
