/**
 * GET /workflows/:ns/:name (one run: DAG, steps, parameters, conditions, Kubernetes Events and
 * Kinetic's CloudEvents, actions) and GET /workflows/:ns/:name/steps/:step (timings, attempts,
 * Job, error, output, the log's end). Everything is read with the person's own rights.
 */
import type { CoreV1Event, V1Job } from '@kubernetes/client-node'
import { cloudEventOf } from '../../engine/cloud-event-of.js'
import { ForbiddenError, TransientError } from '../../core/errors.js'
import { currentRunId } from '../../workflow/plan/run-status.js'
import { jobState, tailLines } from '../../run-control/logs.js'
import { findStepPod } from '../../run-control/step-pod.js'
import { currentRunStatus } from '../../run-control/run-checks.js'
import { LABEL_RUN_ID } from '../../schemas/labels.js'
import type { Condition, Workflow } from '../../schemas/workflow.js'
import type { ConsoleRequest, PageResult } from '../context.js'
import { html, join, type Html } from '../html.js'
import { traceUrl } from '../../telemetry/trace-url.js'
import { actionForm } from '../action-form.js'
import { allowedActions } from '../auth/permissions.js'
import { phaseBadge } from '../pages/common.js'
import { notFoundPage } from '../pages/errors.js'
import { durationText, timeTag } from '../time.js'
import { layoutDag, MAX_DRAWN_STEPS } from './dag-layout.js'
import { groupDagSvg, groupTitle, stepDagSvg, stepHref } from './dag-svg.js'
import { actionPath, runActions, runRights, type RunActions, type RunRights } from './run-actions.js'
import {
  DISPLAY_PHASES, outputText, runView, tickingSince, workflowView, type DisplayPhase, type RunView, type StepView, type TemplateView,
} from './run-view.js'

/** Rows per page of the step table of a large run. */
export const STEP_PAGE_ROWS = 100
/** Newest Events shown; a long run has thousands, and the page must stay small. */
export const MAX_EVENTS = 100
/** Lines of a step's log shown before following it live. */
export const LOG_TAIL_LINES = 200

/** Pure: the URL of a run's page. */
export function runHref(namespace: string, name: string): string {
  return `/workflows/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}`
}

/** Pure: the live stream of a run's page (the page's resourceVersion goes in `rv`). */
export function runLiveHref(namespace: string, name: string, rv: string): string {
  return `/live/workflows/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}?rv=${encodeURIComponent(rv)}`
}

/** Pure: the run page's actions area alone (what the page script swaps in when the actions that apply change). */
export function actionsHref(namespace: string, name: string): string {
  return `${runHref(namespace, name)}?fragment=1&section=actions`
}

/** Pure: the live stream of a step's log. */
export function logLiveHref(namespace: string, name: string, step: string): string {
  return `/live/logs/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}/${encodeURIComponent(step)}`
}

const duration = (ms: number | undefined) => (ms === undefined ? '' : durationText(ms))
// A duration still counting carries its start: the page script counts it on every second.
const since = (v: Parameters<typeof tickingSince>[0]) => {
  const start = tickingSince(v)
  return start ? html` data-started="${start}"` : ''
}

