import { createHash } from 'node:crypto'
import type { WorkflowRecipe, WorkflowRecipeStatus } from '../schemas/workflowrecipe.js'
import { msOf, type SpanRecord } from './span.js'

/**
 * A recipe revision's trace, derived like a run's (ids.ts) from the recipe's uid and the revision
 * number: a root span per revision deploy, from its creation to its final state; below it a span
 * per deploy wave (the workloads at one depth of the dependency order) with a span per workload
 * that became ready or failed in it, and a span per test. Each is written by the status write
 * that ends it.
 */

const hex = (text: string) => createHash('sha256').update(text).digest('hex')

/** The trace id of one revision of a recipe. */
export function revisionTraceId(uid: string, revision: number): string {
  return hex(`recipe/${uid}/${revision}`).slice(0, 32)
}

/** The span id of a revision's root span. */
export function revisionSpanId(uid: string, revision: number): string {
  return hex(`recipe/${uid}/${revision}/deploy`).slice(0, 16)
}

/** The span id of wave `wave` of a revision's deploy (its workloads' parent). */
export function waveSpanId(uid: string, revision: number, wave: number): string {
  return hex(`recipe/${uid}/${revision}/wave/${wave}`).slice(0, 16)
}

const FINAL_WORKLOAD = new Set(['Ready', 'Failed', 'NotReady'])

type StatusWorkload = NonNullable<WorkflowRecipeStatus['workloads']>[number]

/**
 * Pure: each workload's wave, its depth in the recipe's dependency order: 0 for one that depends
 * on nothing, else one more than the deepest workload it depends on. Names the spec does not
 * have (a rollback to an older revision's workloads) are wave 0.
 */
export function workloadWaves(recipe: WorkflowRecipe): Map<string, number> {
  const dependsOn = new Map((recipe.spec?.workloads ?? []).map((w) => [w.name, w.dependsOn ?? []]))
  const waves = new Map<string, number>()
  const depth = (name: string, seen: ReadonlySet<string>): number => {
    const known = waves.get(name)
    if (known !== undefined) return known
    const deps = (dependsOn.get(name) ?? []).filter((d) => dependsOn.has(d) && !seen.has(d))
    const wave = deps.length === 0 ? 0 : 1 + Math.max(...deps.map((d) => depth(d, new Set([...seen, name]))))
    waves.set(name, wave)
    return wave
  }
  for (const name of dependsOn.keys()) depth(name, new Set())
  return waves
}

/**
 * Pure: the wave spans that end between `before` and `next`: a wave ends in the write where its
 * last workload reaches a final phase. It starts when its first workload could start (its last
 * dependency became Ready, or the revision was created) and ends when its last one did.
 */
function waveSpans(
  recipe: WorkflowRecipe, waves: ReadonlyMap<string, number>, before: readonly StatusWorkload[], next: readonly StatusWorkload[], revisionCreatedMs: number,
  ids: { traceId: string; uid: string; revision: number }, base: Record<string, string>,
): SpanRecord[] {
  const dependsOn = new Map((recipe.spec?.workloads ?? []).map((w) => [w.name, w.dependsOn ?? []]))
  const included = next.filter((w) => w.included !== false && w.phase !== 'Excluded')
  const readyAt = new Map(included.filter((w) => w.phase === 'Ready').map((w) => [w.name, msOf(w.since)]))
  const old = new Map(before.map((w) => [w.name, w]))
  const spans: SpanRecord[] = []
  for (const wave of [...new Set(included.map((w) => waves.get(w.name) ?? 0))].sort((a, b) => a - b)) {
    const members = included.filter((w) => (waves.get(w.name) ?? 0) === wave)
    const allFinal = members.every((w) => FINAL_WORKLOAD.has(w.phase ?? ''))
    const endsNow = members.some((w) => old.has(w.name) && !FINAL_WORKLOAD.has(old.get(w.name)!.phase ?? ''))
    if (!allFinal || !endsNow) continue
    const startable = members.map((w) => Math.max(revisionCreatedMs, ...(dependsOn.get(w.name) ?? []).map((d) => readyAt.get(d) ?? revisionCreatedMs)))
    const failed = members.filter((w) => w.phase !== 'Ready')
    spans.push({
      name: `recipe wave ${wave}`, traceId: ids.traceId, spanId: waveSpanId(ids.uid, ids.revision, wave), parentSpanId: revisionSpanId(ids.uid, ids.revision), kind: 'internal',
      startMs: Math.min(...startable), endMs: Math.max(...members.map((w) => msOf(w.since) ?? revisionCreatedMs)),
      attributes: { ...base, 'kinetic.recipe.revision': ids.revision, 'kinetic.recipe.wave': wave, 'kinetic.recipe.wave.workloads': members.map((w) => w.name) },
      ...(failed.length > 0 ? { error: failed.map((w) => `${w.name} ${w.phase}`).join(', ') } : {}),
    })
  }
  return spans
}

