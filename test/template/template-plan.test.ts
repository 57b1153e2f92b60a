import { describe, expect, it } from 'vitest'
import type { ChildObject } from '../../shared/kube/port.js'
import type { Workflow, WorkflowStatus } from '../../shared/schemas/workflow.js'
import {
  isEmptyPlan, planTemplate, type TemplateInput, type TemplatePlan,
} from '../../shared/template/plan/template-plan.js'
import { pingSourceName } from '../../shared/template/plan/ping-source.js'
import { fireOfPing, rfc3339, scheduledRun } from '../../shared/template/plan/schedule.js'
import { parseSchedule } from '../../shared/template/plan/cron.js'
import { runName, scheduleSuffix } from '../../shared/template/run-builder.js'
import { workflowOf } from '../support/objects.js'

const SINK = 'http://broker-ingress.knative-eventing.svc.cluster.local/kinetic-system/default'
const CREATED = '2026-03-01T10:04:00Z'

interface TemplateOptions {
  cron?: string
  timezone?: string
  suspend?: boolean
  catchUp?: 'latest' | 'none'
  startingDeadlineSeconds?: number
  successfulRunsHistoryLimit?: number
  failedRunsHistoryLimit?: number
  annotated?: boolean
  status?: WorkflowStatus
  name?: string
}

function template(o: TemplateOptions = {}): Workflow {
  const schedule = o.cron === undefined ? undefined : {
    cron: o.cron,
    ...(o.timezone !== undefined ? { timezone: o.timezone } : {}),
    ...(o.suspend !== undefined ? { suspend: o.suspend } : {}),
    ...(o.catchUp ? { catchUp: o.catchUp } : {}),
    ...(o.startingDeadlineSeconds ? { startingDeadlineSeconds: o.startingDeadlineSeconds } : {}),
  }
  const trigger = {
    ...(schedule ? { schedule } : {}),
    ...(o.successfulRunsHistoryLimit !== undefined ? { successfulRunsHistoryLimit: o.successfulRunsHistoryLimit } : {}),
    ...(o.failedRunsHistoryLimit !== undefined ? { failedRunsHistoryLimit: o.failedRunsHistoryLimit } : {}),
  }
  const wf = workflowOf(o.name ?? 'nightly', [{ name: 'collect', input: { keep: 'me' } }, { name: 'report' }], {
    description: 'Nightly report',
    ...(Object.keys(trigger).length > 0 ? { trigger } : {}),
  })
  wf.metadata.creationTimestamp = CREATED
  if (o.annotated) wf.metadata.annotations = { 'purko.io/template': 'true' }
  if (o.status) wf.status = o.status
  return wf
}

interface RunOptions {
  phase?: string
  created: string
  completed?: string
  scheduled?: string
  trigger?: string
  uid?: string
  template?: Workflow
}

function run(name: string, o: RunOptions): Workflow {
  const t = o.template ?? template({ cron: '*/10 * * * *' })
  const wf = scheduledRun(t, '*/10 * * * *', new Date(o.scheduled ?? o.created))
  wf.metadata.name = name
  wf.metadata.uid = `uid-${name}`
  wf.metadata.creationTimestamp = o.created
  if (o.scheduled === undefined) delete wf.metadata.annotations!['kinetic.dev/scheduled-time']
  if (o.trigger) wf.metadata.annotations!['purko.io/trigger-type'] = o.trigger
  if (o.uid) wf.metadata.ownerReferences = [{ ...wf.metadata.ownerReferences![0]!, uid: o.uid }]
  if (o.phase) wf.status = { phase: o.phase as never, ...(o.completed ? { completionTime: o.completed } : {}) }
  return wf
}

function input(t: Workflow, now: string, extra: Partial<TemplateInput> = {}): TemplateInput {
  return { template: t, runs: [], pingSource: null, sink: SINK, now, ...extra }
}

