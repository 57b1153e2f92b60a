/**
 * The recipe lifecycle planner (spec §7.1-§7.7, §7.10, §9, §13): from a recipe (spec,
 * annotations, status) and the facts a shell read (lifecycle-facts.ts), the next status, the one
 * action to take next and the transitions to announce. Pure: `now` is an argument, no I/O.
 *
 * Every transition T1-T27 of the spec §7.3 table is one branch of `step`; transient states are passed
 * through within one plan (each passage recorded in history and announced). Idempotent: the same
 * facts over the same status give the same plan, and planning over a status this planner just
 * produced, with the same facts, changes nothing (no transition, same status).
 *
 * What happens *within* an action (deploy order, apply, prune, drift, rollback waves, deletion)
 * belongs to deploy-plan.ts, drift.ts, rollback.ts and deletion.ts; this file decides *when*.
 */
import type { Condition } from '../schemas/condition.js'
import type { RecipePhase, WorkflowRecipe, WorkflowRecipeStatus } from '../schemas/workflowrecipe.js'
import { canonicalJson } from './digest.js'
import type { LifecycleFacts, ReadinessFacts, TestFact, WorkloadFact } from './lifecycle-facts.js'
import {
  annotationOf, ANNOTATION_APPROVE, ANNOTATION_DEPRECATE, ANNOTATION_REJECT, ANNOTATION_RETRY, ANNOTATION_ROLLBACK, approveCommand, approverOf, FINALIZER,
} from './lifecycle/annotations.js'
import { CE_PHASE_CHANGED, CE_POLICY_VIOLATED, CE_REVISION_CREATED, CE_TEST_FINISHED, type LifecycleAction, type LifecyclePlan, type RecipeTransition } from './lifecycle/plan-types.js'
import { readinessTimeout } from './readiness.js'
import { isTemplate, specErrorsMessage } from './render.js'

const DEFAULT_PROGRESS_DEADLINE = 600
const DEFAULT_HISTORY_LIMIT = 5
const DEFAULT_TEST_TIMEOUT = 300
const MAX_HISTORY = 20
const MAX_REVISIONS = 20
/** A plan passes through at most this many transitions (the longest chain is 7). */
const MAX_STEPS = 16

/** Phases whose Event is a Warning (spec §13). */
const WARNING_PHASES: ReadonlySet<string> = new Set(['Failed', 'Rejected', 'RollbackFailed', 'Degraded', 'RollingBack'])
const IN_FLIGHT: ReadonlySet<string> = new Set(['Pending', 'Deploying', 'Testing', 'RollingBack'])

type Status = WorkflowRecipeStatus
type RevisionEntry = NonNullable<Status['revisions']>[number]
type ApprovalStatus = NonNullable<Status['approval']>
type Failure = { reason: string; message: string }

interface Ctx {
  recipe: WorkflowRecipe
  facts: LifecycleFacts
  now: string
  G: number
  st: Status
  prev: Status
  transitions: RecipeTransition[]
  abandon?: number
  /** UpToDate set explicitly by a transition of this plan. */
  upToDate?: { status: 'True' | 'False'; reason: string; message: string }
  /** An ignored approve/reject value of this plan (for the Approved condition marker). */
  ignored?: string
}

const cut = (text: string, max: number): string => (text.length > max ? text.slice(0, max) : text)
const addSeconds = (iso: string, s: number): string => new Date(Date.parse(iso) + s * 1000).toISOString()
const reached = (iso: string | undefined, now: string): boolean => iso !== undefined && Date.parse(iso) <= Date.parse(now)

function progressDeadline(r: WorkflowRecipe): number { return r.spec.progressDeadlineSeconds ?? DEFAULT_PROGRESS_DEADLINE }
function hasSteps(r: WorkflowRecipe): boolean { return (r.spec.steps ?? []).length > 0 }

function entry(st: Status, revision: number | undefined): RevisionEntry | undefined {
  return revision ? st.revisions?.find((e) => e.revision === revision) : undefined
}

function setEntry(st: Status, revision: number, patch: Partial<RevisionEntry>): void {
  st.revisions = (st.revisions ?? []).map((e) => (e.revision === revision ? { ...e, ...patch } : e))
}

/** A revision once reached `Active` (spec §7.2, §7.3 T5): its entry says so, or it is the last good one. */
function reachedActive(st: Status, revision: number): boolean {
  const e = entry(st, revision)
  return revision > 0 && (revision === st.lastGoodRevision || e?.state === 'Active' || e?.state === 'Superseded')
}

/** The revision whose readiness the phase observes (the shell gathers facts for this one). */
export function observedRevision(st: Status): number {
  if (st.phase === 'Pending' || st.phase === 'Deploying' || st.phase === 'Testing') return st.revision ?? 0
  if (st.phase === 'RollingBack') return rollbackTarget(st)
  return st.currentRevision ?? 0
}

/** Where a rollback goes: the requested revision, else the last good one. */
export function rollbackTarget(st: Status): number {
  return st.reason === 'ManualRollback' ? Number(st.observedRollback) : (st.lastGoodRevision ?? 0)
}

function readinessFor(ctx: Ctx, revision: number): ReadinessFacts | undefined {
  const r = ctx.facts.readiness
  return r && revision > 0 && r.revision === revision ? r : undefined
}

function go(ctx: Ctx, to: RecipePhase, reason: string, message: string): void {
  const { st } = ctx
  const from = st.phase
  st.phase = to
  st.reason = reason
  st.message = cut(message, 1024)
  st.phaseTransitionTime = ctx.now
  const history = [...(st.history ?? []), { time: ctx.now, ...(from ? { from } : {}), to, reason, revision: st.revision ?? 0, message: cut(message, 256) }]
  st.history = history.slice(-MAX_HISTORY)
  ctx.transitions.push({
    kind: 'phase.changed',
    type: WARNING_PHASES.has(to) ? 'Warning' : 'Normal',
    reason,
    message: st.message,
    record: true,
    cloudEventType: CE_PHASE_CHANGED,
    data: { from: from ?? '', to, reason, message: st.message, generation: ctx.G, revision: st.revision ?? 0 },
  })
}

