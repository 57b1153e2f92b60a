import { join } from 'node:path'
import type { Hono } from 'hono'
import { beforeAll, expect, it } from 'vitest'
import { createApp } from '../../functions/agent-changed/index.js'
import type { KubeObject } from '../../local/knative/kube-http.js'
import { readRuntimeConfig } from '../../shared/config.js'
import { noKineticEvents } from '../../shared/engine/kinetic-events.js'
import { KubeClient } from '../../shared/kube/client.js'
import { silentLogger } from '../../shared/log.js'
import { loadManifests, ROOT } from '../knative/manifests.js'
import { deliver, RESOURCE_ADD, RESOURCE_UPDATE } from '../support/deliver.js'
import { eventually } from '../support/eventually.js'
import { grantNamespace } from './namespace-grants.js'
import { describeCluster, useControlPlane } from './tier.js'
import { installCrds, readCrds } from '../../local/crds.js'

/**
 * agent-changed against a real kube-apiserver and kube-controller-manager, as its own
 * ServiceAccount with knative/'s RBAC, under OwnerReferencesPermissionEnforcement: the API
 * server's own RBAC escalation check judges the per-agent Roles it creates, and the real
 * garbage collector removes them with their Agent.
 */

const NS = 'agents-e2e'
const AGENTS = `/apis/purko.io/v1alpha1/namespaces/${NS}/agents`
type Condition = { type: string; status: string; reason?: string; message?: string }
type AgentObject = KubeObject & { spec: Record<string, any>; status?: { phase?: string; message?: string; serviceAccountName?: string; conditions?: Condition[] } }
type Rbac = KubeObject & { rules?: unknown[]; subjects?: unknown[]; automountServiceAccountToken?: boolean }

const anAgent = (name: string, spec: Record<string, unknown> = {}, metadata: Record<string, unknown> = {}): KubeObject => ({
  apiVersion: 'purko.io/v1alpha1', kind: 'Agent', metadata: { name, namespace: NS, ...metadata },
  spec: { type: 'executor', model: { provider: 'anthropic', name: 'claude' }, ...spec },
})

