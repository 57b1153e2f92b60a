import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { rollbackDue } from '../../shared/autonomy/plan/evaluate.js'
import { declaredLevel } from '../../shared/autonomy/plan/levels.js'
import { effectivePolicy, type EffectivePolicy } from '../../shared/autonomy/plan/policy.js'
import { applyAutonomy, demoteIfTriggered } from '../../shared/autonomy/controller.js'
import { ConflictError, TransientError } from '../../shared/core/errors.js'
import type { AgentPatch, Kube } from '../../shared/kube/port.js'
import type { Agent, ShuHaRiLevel } from '../../shared/schemas/agent.js'
import type { AgentAutonomyPolicySpec } from '../../shared/schemas/autonomypolicy.js'
import { EmbeddedKube } from '../support/embedded-kube.js'
import { autonomousAgent, policyOf } from '../fixtures/autonomy.js'
import { testDeps } from '../support/engine-deps.js'
import { propertyRuns } from '../support/property-runs.js'

/**
 * The system under test is the real autonomy writes (applyAutonomy, demoteIfTriggered) over the
 * embedded API server, driven by a random history: step results recorded the way the workflow engine
 * records them (fresh GET, guarded status write, then the immediate rollback path after a
 * failure), ticks (on time, duplicated concurrently, or late: planned on a snapshot taken
 * earlier, whose guarded writes then conflict), approvals (some repeated), hand edits of the
 * level, lost status writes and the clock moving on. Every level change the planner writes is
 * checked as it is written.
 */

const ORDER: ShuHaRiLevel[] = ['shu', 'ha', 'ri']
const DAY = 86_400_000

type Command =
  | { kind: 'result'; ok: boolean }
  | { kind: 'tick' }
  | { kind: 'duplicate-tick' }
  | { kind: 'snapshot' }
  | { kind: 'late-tick' }
  | { kind: 'approve'; level: ShuHaRiLevel; who: number }
  | { kind: 'edit'; level: ShuHaRiLevel }
  | { kind: 'lose-status-write' }
  | { kind: 'wait'; hours: number }

const level = fc.constantFrom<ShuHaRiLevel>('shu', 'ha', 'ri')
const command: fc.Arbitrary<Command> = fc.oneof(
  { weight: 8, arbitrary: fc.record({ kind: fc.constant('result' as const), ok: fc.boolean() }) },
  { weight: 4, arbitrary: fc.constant({ kind: 'tick' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'duplicate-tick' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'snapshot' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'late-tick' as const }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('approve' as const), level, who: fc.integer({ min: 0, max: 3 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('edit' as const), level }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'lose-status-write' as const }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('wait' as const), hours: fc.integer({ min: 1, max: 60 }) }) },
)

const policySpec: fc.Arbitrary<Partial<AgentAutonomyPolicySpec>> = fc.record({
  shuHaRi: fc.record({
    progressionCriteria: fc.record({
      shuToHa: fc.record({
        minimumActionsCompleted: fc.integer({ min: 1, max: 4 }), minimumSuccessRate: fc.constantFrom(0, 0.5, 0.8),
        minimumDaysInLevel: fc.integer({ min: 0, max: 2 }), incidentFreeStreak: fc.integer({ min: 0, max: 2 }), requiredApprovals: fc.integer({ min: 0, max: 2 }),
      }),
      haToRi: fc.record({
        minimumActionsCompleted: fc.integer({ min: 1, max: 6 }), minimumSuccessRate: fc.constantFrom(0, 0.5, 0.8),
        minimumDaysInLevel: fc.integer({ min: 0, max: 3 }), incidentFreeStreak: fc.integer({ min: 0, max: 3 }), requiredApprovals: fc.integer({ min: 0, max: 2 }),
      }),
    }),
  }),
  rollback: fc.record({
    enabled: fc.boolean(),
    triggerConditions: fc.record({ successRateBelow: fc.constantFrom(0.3, 0.6), consecutiveFailures: fc.integer({ min: 1, max: 3 }) }),
    rollbackLevel: fc.constantFrom('shu' as const, 'ha' as const),
  }),
})

