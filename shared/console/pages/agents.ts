/**
 * GET /agents and /agents/:ns/:name: each Agent's Shu-Ha-Ri level and autonomy, what it has
 * done (runs, success rate, cost) against its budget, how far it is from the next level, and,
 * when a promotion waits for a person, the button that approves it (only for those run-control
 * would let). The history is the Agent's conditions, recorded approvals and Kubernetes Events.
 */
import type { CoreV1Event } from '@kubernetes/client-node'
import { costLimitOf } from '../../agent/plan/cost-limit.js'
import { CONDITION_PROGRESSION } from '../../autonomy/plan/progression-report.js'
import { ForbiddenError } from '../../core/errors.js'
import type { Agent, ShuHaRiLevel } from '../../schemas/agent.js'
import type { PromotionLevel } from '../../run-control/request.js'
import { actionForm } from '../action-form.js'
import { allowedActions } from '../auth/permissions.js'
import type { ConsoleRequest, PageResult } from '../context.js'
import { html, join, type Html } from '../html.js'
import { timeTag } from '../time.js'
import {
  conditionsTable, listVisible, objectLink, percent, phaseBadge, scrollTable, usd, visibilityNote,
} from './common.js'
import { notFoundPage } from './errors.js'

const LEVEL_NAMES: Record<ShuHaRiLevel, string> = { shu: 'Shu', ha: 'Ha', ri: 'Ri' }

/** Pure: the level an Agent is at as people write it (Shu, Ha, Ri); undefined when it has not opted in to Shu-Ha-Ri. */
export function levelName(agent: Agent): string | undefined {
  const level = agent.status?.shuHaRi?.currentLevel ?? agent.spec.shuHaRi?.level ?? (agent.spec.shuHaRi ? 'shu' : undefined)
  return level ? LEVEL_NAMES[level] : undefined
}

/** Pure: the recorded cost against the budget: "$1.20 of $5.00 (24%)", "$1.20, no limit", or the invalid limit as written. */
export function budgetText(agent: Agent): string {
  const cost = agent.status?.metrics?.totalCostUSD ?? 0
  const limit = costLimitOf(agent)
  if (limit.kind === 'none') return `${usd(cost)}, no limit`
  if (limit.kind === 'invalid') return `${usd(cost)}; limit "${limit.raw}" is not an amount`
  return `${usd(cost)} of ${usd(limit.usd)} (${percent(cost / limit.usd)})`
}

/** The level a promotion awaiting a person's approval is for; undefined when none waits. */
export function promotionAwaitingApproval(agent: Agent): PromotionLevel | undefined {
  const shuHaRi = agent.status?.shuHaRi
  const progress = shuHaRi?.promotionProgress
  const next = progress?.nextLevel
  if (!next || next === 'shu') return undefined
  if ((progress.approvalsRequired ?? 0) <= (progress.approvals ?? 0)) return undefined
  const condition = agent.status?.conditions?.find((c) => c.type === CONDITION_PROGRESSION)
  return shuHaRi?.readyForPromotion === true || condition?.reason === 'AwaitingApproval' ? next : undefined
}

/** Pure: progress towards the next level in a few words. */
export function promotionSummary(agent: Agent): string {
  const level = levelName(agent)
  if (!level) return 'not opted in'
  const p = agent.status?.shuHaRi?.promotionProgress
  if (!p?.nextLevel) return level === 'Ri' ? 'highest level' : 'not evaluated yet'
  const next = LEVEL_NAMES[p.nextLevel]
  if (promotionAwaitingApproval(agent)) return `to ${next}: awaits approval (${p.approvals ?? 0}/${p.approvalsRequired ?? 0})`
  const criteria = criteriaRows(agent)
  const met = criteria.filter((c) => c.met).length
  return `to ${next}: ${met} of ${criteria.length} criteria met`
}

interface Criterion { name: string; value: string; required: string; met: boolean }

