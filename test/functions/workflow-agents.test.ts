import { describe, expect, it } from 'vitest'
import { createApp as resyncTick } from '../../functions/resync-tick/index.js'
import { createApp as stepJobFinished } from '../../functions/step-job-finished/index.js'
import { createApp as workflowChanged } from '../../functions/workflow-changed/index.js'
import { METRICS_WRITE_TRIES } from '../../shared/agent/record-metrics.js'
import { ConflictError, TransientError } from '../../shared/core/errors.js'
import type { AgentStatus } from '../../shared/schemas/agent.js'
import { EmbeddedKube } from '../support/embedded-kube.js'
import { autonomousAgent, metricsOf, policyOf } from '../fixtures/autonomy.js'
import { deliver, PING, RESOURCE_ADD, RESOURCE_UPDATE } from '../support/deliver.js'
import { testDeps } from '../support/engine-deps.js'
import { agentOf, workflowOf } from '../support/objects.js'

/** The workflow functions and the Agents their steps run as: identity, budget and metrics. */

const usage = (tokensIn: number, tokensOut: number, cost: number) => `OUTPUT:{"response":"ok","_metrics":{"tokens_in":${tokensIn},"tokens_out":${tokensOut},"cost_usd":${cost}}}`

/** Counts the Agent status writes tried, including those that lost the race. */
class CountingKube extends EmbeddedKube {
  statusTries = 0
  override async replaceAgentStatus(namespace: string, name: string, resourceVersion: string, status: AgentStatus) {
    this.statusTries++
    return super.replaceAgentStatus(namespace, name, resourceVersion, status)
  }
}

async function start(kube: EmbeddedKube, name = 'wf') {
  expect((await deliver(workflowChanged(testDeps(kube)), RESOURCE_ADD, kube.workflow('team', name))).status).toBe(202)
  return kube.workflow('team', name).status!.runId!
}

/** Agent `helper` of namespace `shared`, allowing Workflows of `allow` (the annotation's value) when given. */
function sharedAgent(allow?: string) {
  const base = agentOf('helper')
  return { ...base, metadata: { ...base.metadata, namespace: 'shared', ...(allow !== undefined ? { annotations: { 'kinetic.dev/allow-workflows-from': allow } } : {}) } }
}

