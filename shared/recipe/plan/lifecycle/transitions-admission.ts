/**
 * The transitions before a revision exists (spec §7.3 T3-T11, T25): a generation in Candidate is
 * validated, checked against the policies and approved, or turned down, and an Approved one gets
 * its revision number.
 */
import type { PolicyFacts } from '../lifecycle-facts.js'
import { canonicalJson } from '../digest.js'
import { specErrorsMessage } from '../render.js'
import type { SpecError } from '../rendered.js'
import { annotationOf, ANNOTATION_APPROVE, ANNOTATION_REJECT, approveCommand, approverOf } from './annotations.js'
import { announce, enterPhase, type HandlerOutcome, type PlanningContext } from './context.js'
import { addSeconds, hasPassed } from './deadlines.js'
import { readinessFor, settledProblem } from './readiness-checks.js'
import { reachedActive, revisionEntry } from './revisions.js'
import { policyStatusOf } from './status-fields.js'

/** Entries kept in `status.revisions[]` (spec §7.9). */
const MAX_REVISIONS = 20

type EvaluatedPolicy = Exclude<PolicyFacts, 'unavailable'>

/** spec §7.3 T3: an invalid generation fails; one whose snapshot would be too large fails as RevisionTooLarge (spec §7.9). */
function failInvalidSpec(ctx: PlanningContext, errors: SpecError[]): HandlerOutcome {
  const message = `Spec is invalid: ${specErrorsMessage(errors)}`
  enterPhase(ctx, 'Failed', errors[0]?.reason === 'RevisionTooLarge' ? 'RevisionTooLarge' : 'SpecInvalid', message)
  announce(ctx, 'SpecInvalid', message, 'Warning')
  return 'acted'
}

/** spec §7.3 T4: an Enforce violation rejects the generation, with one `policy.violated` CloudEvent per violation (spec §13). */
function rejectForPolicyViolation(ctx: PlanningContext, policy: EvaluatedPolicy): HandlerOutcome {
  enterPhase(ctx, 'Rejected', 'PolicyViolation', policy.message)
  for (const v of policy.violations.filter((x) => x.mode === 'Enforce')) {
    ctx.transitions.push({
      kind: 'policy.violated', type: 'Warning', reason: 'PolicyViolation', message: `${v.policy}: ${v.rule}: ${v.message}`, record: false,
      data: { policy: v.policy, mode: v.mode, rule: v.rule, message: v.message, generation: ctx.generation, revision: ctx.status.revision ?? 0 },
    })
  }
  return 'acted'
}

/** spec §7.3 T5's condition: not a retry, and the render has the digest of a current revision that once ran Active. */
function rendersLikeCurrentRevision(ctx: PlanningContext, digest: string): boolean {
  const { status } = ctx
  const current = status.currentRevision ?? 0
  const retry = status.reason === 'RetryRequested'
  return !retry && current > 0 && reachedActive(status, current) && revisionEntry(status, current)?.digest === digest.slice(0, 16)
}

/** spec §7.3 T5: nothing to deploy; the current revision goes on, Active or Degraded as its readiness is now. */
function keepCurrentRevision(ctx: PlanningContext): HandlerOutcome {
  const { generation } = ctx
  const current = ctx.status.currentRevision ?? 0
  const problem = settledProblem(readinessFor(ctx, current))
  ctx.upToDate = { status: 'True', reason: 'UpToDate', message: `revision ${current} runs generation ${generation}` }
  enterPhase(ctx, problem ? 'Degraded' : 'Active', 'NoEffectiveChange', `Generation ${generation} renders the same as revision ${current}; nothing to deploy${problem ? `; ${problem.message}` : ''}`)
  return 'acted'
}

function approvalMessage(ctx: PlanningContext, requiredBy: string[]): string {
  const namespace = ctx.recipe.metadata.namespace ?? 'default'
  const name = ctx.recipe.metadata.name ?? ''
  return `Waiting for approval of generation ${ctx.generation} (required by ${requiredBy.join(', ')}): ${approveCommand(namespace, name, ctx.generation)}`
}

/**
 * spec §7.3 T6 and T7, §7.5: a generation that needs no approval, or is already approved for G (and
 * not rejected), goes on to Approved; any other waits in PendingApproval, keeping the time it first asked.
 */
function passApprovalGate(ctx: PlanningContext, policy: EvaluatedPolicy): HandlerOutcome {
  const { status, recipe, generation, now } = ctx
  const rejectedNow = annotationOf(recipe, ANNOTATION_REJECT) === String(generation)
  const approvedNow = annotationOf(recipe, ANNOTATION_APPROVE) === String(generation) || (status.approval?.generation === generation && status.approval.state === 'Approved')
  if (!policy.approval.required) { // T7
    status.approval = { required: false, state: 'NotRequired', generation }
    enterPhase(ctx, 'Approved', 'AutoApproved', `Generation ${generation} needs no approval`)
  } else if (approvedNow && !rejectedNow) { // T7
    const decidedAt = status.approval?.generation === generation && status.approval.state === 'Approved' ? (status.approval.decidedAt ?? now) : now
    const approvedBy = status.approval?.generation === generation && status.approval.approvedBy ? status.approval.approvedBy : approverOf(recipe)
    status.approval = { required: true, state: 'Approved', generation, requiredBy: [...policy.approval.requiredBy], ...(status.approval?.requestedAt ? { requestedAt: status.approval.requestedAt } : {}), decidedAt, approvedBy }
    enterPhase(ctx, 'Approved', 'Approved', `Generation ${generation} was approved by ${approvedBy}`)
  } else { // T6
    const keepRequestedAt = status.approval?.generation === generation && status.approval.state === 'Pending' && status.approval.requestedAt
    status.approval = { required: true, state: 'Pending', generation, requiredBy: [...policy.approval.requiredBy], requestedAt: keepRequestedAt ? status.approval!.requestedAt! : now }
    enterPhase(ctx, 'PendingApproval', 'ApprovalRequired', approvalMessage(ctx, policy.approval.requiredBy))
  }
  return 'acted'
}

