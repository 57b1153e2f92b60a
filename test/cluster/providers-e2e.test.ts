import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import type { Hono } from 'hono'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { createApp as llmproviderChanged } from '../../functions/llmprovider-changed/index.js'
import { createApp as memoryproviderChanged } from '../../functions/memoryprovider-changed/index.js'
import type { KubeObject } from '../../local/knative/kube-http.js'
import { readRuntimeConfig } from '../../shared/config.js'
import type { EngineDeps } from '../../shared/engine/controller.js'
import { noKineticEvents } from '../../shared/engine/kinetic-events.js'
import { KubeClient } from '../../shared/kube/client.js'
import { silentLogger } from '../../shared/log.js'
import { loadManifests, ROOT } from '../knative/manifests.js'
import { deliver, PING, RESOURCE_ADD } from '../support/deliver.js'
import { kubectl } from './kubectl-run.js'
import { describeCluster, useControlPlane } from './tier.js'
import { installCrds, readCrds } from '../../local/crds.js'

/**
 * llmprovider-changed and memoryprovider-changed against a real kube-apiserver, each as its own
 * ServiceAccount with knative/'s RBAC, probing a real OpenAI-compatible HTTP server on 127.0.0.1.
 */

const PLATFORM = 'purko-system'
const TEAM = 'providers-e2e'
const KEY = 'sk-e2e-right-key-123456'
type Condition = { type: string; status: string; reason?: string; message?: string }
type ProviderObject = KubeObject & { status?: { phase?: string; message?: string; availableModels?: number; discoveredModels?: string[]; conditions?: Condition[] } }

