import type { Workflow } from '../../schemas/workflow.js'
import { ANNOTATION_CANCEL, ANNOTATION_TEMPLATE } from '../../schemas/labels.js'
import { currentRunId, isTerminalPhase } from '../../workflow/plan/run-status.js'
import { templateOf } from '../run-builder.js'

/** The policies `spec.concurrency.policy` may name (any letter case). */
export type ConcurrencyPolicy = 'forbid' | 'replace' | 'allow'

/** A run's concurrency settings as they apply: the policy, how many runs may be active, and what a busy forbid does. */
export interface ConcurrencySettings {
  policy: ConcurrencyPolicy
  /** Most active runs of the template (Infinity: no limit). */
  limit: number
  whenBusy: 'wait' | 'skip'
}

/** What `spec.concurrency` means for a run: nothing (no template or no policy), an unknown value, or a policy. */
export type ConcurrencyRule =
  | { kind: 'none' }
  | { kind: 'unknown'; value: string }
  | ({ kind: 'policy'; template: string } & ConcurrencySettings)

/** An active sibling a `replace` cancels, with the resourceVersion the decision was made on. */
export interface RunCancel {
  name: string
  resourceVersion: string
  /** The text of `kinetic.dev/cancel-reason`. */
  reason: string
}

/** Pure: the admission decision for a run that has not started yet. */
export type Admission =
  | { kind: 'start'; warning?: string }
  | { kind: 'wait'; position: number; message: string }
  | { kind: 'skip'; reason: 'ConcurrencySkipped' | 'ReplacedByConcurrency'; message: string }
  | { kind: 'replace'; cancel: RunCancel[] }

/**
 * Pure: the concurrency rule of a Workflow. Only a run of a template (`purko.io/workflow-template`)
 * with a non-empty `spec.concurrency.policy` has one, as in purko; the policy is matched in any
 * letter case (the docs write `Forbid`, purko's code `forbid`). `allow` without `maxParallel` has no
 * limit (the docs; purko reads it as 1).
 */
export function concurrencyRule(wf: Workflow): ConcurrencyRule {
  const template = templateOf(wf)
  const raw = wf.spec.concurrency?.policy
  if (template === undefined || raw === undefined || raw.trim() === '') return { kind: 'none' }
  const policy = raw.trim().toLowerCase()
  const whenBusy = wf.spec.concurrency?.whenBusy === 'skip' ? 'skip' : 'wait'
  if (policy === 'forbid') return { kind: 'policy', template, policy, limit: 1, whenBusy }
  if (policy === 'replace') return { kind: 'policy', template, policy, limit: 1, whenBusy: 'wait' }
  if (policy === 'allow') {
    const max = wf.spec.concurrency?.maxParallel
    const limit = max === undefined ? Infinity : Math.max(1, Math.floor(max))
    return { kind: 'policy', template, policy, limit, whenBusy: 'wait' }
  }
  return { kind: 'unknown', value: raw }
}

/**
 * Pure: whether admitting this Workflow's current run needs its siblings (the other runs of its
 * template): only a run that has not started, is not being cancelled or deleted, and whose policy
 * can hold it back or cancel others. Everything else costs no list call.
 */
export function needsSiblings(wf: Workflow): boolean {
  const rule = concurrencyRule(wf)
  if (rule.kind !== 'policy' || (rule.policy === 'allow' && rule.limit === Infinity)) return false
  return isWaiting(wf)
}

/** Pure: a run whose current run id has started and not finished (a queued run has no run id). */
export function isActiveRun(wf: Workflow): boolean {
  const status = wf.status
  return status?.runId !== undefined && !isTerminalPhase(status.phase) && status.queuePosition === undefined
}

/** Pure: a run whose current run has yet to start and that will start once admitted. */
export function isWaiting(wf: Workflow): boolean {
  const meta = wf.metadata
  if (meta.deletionTimestamp || meta.annotations?.[ANNOTATION_TEMPLATE] === 'true' || meta.annotations?.[ANNOTATION_CANCEL] === 'true') return false
  if (isActiveRun(wf)) return false
  return wf.status?.runId !== currentRunId(wf)
}

