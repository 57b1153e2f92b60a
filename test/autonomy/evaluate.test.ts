import { describe, expect, it } from 'vitest'
import { planAutonomy, rollbackDue, type AutonomyPlan } from '../../shared/autonomy/plan/evaluate.js'
import { CONDITION_PROGRESSION } from '../../shared/autonomy/plan/progression-report.js'
import { UNCHANGED } from '../../shared/core/plan.js'
import { effectivePolicy, type EffectivePolicy } from '../../shared/autonomy/plan/policy.js'
import type { Agent, AgentMetrics, AutonomyLevel, ShuHaRiLevel, ShuHaRiStatus } from '../../shared/schemas/agent.js'
import { metricsOf } from '../fixtures/autonomy.js'
import type { AgentAutonomyPolicySpec } from '../../shared/schemas/autonomypolicy.js'

const NOW = '2026-03-01T00:00:00.000Z'
const LONG_AGO = '2026-01-01T00:00:00.000Z' // 59 days before NOW

function aPolicy(spec: Partial<AgentAutonomyPolicySpec> = {}): EffectivePolicy {
  return effectivePolicy({
    apiVersion: 'purko.io/v1alpha1', kind: 'AgentAutonomyPolicy',
    metadata: { name: 'default', namespace: 'team' },
    spec: { shuHaRi: { progressionCriteria: {} }, ...spec },
  })
}
const ROLLBACK = aPolicy({ rollback: { enabled: true } })

/** Metrics after `n` actions in the level with `failures` of them failed (the last `streakEnd` in a row). */
function metrics(n: number, failures = 0, extra: Partial<AgentMetrics> = {}): AgentMetrics {
  return { totalInvocations: 1000 + n, successCount: 900 + n - failures, failureCount: 100 + failures, consecutiveSuccesses: n - failures, consecutiveFailures: 0, ...extra }
}

type ShuHaRi = NonNullable<Agent['spec']['shuHaRi']>

interface Shape {
  level?: ShuHaRiLevel
  specLevel?: ShuHaRiLevel | null
  autonomyLevel?: AutonomyLevel
  since?: string
  metrics?: AgentMetrics
  approvals?: ShuHaRiStatus['approvals']
  annotation?: string
  optedIn?: boolean
}

/** An agent settled at `level` since `since`, with levelStart at 1000 invocations (900 ok, 100 failed). */
function anAgent(shape: Shape = {}): Agent {
  const level = shape.level ?? 'shu'
  const autonomy = shape.autonomyLevel ?? ({ shu: 'restricted', ha: 'supervised', ri: 'full' } as const)[level]
  const since = shape.since ?? LONG_AGO
  return {
    apiVersion: 'purko.io/v1alpha1', kind: 'Agent',
    metadata: {
      name: 'helper', namespace: 'team', uid: 'uid-helper', resourceVersion: '7', generation: 3, creationTimestamp: '2025-06-01T00:00:00Z',
      ...(shape.annotation !== undefined ? { annotations: { 'purko.io/approve-promotion': shape.annotation } } : {}),
    },
    spec: {
      model: { provider: 'offline', name: 'scripted' }, replicas: 1, maxConcurrency: 10, timeout: '5m',
      autonomyLevel: autonomy,
      ...(shape.optedIn === false ? {} : { shuHaRi: shape.specLevel === null ? {} : { level: shape.specLevel ?? level, promotedAt: since } }),
    },
    status: {
      phase: 'Ready',
      metrics: shape.metrics ?? metrics(0),
      ...(shape.optedIn === false ? {} : {
        shuHaRi: {
          currentLevel: level, levelSince: since, readyForPromotion: false, policy: 'default', approvals: shape.approvals ?? [],
          levelStart: { invocations: 1000, successes: 900, failures: 100 },
        },
      }),
    },
  }
}

function plan(agent: Agent, policy = aPolicy()): AutonomyPlan {
  const p = planAutonomy(agent, policy, NOW)
  if (p === UNCHANGED) throw new Error('expected a plan')
  return p
}

