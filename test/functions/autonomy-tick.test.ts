import { describe, expect, it } from 'vitest'
import { createApp } from '../../functions/autonomy-tick/index.js'
import { demoteIfTriggered } from '../../shared/autonomy/controller.js'
import { ConflictError, TransientError } from '../../shared/core/errors.js'
import { EmbeddedKube } from '../support/embedded-kube.js'
import { autonomousAgent, metricsOf, policyOf, recordingEvents } from '../fixtures/autonomy.js'
import { countingKube } from '../support/counting-kube.js'
import { deliver, PING } from '../support/deliver.js'
import { testDeps } from '../support/engine-deps.js'

const ROLLBACK = { rollback: { enabled: true } }

function setup(kube: EmbeddedKube) {
  const events = recordingEvents()
  const clock = { now: new Date('2026-03-01T00:00:00Z') }
  const count = countingKube(kube)
  const deps = { ...testDeps(count.kube, clock), events }
  return { app: createApp(deps), deps, events, clock, count }
}

const agent = (kube: EmbeddedKube, name: string, ns = 'team') => kube.agents.get(`${ns}/${name}`)!

describe('autonomy-tick', () => {
  it('at idle costs one LIST of policies plus one LIST of Agents per namespace that has a policy, and writes nothing', async () => {
    const kube = new EmbeddedKube({
      policies: [policyOf('default', 'team'), policyOf('strict', 'team', {}, '2026-02-01T00:00:00Z'), policyOf('default', 'ops')],
      agents: [autonomousAgent('a'), autonomousAgent('b', { metrics: metricsOf(5) }), autonomousAgent('c', { namespace: 'ops' }), autonomousAgent('d', { namespace: 'no-policy' })],
    })
    const { app, count } = setup(kube)
    expect((await deliver(app, PING, { reason: 'autonomy' })).status).toBe(202) // the first tick settles statuses
    expect(kube.child('PingSource', 'kinetic-system', 'autonomy-alarm')).toBeDefined() // and looks again in 5 minutes
    expect((await deliver(app, PING, { reason: 'autonomy' })).status).toBe(202) // nothing changed: the alarm goes
    expect(kube.child('PingSource', 'kinetic-system', 'autonomy-alarm')).toBeUndefined()
    const settled = kube.writes.length
    count.reset()

    expect((await deliver(app, PING, { reason: 'autonomy' })).status).toBe(202)

    expect(Object.fromEntries(count.calls)).toEqual({ getChild: 1, listAutonomyPolicies: 1, listAgents: 2 })
    expect(kube.writes.slice(settled)).toEqual([])
  })

  it('promotes an agent that meets shu -> ha: spec patch, status, an Event naming the criteria, a CloudEvent', async () => {
    const kube = new EmbeddedKube({ policies: [policyOf('default')], agents: [autonomousAgent('helper', { metrics: metricsOf(100) })] })
    const { app, events } = setup(kube)

    await deliver(app, PING, {})

    expect(kube.writes).toEqual(['patch Agent/helper', 'status Agent/helper', 'status AgentAutonomyPolicy/default', 'create PingSource/autonomy-alarm'])
    const stored = agent(kube, 'helper')
    expect(stored.spec.shuHaRi).toEqual({ level: 'ha', promotedAt: '2026-03-01T00:00:00.000Z' })
    expect(stored.spec.autonomyLevel).toBe('supervised')
    expect(stored.status?.shuHaRi).toMatchObject({ currentLevel: 'ha', levelSince: '2026-03-01T00:00:00.000Z', levelStart: { invocations: 100 } })
    expect(stored.status?.conditions?.find((c) => c.type === 'ShuHaRiProgression')).toMatchObject({ status: 'True', reason: 'Promoted' })
    const [event] = kube.events.filter((e) => e.reason === 'Promoted')
    expect(event?.involvedObject).toMatchObject({ kind: 'Agent', name: 'helper', namespace: 'team' })
    expect(event?.message).toMatch(/actions 100 \(required 100\), success rate 1 \(required 0.95\), days in level 59 \(required 14\), incident-free streak 100 \(required 0\), approvals 0 \(required 0\)/)
    const promoted = events.published.filter((e) => e.type === 'dev.kinetic.agent.promoted')
    expect(promoted).toHaveLength(1)
    expect(promoted[0]?.subject).toBe('/apis/purko.io/v1alpha1/namespaces/team/agents/helper')
    expect(promoted[0]?.data).toMatchObject({ from: 'shu', to: 'ha', criteria: { actionsCompleted: 100, successRate: 1, daysInLevel: 59 } })
    // The metrics did not change: the next tick finds nothing, and the alarm goes.
    const writes = kube.writes.length
    await deliver(app, PING, {})
    expect(kube.writes.slice(writes)).toEqual(['delete PingSource/autonomy-alarm'])
  })

  it('promotes on its first tick an agent whose record predates the policy, measured from its creation', async () => {
    const veteran = autonomousAgent('veteran', { metrics: metricsOf(60), settled: false })
    veteran.spec.shuHaRi = {} // opted in, never changed level
    const policy = policyOf('default', 'team', { shuHaRi: { progressionCriteria: { shuToHa: { minimumActionsCompleted: 50, minimumSuccessRate: 0.95, minimumDaysInLevel: 0 } } } }, '2026-02-28T00:00:00Z')
    const kube = new EmbeddedKube({ policies: [policy], agents: [veteran] })
    const { app, events } = setup(kube)

    await deliver(app, PING, {})

    const stored = agent(kube, 'veteran')
    expect(stored.spec.shuHaRi?.level).toBe('ha')
    expect(stored.spec.autonomyLevel).toBe('supervised')
    expect(events.published.filter((e) => e.type === 'dev.kinetic.agent.promoted').map((e) => e.data)).toEqual([
      expect.objectContaining({ from: 'shu', to: 'ha', criteria: expect.objectContaining({ actionsCompleted: 60, successRate: 1, daysInLevel: 90 }) }),
    ])
  })

  it('writes policy status: the chosen one Ready/Applied with agentsEvaluated, the other NotSelected, once', async () => {
    const kube = new EmbeddedKube({
      policies: [policyOf('old', 'team', {}, '2025-01-01T00:00:00Z'), policyOf('newer', 'team', {}, '2026-02-01T00:00:00Z')],
      agents: [autonomousAgent('a'), autonomousAgent('b'), autonomousAgent('off', { optedIn: false })],
    })
    const { app } = setup(kube)
    await deliver(app, PING, {})

    expect(kube.policies.get('team/old')?.status).toMatchObject({ observedGeneration: 1, agentsEvaluated: 2, conditions: [{ type: 'Ready', status: 'True', reason: 'Applied' }] })
    expect(kube.policies.get('team/newer')?.status).toMatchObject({ agentsEvaluated: 0, conditions: [{ type: 'Ready', status: 'False', reason: 'NotSelected' }] })
    // The agent that did not opt in is never written.
    expect(kube.writes.filter((w) => w.endsWith('/off'))).toEqual([])
    await deliver(app, PING, {})
    expect(kube.writes.filter((w) => w.includes('AgentAutonomyPolicy'))).toHaveLength(2)
  })

  it('applies a policy whose criteria make no sense, and flags it with a Warning condition', async () => {
    const kube = new EmbeddedKube({
      policies: [policyOf('default', 'team', { shuHaRi: { progressionCriteria: { shuToHa: { minimumSuccessRate: 0 } } }, rollback: { enabled: true } })],
      agents: [autonomousAgent('a', { metrics: metricsOf(100) })],
    })
    const { app } = setup(kube)
    expect((await deliver(app, PING, {})).status).toBe(202)
    const warning = kube.policies.get('team/default')?.status?.conditions?.find((c) => c.type === 'Warning')
    expect(warning).toMatchObject({ status: 'True', reason: 'InconsistentCriteria', message: expect.stringContaining('successRateBelow 0.9 is not below shuToHa.minimumSuccessRate 0') })
    expect(agent(kube, 'a').spec.shuHaRi?.level).toBe('ha')
  })

  it('answers 400 to a request that is not a CloudEvent, and 503 when it cannot list policies', async () => {
    const kube = new EmbeddedKube({ policies: [policyOf('default')] })
    const { app } = setup(kube)
    expect((await app.request('/', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).status).toBe(400)
    kube.failNext('listAutonomyPolicies', new TransientError('connection refused'))
    expect((await deliver(app, PING, {})).status).toBe(503)
  })

  it("keeps going when one agent's write fails or one namespace cannot be listed", async () => {
    const kube = new EmbeddedKube({
      policies: [policyOf('default', 'team'), policyOf('default', 'ops')],
      agents: [autonomousAgent('a', { metrics: metricsOf(100) }), autonomousAgent('b', { metrics: metricsOf(100) }), autonomousAgent('c', { namespace: 'ops', metrics: metricsOf(100) })],
    }).failNext('patchAgent', new TransientError('timeout'))
    const { app } = setup(kube)
    const levels = () => ['team/a', 'team/b', 'ops/c'].map((k) => kube.agents.get(k)?.spec.shuHaRi?.level)
    expect((await deliver(app, PING, {})).status).toBe(202)
    expect(levels().filter((l) => l === 'ha')).toHaveLength(2)

    kube.failNext('listAgents', new TransientError('timeout'))
    expect((await deliver(app, PING, {})).status).toBe(202)
    await deliver(app, PING, {}) // the next tick catches up
    expect(levels()).toEqual(['ha', 'ha', 'ha'])
  })

  it('retries a lost race from a fresh read and never promotes twice', async () => {
    const kube = new EmbeddedKube({ policies: [policyOf('default')], agents: [autonomousAgent('helper', { metrics: metricsOf(100) })] })
      .failNext('replaceAgentStatus', new ConflictError('the object has been modified'))
    const { app } = setup(kube)
    await deliver(app, PING, {})
    await deliver(app, PING, {})
    expect(agent(kube, 'helper').status?.shuHaRi?.currentLevel).toBe('ha')
    expect(kube.writes.filter((w) => w === 'patch Agent/helper')).toHaveLength(1)
    // The promotion is announced once, by the attempt that completed it.
    expect(kube.events.filter((e) => e.reason === 'Promoted' || e.reason === 'LevelAdopted').map((e) => e.reason)).toEqual(['Promoted'])
  })
})

describe('the immediate rollback path (demoteIfTriggered)', () => {
  it('demotes an agent at ri on the metrics update that crosses a trigger, with one LIST of policies', async () => {
    const kube = new EmbeddedKube({ policies: [policyOf('default', 'team', ROLLBACK)], agents: [autonomousAgent('risky', { level: 'ri', metrics: metricsOf(7, 3, { consecutiveSuccesses: 0, consecutiveFailures: 3 }) })] })
    const { deps, events, count } = setup(kube)
    await demoteIfTriggered(deps, agent(kube, 'risky'))
    expect(agent(kube, 'risky').spec).toMatchObject({ autonomyLevel: 'restricted', shuHaRi: { level: 'shu' } })
    expect(count.calls.get('listAutonomyPolicies')).toBe(1)
    expect(count.calls.get('getAgent') ?? 0).toBe(0)
    expect(events.published.map((e) => e.type)).toContain('dev.kinetic.agent.demoted')
    expect(kube.events.find((e) => e.reason === 'Demoted')?.message).toContain('3 consecutive failures (threshold 3)')
  })

  it.each([
    ['an agent that did not opt in', autonomousAgent('x', { level: 'ri', optedIn: false, metrics: metricsOf(0, 5, { consecutiveFailures: 5 }) }), 0],
    ['an agent already at shu', autonomousAgent('x', { metrics: metricsOf(0, 5, { consecutiveFailures: 5 }) }), 0],
    ['no trigger crossed', autonomousAgent('x', { level: 'ri', metrics: metricsOf(20, 1, { consecutiveFailures: 1 }) }), 1],
  ])('costs at most the policy LIST and writes nothing for %s', async (_, a, lists) => {
    const kube = new EmbeddedKube({ policies: [policyOf('default', 'team', ROLLBACK)], agents: [a] })
    const { deps, count } = setup(kube)
    await demoteIfTriggered(deps, agent(kube, 'x'))
    expect(count.calls.get('listAutonomyPolicies') ?? 0).toBe(lists)
    expect(kube.writes).toEqual([])
  })

  it('re-reads after a conflict, and gives up quietly when the races go on (the tick catches it)', async () => {
    const risky = () => autonomousAgent('risky', { level: 'ri', metrics: metricsOf(7, 3, { consecutiveFailures: 3 }) })
    const once = new EmbeddedKube({ policies: [policyOf('default', 'team', ROLLBACK)], agents: [risky()] }).failNext('patchAgent', new ConflictError('modified'))
    await demoteIfTriggered(setup(once).deps, agent(once, 'risky'))
    expect(agent(once, 'risky').spec.shuHaRi?.level).toBe('shu')

    const always = new EmbeddedKube({ policies: [policyOf('default', 'team', ROLLBACK)], agents: [risky()] })
    for (let i = 0; i < 10; i++) always.failNext('patchAgent', new ConflictError('modified'))
    await expect(demoteIfTriggered(setup(always).deps, agent(always, 'risky'))).resolves.toBeUndefined()
    expect(agent(always, 'risky').spec.shuHaRi?.level).toBe('ri')
    always.failNext('listAutonomyPolicies', new TransientError('down'))
    await expect(demoteIfTriggered(setup(always).deps, agent(always, 'risky'))).resolves.toBeUndefined()
  })
})
