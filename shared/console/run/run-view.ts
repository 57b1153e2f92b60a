/**
 * What the console shows of one Workflow: a run's phase, progress, times, trigger and every
 * step (phase, why it waits or was skipped, timings, attempts), or a template's schedule and
 * runs. Pure: the Workflow and `now` come in; nothing is read here.
 */
import { isTerminalPhase } from '../../workflow/plan/run-status.js'
import { decodeStepStates, type StepState } from '../../workflow/plan/step-states.js'
import { currentRunStatus } from '../../run-control/run-checks.js'
import {
  ANNOTATION_TRIGGER_ROUTE, ANNOTATION_TRIGGER_SOURCE, ANNOTATION_TRIGGER_TYPE,
} from '../../schemas/labels.js'
import type { Condition, RecentRun, Workflow } from '../../schemas/workflow.js'
import { isTemplate, templateOf } from '../../template/run-builder.js'

/**
 * The phase a step is drawn in: a step phase, or `Waiting` for a Pending step held by a gate
 * (approval, a retry backoff, a concurrency or budget wait). It names the `phase-<Phase>` class.
 */
export type DisplayPhase = 'Pending' | 'Running' | 'Succeeded' | 'Failed' | 'Skipped' | 'Waiting' | 'RollingBack' | 'RolledBack'

/** Every display phase, in the order summaries count them. */
export const DISPLAY_PHASES: readonly DisplayPhase[] = ['Running', 'Waiting', 'Pending', 'Succeeded', 'Failed', 'Skipped', 'RollingBack', 'RolledBack']

/** The planner's wording of an approval gate (shared/workflow/plan/approvals.ts). */
const APPROVAL_WAIT = 'Waiting for human approval'

/** One step as the console shows it. */
export interface StepView {
  name: string
  /** Position in the spec (the table's order). */
  index: number
  phase: DisplayPhase
  /** The phase in words, never colour alone: `Waiting for approval`, `Retry pending`, `Not started`, ... */
  label: string
  /** Why it was skipped, or what it waits for. */
  reason?: string
  startTime?: string
  completionTime?: string
  /** Until completion, or until `now` while it runs. */
  durationMs?: number
  /** Attempts made (retries + 1 once it started). */
  attempts: number
  retries: number
  nextAttemptAt?: string
  jobName?: string
  /** A failed step's error (the first lines are in `reason` for waits and skips). */
  error?: string
  /** What the attempt should know about (a provider fallback, an unregistered MCP server). */
  message?: string
  outputRef?: string
  dependsOn: string[]
  awaitingApproval: boolean
  agent?: string
  type?: string
}

/** One run as the console shows it. */
export interface RunView {
  kind: 'run'
  namespace: string
  name: string
  resourceVersion: string
  phase: string
  /** The run is over: no live updates change it until a rerun. */
  finished: boolean
  message?: string
  progress: { completed: number; failed: number; total: number }
  startTime?: string
  completionTime?: string
  durationMs?: number
  trigger?: { type?: string; source?: string; route?: string }
  template?: string
  runId?: string
  queuePosition?: number
  parameters: [string, string][]
  conditions: Condition[]
  steps: StepView[]
}

/** A template: it never runs itself, so the console links to its runs instead of drawing a DAG. */
export interface TemplateView {
  kind: 'template'
  namespace: string
  name: string
  resourceVersion: string
  description?: string
  schedule?: { cron: string; timezone?: string; suspended: boolean }
  nextRunTime?: string
  lastScheduleTime?: string
  activeRuns: number
  parameters: [string, string][]
  conditions: Condition[]
  recentRuns: RecentRun[]
  steps: number
}

/**
 * Pure: when the duration of a step or run that is still going began (its page counts on from
 * there every second), or undefined when it is not going or never started.
 */
export function tickingSince(v: { startTime?: string; completionTime?: string; durationMs?: number }): string | undefined {
  // A duration without an end is one measured until now: it is still going.
  return v.durationMs !== undefined && !v.completionTime ? v.startTime : undefined
}

/** Bytes of a step's output shown on the page; the rest is cut with a note. */
export const MAX_OUTPUT_BYTES = 16 * 1024