/** The agent as it is once a plan is written (spec merge patch and status). */
function after(agent: Agent, p: AutonomyPlan): Agent {
  const annotations = { ...(agent.metadata.annotations ?? {}) }
  for (const [k, v] of Object.entries(p.patch?.metadata?.annotations ?? {})) if (v === null) delete annotations[k]
  return {
    ...agent,
    metadata: { ...agent.metadata, annotations },
    spec: {
      ...agent.spec,
      ...(p.patch?.spec?.autonomyLevel ? { autonomyLevel: p.patch.spec.autonomyLevel as AutonomyLevel } : {}),
      ...(p.patch?.spec?.shuHaRi ? { shuHaRi: { ...agent.spec.shuHaRi, ...p.patch.spec.shuHaRi } as Agent['spec']['shuHaRi'] } : {}),
    },
    status: p.status ?? agent.status,
  }
}

const progression = (p: AutonomyPlan) => p.status?.conditions?.find((c) => c.type === CONDITION_PROGRESSION)
const kinds = (p: AutonomyPlan) => p.transitions.map((t) => t.kind)

describe('promotion: all criteria of a transition at once, one level per evaluation', () => {
  it.each([
    ['shu -> ha with the defaults (100 actions, 0.95, 14 days)', 'shu', metrics(100, 5), 'ha', 'supervised'],
    ['ha -> ri with the defaults (500 actions, 0.99, 30 days, streak 20)', 'ha', metrics(500, 5), 'ri', 'full'],
  ] as const)('%s', (_, level, m, to, autonomy) => {
    const p = plan(anAgent({ level, metrics: m }))
    expect(p.patch?.spec).toEqual({ shuHaRi: { level: to, promotedAt: NOW }, autonomyLevel: autonomy })
    expect(p.status?.shuHaRi).toMatchObject({ currentLevel: to, levelSince: NOW, readyForPromotion: false, approvals: [], levelStart: { invocations: 1000 + m.totalInvocations! - 1000 } })
    expect(progression(p)).toMatchObject({ status: 'True', reason: 'Promoted' })
    const event = p.transitions.find((t) => t.kind === 'promoted')!
    expect(event).toMatchObject({ reason: 'Promoted', record: true, data: { from: level, to } })
    // The audit trail names every criterion's value and requirement.
    for (const word of ['actions', 'success rate', 'days in level', 'incident-free streak', 'approvals', 'consecutive failures']) expect(event.message).toContain(word)
  })

  it.each([
    ['too few actions', metrics(99, 0), LONG_AGO, 'actions 99/100'],
    ['a success rate below the minimum', metrics(100, 6), LONG_AGO, 'success rate 0.94/0.95'],
    ['too few days in the level', metrics(100, 0), '2026-02-16T00:00:01.000Z', 'days in level 12/14'],
  ])('shu stays with %s', (_, m, since, unmet) => {
    const p = plan(anAgent({ metrics: m, since }))
    expect(p.patch).toBeUndefined()
    expect(p.status?.shuHaRi?.currentLevel).toBe('shu')
    expect(progression(p)).toMatchObject({ status: 'False', reason: 'CriteriaNotMet', message: expect.stringContaining(unmet) })
    expect(kinds(p)).toEqual([])
  })

  it('ha stays while the incident-free streak is short, however good the rest', () => {
    const p = plan(anAgent({ level: 'ha', metrics: metrics(600, 0, { consecutiveSuccesses: 19 }) }))
    expect(p.patch).toBeUndefined()
    expect(progression(p)?.message).toContain('incident-free streak 19/20')
  })

  it('counts actions from level entry: a fresh level needs new actions even with a long history', () => {
    const promoted = after(anAgent({ metrics: metrics(5000, 0) }), plan(anAgent({ metrics: metrics(5000, 0) })))
    expect(promoted.status?.shuHaRi?.currentLevel).toBe('ha')
    // The same metrics a year later: a year in ha, but no action in it yet.
    expect(planAutonomy(promoted, aPolicy(), NOW)).toBe(UNCHANGED)
    const yearLater = planAutonomy(promoted, aPolicy(), '2027-03-01T00:00:00.000Z')
    expect(yearLater === UNCHANGED ? 'ha' : yearLater.level).toBe('ha')
    expect(yearLater !== UNCHANGED && yearLater.status?.shuHaRi?.promotionProgress).toMatchObject({ actionsCompleted: 0, daysInLevel: 365 })
  })

  it('success rate with no result in the level is not met (not zero, not one)', () => {
    const p = plan(anAgent({ metrics: metrics(0) }), aPolicy({ shuHaRi: { progressionCriteria: { shuToHa: { minimumActionsCompleted: 1, minimumSuccessRate: 0, minimumDaysInLevel: 0 } } } }))
    expect(progression(p)?.message).toContain('success rate n/a/0')
    expect(p.status?.shuHaRi?.promotionProgress?.successRate).toBeUndefined()
  })

  it('ri is the highest level', () => {
    const p = plan(anAgent({ level: 'ri', metrics: metrics(5000, 0) }))
    expect(p.patch).toBeUndefined()
    expect(progression(p)).toMatchObject({ status: 'True', reason: 'HighestLevel' })
    expect(p.status?.shuHaRi?.promotionProgress).toBeUndefined()
  })
})