/** What the API server holds after the shell applies a plan (created runs get a uid and `now` as creation time). */
function applied(before: TemplateInput, plan: TemplatePlan, now = before.now): TemplateInput {
  const deleted = new Set(plan.deleteRuns.map((d) => d.name))
  const runs = [
    ...before.runs.filter((r) => !deleted.has(r.metadata.name ?? '')),
    ...plan.createRuns.map((r) => ({ ...r, metadata: { ...r.metadata, uid: `uid-${r.metadata.name}`, creationTimestamp: now } })),
  ]
  let pingSource = plan.deletePingSource ? null : before.pingSource
  if (plan.applyPingSource) pingSource = { ...plan.applyPingSource, metadata: { ...plan.applyPingSource.metadata, uid: 'uid-ping' } }
  const template = plan.status ? { ...before.template, status: plan.status } : before.template
  const { fired: _fired, ...rest } = before
  return { ...rest, template, runs, pingSource, now }
}

/** Plans, applies, and checks that planning again on the result changes nothing. */
function settle(i: TemplateInput): { plan: TemplatePlan; after: TemplateInput } {
  const plan = planTemplate(i)
  const after = applied(i, plan)
  const again = planTemplate(after)
  expect(isEmptyPlan(again), JSON.stringify(again)).toBe(true)
  expect(again.transitions.filter((t) => t.record)).toEqual([])
  return { plan, after }
}

const fireName = (iso: string, t = 'nightly') => runName(t, 'sched', scheduleSuffix(new Date(iso)))
const condition = (s: WorkflowStatus | null | undefined) => s?.conditions?.find((c) => c.type === 'ScheduleValid')

describe('a valid schedule', () => {
  it('gets its PingSource, a nextRunTime and ScheduleValid True; planning again writes nothing', () => {
    const { plan, after } = settle(input(template({ cron: '*/10 * * * *', timezone: 'Europe/Paris' }), '2026-03-01T10:05:00.000Z'))
    expect(plan.applyPingSource).toEqual({
      apiVersion: 'sources.knative.dev/v1',
      kind: 'PingSource',
      metadata: {
        name: 'nightly-schedule',
        namespace: 'team',
        labels: { 'app.kubernetes.io/managed-by': 'kinetic', 'kinetic.dev/template': 'nightly' },
        ownerReferences: [{ apiVersion: 'purko.io/v1alpha1', kind: 'Workflow', name: 'nightly', uid: 'uid-nightly', controller: true, blockOwnerDeletion: false }],
      },
      spec: {
        schedule: '*/10 * * * *',
        timezone: 'Europe/Paris',
        contentType: 'application/json',
        data: JSON.stringify({ namespace: 'team', name: 'nightly', uid: 'uid-nightly' }),
        ceOverrides: { extensions: { kineticsource: 'schedule' } },
        sink: { uri: SINK },
      },
    })
    expect(plan.createRuns).toEqual([])
    expect(plan.status).toMatchObject({ nextRunTime: '2026-03-01T10:10:00Z', activeRuns: 0 })
    expect(plan.status?.lastScheduleTime).toBeUndefined()
    expect(condition(plan.status)).toMatchObject({ status: 'True', reason: 'Scheduled', observedGeneration: 1, lastTransitionTime: '2026-03-01T10:05:00.000Z' })
    expect(after.pingSource?.metadata?.name).toBe('nightly-schedule')
  })

  it('keeps other status fields (a non-annotated scheduled Workflow also runs itself)', () => {
    const t = template({ cron: '*/10 * * * *', status: { phase: 'Running', runId: 'abc', totalSteps: 2 } })
    const { plan } = settle(input(t, '2026-03-01T10:05:00.000Z'))
    expect(plan.status).toMatchObject({ phase: 'Running', runId: 'abc', totalSteps: 2, nextRunTime: '2026-03-01T10:10:00Z' })
  })

  it('re-applies the PingSource when the cron or zone changes, and not when the API server added fields', () => {
    const first = settle(input(template({ cron: '*/10 * * * *', timezone: 'Europe/Paris' }), '2026-03-01T10:05:00Z')).after
    const defaulted = { ...first, pingSource: { ...first.pingSource!, spec: { ...(first.pingSource!.spec as object), extra: 'default' }, status: { ready: true } } }
    expect(planTemplate(defaulted).applyPingSource).toBeNull()
    const changed = planTemplate({ ...first, template: { ...template({ cron: '0 * * * *', timezone: 'Europe/Paris' }), status: first.template.status } })
    expect((changed.applyPingSource?.spec as { schedule: string }).schedule).toBe('0 * * * *')
    const noZone = planTemplate({ ...first, template: { ...template({ cron: '*/10 * * * *' }), status: first.template.status } })
    expect(noZone.applyPingSource).not.toBeNull()
    expect((noZone.applyPingSource?.spec as { timezone?: string }).timezone).toBeUndefined()
  })

  it('replaces a same-named PingSource that another object owns (delete by uid, then apply)', () => {
    const foreign: ChildObject = {
      apiVersion: 'sources.knative.dev/v1', kind: 'PingSource',
      metadata: { name: 'nightly-schedule', namespace: 'team', uid: 'uid-old', ownerReferences: [{ apiVersion: 'purko.io/v1alpha1', kind: 'Workflow', name: 'nightly', uid: 'uid-previous', controller: true }] },
      spec: {},
    }
    const plan = planTemplate(input(template({ cron: '*/10 * * * *' }), '2026-03-01T10:05:00Z', { pingSource: foreign }))
    expect(plan.deletePingSource).toEqual({ name: 'nightly-schedule', uid: 'uid-old' })
    expect(plan.applyPingSource?.metadata?.name).toBe('nightly-schedule')
  })

  it('without an event sink makes no PingSource and leaves a live one alone', () => {
    const live = settle(input(template({ cron: '*/10 * * * *' }), '2026-03-01T10:05:00Z')).after.pingSource
    const plan = planTemplate(input(template({ cron: '*/10 * * * *' }), '2026-03-01T10:05:00Z', { sink: undefined, pingSource: live }))
    expect(plan.applyPingSource).toBeNull()
    expect(plan.deletePingSource).toBeNull()
  })

  it('a long template name gives a PingSource name of at most 63 characters ending in -schedule', () => {
    const long = 'a'.repeat(60)
    expect(pingSourceName(long)).toHaveLength(63)
    expect(pingSourceName(long)).toMatch(/^a+-[0-9a-f]{5}-schedule$/)
    expect(pingSourceName(`${long}b`)).not.toBe(pingSourceName(long))
    expect(pingSourceName('short')).toBe('short-schedule')
  })
})