describe('step Jobs and agent identities', () => {
  it('runs a step as its agent\'s ServiceAccount, without a mounted token', async () => {
    const kube = new EmbeddedKube({ workflows: [workflowOf('wf', [{ name: 's1' }])], agents: [agentOf('helper')] })
    const runId = await start(kube)
    const pod = kube.jobs.get(`team/wf-s1-${runId}`)?.spec?.template.spec
    expect(pod).toMatchObject({ serviceAccountName: 'agent-helper-sa', automountServiceAccountToken: false })
  })

  it('makes a step wait, with one Normal Event (agent-changed is making it), until the agent\'s ServiceAccount exists; then the tick starts it', async () => {
    const kube = new EmbeddedKube({ workflows: [workflowOf('wf', [{ name: 's1' }])], agents: [agentOf('helper')], identities: false })
    await start(kube)
    expect(kube.createdJobs).toEqual([])
    expect(kube.workflow('team', 'wf').status?.stepStatuses?.[0]).toMatchObject({ phase: 'Pending', error: expect.stringContaining('"agent-helper-sa" in namespace "team"') })
    const waits = () => kube.events.filter((e) => e.reason === 'AgentIdentityPending')
    expect(waits()).toHaveLength(1)
    expect(waits()[0]).toMatchObject({ type: 'Normal', involvedObject: { kind: 'Workflow', name: 'wf', fieldPath: 'spec.steps{s1}' } })

    const tick = resyncTick(testDeps(kube))
    expect((await deliver(tick, PING, {})).status).toBe(202)
    expect(kube.createdJobs).toEqual([])
    expect(waits()).toHaveLength(1)

    kube.putAgent(kube.agents.get('team/helper')!) // agent-changed made the identity
    expect((await deliver(tick, PING, {})).status).toBe(202)
    expect(kube.createdJobs).toHaveLength(1)
  })

  it('starts the step when the ServiceAccount exists though agent-changed has not said so in status yet', async () => {
    const kube = new EmbeddedKube({ workflows: [workflowOf('wf', [{ name: 's1' }])], agents: [agentOf('helper')], identities: false })
    kube.serviceAccounts.set('team/agent-helper-sa', { metadata: { name: 'agent-helper-sa', namespace: 'team' } })
    await start(kube)
    expect(kube.createdJobs).toHaveLength(1)
  })

  it('an agent of another namespace that does not allow this one is never used: the step waits saying how to share it, and nothing of the agent reaches a pod or its metrics', async () => {
    const secretive = { ...sharedAgent(), spec: { ...sharedAgent().spec, systemPrompt: 'Internal runbook: rotate keys with ...' } }
    const wf = workflowOf('wf', [{ name: 's1', agentRef: { name: 'helper', namespace: 'shared' } }])
    const kube = new EmbeddedKube({ workflows: [wf], agents: [secretive] })
    kube.serviceAccounts.set('team/agent-helper-sa', { metadata: { name: 'agent-helper-sa', namespace: 'team' } })
    await start(kube)
    expect(kube.createdJobs).toEqual([])
    const step = kube.workflow('team', 'wf').status?.stepStatuses?.[0]
    expect(step).toMatchObject({
      phase: 'Pending',
      error: 'Agent "helper" in namespace shared does not allow Workflows of namespace team (step "s1"): kubectl annotate agent helper -n shared kinetic.dev/allow-workflows-from=team',
    })
    expect(kube.events.filter((e) => e.reason === 'AgentNotShared')).toHaveLength(1)
    expect(kube.agents.get('shared/helper')?.status?.metrics).toBeUndefined()

    // Another namespace listed is not this one; the owner adding this one (or `*`) starts the step at the next tick.
    kube.putAgent({ ...secretive, metadata: { ...secretive.metadata, annotations: { 'kinetic.dev/allow-workflows-from': 'ops, dev' } } })
    expect((await deliver(resyncTick(testDeps(kube)), PING, {})).status).toBe(202)
    expect(kube.createdJobs).toEqual([])
    kube.putAgent({ ...secretive, metadata: { ...secretive.metadata, annotations: { 'kinetic.dev/allow-workflows-from': 'ops, team' } } })
    expect((await deliver(resyncTick(testDeps(kube)), PING, {})).status).toBe(202)
    expect(kube.createdJobs).toHaveLength(1)
  })

  it('`*` shares an agent with every namespace', async () => {
    const wf = workflowOf('wf', [{ name: 's1', agentRef: { name: 'helper', namespace: 'shared' } }])
    const kube = new EmbeddedKube({ workflows: [wf], agents: [sharedAgent('*')] })
    kube.serviceAccounts.set('team/agent-helper-sa', { metadata: { name: 'agent-helper-sa', namespace: 'team' } })
    await start(kube)
    expect(kube.createdJobs).toHaveLength(1)
  })

  it('looks a cross-namespace agent\'s ServiceAccount up in the Workflow\'s namespace, not the agent\'s', async () => {
    const shared = sharedAgent('team')
    const wf = workflowOf('wf', [{ name: 's1', agentRef: { name: 'helper', namespace: 'shared' } }])
    const kube = new EmbeddedKube({ workflows: [wf], agents: [shared] }) // identity made in "shared" only
    await start(kube)
    expect(kube.createdJobs).toEqual([])
    expect(kube.workflow('team', 'wf').status?.stepStatuses?.[0]?.error).toContain('a pod can only use a ServiceAccount of its own namespace')
    // Nothing makes it there by itself: a person has to, so the Event is a Warning.
    expect(kube.events.filter((e) => e.reason === 'AgentIdentityPending')).toEqual([expect.objectContaining({ type: 'Warning' })])

    kube.serviceAccounts.set('team/agent-helper-sa', { metadata: { name: 'agent-helper-sa', namespace: 'team' } })
    expect((await deliver(resyncTick(testDeps(kube)), PING, {})).status).toBe(202)
    expect(kube.createdJobs).toHaveLength(1)
  })
})