describe('approvals', () => {
  const twoApprovals = aPolicy({ shuHaRi: { progressionCriteria: { shuToHa: { requiredApprovals: 2 } } } })

  it('with N = 0 promotion is automatic', () => {
    expect(plan(anAgent({ metrics: metrics(100) })).level).toBe('ha')
  })

  it('with N > 0 the agent waits, ready for promotion, reason AwaitingApproval', () => {
    const p = plan(anAgent({ metrics: metrics(100) }), twoApprovals)
    expect(p.patch).toBeUndefined()
    expect(p.status?.shuHaRi?.readyForPromotion).toBe(true)
    expect(progression(p)).toMatchObject({ status: 'True', reason: 'AwaitingApproval', message: expect.stringContaining('approvals 0/2') })
  })

  it('records an approval in status before the annotation is removed', () => {
    const p = plan(anAgent({ metrics: metrics(100), annotation: 'ha by alice' }), twoApprovals)
    expect(p.status?.shuHaRi?.approvals).toEqual([{ level: 'ha', value: 'ha by alice', approvedAt: NOW }])
    expect(p.patch).toEqual({ metadata: { annotations: { 'purko.io/approve-promotion': null } } })
    expect(p.patchAfterStatus).toBe(true)
    expect(p.level).toBe('shu')
    expect(kinds(p)).toEqual(['approval.recorded'])
  })

  it('an approval seen again (its removal was lost) does not count twice', () => {
    const recorded = plan(anAgent({ metrics: metrics(100), annotation: 'ha by alice' }), twoApprovals)
    const crashed = after(anAgent({ metrics: metrics(100), annotation: 'ha by alice' }), { ...recorded, patch: undefined })
    const p = plan(crashed, twoApprovals)
    expect(p.status).toBeUndefined()
    expect(p.patch).toEqual({ metadata: { annotations: { 'purko.io/approve-promotion': null } } })
    expect(p.level).toBe('shu')
  })

  it('the same value twice in status is one approval', () => {
    const approvals = [{ level: 'ha' as const, value: 'ha', approvedAt: NOW }, { level: 'ha' as const, value: 'ha', approvedAt: LONG_AGO }]
    expect(plan(anAgent({ metrics: metrics(100), approvals }), twoApprovals).status?.shuHaRi?.promotionProgress?.approvals).toBe(1)
  })

  it('promotes on the N-th distinct approval, in one patch that also removes the annotation, and clears approvals', () => {
    const approvals = [{ level: 'ha' as const, value: 'ha by alice', approvedAt: NOW }]
    const p = plan(anAgent({ metrics: metrics(100), annotation: 'ha by bob', approvals }), twoApprovals)
    expect(p.patch).toEqual({ spec: { shuHaRi: { level: 'ha', promotedAt: NOW }, autonomyLevel: 'supervised' }, metadata: { annotations: { 'purko.io/approve-promotion': null } } })
    expect(p.patchAfterStatus).toBe(false)
    expect(p.status?.shuHaRi?.approvals).toEqual([])
    expect(kinds(p)).toEqual(['approval.recorded', 'promoted'])
  })

  it('approvals alone do not promote when another criterion is unmet', () => {
    const approvals = [{ level: 'ha' as const, value: 'a', approvedAt: NOW }, { level: 'ha' as const, value: 'b', approvedAt: NOW }]
    expect(plan(anAgent({ metrics: metrics(50), approvals }), twoApprovals).level).toBe('shu')
  })

  it.each([
    ['a level other than the next one', 'shu', 'ri'],
    ['anything at the highest level', 'ri', 'ri'],
    ['a value that names no level', 'shu', 'yes please'],
  ] as const)('ignores an approval for %s, with a Warning, and removes it', (_, level, value) => {
    const p = plan(anAgent({ level, metrics: metrics(0), annotation: value }))
    expect(p.patch?.metadata?.annotations).toEqual({ 'purko.io/approve-promotion': null })
    expect(p.transitions).toEqual([expect.objectContaining({ kind: 'approval.ignored', type: 'Warning', reason: 'ApprovalIgnored' })])
    expect(p.status?.shuHaRi?.approvals ?? []).toEqual([])
  })

  it('approvals for another level do not count towards the next one', () => {
    const approvals = [{ level: 'ri' as const, value: 'ri', approvedAt: NOW }]
    expect(plan(anAgent({ metrics: metrics(100), approvals }), aPolicy({ shuHaRi: { progressionCriteria: { shuToHa: { requiredApprovals: 1 } } } })).level).toBe('shu')
  })
})