/** The run page, or a 404 page; ForbiddenError and TransientError are left to the error page. */
export async function runPage(req: ConsoleRequest, namespace: string, name: string): Promise<PageResult> {
  const wf = await req.kube.getWorkflow(namespace, name)
  if (!wf) return notFoundPage(`Workflow ${namespace}/${name}`)
  const view = workflowView(wf, req.now)
  if (view.kind === 'template') return templatePage(req, view, await eventsOf(req, namespace, name))
  if (req.url.searchParams.get('section') === 'actions') {
    // Only the actions area, decided afresh with the person's rights: the live page asks for it.
    const rights = await runRights(req, wf)
    const body = actionsSection(view, runActions(wf, view, rights), rights)
    return { status: 200, title: `Actions \u00b7 ${name} \u00b7 ${namespace}`, nav: 'workflows', body }
  }
  const [events, rights] = await Promise.all([eventsOf(req, namespace, name), runRights(req, wf)])
  const actions = runActions(wf, view, rights)
  const body = html`<div class="run-page" id="run" data-rv="${view.resourceVersion}" data-live="${runLiveHref(namespace, name, view.resourceVersion)}" data-actions-href="${actionsHref(namespace, name)}" data-phase="${view.phase}">
${runHeader(req, view)}
<p class="run-announce visually-hidden" aria-live="polite" data-announce></p>
${actionsSection(view, actions, rights)}
${dagSection(req, view)}
<div class="step-panel" id="step-panel" hidden></div>
${parametersSection(view.parameters)}
${conditionsSection(req, view.conditions)}
${eventsSection(req, events)}
</div>`
  return { status: 200, title: `${name} \u00b7 ${namespace}`, nav: 'workflows', body, scripts: ['run.js'] }
}

type EventsRead = { events: CoreV1Event[]; forbidden?: string }

async function eventsOf(req: ConsoleRequest, namespace: string, name: string): Promise<EventsRead> {
  try {
    return { events: await req.kube.listEvents(namespace, { kind: 'Workflow', name }) }
  } catch (err) {
    // Seeing the run but not its Events is a common RBAC split: show the run, say what is missing.
    if (err instanceof ForbiddenError) return { events: [], forbidden: `You (${req.person.name}) may not list Events in namespace ${namespace}.` }
    throw err
  }
}

function runHeader(req: ConsoleRequest, view: RunView): Html {
  const { completed, failed, total } = view.progress
  const trigger = view.trigger
  return html`<header class="run-header">
<h1><span class="kind">Workflow</span> ${view.namespace}/${view.name}</h1>
<dl class="facts run-facts">
<dt>Phase</dt><dd data-run-phase>${phaseBadge(view.phase)}</dd>
<dt>Progress</dt><dd><progress data-run-progress max="${total}" value="${completed}">${completed}/${total}</progress> <span data-run-progress-text>${completed}/${total} done${failed ? `, ${failed} failed` : ''}</span></dd>
<dt>Started</dt><dd>${view.startTime ? timeTag(view.startTime, req.now) : 'not yet'}</dd>
<dt>Finished</dt><dd data-run-finished>${view.completionTime ? timeTag(view.completionTime, req.now) : '\u2014'}</dd>
<dt>Duration</dt><dd data-run-duration${since(view)}>${duration(view.durationMs) || '\u2014'}</dd>
${view.template ? html`<dt>Template</dt><dd><a href="${runHref(view.namespace, view.template)}">${view.template}</a></dd>` : ''}
${trigger ? html`<dt>Trigger</dt><dd>${trigger.type ?? 'unknown'}${trigger.source ? html` (${trigger.source})` : ''}${trigger.route ? html`, route ${trigger.route}` : ''}</dd>` : ''}
${view.runId ? html`<dt>Run id</dt><dd><code>${view.runId}</code>${req.config.traceUrlTemplate ? html` <a class="trace-link" href="${traceUrl(req.config.traceUrlTemplate, view.runId)}" rel="noopener" target="_blank">Open trace</a>` : ''}</dd>` : ''}
${view.queuePosition !== undefined ? html`<dt>Queued</dt><dd>position ${view.queuePosition}</dd>` : ''}
</dl>
${view.message ? html`<p class="run-message" data-run-message>${view.message}</p>` : ''}
</header>`
}

