// Properties of the lifecycle planner (spec §7.1 "re-planning any state without new facts
// changes nothing", spec §7.2 edge/level-triggered annotations): over any sequence of spec changes,
// annotations, facts and clock moves, planning twice equals planning once, a duplicated event is
// harmless, and the bookkeeping stays within the spec §9 bounds.
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { planLifecycle } from '../../shared/recipe/plan/lifecycle/plan.js'
import type { LifecycleFacts, WorkloadFact } from '../../shared/recipe/plan/lifecycle-facts.js'
import { RECIPE_PHASES, type WorkflowRecipe } from '../../shared/schemas/workflowrecipe.js'
import { applied, at, compliant, DIGEST_A, DIGEST_B, needsApproval, recipe, rejecting, web, WEB } from './lifecycle-fixtures.js'

const workload = fc.constantFrom<WorkloadFact>(
  web(true), web(true), web(true), web(false), web(false, { missing: true }), web(false, { failed: { reason: 'JobFailed', message: 'BackoffLimitExceeded' } }),
  web(false, { failed: { reason: 'ApplyFailed', message: 'forbidden' } }),
)

const factsArb: fc.Arbitrary<LifecycleFacts> = fc.record({
  render: fc.constantFrom<LifecycleFacts['render']>(
    { ok: true, digest: DIGEST_A, resolved: { profile: '', inputs: {}, computed: {}, included: ['web'], excluded: [], order: ['web'] } },
    { ok: true, digest: DIGEST_A, resolved: { profile: '', inputs: {}, computed: {}, included: ['web'], excluded: [], order: ['web'] } },
    { ok: true, digest: DIGEST_B, resolved: { profile: '', inputs: {}, computed: {}, included: ['web'], excluded: [], order: ['web'] } },
    { ok: false, errors: [{ reason: 'InputMissing', message: 'input "db" has no value: give it a default, a profile value or a value in spec.values' }] },
  ),
  policy: fc.constantFrom(compliant, compliant, compliant, compliant, needsApproval(), needsApproval(120), rejecting, 'unavailable' as const),
  prerequisites: fc.constantFrom([], [], [], [{ reason: 'SecretMissing' as const, message: 'Secret "db" not found in namespace "team-a"' }]),
  readiness: fc.option(fc.record({ revision: fc.integer({ min: 1, max: 3 }), applied: fc.constantFrom(true, true, false), pruned: fc.constantFrom(true, true, false), workloads: fc.array(workload, { minLength: 1, maxLength: 1 }) }), { nil: undefined }),
  tests: fc.option(fc.record({
    revision: fc.integer({ min: 1, max: 4 }),
    results: fc.constantFrom(
      [{ name: 'smoke', jobName: 'j', phase: 'Succeeded' as const, startTime: at(0) }],
      [{ name: 'smoke', jobName: 'j', phase: 'Failed' as const, startTime: at(0), message: 'exit 1' }],
      [{ name: 'smoke', jobName: 'j', phase: 'Running' as const, startTime: at(0) }],
    ),
  }), { nil: undefined }),
  snapshots: fc.constantFrom([1, 2, 3], [1, 2, 3], [], [2, 3]),
}, { requiredKeys: ['render', 'policy', 'prerequisites', 'snapshots'] })

const annotationsArb = fc.oneof({ arbitrary: fc.constant({}), weight: 2 }, { arbitrary: fc.dictionary(
  fc.constantFrom('purko.io/approve', 'purko.io/reject', 'purko.io/retry', 'purko.io/rollback', 'purko.io/deprecate', 'purko.io/approved-by'),
  fc.constantFrom('1', '2', '3', 'true', 'x', 'alice'),
  { maxKeys: 2 },
), weight: 1 })

/** One event: maybe a spec change, the annotations now on the recipe, the facts read, the clock. */
const eventArb = fc.record({ bump: fc.constantFrom(false, false, false, true), annotations: annotationsArb, facts: factsArb, dt: fc.integer({ min: 0, max: 700 }), duplicate: fc.boolean(), pick: fc.nat({ max: 3 }) })

/**
 * Facts about the revisions the recipe actually has (the deployed, current, last good or
 * requested one), as a shell would read them, so deep states (RollingBack, Recovered) are reached.
 */
