import type { V1RoleBinding, V1ServiceAccount } from '@kubernetes/client-node'
import { describe, expect, it } from 'vitest'
import {
  agentRoleBindingManifest, agentRoleManifest, agentServiceAccountManifest, planIdentity, type ExistingIdentity,
} from '../../shared/agent/plan/identity.js'
import { AgentSchema, type Agent } from '../../shared/schemas/agent.js'

function anAgent(spec: Record<string, unknown> = {}): Agent {
  return AgentSchema.parse({
    apiVersion: 'purko.io/v1alpha1', kind: 'Agent',
    metadata: { name: 'a', namespace: 'ns1', uid: 'uid-a', generation: 1 },
    spec: { type: 'executor', model: { provider: 'anthropic', name: 'claude' }, ...spec },
  })
}

const nothing: ExistingIdentity = { serviceAccount: null, defaultServiceAccount: null, role: null, roleBinding: null }
const live = <T extends { metadata?: object }>(o: T, rv = '7'): T => ({ ...structuredClone(o), metadata: { ...o.metadata, resourceVersion: rv, uid: 'x' } })
/** What the API server holds after the writes planned for `agent`. */
const inPlace = (agent: Agent): ExistingIdentity => ({
  serviceAccount: live(agentServiceAccountManifest(agent)), defaultServiceAccount: null,
  role: live(agentRoleManifest(agent)), roleBinding: live(agentRoleBindingManifest(agent)),
})
const summary = (agent: Agent, existing: ExistingIdentity) =>
  planIdentity(agent, existing).writes.map((w) => `${w.op} ${w.kind}/${w.op === 'delete' ? w.name : w.object.metadata?.name}`)

