import { describe, expect, it } from 'vitest'
import { createApp } from '../../functions/schedule-fired/index.js'
import { createApp as resyncTick } from '../../functions/resync-tick/index.js'
import { ConflictError, TransientError } from '../../shared/core/errors.js'
import type { Workflow } from '../../shared/schemas/workflow.js'
import { runName, scheduleSuffix } from '../../shared/template/run-builder.js'
import { ClockedKube } from '../support/clocked-kube.js'
import { deliver, PING } from '../support/deliver.js'
import { testDeps } from '../support/engine-deps.js'
import { workflowOf } from '../support/objects.js'

const SINK = 'http://broker-ingress.knative-eventing.svc.cluster.local/kinetic-system/default'


function scheduled(name: string, schedule: Record<string, unknown>, extra: Record<string, unknown> = {}): Workflow {
  const wf = workflowOf(name, [{ name: 'collect' }], { description: 'Nightly report', trigger: { schedule, ...extra } })
  wf.metadata.annotations = { 'purko.io/template': 'true' }
  wf.metadata.creationTimestamp = '2026-03-01T10:00:00Z'
  return wf
}

function setup(template: Workflow, now = '2026-03-01T10:10:00.300Z') {
  const clock = { now: new Date(now) }
  const kube = new ClockedKube(clock, { workflows: [template] })
  // The API server gave the template its uid: pings name that one.
  template.metadata.uid = kube.workflow('team', template.metadata.name!).metadata.uid
  const base = testDeps(kube, clock)
  const deps = { ...base, config: { ...base.config, eventSink: SINK } }
  return { clock, kube, deps, app: createApp(deps) }
}

const ping = (app: ReturnType<typeof createApp>, data: unknown, time: string, extensions: Record<string, string> = { kineticsource: 'schedule' }) =>
  deliver(app, PING, data, { ...extensions, time })

const fire = (name: string, iso: string) => runName(name, 'sched', scheduleSuffix(new Date(iso)))
const idOf = (wf: Workflow) => ({ namespace: 'team', name: wf.metadata.name!, uid: wf.metadata.uid! })

