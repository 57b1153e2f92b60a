/**
 * The template planner: what a template (a Workflow that runs start from) needs, from its own
 * spec and status, the runs made from it, its PingSource and the time. Pure: `now` comes in, the
 * shell (shared/template/controller.ts) reads and writes.
 *
 * - PingSource `<template>-schedule` while the schedule is valid and not suspended, else none.
 * - Runs for schedule fires: a delivered fire (schedule-fired), and catch-up of missed fires on
 *   every reconcile (`latest`: one run for the latest missed fire within the starting deadline;
 *   `none`: no run). A fire at or before `status.lastScheduleTime` never makes a run.
 * - History limits over finished runs, oldest first.
 * - Status: lastTriggerTime, lastScheduleTime, nextRunTime, activeRuns, recentRuns and the
 *   ScheduleValid condition; null when nothing changed, so echoes of our own writes write nothing.
 *
 * Beside it: the PingSource (ping-source.ts) and the schedule's state, condition and fires (schedule.ts).
 */
import type { ChildObject } from '../../kube/port.js'
import type { Transition } from '../../core/plan.js'
import { isTerminalPhase } from '../../workflow/plan/run-status.js'
import { setCondition } from '../../core/conditions.js'
import { ANNOTATION_SCHEDULED_TIME, ANNOTATION_TRIGGER_TYPE } from '../../schemas/labels.js'
import { MAX_RECENT_RUNS, type RecentRun, type Workflow, type WorkflowStatus } from '../../schemas/workflow.js'
import { isTemplate, templateOf } from '../run-builder.js'
import { pingSourceManifest, pingSourceMatches } from './ping-source.js'
import {
  CONDITION_SCHEDULE_VALID, findScheduleValid, fireOfPing, FIRE_TOLERANCE_MS, rfc3339, sameCondition, scheduleCondition, scheduledRun, scheduleState,
} from './schedule.js'
import { stableJson } from './stable-json.js'

/** Default `startingDeadlineSeconds`: how late a missed fire may still start its run. */
export const DEFAULT_STARTING_DEADLINE_SECONDS = 3600
/** Default `successfulRunsHistoryLimit`. */
export const DEFAULT_SUCCESSFUL_HISTORY = 3
/** Default `failedRunsHistoryLimit`. */
export const DEFAULT_FAILED_HISTORY = 1
/**
 * A fire counts as missed only this long after its time: until then its PingSource delivery
 * (jitter, retries, Broker redelivery) may still be on its way, and catch-up must not take its
 * place (with `catchUp: none` that would lose it).
 */
export const MISSED_AFTER_SECONDS = 60

/** What the planner reads. */
export interface TemplateInput {
  template: Workflow
  /** The Workflows carrying the template's run label (other templates' or stale ones are ignored). */
  runs: readonly Workflow[]
  /** The live PingSource `<template>-schedule`, or null when there is none. */
  pingSource: ChildObject | null
  /** Where the PingSource sends its pings (the Broker ingress); without one none is made. */
  sink: string | undefined
  /** Current time, ISO 8601. */
  now: string
  /** A PingSource delivery: its event time (ISO 8601). */
  fired?: { time: string }
  /** The API server refused the PingSource (its message): the schedule is reported invalid. */
  pingSourceRefused?: string
}

/** What happened to a delivered fire, for the log. */
export type FireOutcome = 'run' | 'duplicate' | 'before-template' | 'suspended' | 'invalid' | 'not-scheduled'

/** What the shell writes, in this order: PingSource, runs, template status, prunes, Events. */
export interface TemplatePlan {
  /** Manifest to apply (server-side); null when the live one already matches or none is wanted. */
  applyPingSource: ChildObject | null
  /** The live PingSource to delete (uid-guarded), before any apply. */
  deletePingSource: { name: string; uid?: string } | null
  createRuns: Workflow[]
  /** Finished runs beyond the history limits, oldest first (uid-guarded deletes). */
  deleteRuns: { name: string; uid?: string }[]
  /** The whole new status (template fields changed, the rest kept), or null when unchanged. */
  status: WorkflowStatus | null
  transitions: Transition[]
  /** A delivered fire: the fire time it stands for and what became of it. */
  fire?: { time: string | null; outcome: FireOutcome }
}

