import { describe, expect, it } from 'vitest'
import { createApp } from '../../functions/workflow-template-changed/index.js'
import { TransientError } from '../../shared/core/errors.js'
import type { Workflow } from '../../shared/schemas/workflow.js'
import { buildRun } from '../../shared/template/run-builder.js'
import { EmbeddedKube } from '../support/embedded-kube.js'
import { ClockedKube } from '../support/clocked-kube.js'
import { deliver, RESOURCE_ADD, RESOURCE_UPDATE } from '../support/deliver.js'
import { testDeps } from '../support/engine-deps.js'
import { workflowOf } from '../support/objects.js'

const SINK = 'http://broker-ingress.knative-eventing.svc.cluster.local/kinetic-system/default'
const RESOURCE_DELETE = 'dev.knative.apiserver.resource.delete'


function template(name: string, trigger?: Record<string, unknown>, annotated = true): Workflow {
  const wf = workflowOf(name, [{ name: 'collect' }], { description: 'Report', ...(trigger ? { trigger } : {}) })
  if (annotated) wf.metadata.annotations = { 'purko.io/template': 'true' }
  wf.metadata.creationTimestamp = '2026-03-01T10:00:00Z'
  return wf
}

function setup(workflows: Workflow[], now = '2026-03-01T10:05:00Z') {
  const clock = { now: new Date(now) }
  const kube = new ClockedKube(clock, { workflows })
  const base = testDeps(kube, clock)
  const deps = { ...base, config: { ...base.config, eventSink: SINK } }
  return { clock, kube, app: createApp(deps) }
}

/** A manual run of a template, as run-control or the CLI would create it. */
function manualRun(kube: EmbeddedKube, t: Workflow, suffix: string, created: string): Workflow {
  const run = buildRun({ template: kube.workflow('team', t.metadata.name!), type: 'manual', source: 'alice', suffix })
  run.metadata.creationTimestamp = created
  return kube.putWorkflow(run)
}

