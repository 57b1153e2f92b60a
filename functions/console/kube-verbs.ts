// The port verbs the console may call, always with the person's rights (or, for visitors who are
// not signed in, the opt-in reader's): its requests' kube is exactly these, so calling another is
// a type error. Its own ServiceAccount holds no role in the base install, so
// test/knative/verb-grants.test.ts checks no grant for it.
import type { ChildUse } from '../../shared/kube/child-uses.js'
import { CONSOLE_VERBS } from '../../shared/console/context.js'
import type { Kube, KubeVerbs } from '../../shared/kube/port.js'

export const KUBE_VERBS = [...CONSOLE_VERBS] as const satisfies readonly (keyof Kube)[]
/** The kinds it passes to which generic child verb. */
export const KUBE_CHILD_USES: readonly ChildUse[] = []
export type FunctionKube = KubeVerbs<typeof KUBE_VERBS>
