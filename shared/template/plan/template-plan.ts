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
 */
import type { ChildObject } from '../../kube/port.js'
import { isTerminalPhase } from '../../workflow/plan/run-status.js'
import { labelValue } from '../../workflow/plan/job-builder.js'
import { setCondition } from '../../core/conditions.js'
import { sha256Hex } from '../../core/sha256.js'
import { ANNOTATION_SCHEDULED_TIME, ANNOTATION_TRIGGER_TYPE, API_VERSION } from '../../schemas/labels.js'
import { MAX_RECENT_RUNS, type Condition, type RecentRun, type Workflow, type WorkflowStatus } from '../../schemas/workflow.js'
import { parseSchedule, type Schedule, type ScheduleProblem } from './cron.js'
import { buildRun, isTemplate, scheduleSuffix, templateOf } from '../run-builder.js'

/** Condition type saying whether the template's schedule can be used. */
export const CONDITION_SCHEDULE_VALID = 'ScheduleValid'
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
/** A ping's event time may run slightly ahead of the fire it stands for (clock skew): tolerance. */
export const FIRE_TOLERANCE_MS = 2000
/** Labels of every PingSource Kinetic makes for a template. */
export const LABEL_MANAGED_BY = 'app.kubernetes.io/managed-by'
/** `ceOverrides` extension naming a template's schedule pings (the schedule-fired Trigger filters on it). */
export const SCHEDULE_SOURCE = 'schedule'

const MAX_LABEL_NAME = 63
const SCHEDULE_TAIL = '-schedule'

/** A change worth telling people about (the controller's Transition shape). */
export interface TemplateTransition {
  kind: string
  type: 'Normal' | 'Warning'
  reason: string
  message: string
  record: boolean
}

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
  transitions: TemplateTransition[]
  /** A delivered fire: the fire time it stands for and what became of it. */
  fire?: { time: string | null; outcome: FireOutcome }
}

/** Pure: whether a plan writes nothing. */
export function isEmptyPlan(plan: TemplatePlan): boolean {
  return plan.applyPingSource === null && plan.deletePingSource === null && plan.createRuns.length === 0
    && plan.deleteRuns.length === 0 && plan.status === null
}

/** Pure: the PingSource name of a template: `<template>-schedule`, cut with a 5-hex hash to fit 63 characters. */
export function pingSourceName(template: string): string {
  const plain = `${template}${SCHEDULE_TAIL}`
  if (plain.length <= MAX_LABEL_NAME) return plain
  const hash = sha256Hex(template).slice(0, 5)
  const head = template.slice(0, MAX_LABEL_NAME - SCHEDULE_TAIL.length - hash.length - 1).replace(/[-.]+$/, '')
  return `${head}-${hash}${SCHEDULE_TAIL}`
}

/** Pure: RFC 3339 in UTC with whole seconds, as Go's time.RFC3339 writes it (purko's timestamp). */
export function rfc3339(d: Date): string {
  return `${d.toISOString().slice(0, 19)}Z`
}