describe('schedule-fired', () => {
  it('a ping creates the run for its fire time and records lastScheduleTime on the template', async () => {
    const t = scheduled('nightly', { cron: '*/10 * * * *' })
    const { kube, app } = setup(t)
    const res = await ping(app, idOf(t), '2026-03-01T10:10:00.200Z')
    expect(res.status).toBe(202)
    const name = fire('nightly', '2026-03-01T10:10:00Z')
    const run = kube.workflow('team', name)
    expect(run.metadata.annotations).toMatchObject({
      'purko.io/workflow-template': 'nightly', 'purko.io/trigger-type': 'schedule', 'purko.io/trigger-source': '*/10 * * * *',
      'kinetic.dev/scheduled-time': '2026-03-01T10:10:00Z',
    })
    expect(run.metadata.labels).toEqual({ 'kinetic.dev/template': 'nightly' })
    expect(run.spec.steps[0]!.input).toEqual({ schedule: '*/10 * * * *', task: 'Nightly report', timestamp: '2026-03-01T10:10:00Z', trigger: 'schedule' })
    expect(run.spec.trigger).toBeUndefined()
    expect(kube.workflow('team', 'nightly').status).toMatchObject({
      lastScheduleTime: '2026-03-01T10:10:00Z', lastTriggerTime: '2026-03-01T10:10:00Z', nextRunTime: '2026-03-01T10:20:00Z', activeRuns: 1,
      recentRuns: [{ name, phase: 'Pending', trigger: 'schedule' }],
    })
    // Order: PingSource, run, then the template's status.
    expect(kube.writes).toEqual(['apply PingSource/nightly-schedule', `create Workflow/${name}`, 'status Workflow/nightly'])
    expect(kube.events.map((e) => e.reason)).toEqual(['RunCreated'])
  })

  it('a duplicate ping (redelivery, a second adapter) makes nothing', async () => {
    const t = scheduled('nightly', { cron: '*/10 * * * *' })
    const { kube, app } = setup(t)
    await ping(app, idOf(t), '2026-03-01T10:10:00.200Z')
    const writes = kube.writes.length
    expect((await ping(app, idOf(t), '2026-03-01T10:10:00.450Z')).status).toBe(202)
    expect(kube.writes.length).toBe(writes)
    expect([...kube.workflows.keys()].filter((k) => k.includes('-sched-'))).toHaveLength(1)
  })

  it('a late ping for a fire whose run was pruned does not bring it back', async () => {
    const t = scheduled('nightly', { cron: '*/10 * * * *' }, { successfulRunsHistoryLimit: 0 })
    const { kube, app, clock } = setup(t)
    await ping(app, idOf(t), '2026-03-01T10:10:00.200Z')
    const name = fire('nightly', '2026-03-01T10:10:00Z')
    kube.putWorkflow({ ...kube.workflow('team', name), status: { phase: 'Succeeded', completionTime: '2026-03-01T10:11:00Z' } })
    clock.now = new Date('2026-03-01T10:11:30Z')
    // The run's own update reaches the template through workflow-template-changed; a ping does the same reconcile.
    await ping(app, idOf(t), '2026-03-01T10:10:00.900Z')
    expect(kube.workflows.has(`team/${name}`)).toBe(false)
    await ping(app, idOf(t), '2026-03-01T10:10:01Z')
    expect(kube.workflows.has(`team/${name}`)).toBe(false)
    expect(kube.workflow('team', 'nightly').status?.lastScheduleTime).toBe('2026-03-01T10:10:00Z')
  })

  it('a ping for an earlier template of the same name (another uid) is ignored', async () => {
    const t = scheduled('nightly', { cron: '*/10 * * * *' })
    const { kube, app } = setup(t)
    expect((await ping(app, { ...idOf(t), uid: 'uid-of-the-deleted-one' }, '2026-03-01T10:10:00.200Z')).status).toBe(202)
    expect(kube.writes).toEqual([])
  })

  it('a ping for a template that is gone is accepted and does nothing; one no Trigger of ours sends here is refused with 400', async () => {
    const t = scheduled('nightly', { cron: '*/10 * * * *' })
    const { kube, app } = setup(t)
    expect((await ping(app, { namespace: 'team', name: 'gone', uid: 'x' }, '2026-03-01T10:10:00Z')).status).toBe(202)
    const calls = kube.calls
    expect((await ping(app, idOf(t), '2026-03-01T10:10:00Z', { kineticsource: 'resync' })).status).toBe(400)
    expect(kube.calls).toBe(calls)
    expect(kube.writes).toEqual([])
  })

  it.each([
    ['no uid', { namespace: 'team', name: 'nightly' }],
    ['not an object', 'hello'],
    ['an empty name', { namespace: 'team', name: '', uid: 'u' }],
  ])('a ping whose data has %s is refused with 400 (never redelivered)', async (_label, data) => {
    const { app, kube } = setup(scheduled('nightly', { cron: '*/10 * * * *' }))
    expect((await ping(app, data, '2026-03-01T10:10:00Z')).status).toBe(400)
    expect(kube.writes).toEqual([])
  })

  it('an API outage answers 503; a lost status race answers 409 and the redelivery finishes without a second run', async () => {
    const t = scheduled('nightly', { cron: '*/10 * * * *' })
    const { kube, app } = setup(t)
    kube.failNext('getWorkflow', new TransientError('API server unavailable'))
    expect((await ping(app, idOf(t), '2026-03-01T10:10:00.200Z')).status).toBe(503)
    kube.failNext('patchWorkflowStatus', new ConflictError('the object has been modified'))
    expect((await ping(app, idOf(t), '2026-03-01T10:10:00.200Z')).status).toBe(409)
    expect((await ping(app, idOf(t), '2026-03-01T10:10:00.200Z')).status).toBe(202)
    expect(kube.writes.filter((w) => w.startsWith('create Workflow/'))).toEqual([`create Workflow/${fire('nightly', '2026-03-01T10:10:00Z')}`])
    expect(kube.workflow('team', 'nightly').status?.lastScheduleTime).toBe('2026-03-01T10:10:00Z')
  })

  it('a template with an invalid cron gets ScheduleValid False and one Warning Event, no run and no redelivery', async () => {
    const t = scheduled('nightly', { cron: '@every 10m' })
    const { kube, app } = setup(t)
    expect((await ping(app, idOf(t), '2026-03-01T10:10:00Z')).status).toBe(202)
    expect((await ping(app, idOf(t), '2026-03-01T10:20:00Z')).status).toBe(202)
    const condition = kube.workflow('team', 'nightly').status?.conditions?.find((c) => c.type === 'ScheduleValid')
    expect(condition).toMatchObject({ status: 'False', reason: 'InvalidSchedule' })
    expect(kube.events.map((e) => [e.type, e.reason])).toEqual([['Warning', 'InvalidSchedule']])
    expect([...kube.workflows.keys()]).toEqual(['team/nightly'])
  })

  it('a PingSource the API server refuses is reported on the template, not retried forever', async () => {
    const t = scheduled('nightly', { cron: '0 0 * * 7' })
    const { kube, app } = setup(t)
    kube.refuseApply('PingSource', 'team', 'nightly-schedule', 422, 'spec.schedule: end of range (7) above maximum (6)')
    expect((await ping(app, idOf(t), '2026-03-01T10:10:00Z')).status).toBe(202)
    expect(kube.workflow('team', 'nightly').status?.conditions?.find((c) => c.type === 'ScheduleValid'))
      .toMatchObject({ status: 'False', reason: 'InvalidSchedule', message: expect.stringContaining('above maximum (6)') })
  })
})

