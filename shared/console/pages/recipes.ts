/**
 * GET /recipes and /recipes/:ns/:name: each WorkflowRecipe's lifecycle phase (spec §7.1), the
 * workloads and other children it made and how they are, and what every policy that
 * evaluated it found (spec §10).
 */
import type { WorkflowRecipe } from '../../schemas/workflowrecipe.js'
import type { ConsoleRequest, PageResult } from '../context.js'
import { html, join, type Html } from '../html.js'
import { timeTag } from '../time.js'
import { conditionsTable, listVisible, objectLink, phaseBadge, scrollTable, visibilityNote } from './common.js'
import { notFoundPage } from './errors.js'

type Violation = NonNullable<NonNullable<WorkflowRecipe['status']>['policy']>['violations'] extends (infer V)[] | undefined ? V : never

/** One policy's result for a recipe: passed, or its violations (as many as status keeps). */
export interface PolicyResult {
  policy: string
  violations: Violation[]
}

/** Pure: the result of every policy that evaluated the recipe, in name order (violations of a policy not listed as evaluated included). */
export function policyResults(recipe: WorkflowRecipe): PolicyResult[] {
  const policy = recipe.status?.policy
  const names = new Set([...(policy?.evaluated ?? []), ...(policy?.violations ?? []).map((v) => v.policy)])
  return [...names].sort().map((name) => ({ policy: name, violations: (policy?.violations ?? []).filter((v) => v.policy === name) }))
}

async function allInNamespace(req: ConsoleRequest, namespace: string): Promise<WorkflowRecipe[]> {
  const items: WorkflowRecipe[] = []
  let token: string | undefined
  do {
    const page = await req.kube.listRecipes({ namespace, limit: 500, ...(token ? { continue: token } : {}) })
    items.push(...page.items)
    token = page.continue
  } while (token)
  return items
}

function complianceText(recipe: WorkflowRecipe): Html {
  const policy = recipe.status?.policy
  if (!policy || policy.compliant === undefined) return html`<span class="muted">not evaluated</span>`
  if (policy.compliant) return phaseBadge('Succeeded', 'compliant')
  const count = policy.totalViolations ?? policy.violations?.length ?? 0
  return phaseBadge('Failed', `${count} ${count === 1 ? 'violation' : 'violations'}`)
}

/** GET /recipes. */
export async function recipesPage(req: ConsoleRequest): Promise<PageResult> {
  const visible = await listVisible(req, () => req.kube.listAllRecipes(), (ns) => allInNamespace(req, ns))
  const recipes = [...visible.items].sort((a, b) => (a.metadata.namespace ?? '').localeCompare(b.metadata.namespace ?? '') || (a.metadata.name ?? '').localeCompare(b.metadata.name ?? ''))
  const table = recipes.length > 0
    ? scrollTable('Recipes', ['Name', 'Namespace', 'Phase', 'Workloads ready', 'Revision', 'Policy', 'Approval', 'Since'], recipes.map((r) => {
      const s = r.status ?? {}
      return html`<tr><td>${objectLink('/recipes', r.metadata.namespace, r.metadata.name)}</td><td>${r.metadata.namespace ?? ''}</td><td>${phaseBadge(s.phase)}</td><td class="num">${s.readyWorkloads ?? ''}</td><td class="num">${s.currentRevision ?? ''}</td><td>${complianceText(r)}</td><td>${s.approval?.state ?? ''}</td><td>${timeTag(s.phaseTransitionTime, req.now)}</td></tr>`
    }))
    : html`<p class="empty">No recipes to show.</p>`
  return { status: 200, title: 'Recipes', nav: 'recipes', body: join([html`<h1>Recipes</h1>`, visibilityNote(visible, 'WorkflowRecipes'), table], '\n') }
}

function policySection(recipe: WorkflowRecipe): Html {
  const results = policyResults(recipe)
  if (results.length === 0) return html`<p class="empty">No policy matched this recipe.</p>`
  const more = (recipe.status?.policy?.totalViolations ?? 0) - (recipe.status?.policy?.violations?.length ?? 0)
  return html`${scrollTable('Policy results', ['Policy', 'Result', 'Violations'], results.map((r) => html`<tr>
<td>${r.policy}</td>
<td>${r.violations.length === 0 ? phaseBadge('Succeeded', 'passed') : phaseBadge(r.violations.some((v) => v.mode === 'Enforce') ? 'Failed' : 'Waiting', r.violations.some((v) => v.mode === 'Enforce') ? 'violated (Enforce)' : `violated (${r.violations[0]!.mode})`)}</td>
<td>${r.violations.length === 0 ? '' : html`<ul>${join(r.violations.map((v) => html`<li><code>${v.rule}</code> ${v.mode}${v.workload ? html`, workload ${v.workload}` : ''}${v.test ? html`, test ${v.test}` : ''}: ${v.message}</li>`))}</ul>`}</td>
</tr>`))}${more > 0 ? html`<p class="muted">${more} more violations are not kept in status.</p>` : ''}`
}

