import { describe, expect, it } from 'vitest'
import { runIdFor } from '../../shared/workflow/plan/run-id.js'
import { encodeStepStates } from '../../shared/workflow/plan/step-states.js'
import { RunControlError } from '../../shared/run-control/errors.js'
import {
  cancelAnnotations, checkCancel, checkDecision, checkPromotion, checkRerun, decisionAnnotations, decisionEvent,
  promotionEvent, promotionValue, rerunEvent, rerunPatch, type Actor,
} from '../../shared/run-control/patches.js'
import type { Agent } from '../../shared/schemas/agent.js'
import type { StepPhase, WorkflowStatus } from '../../shared/schemas/workflow.js'
import { aStep, aWorkflow, WF_UID } from '../fixtures/workflows.js'

const ALICE: Actor = { user: 'alice', now: '2026-03-01T10:00:00.000Z' }
const RUN = runIdFor(WF_UID, undefined)

function refusal(f: () => unknown): { status: number; message?: string } | null {
  try {
    f()
    return null
  } catch (err) {
    if (err instanceof RunControlError) return { status: err.status, ...(err.detail ? { message: err.detail } : {}) }
    throw err
  }
}

const gated = (status?: WorkflowStatus, annotations?: Record<string, string>) => aWorkflow({
  spec: { steps: [aStep('plan'), aStep('ship', { dependsOn: ['plan'] })] },
  ...(status ? { status } : {}),
  ...(annotations ? { annotations } : {}),
})
const running = (ship?: StepPhase, phase: WorkflowStatus['phase'] = 'Running'): WorkflowStatus => ({
  runId: RUN, phase,
  stepStatuses: [{ name: 'plan', phase: 'Running' }, ...(ship ? [{ name: 'ship', phase: ship }] : [])],
})

describe('deciding a step', () => {
  it.each([
    ['a run that has not started', gated()],
    ['a step not reached yet (pre-approval)', gated(running())],
    ['a step waiting for approval', gated(running('Pending'))],
    ['a step of a run a rerun is about to replace, even if the old run finished', gated({ runId: 'old-0000', phase: 'Succeeded', stepStatuses: [{ name: 'ship', phase: 'Succeeded' }] })],
  ])('may be decided for %s', (_, wf) => {
    expect(refusal(() => checkDecision(wf, 'ship'))).toBeNull()
  })

  it.each<[string, ReturnType<typeof gated>, string, { status: number; message: string }]>([
    ['a step the spec does not have', gated(running()), 'nope', { status: 404, message: 'Workflow ai-agents/wf has no step "nope"' }],
    ['a finished run', gated(running('Pending', 'Cancelled')), 'ship', { status: 409, message: 'Workflow ai-agents/wf has already finished (Cancelled); its steps can no longer be approved or denied' }],
    ['a step already running', gated(running('Running')), 'ship', { status: 409, message: 'Step "ship" of Workflow ai-agents/wf is already Running; only a step that has not started can be approved or denied' }],
    ['a step already failed', gated(running('Failed')), 'ship', { status: 409, message: 'Step "ship" of Workflow ai-agents/wf is already Failed; only a step that has not started can be approved or denied' }],
  ])('is refused for %s', (_, wf, step, expected) => {
    expect(refusal(() => checkDecision(wf, step))).toEqual(expected)
  })

  it('reads the phases of a large run from its compact record', () => {
    const steps = Array.from({ length: 300 }, (_, i) => aStep(`s${i}`))
    const wf = aWorkflow({ spec: { steps } })
    // Every step finished except the last, which has not started.
    const states = new Map(steps.map((s, i) => [s.name, i < 299 ? { phase: 'Succeeded' as const, retryCount: 0 } : { retryCount: 0 }]))
    wf.status = { runId: RUN, phase: 'Running', ...encodeStepStates(steps, states) }
    expect(refusal(() => checkDecision(wf, 's0'))?.status).toBe(409)
    expect(refusal(() => checkDecision(wf, 's299'))).toBeNull()
  })

  it('is refused for a template, which never runs', () => {
    const template = aWorkflow({ annotations: { 'purko.io/template': 'true' } })
    expect(refusal(() => checkDecision(template, 's1'))?.status).toBe(400)
    expect(refusal(() => checkCancel(template))?.status).toBe(400)
    expect(refusal(() => checkRerun(template))?.status).toBe(400)
  })

  it("writes purko's annotation and the verified decision in one patch, removing the opposite decision", () => {
    expect(decisionAnnotations(gated(), 'ship', 'approved', ALICE, 'looks right')).toEqual({
      'purko.io/approve-ship': 'true',
      'kinetic.dev/decision-ship': '{"verdict":"approved","user":"alice","time":"2026-03-01T10:00:00.000Z","reason":"looks right"}',
    })
    const approved = gated(undefined, { 'purko.io/approve-ship': 'true' })
    expect(decisionAnnotations(approved, 'ship', 'denied', ALICE)).toEqual({
      'purko.io/deny-ship': 'true',
      'purko.io/approve-ship': null,
      'kinetic.dev/decision-ship': '{"verdict":"denied","user":"alice","time":"2026-03-01T10:00:00.000Z"}',
    })
  })

  it('records an Event naming the user, the step and the reason', () => {
    const event = decisionEvent(gated(), 'ship', 'approved', ALICE, 'looks right')
    expect(event).toMatchObject({
      reason: 'StepApproved', type: 'Normal', message: 'alice approved step ship: looks right',
      involvedObject: { kind: 'Workflow', name: 'wf', namespace: 'ai-agents', uid: WF_UID },
      source: { component: 'kinetic-run-control' },
    })
    expect(decisionEvent(gated(), 'ship', 'denied', ALICE).message).toBe('alice denied step ship')
    expect(decisionEvent(gated(), 'ship', 'denied', ALICE).reason).toBe('StepDenied')
    // Two decisions at different times are two Events.
    expect(decisionEvent(gated(), 'ship', 'denied', { ...ALICE, now: '2026-03-01T10:00:01.000Z' }).metadata?.name).not.toBe(decisionEvent(gated(), 'ship', 'denied', ALICE).metadata?.name)
  })
})

