// The port verbs workflow-template-changed may call: its deps' kube is exactly these, so calling another is a type
// error, and test/knative/verb-grants.test.ts checks that its RBAC grants what they need, and no more.
import type { ChildUse } from '../../shared/kube/child-uses.js'
import type { Kube, KubeVerbs } from '../../shared/kube/port.js'
import { TEMPLATE_CHILD_USES, TEMPLATE_VERBS } from '../../shared/template/controller.js'

export const KUBE_VERBS = [...TEMPLATE_VERBS] as const satisfies readonly (keyof Kube)[]
/** The kinds it passes to which generic child verb. */
export const KUBE_CHILD_USES: readonly ChildUse[] = [...TEMPLATE_CHILD_USES]
export type FunctionKube = KubeVerbs<typeof KUBE_VERBS>