function span(start: string | undefined, end: string | undefined, now: Date, running: boolean): number | undefined {
  if (!start) return undefined
  const from = Date.parse(start)
  const to = end ? Date.parse(end) : running ? now.getTime() : Number.NaN
  if (Number.isNaN(from) || Number.isNaN(to)) return undefined
  return Math.max(0, to - from)
}

function firstLine(text: string | undefined): string | undefined {
  const line = text?.split('\n')[0]?.trim()
  return line ? line : undefined
}

/** Pure: how one step is shown, from its decoded state. */
export function stepView(wf: Workflow, index: number, state: StepState | undefined, now: Date): StepView {
  const spec = wf.spec.steps[index]!
  const phase = state?.phase
  const retries = state?.retryCount ?? 0
  // A skipped step never ran; any other step past Pending did (a type-only step has no start time).
  const started = state?.startTime !== undefined || (phase !== undefined && phase !== 'Pending' && phase !== 'Skipped')
  const view: StepView = {
    name: spec.name,
    index,
    phase: phase ?? 'Pending',
    label: phase ?? 'Not started',
    attempts: started ? retries + 1 : retries,
    retries,
    dependsOn: [...new Set(spec.dependsOn ?? [])],
    awaitingApproval: false,
  }
  if (spec.agentRef?.name) view.agent = spec.agentRef.name
  if (spec.type) view.type = spec.type
  for (const field of ['startTime', 'completionTime', 'jobName', 'nextAttemptAt', 'message', 'outputRef'] as const) {
    const value = state?.[field]
    if (value) view[field] = value
  }
  const duration = span(state?.startTime, state?.completionTime, now, phase === 'Running' || phase === 'RollingBack')
  if (duration !== undefined) view.durationMs = duration
  const error = state?.error
  if (phase === 'Pending' && error?.startsWith(APPROVAL_WAIT)) {
    Object.assign(view, { phase: 'Waiting', label: 'Waiting for approval', reason: firstLine(error), awaitingApproval: true })
  } else if (phase === 'Pending' && state?.nextAttemptAt && Date.parse(state.nextAttemptAt) > now.getTime()) {
    Object.assign(view, { phase: 'Waiting', label: 'Retry pending', reason: `attempt ${retries + 1} after ${state.nextAttemptAt}${error ? `; last error: ${firstLine(error)}` : ''}` })
  } else if (phase === 'Pending' && error) {
    Object.assign(view, { phase: 'Waiting', label: 'Waiting', reason: firstLine(error) })
  } else if (phase === 'Pending' || phase === undefined) {
    if (view.dependsOn.length > 0) view.reason = `after ${view.dependsOn.join(', ')}`
  } else if (phase === 'Skipped') {
    view.reason = firstLine(error) ?? 'its condition is false'
  } else if (phase === 'Failed' && error) {
    view.error = error
    view.reason = firstLine(error)
  } else if (error) {
    view.error = error
  }
  return view
}

