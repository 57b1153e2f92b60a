import { topologicalOrder } from '../shared/workflow/plan/dag.js'
import { decodeStepStates, type StepState } from '../shared/workflow/plan/step-states.js'
import {
  ANNOTATION_TRIGGER_SOURCE, ANNOTATION_TRIGGER_TYPE,
} from '../shared/schemas/labels.js'
import { isTemplate, templateOf } from '../shared/template/run-builder.js'
import type { Workflow } from '../shared/schemas/workflow.js'
import { between, relative, table } from './output.js'

const APPROVAL_WAIT = 'Waiting for human approval'

/** Pure: what `status` prints for a Workflow: a template's schedule and runs, or a run's step tree. */
export function statusView(wf: Workflow, now: Date): string {
  return isTemplate(wf) ? templateView(wf, now) : runView(wf, now)
}

/** Pure: one line of notes about a step: retries, what it waits for, its error, whether a person must approve. */
export function stepNotes(wf: Workflow, step: string, state: StepState | undefined, extraDeps: readonly string[], now: Date): string {
  const notes: string[] = []
  if (state?.retryCount) notes.push(`retries ${state.retryCount}`)
  if (state?.nextAttemptAt) notes.push(`next attempt ${relative(state.nextAttemptAt, now)}`)
  const error = state?.error?.split('\n')[0]
  if (error && state?.phase === 'Pending' && error.startsWith(APPROVAL_WAIT)) {
    notes.push(`approval needed: kinetic approve ${wf.metadata.name} ${step}`)
  } else if (error && state?.phase === 'Pending') {
    notes.push(`waiting: ${error}`)
  } else if (error && state?.phase === 'Failed') {
    notes.push(`error: ${error}`)
  }
  if (state?.message) notes.push(state.message)
  if (extraDeps.length > 0) notes.push(`after ${extraDeps.join(', ')}`)
  return notes.join('; ')
}

/**
 * Pure: the steps as a tree: each step hangs under the dependency that comes last in
 * topological order (the others are named in its notes), roots and siblings in topological order.
 */
export function stepTree(wf: Workflow): { name: string; prefix: string; extraDeps: string[] }[] {
  const steps = wf.spec.steps
  const order = topologicalOrder(steps) ?? steps.map((_, i) => i)
  const rank = new Map(order.map((index, r) => [steps[index]!.name, r]))
  const children = new Map<string, string[]>()
  const roots: string[] = []
  const extra = new Map<string, string[]>()
  for (const index of order) {
    const step = steps[index]!
    const deps = [...new Set(step.dependsOn ?? [])].filter((d) => rank.has(d) && d !== step.name)
    if (deps.length === 0) {
      roots.push(step.name)
      continue
    }
    deps.sort((a, b) => rank.get(a)! - rank.get(b)!)
    const parent = deps[deps.length - 1]!
    extra.set(step.name, deps.slice(0, -1))
    const list = children.get(parent) ?? []
    list.push(step.name)
    children.set(parent, list)
  }
  const rows: { name: string; prefix: string; extraDeps: string[] }[] = []
  // Iterative depth-first walk: a 10,000-step chain must not overflow the stack.
  const stack: { name: string; indent: string; last: boolean }[] = roots.map((name, i) => ({ name, indent: '', last: i === roots.length - 1 })).reverse()
  while (stack.length > 0) {
    const { name, indent, last } = stack.pop()!
    rows.push({ name, prefix: `${indent}${last ? '└─ ' : '├─ '}`, extraDeps: extra.get(name) ?? [] })
    const kids = children.get(name) ?? []
    const childIndent = `${indent}${last ? '   ' : '│  '}`
    for (let i = kids.length - 1; i >= 0; i--) stack.push({ name: kids[i]!, indent: childIndent, last: i === kids.length - 1 })
  }
  return rows
}

function stepDuration(state: StepState | undefined, now: Date): string {
  if (!state?.startTime) return ''
  if (state.completionTime) return between(state.startTime, state.completionTime, now)
  return state.phase === 'Running' || state.phase === 'RollingBack' ? between(state.startTime, undefined, now) : ''
}