describe('budgets', () => {
  it('holds the next step of an agent its own step took over budget, and releases it when the limit is raised', async () => {
    const agent = agentOf('helper')
    agent.spec.guardrails = { costLimitUSD: 1 }
    const kube = new EmbeddedKube({ workflows: [workflowOf('wf', [{ name: 's1' }, { name: 's2', dependsOn: ['s1'] }])], agents: [agent] })
    const runId = await start(kube)
    const job = kube.finishJob(`wf-s1-${runId}`, 'Succeeded', usage(10, 10, 1.5))
    expect((await deliver(stepJobFinished(testDeps(kube)), RESOURCE_UPDATE, job)).status).toBe(202)

    expect(kube.agents.get('team/helper')?.status?.metrics?.totalCostUSD).toBe(1.5)
    expect(kube.createdJobs).toEqual([`wf-s1-${runId}`])
    const s2 = kube.workflow('team', 'wf').status?.stepStatuses?.find((s) => s.name === 's2')
    expect(s2).toMatchObject({ phase: 'Pending', error: expect.stringContaining('Total cost $1.50 exceeds limit $1.00') })
    expect(kube.events.filter((e) => e.reason === 'CostLimitExceeded')).toHaveLength(1)

    const raised = kube.agents.get('team/helper')!
    raised.spec.guardrails = { costLimitUSD: 5 }
    kube.putAgent(raised)
    expect((await deliver(resyncTick(testDeps(kube)), PING, {})).status).toBe(202)
    expect(kube.createdJobs).toEqual([`wf-s1-${runId}`, `wf-s2-${runId}`])
  })
})

