// No function can read a Secret it has no business with, judged by the real API server with
// knative/'s RBAC: the workflow functions hold no Secret right at all (model keys are
// secretKeyRefs the kubelet resolves), llmprovider-changed reads only the platform
// namespace and writes only `kinetic-llm-credentials` where a namespace opted in, and
// mcpserver-changed reads MCP token Secrets only in the agent namespace (or where a namespace
// granted the one Secret).
import { beforeAll, expect, it } from 'vitest'
import type { V1Secret } from '@kubernetes/client-node'
import { syncCredentialCopies } from '../../shared/llm/sync-credential-copies.js'
import { KubeClient } from '../../shared/kube/client.js'
import { LLMProviderSchema } from '../../shared/schemas/llmprovider.js'
import { loadManifests } from '../knative/manifests.js'
import { describeCluster, useControlPlane } from './tier.js'

const SYSTEM_NS = 'kinetic-system'
const PLATFORM = 'purko-system'
const CLOSED = 'iso-closed'
const OPTED = 'iso-opted'
const AGENTS = 'ai-agents'
const b64 = (text: string) => Buffer.from(text).toString('base64')

/** The HTTP status a refused call carried (KubeClient keeps the ApiException as the cause), or 'ok'. */
async function outcome(call: () => Promise<unknown>): Promise<number | 'ok'> {
  try {
    await call()
    return 'ok'
  } catch (err) {
    const code = (err as { cause?: { code?: number } }).cause?.code
    if (typeof code !== 'number') throw err
    return code
  }
}

const secret = (namespace: string, name: string, data: Record<string, string>) =>
  ({ apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace }, data }) satisfies V1Secret

