/**
 * Pure schedule arithmetic of the CronJob controller emulation (README "Workload
 * controllers"): which scheduled time is due, and the names a cluster gives its Jobs.
 */
import { Cron } from 'croner'

/** The most scheduled times looked at in one pass; the real controller warns past 100 missed. */
const MAX_MISSED = 10_000

/**
 * Pure: the latest time of `schedule` (in `timeZone`, default UTC) after `since` and not after
 * `now`, or undefined when none is due. `startingDeadlineSeconds` ignores times older than
 * `now - deadline`, as the controller does. `missed` counts the due times (only the latest is run).
 */
export function dueSchedule(schedule: string, opts: { since: Date; now: Date; timeZone?: string; startingDeadlineSeconds?: number }): { at?: Date; missed: number; next?: Date } {
  const cron = new Cron(schedule.trim(), { paused: true, ...(opts.timeZone ? { timezone: opts.timeZone } : { timezone: 'Etc/UTC' }) })
  let from = opts.since
  if (opts.startingDeadlineSeconds !== undefined) {
    const earliest = new Date(opts.now.getTime() - opts.startingDeadlineSeconds * 1000)
    if (earliest > from) from = earliest
  }
  let at: Date | undefined
  let missed = 0
  let t = cron.nextRun(from)
  while (t && t <= opts.now && missed < MAX_MISSED) {
    at = t
    missed += 1
    t = cron.nextRun(t)
  }
  return { ...(at ? { at } : {}), missed, ...(t ? { next: t } : {}) }
}

/** Pure: the CronJob controller's Job name: `<cronjob>-<scheduled time in minutes since the epoch>`. */
export function cronJobJobName(cronJob: string, scheduled: Date): string {
  return `${cronJob}-${Math.floor(scheduled.getTime() / 60_000)}`
}

/** Pure: RFC 3339 with second precision (metav1.Time). */
export function rfc3339(d: Date): string {
  return `${d.toISOString().slice(0, 19)}Z`
}