/** GET /recipes/:ns/:name. */
export async function recipePage(req: ConsoleRequest, namespace: string, name: string): Promise<PageResult> {
  const recipe = await req.kube.getRecipe(namespace, name)
  if (!recipe) return notFoundPage(`Recipe ${namespace}/${name}`)
  const s = recipe.status ?? {}
  const now = req.now
  const workloads = s.workloads ?? []
  const workloadTable = workloads.length > 0
    ? scrollTable('Workloads', ['Workload', 'Kind', 'Object', 'Phase', { text: 'Ready replicas', num: true }, 'Since', 'Message'], workloads.map((w) => html`<tr>
<td>${w.name}</td><td>${w.kind ?? ''}</td><td>${w.objectName ? html`<code>${w.namespace ?? namespace}/${w.objectName}</code>` : ''}</td>
<td>${w.included === false ? phaseBadge('Excluded') : phaseBadge(w.phase)}</td>
<td class="num">${w.replicas === undefined ? '' : `${w.readyReplicas ?? 0}/${w.replicas}`}</td>
<td>${timeTag(w.since, now)}</td><td>${w.message ?? ''}${w.url ? html` <code>${w.url}</code>` : ''}</td></tr>`))
    : html`<p class="empty">No workloads reported yet.</p>`
  const tests = s.tests ?? []
  const testTable = tests.length > 0
    ? html`<h3>Tests</h3>${scrollTable('Tests', ['Test', 'Job', 'Phase', 'Started', 'Message'], tests.map((t) =>
      html`<tr><td>${t.name}</td><td>${t.jobName ?? ''}</td><td>${phaseBadge(t.phase)}</td><td>${timeTag(t.startTime, now)}</td><td>${t.message ?? ''}</td></tr>`))}`
    : html``
  const wf = s.workflow
  const workflow = wf?.name
    ? html`<h3>Agentic steps</h3><p>Workflow ${objectLink('/workflows', namespace, wf.name)} ${phaseBadge(wf.phase)} ${wf.completedSteps ?? 0}/${wf.totalSteps ?? 0} steps done${wf.failedSteps ? `, ${wf.failedSteps} failed` : ''}${wf.message ? html`: ${wf.message}` : ''}</p>`
    : html``
  const mcp = s.mcpServers ?? []
  const mcpList = mcp.length > 0
    ? html`<h3>MCP servers</h3><ul>${join(mcp.map((m) => html`<li>${m.name ?? m.workload} ${phaseBadge(m.phase)}${m.url ? html` <code>${m.url}</code>` : ''}</li>`))}</ul>`
    : html``
  const history = s.history ?? []
  const historyTable = history.length > 0
    ? scrollTable('Lifecycle history', ['When', 'From', 'To', 'Reason', 'Revision', 'Message'], [...history].reverse().map((h) =>
      html`<tr><td>${timeTag(h.time, now)}</td><td>${h.from ?? ''}</td><td>${phaseBadge(h.to)}</td><td>${h.reason ?? ''}</td><td class="num">${h.revision ?? ''}</td><td>${h.message ?? ''}</td></tr>`))
    : html`<p class="empty">No transitions recorded yet.</p>`
  const approval = s.approval
  const body = html`<h1>Recipe ${name}</h1>
<dl class="facts">
<dt>Namespace</dt><dd>${namespace}</dd>
<dt>Phase</dt><dd>${phaseBadge(s.phase)}${s.reason ? html` <span class="muted">${s.reason}</span>` : ''} ${timeTag(s.phaseTransitionTime, now)}</dd>
${s.message ? html`<dt>Message</dt><dd>${s.message}</dd>` : ''}
<dt>Revision</dt><dd>${s.currentRevision === undefined ? 'none running' : `running ${s.currentRevision}`}${s.lastGoodRevision !== undefined ? `, last good ${s.lastGoodRevision}` : ''}${s.revision !== undefined ? `, latest ${s.revision}` : ''}</dd>
<dt>Workloads ready</dt><dd>${s.readyWorkloads ?? '—'}</dd>
${approval?.required ? html`<dt>Approval</dt><dd>${approval.state ?? 'Pending'}${approval.approvedBy ? ` by ${approval.approvedBy}` : ''}${approval.requiredBy?.length ? ` (required by ${approval.requiredBy.join(', ')})` : ''}</dd>` : ''}
${s.resolved?.profile ? html`<dt>Profile</dt><dd>${s.resolved.profile}</dd>` : ''}
</dl>
<section aria-labelledby="workloads-heading"><h2 id="workloads-heading">Workloads and children</h2>${workloadTable}${testTable}${workflow}${mcpList}</section>
<section aria-labelledby="policy-heading"><h2 id="policy-heading">Policy results</h2>${policySection(recipe)}</section>
<section aria-labelledby="history-heading"><h2 id="history-heading">Lifecycle history</h2>${historyTable}</section>
<section aria-labelledby="conditions-heading"><h2 id="conditions-heading">Conditions</h2>${conditionsTable(s.conditions, (iso) => timeTag(iso, now))}</section>`
  return { status: 200, title: `Recipe ${name}`, nav: 'recipes', body }
}
