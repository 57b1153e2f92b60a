import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { ApiextensionsV1Api, AppsV1Api, CoreV1Api, CustomObjectsApi, loadYaml, type V1CustomResourceDefinition } from '@kubernetes/client-node'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApp } from '../../functions/mcpserver-changed/index.js'
import { readRuntimeConfig } from '../../shared/config.js'
import { noKineticEvents } from '../../shared/engine/kinetic-events.js'
import { KubeClient } from '../../shared/kube/client.js'
import { silentLogger } from '../../shared/log.js'
import { parseRegistry } from '../../shared/mcp/plan/registry.js'
import { startApiServer, type ApiServer } from '../../local/apiserver/index.js'
import { bearer, serve, streamableHandler, type Running } from '../mcp/discovery-servers.js'
import { deliver, RESOURCE_ADD, RESOURCE_UPDATE } from '../support/deliver.js'

/**
 * mcpserver-changed with the real client-node adapter and the real MCP client, against the
 * embedded API server with Kinetic's CRDs, and a real MCP server (the SDK's) on 127.0.0.1.
 */
const NS = 'ai-agents'
const TOKEN = 'tok-4a7f9c'
let api: ApiServer
let core: CoreV1Api
let apps: AppsV1Api
let custom: CustomObjectsApi
let mcp: Running

const app = () => createApp({
  kube: new KubeClient(api.kubeConfigObject()), log: silentLogger, now: () => new Date(),
  config: readRuntimeConfig({ KINETIC_EXECUTOR_IMAGE: 'kinetic@sha256:feed' }), events: noKineticEvents,
})
const server = async (name: string) =>
  custom.getNamespacedCustomObject({ group: 'purko.io', version: 'v1alpha1', namespace: NS, plural: 'mcpservers', name }) as Promise<Record<string, any>>
const apply = (name: string, spec: Record<string, unknown>) =>
  custom.createNamespacedCustomObject({ group: 'purko.io', version: 'v1alpha1', namespace: NS, plural: 'mcpservers', body: { apiVersion: 'purko.io/v1alpha1', kind: 'MCPServer', metadata: { name }, spec } })
const registry = async () => parseRegistry((await core.readNamespacedConfigMap({ namespace: NS, name: 'mcp-servers' })).data?.servers)
const condition = (s: Record<string, any>, type: string) => (s.status?.conditions as Array<Record<string, unknown>>).find((c) => c.type === type)

beforeAll(async () => {
  api = await startApiServer()
  const kc = api.kubeConfigObject()
  core = kc.makeApiClient(CoreV1Api)
  apps = kc.makeApiClient(AppsV1Api)
  custom = kc.makeApiClient(CustomObjectsApi)
  const ext = kc.makeApiClient(ApiextensionsV1Api)
  const dir = join(import.meta.dirname, '../../crds')
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.purko.io.yaml'))) {
    await ext.createCustomResourceDefinition({ body: loadYaml<V1CustomResourceDefinition>(readFileSync(join(dir, file), 'utf8')) })
  }
  mcp = await serve(bearer(TOKEN, streamableHandler()))
})

afterAll(async () => {
  await mcp?.close()
  await api?.close()
})

