// The lifecycle planner (spec §7.3): one case per transition T1-T27, plus the annotation rules
// of spec §7.2, approval binding and expiry (§7.5), templates (§7.7), timers (§7.10) and echo safety.
import { describe, expect, it } from 'vitest'
import { planLifecycle } from '../../shared/recipe/plan/lifecycle/plan.js'
import type { Transition } from '../../shared/core/plan.js'
import { kineticEventsFor } from '../../shared/engine/kinetic-events.js'
import { recipeEventNaming } from '../../shared/recipe/controller.js'
import type { LifecycleFacts } from '../../shared/recipe/plan/lifecycle-facts.js'
import type { WorkflowRecipe } from '../../shared/schemas/workflowrecipe.js'
import {
  activeRecipe, applied, at, compliant, condition, DIGEST_A, DIGEST_B, facts, needsApproval, notes, readiness, recipe, rejecting, settle, T0, walk, WEB, web,
} from './lifecycle-fixtures.js'

/** The CloudEvent type the shell publishes a recipe transition as; undefined for a Kubernetes Event only. */
function publishedAs(t: Transition | undefined): string | undefined {
  return t && kineticEventsFor('/kinetic/test', { kind: 'WorkflowRecipe', metadata: {} }, '', [t], undefined, recipeEventNaming(recipe(), {}))[0]?.type
}

function expectEcho(echo: ReturnType<typeof settle>['echo']): void {
  expect(echo.transitions).toEqual([])
  expect(echo.changed).toBe(false)
}

const factsB = (over: Partial<LifecycleFacts> = {}) => {
  const f = facts(over)
  if (f.render.ok) f.render.digest = DIGEST_B
  return f
}

/** Active on revision 1, then generation 2 (digest B) deploying as revision 2. */
function deploying2(o: { spec?: Record<string, unknown>; annotations?: Record<string, string> } = {}): WorkflowRecipe {
  const active = activeRecipe({ spec: o.spec ?? { workloads: [WEB] } })
  const r = { ...active, metadata: { ...active.metadata, generation: 2, ...(o.annotations ? { annotations: o.annotations } : {}) }, spec: recipe({ spec: o.spec ?? { workloads: [WEB] } }).spec }
  const plan = planLifecycle(r, factsB({ readiness: readiness(1), snapshots: [1] }), at(10))
  expect(plan.status.phase).toBe('Deploying')
  return applied(r, plan)
}

