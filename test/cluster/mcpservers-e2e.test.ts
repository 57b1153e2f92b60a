import { join } from 'node:path'
import type { Hono } from 'hono'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { createApp } from '../../functions/mcpserver-changed/index.js'
import type { KubeObject } from '../../local/knative/kube-http.js'
import { readRuntimeConfig } from '../../shared/config.js'
import { noKineticEvents } from '../../shared/engine/kinetic-events.js'
import { KubeClient } from '../../shared/kube/client.js'
import { silentLogger } from '../../shared/log.js'
import { parseRegistry } from '../../shared/mcp/plan/registry.js'
import { loadManifests, ROOT } from '../knative/manifests.js'
import { bearer, serve, streamableHandler, type Running } from '../mcp/discovery-servers.js'
import { deliver, PING, RESOURCE_ADD, RESOURCE_UPDATE } from '../support/deliver.js'
import { eventually } from '../support/eventually.js'
import { describeCluster, useControlPlane } from './tier.js'
import { installCrds, readCrds } from '../../local/crds.js'
import { grantCommand, MCP_GRANT } from '../../shared/core/namespace-access.js'

/**
 * mcpserver-changed against a real kube-apiserver and kube-controller-manager, as its own
 * ServiceAccount with knative/'s RBAC (the registry Role of the agent namespace included), under
 * OwnerReferencesPermissionEnforcement: a real MCP server on 127.0.0.1 behind an unmanaged
 * MCPServer, and managed ones whose Deployment the real Deployment controller rolls out (never
 * to Available: the tier has no kubelet) and the real garbage collector removes.
 */

const NS = 'mcp-e2e'
const AGENT_NS = 'ai-agents'
const TOKEN = 'mcp-e2e-token-8c1d'
const SERVERS = `/apis/purko.io/v1alpha1/namespaces/${NS}/mcpservers`
/** The DeploymentUnavailable threshold for this suite (10 minutes in production). */
const UNAVAILABLE_AFTER_MS = 1500
type Condition = { type: string; status: string; reason?: string; message?: string }
type ServerObject = KubeObject & { spec: Record<string, any>; status?: Record<string, any> & { conditions?: Condition[] } }

