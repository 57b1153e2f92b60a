import { describe, expect, it } from 'vitest'
import { ForbiddenError } from '../../../shared/core/errors.js'
import { workflowListPage } from '../../../shared/console/pages/workflows.js'
import { ANNOTATION_TEMPLATE, ANNOTATION_TRIGGER_SOURCE, ANNOTATION_TRIGGER_TYPE, ANNOTATION_WORKFLOW_TEMPLATE } from '../../../shared/schemas/labels.js'
import type { Workflow, WorkflowStatus } from '../../../shared/schemas/workflow.js'
import { EmbeddedKube } from '../../support/embedded-kube.js'
import { aChain, aStep } from '../../fixtures/workflows.js'
import { NOW, requestFor, rowsOf, textOf } from './support.js'

function run(name: string, opts: { namespace?: string; created: string; status?: WorkflowStatus; annotations?: Record<string, string>; steps?: number } = { created: '2026-12-01T11:00:00Z' }): Workflow {
  return {
    apiVersion: 'purko.io/v1alpha1', kind: 'Workflow',
    metadata: { name, namespace: opts.namespace ?? 'team-a', creationTimestamp: opts.created, ...(opts.annotations ? { annotations: opts.annotations } : {}) },
    spec: { steps: aChain(opts.steps ?? 3), parallelism: 1, failureStrategy: 'failFast' },
    ...(opts.status ? { status: opts.status } : {}),
  }
}

const minutesAgo = (m: number) => new Date(NOW.getTime() - m * 60_000).toISOString()