function note(ctx: Ctx, reason: string, message: string, type: 'Normal' | 'Warning' = 'Normal', extra: Partial<RecipeTransition> = {}): void {
  ctx.transitions.push({ kind: extra.kind ?? 'event', type, reason, message, record: extra.record ?? true, ...extra })
}

/** Allocate revision N = highest + 1 (T11). */
function allocate(ctx: Ctx): void {
  const { st, facts } = ctx
  const highest = Math.max(st.revision ?? 0, ...(st.revisions ?? []).map((e) => e.revision))
  const n = highest + 1
  const digest = facts.render.ok ? facts.render.digest.slice(0, 16) : undefined
  const configMap = `${ctx.recipe.metadata.name ?? ''}-rev-${n}`
  st.revision = n
  st.revisions = [...(st.revisions ?? []), { revision: n, generation: ctx.G, state: 'InProgress' as const, ...(digest ? { digest } : {}), configMap, createdAt: ctx.now }].slice(-MAX_REVISIONS)
  go(ctx, 'Pending', 'WaitingForPrerequisites', `Revision ${n} allocated for generation ${ctx.G}; waiting for prerequisites`)
  ctx.transitions.push({
    kind: 'revision.created', type: 'Normal', reason: 'RevisionCreated', message: `Revision ${n} created (${configMap})`, record: false,
    cloudEventType: CE_REVISION_CREATED, data: { generation: ctx.G, revision: n, digest: digest ?? '', configMap },
  })
}

/** T15/T16/T18: revision N failed; roll back automatically when possible. */
function fail(ctx: Ctx, f: Failure): void {
  const { st, recipe, facts } = ctx
  const n = st.revision ?? 0
  setEntry(st, n, { state: 'Failed', finishedAt: ctx.now, reason: f.reason })
  const good = st.lastGoodRevision ?? 0
  const automatic = recipe.spec.rollback?.automatic !== false
  if (automatic && good > 0 && good !== n && facts.snapshots.includes(good)) {
    go(ctx, 'RollingBack', 'AutomaticRollback', `revision ${n} failed: ${f.reason}: ${f.message}; rolling back to revision ${good}`)
  } else {
    go(ctx, 'Failed', f.reason, f.message)
  }
}

function activate(ctx: Ctx): void {
  const { st } = ctx
  const n = st.revision ?? 0
  st.revisions = (st.revisions ?? []).map((e) => (e.revision === n ? { ...e, state: 'Active', finishedAt: ctx.now } : e.state === 'Active' ? { ...e, state: 'Superseded' } : e))
  st.currentRevision = n
  st.lastGoodRevision = n
  ctx.upToDate = { status: 'True', reason: 'UpToDate', message: `revision ${n} runs generation ${ctx.G}` }
  for (const t of ctx.facts.tests?.revision === n ? ctx.facts.tests.results : []) testFinished(ctx, t)
  go(ctx, 'Active', 'RevisionActive', `Revision ${n} is active`)
}

function testFinished(ctx: Ctx, t: TestFact): void {
  if (t.phase !== 'Succeeded' && t.phase !== 'Failed') return
  ctx.transitions.push({
    kind: 'test.finished', type: t.phase === 'Failed' ? 'Warning' : 'Normal', reason: 'TestFinished', message: `test "${t.name}" ${t.phase === 'Failed' ? 'failed' : 'succeeded'}`,
    record: false, cloudEventType: CE_TEST_FINISHED, data: { test: t.name, jobName: t.jobName, outcome: t.phase, revision: ctx.st.revision ?? 0, generation: ctx.G },
  })
}

/** The first workload (in order) that failed for good, or the workflow; then the deadlines (spec §6). */
function deployFailure(ctx: Ctx, rf: ReadinessFacts | undefined): Failure | undefined {
  const { st, recipe, facts, now } = ctx
  const n = st.revision ?? 0
  const failed = rf?.workloads.find((w) => w.failed)
  if (failed?.failed) return { reason: failed.failed.reason, message: failed.failed.message }
  if (hasSteps(recipe) && facts.workflow?.revision === n && facts.workflow.phase === 'Failed') {
    return { reason: 'WorkflowFailed', message: facts.workflow.message ?? `the child Workflow of revision ${n} failed` }
  }
  const deadline = readinessTimeout(notReadyOf(ctx, rf), st.phaseTransitionTime ?? now, progressDeadline(recipe), now)
  return deadline.expired ? { reason: 'ReadinessTimeout', message: deadline.expired.message } : undefined
}

function notReadyOf(ctx: Ctx, rf: ReadinessFacts | undefined) {
  const specOf = new Map((ctx.recipe.spec.workloads ?? []).map((w) => [w.name, w]))
  const order = ctx.facts.render.ok ? ctx.facts.render.resolved.order : []
  const byName = new Map((rf?.workloads ?? []).map((w) => [w.name, w]))
  return order.filter((name) => !byName.get(name)?.ready).map((name) => {
    const w = byName.get(name)
    const timeout = specOf.get(name)?.readinessTimeoutSeconds
    return {
      name,
      kind: w?.kind ?? specOf.get(name)?.kind ?? 'Deployment',
      detail: w?.message ?? (w?.missing !== false ? 'not applied yet' : 'not ready'),
      ...(w?.firstAppliedAt ? { firstAppliedAt: w.firstAppliedAt } : {}),
      ...(timeout !== undefined ? { readinessTimeoutSeconds: timeout } : {}),
    }
  })
}

function allReady(ctx: Ctx, rf: ReadinessFacts | undefined): boolean {
  if (!rf || !ctx.facts.render.ok) return false
  const byName = new Map(rf.workloads.map((w) => [w.name, w]))
  return ctx.facts.render.resolved.order.every((n) => byName.get(n)?.ready === true)
}