describe('workflow-template-changed', () => {
  it('a scheduled template gets its PingSource and status; the echo of that status write writes nothing', async () => {
    const t = template('nightly', { schedule: { cron: '0 2 * * *', timezone: 'Europe/Paris' } })
    const { kube, app } = setup([t])
    expect((await deliver(app, RESOURCE_ADD, kube.workflow('team', 'nightly'))).status).toBe(202)
    const ping = kube.child('PingSource', 'team', 'nightly-schedule')
    expect(ping?.spec).toMatchObject({ schedule: '0 2 * * *', timezone: 'Europe/Paris', sink: { uri: SINK }, ceOverrides: { extensions: { kineticsource: 'schedule' } } })
    expect(ping?.metadata?.ownerReferences).toEqual([expect.objectContaining({ kind: 'Workflow', name: 'nightly', uid: kube.workflow('team', 'nightly').metadata.uid, controller: true })])
    const status = kube.workflow('team', 'nightly').status
    expect(status).toMatchObject({ nextRunTime: '2026-03-02T01:00:00Z', activeRuns: 0 })
    expect(status?.conditions).toEqual([expect.objectContaining({ type: 'ScheduleValid', status: 'True', reason: 'Scheduled' })])
    const writes = kube.writes.length
    expect((await deliver(app, RESOURCE_UPDATE, kube.workflow('team', 'nightly'))).status).toBe(202)
    expect(kube.writes.length).toBe(writes)
  })

  it('a Workflow that is neither a template nor a run costs no API call', async () => {
    const { kube, app } = setup([workflowOf('plain', [{ name: 'a' }])])
    expect((await deliver(app, RESOURCE_UPDATE, kube.workflow('team', 'plain'))).status).toBe(202)
    expect(kube.calls).toBe(0)
  })

  it('a template\'s deletion needs nothing (its PingSource and runs are owned by it)', async () => {
    const t = template('nightly', { schedule: { cron: '0 2 * * *' } })
    const { kube, app } = setup([t])
    expect((await deliver(app, RESOURCE_DELETE, kube.workflow('team', 'nightly'))).status).toBe(202)
    expect(kube.calls).toBe(0)
  })

  it('suspending a schedule deletes the PingSource; resuming brings it back', async () => {
    const { kube, app } = setup([template('nightly', { schedule: { cron: '0 2 * * *' } })])
    await deliver(app, RESOURCE_ADD, kube.workflow('team', 'nightly'))
    kube.putWorkflow({ ...kube.workflow('team', 'nightly'), spec: { ...kube.workflow('team', 'nightly').spec, trigger: { schedule: { cron: '0 2 * * *', suspend: true } } } })
    await deliver(app, RESOURCE_UPDATE, kube.workflow('team', 'nightly'))
    expect(kube.child('PingSource', 'team', 'nightly-schedule')).toBeUndefined()
    expect(kube.workflow('team', 'nightly').status?.nextRunTime).toBeUndefined()
    kube.putWorkflow({ ...kube.workflow('team', 'nightly'), spec: { ...kube.workflow('team', 'nightly').spec, trigger: { schedule: { cron: '0 3 * * *' } } } })
    await deliver(app, RESOURCE_UPDATE, kube.workflow('team', 'nightly'))
    expect(kube.child('PingSource', 'team', 'nightly-schedule')?.spec).toMatchObject({ schedule: '0 3 * * *' })
  })

  it('an unknown time zone: ScheduleValid False, one Warning Event, no PingSource, 202', async () => {
    const { kube, app } = setup([template('nightly', { schedule: { cron: '0 2 * * *', timezone: 'Moon/Tranquility' } })])
    expect((await deliver(app, RESOURCE_ADD, kube.workflow('team', 'nightly'))).status).toBe(202)
    expect((await deliver(app, RESOURCE_UPDATE, kube.workflow('team', 'nightly'))).status).toBe(202)
    expect(kube.child('PingSource', 'team', 'nightly-schedule')).toBeUndefined()
    expect(kube.workflow('team', 'nightly').status?.conditions?.[0]).toMatchObject({ type: 'ScheduleValid', status: 'False', reason: 'UnknownTimeZone', message: expect.stringContaining('Moon/Tranquility') })
    expect(kube.events.map((e) => [e.type, e.reason, e.involvedObject.name])).toEqual([['Warning', 'UnknownTimeZone', 'nightly']])
  })

  it('a run\'s changes reach its template: activeRuns, recentRuns newest first, lastTriggerTime', async () => {
    const t = template('report')
    const { kube, app } = setup([t])
    const first = manualRun(kube, t, 'aaaaaaaa', '2026-03-01T10:01:00Z')
    const second = manualRun(kube, t, 'bbbbbbbb', '2026-03-01T10:02:00Z')
    await deliver(app, RESOURCE_ADD, first)
    await deliver(app, RESOURCE_ADD, second)
    expect(kube.workflow('team', 'report').status).toMatchObject({
      activeRuns: 2, lastTriggerTime: '2026-03-01T10:02:00Z',
      recentRuns: [{ name: 'report-run-bbbbbbbb', phase: 'Pending', trigger: 'manual' }, { name: 'report-run-aaaaaaaa', phase: 'Pending', trigger: 'manual' }],
    })
    const done = kube.putWorkflow({ ...kube.workflow('team', first.metadata.name!), status: { phase: 'Succeeded', startTime: '2026-03-01T10:01:01Z', completionTime: '2026-03-01T10:03:00Z' } })
    await deliver(app, RESOURCE_UPDATE, done)
    expect(kube.workflow('team', 'report').status?.activeRuns).toBe(1)
    expect(kube.workflow('team', 'report').status?.recentRuns?.[1]).toEqual({ name: 'report-run-aaaaaaaa', phase: 'Succeeded', trigger: 'manual', startTime: '2026-03-01T10:01:01Z', completionTime: '2026-03-01T10:03:00Z' })
  })

  it('a step update of a run that changes nothing its template shows costs one GET and no write', async () => {
    const t = template('report')
    const { kube, app } = setup([t])
    const run = manualRun(kube, t, 'aaaaaaaa', '2026-03-01T10:01:00Z')
    await deliver(app, RESOURCE_ADD, run)
    const running = kube.putWorkflow({ ...kube.workflow('team', run.metadata.name!), status: { phase: 'Running', startTime: '2026-03-01T10:01:01Z' } })
    await deliver(app, RESOURCE_UPDATE, running)
    const stepUpdate = kube.putWorkflow({ ...running, status: { ...running.status, completedSteps: 1 } })
    const calls = kube.calls
    const writes = kube.writes.length
    expect((await deliver(app, RESOURCE_UPDATE, stepUpdate)).status).toBe(202)
    expect(kube.calls - calls).toBe(1)
    expect(kube.writes.length).toBe(writes)
  })

  it('finished runs beyond the history limits are deleted, oldest first, after the status is written', async () => {
    const t = template('report', { successfulRunsHistoryLimit: 1, failedRunsHistoryLimit: 1 })
    const { kube, app } = setup([t])
    const names: string[] = []
    for (const [i, phase] of (['Succeeded', 'Failed', 'Succeeded', 'Cancelled', 'Succeeded'] as const).entries()) {
      const run = manualRun(kube, t, `0000000${i}`, `2026-03-01T10:0${i}:00Z`)
      kube.putWorkflow({ ...run, status: { phase, completionTime: `2026-03-01T10:0${i}:30Z` } })
      names.push(run.metadata.name!)
    }
    kube.writes.length = 0
    await deliver(app, RESOURCE_UPDATE, kube.workflow('team', names[4]!))
    expect([...kube.workflows.keys()].sort()).toEqual(['team/report', `team/${names[3]}`, `team/${names[4]}`])
    expect(kube.writes).toEqual(['status Workflow/report', `delete Workflow/${names[0]}`, `delete Workflow/${names[2]}`, `delete Workflow/${names[1]}`])
    expect(kube.workflow('team', 'report').status?.recentRuns?.map((r) => r.name)).toEqual([names[4], names[3]])
    expect(kube.events.filter((e) => e.reason === 'RunDeleted')).toHaveLength(3)
    // The deletes come back as events: nothing more to do.
    const writes = kube.writes.length
    for (const gone of [names[0]!, names[2]!, names[1]!]) {
      expect((await deliver(app, RESOURCE_DELETE, { metadata: { name: gone, namespace: 'team', annotations: { 'purko.io/workflow-template': 'report' } }, status: { phase: 'Succeeded' } })).status).toBe(202)
    }
    expect(kube.writes.length).toBe(writes)
  })

  it('a Reference-mode event is looked up once and handled the same way', async () => {
    const { kube, app } = setup([template('nightly', { schedule: { cron: '0 2 * * *' } })])
    expect((await deliver(app, RESOURCE_ADD, { kind: 'Workflow', namespace: 'team', name: 'nightly' })).status).toBe(202)
    expect(kube.child('PingSource', 'team', 'nightly-schedule')).toBeDefined()
  })

  it('an API outage answers 503 so the Broker redelivers; a malformed event 400', async () => {
    const { kube, app } = setup([template('nightly', { schedule: { cron: '0 2 * * *' } })])
    kube.failNext('listWorkflowsIn', new TransientError('API server unavailable'))
    expect((await deliver(app, RESOURCE_ADD, kube.workflow('team', 'nightly'))).status).toBe(503)
    expect((await deliver(app, RESOURCE_ADD, { something: 'else' })).status).toBe(400)
  })

  it('a template whose last fire was long ago catches up the latest missed one within the deadline', async () => {
    const t = template('nightly', { schedule: { cron: '*/10 * * * *' } })
    t.status = { lastScheduleTime: '2026-03-01T09:40:00Z' }
    const { kube, app } = setup([t], '2026-03-01T10:05:00Z')
    await deliver(app, RESOURCE_UPDATE, kube.workflow('team', 'nightly'))
    expect([...kube.workflows.keys()].filter((k) => k.includes('-sched-'))).toHaveLength(1)
    expect(kube.workflow('team', 'nightly').status?.lastScheduleTime).toBe('2026-03-01T10:00:00Z')
    expect(kube.events.map((e) => e.reason)).toEqual(['RunCreated'])
  })
})