describe('the workflow run list', () => {
  it('shows each run with its phase, progress, start, duration, trigger and template, newest first', async () => {
    const kube = new EmbeddedKube({
      workflows: [
        run('nightly-1', {
          created: minutesAgo(90),
          annotations: { [ANNOTATION_WORKFLOW_TEMPLATE]: 'nightly', [ANNOTATION_TRIGGER_TYPE]: 'schedule', [ANNOTATION_TRIGGER_SOURCE]: '0 2 * * *' },
          status: { phase: 'Succeeded', totalSteps: 3, completedSteps: 3, startTime: minutesAgo(90), completionTime: minutesAgo(28) },
        }),
        run('build-7', { namespace: 'team-b', created: minutesAgo(3), status: { phase: 'Running', totalSteps: 3, completedSteps: 1, startTime: minutesAgo(3) } }),
        run('fresh', { created: minutesAgo(1) }),
      ],
    })
    const page = await workflowListPage(requestFor(kube))
    expect(page.status).toBe(200)
    expect(page.nav).toBe('workflows')
    const rows = rowsOf(page.body, 'Workflow runs')
    expect(rows.map((r) => r[0])).toEqual(['fresh', 'build-7', 'nightly-1'])
    expect(rows[2]).toEqual(['nightly-1', 'team-a', 'Succeeded', '3/3', '1 h ago', '1 h 2 min', 'schedule', 'nightly'])
    expect(rows[1]).toEqual(['build-7', 'team-b', 'Running', '1/3', '3 min ago', '3 min', '—', '—'])
    // Not started yet: no duration, and progress counts the spec's steps.
    expect(rows[0]!.slice(2, 6)).toEqual(['Pending', '0/3', '1 min ago', ''])
    expect(page.body.html).toContain('href="/workflows/team-a/nightly-1"')
    expect(page.body.html).toContain('href="/workflows/team-a/nightly"')
    expect(page.body.html).toContain('<span class="badge phase-Succeeded">Succeeded</span>')
    expect(page.body.html).toContain('<progress value="1" max="3" aria-label="1 of 3 steps done"></progress>')
    expect(page.body.html).toContain(`datetime="${minutesAgo(3)}"`)
    expect(page.body.html).toContain('title="2026-12-01 11:57:00 UTC"')
  })

  it('lists templates in their own section, not as runs', async () => {
    const kube = new EmbeddedKube({
      workflows: [
        { ...run('nightly', { created: minutesAgo(600) }), spec: { steps: [aStep('s1')], parallelism: 1, failureStrategy: 'failFast', trigger: { schedule: { cron: '0 2 * * *', timezone: 'Europe/Berlin' } } } },
        run('on-demand', { created: minutesAgo(500), annotations: { [ANNOTATION_TEMPLATE]: 'true' } }),
        run('nightly-1', { created: minutesAgo(60), annotations: { [ANNOTATION_WORKFLOW_TEMPLATE]: 'nightly' } }),
      ],
    })
    const page = await workflowListPage(requestFor(kube))
    expect(rowsOf(page.body, 'Workflow runs').map((r) => r[0])).toEqual(['nightly-1'])
    const templates = rowsOf(page.body, 'Workflow templates')
    expect(templates.map((r) => r.slice(0, 3))).toEqual([['nightly', 'team-a', '0 2 * * * (Europe/Berlin)'], ['on-demand', 'team-a', 'none']])
    const byPhase = await workflowListPage(requestFor(kube, '/workflows?phase=Pending'))
    expect(rowsOf(byPhase.body, 'Workflow runs').map((r) => r[0])).toEqual(['nightly-1'])
    expect(rowsOf(byPhase.body, 'Workflow templates')).toEqual([])
    const byTemplate = await workflowListPage(requestFor(kube, '/workflows?template=on-demand'))
    expect(rowsOf(byTemplate.body, 'Workflow templates').map((r) => r[0])).toEqual(['on-demand'])
  })

  it('says a run waits for approval, with the text and not only the colour', async () => {
    const kube = new EmbeddedKube({
      workflows: [run('needs-ok', {
        created: minutesAgo(5),
        status: { phase: 'Running', totalSteps: 3, completedSteps: 1, startTime: minutesAgo(5), stepStatuses: [{ name: 's1', phase: 'Succeeded' }, { name: 's2', phase: 'Pending', error: 'Waiting for human approval (set annotation purko.io/approve-s2=true)' }] },
      })],
    })
    const page = await workflowListPage(requestFor(kube))
    expect(page.body.html).toContain('<span class="badge phase-Waiting">Waiting (approval)</span>')
    expect(page.body.html).toContain('<option value="Waiting">Waiting</option>')
  })

  it('filters by namespace, phase and template with selects populated from the data, and keeps the choice', async () => {
    const kube = new EmbeddedKube({
      workflows: [
        run('a-ok', { created: minutesAgo(10), status: { phase: 'Succeeded' }, annotations: { [ANNOTATION_WORKFLOW_TEMPLATE]: 'nightly' } }),
        run('a-bad', { created: minutesAgo(9), status: { phase: 'Failed' }, annotations: { [ANNOTATION_WORKFLOW_TEMPLATE]: 'nightly' } }),
        run('b-bad', { namespace: 'team-b', created: minutesAgo(8), status: { phase: 'Failed' } }),
      ],
    })
    const page = await workflowListPage(requestFor(kube, '/workflows?namespace=team-a&phase=Failed'))
    expect(rowsOf(page.body, 'Workflow runs').map((r) => r[0])).toEqual(['a-bad'])
    const html = page.body.html
    expect(html).toContain('<form class="filters" method="get" action="/workflows"')
    expect(html).toMatch(/<label>Namespace<select name="namespace"><option value="">all namespaces<\/option><option value="team-a" selected>team-a<\/option><option value="team-b">team-b<\/option><\/select><\/label>/)
    expect(html).toContain('<option value="Failed" selected>Failed</option>')
    expect(html).toContain('<option value="nightly">nightly</option>')
    expect(html).toContain('<a href="/workflows">Clear filters</a>')

    const byTemplate = await workflowListPage(requestFor(kube, '/workflows?template=nightly'))
    expect(rowsOf(byTemplate.body, 'Workflow runs').map((r) => r[0])).toEqual(['a-bad', 'a-ok'])

    const none = await workflowListPage(requestFor(kube, '/workflows?phase=Cancelled'))
    expect(textOf(none.body)).toContain('No runs match these filters.')
  })

  it('pages 50 runs at a time: "showing 51–100 of 340", links keep the filters', async () => {
    const workflows = Array.from({ length: 340 }, (_, i) => run(`run-${String(i).padStart(3, '0')}`, { created: new Date(NOW.getTime() - (340 - i) * 1000).toISOString(), steps: 1 }))
    const kube = new EmbeddedKube({ workflows })
    const page = await workflowListPage(requestFor(kube, '/workflows?namespace=team-a&page=2'))
    const rows = rowsOf(page.body, 'Workflow runs')
    expect(rows).toHaveLength(50)
    // Newest first: run-339 is on page 1, page 2 starts 50 further down.
    expect(rows[0]![0]).toBe('run-289')
    expect(rows[49]![0]).toBe('run-240')
    const text = textOf(page.body)
    expect(text).toContain('showing 51–100 of 340 runs')
    expect(text).toContain('page 2 of 7')
    expect(page.body.html).toContain('<a href="/workflows?namespace=team-a" rel="prev">Previous page</a>')
    expect(page.body.html).toContain('<a href="/workflows?namespace=team-a&amp;page=3" rel="next">Next page</a>')

    const last = await workflowListPage(requestFor(kube, '/workflows?page=99'))
    expect(textOf(last.body)).toContain('showing 301–340 of 340 runs')
    expect(rowsOf(last.body, 'Workflow runs')).toHaveLength(40)
  })

  it('says so when there are no runs at all', async () => {
    const page = await workflowListPage(requestFor(new EmbeddedKube()))
    expect(textOf(page.body)).toContain('No workflow runs yet.')
    expect(page.body.html).not.toContain('aria-label="Workflow runs"')
  })

  it('reads the configured namespaces one by one when the list across namespaces is refused, and names those still refused', async () => {
    const kube = new EmbeddedKube({ workflows: [run('mine', { created: minutesAgo(2) }), run('theirs', { namespace: 'team-b', created: minutesAgo(1) })] })
    kube.failNext('listWorkflows', new ForbiddenError('workflows.purko.io is forbidden: User "alice" cannot list resource "workflows" in API group "purko.io" at the cluster scope'))
    const real = kube.listWorkflowsIn.bind(kube)
    kube.listWorkflowsIn = async (ns, labels) => {
      if (ns === 'team-b') throw new ForbiddenError(`User "alice" cannot list resource "workflows" in API group "purko.io" in the namespace "team-b"`)
      return real(ns, labels)
    }
    const page = await workflowListPage(requestFor(kube))
    expect(rowsOf(page.body, 'Workflow runs').map((r) => r[0])).toEqual(['mine'])
    expect(textOf(page.body)).toContain('You may not list Workflows across all namespaces; showing the configured namespaces you may read. You may not see Workflows in namespace team-b.')
  })

  it('passes a refusal in every configured namespace on as the ForbiddenError it is', async () => {
    const kube = new EmbeddedKube()
    kube.failNext('listWorkflows', new ForbiddenError('forbidden'))
    kube.listWorkflowsIn = async () => { throw new ForbiddenError('forbidden here too') }
    await expect(workflowListPage(requestFor(kube))).rejects.toBeInstanceOf(ForbiddenError)
  })

  it('escapes hostile names everywhere they appear', async () => {
    const kube = new EmbeddedKube({
      workflows: [run('evil', {
        created: minutesAgo(1),
        annotations: { [ANNOTATION_WORKFLOW_TEMPLATE]: '<script>alert(1)</script>', [ANNOTATION_TRIGGER_TYPE]: '<img src=x onerror=alert(2)>' },
      })],
    })
    const page = await workflowListPage(requestFor(kube))
    expect(page.body.html).not.toContain('<script>')
    expect(page.body.html).not.toContain('<img')
    expect(page.body.html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;')
    expect(page.body.html).toContain('href="/workflows/team-a/%3Cscript%3Ealert(1)%3C%2Fscript%3E"')
    // A hostile filter value from the address bar comes back as text too.
    const filtered = await workflowListPage(requestFor(kube, '/workflows?phase=%3Cscript%3E'))
    expect(filtered.body.html).not.toContain('<script>')
    expect(filtered.body.html).toContain('<option value="&lt;script&gt;" selected>&lt;script&gt;</option>')
  })
})