/** One random history, and everything the checks learned along the way. */
async function run(spec: Partial<AgentAutonomyPolicySpec>, commands: Command[]): Promise<void> {
  const clock = { now: new Date('2026-01-01T00:00:00Z') }
  const cluster = new EmbeddedKube({ policies: [policyOf('default', 'team', spec)], agents: [autonomousAgent('a', { settled: false })] })
  const policy: EffectivePolicy = effectivePolicy(cluster.policies.get('team/default')!)
  const stored = () => cluster.agents.get('team/a')!
  // When the agent entered its level, as the checks see it: the declared promotedAt until the first
  // evaluation, the time of a planner's level or clock patch, or the time a hand edit was adopted in status.
  let enteredAt = Date.parse(stored().spec.shuHaRi!.promotedAt!)
  // A planner's level patch whose status write is still to come (it may be lost and adopted later).
  let unmirrored = false
  let faultsQueued = 0
  const promotions: Record<ShuHaRiLevel, number> = { shu: 0, ha: 0, ri: 0 }
  const approvals: Record<ShuHaRiLevel, Set<string>> = { shu: new Set(), ha: new Set(), ri: new Set() }

  // Every level the planner writes is checked at the moment it is written.
  const kube: Kube = new Proxy(cluster, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver)
      if (prop === 'replaceAgentStatus') {
        return async (...args: Parameters<Kube['replaceAgentStatus']>) => {
          const before = stored().status?.shuHaRi?.currentLevel
          try {
            const written = await target.replaceAgentStatus(...args)
            const now = written.status?.shuHaRi?.currentLevel
            if (now && before && now !== before) {
              if (!unmirrored) enteredAt = clock.now.getTime() // a hand edit, adopted now
              unmirrored = false
            }
            return written
          } catch (err) {
            if (err instanceof TransientError) faultsQueued--
            throw err
          }
        }
      }
      if (prop !== 'patchAgent') return typeof value === 'function' ? value.bind(target) : value
      return async (namespace: string, name: string, rv: string, patch: AgentPatch) => {
        const from = declaredLevel(stored())
        const result = await target.patchAgent(namespace, name, rv, patch)
        const to = patch.spec?.shuHaRi?.level as ShuHaRiLevel | undefined
        if (to && to !== from) {
          if (ORDER.indexOf(to) > ORDER.indexOf(from)) {
            const criteria = from === 'shu' ? policy.shuToHa : policy.haToRi
            expect(ORDER.indexOf(to), `promotion ${from} -> ${to} skips a level`).toBe(ORDER.indexOf(from) + 1)
            expect(clock.now.getTime() - enteredAt, `promoted to ${to} within minimumDaysInLevel`).toBeGreaterThanOrEqual(criteria.minimumDaysInLevel * DAY)
            if (criteria.requiredApprovals > 0) promotions[to]++
          } else {
            expect(policy.rollback.enabled, 'demoted with rollback disabled').toBe(true)
            expect(to, 'demoted elsewhere than rollbackLevel').toBe(policy.rollback.rollbackLevel)
          }
          enteredAt = clock.now.getTime()
          unmirrored = true
        } else if (patch.spec?.shuHaRi?.promotedAt) {
          // The adoption of a hand edit, whose clock starts with this patch (its status may be lost).
          enteredAt = clock.now.getTime()
          unmirrored = true
        }
        return result
      }
    },
  })
  const deps = testDeps(kube, clock)
  const evaluate = (agent: Agent) => applyAutonomy(deps, agent, policy).catch((err: unknown) => {
    if (!(err instanceof ConflictError) && !(err instanceof TransientError)) throw err
  })
  let snapshot: Agent | undefined

  for (const c of commands) {
    switch (c.kind) {
      case 'result': {
        // As the workflow engine records a step attempt: fresh GET, guarded write, retried.
        for (let i = 0; i < 5; i++) {
          const agent = stored()
          const m = { ...(agent.status?.metrics ?? {}) }
          m.totalInvocations = (m.totalInvocations ?? 0) + 1
          if (c.ok) { m.successCount = (m.successCount ?? 0) + 1; m.consecutiveSuccesses = (m.consecutiveSuccesses ?? 0) + 1; m.consecutiveFailures = 0 }
          else { m.failureCount = (m.failureCount ?? 0) + 1; m.consecutiveFailures = (m.consecutiveFailures ?? 0) + 1; m.consecutiveSuccesses = 0 }
          try {
            const written = await kube.replaceAgentStatus('team', 'a', agent.metadata.resourceVersion!, { ...(agent.status ?? {}), metrics: m })
            if (!c.ok) {
              const due = rollbackDue(written, policy) && ORDER.indexOf(declaredLevel(written)) > ORDER.indexOf(policy.rollback.rollbackLevel)
              const clean = faultsQueued === 0
              await demoteIfTriggered(deps, written)
              // Demotion does not wait for the tick.
              if (due && clean) expect(declaredLevel(stored()), 'the immediate path did not demote').toBe(policy.rollback.rollbackLevel)
            }
            break
          } catch (err) {
            if (!(err instanceof ConflictError) && !(err instanceof TransientError)) throw err
          }
        }
        break
      }
      case 'tick': {
        const before = stored()
        const due = before.status?.shuHaRi?.currentLevel === declaredLevel(before) && rollbackDue(before, policy)
        const clean = faultsQueued === 0
        await evaluate(before)
        // Demotion always wins over promotion.
        if (due && clean) expect(declaredLevel(stored()), 'a due rollback lost to something else').toBe(policy.rollback.rollbackLevel)
        break
      }
      case 'duplicate-tick': {
        const agent = stored()
        await Promise.all([evaluate(agent), evaluate(structuredClone(agent))])
        break
      }
      case 'snapshot':
        snapshot = structuredClone(stored())
        break
      case 'late-tick':
        if (snapshot) await evaluate(snapshot)
        break
      case 'approve': {
        // `kubectl annotate`: the value names a level and who approved; the same person twice is one approval.
        const value = `${c.level} by person-${c.who}`
        const agent = cluster.agents.get('team/a')!
        agent.metadata.annotations = { ...(agent.metadata.annotations ?? {}), 'purko.io/approve-promotion': value }
        agent.metadata.resourceVersion = `${agent.metadata.resourceVersion}-annotated`
        approvals[c.level].add(value)
        break
      }
      case 'edit':
        await cluster.patchAgent('team', 'a', stored().metadata.resourceVersion!, { spec: { shuHaRi: { level: c.level } } })
        break
      case 'lose-status-write':
        cluster.failNext('replaceAgentStatus', new TransientError('connection reset'))
        faultsQueued++
        break
      case 'wait':
        clock.now = new Date(clock.now.getTime() + c.hours * 3_600_000)
        break
    }
  }
  // One approval never promotes twice: promotions that needed N approvals used N distinct ones each.
  for (const l of ['ha', 'ri'] as const) {
    const n = l === 'ha' ? policy.shuToHa.requiredApprovals : policy.haToRi.requiredApprovals
    if (n > 0) expect(promotions[l] * n, `promotions to ${l} x ${n} approvals`).toBeLessThanOrEqual(approvals[l].size)
  }
  // And a quiet agent converges: once settled (a pending lost write may cost one more), a tick writes nothing.
  // Each evaluation that writes uses up at most one queued lost write.
  for (let i = faultsQueued + 1; i > 0; i--) await evaluate(stored())
  const writes = cluster.writes.length
  await evaluate(stored())
  expect(cluster.writes.length).toBe(writes)
}

