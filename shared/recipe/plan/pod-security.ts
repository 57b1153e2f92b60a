/**
 * The built-in Pod Security check (spec §10.6): independently of any WorkflowRecipePolicy,
 * each target namespace's `pod-security.kubernetes.io/enforce` label is read; at `restricted`, a
 * workload or test that adds a capability other than `NET_BIND_SERVICE` is rejected like an
 * Enforce violation (policy `pod-security`, rule `capabilities.podSecurity`), instead of its
 * ReplicaSet or Job failing to create pods later. Everything else `restricted` demands
 * (runAsNonRoot, seccomp RuntimeDefault, drop ALL, no privilege escalation) is the fixed pod
 * hardening of spec §5.4, and `baseline` admits every capability of the §2.6 enum, so capabilities are
 * the only thing to check. Pure.
 */
import { inSpecOrder, type NamespaceLabels, type PolicyViolation, type RecipeInput, type RenderedInput, type RenderedTestInput } from './policy-inputs.js'

/** Policy name of the built-in check's violations. */
export const POD_SECURITY_POLICY = 'pod-security'
/** Its rule name. */
export const POD_SECURITY_RULE = 'capabilities.podSecurity'
/** The namespace label Pod Security admission enforces. */
export const POD_SECURITY_ENFORCE_LABEL = 'pod-security.kubernetes.io/enforce'
/** The only capability the `restricted` level lets a container add. */
export const RESTRICTED_ALLOWED_CAPABILITIES: readonly string[] = ['NET_BIND_SERVICE']

/** Pure: the Pod Security `enforce` level of a namespace (`privileged` when unlabelled, as admission treats it). */
export function podSecurityLevel(namespaceLabels: NamespaceLabels, namespace: string): string {
  return namespaceLabels[namespace]?.[POD_SECURITY_ENFORCE_LABEL] ?? 'privileged'
}

/**
 * Pure: the built-in check's violations, workloads in spec order then tests, each capability in
 * the order the workload adds it. A subject without a target namespace is not checked.
 */
export function podSecurityViolations(recipe: RecipeInput, rendered: RenderedInput, namespaceLabels: NamespaceLabels): PolicyViolation[] {
  const out: PolicyViolation[] = []
  const check = (subject: string, s: RenderedTestInput, extra: { workload?: string; test?: string }): void => {
    const namespace = s.namespace
    if (namespace === undefined || podSecurityLevel(namespaceLabels, namespace) !== 'restricted') return
    for (const cap of s.security?.addCapabilities ?? []) {
      if (RESTRICTED_ALLOWED_CAPABILITIES.includes(cap)) continue
      out.push({
        policy: POD_SECURITY_POLICY, mode: 'Enforce', rule: POD_SECURITY_RULE, ...extra,
        message: `${subject}: capability ${cap} is not admitted by Pod Security level "restricted" of namespace "${namespace}"`,
      })
    }
  }
  for (const w of inSpecOrder(rendered.workloads, recipe.spec.workloads)) check(`workload "${w.name}"`, w, { workload: w.name })
  for (const t of inSpecOrder(rendered.tests ?? [], recipe.spec.tests)) check(`test "${t.name}"`, t, { test: t.name })
  return out
}