describe('rollback', () => {
  it.each([
    ['success rate below 0.90 over 10 actions', 'ri', metrics(10, 2), ROLLBACK, 'shu'],
    ['3 consecutive failures', 'ha', metrics(40, 3, { consecutiveFailures: 3 }), ROLLBACK, 'shu'],
    ['rollbackLevel ha', 'ri', metrics(20, 5), aPolicy({ rollback: { enabled: true, rollbackLevel: 'ha' } }), 'ha'],
  ] as const)('demotes on %s and resets the clock', (_, level, m, policy, to) => {
    const agent = anAgent({ level, metrics: m })
    expect(rollbackDue(agent, policy)).toBe(true)
    const p = plan(agent, policy)
    expect(p.patch?.spec).toEqual({ shuHaRi: { level: to, promotedAt: NOW }, autonomyLevel: to === 'shu' ? 'restricted' : 'supervised' })
    expect(p.status?.shuHaRi).toMatchObject({ currentLevel: to, levelSince: NOW, levelStart: { invocations: m.totalInvocations } })
    expect(progression(p)).toMatchObject({ status: 'False', reason: 'Demoted' })
    expect(p.transitions.find((t) => t.kind === 'demoted')).toMatchObject({ type: 'Warning', data: { from: level, to } })
  })

  it.each([
    ['a low rate over fewer than 10 actions', 'ri', metrics(9, 3), ROLLBACK],
    ['rollback not enabled', 'ri', metrics(20, 10, { consecutiveFailures: 5 }), aPolicy()],
    ['already at the rollback level', 'shu', metrics(20, 10, { consecutiveFailures: 5 }), ROLLBACK],
    ['a failure streak that began before the level', 'ha', metrics(1, 1, { consecutiveFailures: 4 }), ROLLBACK],
  ] as const)('does not demote with %s', (_, level, m, policy) => {
    const agent = anAgent({ level, metrics: m })
    expect(rollbackDue(agent, policy)).toBe(false)
    expect(planAutonomy(agent, policy, NOW) === UNCHANGED || (planAutonomy(agent, policy, NOW) as AutonomyPlan).level === level).toBe(true)
  })

  it('demotion wins over promotion', () => {
    // An easy ha -> ri is met (100 actions at 0.97), but the last three attempts failed.
    const easy = aPolicy({
      shuHaRi: { progressionCriteria: { haToRi: { minimumActionsCompleted: 1, minimumSuccessRate: 0.5, minimumDaysInLevel: 0, incidentFreeStreak: 0 } } },
      rollback: { enabled: true, triggerConditions: { successRateBelow: 0.4 } },
    })
    const p = plan(anAgent({ level: 'ha', metrics: metrics(100, 3, { consecutiveFailures: 3, consecutiveSuccesses: 0 }) }), easy)
    expect(p.level).toBe('shu')
    expect(kinds(p)).toEqual(['demoted'])
  })
})