function grounded(r: WorkflowRecipe, e: Event): LifecycleFacts {
  const st = r.status ?? {}
  const candidates = [st.revision ?? 0, st.currentRevision ?? 0, st.lastGoodRevision ?? 0, Number(st.observedRollback ?? 0) || 0]
  const revision = candidates[e.pick] || 1
  return {
    ...e.facts,
    ...(e.facts.readiness ? { readiness: { ...e.facts.readiness, revision } } : {}),
    ...(e.facts.tests ? { tests: { ...e.facts.tests, revision: st.revision ?? 1 } } : {}),
  }
}

const specArb = fc.constantFrom<Record<string, unknown>>(
  { workloads: [WEB] },
  { workloads: [WEB], tests: [{ name: 'smoke', image: 'curl:8', timeoutSeconds: 30 }] },
  { workloads: [WEB], rollback: { automatic: false }, requireApproval: true },
  { workloads: [WEB], revisionHistoryLimit: 1 },
)

type Event = { bump: boolean; annotations: Record<string, string>; facts: LifecycleFacts; dt: number; duplicate: boolean; pick: number }

function drive(start: WorkflowRecipe, events: Event[], duplicates: boolean): WorkflowRecipe {
  let r = start
  let t = 0
  for (const e of events) {
    t += e.dt
    r = { ...r, metadata: { ...r.metadata, generation: (r.metadata.generation ?? 1) + (e.bump ? 1 : 0), annotations: e.annotations } }
    const f = grounded(r, e)
    const times = duplicates && e.duplicate ? 2 : 1
    for (let i = 0; i < times; i++) r = applied(r, planLifecycle(r, f, at(t)))
  }
  return r
}

describe('lifecycle properties', () => {
  it('planning twice equals planning once: over any history, re-planning the same facts changes nothing (echo-safe)', () => {
    fc.assert(fc.property(specArb, fc.array(eventArb, { minLength: 1, maxLength: 24 }), (spec, events) => {
      let r = recipe({ spec, finalizers: [] })
      let t = 0
      for (const e of events) {
        t += e.dt
        r = { ...r, metadata: { ...r.metadata, generation: (r.metadata.generation ?? 1) + (e.bump ? 1 : 0), annotations: e.annotations } }
        const f = grounded(r, e)
        const plan = planLifecycle(r, f, at(t))
        expect(planLifecycle(r, f, at(t))).toEqual(plan) // deterministic
        r = applied(r, plan)
        const echo = planLifecycle(r, f, at(t))
        expect(echo.transitions).toEqual([])
        expect(echo.changed).toBe(false)
        expect(echo.action).toEqual(plan.action)
        expect(echo.status).toEqual(plan.status)
        // spec §9 bounds and the phase enum
        expect(RECIPE_PHASES).toContain(plan.status.phase)
        expect((plan.status.history ?? []).length).toBeLessThanOrEqual(20)
        expect((plan.status.revisions ?? []).length).toBeLessThanOrEqual(20)
        const numbers = (plan.status.revisions ?? []).map((x) => x.revision)
        expect([...numbers].sort((a, b) => a - b)).toEqual(numbers)
        expect(new Set(numbers).size).toBe(numbers.length)
        expect(plan.transitions.filter((x) => x.kind === 'phase.changed').length).toBeLessThanOrEqual(16)
      }
    }), { numRuns: 300 })
  })

  it('a duplicated event (redelivery) reaches the same status as a single one', () => {
    fc.assert(fc.property(specArb, fc.array(eventArb, { minLength: 1, maxLength: 10 }), (spec, events) => {
      const start = recipe({ spec, finalizers: [] })
      expect(drive(start, events, true).status).toEqual(drive(start, events, false).status)
    }), { numRuns: 200 })
  })

  it('templates never get a revision, a finalizer or a deploy action, whatever happens', () => {
    fc.assert(fc.property(fc.array(eventArb, { minLength: 1, maxLength: 8 }), (events) => {
      let r = recipe({ finalizers: [] })
      let t = 0
      for (const e of events) {
        t += e.dt
        r = { ...r, metadata: { ...r.metadata, generation: (r.metadata.generation ?? 1) + (e.bump ? 1 : 0), annotations: { ...e.annotations, 'purko.io/template': 'true' } } }
        const plan = planLifecycle(r, e.facts, at(t))
        expect(plan.addFinalizer).toBe(false)
        expect(plan.action).toEqual({ type: 'none' })
        expect(plan.writeSnapshot).toBeUndefined()
        expect(plan.status.revision ?? 0).toBe(0)
        r = applied(r, plan)
      }
    }), { numRuns: 100 })
  })
})
