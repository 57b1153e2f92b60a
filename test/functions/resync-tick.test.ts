import { describe, expect, it } from 'vitest'
import { createApp as workflowChanged } from '../../functions/workflow-changed/index.js'
import { createApp } from '../../functions/resync-tick/index.js'
import { TransientError } from '../../shared/core/errors.js'
import { EmbeddedKube } from '../support/embedded-kube.js'
import { deliver, PING, RESOURCE_ADD } from '../support/deliver.js'
import { testDeps } from '../support/engine-deps.js'
import { agentOf, workflowOf } from '../support/objects.js'
import { ForbiddenError } from '../../shared/core/errors.js'

describe('resync-tick', () => {
  it('recovers a run whose Job-finished event was lost', async () => {
    const kube = new EmbeddedKube({ workflows: [workflowOf('wf', [{ name: 'a' }, { name: 'b', dependsOn: ['a'] }])], agents: [agentOf('helper')] })
    await deliver(workflowChanged(testDeps(kube)), RESOURCE_ADD, kube.workflow('team', 'wf'))
    const runId = kube.workflow('team', 'wf').status!.runId!
    kube.finishJob(`wf-a-${runId}`, 'Succeeded', 'OUTPUT:{"ok":true}') // its event never arrives

    expect((await deliver(createApp(testDeps(kube)), PING, { reason: 'resync' })).status).toBe(202)

    expect(kube.createdJobs).toEqual([`wf-a-${runId}`, `wf-b-${runId}`])
    expect(kube.configMaps.get('team/wf-outputs')?.data).toEqual({ a: '{"ok":true}' })
  })

  it('starts a Workflow whose add event was lost', async () => {
    const kube = new EmbeddedKube({ workflows: [workflowOf('wf', [{ name: 'a' }])], agents: [agentOf('helper')] })
    await deliver(createApp(testDeps(kube)), PING, {})
    expect(kube.workflow('team', 'wf').status?.phase).toBe('Running')
    expect(kube.createdJobs).toHaveLength(1)
  })

  it('fails a run that exceeded spec.timeout and deletes its Jobs', async () => {
    const clock = { now: new Date('2026-01-01T00:00:00Z') }
    const kube = new EmbeddedKube({ workflows: [workflowOf('wf', [{ name: 'slow' }], { timeout: '10m' })], agents: [agentOf('helper')] })
    await deliver(workflowChanged(testDeps(kube, clock)), RESOURCE_ADD, kube.workflow('team', 'wf'))

    clock.now = new Date('2026-01-01T00:10:05Z')
    await deliver(createApp(testDeps(kube, clock)), PING, {})

    const wf = kube.workflow('team', 'wf')
    expect(wf.status?.phase).toBe('Failed')
    expect(wf.status?.message).toBe('Workflow exceeded timeout of 10m0s (elapsed: 10m5s)')
    expect(kube.jobs.size).toBe(0)
  })

  it('leaves finished runs alone: a tick at rest costs the alarm read and one list call', async () => {
    const kube = new EmbeddedKube({ workflows: [workflowOf('wf', [{ name: 'a', type: 'notification', agentRef: undefined }])] })
    const app = createApp(testDeps(kube))
    await deliver(app, PING, {}) // a type-only step completes without a Job
    expect(kube.workflow('team', 'wf').status?.phase).toBe('Succeeded')
    await deliver(app, PING, {}) // no run is unfinished: the run's alarm goes
    expect(kube.child('PingSource', 'kinetic-system', 'resync-alarm')).toBeUndefined()
    const calls = kube.calls

    await deliver(app, PING, {})

    expect(kube.calls - calls).toBe(2)
  })

  it('costs the alarm read and two lists for any number of runs whose Jobs are all still running, and one more reconcile per run that needs one', async () => {
    const clock = { now: new Date('2026-01-01T00:00:00Z') }
    const kube = new EmbeddedKube({
      workflows: Array.from({ length: 50 }, (_, i) => workflowOf(`run-${i}`, [{ name: 'a' }, { name: 'b', dependsOn: ['a'] }])),
      agents: [agentOf('helper')],
    })
    const started = workflowChanged(testDeps(kube, clock))
    for (let i = 0; i < 50; i++) await deliver(started, RESOURCE_ADD, kube.workflow('team', `run-${i}`))
    const app = createApp(testDeps(kube, clock))
    clock.now = new Date('2026-01-01T00:01:00Z')
    const calls = kube.calls
    const writes = kube.writes.length

    await deliver(app, PING, {})

    expect(kube.calls - calls).toBe(3) // the alarm (already every minute), every Workflow, every step Job
    expect(kube.writes.length).toBe(writes)

    // One run's Job finished and its event was lost: only that run is read and advanced.
    const runId = kube.workflow('team', 'run-7').status!.runId!
    kube.finishJob(`run-7-a-${runId}`, 'Succeeded', 'OUTPUT:{"ok":true}')
    const before = kube.calls
    await deliver(app, PING, {})
    expect(kube.createdJobs).toContain(`run-7-b-${runId}`)
    // The alarm read, the two lists, and that one run's full reconcile from fresh reads (12 calls).
    expect(kube.calls - before).toBe(3 + 12)
  })

  it('lists step Jobs per namespace, and where it may not (a namespace not opted in) reconciles each run instead of skipping it', async () => {
    const clock = { now: new Date('2026-01-01T00:00:00Z') }
    const kube = new EmbeddedKube({ workflows: [workflowOf('wf', [{ name: 'a' }, { name: 'b', dependsOn: ['a'] }])], agents: [agentOf('helper')] })
    await deliver(workflowChanged(testDeps(kube, clock)), RESOURCE_ADD, kube.workflow('team', 'wf'))
    const runId = kube.workflow('team', 'wf').status!.runId!
    kube.finishJob(`wf-a-${runId}`, 'Succeeded', 'OUTPUT:{"ok":true}')
    clock.now = new Date('2026-01-01T00:01:00Z')
    kube.failNext('listJobsLabelled', new ForbiddenError('jobs.batch is forbidden: User "system:serviceaccount:kinetic-system:resync-tick" cannot list resource "jobs" in API group "batch" in the namespace "team"'))

    expect((await deliver(createApp(testDeps(kube, clock)), PING, {})).status).toBe(202)

    // Not taken for quiet: the run was read and advanced (the lost Job event recovered).
    expect(kube.createdJobs).toContain(`wf-b-${runId}`)
  })

  it('keeps going when one Workflow fails, and answers 503 only when it cannot list', async () => {
    const kube = new EmbeddedKube({
      workflows: [workflowOf('one', [{ name: 'a' }]), workflowOf('two', [{ name: 'a' }])],
      agents: [agentOf('helper')],
    }).failNext('listJobs', new TransientError('flaky'))
    expect((await deliver(createApp(testDeps(kube)), PING, {})).status).toBe(202)
    expect(kube.createdJobs).toHaveLength(1)

    kube.failNext('listWorkflows', new TransientError('down'))
    expect((await deliver(createApp(testDeps(kube)), PING, {})).status).toBe(503)
  })
})
