/**
 * The rest of status once the transitions of a plan are done (spec §9): every condition, in a
 * fixed order, from the new phase and the facts, with the fields of status-fields.ts between them.
 * A condition keeps its lastTransitionTime while its status stays the same. Pure.
 */
import type { Condition } from '../../../schemas/condition.js'
import type { RecipePhase } from '../../../schemas/workflowrecipe.js'
import type { ReadinessFacts } from '../lifecycle-facts.js'
import { specErrorsMessage } from '../render.js'
import { annotationOf, ANNOTATION_APPROVE, ANNOTATION_REJECT } from './annotations.js'
import { announce, truncate, type PlanningContext } from './context.js'
import { allWorkloadsReady, everyReportedWorkloadReady, hasSteps, readinessFor, settledProblem } from './readiness-checks.js'
import { observedRevision, revisionEntry } from './revisions.js'
import { describeTemplate, policyStatusOf, recordResolvedValues, recordWorkloadRows } from './status-fields.js'

/** Phases with a revision under way: waiting for its prerequisites, deploying, testing or rolling back. */
const IN_FLIGHT: ReadonlySet<string> = new Set(['Pending', 'Deploying', 'Testing', 'RollingBack'])

/** Failure reasons `WorkloadsReady=False` repeats from a failed revision. */
const WORKLOAD_FAILURE_REASONS: ReadonlySet<string> = new Set(['ReadinessTimeout', 'JobFailed', 'ApplyFailed'])

export interface ConditionSpec {
  type: string
  status: 'True' | 'False' | 'Unknown'
  reason: string
  message: string
}

/** Pure: `list` with the condition of `spec.type` replaced (or added last); lastTransitionTime moves only when its status does. */
export function setCondition(list: Condition[], spec: ConditionSpec, generation: number, now: string): Condition[] {
  const i = list.findIndex((x) => x.type === spec.type)
  const previous = i >= 0 ? list[i] : undefined
  const next: Condition = { type: spec.type, status: spec.status, reason: spec.reason, message: truncate(spec.message, 1024), observedGeneration: generation, lastTransitionTime: previous && previous.status === spec.status ? previous.lastTransitionTime : now }
  const out = [...list]
  if (i >= 0) out[i] = next
  else out.push(next)
  return out
}

/** What the conditions look at: the phase after the transitions, and the revision it observes. */
interface Observation {
  phase: RecipePhase | undefined
  /** Active or Degraded. */
  settled: boolean
  observed: number
  /** Readiness of the observed revision, when the facts are about it. */
  readiness: ReadinessFacts | undefined
}

/** The conditions being written: the status's own, replaced type by type. */
class ConditionDraft {
  private list: Condition[]
  constructor(existing: Condition[] | undefined, private readonly generation: number, private readonly now: string) {
    this.list = [...(existing ?? [])]
  }

  set(spec: ConditionSpec): void {
    this.list = setCondition(this.list, spec, this.generation, this.now)
  }

  has(type: string): boolean {
    return this.list.some((c) => c.type === type)
  }

  get all(): Condition[] {
    return this.list
  }
}

function setSpecValid(ctx: PlanningContext, conditions: ConditionDraft): void {
  const { render } = ctx.facts
  if (render.ok) conditions.set({ type: 'SpecValid', status: 'True', reason: 'Valid', message: `generation ${ctx.generation} is valid` })
  else conditions.set({ type: 'SpecValid', status: 'False', reason: render.errors[0]?.reason ?? 'SpecInvalid', message: specErrorsMessage(render.errors) })
}

/**
 * PolicyCompliant, and `status.policy` outside PendingApproval (whose basis T25 compares against).
 * A running revision that current policy rejects is announced once (spec §10.4).
 */
