import { describe, expect, it } from 'vitest'
import { createApp as workflowChanged } from '../../functions/workflow-changed/index.js'
import { createApp } from '../../functions/step-job-finished/index.js'
import { TransientError } from '../../shared/core/errors.js'
import { EmbeddedKube } from '../support/embedded-kube.js'
import { deliver, RESOURCE_ADD, RESOURCE_UPDATE } from '../support/deliver.js'
import { testDeps } from '../support/engine-deps.js'
import { agentOf, workflowOf } from '../support/objects.js'

async function started(steps = [{ name: 'fetch' }, { name: 'report', dependsOn: ['fetch'], input: { text: 'Count: ${steps.fetch.output.count}' } }]) {
  const kube = new EmbeddedKube({ workflows: [workflowOf('wf', steps)], agents: [agentOf('helper')] })
  await deliver(workflowChanged(testDeps(kube)), RESOURCE_ADD, kube.workflow('team', 'wf'))
  const runId = kube.workflow('team', 'wf').status!.runId!
  return { kube, runId, app: createApp(testDeps(kube)) }
}

describe('step-job-finished', () => {
  it('stores the output, starts the dependent step with it substituted, and records both', async () => {
    const { kube, runId, app } = await started()
    const job = kube.finishJob(`wf-fetch-${runId}`, 'Succeeded', 'working...\nOUTPUT:{"count":3,"note":"say \\"hi\\""}\n')

    expect((await deliver(app, RESOURCE_UPDATE, job)).status).toBe(202)

    expect(kube.configMaps.get('team/wf-outputs')?.data).toEqual({ fetch: '{"count":3,"note":"say \\"hi\\""}' })
    expect(kube.createdJobs).toEqual([`wf-fetch-${runId}`, `wf-report-${runId}`])
    const next = [...kube.jobs.values()].find((j) => j.metadata?.name === `wf-report-${runId}`)!
    const input = next.spec?.template.spec?.containers[0]?.env?.find((e) => e.name === 'STEP_INPUT')?.value
    expect(JSON.parse(input!)).toEqual({ text: 'Count: 3' })
    const wf = kube.workflow('team', 'wf')
    expect(wf.status?.stepStatuses?.map((s) => [s.name, s.phase])).toEqual([['fetch', 'Succeeded'], ['report', 'Running']])
    expect(kube.writes).toEqual([
      `create Job/wf-fetch-${runId}`, 'annotate Workflow/wf', 'status Workflow/wf',
      // The run started: the resync alarm ticks every minute while it is unfinished.
      'create PingSource/resync-alarm',
      // The finished attempt counts on its agent before the Workflow records the result.
      'create ConfigMap/wf-outputs', 'status Agent/helper', `create Job/wf-report-${runId}`, 'status Workflow/wf',
    ])
    expect(kube.agents.get('team/helper')?.status?.metrics).toMatchObject({ totalInvocations: 1, successCount: 1, failureCount: 0 })
  })

  it('does nothing but one GET for a duplicate delivery', async () => {
    const { kube, runId, app } = await started()
    const job = kube.finishJob(`wf-fetch-${runId}`, 'Succeeded', 'OUTPUT:{"count":1}')
    await deliver(app, RESOURCE_UPDATE, job)
    const writes = kube.writes.length
    const calls = kube.calls

    expect((await deliver(app, RESOURCE_UPDATE, job)).status).toBe(202)

    expect(kube.writes.length).toBe(writes)
    expect(kube.calls - calls).toBe(1)
  })

  it('converges when it dies between creating the next Job and recording it', async () => {
    const { kube, runId, app } = await started()
    const job = kube.finishJob(`wf-fetch-${runId}`, 'Succeeded', 'OUTPUT:{"count":1}')
    kube.failNext('patchWorkflowStatus', new TransientError('etcd timeout'))

    expect((await deliver(app, RESOURCE_UPDATE, job)).status).toBe(503)
    expect((await deliver(app, RESOURCE_UPDATE, job)).status).toBe(202) // the Broker's retry

    expect(kube.createdJobs).toEqual([`wf-fetch-${runId}`, `wf-report-${runId}`])
    expect(kube.workflow('team', 'wf').status?.stepStatuses?.map((s) => s.phase)).toEqual(['Succeeded', 'Running'])
  })

  it('ignores Jobs that are not Kinetic step Jobs or have not finished', async () => {
    const { kube, app } = await started()
    const calls = kube.calls
    const foreign = { metadata: { name: 'backup', namespace: 'team', labels: { app: 'db' } }, status: { succeeded: 1 } }
    const running = [...kube.jobs.values()][0]

    expect((await deliver(app, RESOURCE_UPDATE, foreign)).status).toBe(202)
    expect((await deliver(app, RESOURCE_UPDATE, running)).status).toBe(202)
    expect(kube.calls).toBe(calls)
  })

  it('fails the step with a clear reason when its output is over the limit', async () => {
    const { kube, runId, app } = await started([{ name: 'fetch' }])
    const huge = JSON.stringify({ blob: 'x'.repeat(300 * 1024) })
    await deliver(app, RESOURCE_UPDATE, kube.finishJob(`wf-fetch-${runId}`, 'Succeeded', `OUTPUT:${huge}`))

    const wf = kube.workflow('team', 'wf')
    expect(wf.status?.phase).toBe('Failed')
    expect(wf.status?.stepStatuses?.[0]?.error).toMatch(/^OutputTooLarge: step output is \d+ bytes; the limit is 262144 bytes$/)
    expect(kube.configMaps.size).toBe(0)
  })

  it('retries a failed step with a new attempt Job once the backoff has passed', async () => {
    const clock = { now: new Date('2026-01-01T00:00:00Z') }
    const kube = new EmbeddedKube({ workflows: [workflowOf('wf', [{ name: 'flaky', retryPolicy: { maxRetries: 2, backoffSeconds: 10 } }])], agents: [agentOf('helper')] })
    await deliver(workflowChanged(testDeps(kube, clock)), RESOURCE_ADD, kube.workflow('team', 'wf'))
    const runId = kube.workflow('team', 'wf').status!.runId!
    const app = createApp(testDeps(kube, clock))

    await deliver(app, RESOURCE_UPDATE, kube.finishJob(`wf-flaky-${runId}`, 'Failed', 'boom\nOUTPUT:{"error":"upstream 502"}'))
    const waiting = kube.workflow('team', 'wf').status?.stepStatuses?.[0]
    expect(waiting).toMatchObject({ phase: 'Pending', retryCount: 1, error: 'upstream 502', nextAttemptAt: '2026-01-01T00:00:10.000Z' })
    expect(kube.createdJobs).toHaveLength(1)

    clock.now = new Date('2026-01-01T00:00:11Z')
    const { createApp: resyncTick } = await import('../../functions/resync-tick/index.js')
    await deliver(resyncTick(testDeps(kube, clock)), 'dev.knative.sources.ping', { reason: 'resync' })

    expect(kube.createdJobs).toEqual([`wf-flaky-${runId}`, `wf-flaky-${runId}-r1`])
  })
})