function parametersOf(wf: Workflow): [string, string][] {
  return Object.entries(wf.spec.parameters ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
}

/** Pure: the run (or template) as the console shows it at `now`. */
export function workflowView(wf: Workflow, now: Date): RunView | TemplateView {
  return isTemplate(wf) ? templateView(wf) : runView(wf, now)
}

/** Pure: a run at `now`. A rerun about to start shows its steps as not started, as run-control reads it. */
export function runView(wf: Workflow, now: Date): RunView {
  const status = currentRunStatus(wf)
  const states = decodeStepStates(status ? { ...wf, status } : { ...wf, status: {} })
  const steps = wf.spec.steps.map((_, i) => stepView(wf, i, states.get(wf.spec.steps[i]!.name), now))
  const phase = status?.phase ?? 'Pending'
  const view: RunView = {
    kind: 'run',
    namespace: wf.metadata.namespace ?? '',
    name: wf.metadata.name ?? '',
    resourceVersion: wf.metadata.resourceVersion ?? '',
    phase,
    finished: isTerminalPhase(status?.phase),
    progress: {
      completed: status?.completedSteps ?? steps.filter((s) => s.phase === 'Succeeded' || s.phase === 'Skipped').length,
      failed: status?.failedSteps ?? steps.filter((s) => s.phase === 'Failed').length,
      total: status?.totalSteps ?? steps.length,
    },
    parameters: parametersOf(wf),
    conditions: status?.conditions ?? [],
    steps,
  }
  if (status?.message) view.message = status.message
  if (status?.startTime) view.startTime = status.startTime
  if (status?.completionTime) view.completionTime = status.completionTime
  const duration = span(status?.startTime, status?.completionTime, now, !view.finished)
  if (duration !== undefined) view.durationMs = duration
  if (status?.runId) view.runId = status.runId
  if (status?.queuePosition !== undefined) view.queuePosition = status.queuePosition
  const annotations = wf.metadata.annotations ?? {}
  const trigger = {
    ...(annotations[ANNOTATION_TRIGGER_TYPE] ? { type: annotations[ANNOTATION_TRIGGER_TYPE] } : {}),
    ...(annotations[ANNOTATION_TRIGGER_SOURCE] ? { source: annotations[ANNOTATION_TRIGGER_SOURCE] } : {}),
    ...(annotations[ANNOTATION_TRIGGER_ROUTE] ? { route: annotations[ANNOTATION_TRIGGER_ROUTE] } : {}),
  }
  if (Object.keys(trigger).length > 0) view.trigger = trigger
  const template = templateOf(wf)
  if (template) view.template = template
  return view
}

/** Pure: a template's schedule and newest runs. */
export function templateView(wf: Workflow): TemplateView {
  const status = wf.status ?? {}
  const cron = wf.spec.trigger?.schedule?.cron
  const view: TemplateView = {
    kind: 'template',
    namespace: wf.metadata.namespace ?? '',
    name: wf.metadata.name ?? '',
    resourceVersion: wf.metadata.resourceVersion ?? '',
    activeRuns: status.activeRuns ?? 0,
    parameters: parametersOf(wf),
    conditions: status.conditions ?? [],
    recentRuns: status.recentRuns ?? [],
    steps: wf.spec.steps.length,
  }
  if (wf.spec.description) view.description = wf.spec.description
  if (cron && cron.trim() !== '') {
    const schedule = wf.spec.trigger?.schedule
    view.schedule = { cron, suspended: schedule?.suspend === true, ...(schedule?.timezone ? { timezone: schedule.timezone } : {}) }
  }
  if (status.nextRunTime) view.nextRunTime = status.nextRunTime
  if (status.lastScheduleTime) view.lastScheduleTime = status.lastScheduleTime
  return view
}

/** Pure: how many steps are in each display phase (phases with none left out), in DISPLAY_PHASES order. */
export function phaseCounts(steps: readonly Pick<StepView, 'phase'>[]): [DisplayPhase, number][] {
  const counts = new Map<DisplayPhase, number>()
  for (const s of steps) counts.set(s.phase, (counts.get(s.phase) ?? 0) + 1)
  return DISPLAY_PHASES.filter((p) => counts.has(p)).map((p) => [p, counts.get(p)!])
}

/**
 * Pure: a step output as shown: JSON pretty-printed (text as it is when it is not JSON), cut
 * at `max` bytes of UTF-8 with how many bytes were left out.
 */
export function outputText(output: unknown, max = MAX_OUTPUT_BYTES): { text: string; truncatedBytes?: number } {
  let text: string
  if (typeof output === 'string') {
    try {
      text = JSON.stringify(JSON.parse(output), null, 2)
    } catch {
      text = output
    }
  } else {
    text = JSON.stringify(output, null, 2) ?? ''
  }
  const bytes = Buffer.byteLength(text, 'utf8')
  if (bytes <= max) return { text }
  // Cut on a character boundary: decoding a partial sequence would show a replacement character.
  let cut = Buffer.from(text, 'utf8').subarray(0, max).toString('utf8')
  if (cut.endsWith('\uFFFD')) cut = cut.slice(0, -1)
  return { text: cut, truncatedBytes: bytes - Buffer.byteLength(cut, 'utf8') }
}
