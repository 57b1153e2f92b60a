import type { V1OwnerReference, V1PolicyRule, RbacV1Subject, V1Role, V1RoleBinding, V1ServiceAccount } from '@kubernetes/client-node'
import type { Agent } from '../../schemas/agent.js'
import { API_VERSION, LABEL_AGENT, LABEL_AGENT_TYPE, LABEL_MANAGED_BY } from '../../schemas/labels.js'
import { labelValue } from '../../workflow/plan/job-builder.js'
import { agentRoleBindingName, agentRoleName, agentServiceAccountName, defaultServiceAccountName } from './names.js'

/** purko's value of `purko.io/managed-by` on per-agent identities. */
export const MANAGED_BY_AGENT_CONTROLLER = 'agent-controller'

const RBAC_GROUP = 'rbac.authorization.k8s.io'

/** What exists of an Agent's identity, as read from the API server (null = absent). */
export interface ExistingIdentity {
  /** The ServiceAccount named by `agentServiceAccountName(agent)`. */
  serviceAccount: V1ServiceAccount | null
  /** `agent-<name>-sa`, read only when a custom ServiceAccount is named (it may be a stale one of ours). */
  defaultServiceAccount: V1ServiceAccount | null
  role: V1Role | null
  roleBinding: V1RoleBinding | null
}

/** One write that brings the identity closer to what the Agent asks for. */
export type IdentityWrite =
  | { op: 'create' | 'replace'; kind: 'ServiceAccount'; object: V1ServiceAccount }
  | { op: 'create' | 'replace'; kind: 'Role'; object: V1Role }
  | { op: 'create' | 'replace'; kind: 'RoleBinding'; object: V1RoleBinding }
  | { op: 'delete'; kind: 'ServiceAccount'; namespace: string; name: string }

/** The writes, plus what cannot be fixed by writing (a name taken by someone else's object). */
export interface IdentityPlan {
  writes: IdentityWrite[]
  /** The ServiceAccount the Agent runs as exists, or is about to be created. */
  serviceAccountName: string
  /** Why some part of the identity is left as it is, for the Ready condition; empty when all is well. */
  problems: string[]
}

/** Pure: the ownerReference every identity object carries: the Agent, as controller, blocking its deletion. */
export function agentOwnerReference(agent: Pick<Agent, 'metadata'>): V1OwnerReference {
  return { apiVersion: API_VERSION, kind: 'Agent', name: agent.metadata.name ?? '', uid: agent.metadata.uid ?? '', controller: true, blockOwnerDeletion: true }
}

/** Pure: purko's labels on the ServiceAccount: the agent, its type (possibly empty) and the manager. */
export function serviceAccountLabels(agent: Pick<Agent, 'metadata' | 'spec'>): Record<string, string> {
  return {
    [LABEL_AGENT]: labelValue(agent.metadata.name ?? ''),
    [LABEL_AGENT_TYPE]: agent.spec.type ?? '',
    [LABEL_MANAGED_BY]: MANAGED_BY_AGENT_CONTROLLER,
  }
}

/** Pure: purko's label on the Role and RoleBinding. */
export function rbacLabels(agent: Pick<Agent, 'metadata'>): Record<string, string> {
  return { [LABEL_AGENT]: labelValue(agent.metadata.name ?? '') }
}

