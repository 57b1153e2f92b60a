/**
 * GET /workflows: every run the person may see, newest first, 50 a page, filtered by namespace,
 * phase and template; the templates (Workflows that are not runs) in a section of their own.
 */
import { decodeStepStates } from '../../workflow/plan/step-states.js'
import { ANNOTATION_TRIGGER_SOURCE, ANNOTATION_TRIGGER_TYPE } from '../../schemas/labels.js'
import type { Workflow } from '../../schemas/workflow.js'
import { isTemplate, templateOf } from '../../template/run-builder.js'
import type { ConsoleRequest, PageResult } from '../context.js'
import { html, join, type Html } from '../html.js'
import { elapsedText, timeTag } from '../time.js'
import {
  distinct, filterForm, listVisible, objectLink, pager, pageWindow, phaseBadge, scrollTable, visibilityNote,
} from './common.js'

/** Runs shown on one page. */
export const RUNS_PER_PAGE = 50

// What the planner writes into a step waiting for a person (shared/workflow/plan/approvals.ts).
const APPROVAL_WAIT = 'Waiting for human approval'

/** Pure: the phase a person reads for a run: "Waiting" while a step waits for approval, else status.phase (Pending when unset). */
export function shownPhase(wf: Workflow): string {
  const phase = wf.status?.phase ?? 'Pending'
  if (phase !== 'Pending' && phase !== 'Running') return phase
  for (const state of decodeStepStates(wf).values()) {
    if (state.phase === 'Pending' && state.error?.startsWith(APPROVAL_WAIT)) return 'Waiting'
  }
  return phase
}

/** Pure: steps done (succeeded or skipped) and the total, from status or, failing that, the step states. */
export function progressOf(wf: Workflow): { done: number; total: number } {
  const total = wf.status?.totalSteps ?? wf.spec.steps.length
  if (wf.status?.completedSteps !== undefined) return { done: wf.status.completedSteps, total }
  let done = 0
  for (const state of decodeStepStates(wf).values()) if (state.phase === 'Succeeded' || state.phase === 'Skipped') done++
  return { done, total }
}

/** Pure: what started a run (`schedule`, `webhook`, `manual`, …) and its source, from the trigger annotations. */
export function triggerOf(wf: Workflow): { type?: string; source?: string } {
  const annotations = wf.metadata.annotations ?? {}
  const type = annotations[ANNOTATION_TRIGGER_TYPE]
  const source = annotations[ANNOTATION_TRIGGER_SOURCE]
  return { ...(type ? { type } : {}), ...(source ? { source } : {}) }
}

function createdAt(wf: Workflow): number {
  const t = Date.parse(wf.metadata.creationTimestamp ?? wf.status?.startTime ?? '')
  return Number.isNaN(t) ? 0 : t
}

/** Pure: newest first (creationTimestamp), then by namespace and name so the order is stable. */
export function newestFirst(a: Workflow, b: Workflow): number {
  return createdAt(b) - createdAt(a)
    || (a.metadata.namespace ?? '').localeCompare(b.metadata.namespace ?? '')
    || (a.metadata.name ?? '').localeCompare(b.metadata.name ?? '')
}

function progressCell(wf: Workflow): Html {
  const { done, total } = progressOf(wf)
  const failed = wf.status?.failedSteps ?? 0
  return html`<span class="progress"><progress value="${Math.min(done, total)}" max="${Math.max(total, 1)}" aria-label="${done} of ${total} steps done"></progress><span>${done}/${total}</span>${failed > 0 ? html`<span class="muted">(${failed} failed)</span>` : ''}</span>`
}

function runRow(wf: Workflow, now: Date): Html {
  const ns = wf.metadata.namespace ?? ''
  const template = templateOf(wf)
  const trigger = triggerOf(wf)
  const phase = shownPhase(wf)
  const status = wf.status ?? {}
  const duration = status.startTime && (status.completionTime || phase === 'Running' || phase === 'Waiting' || phase === 'RollingBack')
    ? elapsedText(status.startTime, status.completionTime, now)
    : ''
  return html`<tr>
<td>${objectLink('/workflows', ns, wf.metadata.name)}</td>
<td>${ns}</td>
<td>${phaseBadge(phase, phase === 'Waiting' ? 'Waiting (approval)' : phase)}</td>
<td>${progressCell(wf)}</td>
<td>${timeTag(status.startTime ?? wf.metadata.creationTimestamp, now)}</td>
<td class="num">${duration}</td>
<td>${trigger.type ? html`<span${trigger.source ? html` title="${trigger.source}"` : ''}>${trigger.type}</span>` : html`<span class="muted">—</span>`}</td>
<td>${template ? objectLink('/workflows', ns, template) : html`<span class="muted">—</span>`}</td>
</tr>`
}