describe('cancel and rerun', () => {
  it('cancels a run that has not finished, and refuses one that has', () => {
    expect(refusal(() => checkCancel(gated(running())))).toBeNull()
    expect(refusal(() => checkCancel(gated()))).toBeNull()
    expect(refusal(() => checkCancel(gated(running(undefined, 'Succeeded'))))).toEqual({ status: 409, message: 'Workflow ai-agents/wf has already finished (Succeeded); there is nothing to cancel' })
    expect(cancelAnnotations(ALICE, 'wrong input')).toEqual({
      'purko.io/cancel': 'true',
      'kinetic.dev/requested-by': '{"action":"cancel","user":"alice","time":"2026-03-01T10:00:00.000Z","reason":"wrong input"}',
    })
  })

  it('reruns with a fresh run id, the overrides, who asked, and none of the previous run\'s steering annotations', () => {
    const wf = gated(running('Failed', 'Failed'), {
      'purko.io/cancel': 'true', 'kinetic.dev/cancel-reason': 'Replaced by run x', 'purko.io/approve-ship': 'true', 'purko.io/deny-plan': 'true',
      'kinetic.dev/decision-ship': '{}', 'purko.io/workflow-template': 'nightly', 'purko.io/run-id': 'keep',
    })
    expect(rerunPatch(wf, { env: 'prod' }, ALICE, 'flaky network')).toEqual({
      annotations: {
        'purko.io/cancel': null, 'kinetic.dev/cancel-reason': null, 'purko.io/approve-ship': null, 'purko.io/deny-plan': null, 'kinetic.dev/decision-ship': null,
        'purko.io/rerun': ALICE.now,
        'kinetic.dev/requested-by': '{"action":"rerun","user":"alice","time":"2026-03-01T10:00:00.000Z","reason":"flaky network"}',
      },
      parameters: { env: 'prod' },
    })
    expect(rerunPatch(gated(), {}, ALICE)).toEqual({ annotations: { 'purko.io/rerun': ALICE.now, 'kinetic.dev/requested-by': '{"action":"rerun","user":"alice","time":"2026-03-01T10:00:00.000Z"}' } })
  })

  it('gives a second rerun within the same millisecond its own run id', () => {
    const again = rerunPatch(gated(undefined, { 'purko.io/rerun': ALICE.now }), {}, ALICE)
    expect(again.annotations['purko.io/rerun']).toBe('2026-03-01T10:00:00.001Z')
  })

  it('names the overridden parameters, not their values, in the Event', () => {
    expect(rerunEvent(gated(), { env: 'prod', token: 's3cret' }, ALICE).message).toBe('alice asked for a rerun with parameters env, token')
  })
})

describe('promotion approvals', () => {
  const agent = (level?: 'shu' | 'ha' | 'ri', pending?: string): Agent => ({
    apiVersion: 'purko.io/v1alpha1', kind: 'Agent',
    metadata: { name: 'reviewer', namespace: 'team-a', uid: 'u1', ...(pending ? { annotations: { 'purko.io/approve-promotion': pending } } : {}) },
    spec: { model: { provider: 'p', name: 'm' } },
    ...(level ? { status: { shuHaRi: { currentLevel: level } } } : {}),
  }) as Agent

  it('writes "<level> <user>[: reason]", which the autonomy engine reads as an approval for that level', () => {
    expect(promotionValue('ha', ALICE, 'two clean weeks')).toBe('ha alice: two clean weeks')
    expect(promotionValue('ri', { ...ALICE, user: 'system:serviceaccount:team-a:lead' })).toBe('ri system:serviceaccount:team-a:lead')
    expect(refusal(() => promotionValue('ha', ALICE, 'x'.repeat(250)))?.status).toBe(400)
  })

  it('is accepted for the next level, or when the level is not known yet', () => {
    expect(refusal(() => checkPromotion(agent('shu'), 'ha', 'ha alice'))).toBeNull()
    expect(refusal(() => checkPromotion(agent(), 'ri', 'ri alice'))).toBeNull()
    // Sending the same approval again is harmless.
    expect(refusal(() => checkPromotion(agent('shu', 'ha alice'), 'ha', 'ha alice'))).toBeNull()
  })

  it.each([
    ['a level that is not the next one', agent('shu'), 'ri', 'Agent team-a/reviewer is at shu: only a promotion to ha can be approved'],
    ['an agent at the highest level', agent('ri'), 'ri', 'Agent team-a/reviewer is already at ri, the highest level'],
    ['an earlier approval not recorded yet (it would be overwritten)', agent('shu', 'ha bob'), 'ha', 'Agent team-a/reviewer has an approval the autonomy engine has not recorded yet ("ha bob"); try again in a few seconds'],
  ] as const)('is refused (409) for %s', (_, a, level, message) => {
    expect(refusal(() => checkPromotion(a, level, `${level} alice`))).toEqual({ status: 409, message })
  })

  it('records an Event on the Agent', () => {
    expect(promotionEvent(agent('shu'), 'ha', ALICE, 'ready')).toMatchObject({
      reason: 'PromotionApproved', message: 'alice approved promotion to ha: ready', involvedObject: { kind: 'Agent', name: 'reviewer', namespace: 'team-a' },
    })
  })
})