/** Pure: the spans that end between `recipe`'s status and `next` (planned at `now`). */
export function recipeSpans(recipe: WorkflowRecipe, next: WorkflowRecipeStatus, now: string): SpanRecord[] {
  const uid = recipe.metadata.uid ?? ''
  const before = recipe.status ?? {}
  const nowMs = msOf(now) ?? 0
  const base = { 'k8s.namespace.name': recipe.metadata.namespace ?? 'default', 'kinetic.recipe': recipe.metadata.name ?? '' }
  const spans: SpanRecord[] = []
  const revision = next.revision
  if (revision !== undefined && revision > 0) {
    const traceId = revisionTraceId(uid, revision)
    const parentSpanId = revisionSpanId(uid, revision)
    const sameRevision = before.revision === revision
    const oldWorkloads = new Map((sameRevision ? before.workloads ?? [] : []).map((w) => [w.name, w]))
    const waves = workloadWaves(recipe)
    for (const w of next.workloads ?? []) {
      const old = oldWorkloads.get(w.name)
      if (!old || !w.phase || !FINAL_WORKLOAD.has(w.phase) || old.phase === w.phase || FINAL_WORKLOAD.has(old.phase ?? '')) continue
      spans.push({
        name: `recipe workload ${w.name}`, traceId, spanId: hex(`${parentSpanId}/workload/${w.name}/${w.since ?? now}`).slice(0, 16),
        parentSpanId: waveSpanId(uid, revision, waves.get(w.name) ?? 0), kind: 'internal',
        startMs: msOf(old.since) ?? nowMs, endMs: msOf(w.since) ?? nowMs,
        attributes: { ...base, 'kinetic.recipe.revision': revision, 'kinetic.workload.name': w.name, 'kinetic.workload.kind': w.kind, 'kinetic.workload.phase': w.phase },
        ...(w.phase === 'Ready' ? {} : { error: (w.message ?? w.phase).slice(0, 256) }),
      })
    }
    const createdMs = msOf(next.revisions?.find((r) => r.revision === revision)?.createdAt) ?? nowMs
    spans.push(...waveSpans(recipe, waves, sameRevision ? before.workloads ?? [] : [], next.workloads ?? [], createdMs, { traceId, uid, revision }, base))
    const oldTests = new Map((sameRevision ? before.tests ?? [] : []).map((t) => [t.name, t]))
    for (const t of next.tests ?? []) {
      if (!t.completionTime || oldTests.get(t.name)?.completionTime === t.completionTime) continue
      spans.push({
        name: `recipe test ${t.name}`, traceId, spanId: hex(`${parentSpanId}/test/${t.name}/${t.jobName ?? ''}`).slice(0, 16), parentSpanId, kind: 'internal',
        startMs: msOf(t.startTime) ?? nowMs, endMs: msOf(t.completionTime) ?? nowMs,
        attributes: { ...base, 'kinetic.recipe.revision': revision, 'kinetic.test.name': t.name, 'kinetic.test.phase': t.phase, 'k8s.job.name': t.jobName },
        ...(t.phase === 'Failed' ? { error: (t.message ?? 'Failed').slice(0, 256) } : {}),
      })
    }
  }
  const oldRevisions = new Map((before.revisions ?? []).map((r) => [r.revision, r]))
  for (const r of next.revisions ?? []) {
    if (!r.finishedAt || oldRevisions.get(r.revision)?.finishedAt) continue
    spans.push({
      name: `recipe deploy ${recipe.metadata.name ?? ''} r${r.revision}`,
      traceId: revisionTraceId(uid, r.revision), spanId: revisionSpanId(uid, r.revision), kind: 'internal',
      startMs: msOf(r.createdAt) ?? nowMs, endMs: msOf(r.finishedAt) ?? nowMs,
      attributes: { ...base, 'kinetic.recipe.revision': r.revision, 'kinetic.recipe.revision.state': r.state, 'kinetic.recipe.reason': r.reason, 'kinetic.recipe.digest': r.digest },
      ...(r.state === 'Failed' ? { error: r.reason ?? 'Failed' } : {}),
    })
  }
  return spans
}