describe('two replicas racing', () => {
  it('create each step Job once and never exceed parallelism when they handle different Jobs at once', async () => {
    const steps = [{ name: 'a' }, { name: 'b' }, { name: 'c', dependsOn: ['a'] }, { name: 'd', dependsOn: ['b'] }, { name: 'e' }]
    const kube = new EmbeddedKube({ workflows: [workflowOf('wf', steps, { parallelism: 2 })], agents: [agentOf('helper')] })
    await deliver(workflowChanged(testDeps(kube)), RESOURCE_ADD, kube.workflow('team', 'wf'))
    const runId = kube.workflow('team', 'wf').status!.runId!
    const replicaOne = createApp(testDeps(kube))
    const replicaTwo = createApp(testDeps(kube))
    const a = kube.finishJob(`wf-a-${runId}`, 'Succeeded', 'OUTPUT:{}')
    const b = kube.finishJob(`wf-b-${runId}`, 'Succeeded', 'OUTPUT:{}')

    const [one, two] = await Promise.all([deliver(replicaOne, RESOURCE_UPDATE, a), deliver(replicaTwo, RESOURCE_UPDATE, b)])
    const statuses = [one.status, two.status].sort()
    expect(statuses[0]).toBe(202)
    if (statuses[1] === 409) {
      // The loser's event is redelivered and re-planned from fresh state.
      expect((await deliver(replicaTwo, RESOURCE_UPDATE, one.status === 409 ? a : b)).status).toBe(202)
    }

    const running = kube.workflow('team', 'wf').status!.stepStatuses!.filter((s) => s.phase === 'Running').map((s) => s.name)
    expect(running.length).toBeLessThanOrEqual(2)
    expect(new Set(kube.createdJobs).size).toBe(kube.createdJobs.length)
    expect(running.sort()).toEqual(['c', 'd'])
  })
})

