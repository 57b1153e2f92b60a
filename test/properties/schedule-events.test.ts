import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { createApp as resyncTick } from '../../functions/resync-tick/index.js'
import { createApp as scheduleFired } from '../../functions/schedule-fired/index.js'
import { createApp as templateChanged } from '../../functions/workflow-template-changed/index.js'
import { ConflictError } from '../../shared/core/errors.js'
import type { Workflow, WorkflowStatus } from '../../shared/schemas/workflow.js'
import { parseSchedule } from '../../shared/template/plan/cron.js'
import { ClockedKube } from '../support/clocked-kube.js'
import { deliver, PING, RESOURCE_UPDATE } from '../support/deliver.js'
import { testDeps } from '../support/engine-deps.js'
import { workflowOf } from '../support/objects.js'
import { propertyRuns } from '../support/property-runs.js'

/**
 * The system under test is schedule-fired, workflow-template-changed and resync-tick over the
 * embedded API server. A scenario is a schedule, a catch-up policy, a deadline and a history limit,
 * and a timeline: every fire's ping may be dropped, delayed (a little, or past the point where
 * it counts as missed), duplicated and so reordered; resync ticks come at random times; runs
 * finish now and then (their update events may be lost) so the history limit prunes them; a
 * template status write may lose a race (409, redelivered). The properties: never two runs for
 * one fire (a pruned run is never made again), never a run for a fire at or before the
 * lastScheduleTime seen when it was made, every ping that arrived while its fire was still
 * unhandled has its run (and every ping within a minute of its fire), and at every tick the latest missed fire within the deadline has its
 * run (catchUp latest) or no run is started by the tick at all (catchUp none).
 */

/** A fire counts as missed a minute after its time (until then its ping may still come). */
const MISSED_AFTER_MS = 60_000
const START = Date.parse('2026-03-01T10:00:30Z')
const SINK = 'http://broker-ingress.knative-eventing.svc.cluster.local/kinetic-system/default'

interface Ping { fire: number; delays: number[]; jitterMs: number }
interface Scenario {
  cron: '* * * * *' | '*/2 * * * *'
  catchUp: 'latest' | 'none'
  deadlineSeconds: number
  keep: number
  pings: Ping[]
  ticks: number[]
  finishes: { at: number; lost: boolean }[]
  conflicts: number[]
}

const delay = fc.oneof(
  { weight: 6, arbitrary: fc.integer({ min: 0, max: 3_000 }) },
  { weight: 3, arbitrary: fc.integer({ min: 3_000, max: 59_000 }) },
  { weight: 1, arbitrary: fc.integer({ min: 59_000, max: 400_000 }) },
)

const scenario: fc.Arbitrary<Scenario> = fc.record({
  cron: fc.constantFrom('* * * * *' as const, '*/2 * * * *' as const),
  catchUp: fc.constantFrom('latest' as const, 'none' as const),
  deadlineSeconds: fc.constantFrom(30, 90, 300, 3600),
  keep: fc.integer({ min: 0, max: 2 }),
  minutes: fc.integer({ min: 3, max: 20 }),
  seedDelays: fc.array(fc.array(delay, { minLength: 0, maxLength: 3 }), { minLength: 20, maxLength: 20 }),
  jitters: fc.array(fc.integer({ min: 0, max: 499 }), { minLength: 20, maxLength: 20 }),
  ticks: fc.array(fc.integer({ min: 0, max: 20 * 60_000 }), { maxLength: 15 }),
  finishes: fc.array(fc.record({ at: fc.integer({ min: 0, max: 20 * 60_000 }), lost: fc.boolean() }), { maxLength: 15 }),
  conflicts: fc.array(fc.integer({ min: 0, max: 60 }), { maxLength: 5 }),
}).map((r) => {
  const schedule = parseSchedule(r.cron)
  if (!schedule.ok) throw new Error(schedule.message)
  const end = START + r.minutes * 60_000
  const fires = schedule.schedule.firesIn(new Date(START), new Date(end), 100).map((d) => d.getTime())
  return {
    cron: r.cron, catchUp: r.catchUp, deadlineSeconds: r.deadlineSeconds, keep: r.keep,
    // An empty delay list drops the ping; several deliver it several times.
    pings: fires.map((fire, i) => ({ fire, delays: r.seedDelays[i] ?? [], jitterMs: r.jitters[i] ?? 0 })),
    ticks: r.ticks.filter((t) => START + t <= end + 400_000).map((t) => START + t),
    finishes: r.finishes.map((f) => ({ ...f, at: START + f.at })),
    conflicts: r.conflicts,
  }
})

type Action =
  | { at: number; kind: 'ping'; fire: number; eventTime: number }
  | { at: number; kind: 'tick' }
  | { at: number; kind: 'finish'; lost: boolean }

function template(s: Scenario): Workflow {
  const wf = workflowOf('nightly', [{ name: 'collect' }], {
    description: 'Report',
    trigger: { schedule: { cron: s.cron, catchUp: s.catchUp, startingDeadlineSeconds: s.deadlineSeconds }, successfulRunsHistoryLimit: s.keep },
  })
  wf.metadata.annotations = { 'purko.io/template': 'true' }
  wf.metadata.creationTimestamp = new Date(START - 30_000).toISOString()
  return wf
}

/** The template's status write loses one race when armed (only the template's; runs' writes are left alone). */
class RacyKube extends ClockedKube {
  armed = false
  conflicted = false

  override async patchWorkflowStatus(namespace: string, name: string, resourceVersion: string, status: WorkflowStatus): Promise<Workflow> {
    if (this.armed && name === 'nightly') {
      this.armed = false
      this.conflicted = true
      throw new ConflictError('the object has been modified')
    }
    return super.patchWorkflowStatus(namespace, name, resourceVersion, status)
  }
}