describeCluster('Secrets a function has no business with stay out of its reach (real RBAC)', () => {
  const cp = useControlPlane()
  const as = async (account: string) => new KubeClient((await cp.current.serviceAccountKubeconfig(SYSTEM_NS, account)).kubeConfig)

  beforeAll(async () => {
    const admin = cp.current.admin
    const rbac = loadManifests().filter((m) => ['Namespace', 'ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding'].includes(m.kind))
    for (const m of [...rbac].sort((a, b) => Number(b.kind === 'Namespace') - Number(a.kind === 'Namespace'))) await admin.apply(m.doc)
    await admin.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: CLOSED } })
    // Opted in exactly as knative/rbac/llm-credentials.yaml documents it.
    await admin.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: OPTED, labels: { 'kinetic.dev/llm-credentials': 'enabled' } } })
    await admin.apply({
      apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: 'kinetic-llm-credentials-writer', namespace: OPTED },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'kinetic-llm-credentials-writer' },
      subjects: [{ kind: 'ServiceAccount', name: 'llmprovider-changed', namespace: SYSTEM_NS }],
    })
    await admin.apply(secret(PLATFORM, 'model-key', { 'api-key': b64('sk-platform'), other: b64('not-copied') }))
    await admin.apply(secret(CLOSED, 'private', { token: b64('sk-team') }))
    await admin.apply(secret(OPTED, 'unrelated', { token: b64('sk-unrelated') }))
    await admin.apply(secret(OPTED, 'kinetic-llm-credentials', {}))
    await admin.apply(secret(AGENTS, 'github-token', { token: b64('mcp-agents') }))
  }, 60_000)

  it.each(['workflow-changed', 'step-job-finished', 'resync-tick'])('%s may not read, create or update any Secret (403), not even the copy its steps reference', async (account) => {
    const kube = await as(account)
    const copy = await cp.current.admin.get(`/api/v1/namespaces/${OPTED}/secrets/kinetic-llm-credentials`) as V1Secret
    expect({
      platform: await outcome(() => kube.getSecret(PLATFORM, 'model-key')),
      team: await outcome(() => kube.getSecret(CLOSED, 'private')),
      copy: await outcome(() => kube.getSecret(OPTED, 'kinetic-llm-credentials')),
      create: await outcome(() => kube.createSecret(secret(CLOSED, `by-${account}`, {}))),
      update: await outcome(() => kube.replaceSecret({ ...copy, data: { x: b64('y') } })),
    }).toEqual({ platform: 403, team: 403, copy: 403, create: 403, update: 403 })
    // What it may read instead: whether the namespace opted in.
    expect((await kube.getNamespace(OPTED))?.metadata?.labels?.['kinetic.dev/llm-credentials']).toBe('enabled')
  })

  it('llmprovider-changed reads provider Secrets only in the platform namespace, and no Secret of a namespace that did not opt in', async () => {
    const kube = await as('llmprovider-changed')
    expect({
      platform: await outcome(() => kube.getSecret(PLATFORM, 'model-key')),
      closedRead: await outcome(() => kube.getSecret(CLOSED, 'private')),
      closedCreate: await outcome(() => kube.createSecret(secret(CLOSED, 'kinetic-llm-credentials', {}))),
      optedOther: await outcome(() => kube.getSecret(OPTED, 'unrelated')),
    }).toEqual({ platform: 'ok', closedRead: 403, closedCreate: 403, optedOther: 403 })
  })

  it('llmprovider-changed writes only kinetic-llm-credentials in an opted-in namespace, with only the provider\'s key', async () => {
    const kube = await as('llmprovider-changed')
    const admin = new KubeClient(cp.current.adminKubeConfig())
    const unrelated = await admin.getSecret(OPTED, 'unrelated')
    expect(await outcome(() => kube.replaceSecret({ ...unrelated!, data: { token: b64('overwritten') } }))).toBe(403)

    const provider = LLMProviderSchema.parse({
      apiVersion: 'purko.io/v1alpha1', kind: 'LLMProvider', metadata: { name: 'platform-model', namespace: PLATFORM },
      spec: { type: 'openai', model: 'm', credentials: { secretRef: 'model-key' } },
    })
    const result = await syncCredentialCopies(kube, PLATFORM, [provider])
    expect(result.failed).toEqual([])
    expect(result.written).toContain(OPTED)
    expect(result.written).not.toContain(CLOSED)
    const copy = await admin.getSecret(OPTED, 'kinetic-llm-credentials')
    expect(copy?.data).toEqual({ 'platform-model': b64('sk-platform') })
    expect(await admin.getSecret(CLOSED, 'kinetic-llm-credentials')).toBeNull()
    // Unchanged on the next round: no write at all.
    expect(await syncCredentialCopies(kube, PLATFORM, [provider])).toMatchObject({ written: [], unchanged: expect.arrayContaining([OPTED]) })
  })

  it('mcpserver-changed reads token Secrets in the agent namespace, none in a user namespace until that namespace grants the one Secret as its message says', async () => {
    const kube = await as('mcpserver-changed')
    expect({
      agents: await outcome(() => kube.getSecret(AGENTS, 'github-token')),
      user: await outcome(() => kube.getSecret(CLOSED, 'private')),
      create: await outcome(() => kube.createSecret(secret(AGENTS, 'by-mcpserver-changed', {}))),
    }).toEqual({ agents: 'ok', user: 403, create: 403 })
    expect((await kube.getSecret(AGENTS, 'github-token'))?.data?.token).toBe(b64('mcp-agents'))

    // The grant SecretForbidden names (kubectl create role/rolebinding), made by hand.
    const admin = cp.current.admin
    await admin.apply({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: 'kinetic-mcp-token-private', namespace: CLOSED },
      rules: [{ apiGroups: [''], resources: ['secrets'], resourceNames: ['private'], verbs: ['get'] }] })
    await admin.apply({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: 'kinetic-mcp-token-private', namespace: CLOSED },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'kinetic-mcp-token-private' },
      subjects: [{ kind: 'ServiceAccount', name: 'mcpserver-changed', namespace: SYSTEM_NS }] })
    await admin.apply(secret(CLOSED, 'other', { token: b64('still-closed') }))
    let granted: number | 'ok' = 403
    for (let i = 0; i < 50 && granted !== 'ok'; i++) {
      granted = await outcome(() => kube.getSecret(CLOSED, 'private'))
      if (granted !== 'ok') await new Promise((r) => setTimeout(r, 100))
    }
    expect({ granted, other: await outcome(() => kube.getSecret(CLOSED, 'other')) }).toEqual({ granted: 'ok', other: 403 })
  })
})