describe('long Workflow names', () => {
  it('advances a Workflow whose name is too long for a label value', async () => {
    const name = `nightly-${'x'.repeat(70)}`
    const kube = new EmbeddedKube({ workflows: [workflowOf(name, [{ name: 'a' }, { name: 'b', dependsOn: ['a'] }])], agents: [agentOf('helper')] })
    await deliver(workflowChanged(testDeps(kube)), RESOURCE_ADD, kube.workflow('team', name))
    const [first] = kube.createdJobs
    expect([...kube.jobs.values()][0]!.metadata!.labels!['purko.io/workflow']!.length).toBeLessThanOrEqual(63)

    await deliver(createApp(testDeps(kube)), RESOURCE_UPDATE, kube.finishJob(first!, 'Succeeded', 'OUTPUT:{}'))

    expect(kube.createdJobs).toHaveLength(2)
    expect(kube.workflow('team', name).status?.stepStatuses?.map((s) => s.phase)).toEqual(['Succeeded', 'Running'])
  })
})

describe('agent memory', () => {
  it('appends _memory_update to <agent>-memory once, and a persistent agent\'s next step recalls it', async () => {
    const steps = [{ name: 'learn', agentRef: { name: 'scout' } }, { name: 'use', agentRef: { name: 'scout' }, dependsOn: ['learn'] }]
    const kube = new EmbeddedKube({ workflows: [workflowOf('wf', steps)], agents: [agentOf('scout', { memory: { behavior: 'persistent' } })] })
    await deliver(workflowChanged(testDeps(kube)), RESOURCE_ADD, kube.workflow('team', 'wf'))
    const runId = kube.workflow('team', 'wf').status!.runId!
    const app = createApp(testDeps(kube))
    const job = kube.finishJob(`wf-learn-${runId}`, 'Succeeded', 'OUTPUT:{"response":"ok","_memory_update":"Task: learn | Result: the cache is cold on Mondays"}')
    kube.failNext('patchWorkflowStatus', new TransientError('timeout'))

    expect((await deliver(app, RESOURCE_UPDATE, job)).status).toBe(503)
    expect((await deliver(app, RESOURCE_UPDATE, job)).status).toBe(202) // redelivered after the crash

    expect(kube.configMaps.get('team/scout-memory')?.data?.summary).toBe('Task: learn | Result: the cache is cold on Mondays')
    const next = [...kube.jobs.values()].find((j) => j.metadata?.name === `wf-use-${runId}`)!
    const env = next.spec?.template.spec?.containers[0]?.env ?? []
    expect(env.find((e) => e.name === 'AGENT_MEMORY')?.value).toBe('Task: learn | Result: the cache is cold on Mondays')
    expect(env.find((e) => e.name === 'MEMORY_TYPE')?.value).toBe('summary')
  })
})
