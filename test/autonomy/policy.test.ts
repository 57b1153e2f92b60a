import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { choosePolicy, effectivePolicy, planPolicyStatus, policyProblems } from '../../shared/autonomy/plan/policy.js'
import type { AgentAutonomyPolicy, AgentAutonomyPolicySpec } from '../../shared/schemas/autonomypolicy.js'

const NOW = '2026-03-01T00:00:00.000Z'

function aPolicy(name: string, spec: Partial<AgentAutonomyPolicySpec> = {}, meta: Partial<AgentAutonomyPolicy['metadata']> = {}): AgentAutonomyPolicy {
  return {
    apiVersion: 'purko.io/v1alpha1', kind: 'AgentAutonomyPolicy',
    metadata: { name, namespace: 'team', generation: 2, creationTimestamp: '2026-01-01T00:00:00Z', ...meta },
    spec: { shuHaRi: { progressionCriteria: {} }, ...spec },
  }
}

describe('which policy applies to a namespace', () => {
  it.each([
    ['none', [], undefined],
    ['the only one', [aPolicy('strict')], 'strict'],
    ['the one named default, even when younger', [aPolicy('old', {}, { creationTimestamp: '2025-01-01T00:00:00Z' }), aPolicy('default')], 'default'],
    ['else the oldest', [aPolicy('young', {}, { creationTimestamp: '2026-02-01T00:00:00Z' }), aPolicy('old', {}, { creationTimestamp: '2025-01-01T00:00:00Z' })], 'old'],
    ['else, created in the same second, the first by name', [aPolicy('b'), aPolicy('a')], 'a'],
    ['not one being deleted', [aPolicy('default', {}, { deletionTimestamp: NOW }), aPolicy('other')], 'other'],
  ])('%s', (_, policies, chosen) => {
    expect(choosePolicy(policies)?.metadata.name).toBe(chosen)
  })
})

describe('criteria', () => {
  it("fills omitted fields with purko's defaults (config/autonomy-policy.yaml)", () => {
    expect(effectivePolicy(aPolicy('default'))).toEqual({
      name: 'default',
      shuToHa: { minimumActionsCompleted: 100, minimumSuccessRate: 0.95, minimumDaysInLevel: 14, incidentFreeStreak: 0, requiredApprovals: 0 },
      haToRi: { minimumActionsCompleted: 500, minimumSuccessRate: 0.99, minimumDaysInLevel: 30, incidentFreeStreak: 20, requiredApprovals: 0 },
      rollback: { enabled: false, successRateBelow: 0.9, consecutiveFailures: 3, rollbackLevel: 'shu' },
    })
  })

  it('keeps what the policy says, field by field', () => {
    const p = effectivePolicy(aPolicy('default', {
      shuHaRi: { progressionCriteria: { shuToHa: { minimumActionsCompleted: 50, requiredApprovals: 10 } } },
      rollback: { enabled: true, triggerConditions: { successRateBelow: 0.85 }, rollbackLevel: 'ha' },
    }))
    expect(p.shuToHa).toEqual({ minimumActionsCompleted: 50, minimumSuccessRate: 0.95, minimumDaysInLevel: 14, incidentFreeStreak: 0, requiredApprovals: 10 })
    expect(p.rollback).toEqual({ enabled: true, successRateBelow: 0.85, consecutiveFailures: 3, rollbackLevel: 'ha' })
  })

  it.each([
    ['ha -> ri needs fewer actions than shu -> ha', { shuHaRi: { progressionCriteria: { shuToHa: { minimumActionsCompleted: 600 } } } }, 'haToRi.minimumActionsCompleted 500 is easier than shuToHa.minimumActionsCompleted 600'],
    ['ha -> ri accepts a lower success rate', { shuHaRi: { progressionCriteria: { haToRi: { minimumSuccessRate: 0.9 } } } }, 'haToRi.minimumSuccessRate 0.9 is easier than shuToHa.minimumSuccessRate 0.95'],
    ['ha -> ri needs fewer days', { shuHaRi: { progressionCriteria: { haToRi: { minimumDaysInLevel: 7 } } } }, 'haToRi.minimumDaysInLevel 7 is easier'],
    ['ha -> ri needs fewer approvals', { shuHaRi: { progressionCriteria: { shuToHa: { requiredApprovals: 2 } } } }, 'haToRi.requiredApprovals 0 is easier than shuToHa.requiredApprovals 2'],
    ['success rate 0 with rollback below 0.9', { shuHaRi: { progressionCriteria: { shuToHa: { minimumSuccessRate: 0 } } }, rollback: { enabled: true } }, 'rollback successRateBelow 0.9 is not below shuToHa.minimumSuccessRate 0'],
  ] as const)('flags a policy where %s', (_, spec, problem) => {
    expect(policyProblems(effectivePolicy(aPolicy('default', spec as Partial<AgentAutonomyPolicySpec>))).join('; ')).toContain(problem)
  })

  it("finds nothing wrong with purko's defaults, with or without rollback", () => {
    expect(policyProblems(effectivePolicy(aPolicy('default')))).toEqual([])
    expect(policyProblems(effectivePolicy(aPolicy('default', { rollback: { enabled: true } })))).toEqual([])
  })
})

