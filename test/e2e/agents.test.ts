import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { DeliveryRecord } from '../../local/knative/broker.js'
import type { KubeObject } from '../../local/knative/kube-http.js'
import { startLocalPlane, type LocalPlane } from '../../local/plane.js'
import { eventually } from '../support/eventually.js'

/**
 * agent-changed on the local plane: an Agent applied through the embedded API server reaches the
 * function through the ApiServerSource, Broker and Trigger of knative/, and its identity and
 * status appear, as `kubectl apply` users see them.
 */

const ROOT = join(import.meta.dirname, '../..')
const NS = 'agents-local'
type Agent = KubeObject & { spec: Record<string, unknown>; status?: { phase?: string; serviceAccountName?: string; conditions?: Array<{ type: string; status: string; reason?: string }> } }

let plane: LocalPlane
let startedMs = 0
const deliveries: DeliveryRecord[] = []

beforeAll(async () => {
  const scratch = mkdtempSync(join(tmpdir(), 'kinetic-agents-'))
  const t0 = Date.now()
  plane = await startLocalPlane({ root: ROOT, kubeconfigPath: join(scratch, 'kubeconfig'), logDir: join(scratch, 'logs'), pingIntervalMs: 60_000 })
  startedMs = Date.now() - t0
  plane.knative.onDelivery((d) => deliveries.push(d))
  await plane.kube.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } })
}, 120_000)

afterAll(async () => {
  await plane?.stop()
}, 30_000)

const agentPath = (name: string) => `/apis/purko.io/v1alpha1/namespaces/${NS}/agents/${name}`

describe('agent-changed on the local plane', () => {
  it('an applied Agent gets its ServiceAccount, Role, RoleBinding and a Ready status through the real routing', async () => {
    const t0 = Date.now()
    await plane.kube.apply({ apiVersion: 'purko.io/v1alpha1', kind: 'Agent', metadata: { name: 'scout', namespace: NS }, spec: { type: 'retriever', model: { provider: 'offline', name: 'scripted' }, memory: { behavior: 'session' } } })
    const ready = await eventually('the Agent Ready', async () => {
      const a = await plane.kube.get<Agent>(agentPath('scout'))
      return a?.status?.phase === 'Ready' && a.status.serviceAccountName ? a : undefined
    })
    console.log(`Agent Ready ${Date.now() - t0} ms after apply (local plane started in ${startedMs} ms)`)
    expect(ready.status?.serviceAccountName).toBe('agent-scout-sa')
    // `offline` names the executor's offline model, which needs no LLMProvider.
    expect(ready.status?.conditions?.find((c) => c.type === 'ModelAvailable')).toMatchObject({ status: 'True', reason: 'OfflineModel' })
    const sa = await plane.kube.get<KubeObject & { automountServiceAccountToken?: boolean }>(`/api/v1/namespaces/${NS}/serviceaccounts/agent-scout-sa`)
    expect(sa?.automountServiceAccountToken).toBe(false)
    expect(sa?.metadata?.labels?.['purko.io/agent-type']).toBe('retriever')
    expect(await plane.kube.get(`/apis/rbac.authorization.k8s.io/v1/namespaces/${NS}/roles/agent-scout-role`)).not.toBeNull()
    expect(await plane.kube.get(`/apis/rbac.authorization.k8s.io/v1/namespaces/${NS}/rolebindings/agent-scout-binding`)).not.toBeNull()
    // The Broker records a delivery once the answer is back, which may be after the status shows.
    const ours = await eventually('the delivery recorded', () => {
      const seen = deliveries.filter((d) => d.trigger === 'agent-changed' && String(d.event.subject ?? '').includes('/agents/scout'))
      return seen.length > 0 ? seen : undefined
    })
    expect(ours.every((d) => d.outcome === 'delivered' && d.status === 202)).toBe(true)
  })

  it('a spec edit updates the identity, and the function settles: nothing more is written', async () => {
    const live = (await plane.kube.get<Agent>(agentPath('scout')))!
    await plane.kube.request('PUT', agentPath('scout'), { ...live, spec: { ...live.spec, type: 'planner' } })
    await eventually('the ServiceAccount relabelled', async () => {
      const sa = await plane.kube.get(`/api/v1/namespaces/${NS}/serviceaccounts/agent-scout-sa`)
      return sa?.metadata?.labels?.['purko.io/agent-type'] === 'planner'
    })
    await eventually('the new generation observed', async () => (await plane.kube.get<Agent & { status?: { observedGeneration?: number } }>(agentPath('scout')))?.status?.observedGeneration === 2)
    const settled = (await plane.kube.get(agentPath('scout')))?.metadata?.resourceVersion
    await new Promise((r) => setTimeout(r, 1500))
    expect((await plane.kube.get(agentPath('scout')))?.metadata?.resourceVersion).toBe(settled)
  })

  it('a hand-deleted Role comes back through the agent-identities source, with its rules', async () => {
    const path = `/apis/rbac.authorization.k8s.io/v1/namespaces/${NS}/roles/agent-scout-role`
    const before = (await plane.kube.get<KubeObject & { rules?: unknown }>(path))!
    await plane.kube.request('DELETE', path)
    const back = await eventually('the Role made again', async () => {
      const role = await plane.kube.get<KubeObject & { rules?: unknown }>(path)
      return role && role.metadata?.uid !== before.metadata?.uid ? role : undefined
    })
    expect(back.rules).toEqual(before.rules)
    expect(back.metadata?.ownerReferences?.[0]).toMatchObject({ kind: 'Agent', name: 'scout' })
    const restored = await eventually('the delete delivered to agent-changed', () =>
      deliveries.find((d) => d.trigger === 'agent-changed-identity' && d.outcome === 'delivered'))
    expect(restored.status).toBe(202)
  })
})