function actionsSection(view: RunView, actions: RunActions, rights: RunRights): Html {
  const decide = view.steps.filter((s) => actions.decide.includes(s.name)).map((s) => decisionForms(view, s.name))
  // A step yet to start may come to wait for approval while the page is open: its forms then take
  // this room, kept as large as theirs but unseen, so nothing below them moves.
  const upcoming = rights.decide && !view.finished && decide.length === 0 ? view.steps.find((s) => s.phase === 'Pending') : undefined
  const forms: Html[] = [
    ...decide,
    ...(upcoming ? [decisionForms(view, upcoming.name, true)] : []),
    // Cancel and rerun fold away behind their names: the page leads with the run, not with forms.
    html`<div class="action" data-action="cancel"${actions.cancel ? '' : html` hidden`}><details><summary>Cancel run…</summary>${actionForm({ path: actionPath('cancel', view.namespace, view.name), label: 'Cancel run', reason: true, danger: true, confirm: `Cancel ${view.name}?` })}</details></div>`,
    html`<div class="action" data-action="rerun"${actions.rerun ? '' : html` hidden`}><details><summary>Rerun…</summary>${actionForm({ path: actionPath('rerun', view.namespace, view.name), label: 'Rerun', reason: true, parameters: Object.fromEntries(view.parameters) })}</details></div>`,
  ]
  return html`<section class="run-actions" aria-label="Actions">${forms}<p class="action-stale" data-action-stale hidden>New actions apply: <a href="">reload</a> to see them.</p></section>`
}

/** A step's approve and deny forms; as a `slot`, room of their size, unseen and out of reach (the page script swaps real ones in). */
function decisionForms(view: RunView, step: string, slot = false): Html {
  const attributes = slot ? html`class="action action-slot" data-action="slot" aria-hidden="true" inert` : html`class="action" data-action="decide" data-step="${step}"`
  return html`<div ${attributes}><h2>Step ${step} waits for approval</h2>${actionForm({ path: actionPath('approve', view.namespace, view.name, step), label: `Approve ${step}`, reason: true })}${actionForm({ path: actionPath('deny', view.namespace, view.name, step), label: `Deny ${step}`, reason: true, danger: true })}</div>`
}

/** Pure: the step table's filter from the query (`phase`, `group`, `page`), defaults when absent or invalid. */
export function stepFilter(url: URL): { phase?: DisplayPhase; group?: number; page: number } {
  const phase = url.searchParams.get('phase') ?? ''
  const group = Number.parseInt(url.searchParams.get('group') ?? '', 10)
  const page = Number.parseInt(url.searchParams.get('page') ?? '', 10)
  return {
    ...((DISPLAY_PHASES as readonly string[]).includes(phase) ? { phase: phase as DisplayPhase } : {}),
    ...(Number.isInteger(group) && group >= 0 ? { group } : {}),
    page: Number.isInteger(page) && page >= 1 ? page : 1,
  }
}

function dagSection(req: ConsoleRequest, view: RunView): Html {
  const wfSteps = view.steps.map((s) => ({ name: s.name, dependsOn: s.dependsOn }))
  const layout = layoutDag(wfSteps)
  const base = runHref(view.namespace, view.name)
  if (layout.kind === 'steps') {
    return html`<section class="run-dag" aria-labelledby="dag-title"><h2 id="dag-title">Steps</h2>
<div class="dag-scroll">${stepDagSvg(layout, view.steps, view.namespace, view.name)}</div>
${stepTable(req, view, view.steps)}</section>`
  }
  const filter = stepFilter(req.url)
  const group = filter.group === undefined ? undefined : layout.groups[filter.group]
  const inGroup = group ? group.steps.map((i) => view.steps[i]!) : view.steps
  const matching = filter.phase ? inGroup.filter((s) => s.phase === filter.phase) : inGroup
  const pages = Math.max(1, Math.ceil(matching.length / STEP_PAGE_ROWS))
  const page = Math.min(filter.page, pages)
  const rows = matching.slice((page - 1) * STEP_PAGE_ROWS, page * STEP_PAGE_ROWS)
  const query = (o: { page?: number; phase?: string | undefined; group?: number | undefined }) => {
    const q = new URLSearchParams()
    const phase = 'phase' in o ? o.phase : filter.phase
    const g = 'group' in o ? o.group : filter.group
    if (phase) q.set('phase', phase)
    if (g !== undefined) q.set('group', String(g))
    if (o.page && o.page > 1) q.set('page', String(o.page))
    const s = q.toString()
    return `${base}${s ? `?${s}` : ''}#steps`
  }
  const phaseLinks = [html`<a href="${query({ phase: undefined, page: 1 })}"${filter.phase ? '' : html` aria-current="true"`}>all</a>`,
    ...DISPLAY_PHASES.map((p) => html`<a href="${query({ phase: p, page: 1 })}"${filter.phase === p ? html` aria-current="true"` : ''}>${p}</a>`)]
  return html`<section class="run-dag run-dag-grouped" aria-labelledby="dag-title"><h2 id="dag-title">Steps</h2>
<p class="dag-note">${view.steps.length} steps in ${layout.layers} layers: drawn as ${layout.groups.length} groups (above ${MAX_DRAWN_STEPS} steps one node per step cannot be read). Choose a group to list its steps.</p>
<div class="dag-scroll">${groupDagSvg(layout, view.steps, base)}</div>
<nav class="step-filter" aria-label="Filter steps by phase">Phase: ${join(phaseLinks, ' ')}${group ? html` \u00b7 ${groupTitle(group.firstLayer, group.lastLayer)} <a href="${query({ group: undefined, page: 1 })}">all layers</a>` : ''}</nav>
${stepTable(req, view, rows)}
<nav class="pager" aria-label="Step pages"><span>Page ${page} of ${pages} (${matching.length} steps)</span>${page > 1 ? html` <a rel="prev" href="${query({ page: page - 1 })}">previous</a>` : ''}${page < pages ? html` <a rel="next" href="${query({ page: page + 1 })}">next</a>` : ''}</nav>
</section>`
}