describe('resync-tick catch-up of schedules', () => {
  it('a fire whose ping never came gets its run at the next tick (catchUp latest), once', async () => {
    const t = scheduled('nightly', { cron: '*/10 * * * *' })
    const { kube, deps, clock } = setup(t, '2026-03-01T10:05:00Z')
    const tick = resyncTick(deps)
    await deliver(tick, PING, {}, { kineticsource: 'resync' })
    expect(kube.child('PingSource', 'team', 'nightly-schedule')).toBeDefined()
    clock.now = new Date('2026-03-01T10:11:05Z') // the 10:10 ping was lost
    await deliver(tick, PING, {}, { kineticsource: 'resync' })
    const name = fire('nightly', '2026-03-01T10:10:00Z')
    expect(kube.workflows.has(`team/${name}`)).toBe(true)
    expect(kube.workflow('team', 'nightly').status?.lastScheduleTime).toBe('2026-03-01T10:10:00Z')
    clock.now = new Date('2026-03-01T10:12:05Z')
    await deliver(tick, PING, {}, { kineticsource: 'resync' })
    expect([...kube.workflows.keys()].filter((k) => k.includes('-sched-'))).toEqual([`team/${name}`])
  })

  it('catchUp none: the tick advances lastScheduleTime and starts nothing', async () => {
    const t = scheduled('nightly', { cron: '*/10 * * * *', catchUp: 'none' })
    const { kube, deps, clock } = setup(t, '2026-03-01T10:05:00Z')
    const tick = resyncTick(deps)
    clock.now = new Date('2026-03-01T10:11:05Z')
    await deliver(tick, PING, {}, { kineticsource: 'resync' })
    expect([...kube.workflows.keys()]).toEqual(['team/nightly'])
    expect(kube.workflow('team', 'nightly').status?.lastScheduleTime).toBe('2026-03-01T10:10:00Z')
  })
})