const scheduledOf = (wf: Workflow) => wf.metadata.annotations?.['kinetic.dev/scheduled-time']
const ms = (iso: string | undefined) => (iso === undefined ? -Infinity : Date.parse(iso))

async function play(s: Scenario): Promise<void> {
  const clock = { now: new Date(START) }
  const kube = new RacyKube(clock, { workflows: [template(s)] })
  const base = testDeps(kube, clock)
  const deps = { ...base, config: { ...base.config, eventSink: SINK } }
  const apps = { ping: scheduleFired(deps), changed: templateChanged(deps), tick: resyncTick(deps) }
  const schedule = parseSchedule(s.cron)
  if (!schedule.ok) throw new Error(schedule.message)

  const actions: Action[] = [
    ...s.pings.flatMap((p) => p.delays.map((d) => ({ at: p.fire + p.jitterMs + d, kind: 'ping' as const, fire: p.fire, eventTime: p.fire + p.jitterMs }))),
    ...s.ticks.map((at) => ({ at, kind: 'tick' as const })),
    ...s.finishes.map((f) => ({ at: f.at, kind: 'finish' as const, lost: f.lost })),
  ].sort((a, b) => a.at - b.at)
  const conflictAt = new Set(s.conflicts)

  /** Every run ever created, by name, with the lastScheduleTime seen just before it was made. */
  const created = new Map<string, number>()
  const createdFires = new Set<number>()
  const lastSchedule = () => ms(kube.workflow('team', 'nightly').status?.lastScheduleTime)
  const observe = (before: number) => {
    for (const wf of kube.workflows.values()) {
      const name = wf.metadata.name!
      const fire = scheduledOf(wf)
      if (fire === undefined || created.has(name)) continue
      created.set(name, before)
      createdFires.add(ms(fire))
    }
  }
  let lastSeen = -Infinity

  for (const [i, action] of actions.entries()) {
    clock.now = new Date(Math.max(clock.now.getTime(), action.at))
    kube.armed = conflictAt.has(i)
    kube.conflicted = false
    const before = lastSchedule()
    expect(before).toBeGreaterThanOrEqual(lastSeen) // lastScheduleTime never goes back
    lastSeen = before
    const createdBefore = created.size
    if (action.kind === 'ping') {
      const t = kube.workflow('team', 'nightly')
      const data = { namespace: 'team', name: 'nightly', uid: t.metadata.uid }
      let res = await deliver(apps.ping, PING, data, { kineticsource: 'schedule', time: new Date(action.eventTime).toISOString() })
      if (res.status === 409) res = await deliver(apps.ping, PING, data, { kineticsource: 'schedule', time: new Date(action.eventTime).toISOString() })
      expect(res.status).toBe(202)
      observe(before)
      // A ping that arrived while its fire was unhandled has its run.
      if (action.fire > before) expect(createdFires.has(action.fire)).toBe(true)
      // A ping within a minute of its fire is never beaten by catch-up (which, with catchUp none, would lose it).
      if (action.at - action.fire < MISSED_AFTER_MS) expect(createdFires.has(action.fire)).toBe(true)
    } else if (action.kind === 'tick') {
      const res = await deliver(apps.tick, PING, {}, { kineticsource: 'resync' })
      expect(res.status).toBe(202) // a lost race is logged and counted; the next tick redoes it
      observe(before)
      const missed = schedule.schedule.latestAtOrBefore(new Date(clock.now.getTime() - MISSED_AFTER_MS))?.getTime()
      const floor = Math.max(before, START - 30_000)
      if (s.catchUp === 'none') {
        expect(created.size).toBe(createdBefore)
      } else if (!kube.conflicted && missed !== undefined && missed > floor && clock.now.getTime() - missed <= s.deadlineSeconds * 1000) {
        expect(createdFires.has(missed)).toBe(true)
      }
    } else {
      // The oldest unfinished run finishes; its update event may be lost.
      const open = [...kube.workflows.values()]
        .filter((wf) => scheduledOf(wf) !== undefined && !['Succeeded', 'Failed', 'Cancelled', 'CompletedWithErrors'].includes(wf.status?.phase ?? ''))
        .sort((a, b) => ms(scheduledOf(a)) - ms(scheduledOf(b)))
      const run = open[0]
      if (run) {
        const done = kube.putWorkflow({ ...run, status: { ...(run.status ?? {}), phase: 'Succeeded', completionTime: clock.now.toISOString() } })
        if (!action.lost) {
          let res = await deliver(apps.changed, RESOURCE_UPDATE, done)
          if (res.status === 409) res = await deliver(apps.changed, RESOURCE_UPDATE, done)
          expect(res.status).toBe(202)
        }
      }
      observe(before)
    }
    // Never a run for a fire at or before the lastScheduleTime seen when it was made.
    for (const wf of kube.workflows.values()) {
      const fire = scheduledOf(wf)
      if (fire !== undefined) expect(ms(fire)).toBeGreaterThan(created.get(wf.metadata.name!)!)
    }
  }
  // Never two runs for one fire: each name was created once, though pruned runs are gone.
  const creates = kube.writes.filter((w) => w.startsWith('create Workflow/'))
  expect(new Set(creates).size).toBe(creates.length)
  expect(creates.length).toBe(createdFires.size)
}

describe('schedule pings are hints, the template status is truth', () => {
  it('one run per fire despite dropped, late, duplicated and reordered pings, random resync ticks and pruning', async () => {
    await fc.assert(fc.asyncProperty(scenario, (s) => play(s)), { numRuns: propertyRuns(80) })
  }, 120_000)
})