describe('adoption and autonomyLevel', () => {
  it('adopts a hand-edited spec level: clock and counters start now, approvals cleared', () => {
    const agent = anAgent({ level: 'shu', metrics: metrics(50), approvals: [{ level: 'ha', value: 'ha', approvedAt: LONG_AGO }] })
    agent.spec.shuHaRi = { level: 'ri', promotedAt: LONG_AGO } // the old promotedAt: a hand edit
    const p = plan(agent)
    expect(p.patch?.spec).toEqual({ shuHaRi: { promotedAt: NOW }, autonomyLevel: 'full' })
    expect(p.status?.shuHaRi).toMatchObject({ currentLevel: 'ri', levelSince: NOW, approvals: [], levelStart: { invocations: 1050 } })
    expect(kinds(p)).toEqual(['level.adopted'])
  })

  it('adopts a promotion whose status write was lost, keeping its clock', () => {
    const agent = anAgent({ level: 'shu', metrics: metrics(100) })
    agent.spec.shuHaRi = { level: 'ha', promotedAt: '2026-02-28T23:55:00.000Z' }
    agent.spec.autonomyLevel = 'supervised'
    const p = plan(agent)
    expect(p.patch).toBeUndefined()
    expect(p.status?.shuHaRi).toMatchObject({ currentLevel: 'ha', levelSince: '2026-02-28T23:55:00.000Z' })
    expect(p.level).toBe('ha')
    // The lost write's Event and CloudEvent go out now, measured against the old level.
    expect(p.transitions).toEqual([expect.objectContaining({ kind: 'promoted', reason: 'Promoted', data: expect.objectContaining({ from: 'shu', to: 'ha' }) })])
    expect(progression(p)).toMatchObject({ status: 'True', reason: 'Promoted', message: expect.stringMatching(/^Promoted from shu to ha: actions 100 \(required 100\)/) })
    expect(planAutonomy(after(agent, p), aPolicy(), NOW)).toBe(UNCHANGED)
  })

  it('a first evaluation pins the level implied by autonomyLevel, measured from creation', () => {
    const agent = anAgent({ specLevel: null, autonomyLevel: 'supervised' })
    delete agent.status!.shuHaRi
    const p = plan(agent)
    expect(p.patch?.spec).toEqual({ shuHaRi: { level: 'ha' } })
    expect(p.status?.shuHaRi).toMatchObject({ currentLevel: 'ha', levelSince: '2025-06-01T00:00:00Z' })
    expect(kinds(p)).toEqual([])
  })

  it('a first evaluation without autonomyLevel starts at shu and restricts', () => {
    const agent = anAgent({ specLevel: null })
    delete agent.spec.autonomyLevel
    delete agent.status!.shuHaRi
    expect(plan(agent).patch?.spec).toEqual({ shuHaRi: { level: 'shu' }, autonomyLevel: 'restricted' })
  })

  it('tightens an autonomyLevel looser than the level allows, with a Warning', () => {
    const p = plan(anAgent({ level: 'shu', autonomyLevel: 'full' }))
    expect(p.patch?.spec).toEqual({ autonomyLevel: 'restricted' })
    expect(p.transitions).toEqual([expect.objectContaining({ reason: 'AutonomyTightened', type: 'Warning' })])
  })

  it('never loosens without a transition: a tighter autonomyLevel stays', () => {
    const agent = anAgent({ level: 'ri', autonomyLevel: 'restricted', metrics: metrics(0) })
    expect(planAutonomy(agent, aPolicy(), NOW) === UNCHANGED || !(planAutonomy(agent, aPolicy(), NOW) as AutonomyPlan).patch).toBe(true)
  })

  it('manual stays manual, through promotions too', () => {
    const p = plan(anAgent({ level: 'shu', autonomyLevel: 'manual', metrics: metrics(100) }))
    expect(p.patch?.spec).toEqual({ shuHaRi: { level: 'ha', promotedAt: NOW } })
  })
})