describe('policy status', () => {
  it('marks the chosen policy Ready/Applied with its generation and the agents it evaluated', () => {
    const status = planPolicyStatus(aPolicy('default'), { chosen: 'default', agentsEvaluated: 3 }, NOW)
    expect(status).toMatchObject({ observedGeneration: 2, agentsEvaluated: 3 })
    expect(status?.conditions).toEqual([expect.objectContaining({ type: 'Ready', status: 'True', reason: 'Applied', lastTransitionTime: NOW, observedGeneration: 2 })])
  })

  it('marks another policy of the namespace Ready=False NotSelected, naming the chosen one', () => {
    const status = planPolicyStatus(aPolicy('strict'), { chosen: 'default', agentsEvaluated: 3 }, NOW)
    expect(status?.agentsEvaluated).toBe(0)
    expect(status?.conditions?.[0]).toMatchObject({ type: 'Ready', status: 'False', reason: 'NotSelected', message: expect.stringContaining('uses policy default') })
  })

  it('applies an inconsistent policy but adds Warning=True InconsistentCriteria, and drops it once fixed', () => {
    const bad = aPolicy('default', { shuHaRi: { progressionCriteria: { haToRi: { minimumActionsCompleted: 10 } } } })
    const status = planPolicyStatus(bad, { chosen: 'default', agentsEvaluated: 1 }, NOW)!
    expect(status.conditions?.map((c) => [c.type, c.status, c.reason])).toEqual([['Ready', 'True', 'Applied'], ['Warning', 'True', 'InconsistentCriteria']])
    const fixed = { ...aPolicy('default', {}, { generation: 3 }), status }
    expect(planPolicyStatus(fixed, { chosen: 'default', agentsEvaluated: 1 }, NOW)?.conditions?.map((c) => c.type)).toEqual(['Ready'])
  })

  it('plans no write when the status already says it all', () => {
    const policy = aPolicy('default')
    const status = planPolicyStatus(policy, { chosen: 'default', agentsEvaluated: 3 }, NOW)!
    expect(planPolicyStatus({ ...policy, status }, { chosen: 'default', agentsEvaluated: 3 }, '2026-03-01T00:05:00.000Z')).toBeNull()
    expect(planPolicyStatus({ ...policy, status }, { chosen: 'default', agentsEvaluated: 4 }, NOW)?.agentsEvaluated).toBe(4)
  })
})

describe('the autonomy core is pure', () => {
  const dir = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'shared', 'autonomy')
  it.each(readdirSync(dir).filter((f) => f.endsWith('.ts')))('shared/autonomy/%s does no I/O and reads no clock or randomness', (file) => {
    const source = readFileSync(join(dir, file), 'utf8')
    expect(source).not.toMatch(/from '(node:|hono)|Date\.now\(|new Date\(\)|Math\.random|process\.env/)
    expect(source).not.toMatch(/^import (?!type)[^\n]*from '@kubernetes\/client-node'/m)
  })
})