/** Readiness of the running revision while settled: every reported workload Ready (no report: assume so). */
function settledProblem(rf: ReadinessFacts | undefined): { reason: 'ChildMissing' | 'WorkloadNotReady'; message: string } | undefined {
  const w = rf?.workloads.find((x) => !x.ready)
  if (!w) return undefined
  if (w.missing) return { reason: 'ChildMissing', message: `${w.kind} ${w.namespace ?? ''}/${w.objectName ?? w.name} of workload "${w.name}" is missing` }
  return { reason: 'WorkloadNotReady', message: `workload "${w.name}" (${w.kind}) is not ready: ${w.message ?? 'not ready'}` }
}

function testTimeout(ctx: Ctx, name: string): number {
  return (ctx.recipe.spec.tests ?? []).find((t) => t.name === name)?.timeoutSeconds ?? DEFAULT_TEST_TIMEOUT
}

function testFailure(ctx: Ctx, results: TestFact[]): Failure | undefined {
  for (const t of results) {
    const timeout = testTimeout(ctx, t.name)
    if (t.phase === 'Failed') {
      if (t.failedReason === 'DeadlineExceeded') return { reason: 'TestTimeout', message: `test "${t.name}" did not finish within ${timeout}s` }
      return { reason: 'TestFailed', message: `test "${t.name}" failed${t.message ? `: ${t.message}` : ''}` }
    }
    if (t.phase !== 'Succeeded' && t.startTime && reached(addSeconds(t.startTime, timeout), ctx.now)) {
      return { reason: 'TestTimeout', message: `test "${t.name}" did not finish within ${timeout}s` }
    }
  }
  return undefined
}

function approvalMessage(ctx: Ctx, requiredBy: string[]): string {
  const ns = ctx.recipe.metadata.namespace ?? 'default'
  const name = ctx.recipe.metadata.name ?? ''
  return `Waiting for approval of generation ${ctx.G} (required by ${requiredBy.join(', ')}): ${approveCommand(ns, name, ctx.G)}`
}

function policyStatusOf(facts: LifecycleFacts): Status['policy'] | undefined {
  if (facts.policy === 'unavailable') return undefined
  const p = facts.policy
  return { compliant: p.compliant, evaluated: [...p.evaluated], violations: p.violations.slice(0, 20).map((v) => ({ ...v, message: cut(v.message, 1024) })), totalViolations: p.totalViolations }
}

function sameList(a: readonly string[] | undefined, b: readonly string[] | undefined): boolean {
  return canonicalJson(a ?? []) === canonicalJson(b ?? [])
}

/** spec §7.2 retry: acted on in Failed, RollbackFailed, Rejected by policy or expiry, and Active/Degraded after a rollback. */
function retryAllowed(st: Status): boolean {
  if (st.phase === 'Failed' || st.phase === 'RollbackFailed') return true
  if (st.phase === 'Rejected') return st.reason === 'PolicyViolation' || st.reason === 'ApprovalExpired'
  if (st.phase === 'Active' || st.phase === 'Degraded') {
    const up = st.conditions?.find((c) => c.type === 'UpToDate')
    return up?.status === 'False' && (up.reason === 'RolledBack' || up.reason === 'ManualRollback')
  }
  return false
}

/** The edge-triggered annotations (spec §7.2): true when something changed. */
function edges(ctx: Ctx): boolean {
  const { st, recipe } = ctx
  const retry = annotationOf(recipe, ANNOTATION_RETRY)
  if (retry !== undefined && retry !== st.observedRetry) {
    st.observedRetry = cut(retry, 253)
    if (retryAllowed(st)) {
      go(ctx, 'Candidate', 'RetryRequested', `Retry "${retry}" requested: re-attempting generation ${ctx.G} as a new revision`)
    } else {
      note(ctx, 'RetryIgnored', `${ANNOTATION_RETRY}="${retry}" ignored in phase ${st.phase}`)
    }
    return true
  }
  const rollback = annotationOf(recipe, ANNOTATION_ROLLBACK)
  if (rollback !== undefined && rollback !== st.observedRollback) {
    st.observedRollback = cut(rollback, 253)
    const r = /^[1-9][0-9]*$/.test(rollback) ? Number(rollback) : 0
    const inState = st.phase === 'Active' || st.phase === 'Degraded' || st.phase === 'Failed' || st.phase === 'RollbackFailed'
    if (inState && r > 0 && reachedActive(st, r) && ctx.facts.snapshots.includes(r)) {
      go(ctx, 'RollingBack', 'ManualRollback', `Rolling back to revision ${r} (${ANNOTATION_ROLLBACK})`)
    } else {
      const why = !inState ? `in phase ${st.phase}` : `revision ${rollback} never reached Active or has no snapshot`
      note(ctx, 'RollbackIgnored', `${ANNOTATION_ROLLBACK}="${rollback}" ignored: ${why}`)
    }
    return true
  }
  return false
}