function templateRow(wf: Workflow, now: Date): Html {
  const ns = wf.metadata.namespace ?? ''
  const schedule = wf.spec.trigger?.schedule
  const status = wf.status ?? {}
  const scheduleText = schedule?.cron
    ? html`<code>${schedule.cron}</code>${schedule.timezone ? html` <span class="muted">(${schedule.timezone})</span>` : ''}${schedule.suspend ? html` ${phaseBadge('Skipped', 'suspended')}` : ''}`
    : html`<span class="muted">none</span>`
  return html`<tr>
<td>${objectLink('/workflows', ns, wf.metadata.name)}</td>
<td>${ns}</td>
<td>${scheduleText}</td>
<td class="num">${status.activeRuns ?? 0}</td>
<td>${timeTag(status.lastTriggerTime ?? status.lastScheduleTime, now)}</td>
<td>${timeTag(status.nextRunTime, now)}</td>
</tr>`
}

/** The run list page. */
export async function workflowListPage(req: ConsoleRequest): Promise<PageResult> {
  const visible = await listVisible(req, () => req.kube.listWorkflows(), (ns) => req.kube.listWorkflowsIn(ns, {}))
  const q = req.url.searchParams
  const chosen = { namespace: q.get('namespace') ?? '', phase: q.get('phase') ?? '', template: q.get('template') ?? '' }
  const templates = visible.items.filter(isTemplate)
  const runs = visible.items.filter((wf) => !isTemplate(wf))

  const matching = runs.filter((wf) =>
    (!chosen.namespace || wf.metadata.namespace === chosen.namespace)
    && (!chosen.phase || shownPhase(wf) === chosen.phase)
    && (!chosen.template || templateOf(wf) === chosen.template))
    .sort(newestFirst)
  const window = pageWindow(matching.length, q.get('page'), RUNS_PER_PAGE)
  const shown = matching.slice(window.from, window.to)

  const filters = filterForm('/workflows', [
    { name: 'namespace', label: 'Namespace', values: distinct(visible.items.map((wf) => wf.metadata.namespace)), chosen: chosen.namespace, all: 'all namespaces' },
    { name: 'phase', label: 'Phase', values: distinct(runs.map(shownPhase)), chosen: chosen.phase, all: 'all phases' },
    { name: 'template', label: 'Template', values: distinct([...runs.map(templateOf), ...templates.map((t) => t.metadata.name)]), chosen: chosen.template, all: 'all templates' },
  ], '/workflows')

  const filtered = chosen.namespace !== '' || chosen.phase !== '' || chosen.template !== ''
  const runTable = shown.length > 0
    ? html`${scrollTable('Workflow runs', ['Name', 'Namespace', 'Phase', 'Progress', 'Started', { text: 'Duration', num: true }, 'Trigger', 'Template'], shown.map((wf) => runRow(wf, req.now)))}${pager(req.url, window, 'runs')}`
    : runs.length === 0
      ? html`<p class="empty">No workflow runs yet. Runs appear here when a Workflow is created, a schedule fires, a webhook arrives or someone runs a template.</p>`
      : html`<p class="empty">No runs match these filters. <a href="/workflows">Show all runs</a></p>`

  // Templates have no phase: a phase filter asks about runs only.
  const shownTemplates = templates
    .filter(() => !chosen.phase)
    .filter((t) => !chosen.namespace || t.metadata.namespace === chosen.namespace)
    .filter((t) => !chosen.template || t.metadata.name === chosen.template)
    .sort((a, b) => (a.metadata.namespace ?? '').localeCompare(b.metadata.namespace ?? '') || (a.metadata.name ?? '').localeCompare(b.metadata.name ?? ''))
  const templateSection = shownTemplates.length > 0
    ? html`<section aria-labelledby="templates-heading"><h2 id="templates-heading">Templates</h2><p class="muted">A template is not run itself: its runs are started by its schedule, a webhook or a person.</p>${scrollTable('Workflow templates', ['Name', 'Namespace', 'Schedule', { text: 'Active runs', num: true }, 'Last triggered', 'Next run'], shownTemplates.map((t) => templateRow(t, req.now)))}</section>`
    : html``

  const body = join([
    html`<h1>Workflows</h1>`,
    visibilityNote(visible, 'Workflows'),
    filters,
    html`<section aria-labelledby="runs-heading"><h2 id="runs-heading">Runs${filtered ? html` <span class="muted">(filtered)</span>` : ''}</h2>${runTable}</section>`,
    templateSection,
  ], '\n')
  return { status: 200, title: 'Workflows', nav: 'workflows', body }
}