describe('mcpserver-changed on the embedded API server', () => {
  it('registers an unmanaged server, discovers its tools over MCP with the bearer token, and on deletion removes the entry and the finalizer', async () => {
    await core.createNamespacedSecret({ namespace: NS, body: { metadata: { name: 'demo-token' }, stringData: { token: TOKEN } } })
    await core.createNamespacedConfigMap({ namespace: NS, body: { metadata: { name: 'mcp-servers' }, data: { servers: '- name: from-helm\n  url: http://helm:1\n  auth: none\n' } } })
    await apply('demo', { image: 'unused', managed: false, url: `${mcp.url}/mcp`, auth: 'bearer', secretRef: 'demo-token', category: 'test' })
    expect((await deliver(app(), RESOURCE_ADD, await server('demo'), { kineticsource: 'resources', kind: 'MCPServer' })).status).toBe(202)

    const ready = await server('demo')
    expect(ready.metadata.finalizers).toEqual(['purko.io/mcpserver-finalizer'])
    expect(ready.status).toMatchObject({ phase: 'Ready', toolCount: 3, url: `${mcp.url}/mcp`, discoveredTransport: 'streamable-http', observedGeneration: 1 })
    expect(ready.status.tools.map((t: { name: string }) => t.name).sort()).toEqual(['ping', 'search', 'write_file'])
    expect(ready.status.tools.find((t: { name: string }) => t.name === 'search')).toEqual({ name: 'search', description: 'Searches the index', readOnly: true })
    expect(ready.status.tools.find((t: { name: string }) => t.name === 'write_file').description).toHaveLength(256)
    expect(condition(ready, 'Ready')).toMatchObject({ status: 'True', reason: 'Registered' })
    expect(JSON.stringify(ready.status)).not.toContain(TOKEN)
    expect((await registry()).entries).toEqual([
      { name: 'from-helm', url: 'http://helm:1', auth: 'none' },
      { name: 'demo', url: `${mcp.url}/mcp`, auth: 'bearer', icon: '', category: 'test', secretRef: 'demo-token', namespace: NS },
    ])
    expect((await apps.listNamespacedDeployment({ namespace: NS })).items).toEqual([])
    const events = (await core.listNamespacedEvent({ namespace: NS })).items.map((e) => e.reason)
    expect(events).toEqual(expect.arrayContaining(['Registered', 'ToolsDiscovered']))

    // The echo of our own status write changes nothing.
    expect((await deliver(app(), RESOURCE_UPDATE, ready, { kineticsource: 'resources', kind: 'MCPServer' })).status).toBe(202)
    expect((await server('demo')).metadata.resourceVersion).toBe(ready.metadata.resourceVersion)

    await custom.deleteNamespacedCustomObject({ group: 'purko.io', version: 'v1alpha1', namespace: NS, plural: 'mcpservers', name: 'demo' })
    const deleting = await server('demo')
    expect(deleting.metadata.deletionTimestamp).toBeDefined()
    expect((await deliver(app(), RESOURCE_UPDATE, deleting, { kineticsource: 'resources', kind: 'MCPServer' })).status).toBe(202)
    await expect(server('demo')).rejects.toMatchObject({ code: 404 })
    expect((await registry()).entries.map((e) => e.name)).toEqual(['from-helm'])
  })

  it('makes the Deployment and Service of a managed server with the hardening, and a second run writes nothing', async () => {
    await apply('files', { image: 'mcp/files:1', port: 8080, securityContext: { runAsUser: 1000 }, env: [{ name: 'A', valueFrom: { secretKeyRef: { name: 's', key: 'k' } } }] })
    const first = await server('files')
    expect((await deliver(app(), RESOURCE_ADD, first, { kineticsource: 'resources', kind: 'MCPServer' })).status).toBe(202)
    const d = await apps.readNamespacedDeployment({ namespace: NS, name: 'files' })
    expect(d.metadata?.ownerReferences).toEqual([{ apiVersion: 'purko.io/v1alpha1', kind: 'MCPServer', name: 'files', uid: first.metadata.uid, controller: true, blockOwnerDeletion: true }])
    const pod = d.spec!.template.spec!
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 1000, seccompProfile: { type: 'RuntimeDefault' } })
    expect(pod.automountServiceAccountToken).toBe(false)
    expect(pod.enableServiceLinks).toBe(false)
    expect(pod.containers[0]).toMatchObject({ name: 'mcp-server', ports: [{ containerPort: 8080 }], env: [{ name: 'A', valueFrom: { secretKeyRef: { name: 's', key: 'k' } } }] })
    const svc = await core.readNamespacedService({ namespace: NS, name: 'files' })
    expect(svc.spec?.selector).toEqual({ 'purko.io/mcp-server': 'files' })
    const s = await server('files')
    expect(s.status).toMatchObject({ phase: 'Pending', url: 'http://files.ai-agents.svc.cluster.local:8080' })
    expect(condition(s, 'Available')).toMatchObject({ status: 'False', reason: 'Progressing' })
    expect((await registry()).entries.map((e) => e.name)).toContain('files')

    const versions = [d.metadata?.resourceVersion, svc.metadata?.resourceVersion]
    // A Deployment event (the Deployment controller's status update) re-reconciles: nothing to write.
    expect((await deliver(app(), RESOURCE_UPDATE, d, { kineticsource: 'resources', kind: 'Deployment' })).status).toBe(202)
    expect([(await apps.readNamespacedDeployment({ namespace: NS, name: 'files' })).metadata?.resourceVersion,
      (await core.readNamespacedService({ namespace: NS, name: 'files' })).metadata?.resourceVersion]).toEqual(versions)
    expect((await server('files')).metadata.resourceVersion).toBe(s.metadata.resourceVersion)
  })
})