function setPolicyCompliant(ctx: PlanningContext, { phase }: Observation, conditions: ConditionDraft): void {
  const { status, previous, facts } = ctx
  if (facts.policy === 'unavailable') {
    conditions.set({ type: 'PolicyCompliant', status: 'Unknown', reason: 'PolicyUnavailable', message: 'policies could not be evaluated' })
    return
  }
  if (!facts.render.ok) return
  const p = facts.policy
  if (phase !== 'PendingApproval') status.policy = policyStatusOf(facts)
  const running = phase !== 'Candidate' && phase !== 'Rejected' && phase !== 'PendingApproval'
  const reason = p.rejected && running ? 'ViolatesCurrentPolicy' : p.reason
  const before = previous.conditions?.find((c) => c.type === 'PolicyCompliant')
  if (reason === 'ViolatesCurrentPolicy' && before?.reason !== 'ViolatesCurrentPolicy' && (phase === 'Active' || phase === 'Degraded')) {
    announce(ctx, 'PolicyViolation', `the running revision violates current policy: ${p.message}`, 'Warning')
  }
  conditions.set({ type: 'PolicyCompliant', status: p.compliant ? 'True' : 'False', reason, message: p.compliant ? 'no policy violation' : p.message })
}

/** Approved, listing the approve/reject values ignored for this generation, each announced once (spec §7.2, §7.5). */
function setApproved(ctx: PlanningContext, conditions: ConditionDraft): void {
  const { status, previous, recipe, generation } = ctx
  const approval = status.approval
  if (!approval?.state) return
  const reasons = { NotRequired: ['True', 'AutoApproved'], Approved: ['True', 'Approved'], Pending: ['False', 'Pending'], Rejected: ['False', 'Rejected'], Expired: ['False', 'Expired'] } as const
  const [conditionStatus, reason] = reasons[approval.state]
  const base = approval.state === 'Approved' ? `approved by ${approval.approvedBy ?? 'unknown'}`
    : approval.state === 'NotRequired' ? 'no approval required'
      : approval.state === 'Pending' ? `waiting for approval of generation ${approval.generation ?? generation}`
        : `generation ${approval.generation ?? generation}: ${approval.state.toLowerCase()}`
  const before = previous.conditions?.find((c) => c.type === 'Approved')
  const ignored = new Set(before?.observedGeneration === generation ? (before.message ?? '').split('; ignored ').slice(1) : [])
  for (const key of [ANNOTATION_APPROVE, ANNOTATION_REJECT]) {
    const value = annotationOf(recipe, key)
    if (value === undefined || value === String(generation)) continue
    const marker = `${key}=${JSON.stringify(value)}`
    if (!ignored.has(marker)) {
      ignored.add(marker)
      announce(ctx, 'ApprovalIgnored', `${marker} ignored: approvals name the generation they approve (${generation})`)
    }
  }
  conditions.set({ type: 'Approved', status: conditionStatus, reason, message: [base, ...[...ignored].sort()].join('; ignored ') })
}

/**
 * PrerequisitesMet, checked also while settled (spec §7.4); a new problem announces a name
 * conflict, and a settled recipe's missing source Secret.
 */
function setPrerequisitesMet(ctx: PlanningContext, { phase }: Observation, conditions: ConditionDraft): void {
  const { previous, facts } = ctx
  if (!facts.render.ok || ctx.template || phase === 'Candidate' || phase === 'PendingApproval' || phase === 'Approved' || phase === 'Rejected') return
  const before = previous.conditions?.find((c) => c.type === 'PrerequisitesMet')
  if (facts.prerequisites.length === 0) {
    conditions.set({ type: 'PrerequisitesMet', status: 'True', reason: 'PrerequisitesMet', message: 'every prerequisite holds' })
    return
  }
  const first = facts.prerequisites[0]!
  const message = facts.prerequisites.map((p) => p.message).join('; ')
  if (before?.message !== message) {
    if (facts.prerequisites.some((p) => p.reason === 'NameConflict')) announce(ctx, 'NameConflict', message, 'Warning')
    if ((phase === 'Active' || phase === 'Degraded') && facts.prerequisites.some((p) => p.reason === 'SecretMissing' || p.reason === 'SecretKeyMissing')) announce(ctx, 'SourceSecretMissing', message, 'Warning')
  }
  conditions.set({ type: 'PrerequisitesMet', status: 'False', reason: first.reason, message })
}