describeCluster('agent-changed on a real kube-apiserver, as its own ServiceAccount', () => {
  const cp = useControlPlane({ controllerManager: true, apiServerArgs: ['--enable-admission-plugins=OwnerReferencesPermissionEnforcement'] })
  let app: Hono
  const admin = () => cp.current.admin
  const agent = (name: string) => admin().get<AgentObject>(`${AGENTS}/${name}`)
  const object = <T = Rbac>(path: string) => admin().get<T>(path)
  const sa = (name: string) => object(`/api/v1/namespaces/${NS}/serviceaccounts/${name}`)
  const role = (name: string) => object(`/apis/rbac.authorization.k8s.io/v1/namespaces/${NS}/roles/${name}`)
  const binding = (name: string) => object(`/apis/rbac.authorization.k8s.io/v1/namespaces/${NS}/rolebindings/${name}`)
  /** What the ApiServerSource would send after a change: the stored Agent. */
  const changed = async (name: string, type = RESOURCE_UPDATE) => (await deliver(app, type, await agent(name))).status
  const condition = (a: AgentObject | null, type: string) => a?.status?.conditions?.find((c) => c.type === type)

  const appAs = async (account: string) => {
    const { kubeConfig } = await cp.current.serviceAccountKubeconfig('kinetic-system', account)
    return createApp({ kube: new KubeClient(kubeConfig), log: silentLogger, now: () => new Date(), config: readRuntimeConfig({}), events: noKineticEvents })
  }

  beforeAll(async () => {
    const a = admin()
    await installCrds(a, readCrds(join(ROOT, 'crds')))
    const rbac = loadManifests().filter((m) => ['Namespace', 'ServiceAccount', 'ClusterRole', 'ClusterRoleBinding'].includes(m.kind))
    for (const m of [...rbac].sort((x, y) => Number(y.kind === 'Namespace') - Number(x.kind === 'Namespace'))) await a.apply(m.doc)
    await a.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } })
    await grantNamespace(a, NS)
    await a.apply({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'llm-key', namespace: NS }, stringData: { 'api-key': 'x' } })
    app = await appAs('agent-changed')
  }, 90_000)

  it('creates the ServiceAccount, a Role granting the credentials Secret, and its RoleBinding: the escalation check passes', async () => {
    await admin().apply(anAgent('writer', { model: { provider: 'anthropic', name: 'claude', credentialsSecretRef: { name: 'llm-key' } } }))
    expect(await changed('writer', RESOURCE_ADD)).toBe(202)

    const account = await sa('agent-writer-sa')
    expect(account?.automountServiceAccountToken).toBe(false)
    expect(account?.metadata?.labels).toEqual({ 'purko.io/agent': 'writer', 'purko.io/agent-type': 'executor', 'purko.io/managed-by': 'agent-controller' })
    expect(account?.metadata?.ownerReferences).toEqual([expect.objectContaining({ kind: 'Agent', name: 'writer', controller: true, blockOwnerDeletion: true })])
    expect((await role('agent-writer-role'))?.rules).toEqual([
      { apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list'] },
      { apiGroups: [''], resources: ['secrets'], resourceNames: ['llm-key'], verbs: ['get'] },
    ])
    expect((await binding('agent-writer-binding'))?.subjects).toEqual([{ kind: 'ServiceAccount', name: 'agent-writer-sa', namespace: NS }])
    const stored = await agent('writer')
    expect(stored?.status).toMatchObject({ phase: 'Ready', serviceAccountName: 'agent-writer-sa' })
    expect(condition(stored, 'CredentialsValid')).toMatchObject({ status: 'True', message: 'Credentials loaded from llm-key' })
    // The status write came back as an event: nothing to do, nothing written.
    const rv = stored?.metadata?.resourceVersion
    expect(await changed('writer')).toBe(202)
    expect((await agent('writer'))?.metadata?.resourceVersion).toBe(rv)
  })

  it('keeps the identity up to date when the spec changes, and deletes the stale default ServiceAccount', async () => {
    await admin().apply(anAgent('editor'))
    await changed('editor', RESOURCE_ADD)
    const live = (await agent('editor'))!
    await admin().request('PUT', `${AGENTS}/editor`, { ...live, spec: { ...live.spec, type: 'reviewer', runtime: { serviceAccountName: 'editor-bot' } } })
    expect(await changed('editor')).toBe(202)

    expect((await sa('editor-bot'))?.metadata?.labels?.['purko.io/agent-type']).toBe('reviewer')
    expect((await binding('agent-editor-binding'))?.subjects).toEqual([{ kind: 'ServiceAccount', name: 'editor-bot', namespace: NS }])
    expect(await sa('agent-editor-sa')).toBeNull()
    expect((await agent('editor'))?.status?.serviceAccountName).toBe('editor-bot')
  })

  it('without the Role\'s own permissions the API server refuses the Role, and the Agent says so (Error, RBACFailed) with a 202', async () => {
    // agent-changed's rights, cluster-wide and those an opted-in namespace grants, less ConfigMaps.
    const roles = loadManifests().filter((m) => m.kind === 'ClusterRole' && ['kinetic-agent-changed', 'kinetic-agent-identities'].includes(m.name))
    const rules = roles.flatMap((r) => r.doc.rules as Array<{ resources: string[] }>).filter((r) => !r.resources.includes('configmaps'))
    await admin().apply({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'agents-e2e-no-configmaps' }, rules })
    await admin().apply({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: 'agents-e2e-no-configmaps' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'agents-e2e-no-configmaps' },
      subjects: [{ kind: 'ServiceAccount', name: 'no-configmaps', namespace: 'kinetic-system' }] })
    const weaker = await appAs('no-configmaps')
    await admin().apply(anAgent('refused'))

    expect((await deliver(weaker, RESOURCE_ADD, await agent('refused'))).status).toBe(202)
    const stored = await agent('refused')
    expect(stored?.status?.phase).toBe('Error')
    expect(condition(stored, 'Ready')).toMatchObject({ status: 'False', reason: 'RBACFailed', message: expect.stringMatching(/^create role: .*attempting to grant RBAC permissions not currently held/) })
    expect(await role('agent-refused-role')).toBeNull()
    // The real account converges it.
    expect(await changed('refused')).toBe(202)
    expect((await agent('refused'))?.status?.phase).toBe('Ready')
  })

  it("deleting an Agent migrated from purko does not hang on purko's finalizer, and the garbage collector removes its identity", async () => {
    await admin().apply(anAgent('migrated', {}, { finalizers: ['purko.io/agent-finalizer'] }))
    await changed('migrated', RESOURCE_ADD)
    expect((await agent('migrated'))?.metadata?.finalizers).toBeUndefined()
    expect(await sa('agent-migrated-sa')).not.toBeNull()

    // purko's finalizer put back (an Agent purko still manages), then deleted: the update event lets it go.
    const live = (await agent('migrated'))!
    await admin().request('PUT', `${AGENTS}/migrated`, { ...live, metadata: { ...live.metadata, finalizers: ['purko.io/agent-finalizer'] } })
    await admin().request('DELETE', `${AGENTS}/migrated`)
    expect((await agent('migrated'))?.metadata?.deletionTimestamp).toBeDefined()
    expect(await changed('migrated')).toBe(202)

    await eventually('the Agent gone', async () => (await agent('migrated')) === null)
    await eventually('its ServiceAccount, Role and RoleBinding collected', async () =>
      (await sa('agent-migrated-sa')) === null && (await role('agent-migrated-role')) === null && (await binding('agent-migrated-binding')) === null, 60_000)
  }, 90_000)

  it('ModelAvailable becomes True once the LLMProvider exists', async () => {
    await admin().apply(anAgent('modelled', { model: { provider: 'team-claude', name: 'claude' } }))
    await changed('modelled', RESOURCE_ADD)
    expect(condition(await agent('modelled'), 'ModelAvailable')).toMatchObject({ status: 'False', reason: 'ProviderNotFound' })
    await admin().apply({ apiVersion: 'purko.io/v1alpha1', kind: 'LLMProvider', metadata: { name: 'team-claude', namespace: NS }, spec: { type: 'anthropic', model: 'claude' } })
    await changed('modelled')
    expect(condition(await agent('modelled'), 'ModelAvailable')).toMatchObject({ status: 'True', reason: 'Configured' })
  })

  it.each<[string, KubeObject, string]>([
    ['an empty model name (rule 2)', anAgent('bad', { model: { provider: 'anthropic', name: '' } }), 'spec.model.name must not be empty'],
    // AG-001 and AG-004 are the CRD's enum and list-map key: refused, in the API server's words.
    ['an unknown type (AG-001)', anAgent('bad', { type: 'wizard' }), 'Unsupported value: "wizard"'],
    ['two tools of one name (AG-004)', anAgent('bad', { tools: [{ name: 'gh', type: 'api' }, { name: 'gh', type: 'mcp' }] }), 'Duplicate value'],
  ])('the real server refuses an Agent with %s', async (_, bad, message) => {
    const res = await admin().send<{ message?: string }>('POST', AGENTS, bad)
    expect(res.status).toBe(422)
    expect(res.body.message).toContain(message)
  })
})
