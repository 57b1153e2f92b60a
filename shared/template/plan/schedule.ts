/**
 * A template's schedule as the planner sees it: its state (none, invalid with why, or valid and
 * perhaps suspended) and the ScheduleValid condition that reports it; the fire a PingSource
 * delivery stands for, and the run a fire makes (purko's scheduler input, named after the fire).
 * Times are written as purko wrote them. Pure.
 */
import type { Condition, Workflow } from '../../schemas/workflow.js'
import { buildRun, scheduleSuffix } from '../run-builder.js'
import { parseSchedule, type Schedule, type ScheduleProblem } from './cron.js'

/** Condition type saying whether the template's schedule can be used. */
export const CONDITION_SCHEDULE_VALID = 'ScheduleValid'

/** The template's schedule: none, invalid (with why), or valid and perhaps suspended. */
export type ScheduleState =
  | { kind: 'none' }
  | { kind: 'invalid'; cron: string; reason: ScheduleProblem; message: string }
  | { kind: 'valid'; cron: string; schedule: Schedule; suspended: boolean }

/** Pure: the state of a template's schedule; `refused` is the API server's message when it refused the PingSource. */
export function scheduleState(template: Workflow, refused: string | undefined): ScheduleState {
  const block = template.spec.trigger?.schedule
  const cron = block?.cron?.trim()
  if (!cron) return { kind: 'none' }
  const parsed = parseSchedule(cron, block?.timezone)
  if (!parsed.ok) return { kind: 'invalid', cron, reason: parsed.reason, message: parsed.message }
  if (refused !== undefined) return { kind: 'invalid', cron, reason: 'InvalidSchedule', message: `the PingSource for schedule ${JSON.stringify(cron)} was refused: ${refused}` }
  return { kind: 'valid', cron, schedule: parsed.schedule, suspended: block?.suspend === true }
}

/** Pure: the ScheduleValid condition a schedule state calls for; null when there is no schedule. */
export function scheduleCondition(state: ScheduleState, generation: number | undefined): { type: string; status: Condition['status']; reason: string; message: string; observedGeneration?: number } | null {
  const observed = generation !== undefined ? { observedGeneration: generation } : {}
  switch (state.kind) {
    case 'none': return null
    case 'invalid': return { type: CONDITION_SCHEDULE_VALID, status: 'False', reason: state.reason, message: state.message, ...observed }
    case 'valid': return {
      type: CONDITION_SCHEDULE_VALID, status: 'True', reason: state.suspended ? 'Suspended' : 'Scheduled',
      message: state.suspended
        ? `Schedule "${state.cron}" is suspended: no runs start until spec.trigger.schedule.suspend is false`
        : `Runs start on schedule "${state.schedule.expression}" (${state.schedule.timezone ?? 'UTC'})`,
      ...observed,
    }
  }
}

/** The ScheduleValid condition among a status's conditions. */
export const findScheduleValid = (conditions: readonly Condition[] | undefined) => conditions?.find((c) => c.type === CONDITION_SCHEDULE_VALID)

/** Whether two ScheduleValid conditions say the same (time and generation aside). */
export function sameCondition(a: Condition | undefined, b: { status: string; reason: string; message: string } | null): boolean {
  if (!a || !b) return !a && !b
  return a.status === b.status && a.reason === b.reason && a.message === b.message
}

/** A ping's event time may run slightly ahead of the fire it stands for (clock skew): tolerance. */
export const FIRE_TOLERANCE_MS = 2000

/**
 * How late a PingSource delivery may be after its fire: Knative's adapter sleeps up to 0.5 s of
 * jitter, then retries a refused send for about 1.5 s.
 */
export const LATE_DELIVERY_MS = 3000

/** Pure: RFC 3339 in UTC with whole seconds, as Go's time.RFC3339 writes it (purko's timestamp). */
export function rfc3339(d: Date): string {
  return `${d.toISOString().slice(0, 19)}Z`
}

/** Pure: the input every step of a scheduled run gets (purko's scheduler). */
export function scheduledInput(cron: string, template: Workflow, fire: Date): Record<string, unknown> {
  return { schedule: cron, task: template.spec.description ?? '', timestamp: rfc3339(fire), trigger: 'schedule' }
}

/** Pure: the run of a template for one schedule fire. */
export function scheduledRun(template: Workflow, cron: string, fire: Date): Workflow {
  const input = scheduledInput(cron, template, fire)
  return buildRun({
    template, type: 'schedule', source: cron, suffix: scheduleSuffix(fire), scheduledTime: rfc3339(fire), inputFor: () => input,
  })
}

/**
 * Pure: the fire a ping stands for: the latest fire at or before its time when the ping could
 * be that fire's (late) delivery; otherwise the next fire when it is at most FIRE_TOLERANCE_MS
 * ahead (the sender's clock ran behind ours). A schedule that fires more often than the
 * tolerance therefore never has its pings mapped to a fire that has not happened yet.
 */
export function fireOfPing(schedule: { latestAtOrBefore(t: Date): Date | null; nextAfter(t: Date): Date | null }, eventTime: number): Date | null {
  const before = schedule.latestAtOrBefore(new Date(eventTime))
  if (before !== null && eventTime - before.getTime() <= LATE_DELIVERY_MS) return before
  const ahead = schedule.nextAfter(new Date(eventTime))
  return ahead !== null && ahead.getTime() - eventTime <= FIRE_TOLERANCE_MS ? ahead : before
}
