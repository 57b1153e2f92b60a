import { describe, expect, it } from 'vitest'
import { recordAttempts, usageFrom, usageFromJson, type AttemptRecord } from '../../shared/agent/plan/metrics.js'
import { AgentMetricsSchema, MAX_RECORDED_ATTEMPTS, type AgentMetrics } from '../../shared/schemas/agent.js'

const NOW = '2026-01-01T00:10:00.000Z'

const anAttempt = (key: string, overrides: Partial<AttemptRecord> = {}): AttemptRecord =>
  ({ key, ok: true, tokens: 0, costUSD: 0, latencyMs: 1000, ...overrides })
const okAt = (n: number, latencyMs = 1000) => anAttempt(`uid/run/s/${n}`, { latencyMs })
const failAt = (n: number) => anAttempt(`uid/run/s/${n}`, { ok: false })

describe('recordAttempts', () => {
  it('counts a first success in every counter and derives the rates', () => {
    const metrics = recordAttempts(undefined, [anAttempt('uid/run/s1/0', { tokens: 120, costUSD: 0.25, latencyMs: 4200 })], NOW)
    expect(metrics).toEqual({
      totalInvocations: 1, successCount: 1, failureCount: 0, consecutiveFailures: 0, consecutiveSuccesses: 1,
      totalTokensUsed: 120, totalCostUSD: 0.25, totalLatencyMs: 4200, averageLatencyMs: 4200,
      lastInvocationTime: NOW, successRate: 1, recordedAttempts: ['uid/run/s1/0'],
    })
    expect(AgentMetricsSchema.safeParse(metrics).success).toBe(true)
  })

  it('returns null when every attempt was already counted, so a redelivery writes nothing', () => {
    const once = recordAttempts(undefined, [okAt(0), failAt(1)], NOW)!
    expect(recordAttempts(once, [okAt(0), failAt(1)], NOW)).toBeNull()
    expect(recordAttempts(once, [], NOW)).toBeNull()
  })

  it('counts only the new attempts of a batch that mixes old and new, and a key twice in one batch once', () => {
    const once = recordAttempts(undefined, [okAt(0)], NOW)!
    const next = recordAttempts(once, [okAt(0), okAt(1), okAt(1)], NOW)!
    expect(next.totalInvocations).toBe(2)
    expect(next.recordedAttempts).toEqual(['uid/run/s/0', 'uid/run/s/1'])
  })

  it('tracks streaks: a failure ends the success streak and the other way round', () => {
    let m = recordAttempts(undefined, [okAt(0), okAt(1), failAt(2), failAt(3)], NOW)!
    expect(m).toMatchObject({ consecutiveFailures: 2, consecutiveSuccesses: 0, successCount: 2, failureCount: 2, successRate: 0.5 })
    m = recordAttempts(m, [okAt(4)], NOW)!
    expect(m).toMatchObject({ consecutiveFailures: 0, consecutiveSuccesses: 1, successRate: 0.6 })
  })

  it('keeps an exact mean latency where purko\'s truncating running average would stick', () => {
    // purko: avg + (latency - avg) / n with integer division never moves for deviations smaller than n.
    let m: AgentMetrics | null = recordAttempts(undefined, [okAt(0, 100)], NOW)
    for (let i = 1; i <= 1000; i++) m = recordAttempts(m!, [okAt(i, 101)], NOW)
    expect(m!.averageLatencyMs).toBe(Math.round((100 + 1000 * 101) / 1001))
    expect(m!.averageLatencyMs).toBe(101)
  })

  it('continues the mean of metrics that carry only averageLatencyMs (purko\'s or an older Kinetic\'s)', () => {
    const m = recordAttempts({ totalInvocations: 3, averageLatencyMs: 2000 }, [okAt(0, 6000)], NOW)!
    expect(m).toMatchObject({ totalLatencyMs: 12000, averageLatencyMs: 3000, totalInvocations: 4 })
  })

  it('adds costs without floating-point tails', () => {
    const m = recordAttempts(undefined, [anAttempt('a', { costUSD: 0.1 }), anAttempt('b', { costUSD: 0.2 })], NOW)!
    expect(m.totalCostUSD).toBe(0.3)
  })

  it('keeps the fields other writers own, such as the cost reset time and unknown ones', () => {
    const before = { totalInvocations: 5, totalCostUSD: 0, costResetTime: '2026-01-01T00:00:00.000Z', somethingElse: 'kept' } as AgentMetrics
    expect(recordAttempts(before, [anAttempt('k', { costUSD: 1 })], NOW)).toMatchObject({
      totalInvocations: 6, totalCostUSD: 1, costResetTime: '2026-01-01T00:00:00.000Z', somethingElse: 'kept',
    })
  })

  it(`remembers only the newest ${MAX_RECORDED_ATTEMPTS} attempt keys`, () => {
    let m: AgentMetrics | null = null
    for (let i = 0; i < MAX_RECORDED_ATTEMPTS + 10; i += 2) m = recordAttempts(m ?? undefined, [okAt(i), okAt(i + 1)], NOW)
    expect(m!.recordedAttempts).toHaveLength(MAX_RECORDED_ATTEMPTS)
    expect(m!.recordedAttempts!.at(-1)).toBe(`uid/run/s/${MAX_RECORDED_ATTEMPTS + 9}`)
    expect(m!.recordedAttempts![0]).toBe('uid/run/s/10')
    expect(m!.totalInvocations).toBe(MAX_RECORDED_ATTEMPTS + 10)
    expect(AgentMetricsSchema.safeParse(m).success).toBe(true)
  })
})

describe('usageFrom', () => {
  it.each<[string, unknown, { tokens: number; costUSD: number }]>([
    ['the executor\'s _metrics', { response: 'x', _metrics: { tokens_in: 10, tokens_out: 5, cost_usd: 0.02 } }, { tokens: 15, costUSD: 0.02 }],
    ['no _metrics', { response: 'x' }, { tokens: 0, costUSD: 0 }],
    ['fractional or negative tokens (ignored, the cost still counts)', { _metrics: { tokens_in: 1.5, tokens_out: -3, cost_usd: 1 } }, { tokens: 0, costUSD: 1 }],
    ['a cost that is not a number', { _metrics: { tokens_in: 2, tokens_out: 2, cost_usd: '1' } }, { tokens: 4, costUSD: 0 }],
    ['an output that is not an object', [1, 2], { tokens: 0, costUSD: 0 }],
  ])('reads %s', (_, output, usage) => {
    expect(usageFrom(output)).toEqual(usage)
  })

  it('reads JSON text and treats unparsable text as no usage', () => {
    expect(usageFromJson('{"_metrics":{"tokens_in":1,"tokens_out":1,"cost_usd":0}}')).toEqual({ tokens: 2, costUSD: 0 })
    expect(usageFromJson('not json')).toEqual({ tokens: 0, costUSD: 0 })
  })
})