describe('the record before the first evaluation counts', () => {
  /** An agent no evaluation has seen yet (no status.shuHaRi), created on 2025-06-01, with `m` as its whole record. */
  function unseen(m: AgentMetrics, specLevel: ShuHaRi = {}, autonomyLevel: AutonomyLevel = 'restricted'): Agent {
    const agent = anAgent({ metrics: m, autonomyLevel })
    agent.spec.shuHaRi = specLevel
    delete agent.status!.shuHaRi
    return agent
  }
  const easy = aPolicy({ shuHaRi: { progressionCriteria: { shuToHa: { minimumActionsCompleted: 50, minimumSuccessRate: 0.95, minimumDaysInLevel: 0 } } } })

  it('promotes at once an agent whose record since creation meets the criteria of a policy created afterwards', () => {
    const p = plan(unseen(metricsOf(60)), easy)
    expect(p.level).toBe('ha')
    expect(p.patch?.spec).toEqual({ shuHaRi: { level: 'ha', promotedAt: NOW }, autonomyLevel: 'supervised' })
    expect(kinds(p)).toEqual(['promoted'])
    expect(p.transitions[0]?.data).toMatchObject({ criteria: { actionsCompleted: 60, successRate: 1, daysInLevel: 273 } })
  })

  it('measures actions, success rate and days from the same moment: the agent\'s creation', () => {
    const p = plan(unseen(metricsOf(30, 2)), easy)
    expect(p.level).toBe('shu')
    expect(p.status?.shuHaRi).toMatchObject({ levelSince: '2025-06-01T00:00:00Z', levelStart: { invocations: 0, successes: 0, failures: 0 } })
    expect(p.status?.shuHaRi?.promotionProgress).toMatchObject({ actionsCompleted: 32, successRate: 0.9375, daysInLevel: 273 })
    expect(progression(p)).toMatchObject({ reason: 'CriteriaNotMet', message: 'For ha: actions 32/50, success rate 0.9375/0.95' })
  })

  it('rolls back on failures recorded before the first evaluation', () => {
    const agent = unseen(metricsOf(15, 5), {}, 'full')
    expect(rollbackDue(agent, ROLLBACK)).toBe(true)
    const p = plan(agent, ROLLBACK)
    expect(p.level).toBe('shu')
    expect(p.patch?.spec).toEqual({ shuHaRi: { level: 'shu', promotedAt: NOW }, autonomyLevel: 'restricted' })
    expect(kinds(p)).toEqual(['demoted'])
    expect(p.transitions[0]?.message).toContain('success rate 0.75 below 0.9 over 20 actions')
  })

  it('a level entered after creation, with no counters recorded for it, counts from now', () => {
    const p = plan(unseen(metricsOf(60), { level: 'shu', promotedAt: '2026-02-01T00:00:00.000Z' }), easy)
    expect(p.level).toBe('shu')
    expect(p.status?.shuHaRi).toMatchObject({ levelSince: '2026-02-01T00:00:00.000Z', levelStart: { invocations: 60, successes: 60, failures: 0 } })
  })
})

describe('what is not written', () => {
  it('leaves an agent that did not opt in untouched', () => {
    expect(planAutonomy(anAgent({ optedIn: false, metrics: metrics(1000) }), aPolicy(), NOW)).toBe(UNCHANGED)
  })

  it.each([
    ['a promotion', anAgent({ metrics: metrics(100) })],
    ['a demotion', anAgent({ level: 'ri', metrics: metrics(20, 5) })],
    ['waiting for criteria', anAgent({ metrics: metrics(5) })],
    ['an approval', anAgent({ metrics: metrics(100), annotation: 'ha' })],
    ['a first evaluation', (() => { const a = anAgent({ specLevel: null }); delete a.status!.shuHaRi; return a })()],
  ])('re-planning on its own output after %s writes nothing', (_, agent) => {
    const policy = ROLLBACK
    let current = agent
    for (let i = 0; i < 3; i++) {
      const p = planAutonomy(current, policy, NOW)
      if (p === UNCHANGED) return
      current = after(current, p)
    }
    expect(planAutonomy(current, policy, NOW)).toBe(UNCHANGED)
  })

  it('two evaluations of the same state plan the same', () => {
    const agent = anAgent({ metrics: metrics(100) })
    expect(planAutonomy(agent, aPolicy(), NOW)).toEqual(planAutonomy(agent, aPolicy(), NOW))
  })
})
