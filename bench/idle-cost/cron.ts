// How often a PingSource's five-field cron schedule fires.

/**
 * Fires per hour of a schedule whose hour, day, month and weekday fields are all `*`; 0 for an
 * alarm's one fire (minute, hour, day and month fixed, any weekday); throws for others.
 */
export function perHour(schedule: string): number {
  const [minute, ...others] = schedule.trim().split(/\s+/)
  if (others.length === 4 && others[3] === '*' && others.slice(0, 3).every((f) => /^\d+$/.test(f))) return 0
  if (others.length !== 4 || others.some((f) => f !== '*')) throw new Error(`only minute schedules are counted, not ${JSON.stringify(schedule)}`)
  if (minute === '*') return 60
  const step = /^\*\/(\d+)$/.exec(minute ?? '')
  if (step) return Math.ceil(60 / Number(step[1]))
  return (minute ?? '').split(',').length
}
