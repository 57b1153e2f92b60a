import { describe, expect, it } from 'vitest'
import { agentPage, agentsPage } from '../../../shared/console/pages/agents.js'
import { ForbiddenError } from '../../../shared/core/errors.js'
import type { Agent } from '../../../shared/schemas/agent.js'
import { EmbeddedKube } from '../../support/embedded-kube.js'
import { autonomousAgent, metricsOf } from '../../fixtures/autonomy.js'
import { ALICE, requestFor, rowsOf, textOf } from './support.js'

/** An agent at shu whose criteria for ha are all met, waiting for `required` approvals (`given` recorded). */
function awaitingApproval(name: string, given = 0, required = 2): Agent {
  const agent = autonomousAgent(name, { namespace: 'team-a', level: 'shu', metrics: metricsOf(60, 1, { successRate: 0.98, totalCostUSD: 1.2 }) })
  agent.spec.guardrails = { costLimitUSD: 5 }
  agent.status!.shuHaRi = {
    ...agent.status!.shuHaRi,
    readyForPromotion: true,
    promotionProgress: {
      nextLevel: 'ha', actionsCompleted: 61, actionsRequired: 50, successRate: 0.98, successRateRequired: 0.95,
      daysInLevel: 30, daysRequired: 14, incidentFreeStreak: 60, streakRequired: 20, approvals: given, approvalsRequired: required,
    },
  }
  agent.status!.conditions = [{ type: 'ShuHaRiProgression', status: 'True', reason: 'AwaitingApproval', message: `Ready for ha: approvals ${given}/${required}`, lastTransitionTime: '2026-12-01T10:00:00Z' }]
  return agent
}

describe('the agents list', () => {
  it('shows level, autonomy, runs, success rate, budget use and promotion progress of each agent', async () => {
    const learner = autonomousAgent('learner', { namespace: 'team-a', level: 'shu', metrics: metricsOf(12, 0, { successRate: 1, totalCostUSD: 0.5 }) })
    learner.status!.shuHaRi!.promotionProgress = {
      nextLevel: 'ha', actionsCompleted: 12, actionsRequired: 50, successRate: 1, successRateRequired: 0.95,
      daysInLevel: 3, daysRequired: 14, incidentFreeStreak: 12, streakRequired: 20, approvals: 0, approvalsRequired: 0,
    }
    const master = autonomousAgent('master', { namespace: 'team-b', level: 'ri', metrics: metricsOf(400, 4, { successRate: 0.99, totalCostUSD: 12.345 }) })
    master.spec.guardrails = { costLimitUSD: 50 }
    const plain = autonomousAgent('plain', { namespace: 'team-a', optedIn: false, autonomyLevel: 'manual' })
    const kube = new EmbeddedKube({ agents: [master, learner, plain, awaitingApproval('ready', 1)], identities: false })
    const page = await agentsPage(requestFor(kube, '/agents'))
    expect(page.nav).toBe('agents')
    const rows = rowsOf(page.body, 'Agents')
    expect(rows.map((r) => r[0])).toEqual(['learner', 'plain', 'ready', 'master'])
    expect(rows[0]!.slice(3)).toEqual(['Shu', 'restricted', '12', '100%', '$0.50, no limit', 'to Ha: 1 of 4 criteria met', '334 d ago'])
    expect(rows[1]!.slice(3, 9)).toEqual(['—', 'manual', '0', '—', '$0.00, no limit', 'not opted in'])
    expect(rows[2]!.slice(7, 9)).toEqual(['$1.20 of $5.00 (24%)', 'to Ha: awaits approval (1/2)'])
    expect(rows[3]!.slice(3, 9)).toEqual(['Ri', 'full', '404', '99%', '$12.35 of $50.00 (24.7%)', 'highest level'])
    expect(page.body.html).toContain('href="/agents/team-a/learner"')
  })

  it('falls back to the configured namespaces when agents across namespaces are refused', async () => {
    const kube = new EmbeddedKube({ agents: [awaitingApproval('a'), { ...awaitingApproval('elsewhere'), metadata: { name: 'elsewhere', namespace: 'other' } }], identities: false })
    kube.failNext('listAllAgents', new ForbiddenError('cannot list resource "agents"'))
    const page = await agentsPage(requestFor(kube, '/agents'))
    expect(rowsOf(page.body, 'Agents').map((r) => r[0])).toEqual(['a'])
    expect(textOf(page.body)).toContain('You may not list Agents across all namespaces')
  })
})