describe('suspended, invalid and unscheduled templates', () => {
  it('a suspended schedule has no PingSource (a live one is deleted), no nextRunTime and makes no run for a delivered fire', () => {
    const running = settle(input(template({ cron: '*/10 * * * *' }), '2026-03-01T10:05:00Z')).after
    const suspended = { ...running, template: { ...template({ cron: '*/10 * * * *', suspend: true }), status: running.template.status }, now: '2026-03-01T10:10:00.300Z', fired: { time: '2026-03-01T10:10:00.200Z' } }
    const { plan, after } = settle(suspended)
    expect(plan.deletePingSource).toEqual({ name: 'nightly-schedule', uid: 'uid-ping' })
    expect(plan.createRuns).toEqual([])
    expect(plan.fire).toEqual({ time: '2026-03-01T10:10:00Z', outcome: 'suspended' })
    expect(plan.status?.nextRunTime).toBeUndefined()
    expect(condition(plan.status)).toMatchObject({ status: 'True', reason: 'Suspended' })
    expect(after.template.status?.lastScheduleTime).toBe('2026-03-01T10:10:00Z')
  })

  it.each([
    ['an invalid cron', { cron: 'every 5 minutes' }, 'InvalidSchedule', /field/],
    ['@every', { cron: '@every 5m' }, 'InvalidSchedule', /@every/],
    ['an unknown zone', { cron: '0 2 * * *', timezone: 'Europe/Atlantis' }, 'UnknownTimeZone', /Europe\/Atlantis/],
  ] as const)('%s: ScheduleValid False with its reason, one Warning, no PingSource, no run', (_label, options, reason, message) => {
    const live = settle(input(template({ cron: '*/10 * * * *' }), '2026-03-01T10:05:00Z')).after.pingSource
    const i = input(template(options), '2026-03-01T10:10:00.300Z', { pingSource: live, fired: { time: '2026-03-01T10:10:00Z' } })
    const { plan } = settle(i)
    expect(plan.deletePingSource).toEqual({ name: 'nightly-schedule', uid: 'uid-ping' })
    expect(plan.applyPingSource).toBeNull()
    expect(plan.createRuns).toEqual([])
    expect(plan.fire?.outcome).toBe('invalid')
    expect(condition(plan.status)).toMatchObject({ status: 'False', reason })
    expect(condition(plan.status)?.message).toMatch(message)
    expect(plan.status?.nextRunTime).toBeUndefined()
    expect(plan.transitions).toEqual([expect.objectContaining({ type: 'Warning', reason, record: true })])
  })

  it('a PingSource the API server refused makes the schedule invalid with the server\'s words', () => {
    const plan = planTemplate(input(template({ cron: '0 0 * * 7' }), '2026-03-01T10:05:00Z', { pingSourceRefused: 'spec.schedule: end of range (7) above maximum (6)' }))
    expect(plan.applyPingSource).toBeNull()
    expect(condition(plan.status)).toMatchObject({ status: 'False', reason: 'InvalidSchedule', message: expect.stringContaining('above maximum (6)') })
  })

  it('a template without a schedule has no PingSource and no ScheduleValid condition; a removed schedule takes both away', () => {
    const scheduled = settle(input(template({ cron: '*/10 * * * *', annotated: true }), '2026-03-01T10:05:00Z')).after
    const unscheduled = { ...scheduled, template: { ...template({ annotated: true }), status: scheduled.template.status } }
    const { plan } = settle(unscheduled)
    expect(plan.deletePingSource).toEqual({ name: 'nightly-schedule', uid: 'uid-ping' })
    expect(condition(plan.status)).toBeUndefined()
    expect(plan.status?.conditions).toBeUndefined()
    expect(plan.status?.nextRunTime).toBeUndefined()
  })

  it('a Workflow that is no longer a template loses the PingSource it owned, and nothing else is written', () => {
    const live = settle(input(template({ cron: '*/10 * * * *' }), '2026-03-01T10:05:00Z')).after.pingSource
    const plan = planTemplate(input(template({ status: { phase: 'Succeeded' } }), '2026-03-01T10:06:00Z', { pingSource: live, fired: { time: '2026-03-01T10:06:00Z' } }))
    expect(plan).toMatchObject({ deletePingSource: { name: 'nightly-schedule' }, applyPingSource: null, createRuns: [], deleteRuns: [], status: null, fire: { outcome: 'not-scheduled' } })
  })

  it('a template being deleted plans nothing (its runs and PingSource go with it)', () => {
    const t = template({ cron: '*/10 * * * *' })
    t.metadata.deletionTimestamp = '2026-03-01T10:05:00Z'
    expect(isEmptyPlan(planTemplate(input(t, '2026-03-01T10:30:00Z', { fired: { time: '2026-03-01T10:30:00Z' } })))).toBe(true)
  })
})

