import { describe, expect, it } from 'vitest'
import type { WorkflowRecipe, WorkflowRecipeStatus } from '../../shared/schemas/workflowrecipe.js'
import { recipeSpans, revisionSpanId, revisionTraceId } from '../../shared/telemetry/recipe-spans.js'

const UID = 'recipe-uid'
const NOW = '2026-01-01T00:05:00Z'
const recipe = (status: WorkflowRecipeStatus): WorkflowRecipe => ({
  apiVersion: 'purko.io/v1alpha1', kind: 'WorkflowRecipe', metadata: { name: 'shop', namespace: 'ai-agents', uid: UID }, spec: {} as WorkflowRecipe['spec'], status,
})
const deploying: WorkflowRecipeStatus = {
  revision: 1,
  revisions: [{ revision: 1, state: 'InProgress', createdAt: '2026-01-01T00:00:00Z' }],
  workloads: [{ name: 'db', kind: 'StatefulSet', phase: 'Progressing', since: '2026-01-01T00:00:10Z' }, { name: 'web', kind: 'Deployment', phase: 'Waiting', since: '2026-01-01T00:00:10Z' }],
  tests: [{ name: 'smoke', phase: 'Running', jobName: 'shop-test-smoke-r1', startTime: '2026-01-01T00:02:00Z' }],
}

describe('the spans of a recipe revision', () => {
  it('end a workload that became ready below the revision deploy span', () => {
    const next: WorkflowRecipeStatus = { ...deploying, workloads: [{ name: 'db', kind: 'StatefulSet', phase: 'Ready', since: '2026-01-01T00:01:00Z' }, deploying.workloads![1]!] }
    expect(recipeSpans(recipe(deploying), next, NOW)).toEqual([expect.objectContaining({
      name: 'recipe workload db', traceId: revisionTraceId(UID, 1), parentSpanId: revisionSpanId(UID, 1),
      startMs: Date.parse('2026-01-01T00:00:10Z'), endMs: Date.parse('2026-01-01T00:01:00Z'),
      attributes: expect.objectContaining({ 'kinetic.workload.kind': 'StatefulSet', 'kinetic.workload.phase': 'Ready' }),
    })])
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