describeCluster('provider functions on a real kube-apiserver, as their own ServiceAccounts', () => {
  const cp = useControlPlane()
  let models: Server
  let endpoint = ''
  let requests = 0
  let llm: Hono
  let memory: Hono
  const admin = () => cp.current.admin
  const provider = (namespace: string, name: string) => admin().get<ProviderObject>(`/apis/purko.io/v1alpha1/namespaces/${namespace}/llmproviders/${name}`)
  const cond = (p: ProviderObject | null, type: string) => p?.status?.conditions?.find((c) => c.type === type)
  /** The function as its own ServiceAccount, its clock `offsetMs` ahead (a check after a backoff). */
  const appAs = async <T>(account: string, make: (deps: EngineDeps) => T, offsetMs = 0): Promise<T> => {
    const { kubeConfig } = await cp.current.serviceAccountKubeconfig('kinetic-system', account)
    return make({ kube: new KubeClient(kubeConfig), log: silentLogger, now: () => new Date(Date.now() + offsetMs), config: readRuntimeConfig({}), events: noKineticEvents })
  }
  const anLLMProvider = (namespace: string, name: string, secretRef: string) => ({
    apiVersion: 'purko.io/v1alpha1', kind: 'LLMProvider', metadata: { name, namespace },
    spec: { type: 'custom', endpoint, model: 'local-large', credentials: { secretRef } },
  })

  beforeAll(async () => {
    // A fake OpenAI-compatible /v1/models that knows one key.
    models = createServer((req, res) => {
      requests++
      if (req.url !== '/v1/models') return void res.writeHead(404).end()
      if (req.headers.authorization !== `Bearer ${KEY}`) return void res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"invalid key"}')
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ object: 'list', data: [{ id: 'local-large' }, { id: 'local-small' }] }))
    })
    await new Promise<void>((resolve) => models.listen(0, '127.0.0.1', resolve))
    endpoint = `http://127.0.0.1:${(models.address() as AddressInfo).port}/v1`

    const a = admin()
    await installCrds(a, readCrds(join(ROOT, 'crds')))
    const rbac = loadManifests().filter((m) => ['Namespace', 'ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding'].includes(m.kind))
    for (const m of [...rbac].sort((x, y) => Number(y.kind === 'Namespace') - Number(x.kind === 'Namespace'))) await a.apply(m.doc)
    await a.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: TEAM } })
    await a.apply({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'right-key', namespace: PLATFORM }, stringData: { 'api-key': KEY } })
    await a.apply({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'wrong-key', namespace: PLATFORM }, stringData: { 'api-key': 'sk-e2e-wrong-key-654321' } })
    await a.apply({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'right-key', namespace: TEAM }, stringData: { 'api-key': KEY } })
    llm = await appAs('llmprovider-changed', llmproviderChanged)
    memory = await appAs('memoryprovider-changed', memoryproviderChanged)
  }, 90_000)

  afterAll(() => new Promise<void>((resolve) => (models ? models.close(() => resolve()) : resolve())))

  it('a provider whose endpoint lists its model with the right key is Ready with the models it lists', async () => {
    await admin().apply(anLLMProvider(PLATFORM, 'local', 'right-key'))
    expect((await deliver(llm, RESOURCE_ADD, await provider(PLATFORM, 'local'))).status).toBe(202)
    const p = await provider(PLATFORM, 'local')
    expect(p?.status).toMatchObject({ phase: 'Ready', message: 'Provider custom ready, 2 models available', availableModels: 2, discoveredModels: ['local-large', 'local-small'] })
    expect(cond(p, 'Reachable')).toMatchObject({ status: 'True', reason: 'ModelsListed' })
    const events = await admin().get<{ items: Array<{ reason?: string; involvedObject?: { name?: string } }> }>(`/api/v1/namespaces/${PLATFORM}/events`)
    expect(events?.items.filter((e) => e.involvedObject?.name === 'local').map((e) => e.reason)).toEqual(['ProviderReady'])
    // The platform provider's key (and only it) reached the opted-in agent namespace, written as the function's own account.
    const copy = await admin().get<KubeObject & { data?: Record<string, string> }>('/api/v1/namespaces/ai-agents/secrets/kinetic-llm-credentials')
    expect(copy?.data).toEqual({ local: Buffer.from(KEY).toString('base64') })
  })

  it('a wrong key is CredentialsInvalid, and neither key appears in the status', async () => {
    await admin().apply(anLLMProvider(PLATFORM, 'wrong', 'wrong-key'))
    await deliver(llm, RESOURCE_ADD, await provider(PLATFORM, 'wrong'))
    const p = await provider(PLATFORM, 'wrong')
    expect(p?.status?.phase).toBe('Error')
    expect(cond(p, 'Ready')).toMatchObject({ status: 'False', reason: 'CredentialsInvalid', message: `${endpoint}/models refused the credentials (HTTP 401)` })
    expect(JSON.stringify(p)).not.toMatch(/sk-e2e-/)
  })

  it('a provider outside the platform namespace whose Secret it may not read says forbidden, and the grant it gives works when run with kubectl', async () => {
    await admin().apply(anLLMProvider(TEAM, 'team', 'right-key'))
    const before = requests
    expect((await deliver(llm, RESOURCE_ADD, await provider(TEAM, 'team'))).status).toBe(202)
    const p = await provider(TEAM, 'team')
    expect(requests).toBe(before)
    expect(p?.status?.phase).toBe('Error')
    const ready = cond(p, 'Ready')
    expect(ready).toMatchObject({ status: 'False', reason: 'SecretForbidden', message: expect.stringMatching(/^Reading Secret providers-e2e\/right-key is forbidden to llmprovider-changed .*; allow it with: kubectl create role /) })
    expect(p?.status?.message).toBe(ready?.message)
    expect(cond(p, 'CredentialsValid')).toMatchObject({ status: 'False', reason: 'SecretForbidden', message: ready?.message })
    const events = await admin().get<{ items: Array<{ type?: string; reason?: string; message?: string; involvedObject?: { name?: string } }> }>(`/api/v1/namespaces/${TEAM}/events`)
    expect(events?.items.filter((e) => e.involvedObject?.name === 'team').map((e) => [e.type, e.reason, e.message])).toEqual([['Warning', 'SecretForbidden', ready?.message]])

    // The grant exactly as the message gives it, run by the real kubectl as an administrator.
    const grant = ready!.message!.split('allow it with: ')[1]!
    for (const command of grant.split(' && ')) {
      const [tool, ...args] = command.split(' ')
      expect(tool).toBe('kubectl')
      expect(kubectl(cp.current.adminKubeconfigPath, args)).toMatchObject({ status: 0, stderr: '' })
    }
    // The next check (after the failure backoff) reads the Secret and probes.
    const later = await appAs('llmprovider-changed', llmproviderChanged, 40 * 60_000)
    expect((await deliver(later, RESOURCE_ADD, await provider(TEAM, 'team'))).status).toBe(202)
    expect((await provider(TEAM, 'team'))?.status).toMatchObject({ phase: 'Ready', availableModels: 2 })
  })

  it('the probe round probes only what is due: right after the checks above, nothing', async () => {
    const before = requests
    expect((await deliver(llm, PING, {})).status).toBe(202)
    expect(requests - before).toBe(0)
  })

  it('memoryprovider-changed counts the memory ConfigMaps of every namespace', async () => {
    for (const [ns, name] of [[TEAM, 'agent-a-memory'], [PLATFORM, 'agent-b-memory']] as const) {
      await admin().apply({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns, labels: { 'purko.io/memory-type': 'summary' } }, data: { summary: 'x' } })
    }
    await admin().apply({ apiVersion: 'purko.io/v1alpha1', kind: 'MemoryProvider', metadata: { name: 'builtin', namespace: PLATFORM }, spec: { type: 'builtin', default: true } })
    const path = `/apis/purko.io/v1alpha1/namespaces/${PLATFORM}/memoryproviders/builtin`
    expect((await deliver(memory, RESOURCE_ADD, await admin().get(path))).status).toBe(202)
    expect((await admin().get<KubeObject & { status?: unknown }>(path))?.status).toMatchObject({ healthy: true, entryCount: 2, lastError: '' })
  })
})