describe('delivered fires', () => {
  const t = template({ cron: '*/10 * * * *' })

  it('a delivery creates the run for its fire time with the schedule input, and records lastScheduleTime', () => {
    const { plan, after } = settle(input(t, '2026-03-01T10:10:00.450Z', { fired: { time: '2026-03-01T10:10:00.400Z' } }))
    expect(plan.fire).toEqual({ time: '2026-03-01T10:10:00Z', outcome: 'run' })
    expect(plan.createRuns.map((r) => r.metadata.name)).toEqual([fireName('2026-03-01T10:10:00Z')])
    const created = plan.createRuns[0]!
    expect(created.metadata.annotations).toMatchObject({
      'purko.io/workflow-template': 'nightly', 'purko.io/trigger-type': 'schedule', 'purko.io/trigger-source': '*/10 * * * *',
      'kinetic.dev/scheduled-time': '2026-03-01T10:10:00Z',
    })
    expect(created.spec.steps.map((s) => s.input)).toEqual([
      { schedule: '*/10 * * * *', task: 'Nightly report', timestamp: '2026-03-01T10:10:00Z', trigger: 'schedule' },
      { schedule: '*/10 * * * *', task: 'Nightly report', timestamp: '2026-03-01T10:10:00Z', trigger: 'schedule' },
    ])
    expect(plan.status).toMatchObject({
      lastScheduleTime: '2026-03-01T10:10:00Z', lastTriggerTime: '2026-03-01T10:10:00Z', nextRunTime: '2026-03-01T10:20:00Z', activeRuns: 1,
      recentRuns: [{ name: fireName('2026-03-01T10:10:00Z'), phase: 'Pending', trigger: 'schedule' }],
    })
    expect(plan.transitions).toEqual([expect.objectContaining({ reason: 'RunCreated', record: true, message: expect.stringContaining('10:10:00Z') })])
    // The same ping again (a redelivery, a duplicate): nothing.
    const again = planTemplate({ ...after, fired: { time: '2026-03-01T10:10:00.400Z' }, now: '2026-03-01T10:10:03Z' })
    expect(isEmptyPlan(again)).toBe(true)
    expect(again.fire?.outcome).toBe('duplicate')
  })

  it('an event sent just before its fire time (clock skew within 2 s) stands for that fire', () => {
    const plan = planTemplate(input(t, '2026-03-01T10:10:00Z', { fired: { time: '2026-03-01T10:09:58.500Z' } }))
    expect(plan.fire).toEqual({ time: '2026-03-01T10:10:00Z', outcome: 'run' })
  })

  it('a late delivery of an already pruned run\'s fire does not recreate it', () => {
    const status: WorkflowStatus = { lastScheduleTime: '2026-03-01T10:20:00Z' }
    const plan = planTemplate(input(template({ cron: '*/10 * * * *', status }), '2026-03-01T10:20:40Z', { fired: { time: '2026-03-01T10:10:00.100Z' } }))
    expect(plan.fire).toEqual({ time: '2026-03-01T10:10:00Z', outcome: 'duplicate' })
    expect(plan.createRuns).toEqual([])
  })

  it('a run whose fire the status does not show yet (a lost status write) still counts as handled', () => {
    const existing = run(fireName('2026-03-01T10:10:00Z'), { created: '2026-03-01T10:10:01Z', scheduled: '2026-03-01T10:10:00Z', phase: 'Succeeded', completed: '2026-03-01T10:11:00Z' })
    const { plan } = settle(input(t, '2026-03-01T10:12:00Z', { runs: [existing] }))
    expect(plan.status?.lastScheduleTime).toBe('2026-03-01T10:10:00Z')
    const late = planTemplate({ ...input(template({ cron: '*/10 * * * *', status: plan.status! }), '2026-03-01T10:12:30Z'), fired: { time: '2026-03-01T10:10:00Z' } })
    expect(late.fire?.outcome).toBe('duplicate')
  })

  it('a fire from before the template existed is ignored', () => {
    const plan = planTemplate(input(t, '2026-03-01T10:04:01Z', { fired: { time: '2026-03-01T09:50:00Z' } }))
    expect(plan.fire?.outcome).toBe('before-template')
    expect(plan.createRuns).toEqual([])
  })

  it('a delivery of a later fire does not hide an earlier missed one within the deadline', () => {
    const status: WorkflowStatus = { lastScheduleTime: '2026-03-01T10:00:00Z' }
    const plan = planTemplate(input(template({ cron: '*/10 * * * *', status }), '2026-03-01T10:20:00.300Z', { fired: { time: '2026-03-01T10:20:00.200Z' } }))
    expect(plan.createRuns.map((r) => r.metadata.annotations?.['kinetic.dev/scheduled-time']).sort()).toEqual(['2026-03-01T10:10:00Z', '2026-03-01T10:20:00Z'])
    expect(plan.status?.lastScheduleTime).toBe('2026-03-01T10:20:00Z')
  })
})