/** Pure: the PingSource a scheduled template wants. */
export function pingSourceManifest(template: Workflow, schedule: Schedule, sink: string): ChildObject {
  const name = template.metadata.name ?? ''
  const namespace = template.metadata.namespace ?? ''
  return {
    apiVersion: 'sources.knative.dev/v1',
    kind: 'PingSource',
    metadata: {
      name: pingSourceName(name),
      namespace,
      labels: { [LABEL_MANAGED_BY]: 'kinetic', 'kinetic.dev/template': labelValue(name) },
      ownerReferences: [{
        apiVersion: API_VERSION, kind: 'Workflow', name, uid: template.metadata.uid ?? '', controller: true, blockOwnerDeletion: false,
      }],
    },
    spec: {
      schedule: schedule.expression,
      ...(schedule.timezone !== undefined ? { timezone: schedule.timezone } : {}),
      contentType: 'application/json',
      data: JSON.stringify({ namespace, name, uid: template.metadata.uid ?? '' }),
      ceOverrides: { extensions: { kineticsource: SCHEDULE_SOURCE } },
      sink: { uri: sink },
    },
  }
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

type ScheduleState =
  | { kind: 'none' }
  | { kind: 'invalid'; cron: string; reason: ScheduleProblem; message: string }
  | { kind: 'valid'; cron: string; schedule: Schedule; suspended: boolean }

function scheduleState(template: Workflow, refused: string | undefined): ScheduleState {
  const block = template.spec.trigger?.schedule
  const cron = block?.cron?.trim()
  if (!cron) return { kind: 'none' }
  const parsed = parseSchedule(cron, block?.timezone)
  if (!parsed.ok) return { kind: 'invalid', cron, reason: parsed.reason, message: parsed.message }
  if (refused !== undefined) return { kind: 'invalid', cron, reason: 'InvalidSchedule', message: `the PingSource for schedule ${JSON.stringify(cron)} was refused: ${refused}` }
  return { kind: 'valid', cron, schedule: parsed.schedule, suspended: block?.suspend === true }
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
      } else if (!livePing || !matches(livePing, desired)) {
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
  if (state.kind === 'invalid' && !sameCondition(findCondition(old.conditions), condition)) {
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

function scheduleCondition(state: ScheduleState, generation: number | undefined): { type: string; status: Condition['status']; reason: string; message: string; observedGeneration?: number } | null {
  const gen = generation !== undefined ? { observedGeneration: generation } : {}
  switch (state.kind) {
    case 'none': return null
    case 'invalid': return { type: CONDITION_SCHEDULE_VALID, status: 'False', reason: state.reason, message: state.message, ...gen }
    case 'valid': return {
      type: CONDITION_SCHEDULE_VALID, status: 'True', reason: state.suspended ? 'Suspended' : 'Scheduled',
      message: state.suspended
        ? `Schedule "${state.cron}" is suspended: no runs start until spec.trigger.schedule.suspend is false`
        : `Runs start on schedule "${state.schedule.expression}" (${state.schedule.timezone ?? 'UTC'})`,
      ...gen,
    }
  }
}

const findCondition = (conditions: readonly Condition[] | undefined) => conditions?.find((c) => c.type === CONDITION_SCHEDULE_VALID)

function sameCondition(a: Condition | undefined, b: { status: string; reason: string; message: string } | null): boolean {
  if (!a || !b) return !a && !b
  return a.status === b.status && a.reason === b.reason && a.message === b.message
}

function setField<K extends keyof WorkflowStatus>(status: WorkflowStatus, key: K, value: WorkflowStatus[K] | undefined): void {
  if (value === undefined) delete status[key]
  else status[key] = value
}

/** The fields we set are in the live object with the same values (the API server may add defaults). */
function matches(live: ChildObject, desired: ChildObject): boolean {
  const liveSpec = (live.spec ?? {}) as Record<string, unknown>
  const spec = (desired.spec ?? {}) as Record<string, unknown>
  if (Object.entries(spec).some(([k, v]) => stableJson(liveSpec[k]) !== stableJson(v))) return false
  // A timezone we no longer set must go too.
  if (spec.timezone === undefined && liveSpec.timezone !== undefined && liveSpec.timezone !== '') return false
  const labels = live.metadata?.labels ?? {}
  return Object.entries(desired.metadata?.labels ?? {}).every(([k, v]) => labels[k] === v)
}

/** JSON with object keys sorted, so equal values compare equal whatever their key order. */
function stableJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (v && typeof v === 'object' && !Array.isArray(v)) {
      return Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
    }
    return v
  }) ?? 'undefined'
}

/**
 * How late a PingSource delivery may be after its fire: Knative's adapter sleeps up to 0.5 s of
 * jitter, then retries a refused send for about 1.5 s.
 */
export const LATE_DELIVERY_MS = 3000

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
