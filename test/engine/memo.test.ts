import { describe, expect, it } from 'vitest'
import { createApp as stepJobFinished } from '../../functions/step-job-finished/index.js'
import { createApp as workflowChanged } from '../../functions/workflow-changed/index.js'
import { createEngineMemo } from '../../shared/engine/memo.js'
import type { Agent } from '../../shared/schemas/agent.js'
import { EmbeddedKube } from '../support/embedded-kube.js'
import { countingKube } from '../support/counting-kube.js'
import { deliver, RESOURCE_ADD, RESOURCE_UPDATE } from '../support/deliver.js'
import { testDeps } from '../support/engine-deps.js'
import { agentOf, workflowOf } from '../support/objects.js'

/**
 * A warm instance plans a step of a busy run on what it last wrote (shared/engine/memo.ts). These
 * cases pin what that saves and show the remembered copies never outlive the truth.
 */

const output = (n: number) => `OUTPUT:{"response":"step ${n}","n":${n},"_metrics":{"tokens_in":10,"tokens_out":5,"cost_usd":0.01}}`

function chain(steps: number) {
  const kube = new EmbeddedKube({
    workflows: [workflowOf('chain', Array.from({ length: steps }, (_, i) => ({
      name: `s${i}`, ...(i > 0 ? { dependsOn: [`s${i - 1}`], inputFrom: [{ step: `s${i - 1}`, outputKey: 'n' }] } : {}),
    })))],
    agents: [agentOf('helper')],
  })
  const clock = { now: new Date('2026-01-01T00:00:00Z') }
  const counted = countingKube(kube)
  const deps = { ...testDeps(counted.kube, clock), memo: createEngineMemo() }
  return { kube, clock, counted, deps, app: stepJobFinished(deps) }
}

async function finishLatest(c: ReturnType<typeof chain>, n: number): Promise<Response> {
  c.clock.now = new Date(c.clock.now.getTime() + 1000)
  const job = c.kube.finishJob(c.kube.createdJobs[c.kube.createdJobs.length - 1]!, 'Succeeded', output(n))
  c.counted.reset()
  return deliver(c.app, RESOURCE_UPDATE, job)
}

const stepInputOf = (kube: EmbeddedKube, jobName: string) =>
  JSON.parse([...kube.jobs.values()].find((j) => j.metadata?.name === jobName)?.spec?.template.spec?.containers[0]?.env?.find((e) => e.name === 'STEP_INPUT')?.value ?? 'null')