/** One transition of the spec §7.3 table, or false when none fires. */
function step(ctx: Ctx): boolean {
  const { st, recipe, facts, now, G } = ctx
  const template = isTemplate(recipe)

  // T1 (templates: Candidate with reason Template, spec §7.7).
  if (!st.phase) {
    st.observedGeneration = G
    if (template) go(ctx, 'Candidate', 'Template', 'Template: validated, never deployed')
    else go(ctx, 'Candidate', 'Created', `Recipe created; validating generation ${G}`)
    return true
  }
  // T26 / T27 (level-triggered).
  const deprecate = annotationOf(recipe, ANNOTATION_DEPRECATE) === 'true'
  if (st.phase === 'Deprecated') {
    if (!deprecate) { go(ctx, 'Candidate', 'Undeprecated', `No longer deprecated; re-evaluating generation ${G}`); return true }
    if (G > (st.observedGeneration ?? 0)) {
      st.observedGeneration = G
      note(ctx, 'SpecChangeIgnored', `generation ${G} ignored: the recipe is deprecated`)
      return true
    }
    return edges(ctx)
  }
  if (deprecate) {
    ctx.upToDate = { status: 'False', reason: 'Deprecated', message: 'the recipe is deprecated' }
    go(ctx, 'Deprecated', 'Deprecated', 'Deprecated by its owner; children are left as they are')
    return true
  }
  // T2.
  if (G > (st.observedGeneration ?? 0)) {
    st.observedGeneration = G
    let abandoned = ''
    if (st.phase === 'Pending' || st.phase === 'Deploying' || st.phase === 'Testing') {
      const n = st.revision ?? 0
      if (entry(st, n)?.state === 'InProgress') setEntry(st, n, { state: 'Abandoned', finishedAt: now, reason: 'NewGeneration' })
      if (st.phase !== 'Pending') ctx.abandon = n
      abandoned = `; revision ${n} abandoned`
    }
    if (st.approval && st.approval.generation !== G) delete st.approval
    go(ctx, 'Candidate', 'NewGeneration', `Generation ${G} is being validated${abandoned}`)
    return true
  }
  // A template never leaves Candidate (spec §7.7).
  if (template) {
    if (st.phase !== 'Candidate') { go(ctx, 'Candidate', 'Template', 'Template: validated, never deployed'); return true }
    st.reason = 'Template'
    return false
  }
  if (edges(ctx)) return true

  switch (st.phase) {
    case 'Candidate': {
      if (!facts.render.ok) {
        const first = facts.render.errors[0]
        go(ctx, 'Failed', first?.reason === 'RevisionTooLarge' ? 'RevisionTooLarge' : 'SpecInvalid', `Spec is invalid: ${specErrorsMessage(facts.render.errors)}`)
        note(ctx, 'SpecInvalid', `Spec is invalid: ${specErrorsMessage(facts.render.errors)}`, 'Warning')
        return true
      }
      if (facts.policy === 'unavailable') return false
      const policy = facts.policy
      st.policy = policyStatusOf(facts)
      if (policy.rejected) { // T4
        go(ctx, 'Rejected', 'PolicyViolation', policy.message)
        for (const v of policy.violations.filter((x) => x.mode === 'Enforce')) {
          ctx.transitions.push({ kind: 'policy.violated', type: 'Warning', reason: 'PolicyViolation', message: `${v.policy}: ${v.rule}: ${v.message}`, record: false, cloudEventType: CE_POLICY_VIOLATED, data: { policy: v.policy, mode: v.mode, rule: v.rule, message: v.message, generation: G, revision: st.revision ?? 0 } })
        }
        return true
      }
      const current = st.currentRevision ?? 0
      const retry = st.reason === 'RetryRequested'
      if (!retry && current > 0 && reachedActive(st, current) && entry(st, current)?.digest === facts.render.digest.slice(0, 16)) { // T5
        const problem = settledProblem(readinessFor(ctx, current))
        ctx.upToDate = { status: 'True', reason: 'UpToDate', message: `revision ${current} runs generation ${G}` }
        go(ctx, problem ? 'Degraded' : 'Active', 'NoEffectiveChange', `Generation ${G} renders the same as revision ${current}; nothing to deploy${problem ? `; ${problem.message}` : ''}`)
        return true
      }
      const required = policy.approval.required
      const rejectedNow = annotationOf(recipe, ANNOTATION_REJECT) === String(G)
      const approvedNow = annotationOf(recipe, ANNOTATION_APPROVE) === String(G) || (st.approval?.generation === G && st.approval.state === 'Approved')
      if (!required) { // T7
        st.approval = { required: false, state: 'NotRequired', generation: G }
        go(ctx, 'Approved', 'AutoApproved', `Generation ${G} needs no approval`)
      } else if (approvedNow && !rejectedNow) { // T7
        const decidedAt = st.approval?.generation === G && st.approval.state === 'Approved' ? (st.approval.decidedAt ?? now) : now
        const approvedBy = st.approval?.generation === G && st.approval.approvedBy ? st.approval.approvedBy : approverOf(recipe)
        st.approval = { required: true, state: 'Approved', generation: G, requiredBy: [...policy.approval.requiredBy], ...(st.approval?.requestedAt ? { requestedAt: st.approval.requestedAt } : {}), decidedAt, approvedBy }
        go(ctx, 'Approved', 'Approved', `Generation ${G} was approved by ${approvedBy}`)
      } else { // T6
        const keep = st.approval?.generation === G && st.approval.state === 'Pending' && st.approval.requestedAt
        st.approval = { required: true, state: 'Pending', generation: G, requiredBy: [...policy.approval.requiredBy], requestedAt: keep ? st.approval!.requestedAt! : now }
        go(ctx, 'PendingApproval', 'ApprovalRequired', approvalMessage(ctx, policy.approval.requiredBy))
      }
      return true
    }
    case 'PendingApproval': {
      const approval = st.approval as ApprovalStatus | undefined
      if (annotationOf(recipe, ANNOTATION_REJECT) === String(G)) { // T9
        st.approval = { ...approval, state: 'Rejected', decidedAt: now, approvedBy: approverOf(recipe) }
        go(ctx, 'Rejected', 'ApprovalRejected', `Generation ${G} was rejected by ${approverOf(recipe)}`)
        return true
      }
      if (annotationOf(recipe, ANNOTATION_APPROVE) === String(G)) { // T8
        st.approval = { ...approval, state: 'Approved', decidedAt: now, approvedBy: approverOf(recipe) }
        go(ctx, 'Approved', 'Approved', `Generation ${G} was approved by ${approverOf(recipe)}`)
        return true
      }
      if (facts.policy !== 'unavailable') {
        const p = facts.policy
        const changed = p.rejected || !p.approval.required || !sameList(p.approval.requiredBy, approval?.requiredBy) || p.compliant !== (st.policy?.compliant ?? p.compliant)
        if (changed) { go(ctx, 'Candidate', 'PolicyChanged', `Policies changed; re-evaluating generation ${G}`); return true } // T25
        const timeout = p.approval.timeoutSeconds ?? 0
        if (timeout > 0 && approval?.requestedAt && reached(addSeconds(approval.requestedAt, timeout), now)) { // T10
          st.approval = { ...approval, state: 'Expired', decidedAt: now }
          go(ctx, 'Rejected', 'ApprovalExpired', `The approval request for generation ${G} expired after ${timeout}s`)
          return true
        }
      }
      return false
    }
    case 'Approved':
      allocate(ctx) // T11
      return true
    case 'Pending': {
      if (facts.prerequisites.length === 0) { // T12
        go(ctx, 'Deploying', 'PrerequisitesMet', `Prerequisites met; deploying revision ${st.revision ?? 0}`)
        return true
      }
      const n = progressDeadline(recipe)
      if (reached(addSeconds(st.phaseTransitionTime ?? now, n), now)) { // T13
        setEntry(st, st.revision ?? 0, { state: 'Failed', finishedAt: now, reason: 'PrerequisitesTimeout' })
        go(ctx, 'Failed', 'PrerequisitesTimeout', `prerequisites not met within ${n}s: ${facts.prerequisites.map((p) => p.message).join('; ')}`)
        return true
      }
      return false
    }
    case 'Deploying': {
      const n = st.revision ?? 0
      const rf = readinessFor(ctx, n)
      if (rf?.applied && st.currentRevision !== n) st.currentRevision = n
      const failure = deployFailure(ctx, rf)
      if (failure) { fail(ctx, failure); return true } // T15 / T16
      const workflowOk = !hasSteps(recipe) || (facts.workflow?.revision === n && (facts.workflow.phase === 'Succeeded' || facts.workflow.phase === 'CompletedWithErrors'))
      if (allReady(ctx, rf) && rf!.pruned && workflowOk) { // T14
        const tests = (recipe.spec.tests ?? []).length
        go(ctx, 'Testing', tests > 0 ? 'Testing' : 'NoTests', tests > 0 ? `Every workload of revision ${n} is Ready; running ${tests} test${tests === 1 ? '' : 's'}` : `Every workload of revision ${n} is Ready; no tests`)
        return true
      }
      return false
    }
    case 'Testing': {
      const n = st.revision ?? 0
      const specTests = recipe.spec.tests ?? []
      if (specTests.length === 0) { activate(ctx); return true } // T17
      const results = facts.tests?.revision === n ? facts.tests.results : []
      const failure = testFailure(ctx, results)
      if (failure) { for (const t of results) testFinished(ctx, t); fail(ctx, failure); return true } // T18
      const byName = new Map(results.map((t) => [t.name, t]))
      const rf = readinessFor(ctx, n)
      const stillReady = !rf || allReady(ctx, rf)
      if (stillReady && specTests.every((t) => byName.get(t.name)?.phase === 'Succeeded')) { activate(ctx); return true } // T17
      return false
    }
    case 'Active': {
      const problem = settledProblem(readinessFor(ctx, st.currentRevision ?? 0))
      if (problem) { go(ctx, 'Degraded', problem.reason, problem.message); return true } // T19
      return false
    }
    case 'Degraded': {
      const rf = readinessFor(ctx, st.currentRevision ?? 0)
      if (rf && !settledProblem(rf)) { go(ctx, 'Active', 'Recovered', `Every workload of revision ${st.currentRevision ?? 0} is Ready again`); return true } // T20
      return false
    }
    case 'RollingBack': {
      const target = rollbackTarget(st)
      const manual = st.reason === 'ManualRollback'
      const rf = readinessFor(ctx, target)
      const applyFailed = rf?.workloads.find((w) => w.failed?.reason === 'ApplyFailed')
      if (applyFailed?.failed) { go(ctx, 'RollbackFailed', 'RollbackApplyFailed', applyFailed.failed.message); return true } // T22
      if (rf && allReadyByFacts(rf) && rf.pruned) { // T21
        const failed = [...(st.revisions ?? [])].reverse().find((e) => e.state === 'Failed' && e.revision !== target)
        const message = manual || !failed
          ? `Rolled back to revision ${target}`
          : `revision ${failed.revision} (generation ${failed.generation ?? 0}) failed: ${failed.reason ?? 'Failed'}; running revision ${target}`
        st.revisions = (st.revisions ?? []).map((e) => (e.revision === target ? { ...e, state: 'Active' } : e.state === 'Active' ? { ...e, state: 'Superseded' } : e))
        st.currentRevision = target
        ctx.upToDate = { status: 'False', reason: manual ? 'ManualRollback' : 'RolledBack', message }
        go(ctx, 'Active', manual ? 'ManualRollback' : 'RolledBack', message)
        return true
      }
      const n = progressDeadline(recipe)
      if (reached(addSeconds(st.phaseTransitionTime ?? now, n), now)) { // T22
        go(ctx, 'RollbackFailed', 'RollbackTimeout', `revision ${target} was not ready within ${n}s`)
        return true
      }
      return false
    }
    case 'Rejected': {
      if (st.reason === 'PolicyViolation' && facts.policy !== 'unavailable' && !facts.policy.rejected) { // T25
        go(ctx, 'Candidate', 'PolicyChanged', `Policies changed; re-evaluating generation ${G}`)
        return true
      }
      return false
    }
    default:
      return false
  }
}