function setWorkloadsReady(ctx: PlanningContext, { phase, settled, observed, readiness }: Observation, conditions: ConditionDraft): void {
  const { status, facts } = ctx
  if (!facts.render.ok || ctx.template) return
  const latest = revisionEntry(status, status.revision)
  if (readiness && allWorkloadsReady(ctx, readiness) && (phase !== 'RollingBack' || everyReportedWorkloadReady(readiness))) {
    conditions.set({ type: 'WorkloadsReady', status: 'True', reason: 'AllReady', message: `every workload of revision ${observed} is Ready` })
  } else if ((phase === 'Failed' || phase === 'RollingBack') && latest?.state === 'Failed' && WORKLOAD_FAILURE_REASONS.has(latest.reason ?? '')) {
    conditions.set({ type: 'WorkloadsReady', status: 'False', reason: latest.reason!, message: phase === 'Failed' ? status.message ?? '' : `revision ${latest.revision} failed: ${latest.reason}` })
  } else if (!IN_FLIGHT.has(phase ?? '') && !settled) {
    conditions.set({ type: 'WorkloadsReady', status: 'False', reason: 'Waiting', message: 'no revision of this generation is deployed' })
  } else if (phase === 'Pending') {
    conditions.set({ type: 'WorkloadsReady', status: 'False', reason: 'Waiting', message: 'waiting for prerequisites' })
  } else {
    const readyCount = readiness ? readiness.workloads.filter((w) => w.ready).length : 0
    conditions.set({ type: 'WorkloadsReady', status: 'False', reason: settled ? 'NotReady' : 'Progressing', message: `${readyCount} of ${facts.render.resolved.order.length} workloads Ready` })
  }
}

function setTestsPassed(ctx: PlanningContext, { phase, settled }: Observation, conditions: ConditionDraft): void {
  const { status, recipe } = ctx
  if (ctx.template) return
  const specTests = recipe.spec.tests ?? []
  const latest = revisionEntry(status, status.revision)
  if (specTests.length === 0) conditions.set({ type: 'TestsPassed', status: 'True', reason: 'NoTests', message: 'the recipe declares no tests' })
  else if (settled) conditions.set({ type: 'TestsPassed', status: 'True', reason: 'Passed', message: `every test of revision ${status.currentRevision ?? 0} passed` })
  else if (phase === 'Testing') conditions.set({ type: 'TestsPassed', status: 'False', reason: 'Running', message: `running ${specTests.length} tests of revision ${status.revision ?? 0}` })
  else if (latest?.state === 'Failed' && (latest.reason === 'TestFailed' || latest.reason === 'TestTimeout')) conditions.set({ type: 'TestsPassed', status: 'False', reason: latest.reason, message: `tests of revision ${latest.revision} failed` })
  else conditions.set({ type: 'TestsPassed', status: 'Unknown', reason: 'NotStarted', message: 'tests have not started' })
}

/** WorkflowSucceeded, only for a recipe with steps (spec §9), from its child Workflow (spec §5.10). */
function setWorkflowSucceeded(ctx: PlanningContext, conditions: ConditionDraft): void {
  if (!hasSteps(ctx.recipe) || ctx.template) return
  const workflow = ctx.facts.workflow
  if (!workflow) conditions.set({ type: 'WorkflowSucceeded', status: 'Unknown', reason: 'NotStarted', message: 'the child Workflow has not started' })
  else if (workflow.phase === 'Succeeded' || workflow.phase === 'CompletedWithErrors') conditions.set({ type: 'WorkflowSucceeded', status: 'True', reason: workflow.phase, message: workflow.message ?? `the child Workflow of revision ${workflow.revision} ${workflow.phase === 'Succeeded' ? 'succeeded' : 'completed with errors'}` })
  else if (workflow.phase === 'Failed') conditions.set({ type: 'WorkflowSucceeded', status: 'False', reason: 'WorkflowFailed', message: workflow.message ?? 'the child Workflow failed' })
  else conditions.set({ type: 'WorkflowSucceeded', status: 'False', reason: 'Running', message: 'the child Workflow runs' })
}