describe('a warm instance', () => {
  it('advances a chain with six calls a step: the run, the output, the shard, the metrics, the next Job, the status', async () => {
    const c = chain(5)
    await deliver(workflowChanged(c.deps), RESOURCE_ADD, c.kube.workflow('team', 'chain'))
    // The first two steps pay for what the instance has not seen yet (the shard it created).
    await finishLatest(c, 0)
    await finishLatest(c, 1)
    expect((await finishLatest(c, 2)).status).toBe(202)
    expect(Object.fromEntries(c.counted.calls)).toEqual({
      getWorkflow: 1, readStepReport: 1, replaceConfigMap: 1, replaceAgentStatus: 1, createJob: 1, patchWorkflowStatus: 1,
    })
    expect(stepInputOf(c.kube, c.kube.createdJobs[3]!)).toEqual({ n: 2 })
    expect(c.kube.agents.get('team/helper')?.status?.metrics?.totalInvocations).toBe(3)
  })

  it('without a memo reads the Agents, the shards and the configuration on every step', async () => {
    const c = chain(4)
    const deps = testDeps(c.counted.kube, c.clock)
    c.app = stepJobFinished(deps)
    await deliver(workflowChanged(deps), RESOURCE_ADD, c.kube.workflow('team', 'chain'))
    await finishLatest(c, 0)
    await finishLatest(c, 1)
    expect(Object.fromEntries(c.counted.calls)).toEqual({
      getWorkflow: 1, readStepReport: 1, listAgents: 1, listConfigMaps: 1, listLLMProviders: 2, getConfigMap: 1,
      replaceConfigMap: 1, replaceAgentStatus: 1, createJob: 1, patchWorkflowStatus: 1,
    })
  })

  it('carries on when another writer touched the Agent without changing what the step plans on', async () => {
    const c = chain(5)
    await deliver(workflowChanged(c.deps), RESOURCE_ADD, c.kube.workflow('team', 'chain'))
    await finishLatest(c, 0)
    await finishLatest(c, 1)
    const touched = c.kube.agents.get('team/helper')!
    // e.g. a label added by hand: a new resourceVersion (the API server keeps it for a write that changes nothing).
    c.kube.putAgent({ ...touched, metadata: { ...touched.metadata, labels: { ...touched.metadata.labels, team: 'blue' } } })
    expect((await finishLatest(c, 2)).status).toBe(202)
    // The guarded write was refused once, the Agent read again, and the plan stood.
    expect(c.counted.calls.get('replaceAgentStatus')).toBe(2)
    expect(c.counted.calls.get('getAgent')).toBe(1)
    expect(c.kube.createdJobs).toHaveLength(4)
    expect(c.kube.agents.get('team/helper')?.status?.metrics?.totalInvocations).toBe(3)
  })

  it('gives the event back when the Agent changed under it, and the redelivery builds the Job from the new spec', async () => {
    const c = chain(5)
    await deliver(workflowChanged(c.deps), RESOURCE_ADD, c.kube.workflow('team', 'chain'))
    await finishLatest(c, 0)
    await finishLatest(c, 1)
    const agent = c.kube.agents.get('team/helper')!
    const edited: Agent = { ...agent, metadata: { ...agent.metadata, generation: (agent.metadata.generation ?? 1) + 1 }, spec: { ...agent.spec, model: { provider: 'offline', name: 'careful' } } }
    c.kube.putAgent(edited)
    const job = c.kube.finishJob(c.kube.createdJobs[2]!, 'Succeeded', output(2))
    expect((await deliver(c.app, RESOURCE_UPDATE, job)).status).toBe(409)
    expect(c.kube.createdJobs).toHaveLength(3)
    expect((await deliver(c.app, RESOURCE_UPDATE, job)).status).toBe(202)
    const next = [...c.kube.jobs.values()].find((j) => j.metadata?.name === c.kube.createdJobs[3])
    expect(next?.spec?.template.spec?.containers[0]?.env?.find((e) => e.name === 'MODEL_NAME')?.value).toBe('careful')
    expect(c.kube.agents.get('team/helper')?.status?.metrics?.totalInvocations).toBe(3)
  })

  it('lists the shards when another instance stored an output its copy lacks, so a step reads every input', async () => {
    // a and b run side by side; c reads both. Instance 1 started the run (and saw no shard);
    // instance 2 stores a's output; b then fails for good on instance 1, which writes no output
    // of its own, and starts c (continueOnError) with a's output, which only a list shows it.
    const kube = new EmbeddedKube({
      workflows: [workflowOf('fan', [
        { name: 'a' }, { name: 'b' },
        { name: 'c', dependsOn: ['a', 'b'], inputFrom: [{ step: 'a', outputKey: 'n' }, { step: 'b', outputKey: 'n' }] },
      ], { parallelism: 2, failureStrategy: 'continueOnError' })],
      agents: [agentOf('helper')],
    })
    const clock = { now: new Date('2026-01-01T00:00:00Z') }
    const one = { ...testDeps(kube, clock), memo: createEngineMemo() }
    const two = { ...testDeps(kube, clock), memo: createEngineMemo() }
    await deliver(workflowChanged(one), RESOURCE_ADD, kube.workflow('team', 'fan'))
    const [a, b] = kube.createdJobs
    expect((await deliver(stepJobFinished(two), RESOURCE_UPDATE, kube.finishJob(a!, 'Succeeded', output(7)))).status).toBe(202)
    expect((await deliver(stepJobFinished(one), RESOURCE_UPDATE, kube.finishJob(b!, 'Failed', 'OUTPUT:{"error":"no"}'))).status).toBe(202)
    const c = kube.createdJobs[2]!
    expect(stepInputOf(kube, c)).toMatchObject({ n: 7 })
  })
})