describe('catch-up of missed fires', () => {
  const last: WorkflowStatus = { lastScheduleTime: '2026-03-01T10:00:00Z' }

  it('latest (default): one run for the latest missed fire within the deadline; lastScheduleTime passes every missed fire', () => {
    const { plan } = settle(input(template({ cron: '*/10 * * * *', status: last }), '2026-03-01T10:35:00Z'))
    expect(plan.createRuns.map((r) => r.metadata.name)).toEqual([fireName('2026-03-01T10:30:00Z')])
    expect(plan.status?.lastScheduleTime).toBe('2026-03-01T10:30:00Z')
    expect(plan.transitions).toEqual([expect.objectContaining({ reason: 'RunCreated', message: expect.stringContaining('catch-up') })])
  })

  it('latest: a missed fire older than startingDeadlineSeconds starts nothing, with a Warning', () => {
    const { plan } = settle(input(template({ cron: '*/10 * * * *', startingDeadlineSeconds: 120, status: last }), '2026-03-01T10:35:00Z'))
    expect(plan.createRuns).toEqual([])
    expect(plan.status?.lastScheduleTime).toBe('2026-03-01T10:30:00Z')
    expect(plan.transitions).toEqual([expect.objectContaining({ type: 'Warning', reason: 'MissedSchedule', record: true, message: expect.stringContaining('3 fires') })])
  })

  it('the default deadline is an hour', () => {
    const within = planTemplate(input(template({ cron: '0 * * * *', status: { lastScheduleTime: '2026-03-01T08:00:00Z' } }), '2026-03-01T09:59:59Z'))
    expect(within.createRuns.map((r) => r.metadata.annotations?.['kinetic.dev/scheduled-time'])).toEqual(['2026-03-01T09:00:00Z'])
    const outside = planTemplate(input(template({ cron: '0 * * * *', status: { lastScheduleTime: '2026-03-01T08:00:00Z' } }), '2026-03-01T10:00:30Z'))
    expect(outside.createRuns).toEqual([])
  })

  it('none: lastScheduleTime passes the missed fires, no run starts, nothing is recorded', () => {
    const { plan } = settle(input(template({ cron: '*/10 * * * *', catchUp: 'none', status: last }), '2026-03-01T10:35:00Z'))
    expect(plan.createRuns).toEqual([])
    expect(plan.status?.lastScheduleTime).toBe('2026-03-01T10:30:00Z')
    expect(plan.transitions.filter((tr) => tr.record)).toEqual([])
  })

  it('a fire is not missed during its first minute: its delivery may still come, so catch-up leaves it alone', () => {
    const plan = planTemplate(input(template({ cron: '*/10 * * * *', catchUp: 'none', status: { lastScheduleTime: '2026-03-01T10:20:00Z' } }), '2026-03-01T10:30:40Z'))
    expect(plan.createRuns).toEqual([])
    expect(plan.status?.lastScheduleTime).toBe('2026-03-01T10:20:00Z')
    const delivered = planTemplate(input(template({ cron: '*/10 * * * *', catchUp: 'none', status: { lastScheduleTime: '2026-03-01T10:20:00Z' } }), '2026-03-01T10:30:45Z', { fired: { time: '2026-03-01T10:30:00.3Z' } }))
    expect(delivered.createRuns.map((r) => r.metadata.name)).toEqual([fireName('2026-03-01T10:30:00Z')])
  })

  it('a new template counts missed fires from its creation, not from the epoch', () => {
    const { plan } = settle(input(template({ cron: '0 2 * * *' }), '2026-03-01T10:30:00Z'))
    expect(plan.createRuns).toEqual([])
    expect(plan.status?.lastScheduleTime).toBeUndefined()
    const later = planTemplate(input(template({ cron: '*/10 * * * *' }), '2026-03-01T10:21:30Z'))
    expect(later.createRuns.map((r) => r.metadata.annotations?.['kinetic.dev/scheduled-time'])).toEqual(['2026-03-01T10:20:00Z'])
  })

  it('a suspended schedule lets missed fires pass without runs', () => {
    const { plan } = settle(input(template({ cron: '*/10 * * * *', suspend: true, status: last }), '2026-03-01T10:35:00Z'))
    expect(plan.createRuns).toEqual([])
    expect(plan.status?.lastScheduleTime).toBe('2026-03-01T10:30:00Z')
  })
})