describe('agent metrics', () => {
  it('counts a failed attempt that is retried and the retry that succeeds, with tokens, cost and latency', async () => {
    const kube = new EmbeddedKube({ workflows: [workflowOf('wf', [{ name: 's1', retryPolicy: { maxRetries: 1, backoffSeconds: 1 } }])], agents: [agentOf('helper')] })
    const clock = { now: new Date('2026-01-01T00:00:00Z') }
    const deps = testDeps(kube, clock)
    const runId = (await deliver(workflowChanged(deps), RESOURCE_ADD, kube.workflow('team', 'wf')), kube.workflow('team', 'wf').status!.runId!)
    const finished = stepJobFinished(deps)

    clock.now = new Date('2026-01-01T00:00:04Z')
    const failed = kube.finishJob(`wf-s1-${runId}`, 'Failed', 'OUTPUT:{"error":"rate limited","_metrics":{"tokens_in":5,"tokens_out":0,"cost_usd":0.01}}')
    expect((await deliver(finished, RESOURCE_UPDATE, failed)).status).toBe(202)
    expect((await deliver(finished, RESOURCE_UPDATE, failed)).status).toBe(202) // duplicate
    clock.now = new Date('2026-01-01T00:00:10Z')
    expect((await deliver(resyncTick(deps), PING, {})).status).toBe(202) // the retry is due
    clock.now = new Date('2026-01-01T00:00:16Z')
    const retry = kube.finishJob(`wf-s1-${runId}-r1`, 'Succeeded', usage(100, 20, 0.25))
    expect((await deliver(finished, RESOURCE_UPDATE, retry)).status).toBe(202)

    expect(kube.workflow('team', 'wf').status?.phase).toBe('Succeeded')
    const uid = kube.workflow('team', 'wf').metadata.uid
    expect(kube.agents.get('team/helper')?.status).toMatchObject({
      serviceAccountName: 'agent-helper-sa', // another writer's field, kept
      metrics: {
        totalInvocations: 2, successCount: 1, failureCount: 1, consecutiveFailures: 0, consecutiveSuccesses: 1,
        totalTokensUsed: 125, totalCostUSD: 0.26, averageLatencyMs: 5000, successRate: 0.5,
        lastInvocationTime: '2026-01-01T00:00:16.000Z',
        recordedAttempts: [`${uid}/${runId}/s1/0`, `${uid}/${runId}/s1/1`],
      },
    })
  })

  it('counts a cross-namespace agent\'s attempt on that agent, in its own namespace', async () => {
    const shared = sharedAgent('team')
    const local = agentOf('helper') // a same-named agent beside the Workflow, which purko would wrongly update
    const wf = workflowOf('wf', [{ name: 's1', agentRef: { name: 'helper', namespace: 'shared' } }])
    const kube = new EmbeddedKube({ workflows: [wf], agents: [shared, local] })
    const runId = await start(kube)
    const job = kube.finishJob(`wf-s1-${runId}`, 'Succeeded', usage(1, 1, 0))
    expect((await deliver(stepJobFinished(testDeps(kube)), RESOURCE_UPDATE, job)).status).toBe(202)
    expect(kube.agents.get('shared/helper')?.status?.metrics?.totalInvocations).toBe(1)
    expect(kube.agents.get('team/helper')?.status?.metrics).toBeUndefined()
  })

  it('writes the metrics before the Workflow status, so a crash between them loses nothing and counts nothing twice', async () => {
    const kube = new EmbeddedKube({ workflows: [workflowOf('wf', [{ name: 's1' }])], agents: [agentOf('helper')] })
    const runId = await start(kube)
    const job = kube.finishJob(`wf-s1-${runId}`, 'Succeeded', usage(1, 1, 0.5))
    const app = stepJobFinished(testDeps(kube))
    kube.failNext('patchWorkflowStatus', new TransientError('etcd timeout'))
    expect((await deliver(app, RESOURCE_UPDATE, job)).status).toBe(503)
    expect(kube.agents.get('team/helper')?.status?.metrics?.totalInvocations).toBe(1)
    expect((await deliver(app, RESOURCE_UPDATE, job)).status).toBe(202)
    expect(kube.workflow('team', 'wf').status?.phase).toBe('Succeeded')
    expect(kube.agents.get('team/helper')?.status?.metrics).toMatchObject({ totalInvocations: 1, totalCostUSD: 0.5 })
  })

  it('answers 409 after losing the race for the Agent every time, and counts the attempt on redelivery', async () => {
    const kube = new EmbeddedKube({ workflows: [workflowOf('wf', [{ name: 's1' }])], agents: [agentOf('helper')] })
    const runId = await start(kube)
    const job = kube.finishJob(`wf-s1-${runId}`, 'Succeeded', usage(1, 1, 0))
    for (let i = 0; i < METRICS_WRITE_TRIES; i++) kube.failNext('replaceAgentStatus', new ConflictError('the object has been modified'))
    const app = stepJobFinished(testDeps(kube))
    expect((await deliver(app, RESOURCE_UPDATE, job)).status).toBe(409)
    expect(kube.workflow('team', 'wf').status?.phase).toBe('Running')
    expect((await deliver(app, RESOURCE_UPDATE, job)).status).toBe(202)
    expect(kube.agents.get('team/helper')?.status?.metrics?.totalInvocations).toBe(1)
  })

  it('drops the count of an agent deleted meanwhile and still advances the Workflow', async () => {
    const kube = new EmbeddedKube({ workflows: [workflowOf('wf', [{ name: 's1' }])], agents: [agentOf('helper')] })
    const runId = await start(kube)
    const job = kube.finishJob(`wf-s1-${runId}`, 'Succeeded', usage(1, 1, 0))
    // Deleted between the list the plan used and the metrics write: the write loses, the re-read finds nothing.
    const listed = kube.agents.get('team/helper')!
    kube.agents.delete('team/helper')
    kube.listAgents = async () => [structuredClone(listed)]
    kube.failNext('replaceAgentStatus', new ConflictError('modified'))
    expect((await deliver(stepJobFinished(testDeps(kube)), RESOURCE_UPDATE, job)).status).toBe(202)
    expect(kube.workflow('team', 'wf').status?.phase).toBe('Succeeded')
    expect(kube.agents.has('team/helper')).toBe(false)
  })

  it.each([
    ['steps of one Workflow', 1],
    ['steps of different Workflows', 6],
  ])('loses no update when several %s of one agent finish at once in concurrent deliveries', async (_, workflows) => {
    const n = 6
    const names = Array.from({ length: workflows }, (_, w) => `wf${w}`)
    const perWorkflow = n / workflows
    const steps = Array.from({ length: perWorkflow }, (_, i) => ({ name: `s${i}` }))
    const kube = new CountingKube({ workflows: names.map((wf) => workflowOf(wf, steps, { parallelism: perWorkflow })), agents: [agentOf('helper')] })
    const jobs = []
    for (const wf of names) {
      const runId = await start(kube, wf)
      jobs.push(...steps.map((st, i) => kube.finishJob(`${wf}-${st.name}-${runId}`, 'Succeeded', usage(i, 1, 0.5))))
    }
    expect(jobs).toHaveLength(n)
    const app = stepJobFinished(testDeps(kube))

    // Every step's event at the same moment; the Broker redelivers whatever lost a race (409).
    let pending = jobs
    for (let round = 0; pending.length > 0 && round < 20; round++) {
      const answers = await Promise.all(pending.map((job) => deliver(app, RESOURCE_UPDATE, job)))
      expect(answers.every((r) => r.status === 202 || r.status === 409)).toBe(true)
      pending = pending.filter((_, i) => answers[i]!.status === 409)
    }
    expect(pending).toEqual([])

    for (const wf of names) expect(kube.workflow('team', wf).status?.phase).toBe('Succeeded')
    expect(kube.agents.get('team/helper')?.status?.metrics).toMatchObject({
      totalInvocations: n, successCount: n, totalTokensUsed: workflows * ((perWorkflow * (perWorkflow - 1)) / 2 + perWorkflow), totalCostUSD: n * 0.5,
    })
    // Across Workflows the races for the Agent really happened: more writes were tried than landed.
    if (workflows > 1) expect(kube.statusTries).toBeGreaterThan(kube.writes.filter((w) => w === 'status Agent/helper').length)
  })
})

