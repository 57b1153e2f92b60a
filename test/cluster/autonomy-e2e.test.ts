// autonomy-tick end to end on a real kube-apiserver: the function's app runs with the
// autonomy-tick ServiceAccount's own token (knative/'s RBAC, nothing more), the CRDs are the
// generated crds/, so the real server's schema validation, pruning and status subresource judge
// every write.
import { join } from 'node:path'
import { beforeAll, expect, it } from 'vitest'
import { createApp } from '../../functions/autonomy-tick/index.js'
import { readRuntimeConfig } from '../../shared/config.js'
import type { EngineDeps } from '../../shared/engine/controller.js'
import { demoteIfTriggered } from '../../shared/autonomy/controller.js'
import { KubeClient } from '../../shared/kube/client.js'
import { silentLogger } from '../../shared/log.js'
import type { Agent } from '../../shared/schemas/agent.js'
import { recordingEvents } from '../fixtures/autonomy.js'
import { loadManifests, ROOT } from '../knative/manifests.js'
import { deliver, PING } from '../support/deliver.js'
import { describeCluster, useControlPlane } from './tier.js'
import { installCrds, readCrds } from '../../local/crds.js'

const NS = 'autonomy-team'
const AGENTS = `/apis/purko.io/v1alpha1/namespaces/${NS}/agents`
const POLICIES = `/apis/purko.io/v1alpha1/namespaces/${NS}/agentautonomypolicies`