describe('history limits', () => {
  const t = template({ annotated: true })
  const at = (minute: number) => `2026-03-01T10:${String(minute).padStart(2, '0')}:00Z`
  const finished = (name: string, phase: string, minute: number) => run(name, { template: t, phase, created: at(minute), completed: at(minute + 1), trigger: 'webhook' })

  it('keeps the 3 newest successful and the newest unsuccessful finished runs by default; running ones are never deleted', () => {
    const runs = [
      finished('s1', 'Succeeded', 1), finished('s2', 'Succeeded', 3), finished('s3', 'Succeeded', 5), finished('s4', 'Succeeded', 7), finished('s5', 'Succeeded', 9),
      finished('f1', 'Failed', 2), finished('c1', 'Cancelled', 4), finished('e1', 'CompletedWithErrors', 6),
      run('r1', { template: t, phase: 'Running', created: at(0) }), run('p1', { template: t, created: at(8) }),
    ]
    const { plan } = settle(input(t, '2026-03-01T11:00:00Z', { runs }))
    expect(plan.deleteRuns).toEqual([
      { name: 's1', uid: 'uid-s1' }, { name: 's2', uid: 'uid-s2' },
      { name: 'f1', uid: 'uid-f1' }, { name: 'c1', uid: 'uid-c1' },
    ])
    expect(plan.status?.activeRuns).toBe(2)
    expect(plan.status?.recentRuns?.map((r) => r.name)).toEqual(['s5', 'p1', 's4', 'e1', 's3', 'r1'])
    expect(plan.transitions.filter((tr) => tr.reason === 'RunDeleted')).toHaveLength(4)
  })

  it('follows successfulRunsHistoryLimit and failedRunsHistoryLimit, 0 included', () => {
    const limited = template({ annotated: true, successfulRunsHistoryLimit: 0, failedRunsHistoryLimit: 2 })
    const runs = [finished('s1', 'Succeeded', 1), finished('f1', 'Failed', 2), finished('f2', 'Failed', 3), finished('f3', 'Failed', 4)]
    expect(planTemplate(input(limited, '2026-03-01T11:00:00Z', { runs })).deleteRuns.map((d) => d.name)).toEqual(['s1', 'f1'])
  })

  it('ignores Workflows with the label that another template (or an older one of this name) owns', () => {
    const runs = [finished('s1', 'Succeeded', 1), finished('s2', 'Succeeded', 2), finished('s3', 'Succeeded', 3), { ...finished('x1', 'Succeeded', 0), metadata: { ...finished('x1', 'Succeeded', 0).metadata, ownerReferences: [{ apiVersion: 'purko.io/v1alpha1', kind: 'Workflow', name: 'nightly', uid: 'uid-other', controller: true }] } }]
    const plan = planTemplate(input(t, '2026-03-01T11:00:00Z', { runs }))
    expect(plan.deleteRuns).toEqual([])
    expect(plan.status?.recentRuns?.map((r) => r.name)).toEqual(['s3', 's2', 's1'])
  })
})

