/**
 * Alarms: the PingSources that exist only while a tick has work coming. Pure: `now` comes in.
 *
 * Every tick of Kinetic ships as a slow heartbeat PingSource (knative/sources/, once an hour)
 * that is only the safety net. What is due sooner gets an alarm (resync, recipes, MCP servers,
 * model providers, agents, autonomy; memory providers and recipe policies have only the
 * heartbeat): PingSource `<tick>-alarm` in Kinetic's namespace,
 * with the heartbeat's sink and `kineticsource`, firing every minute while something is due within
 * two minutes (work in flight), else once, at the minute of the earliest due time. Without
 * anything due there is no alarm, so no tick function runs at idle.
 *
 * Two writers, one rule (docs/architecture/idle.md):
 * - The tick function reads the alarm before it lists, and settles it from what it listed:
 *   create, reschedule or delete, each guarded by that resourceVersion.
 * - A function that just wrote work with a due time (a run started, a deadline set) arms the alarm
 *   after its write, and always writes (creates it, or reschedules it no later than its due time
 *   and stamps the time), so a tick that listed before that write fails its guarded write and
 *   keeps the alarm it finds when that alarm fires at least as early.
 */
import type { ChildObject } from '../kube/port.js'
import { parseSchedule } from '../template/plan/cron.js'

/** Each tick: its heartbeat PingSource (knative/sources/<name>.yaml) and its `kineticsource`. */
export const TICKS = {
  'resync': { source: 'resync' },
  'recipes-resync': { source: 'recipesresync' },
  'mcpservers-resync': { source: 'mcpserverresync' },
  'llmproviders-probe': { source: 'llmproviderprobe' },
  'agents-recheck': { source: 'agentrecheck' },
  'autonomy': { source: 'autonomy' },
} as const satisfies Record<string, { source: string }>

export type Tick = keyof typeof TICKS

/** The alarm schedule while something is due within SOON_MS: every minute. */
export const EVERY_MINUTE = '* * * * *'
const SOON_MS = 2 * 60_000
const MINUTE_MS = 60_000

/** Annotation an alarm's arming writes (the time of the arm), so that every arm is a write. */
export const ANNOTATION_ARMED_AT = 'kinetic.dev/armed-at'
/**
 * Annotation an arm writes with a fresh id: the API server keeps the resourceVersion of a patch
 * that changes nothing, so two arms stamped with the same time would otherwise be one write.
 */
export const ANNOTATION_ARM_ID = 'kinetic.dev/arm-id'

/** Pure: the name of a tick's alarm. */
export function alarmName(tick: Tick): string {
  return `${tick}-alarm`
}

/**
 * Pure: the schedule that wakes a tick for `due`: every minute when it is due within two minutes,
 * else one fire at the minute of `due` (rounded up), in UTC, as a five-field cron.
 */
export function alarmSchedule(due: string, now: string): string {
  const at = Date.parse(due)
  if (Number.isNaN(at) || at - Date.parse(now) <= SOON_MS) return EVERY_MINUTE
  const fire = new Date(Math.ceil(at / MINUTE_MS) * MINUTE_MS)
  return `${fire.getUTCMinutes()} ${fire.getUTCHours()} ${fire.getUTCDate()} ${fire.getUTCMonth() + 1} *`
}

/**
 * Pure: when an alarm's schedule fires next after `now` (ms), or undefined when it does not fire
 * within the next 31 days (a one-shot whose minute has passed only fires again a year later).
 */
export function nextAlarmFire(schedule: string, now: string): number | undefined {
  const parsed = parseSchedule(schedule)
  if (!parsed.ok) return undefined
  const next = parsed.schedule.nextAfter(new Date(now))?.getTime()
  return next !== undefined && next - Date.parse(now) <= 31 * 24 * 3600_000 ? next : undefined
}

/** Pure: the earliest of due times (ISO 8601); undefined when there is none. */
export function earliest(times: ReadonlyArray<string | undefined>): string | undefined {
  let best: string | undefined
  for (const t of times) {
    if (t === undefined || Number.isNaN(Date.parse(t))) continue
    if (best === undefined || Date.parse(t) < Date.parse(best)) best = t
  }
  return best
}