/**
 * Candidate (spec §7.3 T3-T7): validation first, then the policies (with policies unavailable the recipe
 * waits), then a render that equals the running revision, then the approval gate.
 */
export function fromCandidate(ctx: PlanningContext): HandlerOutcome {
  const { render, policy } = ctx.facts
  if (!render.ok) return failInvalidSpec(ctx, render.errors)
  if (policy === 'unavailable') return 'stay'
  ctx.status.policy = policyStatusOf(ctx.facts)
  if (policy.rejected) return rejectForPolicyViolation(ctx, policy)
  if (rendersLikeCurrentRevision(ctx, render.digest)) return keepCurrentRevision(ctx)
  return passApprovalGate(ctx, policy)
}

/** spec §7.3 T25, §10.4: the policies' verdict on the generation changed, so it is evaluated again from Candidate. */
function reevaluateAfterPolicyChange(ctx: PlanningContext): HandlerOutcome {
  enterPhase(ctx, 'Candidate', 'PolicyChanged', `Policies changed; re-evaluating generation ${ctx.generation}`)
  return 'acted'
}

function sameList(a: readonly string[] | undefined, b: readonly string[] | undefined): boolean {
  return canonicalJson(a ?? []) === canonicalJson(b ?? [])
}

/**
 * PendingApproval (spec §7.3 T8-T10, T25): a rejection for G (T9) wins over an approval for G (T8); then a
 * change in who requires approval or in compliance (T25); then the approval timeout (T10).
 */
export function fromPendingApproval(ctx: PlanningContext): HandlerOutcome {
  const { status, recipe, facts, generation, now } = ctx
  const approval = status.approval
  if (annotationOf(recipe, ANNOTATION_REJECT) === String(generation)) { // T9
    status.approval = { ...approval, state: 'Rejected', decidedAt: now, approvedBy: approverOf(recipe) }
    enterPhase(ctx, 'Rejected', 'ApprovalRejected', `Generation ${generation} was rejected by ${approverOf(recipe)}`)
    return 'acted'
  }
  if (annotationOf(recipe, ANNOTATION_APPROVE) === String(generation)) { // T8
    status.approval = { ...approval, state: 'Approved', decidedAt: now, approvedBy: approverOf(recipe) }
    enterPhase(ctx, 'Approved', 'Approved', `Generation ${generation} was approved by ${approverOf(recipe)}`)
    return 'acted'
  }
  if (facts.policy === 'unavailable') return 'stay'
  const policy = facts.policy
  const changed = policy.rejected || !policy.approval.required || !sameList(policy.approval.requiredBy, approval?.requiredBy) || policy.compliant !== (status.policy?.compliant ?? policy.compliant)
  if (changed) return reevaluateAfterPolicyChange(ctx)
  const timeout = policy.approval.timeoutSeconds ?? 0
  if (timeout > 0 && approval?.requestedAt && hasPassed(addSeconds(approval.requestedAt, timeout), now)) { // T10
    status.approval = { ...approval, state: 'Expired', decidedAt: now }
    enterPhase(ctx, 'Rejected', 'ApprovalExpired', `The approval request for generation ${generation} expired after ${timeout}s`)
    return 'acted'
  }
  return 'stay'
}

/**
 * Approved (spec §7.3 T11): allocates revision N = the highest so far + 1, with an InProgress entry naming
 * its snapshot ConfigMap, and announces `revision.created` (spec §7.9, §13).
 */
export function allocateRevision(ctx: PlanningContext): HandlerOutcome {
  const { status, facts, generation } = ctx
  const highest = Math.max(status.revision ?? 0, ...(status.revisions ?? []).map((e) => e.revision))
  const revision = highest + 1
  const digest = facts.render.ok ? facts.render.digest.slice(0, 16) : undefined
  const configMap = `${ctx.recipe.metadata.name ?? ''}-rev-${revision}`
  status.revision = revision
  status.revisions = [...(status.revisions ?? []), { revision, generation, state: 'InProgress' as const, ...(digest ? { digest } : {}), configMap, createdAt: ctx.now }].slice(-MAX_REVISIONS)
  enterPhase(ctx, 'Pending', 'WaitingForPrerequisites', `Revision ${revision} allocated for generation ${generation}; waiting for prerequisites`)
  ctx.transitions.push({
    kind: 'revision.created', type: 'Normal', reason: 'RevisionCreated', message: `Revision ${revision} created (${configMap})`, record: false,
    data: { generation, revision, digest: digest ?? '', configMap },
  })
  return 'acted'
}

/** Rejected (spec §7.3 T25): a generation rejected by policy is evaluated again once no Enforce violation remains. */
export function fromRejected(ctx: PlanningContext): HandlerOutcome {
  const { status, facts } = ctx
  if (status.reason === 'PolicyViolation' && facts.policy !== 'unavailable' && !facts.policy.rejected) return reevaluateAfterPolicyChange(ctx)
  return 'stay'
}