function stepTable(req: ConsoleRequest, view: RunView, steps: readonly StepView[]): Html {
  const rows = steps.map((s) => html`<tr data-step="${s.name}"><th scope="row"><a class="step-link" href="${stepHref(view.namespace, view.name, s.name)}">${s.name}</a></th><td class="step-phase">${phaseBadge(s.phase, s.label)}</td><td class="step-started">${timeTag(s.startTime, req.now)}</td><td class="step-duration"${since(s)}>${duration(s.durationMs)}</td><td class="step-attempts">${s.attempts}</td><td class="step-deps">${s.dependsOn.join(', ')}</td><td class="step-reason">${s.reason ?? ''}</td></tr>`)
  return html`<div class="table-scroll" tabindex="0"><table class="step-table" id="steps"><caption class="visually-hidden">Steps of ${view.name}</caption><thead><tr><th scope="col">Step</th><th scope="col">Phase</th><th scope="col">Started</th><th scope="col">Duration</th><th scope="col">Attempts</th><th scope="col">After</th><th scope="col">Notes</th></tr></thead><tbody>${rows}</tbody></table></div>`
}

function parametersSection(parameters: readonly [string, string][]): Html {
  if (parameters.length === 0) return html`<section class="run-parameters"><h2>Parameters</h2><p>None.</p></section>`
  return html`<section class="run-parameters"><h2>Parameters</h2><dl class="facts">${parameters.map(([k, v]) => html`<dt>${k}</dt><dd><code>${v}</code></dd>`)}</dl></section>`
}

function conditionsSection(req: ConsoleRequest, conditions: readonly Condition[]): Html {
  if (conditions.length === 0) return html`<section class="run-conditions"><h2>Conditions</h2><p>None reported.</p></section>`
  const rows = conditions.map((c) => html`<tr><th scope="row">${c.type}</th><td>${c.status}</td><td>${c.reason ?? ''}</td><td>${c.message ?? ''}</td><td>${timeTag(typeof c.lastTransitionTime === 'string' ? c.lastTransitionTime : undefined, req.now)}</td></tr>`)
  return html`<section class="run-conditions"><h2>Conditions</h2><div class="table-scroll" tabindex="0"><table><thead><tr><th scope="col">Type</th><th scope="col">Status</th><th scope="col">Reason</th><th scope="col">Message</th><th scope="col">Changed</th></tr></thead><tbody>${rows}</tbody></table></div></section>`
}

function iso(value: unknown): string | undefined {
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? undefined : value.toISOString()
  return typeof value === 'string' && value !== '' ? value : undefined
}