describeCluster('autonomy-tick on a real API server, as its own ServiceAccount', () => {
  const cp = useControlPlane()
  let deps: EngineDeps
  let events: ReturnType<typeof recordingEvents>

  const agent = async (name: string) => (await cp.current.admin.get(`${AGENTS}/${name}`)) as unknown as Agent
  /** What the workflow engine does after a step: the agent's metrics, through the status subresource. */
  const recordResults = async (name: string, ok: number, failed: number) => {
    const live = await agent(name)
    const metrics = {
      totalInvocations: ok + failed, successCount: ok, failureCount: failed,
      consecutiveSuccesses: failed > 0 ? 0 : ok, consecutiveFailures: failed, successRate: ok / (ok + failed),
    }
    await cp.current.admin.request('PUT', `${AGENTS}/${name}/status`, { ...live, status: { ...(live.status ?? {}), metrics } })
  }
  const tick = async () => expect((await deliver(createApp(deps), PING, { reason: 'autonomy' })).status).toBe(202)

  beforeAll(async () => {
    const admin = cp.current.admin
    await installCrds(admin, readCrds(join(ROOT, 'crds'), (file) => ['agents.purko.io.yaml', 'agentautonomypolicies.purko.io.yaml'].includes(file)))
    const rbac = loadManifests().filter((m) => ['Namespace', 'ServiceAccount', 'ClusterRole', 'ClusterRoleBinding'].includes(m.kind) && (m.kind === 'Namespace' || m.name.includes('autonomy-tick')))
    for (const m of [...rbac].sort((a, b) => Number(b.kind === 'Namespace') - Number(a.kind === 'Namespace'))) await admin.apply(m.doc)
    await admin.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } })
    const { kubeConfig } = await cp.current.serviceAccountKubeconfig('kinetic-system', 'autonomy-tick')
    events = recordingEvents()
    deps = { kube: new KubeClient(kubeConfig), log: silentLogger, now: () => new Date(), config: readRuntimeConfig({}), events }

    await admin.apply({
      apiVersion: 'purko.io/v1alpha1', kind: 'AgentAutonomyPolicy', metadata: { name: 'default', namespace: NS },
      spec: {
        shuHaRi: { progressionCriteria: { shuToHa: { minimumActionsCompleted: 3, minimumSuccessRate: 0.9, minimumDaysInLevel: 0 }, haToRi: { minimumActionsCompleted: 5, minimumSuccessRate: 0.95, minimumDaysInLevel: 0, incidentFreeStreak: 5 } } },
        rollback: { enabled: true, triggerConditions: { consecutiveFailures: 2, successRateBelow: 0.5 } },
      },
    })
    for (const name of ['learner', 'bystander']) {
      await admin.apply({
        apiVersion: 'purko.io/v1alpha1', kind: 'Agent', metadata: { name, namespace: NS },
        spec: { model: { provider: 'offline', name: 'scripted' }, autonomyLevel: 'restricted', ...(name === 'learner' ? { shuHaRi: {} } : {}) },
      })
    }
  }, 60_000)

  it('adopts, then promotes an agent that meets shu -> ha; the server accepts the spec merge patch and the status', async () => {
    await tick() // adopts: the clock and counters start now
    const adopted = await agent('learner')
    expect(adopted.spec.shuHaRi?.level).toBe('shu')
    expect(adopted.status?.shuHaRi).toMatchObject({ currentLevel: 'shu', levelStart: { invocations: 0 } })

    await recordResults('learner', 4, 0)
    await tick()

    const promoted = await agent('learner')
    expect(promoted.spec.autonomyLevel).toBe('supervised')
    expect(promoted.spec.shuHaRi?.level).toBe('ha')
    expect(promoted.spec.shuHaRi?.promotedAt).toEqual(promoted.status?.shuHaRi?.levelSince)
    // Nothing the planner wrote was pruned by the CRD's schema.
    expect(promoted.status?.shuHaRi).toMatchObject({
      currentLevel: 'ha', readyForPromotion: false, policy: 'default', approvals: [], levelStart: { invocations: 4, successes: 4, failures: 0 },
      promotionProgress: { nextLevel: 'ri', actionsCompleted: 0, actionsRequired: 5, successRateRequired: 0.95, daysInLevel: 0, daysRequired: 0, streakRequired: 5, approvals: 0, approvalsRequired: 0 },
    })
    expect(promoted.status?.metrics?.totalInvocations).toBe(4) // the engine's fields survived the status write
    expect(promoted.status?.conditions?.find((c) => c.type === 'ShuHaRiProgression')).toMatchObject({ status: 'True', reason: 'Promoted' })
    const recorded = (await cp.current.admin.get(`/api/v1/namespaces/${NS}/events`)) as unknown as { items: Array<{ reason: string; involvedObject: { name: string }; message: string }> }
    expect(recorded.items.filter((e) => e.reason === 'Promoted').map((e) => e.involvedObject.name)).toEqual(['learner'])
    expect(events.published.filter((e) => e.type === 'dev.kinetic.agent.promoted')).toHaveLength(1)

    const bystander = await agent('bystander')
    expect(bystander.spec.autonomyLevel).toBe('restricted')
    expect(bystander.status?.shuHaRi).toBeUndefined()
    const policy = (await cp.current.admin.get(`${POLICIES}/default`)) as unknown as { metadata: { generation: number }; status: { observedGeneration: number; agentsEvaluated: number; conditions: Array<{ type: string; status: string; reason: string }> } }
    expect(policy.status).toMatchObject({ observedGeneration: policy.metadata.generation, agentsEvaluated: 1, conditions: [{ type: 'Ready', status: 'True', reason: 'Applied' }] })
  }, 60_000)

  it('a duplicate tick changes nothing', async () => {
    const before = [(await agent('learner')).metadata.resourceVersion, ((await cp.current.admin.get(`${POLICIES}/default`)) as { metadata: { resourceVersion?: string } }).metadata.resourceVersion]
    await tick()
    await tick()
    const after = [(await agent('learner')).metadata.resourceVersion, ((await cp.current.admin.get(`${POLICIES}/default`)) as { metadata: { resourceVersion?: string } }).metadata.resourceVersion]
    expect(after).toEqual(before)
  }, 60_000)

  it('demotes at once on the metrics update that crosses a rollback trigger', async () => {
    await recordResults('learner', 4, 2)
    await demoteIfTriggered(deps, await agent('learner'))
    const demoted = await agent('learner')
    expect(demoted.spec).toMatchObject({ autonomyLevel: 'restricted', shuHaRi: { level: 'shu' } })
    expect(demoted.status?.conditions?.find((c) => c.type === 'ShuHaRiProgression')).toMatchObject({ status: 'False', reason: 'Demoted' })
  }, 60_000)

  it('promotes an agent at shu with 60 successful actions on the first tick after a 50 / 0.95 / 0 days policy is created', async () => {
    const admin = cp.current.admin
    const ns = 'autonomy-veteran'
    const agents = `/apis/purko.io/v1alpha1/namespaces/${ns}/agents`
    await admin.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } })
    await admin.apply({
      apiVersion: 'purko.io/v1alpha1', kind: 'Agent', metadata: { name: 'veteran', namespace: ns },
      spec: { model: { provider: 'offline', name: 'scripted' }, autonomyLevel: 'restricted', shuHaRi: { level: 'shu' } },
    })
    const live = (await admin.get(`${agents}/veteran`)) as unknown as Agent
    const metrics = { totalInvocations: 60, successCount: 60, failureCount: 0, consecutiveSuccesses: 60, consecutiveFailures: 0, successRate: 1 }
    await admin.request('PUT', `${agents}/veteran/status`, { ...live, status: { ...(live.status ?? {}), metrics } })
    await admin.apply({
      apiVersion: 'purko.io/v1alpha1', kind: 'AgentAutonomyPolicy', metadata: { name: 'default', namespace: ns },
      spec: { shuHaRi: { progressionCriteria: { shuToHa: { minimumActionsCompleted: 50, minimumSuccessRate: 0.95, minimumDaysInLevel: 0 } } } },
    })

    await tick()

    const promoted = (await admin.get(`${agents}/veteran`)) as unknown as Agent
    expect(promoted.spec).toMatchObject({ autonomyLevel: 'supervised', shuHaRi: { level: 'ha' } })
    expect(promoted.status?.conditions?.find((c) => c.type === 'ShuHaRiProgression')).toMatchObject({ status: 'True', reason: 'Promoted', message: expect.stringContaining('actions 60 (required 50)') })
  }, 60_000)
})