describeCluster('mcpserver-changed on a real kube-apiserver, as its own ServiceAccount', () => {
  const cp = useControlPlane({ controllerManager: true, apiServerArgs: ['--enable-admission-plugins=OwnerReferencesPermissionEnforcement'] })
  let app: Hono
  /** The function as its own ServiceAccount, its clock `offsetMs` ahead (a tick after a backoff). */
  let appAt: (offsetMs: number) => Hono
  let mcp: Running
  const admin = () => cp.current.admin
  const server = (name: string) => admin().get<ServerObject>(`${SERVERS}/${name}`)
  const registry = async () => parseRegistry((await admin().get<KubeObject & { data?: Record<string, string> }>(`/api/v1/namespaces/${AGENT_NS}/configmaps/mcp-servers`))?.data?.servers)
  const changed = async (name: string, type = RESOURCE_UPDATE) => (await deliver(app, type, await server(name), { kineticsource: 'resources', kind: 'MCPServer' })).status
  const condition = (s: ServerObject | null, type: string) => s?.status?.conditions?.find((c) => c.type === type)
  const anMCPServer = (name: string, spec: Record<string, unknown>): KubeObject => ({ apiVersion: 'purko.io/v1alpha1', kind: 'MCPServer', metadata: { name, namespace: NS }, spec })

  beforeAll(async () => {
    const a = admin()
    await installCrds(a, readCrds(join(ROOT, 'crds')))
    const rbac = loadManifests().filter((m) => ['Namespace', 'ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding'].includes(m.kind))
    for (const m of [...rbac].sort((x, y) => Number(y.kind === 'Namespace') - Number(x.kind === 'Namespace'))) await a.apply(m.doc)
    await a.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } })
    mcp = await serve(bearer(TOKEN, streamableHandler()))
    const { kubeConfig } = await cp.current.serviceAccountKubeconfig('kinetic-system', 'mcpserver-changed')
    appAt = (offsetMs) => createApp({
      kube: new KubeClient(kubeConfig), log: silentLogger, now: () => new Date(Date.now() + offsetMs), config: readRuntimeConfig({ KINETIC_EXECUTOR_IMAGE: 'kinetic@sha256:e2e' }),
      events: noKineticEvents, unavailableAfterMs: UNAVAILABLE_AFTER_MS,
    })
    app = appAt(0)
  }, 90_000)

  afterAll(async () => {
    await mcp?.close()
  })

  it('registers an external server by its URL, reports the token Secret it may not read with the grant to make, discovers its tools once granted, and on deletion removes the entry and then the finalizer', async () => {
    await admin().apply({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'demo-token', namespace: NS }, stringData: { token: TOKEN } })
    await admin().apply(anMCPServer('demo', { image: 'unused', managed: false, url: `${mcp.url}/mcp`, auth: 'bearer', secretRef: 'demo-token' }))
    expect(await changed('demo', RESOURCE_ADD)).toBe(202)

    // Outside the agent namespace the function holds no Secret right: a finding, not a 500; the
    // server is registered and serving, so its phase stays Ready.
    const refused = await server('demo')
    expect(refused?.status?.phase).toBe('Ready')
    expect(condition(refused, 'ToolsDiscovered')).toMatchObject({ status: 'False', reason: 'SecretForbidden', message: expect.stringMatching(/^mcpserver-changed may not read Secret mcp-e2e\/demo-token/) })
    const warnings = await admin().get<{ items: Array<{ type: string; reason: string; message: string; involvedObject: { name: string } }> }>(`/api/v1/namespaces/${NS}/events`)
    expect(warnings?.items.filter((e) => e.involvedObject.name === 'demo' && e.type === 'Warning').map((e) => [e.reason, e.message])).toEqual([
      ['DiscoveryFailed', expect.stringMatching(/^Tool discovery failed \(SecretForbidden\): mcpserver-changed may not read Secret mcp-e2e\/demo-token/)],
    ])
    expect(JSON.stringify(refused?.status)).not.toContain(TOKEN)
    // The grant the message names, made as `kubectl create role/rolebinding` would.
    await admin().apply({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: 'kinetic-mcp-token-demo-token', namespace: NS },
      rules: [{ apiGroups: [''], resources: ['secrets'], resourceNames: ['demo-token'], verbs: ['get'] }] })
    await admin().apply({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: 'kinetic-mcp-token-demo-token', namespace: NS },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'kinetic-mcp-token-demo-token' },
      subjects: [{ kind: 'ServiceAccount', name: 'mcpserver-changed', namespace: 'kinetic-system' }] })
    // The resync tick after the backoff (at most 10 minutes plus jitter) retries; each try a tick later.
    let tick = 0
    await eventually('the tick discovered the tools with the granted token', async () => {
      const later = appAt(++tick * 15 * 60_000)
      expect((await deliver(later, PING, { reason: 'mcpservers-resync' }, { kineticsource: 'mcpserverresync' })).status).toBe(202)
      return condition(await server('demo'), 'ToolsDiscovered')?.status === 'True'
    }, 10_000, 200)

    const ready = await server('demo')
    expect(ready?.metadata?.finalizers).toEqual(['purko.io/mcpserver-finalizer'])
    expect(ready?.status).toMatchObject({ phase: 'Ready', toolCount: 3, url: `${mcp.url}/mcp` })
    expect(ready?.status?.tools.map((t: { name: string }) => t.name).sort()).toEqual(['ping', 'search', 'write_file'])
    expect(condition(ready, 'Ready')).toMatchObject({ status: 'True', reason: 'Registered' })
    expect(condition(ready, 'ToolsDiscovered')).toMatchObject({ status: 'True', message: '3 tools over Streamable HTTP' })
    expect((await registry()).entries).toEqual([{ name: 'demo', url: `${mcp.url}/mcp`, auth: 'bearer', icon: '', category: '', secretRef: 'demo-token', namespace: NS }])
    // The echo of the status write: nothing to do.
    const rv = ready?.metadata?.resourceVersion
    expect(await changed('demo')).toBe(202)
    expect((await server('demo'))?.metadata?.resourceVersion).toBe(rv)

    await admin().request('DELETE', `${SERVERS}/demo`)
    expect(await changed('demo')).toBe(202)
    expect(await server('demo')).toBeNull()
    expect((await registry()).entries).toEqual([])
  })

  it('lets the agent namespace be deleted while it holds MCPServers: the finalizer goes although the namespace controller removed the registry Role first', async () => {
    // An agent namespace of its own, with the registry grants knative/platform makes in ai-agents.
    const doomed = 'mcp-doomed'
    await admin().apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: doomed } })
    const grants = loadManifests().filter((m) => (m.kind === 'Role' || m.kind === 'RoleBinding') && m.namespace === AGENT_NS && m.name.startsWith('kinetic-mcpserver-changed'))
    expect(grants.map((m) => `${m.kind}/${m.name}`)).toContain('Role/kinetic-mcpserver-changed-registry')
    for (const m of grants) await admin().apply({ ...m.doc, metadata: { ...m.doc.metadata, namespace: doomed } })
    const { kubeConfig } = await cp.current.serviceAccountKubeconfig('kinetic-system', 'mcpserver-changed')
    const agentApp = createApp({
      kube: new KubeClient(kubeConfig), log: silentLogger, now: () => new Date(), config: readRuntimeConfig({ KINETIC_AGENT_NAMESPACE: doomed }), events: noKineticEvents,
    })
    const path = `/apis/purko.io/v1alpha1/namespaces/${doomed}/mcpservers/tools`
    await admin().apply({ apiVersion: 'purko.io/v1alpha1', kind: 'MCPServer', metadata: { name: 'tools', namespace: doomed }, spec: { image: 'unused', managed: false, url: `${mcp.url}/mcp` } })
    expect((await deliver(agentApp, RESOURCE_ADD, (await admin().get(path))!, { kineticsource: 'resources', kind: 'MCPServer' })).status).toBe(202)
    expect((await admin().get<ServerObject>(path))?.metadata?.finalizers).toEqual(['purko.io/mcpserver-finalizer'])
    expect((await admin().get(`/api/v1/namespaces/${doomed}/configmaps/mcp-servers`))).not.toBeNull()

    await admin().request('DELETE', `/api/v1/namespaces/${doomed}`)
    await eventually('the namespace controller removed the registry Role and left the MCPServer to its finalizer', async () =>
      (await admin().get(`/apis/rbac.authorization.k8s.io/v1/namespaces/${doomed}/roles/kinetic-mcpserver-changed-registry`)) === null
        && (await admin().get<ServerObject>(path))?.metadata?.deletionTimestamp !== undefined, 30_000, 100)

    expect((await deliver(agentApp, RESOURCE_UPDATE, (await admin().get(path))!, { kineticsource: 'resources', kind: 'MCPServer' })).status).toBe(202)
    expect(await admin().get(path)).toBeNull()
    await eventually('the namespace is gone', async () => (await admin().get(`/api/v1/namespaces/${doomed}`)) === null, 60_000, 200)
  }, 120_000)

  it('runs no workload in a namespace that has not opted in: the status gives the RoleBinding to make, and once made the tick rolls the server out', async () => {
    await admin().apply(anMCPServer('gated', { image: 'mcp/files:1', port: 8080, securityContext: { runAsUser: 1000 } }))
    expect(await changed('gated', RESOURCE_ADD)).toBe(202)
    const refused = await server('gated')
    expect(refused?.status?.phase).toBe('Error')
    expect(condition(refused, 'Ready')).toMatchObject({
      status: 'False', reason: 'NamespaceNotEnabled',
      message: expect.stringMatching(new RegExp(`^Kinetic may not run MCP servers in namespace ${NS} \\(.*forbidden.*\\); to let it: ${grantCommand(MCP_GRANT, NS)}$`)),
    })
    expect(await admin().get(`/apis/apps/v1/namespaces/${NS}/deployments/gated`)).toBeNull()
    expect((await registry()).entries).toEqual([])
    const warnings = await admin().get<{ items: Array<{ type: string; reason: string; involvedObject: { name: string } }> }>(`/api/v1/namespaces/${NS}/events`)
    expect(warnings?.items.filter((e) => e.involvedObject.name === 'gated' && e.type === 'Warning').map((e) => e.reason)).toContain('NamespaceNotEnabled')
    // kube-system never opts in: the function cannot start a pod there whatever an MCPServer says.
    const review = await cp.current.admin.request<{ status: { allowed: boolean } }>('POST', '/apis/authorization.k8s.io/v1/subjectaccessreviews', {
      apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview',
      spec: { user: 'system:serviceaccount:kinetic-system:mcpserver-changed', resourceAttributes: { namespace: 'kube-system', group: 'apps', resource: 'deployments', verb: 'create' } },
    })
    expect(review.status.allowed).toBe(false)

    // The command the status gives, as a RoleBinding; the tick's recheck rolls the server out.
    await admin().apply({
      apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: MCP_GRANT.binding, namespace: NS },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: MCP_GRANT.clusterRole },
      subjects: [{ kind: 'ServiceAccount', name: 'mcpserver-changed', namespace: 'kinetic-system' }],
    })
    let tick = 0
    await eventually('the tick rolled the server out once granted', async () => {
      expect((await deliver(appAt(++tick * 15 * 60_000), PING, { reason: 'mcpservers-resync' }, { kineticsource: 'mcpserverresync' })).status).toBe(202)
      return (await admin().get(`/apis/apps/v1/namespaces/${NS}/deployments/gated`)) !== null
    }, 10_000, 200)
    await admin().request('DELETE', `${SERVERS}/gated`)
    expect(await changed('gated')).toBe(202)
    expect(await server('gated')).toBeNull()
  })

  it('rolls out a managed server with the pod hardening, reports DeploymentUnavailable when it never becomes Available, and its deletion lets the garbage collector take Deployment and Service', async () => {
    await admin().apply(anMCPServer('files', { image: 'mcp/files:1', port: 8080, securityContext: { runAsUser: 1000 } }))
    expect(await changed('files', RESOURCE_ADD)).toBe(202)
    const deployment = await admin().get<KubeObject & { spec: any }>(`/apis/apps/v1/namespaces/${NS}/deployments/files`)
    expect(deployment?.metadata?.ownerReferences).toEqual([expect.objectContaining({ kind: 'MCPServer', name: 'files', controller: true, blockOwnerDeletion: true })])
    const pod = deployment!.spec.template.spec
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 1000, seccompProfile: { type: 'RuntimeDefault' } })
    expect(pod.automountServiceAccountToken).toBe(false)
    expect(pod.containers[0].securityContext).toEqual({ allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } })
    expect(await admin().get(`/api/v1/namespaces/${NS}/services/files`)).not.toBeNull()
    expect(condition(await server('files'), 'Ready')).toMatchObject({ status: 'False', reason: 'Progressing' })
    expect((await registry()).entries.map((e) => e.name)).toEqual(['files'])

    // The real Deployment controller says it is not available; after the threshold the tick reports it.
    await eventually('the Deployment controller saw the Deployment', async () =>
      ((await admin().get<KubeObject & { status?: { observedGeneration?: number } }>(`/apis/apps/v1/namespaces/${NS}/deployments/files`))?.status?.observedGeneration ?? 0) >= 1, 15_000, 100)
    await new Promise((r) => setTimeout(r, UNAVAILABLE_AFTER_MS + 100))
    expect((await deliver(app, PING, { reason: 'mcpservers-resync' }, { kineticsource: 'mcpserverresync' })).status).toBe(202)
    const unavailable = await server('files')
    expect(unavailable?.status?.phase).toBe('Error')
    expect(condition(unavailable, 'Ready')).toMatchObject({ status: 'False', reason: 'DeploymentUnavailable' })

    await admin().request('DELETE', `${SERVERS}/files`)
    expect(await changed('files')).toBe(202)
    expect(await server('files')).toBeNull()
    expect((await registry()).entries).toEqual([])
    await eventually('the garbage collector removed the Deployment and Service', async () =>
      (await admin().get(`/apis/apps/v1/namespaces/${NS}/deployments/files`)) === null
        && (await admin().get(`/api/v1/namespaces/${NS}/services/files`)) === null, 60_000, 200)
  }, 120_000)

  it('gives a stdio server the bridge ServiceAccount and a RoleBinding to the shipped bridge role, which the API server lets it bind', async () => {
    await admin().apply(anMCPServer('fs', { image: 'mcp/fs-stdio:1', transport: 'stdio', command: ['mcp-fs'], port: 8000 }))
    expect(await changed('fs', RESOURCE_ADD)).toBe(202)
    const binding = await admin().get<KubeObject & { roleRef: unknown; subjects: unknown }>(`/apis/rbac.authorization.k8s.io/v1/namespaces/${NS}/rolebindings/kinetic-mcp-bridge`)
    expect(binding?.roleRef).toEqual({ apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'kinetic-mcp-bridge' })
    expect(binding?.subjects).toEqual([{ kind: 'ServiceAccount', name: 'kinetic-mcp-bridge', namespace: NS }])
    expect(await admin().get(`/api/v1/namespaces/${NS}/serviceaccounts/kinetic-mcp-bridge`)).not.toBeNull()
    const deployment = await admin().get<KubeObject & { spec: any }>(`/apis/apps/v1/namespaces/${NS}/deployments/fs`)
    const pod = deployment!.spec.template.spec
    expect(pod.serviceAccountName).toBe('kinetic-mcp-bridge')
    expect(pod.containers.map((c: { name: string }) => c.name)).toEqual(['mcp-server', 'mcp-bridge'])
    expect(pod.containers[0]).toMatchObject({ stdin: true, command: ['mcp-fs'] })
    // The bridge's token reaches the mcp-bridge container only (the API server kept the projected volume).
    expect(pod.automountServiceAccountToken).toBe(false)
    expect(pod.containers[0].volumeMounts).toBeUndefined()
    expect(pod.containers[1].volumeMounts).toEqual([{ name: 'kinetic-mcp-bridge-token', mountPath: '/var/run/secrets/kubernetes.io/serviceaccount', readOnly: true }])
    expect(pod.volumes[0].projected.sources.map((src: Record<string, unknown>) => Object.keys(src)[0])).toEqual(['serviceAccountToken', 'configMap', 'downwardAPI'])
    expect(condition(await server('fs'), 'Ready')).toMatchObject({ status: 'False', reason: 'Progressing' })
  })
})