function eventsSection(req: ConsoleRequest, read: EventsRead): Html {
  if (read.forbidden) return html`<section class="run-events"><h2>Events</h2><p class="forbidden">${read.forbidden}</p></section>`
  const newest = [...read.events].reverse().slice(0, MAX_EVENTS)
  const older = read.events.length - newest.length
  const more = older > 0 ? html`<p class="events-more">${older} older Events not shown; <code>kinetic events</code> lists them all.</p>` : ''
  const k8s = newest.map((e) => html`<tr><td>${timeTag(iso(e.lastTimestamp) ?? iso(e.eventTime) ?? iso(e.firstTimestamp), req.now)}</td><td>${e.type ?? ''}</td><td>${e.reason ?? ''}</td><td>${e.message ?? ''}</td><td>${e.count && e.count > 1 ? e.count : ''}</td><td>${e.reportingComponent || e.source?.component || ''}</td></tr>`)
  const cloud = newest.map((e) => {
    const ce = cloudEventOf(e)
    return html`<tr><td><code>${ce.type}</code></td><td><code>${ce.id}</code></td><td>${timeTag(ce.time, req.now)}</td><td><code class="ce-data">${JSON.stringify(ce.data)}</code></td></tr>`
  })
  const none = html`<p>None.</p>`
  return html`<section class="run-events"><h2>Kubernetes Events</h2>${newest.length === 0 ? none : html`<div class="table-scroll" tabindex="0"><table><thead><tr><th scope="col">Time</th><th scope="col">Type</th><th scope="col">Reason</th><th scope="col">Message</th><th scope="col">Count</th><th scope="col">From</th></tr></thead><tbody>${k8s}</tbody></table></div>`}${more}</section>
<section class="run-cloudevents"><h2>Kinetic CloudEvents</h2>${newest.length === 0 ? none : html`<div class="table-scroll" tabindex="0"><table><thead><tr><th scope="col">Type</th><th scope="col">Id</th><th scope="col">Time</th><th scope="col">Data</th></tr></thead><tbody>${cloud}</tbody></table></div>`}</section>`
}

async function templatePage(req: ConsoleRequest, view: TemplateView, events: EventsRead): Promise<PageResult> {
  const [mayRun = false] = await allowedActions(req, [{ kind: 'run', namespace: view.namespace, template: view.name, parameters: {} }])
  const runs = view.recentRuns.map((r) => html`<tr><th scope="row"><a href="${runHref(view.namespace, r.name)}">${r.name}</a></th><td>${phaseBadge(r.phase ?? 'Pending')}</td><td>${r.trigger ?? ''}</td><td>${timeTag(r.startTime, req.now)}</td><td>${r.startTime && r.completionTime ? durationText(Date.parse(r.completionTime) - Date.parse(r.startTime)) : ''}</td></tr>`)
  const schedule = view.schedule
  const body = html`<div class="run-page template-page" id="run" data-rv="${view.resourceVersion}">
<header class="run-header"><h1><span class="kind">Template</span> ${view.namespace}/${view.name}</h1>
${view.description ? html`<p>${view.description}</p>` : ''}
<dl class="facts run-facts">
<dt>Schedule</dt><dd>${schedule ? html`<code>${schedule.cron}</code>${schedule.timezone ? ` (${schedule.timezone})` : ''}${schedule.suspended ? ' \u2014 suspended' : ''}` : 'none: runs start from kinetic run, a webhook or run-control'}</dd>
<dt>Next run</dt><dd>${view.nextRunTime ? timeTag(view.nextRunTime, req.now) : '\u2014'}</dd>
<dt>Last schedule</dt><dd>${view.lastScheduleTime ? timeTag(view.lastScheduleTime, req.now) : '\u2014'}</dd>
<dt>Active runs</dt><dd>${view.activeRuns}</dd>
<dt>Steps</dt><dd>${view.steps}</dd>
</dl></header>
<p>A template never runs itself; each run is its own Workflow. <a href="/workflows?namespace=${encodeURIComponent(view.namespace)}&amp;template=${encodeURIComponent(view.name)}">All runs of ${view.name}</a></p>
${mayRun ? html`<section class="run-actions" aria-label="Actions">${actionForm({ path: actionPath('run', view.namespace, view.name), label: `Run ${view.name}`, parameters: Object.fromEntries(view.parameters) })}</section>` : ''}
<section class="template-runs"><h2>Recent runs</h2>${runs.length === 0 ? html`<p>None yet.</p>` : html`<div class="table-scroll" tabindex="0"><table><thead><tr><th scope="col">Run</th><th scope="col">Phase</th><th scope="col">Trigger</th><th scope="col">Started</th><th scope="col">Duration</th></tr></thead><tbody>${runs}</tbody></table></div>`}</section>
${parametersSection(view.parameters)}
${conditionsSection(req, view.conditions)}
${eventsSection(req, events)}
</div>`
  return { status: 200, title: `${view.name} \u00b7 ${view.namespace}`, nav: 'workflows', body }
}