function criteriaRows(agent: Agent): Criterion[] {
  const p = agent.status?.shuHaRi?.promotionProgress
  if (!p) return []
  const rows: Criterion[] = [
    { name: 'Actions completed', value: String(p.actionsCompleted ?? 0), required: String(p.actionsRequired ?? 0), met: (p.actionsCompleted ?? 0) >= (p.actionsRequired ?? 0) },
    { name: 'Success rate', value: p.successRate === undefined ? 'no results yet' : percent(p.successRate), required: percent(p.successRateRequired ?? 0), met: p.successRate !== undefined && p.successRate >= (p.successRateRequired ?? 0) },
    { name: 'Days in level', value: String(p.daysInLevel ?? 0), required: String(p.daysRequired ?? 0), met: (p.daysInLevel ?? 0) >= (p.daysRequired ?? 0) },
    { name: 'Incident-free streak', value: String(p.incidentFreeStreak ?? 0), required: String(p.streakRequired ?? 0), met: (p.incidentFreeStreak ?? 0) >= (p.streakRequired ?? 0) },
  ]
  if ((p.approvalsRequired ?? 0) > 0) {
    rows.push({ name: 'Approvals', value: String(p.approvals ?? 0), required: String(p.approvalsRequired), met: (p.approvals ?? 0) >= (p.approvalsRequired ?? 0) })
  }
  return rows
}

function lastPromotion(agent: Agent): string | undefined {
  return agent.spec.shuHaRi?.promotedAt
}

function agentRow(agent: Agent, now: Date): Html {
  const m = agent.status?.metrics ?? {}
  const ns = agent.metadata.namespace ?? ''
  return html`<tr>
<td>${objectLink('/agents', ns, agent.metadata.name)}</td>
<td>${ns}</td>
<td>${phaseBadge(agent.status?.phase)}</td>
<td>${levelName(agent) ?? html`<span class="muted">—</span>`}</td>
<td>${agent.spec.autonomyLevel ?? html`<span class="muted">supervised (default)</span>`}</td>
<td class="num">${m.totalInvocations ?? 0}</td>
<td class="num">${percent(m.successRate) || html`<span class="muted">—</span>`}</td>
<td>${budgetText(agent)}</td>
<td>${promotionSummary(agent)}</td>
<td>${timeTag(lastPromotion(agent), now)}</td>
</tr>`
}

/** GET /agents. */
export async function agentsPage(req: ConsoleRequest): Promise<PageResult> {
  const visible = await listVisible(req, () => req.kube.listAllAgents(), (ns) => req.kube.listAgents(ns))
  const agents = [...visible.items].sort((a, b) => (a.metadata.namespace ?? '').localeCompare(b.metadata.namespace ?? '') || (a.metadata.name ?? '').localeCompare(b.metadata.name ?? ''))
  const table = agents.length > 0
    ? scrollTable('Agents', ['Name', 'Namespace', 'Phase', 'Level', 'Autonomy', { text: 'Runs', num: true }, { text: 'Success rate', num: true }, 'Cost and budget', 'Promotion', 'Last promotion'], agents.map((a) => agentRow(a, req.now)))
    : html`<p class="empty">No agents to show.</p>`
  return { status: 200, title: 'Agents', nav: 'agents', body: join([html`<h1>Agents</h1>`, visibilityNote(visible, 'Agents'), table], '\n') }
}

function eventsSection(events: CoreV1Event[] | 'forbidden', now: Date): Html {
  if (events === 'forbidden') return html`<p class="note" role="note">You may not read this Agent's Events.</p>`
  if (events.length === 0) return html`<p class="empty">No Events recorded (Kubernetes keeps them for about an hour).</p>`
  const newest = [...events].reverse()
  return scrollTable('Events', ['When', 'Type', 'Reason', 'Message'], newest.map((e) => {
    const when = e.eventTime ?? e.lastTimestamp ?? e.firstTimestamp ?? e.metadata?.creationTimestamp
    const iso = when === undefined ? undefined : when instanceof Date ? when.toISOString() : String(when)
    return html`<tr><td>${timeTag(iso, now)}</td><td>${e.type ?? ''}</td><td>${e.reason ?? ''}</td><td>${e.message ?? ''}</td></tr>`
  }))
}