describe('immediate rollback', () => {
  it('demotes an agent at ri on the failed attempt that reaches the consecutive-failure trigger, before the Workflow moves on', async () => {
    const risky = autonomousAgent('helper', { level: 'ri', autonomyLevel: 'full', metrics: metricsOf(7, 2, { consecutiveSuccesses: 0, consecutiveFailures: 2 }) })
    const kube = new EmbeddedKube({ workflows: [workflowOf('wf', [{ name: 's1' }])], agents: [risky], policies: [policyOf('default', 'team', { rollback: { enabled: true } })] })
    const runId = await start(kube)
    const job = kube.finishJob(`wf-s1-${runId}`, 'Failed', 'OUTPUT:{"error":"deleted the wrong branch"}')
    expect((await deliver(stepJobFinished(testDeps(kube)), RESOURCE_UPDATE, job)).status).toBe(202)

    const agent = kube.agents.get('team/helper')!
    expect(agent.status?.metrics).toMatchObject({ consecutiveFailures: 3, failureCount: 3 })
    expect(agent.spec).toMatchObject({ autonomyLevel: 'restricted', shuHaRi: { level: 'shu' } })
    expect(kube.writes.indexOf('patch Agent/helper')).toBeLessThan(kube.writes.lastIndexOf('status Workflow/wf'))
  })

  it('leaves an agent alone when the attempt succeeded', async () => {
    const steady = autonomousAgent('helper', { level: 'ri', autonomyLevel: 'full', metrics: metricsOf(7, 2, { consecutiveSuccesses: 0, consecutiveFailures: 2 }) })
    const kube = new EmbeddedKube({ workflows: [workflowOf('wf', [{ name: 's1' }])], agents: [steady], policies: [policyOf('default', 'team', { rollback: { enabled: true } })] })
    const runId = await start(kube)
    const job = kube.finishJob(`wf-s1-${runId}`, 'Succeeded', usage(1, 1, 0))
    expect((await deliver(stepJobFinished(testDeps(kube)), RESOURCE_UPDATE, job)).status).toBe(202)
    expect(kube.agents.get('team/helper')?.spec.shuHaRi?.level).toBe('ri')
    expect(kube.writes).not.toContain('patch Agent/helper')
  })
})

describe('Prometheus counters', () => {
  const counter = async (app: ReturnType<typeof stepJobFinished>, series: string) => {
    const text = await (await app.request('/metrics')).text()
    return Number(text.split('\n').find((l) => l.startsWith(`${series} `))?.split(' ')[1] ?? 0)
  }

  it('adds each counted attempt once to purko_agent_invocations_total, _tokens_total and _cost_usd_total', async () => {
    const kube = new EmbeddedKube({ workflows: [workflowOf('wf', [{ name: 's1', agentRef: { name: 'counted' } }])], agents: [agentOf('counted')] })
    const runId = await start(kube)
    const app = stepJobFinished(testDeps(kube))
    const who = 'agent="counted",namespace="team"'
    const before = await counter(app, `purko_agent_invocations_total{${who},status="success"}`)
    const job = kube.finishJob(`wf-s1-${runId}`, 'Succeeded', usage(30, 12, 0.125))
    expect((await deliver(app, RESOURCE_UPDATE, job)).status).toBe(202)
    expect((await deliver(app, RESOURCE_UPDATE, job)).status).toBe(202) // a duplicate adds nothing
    expect(await counter(app, `purko_agent_invocations_total{${who},status="success"}`)).toBe(before + 1)
    expect(await counter(app, `purko_agent_tokens_total{${who}}`)).toBe(42)
    expect(await counter(app, `purko_agent_cost_usd_total{${who}}`)).toBe(0.125)
  })
})

