import { createHash } from 'node:crypto'
import type { WorkflowRecipe, WorkflowRecipeStatus } from '../schemas/workflowrecipe.js'
import { msOf, type SpanRecord } from './span.js'

/**
 * A recipe revision's trace, derived like a run's (ids.ts) from the recipe's uid and the revision
 * number: a root span per revision deploy, from its creation to its final state, with a span per
 * workload that became ready or failed in it and one per test. Each is written by the status write
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

const FINAL_WORKLOAD = new Set(['Ready', 'Failed', 'NotReady'])

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
    for (const w of next.workloads ?? []) {
      const old = oldWorkloads.get(w.name)
      if (!old || !w.phase || !FINAL_WORKLOAD.has(w.phase) || old.phase === w.phase || FINAL_WORKLOAD.has(old.phase ?? '')) continue
      spans.push({
        name: `recipe workload ${w.name}`, traceId, spanId: hex(`${parentSpanId}/workload/${w.name}/${w.since ?? now}`).slice(0, 16), parentSpanId, kind: 'internal',
        startMs: msOf(old.since) ?? nowMs, endMs: msOf(w.since) ?? nowMs,
        attributes: { ...base, 'kinetic.recipe.revision': revision, 'kinetic.workload.name': w.name, 'kinetic.workload.kind': w.kind, 'kinetic.workload.phase': w.phase },
        ...(w.phase === 'Ready' ? {} : { error: (w.message ?? w.phase).slice(0, 256) }),
      })
    }
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
