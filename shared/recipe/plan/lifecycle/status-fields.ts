/**
 * The parts of a recipe's status beside its phase and conditions (spec §9): a template's message
 * (spec §7.7), `resolved`, `policy`, and the `workloads` rows with `readyWorkloads`. Pure.
 */
import type { WorkflowRecipeStatus } from '../../../schemas/workflowrecipe.js'
import type { LifecycleFacts, ReadinessFacts, WorkloadFact } from '../lifecycle-facts.js'
import { specErrorsMessage } from '../render.js'
import { truncate, type PlanningContext } from './context.js'

type WorkloadRow = NonNullable<WorkflowRecipeStatus['workloads']>[number]

/** Rows kept in `status.workloads`. */
const MAX_WORKLOAD_ROWS = 32

/** Pure: `status.policy` from the policy outcome (first 20 violations); undefined when policies are unavailable. */
export function policyStatusOf(facts: LifecycleFacts): WorkflowRecipeStatus['policy'] | undefined {
  if (facts.policy === 'unavailable') return undefined
  const p = facts.policy
  return { compliant: p.compliant, evaluated: [...p.evaluated], violations: p.violations.slice(0, 20).map((v) => ({ ...v, message: truncate(v.message, 1024) })), totalViolations: p.totalViolations }
}

/**
 * A template's message (spec §7.7): its spec errors, the Enforce policy that would reject it, the
 * inputs it still needs, or that it is valid.
 */
export function describeTemplate(ctx: PlanningContext): void {
  const { status, facts } = ctx
  if (!ctx.template || status.phase !== 'Candidate' || status.reason !== 'Template') return
  const missing = facts.render.ok ? (facts.render.missingInputs ?? []) : []
  status.message = !facts.render.ok
    ? truncate(`Spec is invalid: ${specErrorsMessage(facts.render.errors)}`, 1024)
    : facts.policy !== 'unavailable' && facts.policy.rejected ? truncate(facts.policy.message, 1024)
      : missing.length > 0 ? `Template: requires values for: ${missing.join(', ')}` : 'Template: validated, never deployed'
}

/** `status.resolved` of the latest valid generation, string values cut to 256 characters. */
export function recordResolvedValues(ctx: PlanningContext): void {
  const { render } = ctx.facts
  if (!render.ok) return
  const r = render.resolved
  const trim = (o: Record<string, string | number | boolean>) => Object.fromEntries(Object.entries(o).map(([k, v]) => [k, typeof v === 'string' ? truncate(v, 256) : v]))
  ctx.status.resolved = { profile: r.profile, inputs: trim(r.inputs), computed: trim(r.computed), included: [...r.included], excluded: [...r.excluded], order: [...r.order] }
}

function workloadPhase(w: WorkloadFact | undefined, settled: boolean): 'Waiting' | 'Progressing' | 'Ready' | 'NotReady' | 'Failed' {
  if (!w) return 'Waiting'
  if (w.failed) return 'Failed'
  if (w.ready) return 'Ready'
  if (settled) return 'NotReady'
  return w.missing ? 'Waiting' : 'Progressing'
}

/**
 * `status.workloads` and `readyWorkloads` from the observed revision's readiness: the reported
 * workloads, then the rendered ones not reported yet, then the excluded ones. A row keeps its
 * `since` while its phase stays the same.
 */
export function recordWorkloadRows(ctx: PlanningContext, readiness: ReadinessFacts | undefined, settled: boolean): void {
  const { status, previous, facts, now } = ctx
  if (!readiness || !facts.render.ok) return
  const byName = new Map(readiness.workloads.map((w) => [w.name, w]))
  const previousRows = new Map((previous.workloads ?? []).map((w) => [w.name, w]))
  const names = [...readiness.workloads.map((w) => w.name), ...facts.render.resolved.order.filter((n) => !byName.has(n))]
  const rows: WorkloadRow[] = names.map((name) => {
    const w = byName.get(name)
    const phase = workloadPhase(w, settled)
    const old = previousRows.get(name)
    return {
      name, ...(w ? { kind: w.kind } : {}), included: true,
      ...(w?.namespace ? { namespace: w.namespace } : {}), ...(w?.objectName ? { objectName: w.objectName } : {}),
      phase, ready: phase === 'Ready',
      ...(w?.replicas !== undefined ? { replicas: w.replicas } : {}), ...(w?.readyReplicas !== undefined ? { readyReplicas: w.readyReplicas } : {}),
      since: old?.phase === phase && old.since ? old.since : now,
      ...(w?.failed ? { message: truncate(w.failed.message, 512) } : w?.message ? { message: truncate(w.message, 512) } : {}),
    }
  })
  for (const name of facts.render.resolved.excluded) rows.push({ name, included: false, phase: 'Excluded', ready: false, since: previousRows.get(name)?.phase === 'Excluded' ? previousRows.get(name)!.since ?? now : now })
  status.workloads = rows.slice(0, MAX_WORKLOAD_ROWS)
  status.readyWorkloads = `${rows.filter((r) => r.ready).length}/${rows.filter((r) => r.included).length}`
}