/** Pure: the alarm PingSource of `tick`: the heartbeat's sink and source, its own name and schedule. */
export function alarmManifest(tick: Tick, namespace: string, schedule: string, armedAt: string): ChildObject {
  return {
    apiVersion: 'sources.knative.dev/v1',
    kind: 'PingSource',
    metadata: {
      name: alarmName(tick),
      namespace,
      labels: { 'app.kubernetes.io/part-of': 'kinetic', 'kinetic.dev/alarm': tick },
      annotations: { [ANNOTATION_ARMED_AT]: armedAt },
    },
    spec: {
      schedule,
      contentType: 'application/json',
      data: JSON.stringify({ reason: tick, alarm: true }),
      ceOverrides: { extensions: { kineticsource: TICKS[tick].source } },
      sink: { ref: { apiVersion: 'eventing.knative.dev/v1', kind: 'Broker', name: 'default', namespace } },
    },
  }
}

/** An alarm as read: its schedule and resourceVersion (null: there is none). */
export interface LiveAlarm {
  schedule: string
  resourceVersion: string
}

/** Pure: an alarm object's schedule and resourceVersion. */
export function liveAlarm(obj: ChildObject | null): LiveAlarm | null {
  if (!obj) return null
  const spec = obj.spec as { schedule?: unknown } | undefined
  return { schedule: typeof spec?.schedule === 'string' ? spec.schedule : '', resourceVersion: obj.metadata?.resourceVersion ?? '' }
}

/** What settling or arming an alarm writes. */
export type AlarmWrite =
  | { kind: 'none' }
  | { kind: 'create'; schedule: string }
  | { kind: 'reschedule'; schedule: string; resourceVersion: string }
  | { kind: 'delete'; resourceVersion: string }

/**
 * Pure: what the tick function writes after its round. `due` is the earliest due time of what it
 * listed (undefined: nothing is due). `live` is the alarm read before that list.
 */
export function settleAlarm(live: LiveAlarm | null, due: string | undefined, now: string): AlarmWrite {
  if (due === undefined) return live ? { kind: 'delete', resourceVersion: live.resourceVersion } : { kind: 'none' }
  const schedule = alarmSchedule(due, now)
  if (!live) return { kind: 'create', schedule }
  return live.schedule === schedule ? { kind: 'none' } : { kind: 'reschedule', schedule, resourceVersion: live.resourceVersion }
}

/**
 * Pure: the tick's write after its guarded write failed because the alarm changed (an arm): keep
 * what is there when it fires by `due`, else reschedule it to `due`; never delete an armed alarm.
 */
export function mergeAlarm(live: LiveAlarm | null, due: string | undefined, now: string): AlarmWrite {
  if (due === undefined) return { kind: 'none' }
  if (!live) return { kind: 'create', schedule: alarmSchedule(due, now) }
  return firesBy(live.schedule, due, now) ? { kind: 'none' } : { kind: 'reschedule', schedule: alarmSchedule(due, now), resourceVersion: live.resourceVersion }
}

/**
 * Pure: what a function that wrote work due at `due` writes: always a write (create, or a
 * reschedule that fires no later than `due` and carries the arm's time), so that a tick that read
 * the alarm before this work existed cannot delete or postpone it.
 */
export function armAlarm(live: LiveAlarm | null, due: string, now: string): AlarmWrite {
  const wanted = alarmSchedule(due, now)
  if (!live) return { kind: 'create', schedule: wanted }
  const schedule = firesBy(live.schedule, due, now) ? live.schedule : wanted
  return { kind: 'reschedule', schedule, resourceVersion: live.resourceVersion }
}

/** Pure: whether `schedule` fires at or before `due` (and after `now`), within a minute's grace. */
function firesBy(schedule: string, due: string, now: string): boolean {
  const next = nextAlarmFire(schedule, now)
  return next !== undefined && next <= Math.max(Date.parse(due), Date.parse(now)) + MINUTE_MS
}

/** The 5-minute cadence of rechecks (agents, memory providers, autonomy) while they have work. */
export const RECHECK_MS = 5 * 60_000

/** Pure: the due time of a recheck 5 minutes after `now`. */
export function recheckAfter(now: Date): string {
  return new Date(now.getTime() + RECHECK_MS).toISOString()
}
