import { describe, expect, it } from 'vitest'
import type { WorkflowRecipe, WorkflowRecipeStatus } from '../../shared/schemas/workflowrecipe.js'
import { recipeSpans, revisionSpanId, revisionTraceId, waveSpanId, workloadWaves } from '../../shared/telemetry/recipe-spans.js'

const UID = 'recipe-uid'
const NOW = '2026-01-01T00:05:00Z'
const spec = { workloads: [{ name: 'db' }, { name: 'web', dependsOn: ['db'] }] } as unknown as WorkflowRecipe['spec']
const recipe = (status: WorkflowRecipeStatus, s: WorkflowRecipe['spec'] = spec): WorkflowRecipe => ({
  apiVersion: 'purko.io/v1alpha1', kind: 'WorkflowRecipe', metadata: { name: 'shop', namespace: 'ai-agents', uid: UID }, spec: s, status,
})
const ms = (t: string) => Date.parse(t)
const deploying: WorkflowRecipeStatus = {
  revision: 1,
  revisions: [{ revision: 1, state: 'InProgress', createdAt: '2026-01-01T00:00:00Z' }],
  workloads: [{ name: 'db', kind: 'StatefulSet', phase: 'Progressing', since: '2026-01-01T00:00:10Z' }, { name: 'web', kind: 'Deployment', phase: 'Waiting', since: '2026-01-01T00:00:10Z' }],
  tests: [{ name: 'smoke', phase: 'Running', jobName: 'shop-test-smoke-r1', startTime: '2026-01-01T00:02:00Z' }],
}

describe('the spans of a recipe revision', () => {
  it('end a workload that became ready, and the wave it completes, below the revision deploy span', () => {
    const next: WorkflowRecipeStatus = { ...deploying, workloads: [{ name: 'db', kind: 'StatefulSet', phase: 'Ready', since: '2026-01-01T00:01:00Z' }, deploying.workloads![1]!] }
    expect(recipeSpans(recipe(deploying), next, NOW)).toEqual([
      expect.objectContaining({
        name: 'recipe workload db', traceId: revisionTraceId(UID, 1), parentSpanId: waveSpanId(UID, 1, 0),
        startMs: ms('2026-01-01T00:00:10Z'), endMs: ms('2026-01-01T00:01:00Z'),
        attributes: expect.objectContaining({ 'kinetic.workload.kind': 'StatefulSet', 'kinetic.workload.phase': 'Ready' }),
      }),
      // Wave 0 could start when the revision was created, and ended when db was Ready.
      expect.objectContaining({
        name: 'recipe wave 0', traceId: revisionTraceId(UID, 1), spanId: waveSpanId(UID, 1, 0), parentSpanId: revisionSpanId(UID, 1),
        startMs: ms('2026-01-01T00:00:00Z'), endMs: ms('2026-01-01T00:01:00Z'),
        attributes: expect.objectContaining({ 'kinetic.recipe.wave': 0, 'kinetic.recipe.wave.workloads': ['db'] }),
      }),
    ])
  })

  it('end a wave only when its last workload is final, from when its first could start, failed when one of them failed', () => {
    const three = { workloads: [{ name: 'db' }, { name: 'cache' }, { name: 'web', dependsOn: ['db', 'cache'] }] } as unknown as WorkflowRecipe['spec']
    const at = (s: number) => new Date(ms('2026-01-01T00:00:00Z') + s * 1000).toISOString()
    const w = (name: string, phase: string, since: number) => ({ name, phase, since: at(since) }) as NonNullable<WorkflowRecipeStatus['workloads']>[number]
    const status = (...workloads: NonNullable<WorkflowRecipeStatus['workloads']>): WorkflowRecipeStatus => ({ ...deploying, tests: [], workloads })
    const waveNames = (before: WorkflowRecipeStatus, next: WorkflowRecipeStatus) => recipeSpans(recipe(before, three), next, NOW).filter((s) => s.name.startsWith('recipe wave '))
    // db is Ready, cache still progressing: wave 0 is not over.
    const s1 = status(w('db', 'Progressing', 1), w('cache', 'Progressing', 1), w('web', 'Waiting', 1))
    const s2 = status(w('db', 'Ready', 20), w('cache', 'Progressing', 1), w('web', 'Waiting', 1))
    expect(waveNames(s1, s2)).toEqual([])
    const s3 = status(w('db', 'Ready', 20), w('cache', 'Ready', 30), w('web', 'Progressing', 30))
    expect(waveNames(s2, s3)).toEqual([expect.objectContaining({ name: 'recipe wave 0', startMs: ms(at(0)), endMs: ms(at(30)), attributes: expect.objectContaining({ 'kinetic.recipe.wave.workloads': ['db', 'cache'] }) })])
    expect(waveNames(s2, s3)[0]!.error).toBeUndefined()
    // web could start when its last dependency (cache) was Ready; it failed, so its wave did.
    const s4 = status(w('db', 'Ready', 20), w('cache', 'Ready', 30), w('web', 'Failed', 90))
    expect(waveNames(s3, s4)).toEqual([expect.objectContaining({ name: 'recipe wave 1', spanId: waveSpanId(UID, 1, 1), startMs: ms(at(30)), endMs: ms(at(90)), error: 'web Failed' })])
    // The same write again (a redelivery) ends nothing.
    expect(waveNames(s4, s4)).toEqual([])
  })

  it('put each workload in the wave of its depth in the dependency order, tolerating names it does not know', () => {
    const chain = { workloads: [{ name: 'c', dependsOn: ['b'] }, { name: 'b', dependsOn: ['a', 'gone'] }, { name: 'a' }, { name: 'solo' }] } as unknown as WorkflowRecipe['spec']
    expect(Object.fromEntries(workloadWaves(recipe(deploying, chain)))).toEqual({ a: 0, b: 1, c: 2, solo: 0 })
    expect(workloadWaves(recipe(deploying, {} as WorkflowRecipe['spec'])).size).toBe(0)
  })

  it('end a test and the revision deploy as its root when the revision reaches a final state', () => {
    const next: WorkflowRecipeStatus = {
      ...deploying,
      revisions: [{ revision: 1, state: 'Failed', createdAt: '2026-01-01T00:00:00Z', finishedAt: '2026-01-01T00:04:00Z', reason: 'TestFailed' }],
      tests: [{ name: 'smoke', phase: 'Failed', jobName: 'shop-test-smoke-r1', startTime: '2026-01-01T00:02:00Z', completionTime: '2026-01-01T00:03:00Z', message: 'exit 1' }],
    }
    const spans = recipeSpans(recipe(deploying), next, NOW)
    expect(spans.map((s) => [s.name, s.parentSpanId, s.error])).toEqual([
      ['recipe test smoke', revisionSpanId(UID, 1), 'exit 1'],
      ['recipe deploy shop r1', undefined, 'TestFailed'],
    ])
    expect(spans[1]).toMatchObject({ spanId: revisionSpanId(UID, 1), startMs: Date.parse('2026-01-01T00:00:00Z'), endMs: Date.parse('2026-01-01T00:04:00Z') })
  })

  it('end nothing when the status did not move (a redelivery)', () => {
    expect(recipeSpans(recipe(deploying), deploying, NOW)).toEqual([])
  })
})