/** Pure: whether a plan writes nothing. */
export function isEmptyPlan(plan: TemplatePlan): boolean {
  return plan.applyPingSource === null && plan.deletePingSource === null && plan.createRuns.length === 0
    && plan.deleteRuns.length === 0 && plan.status === null
}

const ms = (iso: string | undefined): number | undefined => {
  if (iso === undefined) return undefined
  const t = Date.parse(iso)
  return Number.isNaN(t) ? undefined : t
}

const maxOf = (...values: (number | undefined)[]): number | undefined => {
  const defined = values.filter((v): v is number => v !== undefined)
  return defined.length === 0 ? undefined : Math.max(...defined)
}

function isOwnedBy(object: ChildObject | Workflow, uid: string | undefined): boolean {
  const owners = object.metadata?.ownerReferences
  return Array.isArray(owners) && (owners as { uid?: string; controller?: boolean }[]).some((o) => o.uid === uid && o.controller === true)
}

/** Pure: everything a template needs now. */
export function planTemplate(input: TemplateInput): TemplatePlan {
  const { template, now } = input
  const plan: TemplatePlan = { applyPingSource: null, deletePingSource: null, createRuns: [], deleteRuns: [], status: null, transitions: [] }
  if (template.metadata.deletionTimestamp) return plan // owned runs and PingSource go with it
  const uid = template.metadata.uid
  const livePing = input.pingSource
  const dropPing = () => {
    if (livePing) plan.deletePingSource = { name: livePing.metadata?.name ?? '', ...(livePing.metadata?.uid ? { uid: livePing.metadata.uid } : {}) }
  }
  if (!isTemplate(template)) {
    // No longer a template (or a run): a PingSource it owned would keep firing for nothing.
    if (livePing && isOwnedBy(livePing, uid)) dropPing()
    if (input.fired) plan.fire = { time: null, outcome: 'not-scheduled' }
    return plan
  }
  const name = template.metadata.name ?? ''
  const nowMs = ms(now)!
  const state = scheduleState(template, input.pingSourceRefused)

  // PingSource: wanted while valid and running; a foreign owner's object is replaced.
  if (state.kind === 'valid' && !state.suspended) {
    if (input.sink !== undefined) {
      const desired = pingSourceManifest(template, state.schedule, input.sink)
      if (livePing && !isOwnedBy(livePing, uid)) {
        dropPing()
        plan.applyPingSource = desired
      } else if (!livePing || !pingSourceMatches(livePing, desired)) {
        plan.applyPingSource = desired
      }
    }
  } else if (livePing) {
    dropPing()
  }

  // The runs that are this template's (its label, its annotation, its uid as controller).
  const runs = input.runs.filter((r) => templateOf(r) === name && isOwnedBy(r, uid) && !r.metadata.deletionTimestamp)
  const names = new Set(input.runs.map((r) => r.metadata.name))
  const old = template.status ?? {}
  // Every existing scheduled run's fire was handled, even if the status write after it was lost.
  const scheduledTimes = runs.map((r) => ms(r.metadata.annotations?.[ANNOTATION_SCHEDULED_TIME])).filter((t): t is number => t !== undefined && t <= nowMs + FIRE_TOLERANCE_MS)
  let lastSchedule = maxOf(ms(old.lastScheduleTime), ...scheduledTimes)
  const created = ms(template.metadata.creationTimestamp)
  const fires: { at: Date; catchUp: boolean }[] = []

  if (state.kind !== 'valid' && input.fired) plan.fire = { time: null, outcome: state.kind === 'invalid' ? 'invalid' : 'not-scheduled' }
  if (state.kind === 'valid') {
    const { schedule, suspended } = state
    // Catch-up first, from the last fire handled before this event (or the template's creation):
    // a delivery of a later fire does not hide an earlier missed one.
    const base = lastSchedule ?? created ?? nowMs
    const missed = schedule.latestAtOrBefore(new Date(nowMs - MISSED_AFTER_SECONDS * 1000))
    if (missed !== null && missed.getTime() > base) {
      const block = template.spec.trigger?.schedule
      const deadline = (block?.startingDeadlineSeconds ?? DEFAULT_STARTING_DEADLINE_SECONDS) * 1000
      const count = schedule.firesIn(new Date(base), missed, 100).length
      const many = count >= 100 ? '100 or more fires' : count === 1 ? '1 fire' : `${count} fires`
      if (suspended) {
        // Suspended: fires pass without runs.
      } else if ((block?.catchUp ?? 'latest') === 'none') {
        plan.transitions.push({
          kind: 'template.schedule-missed', type: 'Normal', reason: 'MissedSchedule', record: false,
          message: `Missed ${many} of schedule "${state.cron}" up to ${rfc3339(missed)}; catchUp is none, so no run starts for them`,
        })
      } else if (nowMs - missed.getTime() <= deadline) {
        fires.push({ at: missed, catchUp: true })
      } else {
        plan.transitions.push({
          kind: 'template.schedule-missed', type: 'Warning', reason: 'MissedSchedule', record: true,
          message: `Missed ${many} of schedule "${state.cron}"; the latest, ${rfc3339(missed)}, is more than ${deadline / 1000}s old (startingDeadlineSeconds), so no run starts for it`,
        })
      }
    }
    if (input.fired) {
      const eventTime = ms(input.fired.time) ?? nowMs
      const fire = fireOfPing(schedule, eventTime)
      let outcome: FireOutcome
      if (fire === null || (created !== undefined && fire.getTime() < created)) outcome = 'before-template'
      else if (lastSchedule !== undefined && fire.getTime() <= lastSchedule) outcome = 'duplicate'
      else if (suspended) outcome = 'suspended'
      else {
        outcome = 'run'
        fires.push({ at: fire, catchUp: false })
      }
      plan.fire = { time: fire ? rfc3339(fire) : null, outcome }
      if (fire !== null && outcome !== 'before-template') lastSchedule = maxOf(lastSchedule, fire.getTime())
    }
    if (missed !== null && missed.getTime() > base) lastSchedule = maxOf(lastSchedule, missed.getTime())
    for (const { at, catchUp } of fires) {
      const run = scheduledRun(template, state.cron, at)
      if (names.has(run.metadata.name)) continue
      names.add(run.metadata.name)
      plan.createRuns.push(run)
      plan.transitions.push({
        kind: 'template.run-created', type: 'Normal', reason: 'RunCreated', record: true,
        message: catchUp
          ? `Created run ${run.metadata.name} for the missed schedule fire at ${rfc3339(at)} (catch-up)`
          : `Created run ${run.metadata.name} for the schedule fire at ${rfc3339(at)}`,
      })
    }
  }

  // History limits over finished runs, oldest first; never a run whose fire is not yet recorded.
  const limits = template.spec.trigger
  const byAge = (a: Workflow, b: Workflow) => {
    const ka = a.status?.completionTime ?? a.metadata.creationTimestamp ?? ''
    const kb = b.status?.completionTime ?? b.metadata.creationTimestamp ?? ''
    return ka < kb ? -1 : ka > kb ? 1 : (a.metadata.name ?? '') < (b.metadata.name ?? '') ? -1 : 1
  }
  const prunable = (r: Workflow) => {
    const fire = ms(r.metadata.annotations?.[ANNOTATION_SCHEDULED_TIME])
    return fire === undefined || (lastSchedule !== undefined && fire <= lastSchedule)
  }
  const finished = runs.filter((r) => isTerminalPhase(r.status?.phase))
  const pruned = new Set<string>()
  for (const [list, limit] of [
    [finished.filter((r) => r.status?.phase === 'Succeeded'), limits?.successfulRunsHistoryLimit ?? DEFAULT_SUCCESSFUL_HISTORY],
    [finished.filter((r) => r.status?.phase !== 'Succeeded'), limits?.failedRunsHistoryLimit ?? DEFAULT_FAILED_HISTORY],
  ] as const) {
    const sorted = [...list].sort(byAge)
    for (const run of sorted.slice(0, Math.max(0, sorted.length - limit))) {
      if (!prunable(run)) continue
      const runName = run.metadata.name ?? ''
      pruned.add(runName)
      plan.deleteRuns.push({ name: runName, ...(run.metadata.uid ? { uid: run.metadata.uid } : {}) })
      plan.transitions.push({
        kind: 'template.run-deleted', type: 'Normal', reason: 'RunDeleted', record: true,
        message: `Deleted finished run ${runName} (${run.status?.phase}): beyond the history limit of ${limit}`,
      })
    }
  }

  // Status: the template's fields recomputed, everything else kept.
  const kept = runs.filter((r) => !pruned.has(r.metadata.name ?? ''))
  const fresh = plan.createRuns.map((r) => ({ ...r, metadata: { ...r.metadata, creationTimestamp: now } }))
  const all = [...kept, ...fresh]
  const newest = [...all].sort((a, b) => {
    const ka = a.metadata.creationTimestamp ?? ''
    const kb = b.metadata.creationTimestamp ?? ''
    return ka > kb ? -1 : ka < kb ? 1 : (a.metadata.name ?? '') > (b.metadata.name ?? '') ? -1 : 1
  })
  const recentRuns: RecentRun[] = newest.slice(0, MAX_RECENT_RUNS).map(recentRunOf)
  const lastTrigger = maxOf(ms(old.lastTriggerTime), ...[...runs, ...fresh].map((r) => ms(r.metadata.creationTimestamp)))
  const next: WorkflowStatus = { ...old }
  setField(next, 'activeRuns', all.filter((r) => !isTerminalPhase(r.status?.phase)).length)
  setField(next, 'recentRuns', recentRuns.length > 0 ? recentRuns : undefined)
  setField(next, 'lastTriggerTime', lastTrigger !== undefined ? rfc3339(new Date(lastTrigger)) : undefined)
  setField(next, 'lastScheduleTime', lastSchedule !== undefined ? rfc3339(new Date(lastSchedule)) : undefined)
  const nextFire = state.kind === 'valid' && !state.suspended ? state.schedule.nextAfter(new Date(nowMs)) : null
  setField(next, 'nextRunTime', nextFire ? rfc3339(nextFire) : undefined)
  const condition = scheduleCondition(state, template.metadata.generation)
  const conditions = condition
    ? setCondition(old.conditions, condition, now)
    : (old.conditions ?? []).filter((c) => c.type !== CONDITION_SCHEDULE_VALID)
  setField(next, 'conditions', conditions.length > 0 ? conditions : undefined)
  if (state.kind === 'invalid' && !sameCondition(findScheduleValid(old.conditions), condition)) {
    plan.transitions.push({ kind: 'template.schedule-invalid', type: 'Warning', reason: state.reason, message: state.message, record: true })
  }
  plan.status = stableJson(next) === stableJson(old) ? null : next
  return plan
}

/** Pure: how a template's status lists one of its runs. */
export function recentRunOf(run: Workflow): RecentRun {
  const entry: RecentRun = { name: run.metadata.name ?? '', phase: run.status?.phase ?? 'Pending' }
  const trigger = run.metadata.annotations?.[ANNOTATION_TRIGGER_TYPE]
  if (trigger) entry.trigger = trigger
  if (run.status?.startTime) entry.startTime = run.status.startTime
  if (run.status?.completionTime) entry.completionTime = run.status.completionTime
  return entry
}

function setField<K extends keyof WorkflowStatus>(status: WorkflowStatus, key: K, value: WorkflowStatus[K] | undefined): void {
  if (value === undefined) delete status[key]
  else status[key] = value
}