describe('T1-T27 (spec §7.3)', () => {
  it('T1: a fresh recipe records Candidate, Approved, Pending, Deploying, Testing, Active (spec §7.1)', () => {
    const r = recipe({ finalizers: [] })
    const { plan, echo } = settle(r, facts({ readiness: readiness(1), snapshots: [] }), T0)
    expect(walk(plan)).toEqual(['Candidate:Created', 'Approved:AutoApproved', 'Pending:WaitingForPrerequisites', 'Deploying:PrerequisitesMet', 'Testing:NoTests', 'Active:RevisionActive'])
    expect(plan.addFinalizer).toBe(true)
    expect(plan.writeSnapshot).toBeUndefined()
    expect(plan.status).toMatchObject({ phase: 'Active', observedGeneration: 1, revision: 1, currentRevision: 1, lastGoodRevision: 1, readyWorkloads: '1/1' })
    expect(plan.status.history?.map((h) => h.to)).toEqual(['Candidate', 'Approved', 'Pending', 'Deploying', 'Testing', 'Active'])
    expect(plan.transitions.filter((t) => t.kind === 'phase.changed').every((t) => publishedAs(t) === 'dev.kinetic.recipe.phase.changed' && t.record)).toBe(true)
    expect(condition(plan, 'Ready')).toMatchObject({ status: 'True', reason: 'Active' })
    expect(condition(plan, 'UpToDate')).toMatchObject({ status: 'True', reason: 'UpToDate' })
    expect(condition(plan, 'Available')).toMatchObject({ status: 'True', reason: 'Available' })
    expectEcho(echo)
  })

  it('T1: before any child exists it stops in Deploying with deploy revision 1 and the snapshot to write', () => {
    const { plan, echo } = settle(recipe({ finalizers: [] }), facts(), T0)
    expect(walk(plan).at(-1)).toBe('Deploying:PrerequisitesMet')
    expect(plan.action).toEqual({ type: 'deploy', revision: 1 })
    expect(plan.writeSnapshot).toBe(1)
    expect(plan.addFinalizer).toBe(true)
    expect(plan.nextCheckAt).toBe(at(600))
    expectEcho(echo)
  })

  it('T2: a spec change moves any state to Candidate (NewGeneration) and deploys a new revision', () => {
    const active = activeRecipe()
    const r = { ...active, metadata: { ...active.metadata, generation: 2 } }
    const { plan, echo } = settle(r, factsB({ readiness: readiness(1), snapshots: [1] }), at(10))
    expect(walk(plan)).toEqual(['Candidate:NewGeneration', 'Approved:AutoApproved', 'Pending:WaitingForPrerequisites', 'Deploying:PrerequisitesMet'])
    expect(plan.status).toMatchObject({ observedGeneration: 2, revision: 2, currentRevision: 1 })
    expect(condition(plan, 'UpToDate')).toMatchObject({ status: 'False', reason: 'InProgress' })
    expect(condition(plan, 'Available')).toMatchObject({ status: 'True' })
    expectEcho(echo)
  })

  it('T2: an in-flight revision is abandoned (spec §7.6)', () => {
    const r = deploying2()
    const next = { ...r, metadata: { ...r.metadata, generation: 3 } }
    const f = facts({ readiness: readiness(2, web(false)), snapshots: [1, 2] })
    if (f.render.ok) f.render.digest = 'c'.repeat(64)
    const { plan, echo } = settle(next, f, at(20))
    expect(walk(plan)[0]).toBe('Candidate:NewGeneration')
    expect(plan.abandon).toBe(2)
    expect(plan.status.revisions?.find((e) => e.revision === 2)?.state).toBe('Abandoned')
    expect(plan.status.revision).toBe(3)
    expectEcho(echo)
  })

  it('T3: an invalid generation fails with SpecValid=False, the joined messages and a SpecInvalid Event; nothing is deployed', () => {
    const errors = [
      { reason: 'InputMissing', message: 'input "db" has no value: give it a default, a profile value or a value in spec.values' },
      { reason: 'UnknownDependency', message: 'workload "web" depends on unknown workload "cache"' },
    ]
    const { plan, echo } = settle(recipe(), facts({ render: { ok: false, errors } }), T0)
    expect(walk(plan)).toEqual(['Candidate:Created', 'Failed:SpecInvalid'])
    expect(plan.status.message).toBe(`Spec is invalid: ${errors[0]!.message}; ${errors[1]!.message}`)
    expect(condition(plan, 'SpecValid')).toMatchObject({ status: 'False', reason: 'InputMissing', message: `${errors[0]!.message}; ${errors[1]!.message}` })
    expect(notes(plan)).toContain('SpecInvalid')
    expect(plan.transitions.find((t) => t.reason === 'SpecInvalid' && t.kind !== 'phase.changed')?.type).toBe('Warning')
    expect(plan.action).toEqual({ type: 'none' })
    expect(plan.status.revision ?? 0).toBe(0)
    expectEcho(echo)
  })

  it('T3: RevisionTooLarge is the failure reason', () => {
    const { plan } = settle(recipe(), facts({ render: { ok: false, errors: [{ reason: 'RevisionTooLarge', message: 'the rendered revision is 901 KiB, more than 900 KiB' }] } }), T0)
    expect(plan.status).toMatchObject({ phase: 'Failed', reason: 'RevisionTooLarge', message: 'Spec is invalid: the rendered revision is 901 KiB, more than 900 KiB' })
  })

  it('T4: an Enforce violation rejects the generation with the policy message and a policy.violated CloudEvent', () => {
    const { plan, echo } = settle(recipe(), facts({ policy: rejecting }), T0)
    expect(walk(plan)).toEqual(['Candidate:Created', 'Rejected:PolicyViolation'])
    expect(plan.status.message).toBe(rejecting.message)
    expect(condition(plan, 'PolicyCompliant')).toMatchObject({ status: 'False', reason: 'PolicyViolation' })
    expect(plan.status.policy).toMatchObject({ compliant: false, totalViolations: 1, evaluated: ['production'] })
    expect(publishedAs(plan.transitions.find((t) => t.kind === 'policy.violated'))).toBe('dev.kinetic.recipe.policy.violated')
    expect(plan.transitions.find((t) => t.kind === 'phase.changed' && t.reason === 'PolicyViolation')?.type).toBe('Warning')
    expectEcho(echo)
  })

  it('T5: a generation that renders like the current Active revision allocates nothing (NoEffectiveChange)', () => {
    const active = activeRecipe()
    const r = { ...active, metadata: { ...active.metadata, generation: 2 } }
    const { plan, echo } = settle(r, facts({ readiness: readiness(1), snapshots: [1] }), at(10))
    expect(walk(plan)).toEqual(['Candidate:NewGeneration', 'Active:NoEffectiveChange'])
    expect(plan.status).toMatchObject({ revision: 1, currentRevision: 1, observedGeneration: 2 })
    expect(condition(plan, 'UpToDate')).toMatchObject({ status: 'True' })
    expectEcho(echo)
  })

  it('T5: ... and lands in Degraded when the running revision is not Ready', () => {
    const active = activeRecipe()
    const r = { ...active, metadata: { ...active.metadata, generation: 2 } }
    const { plan, echo } = settle(r, facts({ readiness: readiness(1, web(false)), snapshots: [1] }), at(10))
    expect(walk(plan)).toEqual(['Candidate:NewGeneration', 'Degraded:NoEffectiveChange'])
    expectEcho(echo)
  })

  it('T6: approval required: PendingApproval with the exact kubectl hint and status.approval', () => {
    const { plan, echo } = settle(recipe({ generation: 3, spec: { workloads: [WEB], requireApproval: true } }), facts({ policy: needsApproval() }), T0)
    expect(walk(plan)).toEqual(['Candidate:Created', 'PendingApproval:ApprovalRequired'])
    expect(plan.status.message).toBe('Waiting for approval of generation 3 (required by production): kubectl annotate -n team-a workflowrecipe/shop purko.io/approve=3')
    expect(plan.status.approval).toEqual({ required: true, state: 'Pending', generation: 3, requiredBy: ['production'], requestedAt: T0 })
    expect(condition(plan, 'Approved')).toMatchObject({ status: 'False', reason: 'Pending' })
    expect(plan.action).toEqual({ type: 'wait' })
    expectEcho(echo)
  })

  it('T7: no approval required gives AutoApproved; an approval already given for G gives Approved', () => {
    const auto = settle(recipe(), facts(), T0).plan
    expect(walk(auto)[1]).toBe('Approved:AutoApproved')
    expect(auto.status.approval).toMatchObject({ state: 'NotRequired', required: false })
    expect(condition(auto, 'Approved')).toMatchObject({ status: 'True', reason: 'AutoApproved' })
    const pre = settle(recipe({ generation: 2, annotations: { 'purko.io/approve': '2', 'purko.io/approved-by': 'alice' } }), facts({ policy: needsApproval() }), T0)
    expect(walk(pre.plan)[1]).toBe('Approved:Approved')
    expect(pre.plan.status.approval).toMatchObject({ state: 'Approved', approvedBy: 'alice', generation: 2 })
    expectEcho(pre.echo)
  })

  it('T8: purko.io/approve == G approves, records approvedBy and decidedAt, and deploys', () => {
    const pending = settle(recipe({ generation: 3 }), facts({ policy: needsApproval() }), T0).next
    const r = { ...pending, metadata: { ...pending.metadata, annotations: { 'purko.io/approve': '3', 'purko.io/approved-by': 'alice' } } }
    const { plan, echo } = settle(r, facts({ policy: needsApproval() }), at(30))
    expect(walk(plan)).toEqual(['Approved:Approved', 'Pending:WaitingForPrerequisites', 'Deploying:PrerequisitesMet'])
    expect(plan.status.approval).toMatchObject({ state: 'Approved', approvedBy: 'alice', decidedAt: at(30), requestedAt: T0 })
    expect(condition(plan, 'Approved')).toMatchObject({ status: 'True', reason: 'Approved' })
    expectEcho(echo)
  })

  it('T9: purko.io/reject == G rejects', () => {
    const pending = settle(recipe({ generation: 3 }), facts({ policy: needsApproval() }), T0).next
    const r = { ...pending, metadata: { ...pending.metadata, annotations: { 'purko.io/reject': '3', 'purko.io/approved-by': 'bob' } } }
    const { plan, echo } = settle(r, facts({ policy: needsApproval() }), at(30))
    expect(walk(plan)).toEqual(['Rejected:ApprovalRejected'])
    expect(plan.status.approval).toMatchObject({ state: 'Rejected', decidedAt: at(30) })
    expect(condition(plan, 'Approved')).toMatchObject({ status: 'False', reason: 'Rejected' })
    expectEcho(echo)
  })

  it('T10: an approval request older than approvalTimeoutSeconds expires; nextCheckAt names the deadline', () => {
    const first = settle(recipe({ generation: 3 }), facts({ policy: needsApproval(60) }), T0)
    expect(first.plan.nextCheckAt).toBe(at(60))
    expect(first.plan.status.nextCheckAt).toBe(at(60))
    expect(planLifecycle(first.next, facts({ policy: needsApproval(60) }), at(59)).transitions).toEqual([])
    const { plan, echo } = settle(first.next, facts({ policy: needsApproval(60) }), at(61))
    expect(walk(plan)).toEqual(['Rejected:ApprovalExpired'])
    expect(plan.status.approval?.state).toBe('Expired')
    expect(condition(plan, 'Approved')).toMatchObject({ status: 'False', reason: 'Expired' })
    expect(plan.status.nextCheckAt).toBeUndefined()
    expectEcho(echo)
  })

  it('T11: Approved allocates revision N = highest + 1 with an InProgress entry, its snapshot and revision.created', () => {
    const { plan, echo } = settle(recipe(), facts({ prerequisites: [{ reason: 'NamespaceMissing', message: 'namespace "sandbox-recipes" does not exist' }] }), T0)
    expect(walk(plan).at(-1)).toBe('Pending:WaitingForPrerequisites')
    expect(plan.status.revisions).toEqual([{ revision: 1, generation: 1, state: 'InProgress', digest: DIGEST_A.slice(0, 16), configMap: 'shop-rev-1', createdAt: T0 }])
    expect(plan.writeSnapshot).toBe(1)
    const created = plan.transitions.find((t) => t.kind === 'revision.created')
    expect(created).toMatchObject({ data: { revision: 1, configMap: 'shop-rev-1', digest: DIGEST_A.slice(0, 16) } })
    expect(publishedAs(created)).toBe('dev.kinetic.recipe.revision.created')
    expect(condition(plan, 'PrerequisitesMet')).toMatchObject({ status: 'False', reason: 'NamespaceMissing', message: 'namespace "sandbox-recipes" does not exist' })
    expect(plan.action).toEqual({ type: 'wait', until: at(600) })
    expectEcho(echo)
  })

  it('T12: Pending goes to Deploying once every prerequisite holds', () => {
    const pending = settle(recipe(), facts({ prerequisites: [{ reason: 'SecretMissing', message: 'Secret "db" not found in namespace "team-a"' }] }), T0).next
    const { plan, echo } = settle(pending, facts({ snapshots: [1] }), at(5))
    expect(walk(plan)).toEqual(['Deploying:PrerequisitesMet'])
    expect(condition(plan, 'PrerequisitesMet')).toMatchObject({ status: 'True' })
    expect(plan.writeSnapshot).toBeUndefined()
    expectEcho(echo)
  })

  it('T13: prerequisites not met within progressDeadlineSeconds fail the revision', () => {
    const missing = facts({ prerequisites: [{ reason: 'SecretMissing', message: 'Secret "db" not found in namespace "team-a"' }] })
    const pending = settle(recipe({ spec: { workloads: [WEB], progressDeadlineSeconds: 60 } }), missing, T0).next
    const { plan, echo } = settle(pending, missing, at(60))
    expect(walk(plan)).toEqual(['Failed:PrerequisitesTimeout'])
    expect(plan.status.message).toBe('prerequisites not met within 60s: Secret "db" not found in namespace "team-a"')
    expect(plan.status.revisions?.[0]?.state).toBe('Failed')
    expectEcho(echo)
  })

  it('T14: every workload Ready for N and pruning done: Testing, test Jobs next', () => {
    const spec = { workloads: [WEB], tests: [{ name: 'smoke', image: 'curl:8' }] }
    const r = settle(recipe({ spec }), facts(), T0).next
    const notPruned = settle(r, facts({ readiness: { ...readiness(1), pruned: false } }), at(5))
    expect(notPruned.plan.transitions).toEqual([])
    const { plan, echo } = settle(r, facts({ readiness: readiness(1) }), at(5))
    expect(walk(plan)).toEqual(['Testing:Testing'])
    expect(plan.action).toEqual({ type: 'test', revision: 1 })
    expect(condition(plan, 'WorkloadsReady')).toMatchObject({ status: 'True', reason: 'AllReady' })
    expect(condition(plan, 'TestsPassed')).toMatchObject({ status: 'False', reason: 'Running' })
    expect(plan.status.currentRevision).toBe(1)
    expectEcho(echo)
  })

  it('T15: a failed workload with a last good revision rolls back automatically', () => {
    const r = deploying2()
    const f = factsB({ readiness: readiness(2, web(false, { failed: { reason: 'ApplyFailed', message: 'Deployment.apps "x" is invalid' } })), snapshots: [1, 2] })
    const { plan, echo } = settle(r, f, at(20))
    expect(walk(plan)).toEqual(['RollingBack:AutomaticRollback'])
    expect(plan.status.message).toBe('revision 2 failed: ApplyFailed: Deployment.apps "x" is invalid; rolling back to revision 1')
    expect(plan.status.revisions?.find((e) => e.revision === 2)).toMatchObject({ state: 'Failed', reason: 'ApplyFailed' })
    expect(plan.action).toEqual({ type: 'rollback', from: 2, to: 1 })
    expect(plan.transitions[0]?.type).toBe('Warning')
    expectEcho(echo)
  })

  it('T16: no rollback possible: Failed with the failure reason (JobFailed, ReadinessTimeout)', () => {
    const r = settle(recipe(), facts(), T0).next
    const job = settle(r, facts({ readiness: readiness(1, web(false, { failed: { reason: 'JobFailed', message: 'BackoffLimitExceeded: Job has reached the specified backoff limit' } })) }), at(5))
    expect(walk(job.plan)).toEqual(['Failed:JobFailed'])
    expectEcho(job.echo)
    const slow = settle(r, facts({ readiness: readiness(1, web(false)) }), at(600))
    expect(walk(slow.plan)).toEqual(['Failed:ReadinessTimeout'])
    expect(slow.plan.status.message).toBe('workload "web" (Deployment) was not ready within 600s: 0/1 replicas available')
    expect(condition(slow.plan, 'WorkloadsReady')).toMatchObject({ status: 'False', reason: 'ReadinessTimeout' })
    expectEcho(slow.echo)
    const noAuto = deploying2({ spec: { workloads: [WEB], rollback: { automatic: false } } })
    const off = settle(noAuto, factsB({ readiness: readiness(2, web(false, { failed: { reason: 'JobFailed', message: 'x' } })), snapshots: [1, 2] }), at(20))
    expect(walk(off.plan)).toEqual(['Failed:JobFailed'])
  })

  it('T17: every test Job Complete: Active, currentRevision = lastGoodRevision = N, previous Superseded, old snapshots pruned', () => {
    const spec = { workloads: [WEB], tests: [{ name: 'smoke', image: 'curl:8' }], revisionHistoryLimit: 1 }
    let r = activeRecipe({ spec })
    r = { ...r, metadata: { ...r.metadata, generation: 2 } }
    r = applied(r, planLifecycle(r, factsB({ readiness: readiness(2), snapshots: [1, 2] }), at(10)))
    expect(r.status?.phase).toBe('Testing')
    const tests = { revision: 2, results: [{ name: 'smoke', jobName: 'team-a-shop-test-smoke-58485c92-r2', phase: 'Succeeded' as const, startTime: at(11), completionTime: at(20) }] }
    const { plan, echo } = settle(r, factsB({ readiness: readiness(2), tests, snapshots: [1, 2] }), at(21))
    expect(walk(plan)).toEqual(['Active:RevisionActive'])
    expect(plan.status).toMatchObject({ currentRevision: 2, lastGoodRevision: 2 })
    expect(plan.status.revisions?.map((e) => e.state)).toEqual(['Superseded', 'Active'])
    expect(plan.pruneSnapshots).toEqual([1])
    expect(plan.transitions.find((t) => t.kind === 'test.finished')?.data).toMatchObject({ test: 'smoke', outcome: 'Succeeded' })
    expect(condition(plan, 'TestsPassed')).toMatchObject({ status: 'True', reason: 'Passed' })
    expectEcho(echo)
  })

  it('T18: a failed test rolls back (last good revision) or fails; a Job deadline is TestTimeout', () => {
    const spec = { workloads: [WEB], tests: [{ name: 'smoke', image: 'curl:8', timeoutSeconds: 30 }] }
    const fresh = settle(recipe({ spec }), facts({ readiness: readiness(1) }), T0).next
    expect(fresh.status?.phase).toBe('Testing')
    const failed = { revision: 1, results: [{ name: 'smoke', jobName: 'j', phase: 'Failed' as const, startTime: T0, failedReason: 'BackoffLimitExceeded', message: 'curl: (7) connection refused' }] }
    const f1 = settle(fresh, facts({ readiness: readiness(1), tests: failed }), at(5))
    expect(walk(f1.plan)).toEqual(['Failed:TestFailed'])
    expect(f1.plan.status.message).toBe('test "smoke" failed: curl: (7) connection refused')
    expect(condition(f1.plan, 'TestsPassed')).toMatchObject({ status: 'False', reason: 'TestFailed' })
    expectEcho(f1.echo)
    const running = { revision: 1, results: [{ name: 'smoke', jobName: 'j', phase: 'Running' as const, startTime: T0 }] }
    expect(planLifecycle(fresh, facts({ readiness: readiness(1), tests: running }), at(10)).nextCheckAt).toBe(at(30))
    const f2 = settle(fresh, facts({ readiness: readiness(1), tests: running }), at(30))
    expect(walk(f2.plan)).toEqual(['Failed:TestTimeout'])
    expect(f2.plan.status.message).toBe('test "smoke" did not finish within 30s')
    let r = activeRecipe({ spec })
    r = { ...r, metadata: { ...r.metadata, generation: 2 } }
    r = applied(r, planLifecycle(r, factsB({ readiness: readiness(2), snapshots: [1, 2] }), at(10)))
    const back = settle(r, factsB({ readiness: readiness(2), snapshots: [1, 2], tests: { revision: 2, results: [{ ...failed.results[0]!, failedReason: 'DeadlineExceeded' }] } }), at(15))
    expect(walk(back.plan)).toEqual(['RollingBack:AutomaticRollback'])
    expect(back.plan.status.revisions?.find((e) => e.revision === 2)?.reason).toBe('TestTimeout')
  })

  it('T19: Active becomes Degraded when a workload is not Ready or a child is missing', () => {
    const active = activeRecipe()
    const notReady = settle(active, facts({ readiness: readiness(1, web(false)), snapshots: [1] }), at(100))
    expect(walk(notReady.plan)).toEqual(['Degraded:WorkloadNotReady'])
    expect(notReady.plan.status.message).toBe('workload "web" (Deployment) is not ready: 0/1 replicas available')
    expect(condition(notReady.plan, 'Available')).toMatchObject({ status: 'False', reason: 'NotReady' })
    expect(notReady.plan.action).toEqual({ type: 'maintain', revision: 1 })
    expectEcho(notReady.echo)
    const missing = settle(active, facts({ readiness: readiness(1, web(false, { missing: true })), snapshots: [1] }), at(100))
    expect(walk(missing.plan)).toEqual(['Degraded:ChildMissing'])
    expect(missing.plan.status.message).toBe('Deployment sandbox-recipes/team-a-shop-web-5101637e of workload "web" is missing')
  })

  it('T20: Degraded recovers when every workload is Ready', () => {
    const degraded = settle(activeRecipe(), facts({ readiness: readiness(1, web(false)), snapshots: [1] }), at(100)).next
    const { plan, echo } = settle(degraded, facts({ readiness: readiness(1), snapshots: [1] }), at(200))
    expect(walk(plan)).toEqual(['Active:Recovered'])
    expectEcho(echo)
  })

  it('T21: the rollback target Ready: Active (RolledBack), UpToDate=False with the failed revision named', () => {
    const r = deploying2()
    const rolling = settle(r, factsB({ readiness: readiness(2, web(false, { failed: { reason: 'JobFailed', message: 'x' } })), snapshots: [1, 2] }), at(20)).next
    const { plan, echo } = settle(rolling, factsB({ readiness: readiness(1), snapshots: [1, 2] }), at(30))
    expect(walk(plan)).toEqual(['Active:RolledBack'])
    expect(plan.status.currentRevision).toBe(1)
    expect(condition(plan, 'UpToDate')).toMatchObject({ status: 'False', reason: 'RolledBack', message: 'revision 2 (generation 2) failed: JobFailed; running revision 1' })
    expect(plan.action).toEqual({ type: 'maintain', revision: 1 })
    expectEcho(echo)
    // never re-attempted automatically (spec §7.9)
    expect(planLifecycle(applied(rolling, plan), factsB({ readiness: readiness(1), snapshots: [1, 2] }), at(5000)).transitions).toEqual([])
  })

  it('T22: the rollback deadline gives RollbackTimeout; an apply error RollbackApplyFailed', () => {
    const r = deploying2()
    const rolling = settle(r, factsB({ readiness: readiness(2, web(false, { failed: { reason: 'JobFailed', message: 'x' } })), snapshots: [1, 2] }), at(20)).next
    const timeout = settle(rolling, factsB({ readiness: readiness(1, web(false)), snapshots: [1, 2] }), at(620))
    expect(walk(timeout.plan)).toEqual(['RollbackFailed:RollbackTimeout'])
    expect(timeout.plan.status.message).toBe('revision 1 was not ready within 600s')
    expectEcho(timeout.echo)
    const apply = settle(rolling, factsB({ readiness: readiness(1, web(false, { failed: { reason: 'ApplyFailed', message: 'forbidden' } })), snapshots: [1, 2] }), at(30))
    expect(walk(apply.plan)).toEqual(['RollbackFailed:RollbackApplyFailed'])
  })

  it('T23: purko.io/rollback to a revision that reached Active and has a snapshot starts a manual rollback', () => {
    let r = activeRecipe()
    r = { ...r, metadata: { ...r.metadata, generation: 2 } }
    r = applied(r, planLifecycle(r, factsB({ readiness: readiness(2), snapshots: [1, 2] }), at(10)))
    expect(r.status).toMatchObject({ phase: 'Active', currentRevision: 2 })
    r = { ...r, metadata: { ...r.metadata, annotations: { 'purko.io/rollback': '1' } } }
    const { plan, echo } = settle(r, factsB({ readiness: readiness(2), snapshots: [1, 2] }), at(20))
    expect(walk(plan)).toEqual(['RollingBack:ManualRollback'])
    expect(plan.status.observedRollback).toBe('1')
    expect(plan.action).toEqual({ type: 'rollback', from: 2, to: 1 })
    expectEcho(echo)
    const done = settle(applied(r, plan), factsB({ readiness: readiness(1), snapshots: [1, 2] }), at(30))
    expect(walk(done.plan)).toEqual(['Active:ManualRollback'])
    expect(condition(done.plan, 'UpToDate')).toMatchObject({ status: 'False', reason: 'ManualRollback' })
    expect(done.plan.status.revisions?.map((e) => e.state)).toEqual(['Active', 'Superseded'])
  })

  it('T24: purko.io/retry in Failed re-attempts the latest generation as a new revision (no NoEffectiveChange)', () => {
    const failed = settle(deploying2({ spec: { workloads: [WEB], rollback: { automatic: false } } }), factsB({ readiness: readiness(2, web(false, { failed: { reason: 'JobFailed', message: 'x' } })), snapshots: [1, 2] }), at(20)).next
    expect(failed.status?.phase).toBe('Failed')
    const r = { ...failed, metadata: { ...failed.metadata, annotations: { 'purko.io/retry': 'once' } } }
    const { plan, echo } = settle(r, factsB({ readiness: readiness(2), snapshots: [1, 2] }), at(30))
    expect(walk(plan)).toEqual(['Candidate:RetryRequested', 'Approved:AutoApproved', 'Pending:WaitingForPrerequisites', 'Deploying:PrerequisitesMet'])
    expect(plan.status).toMatchObject({ observedRetry: 'once', revision: 3 })
    expectEcho(echo)
  })

  it('T25: a relaxed policy re-opens a rejected generation; a changed requirement re-evaluates a pending approval', () => {
    const rejected = settle(recipe(), facts({ policy: rejecting }), T0).next
    const still = settle(rejected, facts({ policy: { ...rejecting, totalViolations: 1 } }), at(5))
    expect(still.plan.transitions).toEqual([])
    const { plan, echo } = settle(rejected, facts(), at(10))
    expect(walk(plan)).toEqual(['Candidate:PolicyChanged', 'Approved:AutoApproved', 'Pending:WaitingForPrerequisites', 'Deploying:PrerequisitesMet'])
    expectEcho(echo)
    const pending = settle(recipe({ generation: 2 }), facts({ policy: needsApproval() }), T0).next
    const relaxed = settle(pending, facts(), at(10))
    expect(walk(relaxed.plan).slice(0, 2)).toEqual(['Candidate:PolicyChanged', 'Approved:AutoApproved'])
    expectEcho(relaxed.echo)
    const noChange = planLifecycle(pending, facts({ policy: needsApproval() }), at(10))
    expect(noChange.transitions).toEqual([])
    expect(noChange.changed).toBe(false)
  })

  it('T26: purko.io/deprecate "true" moves to Deprecated; children are left alone', () => {
    const active = activeRecipe()
    const r = { ...active, metadata: { ...active.metadata, annotations: { 'purko.io/deprecate': 'true' } } }
    const { plan, echo } = settle(r, facts({ readiness: readiness(1), snapshots: [1] }), at(10))
    expect(walk(plan)).toEqual(['Deprecated:Deprecated'])
    expect(condition(plan, 'UpToDate')).toMatchObject({ status: 'False', reason: 'Deprecated' })
    expect(plan.action).toEqual({ type: 'none' })
    expectEcho(echo)
  })

  it('T27: removing the annotation returns to Candidate (Undeprecated) and re-evaluates', () => {
    const active = activeRecipe()
    const deprecated = settle({ ...active, metadata: { ...active.metadata, annotations: { 'purko.io/deprecate': 'true' } } }, facts({ readiness: readiness(1), snapshots: [1] }), at(10)).next
    const r = { ...deprecated, metadata: { ...deprecated.metadata, annotations: { 'purko.io/deprecate': 'false' } } }
    const { plan, echo } = settle(r, facts({ readiness: readiness(1), snapshots: [1] }), at(20))
    expect(walk(plan)).toEqual(['Candidate:Undeprecated', 'Active:NoEffectiveChange'])
    expect(condition(plan, 'UpToDate')).toMatchObject({ status: 'True' })
    expectEcho(echo)
  })
})