/** Pure: a run's header and step tree. */
export function runView(wf: Workflow, now: Date): string {
  const name = wf.metadata.name ?? ''
  const status = wf.status ?? {}
  const lines: string[] = []
  const took = between(status.startTime, status.completionTime, now)
  lines.push(`workflow ${wf.metadata.namespace ?? ''}/${name}   ${status.phase ?? 'Pending'}${took ? `   ${took}` : ''}${status.runId ? `   run ${status.runId}` : ''}`)
  const template = templateOf(wf)
  if (template) {
    const annotations = wf.metadata.annotations ?? {}
    const type = annotations[ANNOTATION_TRIGGER_TYPE]
    const source = annotations[ANNOTATION_TRIGGER_SOURCE]
    lines.push(`  run of template ${template}${type ? `, ${type}` : ''}${source ? ` (${source})` : ''}`)
  }
  if (status.startTime) lines.push(`  started ${relative(status.startTime, now)}${status.completionTime ? `, finished ${relative(status.completionTime, now)}` : ''}`)
  if (status.queuePosition !== undefined) lines.push(`  queued: position ${status.queuePosition}`)
  if (status.message) lines.push(`  message: ${status.message}`)
  const total = status.totalSteps ?? wf.spec.steps.length
  lines.push(`  steps: ${status.completedSteps ?? 0}/${total} done, ${status.failedSteps ?? 0} failed`)
  const states = decodeStepStates(wf)
  const rows = stepTree(wf).map((row) => {
    const state = states.get(row.name)
    return [
      `${row.prefix}${row.name}`,
      state?.phase ?? '-',
      stepDuration(state, now),
      stepNotes(wf, row.name, state, row.extraDeps, now),
    ]
  })
  return `${lines.join('\n')}\n\n${table(['STEP', 'PHASE', 'DURATION', 'NOTES'], rows)}`
}

/** Pure: a template's schedule, timing fields, active runs and recent runs. */
export function templateView(wf: Workflow, now: Date): string {
  const name = wf.metadata.name ?? ''
  const status = wf.status ?? {}
  const schedule = wf.spec.trigger?.schedule
  const at = (t: string | undefined) => (t ? `${t} (${relative(t, now)})` : '-')
  const lines: string[] = [`template ${wf.metadata.namespace ?? ''}/${name}`]
  if (wf.spec.description) lines.push(`  description:    ${wf.spec.description}`)
  if (schedule?.cron) {
    lines.push(`  schedule:       ${schedule.cron}${schedule.timezone ? ` (${schedule.timezone})` : ''}${schedule.suspend ? '   suspended' : ''}`
      + `${schedule.catchUp ? `   catch-up ${schedule.catchUp}` : ''}`)
  } else {
    lines.push('  schedule:       none (runs start from `kinetic run`, a webhook or run-control)')
  }
  lines.push(`  next run:       ${at(status.nextRunTime)}`)
  lines.push(`  last schedule:  ${at(status.lastScheduleTime)}`)
  lines.push(`  last trigger:   ${at(status.lastTriggerTime)}`)
  lines.push(`  active runs:    ${status.activeRuns ?? 0}`)
  const concurrency = wf.spec.concurrency
  if (concurrency?.policy) {
    lines.push(`  concurrency:    ${concurrency.policy}${concurrency.maxParallel ? ` (max ${concurrency.maxParallel})` : ''}${concurrency.whenBusy ? ` when busy: ${concurrency.whenBusy}` : ''}`)
  }
  for (const c of status.conditions ?? []) {
    if (c.status !== 'True') lines.push(`  ${c.type}=${c.status} ${c.reason ?? ''}${c.message ? `: ${c.message}` : ''}`)
  }
  const runs = status.recentRuns ?? []
  if (runs.length === 0) return `${lines.join('\n')}\n\nno recent runs\n`
  const rows = runs.map((r) => [r.name, r.phase ?? '-', r.trigger ?? '-', relative(r.startTime, now) || '-', between(r.startTime, r.completionTime, now) || '-'])
  return `${lines.join('\n')}\n\nrecent runs:\n${table(['NAME', 'PHASE', 'TRIGGER', 'STARTED', 'DURATION'], rows)}`
}
