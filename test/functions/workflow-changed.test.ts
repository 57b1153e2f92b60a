import { describe, expect, it } from 'vitest'
import { createApp } from '../../functions/workflow-changed/index.js'
import { TransientError } from '../../shared/core/errors.js'
import { EmbeddedKube } from '../support/embedded-kube.js'
import { deliver, RESOURCE_ADD, RESOURCE_UPDATE } from '../support/deliver.js'
import { testDeps } from '../support/engine-deps.js'
import { agentOf, workflowOf } from '../support/objects.js'

const diamond = () => workflowOf('wf', [
  { name: 'plan' },
  { name: 'left', dependsOn: ['plan'] },
  { name: 'right', dependsOn: ['plan'] },
  { name: 'join', dependsOn: ['left', 'right'] },
], { parallelism: 2 })

describe('workflow-changed', () => {
  it('starts a new run: run id, phase Running, and only the first step as a Job', async () => {
    const kube = new EmbeddedKube({ workflows: [diamond()], agents: [agentOf('helper')] })
    const res = await deliver(createApp(testDeps(kube)), RESOURCE_ADD, kube.workflow('team', 'wf'))

    expect(res.status).toBe(202)
    const wf = kube.workflow('team', 'wf')
    expect(wf.status?.phase).toBe('Running')
    // The run id starts with the Workflow's uid (the API server's), letters and digits only.
    expect(wf.status?.runId).toMatch(new RegExp(`^${wf.metadata.uid!.replace(/[^a-z0-9]/g, '').slice(0, 8)}-[0-9a-f]{4}$`))
    expect(wf.metadata.annotations?.['purko.io/run-id']).toBe(wf.status?.runId)
    expect(kube.createdJobs).toEqual([`wf-plan-${wf.status?.runId}`])
    expect(wf.status?.stepStatuses).toEqual([expect.objectContaining({ name: 'plan', phase: 'Running' })])
  })

  it('recognises the echo of its own status write and makes no API call', async () => {
    const kube = new EmbeddedKube({ workflows: [diamond()], agents: [agentOf('helper')] })
    const app = createApp(testDeps(kube))
    await deliver(app, RESOURCE_ADD, kube.workflow('team', 'wf'))
    const before = kube.calls

    const res = await deliver(app, RESOURCE_UPDATE, kube.workflow('team', 'wf'))

    expect(res.status).toBe(202)
    expect(kube.calls).toBe(before)
  })

  it('answers 400 to a malformed CloudEvent and to data that is not a Workflow', async () => {
    const app = createApp(testDeps(new EmbeddedKube()))
    const garbage = await app.request('/', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })
    const wrongData = await deliver(app, RESOURCE_UPDATE, { hello: 'world' })

    expect(garbage.status).toBe(400)
    expect(wrongData.status).toBe(400)
  })

  it('answers 503 during an API outage so the Broker redelivers, then succeeds', async () => {
    const kube = new EmbeddedKube({ workflows: [diamond()], agents: [agentOf('helper')] })
      .failNext('getWorkflow', new TransientError('connection refused'))
    const app = createApp(testDeps(kube))

    expect((await deliver(app, RESOURCE_ADD, kube.workflow('team', 'wf'))).status).toBe(503)
    expect((await deliver(app, RESOURCE_ADD, kube.workflow('team', 'wf'))).status).toBe(202)
    expect(kube.createdJobs).toHaveLength(1)
  })

  it('answers 500 to an unexpected failure (a bug), never a downstream status code', async () => {
    const kube = new EmbeddedKube({ workflows: [diamond()], agents: [agentOf('helper')] })
      .failNext('listJobs', new Error('forbidden: RBAC'))
    const res = await deliver(createApp(testDeps(kube)), RESOURCE_ADD, kube.workflow('team', 'wf'))
    expect(res.status).toBe(500)
  })

  it('loses a status race with 409, and the redelivery converges with exactly one Job', async () => {
    const kube = new EmbeddedKube({ workflows: [diamond()], agents: [agentOf('helper')] })
    const app = createApp(testDeps(kube))
    const stale = kube.workflow('team', 'wf')
    kube.annotate('team', 'wf', { note: 'someone else wrote in between' })
    const realGet = kube.getWorkflow.bind(kube)
    kube.getWorkflow = async () => stale // the GET raced with the other writer

    expect((await deliver(app, RESOURCE_ADD, stale)).status).toBe(409)
    kube.getWorkflow = realGet
    expect((await deliver(app, RESOURCE_ADD, stale)).status).toBe(202)
    expect(kube.createdJobs).toHaveLength(1)
    expect(kube.workflow('team', 'wf').status?.phase).toBe('Running')
  })

  it('reports an invalid step graph as a condition and a Kubernetes Event, and answers 202', async () => {
    const cyclic = workflowOf('loop', [{ name: 'a', dependsOn: ['b'] }, { name: 'b', dependsOn: ['a'] }])
    const kube = new EmbeddedKube({ workflows: [cyclic], agents: [agentOf('helper')] })
    const res = await deliver(createApp(testDeps(kube)), RESOURCE_ADD, kube.workflow('team', 'loop'))

    expect(res.status).toBe(202)
    const wf = kube.workflow('team', 'loop')
    expect(wf.status?.phase).toBe('Failed')
    expect(wf.status?.conditions).toContainEqual(expect.objectContaining({ type: 'SpecValid', status: 'False', reason: 'DependencyCycle' }))
    expect(kube.events.map((e) => e.reason)).toContain('InvalidSpec')
    expect(kube.createdJobs).toEqual([])
  })

  it('waits for approval, then starts the step once the approve annotation is set', async () => {
    const wf = workflowOf('gated', [{ name: 'deploy', agentRef: { name: 'careful' } }])
    const kube = new EmbeddedKube({ workflows: [wf], agents: [agentOf('careful', { approval: true })] })
    const app = createApp(testDeps(kube))
    await deliver(app, RESOURCE_ADD, kube.workflow('team', 'gated'))
    expect(kube.workflow('team', 'gated').status?.stepStatuses?.[0]).toMatchObject({
      phase: 'Pending', error: 'Waiting for human approval (set annotation purko.io/approve-deploy=true)',
    })
    expect(kube.createdJobs).toEqual([])

    await deliver(app, RESOURCE_UPDATE, kube.annotate('team', 'gated', { 'purko.io/approve-deploy': 'true' }))

    expect(kube.createdJobs).toHaveLength(1)
    expect(kube.workflow('team', 'gated').status?.stepStatuses?.[0]?.phase).toBe('Running')
  })

  it('cancels a run: deletes its running Jobs and ends Cancelled', async () => {
    const kube = new EmbeddedKube({ workflows: [diamond()], agents: [agentOf('helper')] })
    const app = createApp(testDeps(kube))
    await deliver(app, RESOURCE_ADD, kube.workflow('team', 'wf'))

    await deliver(app, RESOURCE_UPDATE, kube.annotate('team', 'wf', { 'purko.io/cancel': 'true' }))

    const wf = kube.workflow('team', 'wf')
    expect(wf.status?.phase).toBe('Cancelled')
    expect(wf.status?.conditions).toContainEqual(expect.objectContaining({ type: 'Complete', reason: 'UserCancelled' }))
    expect(kube.jobs.size).toBe(0)
  })

  it('reruns with a fresh run id and fresh Jobs when purko.io/rerun changes', async () => {
    const kube = new EmbeddedKube({ workflows: [workflowOf('once', [{ name: 'only' }])], agents: [agentOf('helper')] })
    const app = createApp(testDeps(kube))
    await deliver(app, RESOURCE_ADD, kube.workflow('team', 'once'))
    const firstRun = kube.workflow('team', 'once').status?.runId

    await deliver(app, RESOURCE_UPDATE, kube.annotate('team', 'once', { 'purko.io/rerun': '2026-01-01T01:00:00Z' }))

    const secondRun = kube.workflow('team', 'once').status?.runId
    expect(secondRun).not.toBe(firstRun)
    expect(kube.createdJobs).toEqual([`once-only-${firstRun}`, `once-only-${secondRun}`])
  })
})

describe('metrics', () => {
  it('counts handled events by type and answer on GET /metrics, in the Prometheus text format', async () => {
    const kube = new EmbeddedKube({ workflows: [diamond()], agents: [agentOf('helper')] })
      .failNext('getWorkflow', new TransientError('down'))
    const app = createApp(testDeps(kube))
    await deliver(app, RESOURCE_ADD, kube.workflow('team', 'wf'))
    await deliver(app, RESOURCE_ADD, kube.workflow('team', 'wf'))
    await deliver(app, RESOURCE_UPDATE, { nothing: 'useful' })

    const res = await app.request('/metrics')
    const text = await res.text()

    expect(res.headers.get('content-type')).toContain('text/plain')
    expect(text).toContain('kinetic_events_total{function="function",type="dev.knative.apiserver.resource.add",status="503"} 1')
    expect(text).toContain('kinetic_events_total{function="function",type="dev.knative.apiserver.resource.add",status="202"} 1')
    expect(text).toContain('kinetic_events_total{function="function",type="dev.knative.apiserver.resource.update",status="400"} 1')
    expect(text).toMatch(/kinetic_event_duration_seconds_count\{function="function"\} 3\n/)
  })
})