/** During a rollback the snapshot's own order applies: every reported workload must be Ready. */
function allReadyByFacts(rf: ReadinessFacts): boolean {
  return rf.workloads.length > 0 && rf.workloads.every((w) => w.ready)
}

// ---------------------------------------------------------------------------------------------
// Conditions and the rest of status (spec §9)

type CondSpec = { type: string; status: 'True' | 'False' | 'Unknown'; reason: string; message: string }

function setCond(list: Condition[], c: CondSpec, G: number, now: string): Condition[] {
  const i = list.findIndex((x) => x.type === c.type)
  const previous = i >= 0 ? list[i] : undefined
  const next: Condition = { type: c.type, status: c.status, reason: c.reason, message: cut(c.message, 1024), observedGeneration: G, lastTransitionTime: previous && previous.status === c.status ? previous.lastTransitionTime : now }
  const out = [...list]
  if (i >= 0) out[i] = next
  else out.push(next)
  return out
}

function workloadPhase(w: WorkloadFact | undefined, settled: boolean): 'Waiting' | 'Progressing' | 'Ready' | 'NotReady' | 'Failed' {
  if (!w) return 'Waiting'
  if (w.failed) return 'Failed'
  if (w.ready) return 'Ready'
  if (settled) return 'NotReady'
  return w.missing ? 'Waiting' : 'Progressing'
}

