/**
 * Which child kinds a module passes to which generic child verb (getChild, applyChild, ...):
 * `'<verb>:<kind>'`, so a function's uses are the spread of its modules' and the RBAC test
 * needs each verb's rights on those kinds only.
 */
import type { ChildKind, Kube } from './port.js'

/** The port's generic child verbs: they act on whichever ChildKind they are given. */
export type ChildVerb = Extract<keyof Kube, 'getChild' | 'listChildren' | 'applyChild' | 'createChild' | 'patchChild' | 'deleteChild'>
export type ChildUse = `${ChildVerb}:${ChildKind}`

/** Every pairing of these verbs with these kinds. */
export function childUses(verbs: readonly ChildVerb[], kinds: readonly ChildKind[]): ChildUse[] {
  return verbs.flatMap((verb) => kinds.map((kind): ChildUse => `${verb}:${kind}`))
}