/** GET /agents/:ns/:name. */
export async function agentPage(req: ConsoleRequest, namespace: string, name: string): Promise<PageResult> {
  const agent = await req.kube.getAgent(namespace, name)
  if (!agent) return notFoundPage(`Agent ${namespace}/${name}`)
  const events = await req.kube.listEvents(namespace, { kind: 'Agent', name }).catch((err: unknown) => {
    if (err instanceof ForbiddenError) return 'forbidden' as const
    throw err
  })
  const status = agent.status ?? {}
  const m = status.metrics ?? {}
  const shuHaRi = status.shuHaRi
  const now = req.now

  const awaiting = promotionAwaitingApproval(agent)
  let approve: Html = html``
  if (awaiting) {
    const [allowed] = await allowedActions(req, [{ kind: 'promote', namespace, agent: name, level: awaiting }])
    const p = shuHaRi?.promotionProgress
    const why = html`<p>The promotion to ${LEVEL_NAMES[awaiting]} meets its criteria and waits for approval (${p?.approvals ?? 0} of ${p?.approvalsRequired ?? 0} given).</p>`
    approve = allowed
      ? html`${why}${actionForm({ path: `/actions/agents/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}/approve-promotion`, label: `Approve promotion to ${LEVEL_NAMES[awaiting]}`, reason: true, extra: { level: awaiting }, confirm: `Approve the promotion of ${name} to ${LEVEL_NAMES[awaiting]}?` })}`
      : html`${why}<p class="muted">You may not approve it${req.config.actions ? '' : ': this console is read only'}.</p>`
  }

  const criteria = criteriaRows(agent)
  const progress = criteria.length > 0
    ? scrollTable('Promotion criteria', ['Criterion', 'Now', 'Required', 'Met'], criteria.map((c) =>
      html`<tr><td>${c.name}</td><td class="num">${c.value}</td><td class="num">${c.required}</td><td>${c.met ? phaseBadge('Succeeded', 'met') : phaseBadge('Pending', 'not yet')}</td></tr>`))
    : html`<p class="empty">${promotionSummary(agent)}.</p>`
  const approvals = shuHaRi?.approvals ?? []
  const approvalList = approvals.length > 0
    ? html`<h3>Approvals recorded</h3><ul>${join(approvals.map((a) => html`<li>${LEVEL_NAMES[a.level]}: ${a.value ?? ''} ${timeTag(a.approvedAt, now)}</li>`))}</ul>`
    : html``

  const body = html`<h1>Agent ${name}</h1>
<dl class="facts">
<dt>Namespace</dt><dd>${namespace}</dd>
<dt>Phase</dt><dd>${phaseBadge(status.phase)}${status.message ? html` <span class="muted">${status.message}</span>` : ''}</dd>
<dt>Model</dt><dd>${agent.spec.model.provider} / ${agent.spec.model.name}</dd>
<dt>Level</dt><dd>${levelName(agent) ?? 'not opted in to Shu-Ha-Ri'}${shuHaRi?.levelSince ? html` since ${timeTag(shuHaRi.levelSince, now)}` : ''}</dd>
<dt>Autonomy</dt><dd>${agent.spec.autonomyLevel ?? 'supervised (default)'}</dd>
<dt>Last promotion</dt><dd>${timeTag(lastPromotion(agent), now) }${lastPromotion(agent) ? '' : 'none'}</dd>
${shuHaRi?.policy ? html`<dt>Policy</dt><dd>${shuHaRi.policy}</dd>` : ''}
</dl>
<section aria-labelledby="metrics-heading"><h2 id="metrics-heading">Metrics</h2>
<dl class="facts">
<dt>Runs</dt><dd>${m.totalInvocations ?? 0} (${m.successCount ?? 0} succeeded, ${m.failureCount ?? 0} failed)</dd>
<dt>Success rate</dt><dd>${percent(m.successRate) || '—'}</dd>
<dt>Failures in a row</dt><dd>${m.consecutiveFailures ?? 0}</dd>
<dt>Tokens used</dt><dd>${m.totalTokensUsed ?? 0}</dd>
<dt>Average latency</dt><dd>${m.averageLatencyMs === undefined ? '—' : `${m.averageLatencyMs} ms`}</dd>
<dt>Cost and budget</dt><dd>${budgetText(agent)}${m.costResetTime ? html` <span class="muted">since reset ${timeTag(m.costResetTime, now)}</span>` : ''}</dd>
<dt>Last run</dt><dd>${timeTag(m.lastInvocationTime, now)}${m.lastInvocationTime ? '' : 'never'}</dd>
</dl></section>
<section aria-labelledby="promotion-heading"><h2 id="promotion-heading">Promotion${shuHaRi?.promotionProgress?.nextLevel ? html` to ${LEVEL_NAMES[shuHaRi.promotionProgress.nextLevel]}` : ''}</h2>
${approve}
${progress}
${approvalList}
</section>
<section aria-labelledby="conditions-heading"><h2 id="conditions-heading">Conditions</h2>${conditionsTable(status.conditions, (iso) => timeTag(iso, now))}</section>
<section aria-labelledby="events-heading"><h2 id="events-heading">History (Events)</h2>${eventsSection(events, now)}</section>`
  return { status: 200, title: `Agent ${name}`, nav: 'agents', body }
}