function finish(ctx: Ctx): void {
  const { st, prev, facts, recipe, G, now } = ctx
  const template = isTemplate(recipe)
  const phase = st.phase
  let conds: Condition[] = [...(st.conditions ?? [])]
  const set = (c: CondSpec) => { conds = setCond(conds, c, G, now) }

  // Template message (spec §7.7).
  if (template && phase === 'Candidate' && st.reason === 'Template') {
    const missing = facts.render.ok ? (facts.render.missingInputs ?? []) : []
    st.message = !facts.render.ok
      ? cut(`Spec is invalid: ${specErrorsMessage(facts.render.errors)}`, 1024)
      : facts.policy !== 'unavailable' && facts.policy.rejected ? cut(facts.policy.message, 1024)
        : missing.length > 0 ? `Template: requires values for: ${missing.join(', ')}` : 'Template: validated, never deployed'
  }

  // resolved (latest valid generation).
  if (facts.render.ok) {
    const r = facts.render.resolved
    const trim = (o: Record<string, string | number | boolean>) => Object.fromEntries(Object.entries(o).map(([k, v]) => [k, typeof v === 'string' ? cut(v, 256) : v]))
    st.resolved = { profile: r.profile, inputs: trim(r.inputs), computed: trim(r.computed), included: [...r.included], excluded: [...r.excluded], order: [...r.order] }
  }

  // SpecValid.
  if (facts.render.ok) set({ type: 'SpecValid', status: 'True', reason: 'Valid', message: `generation ${G} is valid` })
  else set({ type: 'SpecValid', status: 'False', reason: facts.render.errors[0]?.reason ?? 'SpecInvalid', message: specErrorsMessage(facts.render.errors) })

  // PolicyCompliant (+ status.policy outside PendingApproval, whose basis T25 compares against).
  if (facts.policy === 'unavailable') {
    set({ type: 'PolicyCompliant', status: 'Unknown', reason: 'PolicyUnavailable', message: 'policies could not be evaluated' })
  } else if (facts.render.ok) {
    const p = facts.policy
    if (phase !== 'PendingApproval') st.policy = policyStatusOf(facts)
    const running = phase !== 'Candidate' && phase !== 'Rejected' && phase !== 'PendingApproval'
    const reason = p.rejected && running ? 'ViolatesCurrentPolicy' : p.reason
    const before = prev.conditions?.find((c) => c.type === 'PolicyCompliant')
    if (reason === 'ViolatesCurrentPolicy' && before?.reason !== 'ViolatesCurrentPolicy' && (phase === 'Active' || phase === 'Degraded')) {
      note(ctx, 'PolicyViolation', `the running revision violates current policy: ${p.message}`, 'Warning')
    }
    set({ type: 'PolicyCompliant', status: p.compliant ? 'True' : 'False', reason, message: p.compliant ? 'no policy violation' : p.message })
  }

  // Approved (with the ignored approve/reject values of this generation, spec §7.2).
  if (st.approval?.state) {
    const a = st.approval
    const reasons = { NotRequired: ['True', 'AutoApproved'], Approved: ['True', 'Approved'], Pending: ['False', 'Pending'], Rejected: ['False', 'Rejected'], Expired: ['False', 'Expired'] } as const
    const [status, reason] = reasons[a.state!]
    const base = a.state === 'Approved' ? `approved by ${a.approvedBy ?? 'unknown'}` : a.state === 'NotRequired' ? 'no approval required' : a.state === 'Pending' ? `waiting for approval of generation ${a.generation ?? G}` : `generation ${a.generation ?? G}: ${(a.state ?? '').toLowerCase()}`
    const before = prev.conditions?.find((c) => c.type === 'Approved')
    const ignoredBefore = before?.observedGeneration === G ? (before.message ?? '').split('; ignored ').slice(1) : []
    const ignored = new Set(ignoredBefore)
    for (const key of [ANNOTATION_APPROVE, ANNOTATION_REJECT]) {
      const v = annotationOf(recipe, key)
      if (v === undefined || v === String(G)) continue
      const marker = `${key}=${JSON.stringify(v)}`
      if (!ignored.has(marker)) {
        ignored.add(marker)
        note(ctx, 'ApprovalIgnored', `${marker} ignored: approvals name the generation they approve (${G})`)
      }
    }
    set({ type: 'Approved', status, reason, message: [base, ...[...ignored].sort()].join('; ignored ') })
  }

  // PrerequisitesMet (re-checked also when settled, spec §7.4).
  if (facts.render.ok && !template && phase !== 'Candidate' && phase !== 'PendingApproval' && phase !== 'Approved' && phase !== 'Rejected') {
    const before = prev.conditions?.find((c) => c.type === 'PrerequisitesMet')
    if (facts.prerequisites.length === 0) set({ type: 'PrerequisitesMet', status: 'True', reason: 'PrerequisitesMet', message: 'every prerequisite holds' })
    else {
      const first = facts.prerequisites[0]!
      const message = facts.prerequisites.map((p) => p.message).join('; ')
      if (before?.message !== message) {
        if (facts.prerequisites.some((p) => p.reason === 'NameConflict')) note(ctx, 'NameConflict', message, 'Warning')
        if ((phase === 'Active' || phase === 'Degraded') && facts.prerequisites.some((p) => p.reason === 'SecretMissing' || p.reason === 'SecretKeyMissing')) note(ctx, 'SourceSecretMissing', message, 'Warning')
      }
      set({ type: 'PrerequisitesMet', status: 'False', reason: first.reason, message })
    }
  }

  // Workloads of the observed revision.
  const observed = observedRevision(st)
  const rf = readinessFor(ctx, observed)
  const settled = phase === 'Active' || phase === 'Degraded'
  if (rf && facts.render.ok) {
    const byName = new Map(rf.workloads.map((w) => [w.name, w]))
    const previous = new Map((prev.workloads ?? []).map((w) => [w.name, w]))
    const names = [...rf.workloads.map((w) => w.name), ...facts.render.resolved.order.filter((n) => !byName.has(n))]
    const rows: NonNullable<Status['workloads']> = names.map((name) => {
      const w = byName.get(name)
      const wp = workloadPhase(w, settled)
      const old = previous.get(name)
      return {
        name, ...(w ? { kind: w.kind } : {}), included: true,
        ...(w?.namespace ? { namespace: w.namespace } : {}), ...(w?.objectName ? { objectName: w.objectName } : {}),
        phase: wp, ready: wp === 'Ready',
        ...(w?.replicas !== undefined ? { replicas: w.replicas } : {}), ...(w?.readyReplicas !== undefined ? { readyReplicas: w.readyReplicas } : {}),
        since: old?.phase === wp && old.since ? old.since : now,
        ...(w?.failed ? { message: cut(w.failed.message, 512) } : w?.message ? { message: cut(w.message, 512) } : {}),
      }
    })
    for (const name of facts.render.resolved.excluded) rows.push({ name, included: false, phase: 'Excluded', ready: false, since: previous.get(name)?.phase === 'Excluded' ? previous.get(name)!.since ?? now : now })
    st.workloads = rows.slice(0, 32)
    st.readyWorkloads = `${rows.filter((r) => r.ready).length}/${rows.filter((r) => r.included).length}`
  }

  // WorkloadsReady.
  if (facts.render.ok && !template) {
    const failReasons = new Set(['ReadinessTimeout', 'JobFailed', 'ApplyFailed'])
    const latest = entry(st, st.revision)
    if (rf && allReady(ctx, rf) && (phase !== 'RollingBack' || allReadyByFacts(rf))) set({ type: 'WorkloadsReady', status: 'True', reason: 'AllReady', message: `every workload of revision ${observed} is Ready` })
    else if ((phase === 'Failed' || phase === 'RollingBack') && latest?.state === 'Failed' && failReasons.has(latest.reason ?? '')) set({ type: 'WorkloadsReady', status: 'False', reason: latest.reason!, message: phase === 'Failed' ? st.message ?? '' : `revision ${latest.revision} failed: ${latest.reason}` })
    else if (!IN_FLIGHT.has(phase ?? '') && !settled) set({ type: 'WorkloadsReady', status: 'False', reason: 'Waiting', message: 'no revision of this generation is deployed' })
    else if (phase === 'Pending') set({ type: 'WorkloadsReady', status: 'False', reason: 'Waiting', message: 'waiting for prerequisites' })
    else set({ type: 'WorkloadsReady', status: 'False', reason: settled ? 'NotReady' : 'Progressing', message: `${rf ? rf.workloads.filter((w) => w.ready).length : 0} of ${facts.render.resolved.order.length} workloads Ready` })
  }

  // TestsPassed.
  if (!template) {
    const specTests = recipe.spec.tests ?? []
    const latest = entry(st, st.revision)
    if (specTests.length === 0) set({ type: 'TestsPassed', status: 'True', reason: 'NoTests', message: 'the recipe declares no tests' })
    else if (settled) set({ type: 'TestsPassed', status: 'True', reason: 'Passed', message: `every test of revision ${st.currentRevision ?? 0} passed` })
    else if (phase === 'Testing') set({ type: 'TestsPassed', status: 'False', reason: 'Running', message: `running ${specTests.length} tests of revision ${st.revision ?? 0}` })
    else if (latest?.state === 'Failed' && (latest.reason === 'TestFailed' || latest.reason === 'TestTimeout')) set({ type: 'TestsPassed', status: 'False', reason: latest.reason, message: `tests of revision ${latest.revision} failed` })
    else set({ type: 'TestsPassed', status: 'Unknown', reason: 'NotStarted', message: 'tests have not started' })
  }

  // WorkflowSucceeded (only with steps).
  if (hasSteps(recipe) && !template) {
    const wf = facts.workflow
    if (!wf) set({ type: 'WorkflowSucceeded', status: 'Unknown', reason: 'NotStarted', message: 'the child Workflow has not started' })
    else if (wf.phase === 'Succeeded' || wf.phase === 'CompletedWithErrors') set({ type: 'WorkflowSucceeded', status: 'True', reason: wf.phase, message: wf.message ?? `the child Workflow of revision ${wf.revision} ${wf.phase === 'Succeeded' ? 'succeeded' : 'completed with errors'}` })
    else if (wf.phase === 'Failed') set({ type: 'WorkflowSucceeded', status: 'False', reason: 'WorkflowFailed', message: wf.message ?? 'the child Workflow failed' })
    else set({ type: 'WorkflowSucceeded', status: 'False', reason: 'Running', message: 'the child Workflow runs' })
  }

  // UpToDate.
  const current = st.currentRevision ?? 0
  if (ctx.upToDate) set({ type: 'UpToDate', ...ctx.upToDate })
  else if (phase === 'Deprecated') set({ type: 'UpToDate', status: 'False', reason: 'Deprecated', message: 'the recipe is deprecated' })
  else if (!settled || !conds.some((c) => c.type === 'UpToDate')) {
    if (current === 0) set({ type: 'UpToDate', status: 'False', reason: 'NotDeployed', message: 'no revision is running' })
    else if (IN_FLIGHT.has(phase ?? '') || phase === 'Candidate' || phase === 'Approved') set({ type: 'UpToDate', status: 'False', reason: 'InProgress', message: `generation ${G} is in progress; running revision ${current}` })
    else if (!settled) set({ type: 'UpToDate', status: 'False', reason: 'NotDeployed', message: `generation ${G} is not deployed; running revision ${current}` })
    else set({ type: 'UpToDate', status: 'True', reason: 'UpToDate', message: `revision ${current} runs generation ${G}` })
  }

  // Available.
  if (!template) {
    const rc = readinessFor(ctx, current)
    if (current === 0) set({ type: 'Available', status: 'False', reason: 'NotDeployed', message: 'no revision is running' })
    else if (rc) {
      const problem = settledProblem(rc)
      set(problem ? { type: 'Available', status: 'False', reason: 'NotReady', message: problem.message } : { type: 'Available', status: 'True', reason: 'Available', message: `every workload of revision ${current} is Ready` })
    }
  }

  // Drifted (only once drift was detected, spec §9).
  const drifted = facts.drift?.detected === true && (recipe.spec.driftPolicy ?? 'Correct') === 'Warn'
  if (drifted) set({ type: 'Drifted', status: 'True', reason: 'DriftDetected', message: 'children differ from revision ' + current })
  else if (facts.drift?.detected || conds.some((c) => c.type === 'Drifted')) set({ type: 'Drifted', status: 'False', reason: 'InSync', message: 'children match their revision' })

  // Ready.
  set(phase === 'Active' ? { type: 'Ready', status: 'True', reason: 'Active', message: st.message ?? '' } : { type: 'Ready', status: 'False', reason: phase ?? 'Candidate', message: st.message ?? '' })

  st.conditions = conds
}