/** What the step page reads of a step's Job and log. */
interface StepLog {
  job?: V1Job
  pod?: string
  lines: string[]
  state?: string
  note?: string
}

async function stepLogOf(req: ConsoleRequest, namespace: string, name: string, step: string, jobName: string | undefined): Promise<StepLog> {
  try {
    const { job, pod, waiting } = await findStepPod(req.kube, namespace, name, step, jobName)
    const chosen = job?.metadata?.name
    if (!job || !chosen) return { lines: [], note: 'No Job has run this step yet.' }
    if (!pod) return { job, lines: [], state: jobState(job), note: `Job ${chosen} has no pod (yet, or any more).` }
    // A container the kubelet keeps waiting (an image it cannot pull, a crash loop) says why.
    const why = waiting ? { note: `The pod is waiting: ${waiting}` } : {}
    try {
      const text = await req.kube.readJobLog(namespace, chosen)
      return { job, pod, lines: tailLines(text ?? '', LOG_TAIL_LINES), state: jobState(job), ...why }
    } catch (err) {
      if (err instanceof TransientError || err instanceof ForbiddenError) throw err
      // The kubelet refuses a log before the container starts: nothing to show yet.
      return { job, pod, lines: [], state: jobState(job), note: why.note ?? `The log of pod ${pod} cannot be read yet.` }
    }
  } catch (err) {
    if (err instanceof ForbiddenError) return { lines: [], note: `You (${req.person.name}) may not read this step's Jobs, pods or log in namespace ${namespace}.` }
    throw err
  }
}

async function stepOutputOf(req: ConsoleRequest, wf: Workflow, step: StepView): Promise<{ output?: unknown; note?: string }> {
  const inline = currentRunStatus(wf)?.stepStatuses?.find((s) => s.name === step.name)?.output
  if (!step.outputRef) return inline === undefined ? {} : { output: inline }
  try {
    const shard = await req.kube.getConfigMap(wf.metadata.namespace ?? '', step.outputRef)
    // A shard left from an earlier run of the same Workflow is not this run's output.
    if (shard && shard.metadata?.labels?.[LABEL_RUN_ID] === currentRunId(wf) && shard.data?.[step.name] !== undefined) return { output: shard.data[step.name] }
    return inline === undefined ? { note: `Output ConfigMap ${step.outputRef} holds nothing for this run.` } : { output: inline }
  } catch (err) {
    if (err instanceof ForbiddenError) return { note: `You (${req.person.name}) may not read ConfigMap ${step.outputRef}.` }
    throw err
  }
}