/** Pure: purko's Role rules: read ConfigMaps, and read the model's credentials Secret by name when there is one. */
export function agentRoleRules(agent: Pick<Agent, 'spec'>): V1PolicyRule[] {
  const rules: V1PolicyRule[] = [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list'] }]
  const secret = agent.spec.model.credentialsSecretRef?.name
  if (secret) rules.push({ apiGroups: [''], resources: ['secrets'], resourceNames: [secret], verbs: ['get'] })
  return rules
}

/** Pure: the ServiceAccount agent-changed creates (no API token mounted unless a pod asks for one). */
export function agentServiceAccountManifest(agent: Pick<Agent, 'metadata' | 'spec'>): V1ServiceAccount {
  return {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: { name: agentServiceAccountName(agent), namespace: agent.metadata.namespace, labels: serviceAccountLabels(agent), ownerReferences: [agentOwnerReference(agent)] },
    automountServiceAccountToken: false,
  }
}

/** Pure: the Role `agent-<name>-role`. */
export function agentRoleManifest(agent: Pick<Agent, 'metadata' | 'spec'>): V1Role {
  return {
    apiVersion: `${RBAC_GROUP}/v1`,
    kind: 'Role',
    metadata: { name: agentRoleName(agent.metadata.name ?? ''), namespace: agent.metadata.namespace, labels: rbacLabels(agent), ownerReferences: [agentOwnerReference(agent)] },
    rules: agentRoleRules(agent),
  }
}

/** Pure: the RoleBinding `agent-<name>-binding` of the Role to the Agent's ServiceAccount. */
export function agentRoleBindingManifest(agent: Pick<Agent, 'metadata' | 'spec'>): V1RoleBinding {
  const name = agent.metadata.name ?? ''
  return {
    apiVersion: `${RBAC_GROUP}/v1`,
    kind: 'RoleBinding',
    metadata: { name: agentRoleBindingName(name), namespace: agent.metadata.namespace, labels: rbacLabels(agent), ownerReferences: [agentOwnerReference(agent)] },
    roleRef: { apiGroup: RBAC_GROUP, kind: 'Role', name: agentRoleName(name) },
    subjects: [{ kind: 'ServiceAccount', name: agentServiceAccountName(agent), namespace: agent.metadata.namespace }],
  }
}

/** Pure: the object is owned by this Agent (same uid), whoever created it. */
export function isOwnedBy(object: { metadata?: { ownerReferences?: V1OwnerReference[] } } | null, agent: Pick<Agent, 'metadata'>): boolean {
  return Boolean(object?.metadata?.ownerReferences?.some((r) => r.kind === 'Agent' && r.uid === agent.metadata.uid))
}

/**
 * Pure: the writes that make the Agent's identity match its spec. Unlike purko, which only
 * creates, existing objects are kept up to date (labels, rules, subjects, owner). The names
 * purko reserves (`agent-<name>-sa|-role|-binding`) are ours to adopt, unless another object
 * controls them; a ServiceAccount named by `runtime.serviceAccountName` that this Agent does
 * not own is the user's: used, never changed or deleted. A default ServiceAccount of ours left
 * behind by a switch to a custom one is deleted.
 */
export function planIdentity(agent: Pick<Agent, 'metadata' | 'spec'>, existing: ExistingIdentity): IdentityPlan {
  const writes: IdentityWrite[] = []
  const problems: string[] = []
  const namespace = agent.metadata.namespace ?? ''
  const agentName = agent.metadata.name ?? ''
  const saName = agentServiceAccountName(agent)
  const custom = saName !== defaultServiceAccountName(agentName)

  const sa = agentServiceAccountManifest(agent)
  if (!existing.serviceAccount) writes.push({ op: 'create', kind: 'ServiceAccount', object: sa })
  else if (custom && !isOwnedBy(existing.serviceAccount, agent)) {
    // The user's own account: theirs to configure.
  } else if (controlledByOther(existing.serviceAccount, agent)) {
    // Someone else manages it; it still works as the step pods' identity.
  } else {
    const next = adopted(existing.serviceAccount, sa, { automountServiceAccountToken: false })
    if (next) writes.push({ op: 'replace', kind: 'ServiceAccount', object: next })
  }

  const role = agentRoleManifest(agent)
  if (!existing.role) writes.push({ op: 'create', kind: 'Role', object: role })
  else if (controlledByOther(existing.role, agent)) problems.push(`Role ${namespace}/${role.metadata!.name} is controlled by another object`)
  else {
    const next = adopted(existing.role, role, { rules: role.rules })
    if (next) writes.push({ op: 'replace', kind: 'Role', object: next })
  }

  const binding = agentRoleBindingManifest(agent)
  if (!existing.roleBinding) writes.push({ op: 'create', kind: 'RoleBinding', object: binding })
  else if (controlledByOther(existing.roleBinding, agent)) problems.push(`RoleBinding ${namespace}/${binding.metadata!.name} is controlled by another object`)
  else if (!sameRoleRef(existing.roleBinding, binding)) {
    // roleRef is immutable: only deleting the binding could change it, and it is not ours to delete.
    problems.push(`RoleBinding ${namespace}/${binding.metadata!.name} refers to ${existing.roleBinding.roleRef.kind} ${existing.roleBinding.roleRef.name}, not Role ${binding.roleRef.name}; delete it and Kinetic recreates it`)
  } else {
    const next = adopted(existing.roleBinding, binding, { subjects: binding.subjects })
    if (next) writes.push({ op: 'replace', kind: 'RoleBinding', object: next })
  }

  if (custom && existing.defaultServiceAccount && isOwnedBy(existing.defaultServiceAccount, agent)) {
    writes.push({ op: 'delete', kind: 'ServiceAccount', namespace, name: defaultServiceAccountName(agentName) })
  }
  return { writes, serviceAccountName: saName, problems }
}

/** Has a controller ownerReference to something other than this Agent. */
function controlledByOther(object: { metadata?: { ownerReferences?: V1OwnerReference[] } }, agent: Pick<Agent, 'metadata'>): boolean {
  return Boolean(object.metadata?.ownerReferences?.some((r) => r.controller && r.uid !== agent.metadata.uid))
}

/**
 * The live object with our labels, our ownerReference and our fields; null when it already has
 * them. Everything else on it (other labels, annotations, token Secrets, other owners) is kept.
 */
function adopted<T extends { metadata?: { labels?: Record<string, string>; ownerReferences?: V1OwnerReference[] } }>(
  live: T, desired: T, fields: Partial<T>,
): T | null {
  const labels = { ...(live.metadata?.labels ?? {}), ...(desired.metadata?.labels ?? {}) }
  const ours = desired.metadata!.ownerReferences![0]!
  const others = (live.metadata?.ownerReferences ?? []).filter((r) => r.uid !== ours.uid)
  const ownerReferences = [...others, ours]
  const next = { ...live, metadata: { ...live.metadata, labels, ownerReferences }, ...fields }
  const same = sameLabels(live.metadata?.labels, labels)
    && sameOwners(live.metadata?.ownerReferences ?? [], ownerReferences)
    && Object.entries(fields).every(([k, v]) => canonical(k, (live as Record<string, unknown>)[k]) === canonical(k, v))
  return same ? null : next
}

function sameLabels(a: Record<string, string> | undefined, b: Record<string, string>): boolean {
  const left = a ?? {}
  return Object.keys(left).length === Object.keys(b).length && Object.entries(b).every(([k, v]) => left[k] === v)
}

function sameOwners(a: V1OwnerReference[], b: V1OwnerReference[]): boolean {
  const key = (r: V1OwnerReference) => `${r.apiVersion}|${r.kind}|${r.name}|${r.uid}|${Boolean(r.controller)}|${Boolean(r.blockOwnerDeletion)}`
  return a.map(key).sort().join('\n') === b.map(key).sort().join('\n')
}

function sameRoleRef(live: V1RoleBinding, desired: V1RoleBinding): boolean {
  return live.roleRef.kind === desired.roleRef.kind && live.roleRef.name === desired.roleRef.name && live.roleRef.apiGroup === desired.roleRef.apiGroup
}

/** A field as the API server would store it: missing subject apiGroup is '', rules' lists in any order compare equal. */
function canonical(field: string, value: unknown): string {
  if (field === 'subjects') {
    return JSON.stringify(((value as RbacV1Subject[] | undefined) ?? []).map((s) => [s.kind, s.apiGroup ?? '', s.name, s.namespace ?? '']))
  }
  if (field === 'rules') {
    return JSON.stringify(((value as V1PolicyRule[] | undefined) ?? []).map((r) => [
      [...(r.apiGroups ?? [])].sort(), [...(r.resources ?? [])].sort(), [...(r.resourceNames ?? [])].sort(), [...(r.verbs ?? [])].sort(), [...(r.nonResourceURLs ?? [])].sort(),
    ]))
  }
  return JSON.stringify(value ?? null)
}