function nextCheckOf(ctx: Ctx): string | undefined {
  const { st, recipe, facts, now } = ctx
  const since = st.phaseTransitionTime ?? now
  switch (st.phase) {
    case 'PendingApproval': {
      const timeout = facts.policy !== 'unavailable' ? (facts.policy.approval.timeoutSeconds ?? 0) : 0
      return timeout > 0 && st.approval?.requestedAt ? addSeconds(st.approval.requestedAt, timeout) : undefined
    }
    case 'Pending':
    case 'RollingBack':
      return addSeconds(since, progressDeadline(recipe))
    case 'Deploying':
      return readinessTimeout(notReadyOf(ctx, readinessFor(ctx, st.revision ?? 0)), since, progressDeadline(recipe), now).nextCheckAt
    case 'Testing': {
      const n = st.revision ?? 0
      const results = facts.tests?.revision === n ? facts.tests.results : []
      const deadlines = results.filter((t) => t.phase !== 'Succeeded' && t.phase !== 'Failed' && t.startTime).map((t) => Date.parse(addSeconds(t.startTime!, testTimeout(ctx, t.name))))
      return deadlines.length > 0 ? new Date(Math.min(...deadlines)).toISOString() : undefined
    }
    default:
      return undefined
  }
}

function snapshotsToPrune(st: Status, recipe: WorkflowRecipe, facts: LifecycleFacts): number[] {
  const limit = recipe.spec.revisionHistoryLimit ?? DEFAULT_HISTORY_LIMIT
  const highest = st.revision ?? 0
  const keep = new Set([st.currentRevision ?? 0, st.lastGoodRevision ?? 0, highest])
  if (st.phase === 'RollingBack') keep.add(rollbackTarget(st))
  return [...facts.snapshots].filter((n) => n <= highest - limit && !keep.has(n)).sort((a, b) => a - b)
}

