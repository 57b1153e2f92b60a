import { describe, expect, it } from 'vitest'
import { recipePage, recipesPage } from '../../../shared/console/pages/recipes.js'
import { ForbiddenError } from '../../../shared/core/errors.js'
import type { WorkflowRecipeStatus } from '../../../shared/schemas/workflowrecipe.js'
import { EmbeddedKube } from '../../support/embedded-kube.js'
import { recipe } from '../../recipe/lifecycle-fixtures.js'
import { requestFor, rowsOf, textOf } from './support.js'

const active: WorkflowRecipeStatus = {
  phase: 'Active', reason: 'AllReady', phaseTransitionTime: '2026-12-01T11:00:00Z', currentRevision: 3, lastGoodRevision: 3, revision: 3, readyWorkloads: '1/2',
  workloads: [
    { name: 'web', kind: 'Deployment', included: true, namespace: 'sandbox', objectName: 'team-a-shop-web-5101637e', phase: 'Ready', replicas: 2, readyReplicas: 2, since: '2026-12-01T11:00:00Z', message: '2/2 replicas available' },
    { name: 'worker', kind: 'Deployment', included: false, phase: 'Excluded' },
  ],
  policy: {
    compliant: false, evaluated: ['baseline', 'production'], totalViolations: 1,
    violations: [{ policy: 'production', mode: 'Audit', rule: 'images.requireDigest', workload: 'web', message: 'image "nginx:1.27" is not pinned by <digest>' }],
  },
  history: [
    { time: '2026-12-01T10:50:00Z', from: 'Candidate', to: 'Deploying', reason: 'Approved', revision: 3 },
    { time: '2026-12-01T11:00:00Z', from: 'Testing', to: 'Active', reason: 'AllReady', revision: 3 },
  ],
  conditions: [{ type: 'Available', status: 'True', reason: 'AllReady', message: 'revision 3 serves', lastTransitionTime: '2026-12-01T11:00:00Z' }],
}

describe('the recipes pages', () => {
  it('lists each recipe with its lifecycle phase, ready workloads, revision and policy compliance', async () => {
    const kube = new EmbeddedKube({
      recipes: [
        recipe({ status: active }),
        { ...recipe({ status: { phase: 'Rejected', reason: 'PolicyViolation', policy: { compliant: false, totalViolations: 2, violations: [] } } }), metadata: { name: 'blocked', namespace: 'team-b' } },
      ],
    })
    const page = await recipesPage(requestFor(kube, '/recipes'))
    expect(page.nav).toBe('recipes')
    expect(rowsOf(page.body, 'Recipes')).toEqual([
      ['shop', 'team-a', 'Active', '1/2', '3', '1 violation', '', '1 h ago'],
      ['blocked', 'team-b', 'Rejected', '', '', '2 violations', '', ''],
    ])
    expect(page.body.html).toContain('<span class="badge phase-Failed">Rejected</span>')
    expect(page.body.html).toContain('href="/recipes/team-a/shop"')
  })

  it('shows one recipe: workloads and their status, policy results per policy, history newest first', async () => {
    const kube = new EmbeddedKube({ recipes: [recipe({ status: active })] })
    const page = await recipePage(requestFor(kube, '/recipes/team-a/shop'), 'team-a', 'shop')
    expect(page.title).toBe('Recipe shop')
    expect(rowsOf(page.body, 'Workloads')).toEqual([
      ['web', 'Deployment', 'sandbox/team-a-shop-web-5101637e', 'Ready', '2/2', '1 h ago', '2/2 replicas available'],
      ['worker', 'Deployment', '', 'Excluded', '', '', ''],
    ])
    expect(rowsOf(page.body, 'Policy results')).toEqual([
      ['baseline', 'passed', ''],
      ['production', 'violated (Audit)', 'images.requireDigest Audit, workload web: image "nginx:1.27" is not pinned by <digest>'],
    ])
    expect(page.body.html).not.toContain('<digest>')
    expect(rowsOf(page.body, 'Lifecycle history').map((r) => r.slice(1, 4))).toEqual([['Testing', 'Active', 'AllReady'], ['Candidate', 'Deploying', 'Approved']])
    const text = textOf(page.body)
    expect(text).toContain('Revision running 3, last good 3, latest 3')
  })

  it('is a 404 page for a recipe that is not there, and falls back to the configured namespaces', async () => {
    const kube = new EmbeddedKube({ recipes: [recipe({ status: active })] })
    expect((await recipePage(requestFor(kube), 'team-a', 'gone')).status).toBe(404)
    kube.failNext('listAllRecipes', new ForbiddenError('cannot list resource "workflowrecipes"'))
    const page = await recipesPage(requestFor(kube, '/recipes', { config: { namespaces: ['team-a'] } }))
    expect(rowsOf(page.body, 'Recipes').map((r) => r[0])).toEqual(['shop'])
    expect(textOf(page.body)).toContain('You may not list WorkflowRecipes across all namespaces')
  })
})