/** Queue order: oldest first, by creationTimestamp then name (first come, first served; ties stable). */
export function queueOrder(a: Workflow, b: Workflow): number {
  const ta = a.metadata.creationTimestamp ?? ''
  const tb = b.metadata.creationTimestamp ?? ''
  if (ta !== tb) return ta < tb ? -1 : 1
  const na = a.metadata.name ?? ''
  const nb = b.metadata.name ?? ''
  return na < nb ? -1 : na > nb ? 1 : 0
}

/** Pure: the siblings that really are runs of `template` (a label value may be cut or shared), without `self`. */
export function siblingsOf(self: Workflow, template: string, runs: readonly Workflow[]): Workflow[] {
  return runs.filter((w) => w.metadata.name !== self.metadata.name && templateOf(w) === template)
}

/** Pure: the waiting siblings and `self` (which asks to start), in the order they start. */
export function queueOf(self: Workflow, siblings: readonly Workflow[]): Workflow[] {
  return [...siblings.filter(isWaiting), self].sort(queueOrder)
}

/**
 * Pure: whether `self` (a run that has not started) may start now, given the other runs of its
 * template. A run starts when the active runs plus the waiting runs ahead of it stay under the
 * limit; otherwise it waits with its queue position (1 starts next), or under `forbid` with
 * `whenBusy: skip` ends at once. `replace` cancels every active sibling and starts, unless a newer
 * run of the template is active or waiting: then this one is replaced itself, so the newest run
 * wins whatever order the events come in.
 */
export function admitRun(self: Workflow, siblings: readonly Workflow[]): Admission {
  const rule = concurrencyRule(self)
  if (rule.kind === 'none') return { kind: 'start' }
  if (rule.kind === 'unknown') {
    return {
      kind: 'start',
      warning: `Unknown concurrency policy "${rule.value}" (use forbid, replace or allow); the run starts without a limit`,
    }
  }
  const template = rule.template
  const others = siblingsOf(self, template, siblings)
  const active = others.filter(isActiveRun).sort(queueOrder)

  if (rule.policy === 'replace') {
    const newer = others.filter((w) => (isActiveRun(w) || isWaiting(w)) && queueOrder(w, self) > 0).sort(queueOrder)
    const newest = newer[newer.length - 1]
    if (newest) {
      return {
        kind: 'skip', reason: 'ReplacedByConcurrency',
        message: `Replaced by run ${newest.metadata.name ?? ''} (concurrency replace)`,
      }
    }
    if (active.length === 0) return { kind: 'start' }
    const reason = `Replaced by run ${self.metadata.name ?? ''} (concurrency replace)`
    return {
      kind: 'replace',
      cancel: active.map((w) => ({ name: w.metadata.name ?? '', resourceVersion: w.metadata.resourceVersion ?? '', reason })),
    }
  }

  const queue = queueOf(self, others)
  const ahead = queue.indexOf(self)
  if (active.length + ahead < rule.limit) return { kind: 'start' }
  const label = `concurrency ${rule.policy}, limit ${rule.limit}`
  if (rule.policy === 'forbid' && rule.whenBusy === 'skip') {
    const busy = active.length > 0
      ? `${active.length} run(s) of template ${template} active (${active.map((w) => w.metadata.name ?? '').join(', ')})`
      : `${ahead} older run(s) of template ${template} waiting to start`
    return { kind: 'skip', reason: 'ConcurrencySkipped', message: `Skipped: ${busy} (${label}, whenBusy skip)` }
  }
  const position = active.length + ahead - rule.limit + 1
  return {
    kind: 'wait', position,
    message: `Queued: position ${position}; ${active.length} run(s) of template ${template} active (${label})`,
  }
}