describe('one agent', () => {
  it('shows the promotion criteria, recorded approvals, conditions and Events, newest Event first', async () => {
    const agent = awaitingApproval('ready', 1)
    agent.status!.shuHaRi!.approvals = [{ level: 'ha', value: 'ha by bob', approvedAt: '2026-12-01T11:00:00Z' }]
    const kube = new EmbeddedKube({ agents: [agent], identities: false })
    const involved = { kind: 'Agent', name: 'ready', namespace: 'team-a' }
    kube.putEvents(
      { metadata: { name: 'e1', namespace: 'team-a' }, involvedObject: involved, type: 'Normal', reason: 'PromotionApproved', message: 'bob approved the promotion to ha', lastTimestamp: new Date('2026-12-01T11:00:00Z') },
      { metadata: { name: 'e2', namespace: 'team-a' }, involvedObject: involved, type: 'Warning', reason: 'AutonomyTightened', message: '<b>looser</b> than allowed', lastTimestamp: new Date('2026-12-01T11:30:00Z') },
    )
    const page = await agentPage(requestFor(kube, '/agents/team-a/ready'), 'team-a', 'ready')
    expect(page.status).toBe(200)
    expect(page.title).toBe('Agent ready')
    expect(rowsOf(page.body, 'Promotion criteria')).toEqual([
      ['Actions completed', '61', '50', 'met'],
      ['Success rate', '98%', '95%', 'met'],
      ['Days in level', '30', '14', 'met'],
      ['Incident-free streak', '60', '20', 'met'],
      ['Approvals', '1', '2', 'not yet'],
    ])
    const text = textOf(page.body)
    expect(text).toContain('Ha: ha by bob 1 h ago')
    expect(text).toContain('$1.20 of $5.00 (24%)')
    expect(rowsOf(page.body, 'Events').map((r) => r.slice(1))).toEqual([
      ['Warning', 'AutonomyTightened', '<b>looser</b> than allowed'],
      ['Normal', 'PromotionApproved', 'bob approved the promotion to ha'],
    ])
    expect(page.body.html).not.toContain('<b>looser')
    expect(rowsOf(page.body, 'Conditions')[0]!.slice(0, 3)).toEqual(['ShuHaRiProgression', 'True', 'AwaitingApproval'])
  })

  it('offers the approve-promotion button only to someone run-control would let approve, on a console with actions', async () => {
    const kube = new EmbeddedKube({ agents: [awaitingApproval('ready', 1)], identities: false })
    kube.identity = { username: 'alice', groups: ['team-a'] }
    const readOnly = await agentPage(requestFor(kube, '/agents/team-a/ready'), 'team-a', 'ready')
    expect(readOnly.body.html).not.toContain('data-action-form')
    expect(textOf(readOnly.body)).toContain('You may not approve it: this console is read only.')

    const notAllowed = await agentPage(requestFor(kube, '/agents/team-a/ready', { config: { actions: true } }), 'team-a', 'ready')
    expect(notAllowed.body.html).not.toContain('data-action-form')
    expect(textOf(notAllowed.body)).toContain('You may not approve it.')

    kube.allow('alice', 'approve', 'agents', 'team-a', 'ready')
    const allowed = await agentPage(requestFor(kube, '/agents/team-a/ready', { person: ALICE, config: { actions: true } }), 'team-a', 'ready')
    const html = allowed.body.html
    expect(html).toContain('action="/actions/agents/team-a/ready/approve-promotion"')
    expect(html).toContain(`data-extra="${'{&quot;level&quot;:&quot;ha&quot;}'}"`)
    expect(textOf(allowed.body)).toContain('The promotion to Ha meets its criteria and waits for approval (1 of 2 given). Reason (optional) Approve promotion to Ha')
  })

  it('offers no approval when the criteria are not met yet, or when no approval is required', async () => {
    const notReady = awaitingApproval('not-ready', 0)
    notReady.status!.shuHaRi!.readyForPromotion = false
    notReady.status!.conditions = [{ type: 'ShuHaRiProgression', status: 'False', reason: 'CriteriaNotMet', message: 'For ha: actions 3/50', lastTransitionTime: '2026-12-01T10:00:00Z' }]
    const noApprovals = awaitingApproval('auto', 0, 0)
    const kube = new EmbeddedKube({ agents: [notReady, noApprovals], identities: false })
    for (const name of ['not-ready', 'auto']) {
      const page = await agentPage(requestFor(kube, `/agents/team-a/${name}`, { person: { ...ALICE, mode: 'local' }, config: { actions: true } }), 'team-a', name)
      expect(page.body.html).not.toContain('approve-promotion')
    }
  })

  it('is a 404 page for an agent that is not there, and says when its Events may not be read', async () => {
    const kube = new EmbeddedKube({ agents: [awaitingApproval('ready')], identities: false })
    const missing = await agentPage(requestFor(kube), 'team-a', 'nobody')
    expect(missing.status).toBe(404)
    expect(textOf(missing.body)).toContain('Agent team-a/nobody was not found, or you may not see it.')
    kube.failNext('listEvents', new ForbiddenError('cannot list resource "events"'))
    const page = await agentPage(requestFor(kube), 'team-a', 'ready')
    expect(textOf(page.body)).toContain("You may not read this Agent's Events.")
  })
})
