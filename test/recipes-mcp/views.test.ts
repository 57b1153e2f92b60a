// list/get/status structuredContent of the recipes MCP server (spec §14.3), without a server.
import { describe, expect, it } from 'vitest'
import { deletionOrder, matchesListFilters, recipeDetail, recipeStatusView, recipeSummary } from '../../shared/recipes-mcp/views.js'
import { WorkflowRecipeSchema, type WorkflowRecipe } from '../../shared/schemas/workflowrecipe.js'

const make = (annotations: Record<string, string> = {}, status?: WorkflowRecipe['status']): WorkflowRecipe => WorkflowRecipeSchema.parse({
  apiVersion: 'purko.io/v1alpha1', kind: 'WorkflowRecipe',
  metadata: { name: 'shop', namespace: 'team-a', generation: 3, creationTimestamp: '2026-03-01T10:00:00Z', annotations, labels: { app: 'shop' } },
  spec: {
    description: 'Shop', version: '2.0.0', profile: 'small',
    inputs: [{ name: 'replicas', type: 'integer', default: 2 }, { name: 'domain' }],
    profiles: [{ name: 'small' }, { name: 'large' }],
    workloads: [{ name: 'web', kind: 'Deployment', image: 'nginx:1' }],
  },
  ...(status ? { status } : {}),
})

describe('views', () => {
  it('a summary has every listed key, null where the recipe says nothing', () => {
    expect(recipeSummary(make())).toEqual({
      namespace: 'team-a', name: 'shop', template: false, deprecated: false, phase: null, reason: null, description: 'Shop', version: '2.0.0',
      profile: 'small', revision: null, currentRevision: null, readyWorkloads: null, mcpEndpoints: [], createdAt: '2026-03-01T10:00:00Z',
    })
    const active = make({ 'purko.io/template': 'true', 'purko.io/deprecate': 'true' }, {
      phase: 'Deprecated', reason: 'Deprecated', revision: 4, currentRevision: 3, readyWorkloads: '2/2', resolved: { profile: 'large' },
      mcpServers: [{ workload: 'web', url: 'http://x/mcp' }, { workload: 'db' }],
    })
    expect(recipeSummary(active)).toMatchObject({ template: true, deprecated: true, phase: 'Deprecated', profile: 'large', revision: 4, currentRevision: 3, mcpEndpoints: [{ workload: 'web', url: 'http://x/mcp' }] })
  })

  it('filters by kind and by phase (a recipe without a status yet counts as Candidate)', () => {
    const template = make({ 'purko.io/template': 'true' })
    const failed = make({}, { phase: 'Failed' })
    expect(matchesListFilters(template, { kind: 'templates' })).toBe(true)
    expect(matchesListFilters(template, { kind: 'instances' })).toBe(false)
    expect(matchesListFilters(failed, { kind: 'templates' })).toBe(false)
    expect(matchesListFilters(failed, { kind: 'all', phase: ['Failed', 'Active'] })).toBe(true)
    expect(matchesListFilters(make(), { kind: 'all', phase: ['Candidate'] })).toBe(true)
    expect(matchesListFilters(failed, { kind: 'all', phase: [] })).toBe(true)
  })

  it('a detail lists inputs as a caller fills them in, and the profile names', () => {
    expect(recipeDetail(make())).toMatchObject({
      namespace: 'team-a', name: 'shop', template: false, generation: 3, labels: { app: 'shop' }, phase: null, profiles: ['small', 'large'],
      inputs: [{ name: 'replicas', type: 'integer', required: false, default: 2 }, { name: 'domain', type: 'string', required: true }],
    })
  })

  it('a status view names the approve command only while approval is pending, and the latest history', () => {
    const history = [1, 2, 3].map((i) => ({ time: `2026-03-01T10:0${i}:00Z`, to: 'Candidate', reason: `r${i}` }))
    const pending = recipeStatusView(make({}, { phase: 'PendingApproval', approval: { required: true, state: 'Pending', generation: 3 }, history }), 2)
    expect(pending).toMatchObject({ phase: 'PendingApproval', approveCommand: 'kubectl annotate -n team-a workflowrecipe/shop purko.io/approve=3', history: [{ reason: 'r2' }, { reason: 'r3' }] })
    const active = recipeStatusView(make({}, { phase: 'Active', workflow: { name: 'wf', phase: 'Running' } }), 5)
    expect(active).not.toHaveProperty('approveCommand')
    expect(active).toMatchObject({ workflow: { name: 'wf' }, approval: null, policy: null, conditions: [], history: [] })
    expect(recipeStatusView(make(), 5)).not.toHaveProperty('workflow')
  })

  it('deletion order is the resolved order reversed', () => {
    expect(deletionOrder(make({}, { resolved: { order: ['db', 'cache', 'web'] } }))).toEqual(['web', 'cache', 'db'])
    expect(deletionOrder(make())).toEqual([])
  })
})