describe('Shu-Ha-Ri under random histories (fast-check)', () => {
  it('moves one level at a time, never within minimumDaysInLevel, demotes before anything else, and never promotes twice for one approval', async () => {
    // A history where the promotion criteria and a rollback trigger hold at once, always tried first.
    const easy = { minimumActionsCompleted: 1, minimumSuccessRate: 0, minimumDaysInLevel: 0, incidentFreeStreak: 0, requiredApprovals: 0 }
    const bothAtOnce: [Partial<AgentAutonomyPolicySpec>, Command[]] = [
      { shuHaRi: { progressionCriteria: { shuToHa: easy, haToRi: easy } }, rollback: { enabled: true, triggerConditions: { successRateBelow: 0.3, consecutiveFailures: 1 }, rollbackLevel: 'shu' } },
      [{ kind: 'edit', level: 'ha' }, { kind: 'tick' }, { kind: 'result', ok: false }, { kind: 'result', ok: false }, { kind: 'tick' }],
    ]
    // A promotion whose status write is lost, then a hand edit back to the old level: the level
    // was re-entered then, so its minimumDaysInLevel counts from there (found by this property).
    const bounced: [Partial<AgentAutonomyPolicySpec>, Command[]] = [
      { shuHaRi: { progressionCriteria: { shuToHa: { ...easy, minimumDaysInLevel: 1 }, haToRi: easy } }, rollback: { enabled: false, triggerConditions: { successRateBelow: 0.3, consecutiveFailures: 1 }, rollbackLevel: 'shu' } },
      [{ kind: 'tick' }, { kind: 'wait', hours: 24 }, { kind: 'result', ok: false }, { kind: 'lose-status-write' }, { kind: 'tick' },
        { kind: 'result', ok: false }, { kind: 'result', ok: false }, { kind: 'edit', level: 'shu' }, { kind: 'wait', hours: 1 }, { kind: 'tick' }],
    ]
    await fc.assert(fc.asyncProperty(policySpec, fc.array(command, { minLength: 5, maxLength: 80 }), run), { numRuns: propertyRuns(600), examples: [bothAtOnce, bounced] })
  }, 120_000)
})