describe('annotations, approvals and templates (spec §7.2, §7.5, §7.7)', () => {
  it('an approve value other than the generation is ignored with one ApprovalIgnored Event per value and generation', () => {
    const pending = settle(recipe({ generation: 3 }), facts({ policy: needsApproval() }), T0).next
    for (const value of ['true', '2']) {
      const r = { ...pending, metadata: { ...pending.metadata, annotations: { 'purko.io/approve': value } } }
      const { plan, echo } = settle(r, facts({ policy: needsApproval() }), at(5))
      expect(walk(plan)).toEqual([])
      expect(notes(plan)).toEqual(['ApprovalIgnored'])
      expect(plan.status.phase).toBe('PendingApproval')
      expectEcho(echo)
    }
  })

  it('a spec change discards an approval; a retry keeps it', () => {
    const pending = settle(recipe({ generation: 3 }), facts({ policy: needsApproval() }), T0).next
    const approved = settle({ ...pending, metadata: { ...pending.metadata, annotations: { 'purko.io/approve': '3' } } }, facts({ policy: needsApproval(), prerequisites: [{ reason: 'AgentMissing', message: 'Agent "a" not found in namespace "team-a"' }] }), at(5)).next
    const changed = { ...approved, metadata: { ...approved.metadata, generation: 4 } }
    const p = settle(changed, factsB({ policy: needsApproval() }), at(10))
    expect(walk(p.plan)).toEqual(['Candidate:NewGeneration', 'PendingApproval:ApprovalRequired'])
    expect(p.plan.status.approval).toMatchObject({ generation: 4, state: 'Pending' })
    expect(notes(p.plan)).toContain('ApprovalIgnored') // approve=3 no longer names the generation
    // retry keeps the approval of the same generation
    const failed = settle(approved, facts({ policy: needsApproval(), prerequisites: [{ reason: 'AgentMissing', message: 'Agent "a" not found in namespace "team-a"' }] }), at(700)).next
    expect(failed.status?.phase).toBe('Failed')
    const retry = { ...failed, metadata: { ...failed.metadata, annotations: { 'purko.io/approve': '3', 'purko.io/retry': '1' } } }
    const again = settle(retry, facts({ policy: needsApproval() }), at(710))
    expect(walk(again.plan).slice(0, 2)).toEqual(['Candidate:RetryRequested', 'Approved:Approved'])
    expect(again.plan.status.revision).toBe(2)
  })

  it('a retry in a state that does not accept it is recorded and ignored once (RetryIgnored)', () => {
    const active = activeRecipe()
    const r = { ...active, metadata: { ...active.metadata, annotations: { 'purko.io/retry': 'a' } } }
    const { plan, echo } = settle(r, facts({ readiness: readiness(1), snapshots: [1] }), at(10))
    expect(walk(plan)).toEqual([])
    expect(notes(plan)).toEqual(['RetryIgnored'])
    expect(plan.status.observedRetry).toBe('a')
    expectEcho(echo)
  })

  it('after an automatic rollback a retry re-attempts the failed generation', () => {
    const rolling = settle(deploying2(), factsB({ readiness: readiness(2, web(false, { failed: { reason: 'JobFailed', message: 'x' } })), snapshots: [1, 2] }), at(20)).next
    const back = settle(rolling, factsB({ readiness: readiness(1), snapshots: [1, 2] }), at(30)).next
    const r = { ...back, metadata: { ...back.metadata, annotations: { 'purko.io/retry': 'go' } } }
    const { plan } = settle(r, factsB({ readiness: readiness(1), snapshots: [1, 2] }), at(40))
    expect(walk(plan)[0]).toBe('Candidate:RetryRequested')
    expect(plan.status.revision).toBe(3)
  })

  it('a rollback to a revision that never reached Active or has no snapshot is ignored (RollbackIgnored)', () => {
    const active = activeRecipe()
    for (const [value, snapshots] of [['7', [1]], ['1', []], ['abc', [1]]] as const) {
      const r = { ...active, metadata: { ...active.metadata, annotations: { 'purko.io/rollback': value } } }
      const { plan, echo } = settle(r, facts({ readiness: readiness(1), snapshots: [...snapshots] }), at(10))
      expect(walk(plan)).toEqual([])
      expect(notes(plan)).toEqual(['RollbackIgnored'])
      expect(plan.status.observedRollback).toBe(value)
      expectEcho(echo)
    }
  })

  it('a rollback annotation equal to observedRollback does nothing (edge-triggered)', () => {
    const active = activeRecipe()
    const r = { ...active, metadata: { ...active.metadata, annotations: { 'purko.io/rollback': '1' } }, status: { ...active.status, observedRollback: '1' } }
    expect(planLifecycle(r, facts({ readiness: readiness(1), snapshots: [1] }), at(10)).transitions).toEqual([])
  })

  it('a template stays in Candidate (Template), gets no finalizer and is never deployed', () => {
    const r = recipe({ finalizers: [], annotations: { 'purko.io/template': 'true' } })
    const f = facts()
    if (f.render.ok) f.render.missingInputs = ['dbName', 'region']
    const { plan, echo } = settle(r, f, T0)
    expect(walk(plan)).toEqual(['Candidate:Template'])
    expect(plan.status.message).toBe('Template: requires values for: dbName, region')
    expect(plan.addFinalizer).toBe(false)
    expect(plan.action).toEqual({ type: 'none' })
    expect(plan.status.revision ?? 0).toBe(0)
    expectEcho(echo)
    const changed = settle({ ...applied(r, plan), metadata: { ...r.metadata, generation: 2 } }, f, at(5))
    expect(changed.plan.status).toMatchObject({ phase: 'Candidate', reason: 'Template' })
    expect(changed.plan.action).toEqual({ type: 'none' })
  })

  it('a deprecated recipe observes but ignores a spec change (SpecChangeIgnored)', () => {
    const active = activeRecipe()
    const deprecated = settle({ ...active, metadata: { ...active.metadata, annotations: { 'purko.io/deprecate': 'true' } } }, facts({ readiness: readiness(1), snapshots: [1] }), at(10)).next
    const r = { ...deprecated, metadata: { ...deprecated.metadata, generation: 2 } }
    const { plan, echo } = settle(r, factsB(), at(20))
    expect(walk(plan)).toEqual([])
    expect(notes(plan)).toEqual(['SpecChangeIgnored'])
    expect(plan.status).toMatchObject({ phase: 'Deprecated', observedGeneration: 2 })
    expectEcho(echo)
  })

  it('a recipe being deleted hands over to the deletion planner with Ready=False Deleting', () => {
    const active = activeRecipe()
    const plan = planLifecycle({ ...active, metadata: { ...active.metadata, deletionTimestamp: at(5) } }, facts(), at(5))
    expect(plan.action).toEqual({ type: 'delete' })
    expect(plan.transitions).toEqual([])
    expect(condition(plan, 'Ready')).toMatchObject({ status: 'False', reason: 'Deleting' })
  })

  it('a running revision that a changed policy now forbids keeps running: ViolatesCurrentPolicy and one PolicyViolation Event', () => {
    const active = activeRecipe()
    const { plan, echo } = settle(active, facts({ policy: rejecting, readiness: readiness(1), snapshots: [1] }), at(10))
    expect(plan.status.phase).toBe('Active')
    expect(condition(plan, 'PolicyCompliant')).toMatchObject({ status: 'False', reason: 'ViolatesCurrentPolicy' })
    expect(notes(plan)).toEqual(['PolicyViolation'])
    expectEcho(echo)
  })

  it('a source Secret deleted under a settled recipe gives PrerequisitesMet=False and one SourceSecretMissing Event', () => {
    const active = activeRecipe()
    const f = facts({ readiness: readiness(1), snapshots: [1], prerequisites: [{ reason: 'SecretMissing', message: 'Secret "db" not found in namespace "team-a"' }] })
    const { plan, echo } = settle(active, f, at(10))
    expect(plan.status.phase).toBe('Active')
    expect(notes(plan)).toEqual(['SourceSecretMissing'])
    expect(condition(plan, 'PrerequisitesMet')).toMatchObject({ status: 'False', reason: 'SecretMissing' })
    expectEcho(echo)
  })

  it('unavailable policies keep a Candidate waiting with PolicyCompliant=Unknown', () => {
    const { plan, echo } = settle(recipe(), facts({ policy: 'unavailable' }), T0)
    expect(walk(plan)).toEqual(['Candidate:Created'])
    expect(condition(plan, 'PolicyCompliant')).toMatchObject({ status: 'Unknown', reason: 'PolicyUnavailable' })
    expectEcho(echo)
    expect(walk(planLifecycle(applied(recipe(), plan), facts({ policy: compliant }), at(5)))[0]).toBe('Approved:AutoApproved')
  })
})