describe('status', () => {
  it('recentRuns lists at most 10 runs, newest first, with phase, trigger, start and completion', () => {
    const t = template({ annotated: true, successfulRunsHistoryLimit: 100 })
    const runs = Array.from({ length: 12 }, (_, i) => {
      const r = run(`r${String(i).padStart(2, '0')}`, { template: t, created: `2026-03-01T10:${String(i).padStart(2, '0')}:00Z`, trigger: i % 2 ? 'manual' : 'webhook' })
      r.status = { phase: 'Succeeded', startTime: `2026-03-01T10:${String(i).padStart(2, '0')}:01Z`, completionTime: `2026-03-01T10:${String(i).padStart(2, '0')}:30Z` }
      return r
    })
    const { plan } = settle(input(t, '2026-03-01T11:00:00Z', { runs: [...runs].reverse() }))
    expect(plan.status?.recentRuns).toHaveLength(10)
    expect(plan.status?.recentRuns?.map((r) => r.name)).toEqual(['r11', 'r10', 'r09', 'r08', 'r07', 'r06', 'r05', 'r04', 'r03', 'r02'])
    expect(plan.status?.recentRuns?.[0]).toEqual({ name: 'r11', phase: 'Succeeded', trigger: 'manual', startTime: '2026-03-01T10:11:01Z', completionTime: '2026-03-01T10:11:30Z' })
    expect(plan.status?.lastTriggerTime).toBe('2026-03-01T10:11:00Z')
    expect(plan.status?.activeRuns).toBe(0)
  })

  it('lastTriggerTime never goes back when runs are pruned', () => {
    const t = template({ annotated: true, status: { lastTriggerTime: '2026-03-01T12:00:00Z' } })
    const plan = planTemplate(input(t, '2026-03-01T12:30:00Z', { runs: [run('old', { template: t, created: '2026-03-01T10:00:00Z' })] }))
    expect(plan.status?.lastTriggerTime).toBe('2026-03-01T12:00:00Z')
  })

  it('a run changing phase updates activeRuns and recentRuns once', () => {
    const t = template({ annotated: true })
    const r = run('r1', { template: t, created: '2026-03-01T10:00:00Z', trigger: 'manual' })
    const first = settle(input(t, '2026-03-01T10:00:05Z', { runs: [r] })).after
    expect(first.template.status?.activeRuns).toBe(1)
    const done = { ...r, status: { phase: 'Succeeded' as const, completionTime: '2026-03-01T10:05:00Z' } }
    const { plan } = settle({ ...first, runs: [done], now: '2026-03-01T10:05:02Z' })
    expect(plan.status?.activeRuns).toBe(0)
    expect(plan.status?.recentRuns).toEqual([{ name: 'r1', phase: 'Succeeded', trigger: 'manual', completionTime: '2026-03-01T10:05:00Z' }])
  })

  it('rfc3339 writes whole seconds in UTC', () => {
    expect(rfc3339(new Date('2026-03-01T10:00:00.999Z'))).toBe('2026-03-01T10:00:00Z')
  })
})