function actionOf(st: Status, template: boolean, nextCheckAt: string | undefined): LifecycleAction {
  const current = st.currentRevision ?? 0
  if (template) return { type: 'none' }
  switch (st.phase) {
    case 'Deploying': return { type: 'deploy', revision: st.revision ?? 0 }
    case 'Testing': return { type: 'test', revision: st.revision ?? 0 }
    case 'RollingBack': return { type: 'rollback', from: current, to: rollbackTarget(st) }
    case 'Pending':
    case 'PendingApproval':
      return nextCheckAt ? { type: 'wait', until: nextCheckAt } : { type: 'wait' }
    case 'Deprecated':
    case undefined:
      return { type: 'none' }
    default:
      return current > 0 ? { type: 'maintain', revision: current } : { type: 'none' }
  }
}

/**
 * Pure: the lifecycle plan of one recipe (spec §7). `now` is an ISO time. A recipe being deleted gets
 * `action: delete` and `Ready=False` reason `Deleting`; everything else walks the spec §7.3 table.
 */
export function planLifecycle(recipe: WorkflowRecipe, facts: LifecycleFacts, now: string): LifecyclePlan {
  const prev: Status = recipe.status ?? {}
  const st: Status = JSON.parse(JSON.stringify(prev)) as Status
  const G = recipe.metadata.generation ?? 1
  const ctx: Ctx = { recipe, facts, now, G, st, prev, transitions: [] }
  const template = isTemplate(recipe)

  if (recipe.metadata.deletionTimestamp) {
    st.conditions = setCond([...(st.conditions ?? [])], { type: 'Ready', status: 'False', reason: 'Deleting', message: 'the recipe is being deleted' }, G, now)
    delete st.nextCheckAt
    return { transitions: [], status: st, changed: canonicalJson(st) !== canonicalJson(prev), action: { type: 'delete' }, addFinalizer: false, pruneSnapshots: [] }
  }

  for (let i = 0; i < MAX_STEPS && step(ctx); i++) { /* walk the table */ }
  finish(ctx)
  const nextCheckAt = nextCheckOf(ctx)
  if (nextCheckAt) st.nextCheckAt = nextCheckAt
  else delete st.nextCheckAt

  const n = st.revision ?? 0
  const needsSnapshot = !template && n > 0 && (st.phase === 'Pending' || st.phase === 'Deploying') && !facts.snapshots.includes(n) && entry(st, n)?.state === 'InProgress'
  const plan: LifecyclePlan = {
    transitions: ctx.transitions,
    status: st,
    changed: canonicalJson(st) !== canonicalJson(prev),
    action: actionOf(st, template, nextCheckAt),
    addFinalizer: !template && !(recipe.metadata.finalizers ?? []).includes(FINALIZER),
    pruneSnapshots: template ? [] : snapshotsToPrune(st, recipe, facts),
    ...(nextCheckAt ? { nextCheckAt } : {}),
  }
  if (needsSnapshot) plan.writeSnapshot = n
  if (ctx.abandon !== undefined) plan.abandon = ctx.abandon
  return plan
}
