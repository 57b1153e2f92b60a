/**
 * Cron schedules of templates, read the way Knative's PingSource reads them (robfig/cron with
 * optional seconds): 5 fields, or 6 with seconds first; descriptors such as `@hourly`; an IANA
 * time zone (the `timezone` field, or a `CRON_TZ=`/`TZ=` prefix). `@every` is refused, as Knative
 * refuses it. Fire times are computed with croner in the schedule's zone. Pure: no clock, no
 * timers (the croner job is created paused and only asked about dates).
 */
import { Cron } from 'croner'

/** Why a schedule cannot be used (the `ScheduleValid` condition's reason). */
export type ScheduleProblem = 'InvalidSchedule' | 'UnknownTimeZone'

/** A parsed schedule: what the PingSource is given, and its fire times. */
export interface Schedule {
  /** The cron expression without a time-zone prefix (the PingSource's `schedule`). */
  expression: string
  /** IANA zone (the PingSource's `timezone`); undefined means UTC. */
  timezone: string | undefined
  /** The latest fire at or before `t`, or null when there is none. */
  latestAtOrBefore(t: Date): Date | null
  /** The first fire strictly after `t`, or null when there is none. */
  nextAfter(t: Date): Date | null
  /** Fires in (a, b], oldest first, at most `limit` of them. */
  firesIn(a: Date, b: Date, limit: number): Date[]
}

export type ScheduleParse =
  | { ok: true; schedule: Schedule }
  | { ok: false; reason: ScheduleProblem; message: string }

/** The descriptors robfig/cron (and so Knative) accepts. */
const DESCRIPTORS = new Set(['@yearly', '@annually', '@monthly', '@weekly', '@daily', '@midnight', '@hourly'])

/** Month and weekday names, which may contain the letters L and W. */
const NAMES = /\b(?:JAN|FEB|MAR|APR|MAY|JUN|JUL|AUG|SEP|OCT|NOV|DEC|SUN|MON|TUE|WED|THU|FRI|SAT)\b/gi

const ZONE_PREFIX = /^(?:CRON_TZ|TZ)=(\S*)\s+(.*)$/

/** Pure: whether `zone` is an IANA time-zone name this runtime knows. */
export function isKnownTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone })
    return true
  } catch {
    return false
  }
}

/** Pure: parses and validates a template's cron and time zone. */
export function parseSchedule(cron: string, timezone?: string): ScheduleParse {
  let expression = cron.trim().replace(/\s+/g, ' ')
  let zone = timezone === undefined || timezone.trim() === '' ? undefined : timezone.trim()
  const prefixed = ZONE_PREFIX.exec(expression)
  if (prefixed) {
    if (zone !== undefined) {
      return invalid(`schedule ${JSON.stringify(cron)} names a time zone (${prefixed[1]}) and spec.trigger.schedule.timezone is set too (${zone}); use one of them`)
    }
    zone = prefixed[1]!
    expression = prefixed[2]!.trim()
  }
  if (zone !== undefined && !isKnownTimeZone(zone)) {
    return { ok: false, reason: 'UnknownTimeZone', message: `unknown time zone ${JSON.stringify(zone)}: expected an IANA name such as Europe/Paris or America/New_York` }
  }
  if (expression === '') return invalid('schedule is empty: expected a cron expression such as "0 2 * * *"')
  if (expression.startsWith('@')) {
    if (expression.startsWith('@every')) {
      return invalid(`schedule ${JSON.stringify(cron)} uses @every, which Knative PingSource does not accept: write it as a cron expression (e.g. "*/5 * * * *" for every five minutes)`)
    }
    if (!DESCRIPTORS.has(expression)) {
      return invalid(`schedule ${JSON.stringify(cron)} is not a known descriptor: use one of ${[...DESCRIPTORS].join(', ')}, or a cron expression`)
    }
  } else {
    const fields = expression.split(' ')
    if (fields.length !== 5 && fields.length !== 6) {
      return invalid(`schedule ${JSON.stringify(cron)} has ${fields.length} field(s): expected 5 (minute hour day-of-month month day-of-week) or 6 (seconds first)`)
    }
    if (/[LW#]/i.test(expression.replace(NAMES, ''))) {
      return invalid(`schedule ${JSON.stringify(cron)} uses L, W or #, which Knative PingSource does not accept`)
    }
  }
  let job: Cron
  try {
    job = new Cron(expression, { paused: true, mode: '5-or-6-parts', ...(zone !== undefined ? { timezone: zone } : { timezone: 'UTC' }) })
  } catch (err) {
    const detail = (err as Error).message.replace(/^CronPattern: /, '')
    return invalid(`schedule ${JSON.stringify(cron)} is not a valid cron expression: ${detail}`)
  }
  return { ok: true, schedule: scheduleOf(job, expression, zone) }
}

function invalid(message: string): ScheduleParse {
  return { ok: false, reason: 'InvalidSchedule', message }
}

function scheduleOf(job: Cron, expression: string, timezone: string | undefined): Schedule {
  const nextAfter = (t: Date): Date | null => job.nextRun(t)
  return {
    expression,
    timezone,
    // croner counts a run in the same second as the reference only when it is earlier, so ask
    // from one millisecond later to include a fire exactly at `t`.
    latestAtOrBefore: (t) => job.previousRuns(1, new Date(t.getTime() + 1))[0] ?? null,
    nextAfter,
    firesIn(a, b, limit) {
      const fires: Date[] = []
      let at: Date | null = a
      while (fires.length < limit && (at = nextAfter(at)) !== null && at.getTime() <= b.getTime()) fires.push(at)
      return fires
    },
  }
}