/** The step page (also the panel fragment: D renders only `body` for ?fragment=1), or a 404 page. */
export async function stepPage(req: ConsoleRequest, namespace: string, name: string, step: string): Promise<PageResult> {
  const wf = await req.kube.getWorkflow(namespace, name)
  if (!wf) return notFoundPage(`Workflow ${namespace}/${name}`)
  const index = wf.spec.steps.findIndex((s) => s.name === step)
  if (index < 0) return notFoundPage(`Step ${step} of Workflow ${namespace}/${name}`)
  const view = runView(wf, req.now)
  const s = view.steps[index]!
  const [log, output, rights] = await Promise.all([stepLogOf(req, namespace, name, step, s.jobName), stepOutputOf(req, wf, s), runRights(req, wf)])
  const actions = runActions(wf, view, rights)
  const shown = output.output === undefined ? undefined : outputText(output.output)
  const jobName = log.job?.metadata?.name ?? s.jobName
  const live = !view.finished || log.state === 'running'
  const body = html`<article class="step-detail" data-step="${s.name}" aria-labelledby="step-title">
<h1 id="step-title"><span class="kind">Step</span> ${s.name} <span class="step-phase">${phaseBadge(s.phase, s.label)}</span></h1>
<p><a href="${runHref(namespace, name)}">Workflow ${namespace}/${name}</a> \u00b7 run ${phaseBadge(view.phase)}</p>
<dl class="facts step-facts">
${s.agent ? html`<dt>Agent</dt><dd>${s.agent}</dd>` : ''}${s.type ? html`<dt>Type</dt><dd>${s.type}</dd>` : ''}
<dt>Started</dt><dd>${s.startTime ? timeTag(s.startTime, req.now) : 'not yet'}</dd>
<dt>Finished</dt><dd>${s.completionTime ? timeTag(s.completionTime, req.now) : '\u2014'}</dd>
<dt>Duration</dt><dd class="step-duration"${since(s)}>${duration(s.durationMs) || '\u2014'}</dd>
<dt>Attempts</dt><dd>${s.attempts}${s.retries ? ` (${s.retries} retr${s.retries === 1 ? 'y' : 'ies'})` : ''}${s.nextAttemptAt ? html`; next ${timeTag(s.nextAttemptAt, req.now)}` : ''}</dd>
<dt>Job</dt><dd>${jobName ? html`<code>${jobName}</code>${log.state ? ` (${log.state})` : ''}` : 'none yet'}</dd>
${jobName && view.runId && req.config.traceUrlTemplate ? html`<dt>Trace</dt><dd><a class="trace-link" href="${traceUrl(req.config.traceUrlTemplate, view.runId, jobName)}" rel="noopener" target="_blank">Open this attempt's trace</a></dd>` : ''}
${log.pod ? html`<dt>Pod</dt><dd><code>${log.pod}</code></dd>` : ''}
<dt>After</dt><dd>${s.dependsOn.length ? s.dependsOn.join(', ') : 'nothing (a first step)'}</dd>
${s.reason && !s.error ? html`<dt>${s.phase === 'Skipped' ? 'Why skipped' : 'Waiting for'}</dt><dd>${s.reason}</dd>` : ''}
${s.message ? html`<dt>Note</dt><dd>${s.message}</dd>` : ''}
</dl>
${actions.decide.includes(s.name) ? decisionForms(view, s.name) : ''}
${s.error ? html`<section class="step-error"><h2>Error</h2><pre>${s.error}</pre></section>` : ''}
<section class="step-output"><h2>Output</h2>${shown ? html`<pre>${shown.text}</pre>${shown.truncatedBytes ? html`<p class="truncated">truncated, ${shown.truncatedBytes} bytes not shown</p>` : ''}` : html`<p>${output.note ?? 'None.'}</p>`}</section>
<section class="log-panel" aria-labelledby="log-title"${live && log.pod ? html` data-log-live="${logLiveHref(namespace, name, step)}"` : ''}>
<h2 id="log-title">Log</h2>
${log.note ? html`<p class="log-note">${log.note}</p>` : ''}
<label class="log-follow"><input type="checkbox" data-log-follow checked> Follow</label>
<pre class="log" tabindex="0" aria-label="Log of ${s.name}" data-log>${log.lines.join('\n')}</pre>
<p class="log-status" aria-live="polite" data-log-status>${log.lines.length ? `Last ${log.lines.length} lines.` : ''}</p>
</section>
</article>`
  return { status: 200, title: `${s.name} \u00b7 ${name}`, nav: 'workflows', body, scripts: ['run.js'] }
}