/** UpToDate: as a transition of this plan set it; otherwise derived, and left alone while settled once set. */
function setUpToDate(ctx: PlanningContext, { phase, settled }: Observation, conditions: ConditionDraft): void {
  const { generation } = ctx
  const current = ctx.status.currentRevision ?? 0
  if (ctx.upToDate) conditions.set({ type: 'UpToDate', ...ctx.upToDate })
  else if (phase === 'Deprecated') conditions.set({ type: 'UpToDate', status: 'False', reason: 'Deprecated', message: 'the recipe is deprecated' })
  else if (!settled || !conditions.has('UpToDate')) {
    if (current === 0) conditions.set({ type: 'UpToDate', status: 'False', reason: 'NotDeployed', message: 'no revision is running' })
    else if (IN_FLIGHT.has(phase ?? '') || phase === 'Candidate' || phase === 'Approved') conditions.set({ type: 'UpToDate', status: 'False', reason: 'InProgress', message: `generation ${generation} is in progress; running revision ${current}` })
    else if (!settled) conditions.set({ type: 'UpToDate', status: 'False', reason: 'NotDeployed', message: `generation ${generation} is not deployed; running revision ${current}` })
    else conditions.set({ type: 'UpToDate', status: 'True', reason: 'UpToDate', message: `revision ${current} runs generation ${generation}` })
  }
}

/** Available: whether the running revision serves, whatever the phase of the latest generation. */
function setAvailable(ctx: PlanningContext, conditions: ConditionDraft): void {
  if (ctx.template) return
  const current = ctx.status.currentRevision ?? 0
  const readiness = readinessFor(ctx, current)
  if (current === 0) conditions.set({ type: 'Available', status: 'False', reason: 'NotDeployed', message: 'no revision is running' })
  else if (readiness) {
    const problem = settledProblem(readiness)
    conditions.set(problem ? { type: 'Available', status: 'False', reason: 'NotReady', message: problem.message } : { type: 'Available', status: 'True', reason: 'Available', message: `every workload of revision ${current} is Ready` })
  }
}

/** Drifted, only once drift was detected (spec §7.8): True under `driftPolicy: Warn`, otherwise False again. */
function setDrifted(ctx: PlanningContext, conditions: ConditionDraft): void {
  const { recipe, facts } = ctx
  const current = ctx.status.currentRevision ?? 0
  const drifted = facts.drift?.detected === true && (recipe.spec.driftPolicy ?? 'Correct') === 'Warn'
  if (drifted) conditions.set({ type: 'Drifted', status: 'True', reason: 'DriftDetected', message: 'children differ from revision ' + current })
  else if (facts.drift?.detected || conditions.has('Drifted')) conditions.set({ type: 'Drifted', status: 'False', reason: 'InSync', message: 'children match their revision' })
}

function setReady(ctx: PlanningContext, { phase }: Observation, conditions: ConditionDraft): void {
  const message = ctx.status.message ?? ''
  conditions.set(phase === 'Active' ? { type: 'Ready', status: 'True', reason: 'Active', message } : { type: 'Ready', status: 'False', reason: phase ?? 'Candidate', message })
}

/** Writes the conditions and the rest of status for the phase the transitions left (spec §9). */
export function completeStatus(ctx: PlanningContext): void {
  const { status } = ctx
  const phase = status.phase
  const observed = observedRevision(status)
  const observation: Observation = { phase, settled: phase === 'Active' || phase === 'Degraded', observed, readiness: readinessFor(ctx, observed) }
  const conditions = new ConditionDraft(status.conditions, ctx.generation, ctx.now)

  describeTemplate(ctx)
  recordResolvedValues(ctx)
  setSpecValid(ctx, conditions)
  setPolicyCompliant(ctx, observation, conditions)
  setApproved(ctx, conditions)
  setPrerequisitesMet(ctx, observation, conditions)
  recordWorkloadRows(ctx, observation.readiness, observation.settled)
  setWorkloadsReady(ctx, observation, conditions)
  setTestsPassed(ctx, observation, conditions)
  setWorkflowSucceeded(ctx, conditions)
  setUpToDate(ctx, observation, conditions)
  setAvailable(ctx, conditions)
  setDrifted(ctx, conditions)
  setReady(ctx, observation, conditions)

  status.conditions = conditions.all
}