describe('the per-agent identity', () => {
  it("uses purko's names, labels and rules, is owned by the Agent and mounts no token", () => {
    const agent = anAgent({ model: { provider: 'anthropic', name: 'claude', credentialsSecretRef: { name: 'llm-key' } } })
    const owner = [{ apiVersion: 'purko.io/v1alpha1', kind: 'Agent', name: 'a', uid: 'uid-a', controller: true, blockOwnerDeletion: true }]
    expect(agentServiceAccountManifest(agent)).toEqual({
      apiVersion: 'v1', kind: 'ServiceAccount', automountServiceAccountToken: false,
      metadata: { name: 'agent-a-sa', namespace: 'ns1', ownerReferences: owner, labels: { 'purko.io/agent': 'a', 'purko.io/agent-type': 'executor', 'purko.io/managed-by': 'agent-controller' } },
    })
    expect(agentRoleManifest(agent)).toEqual({
      apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role',
      metadata: { name: 'agent-a-role', namespace: 'ns1', labels: { 'purko.io/agent': 'a' }, ownerReferences: owner },
      rules: [
        { apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list'] },
        { apiGroups: [''], resources: ['secrets'], resourceNames: ['llm-key'], verbs: ['get'] },
      ],
    })
    expect(agentRoleBindingManifest(agent)).toEqual({
      apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding',
      metadata: { name: 'agent-a-binding', namespace: 'ns1', labels: { 'purko.io/agent': 'a' }, ownerReferences: owner },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'agent-a-role' },
      subjects: [{ kind: 'ServiceAccount', name: 'agent-a-sa', namespace: 'ns1' }],
    })
  })

  it('has no Secret rule without credentials, and an empty type label for an untyped Agent', () => {
    const agent = anAgent({ type: undefined })
    expect(agentRoleManifest(agent).rules).toEqual([{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list'] }])
    expect(agentServiceAccountManifest(agent).metadata?.labels?.['purko.io/agent-type']).toBe('')
  })

  it.each<[string, Agent, (e: ExistingIdentity) => ExistingIdentity, string[]]>([
    ['nothing exists yet', anAgent(), () => nothing, ['create ServiceAccount/agent-a-sa', 'create Role/agent-a-role', 'create RoleBinding/agent-a-binding']],
    ['everything is in place', anAgent(), (e) => e, []],
    ['the type changed (SA label)', anAgent({ type: 'reviewer' }), (e) => e, ['replace ServiceAccount/agent-a-sa']],
    ['credentials were added (Role rule)', anAgent({ model: { provider: 'p', name: 'm', credentialsSecretRef: { name: 's' } } }), (e) => e, ['replace Role/agent-a-role']],
    ['a custom ServiceAccount is named (binding subject, new SA, stale default deleted)', anAgent({ runtime: { serviceAccountName: 'bot' } }),
      (e) => ({ ...e, serviceAccount: null, defaultServiceAccount: e.serviceAccount }),
      ['create ServiceAccount/bot', 'replace RoleBinding/agent-a-binding', 'delete ServiceAccount/agent-a-sa']],
    ["purko's ServiceAccount without blockOwnerDeletion (adopted)", anAgent(),
      (e) => ({ ...e, serviceAccount: { ...e.serviceAccount!, metadata: { ...e.serviceAccount!.metadata, ownerReferences: [{ apiVersion: 'purko.io/v1alpha1', kind: 'Agent', name: 'a', uid: 'uid-a', controller: true }] } } }),
      ['replace ServiceAccount/agent-a-sa']],
    ['someone granted the Role more (reverted)', anAgent(),
      (e) => ({ ...e, role: { ...e.role!, rules: [...e.role!.rules!, { apiGroups: [''], resources: ['pods'], verbs: ['create'] }] } }),
      ['replace Role/agent-a-role']],
  ])('plans the writes when %s', (_, agent, shape, expected) => {
    expect(summary(agent, shape(inPlace(anAgent())))).toEqual(expected)
  })

  it("never changes or deletes a user's own ServiceAccount, and keeps other labels and owners when it updates its own", () => {
    const agent = anAgent({ runtime: { serviceAccountName: 'mine' } })
    const mine: V1ServiceAccount = { metadata: { name: 'mine', namespace: 'ns1', resourceVersion: '3', labels: { team: 'x' } } }
    expect(summary(agent, { ...inPlace(agent), serviceAccount: mine })).toEqual([])

    const extra = inPlace(anAgent())
    extra.serviceAccount!.metadata!.labels = { ...extra.serviceAccount!.metadata!.labels, team: 'x' }
    extra.serviceAccount!.secrets = [{ name: 'token' }]
    const [write] = planIdentity(anAgent({ type: 'router' }), extra).writes
    expect(write?.op === 'replace' && write.object).toMatchObject({
      metadata: { resourceVersion: '7', labels: { team: 'x', 'purko.io/agent-type': 'router' } }, secrets: [{ name: 'token' }], automountServiceAccountToken: false,
    })
  })

  it('does not delete a default-named ServiceAccount it does not own', () => {
    const agent = anAgent({ runtime: { serviceAccountName: 'bot' } })
    const foreign: V1ServiceAccount = { metadata: { name: 'agent-a-sa', namespace: 'ns1' } }
    expect(summary(agent, { ...inPlace(agent), defaultServiceAccount: foreign })).toEqual([])
  })

  it('reports, and leaves alone, a RoleBinding of its name bound to another role (roleRef cannot change)', () => {
    const agent = anAgent()
    const other: V1RoleBinding = { ...inPlace(agent).roleBinding!, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'admin' } }
    const plan = planIdentity(agent, { ...inPlace(agent), roleBinding: other })
    expect(plan.writes).toEqual([])
    expect(plan.problems).toEqual(['RoleBinding ns1/agent-a-binding refers to ClusterRole admin, not Role agent-a-role; delete it and Kinetic recreates it'])
  })

  it('leaves a Role controlled by another object alone and says so', () => {
    const agent = anAgent()
    const role = { ...inPlace(agent).role!, metadata: { ...inPlace(agent).role!.metadata, ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'x', uid: 'other', controller: true }] } }
    const plan = planIdentity(agent, { ...inPlace(agent), role })
    expect(plan.writes).toEqual([])
    expect(plan.problems).toEqual(['Role ns1/agent-a-role is controlled by another object'])
  })

  it('is idempotent: the identity it plans, once stored, plans no writes', () => {
    for (const spec of [{}, { type: 'monitor' }, { runtime: { serviceAccountName: 'bot' } }, { model: { provider: 'p', name: 'm', credentialsSecretRef: { name: 's' } } }]) {
      const agent = anAgent(spec)
      expect(summary(agent, inPlace(agent))).toEqual([])
    }
  })
})