describe('the fire a ping stands for', () => {
  const every2s = (() => {
    const parsed = parseSchedule('*/2 * * * * *')
    if (!parsed.ok) throw new Error(parsed.message)
    return parsed.schedule
  })()
  const at = (iso: string) => new Date(iso).getTime()

  it('is the fire just before the ping, even when the schedule fires more often than the tolerance', () => {
    expect(fireOfPing(every2s, at('2026-03-01T10:00:00.003Z'))?.toISOString()).toBe('2026-03-01T10:00:00.000Z')
    expect(fireOfPing(every2s, at('2026-03-01T10:00:01.400Z'))?.toISOString()).toBe('2026-03-01T10:00:00.000Z')
  })

  it('is the fire just ahead when the sender clock ran a little behind and the previous fire is long past', () => {
    expect(fireOfPing(every2s, at('2026-03-01T10:00:01.700Z'))?.toISOString()).toBe('2026-03-01T10:00:00.000Z')
    const hourly = parseSchedule('0 * * * *')
    if (!hourly.ok) throw new Error(hourly.message)
    expect(fireOfPing(hourly.schedule, at('2026-03-01T10:59:59.200Z'))?.toISOString()).toBe('2026-03-01T11:00:00.000Z')
    expect(fireOfPing(hourly.schedule, at('2026-03-01T10:59:57.000Z'))?.toISOString()).toBe('2026-03-01T10:00:00.000Z')
  })
})
