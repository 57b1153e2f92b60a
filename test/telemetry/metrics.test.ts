import { CloudEvent, HTTP } from 'cloudevents'
import { describe, expect, it } from 'vitest'
import { createApp as deadLetterApp } from '../../functions/dead-letter/index.js'
import { baseApp } from '../../shared/http/app.js'
import { createLogger } from '../../shared/log.js'
import { TransientError } from '../../shared/core/errors.js'
import { Histogram } from '../../shared/telemetry/metrics.js'
import { recordQueueDepth, recordRunProgress } from '../../shared/telemetry/run-progress.js'
import { recordModelUsage } from '../../shared/telemetry/usage-metrics.js'
import { usageFrom } from '../../shared/agent/plan/metrics.js'
import { aStep, aWorkflow } from '../fixtures/workflows.js'

const log = createLogger('metrics-test', 'silent')
const post = (type: string, time?: string) => {
  const m = HTTP.binary(new CloudEvent({ id: 'e1', type, source: 'test', data: {}, ...(time ? { time } : {}) }))
  return { method: 'POST', headers: m.headers as Record<string, string>, body: m.body as string }
}
const metricsOf = async (app: { request: (p: string) => Response | Promise<Response> }) => (await (await app.request('/metrics')).text())

/** The value of one series in a Prometheus text exposition; 0 when it is absent. */
function sample(text: string, series: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `))
  return line ? Number(line.slice(series.length + 1)) : 0
}

describe('the dashboard metrics on GET /metrics', () => {
  it('render a histogram with cumulative buckets, a sum and a count', () => {
    const h = new Histogram('x_seconds', 'x', [1, 5])
    h.observe({ phase: 'Succeeded' }, 0.5)
    h.observe({ phase: 'Succeeded' }, 3)
    expect(h.render()).toEqual([
      '# HELP x_seconds x', '# TYPE x_seconds histogram',
      'x_seconds_bucket{phase="Succeeded",le="1"} 1', 'x_seconds_bucket{phase="Succeeded",le="5"} 2', 'x_seconds_bucket{phase="Succeeded",le="+Inf"} 2',
      'x_seconds_sum{phase="Succeeded"} 3.5', 'x_seconds_count{phase="Succeeded"} 2',
    ])
  })

  it('count event lag from the event time, and the answers the Broker redelivers', async () => {
    const app = baseApp(log.child({ function: 'lagging' }))
    app.post('/', () => { throw new TransientError('API down') })
    const res = await app.request('/', post('dev.example.retry', new Date(Date.now() - 2000).toISOString()))
    expect(res.status).toBe(503)
    const text = await metricsOf(app)
    expect(text).toContain('kinetic_event_redeliveries_requested_total{status="503",type="dev.example.retry"} 1')
    const lag = Number(/kinetic_event_lag_seconds_sum\{type="dev.example.retry"\} (\S+)/.exec(text)?.[1])
    expect(lag).toBeGreaterThanOrEqual(2)
    expect(lag).toBeLessThan(30)
  })

  it('count dead letters by event type', async () => {
    const app = deadLetterApp({ log })
    expect((await app.request('/', post('dev.example.lost'))).status).toBe(202)
    expect(await metricsOf(app)).toContain('kinetic_dead_letters_total{type="dev.example.lost"} 1')
  })

  it('observe run and step durations when the status write that ends them lands, and the template queue', async () => {
    // The metrics are the process's: other tests in this worker may have observed durations too.
    const before = await metricsOf(baseApp(log))
    const wf = aWorkflow({ spec: { steps: [aStep('plan')] }, status: { phase: 'Running', runId: 'r1', startTime: '2026-01-01T00:00:00Z', stepStatuses: [{ name: 'plan', phase: 'Running', jobName: 'j1', startTime: '2026-01-01T00:00:01Z' }] } })
    recordRunProgress(wf, {
      phase: 'Succeeded', runId: 'r1', startTime: '2026-01-01T00:00:00Z', completionTime: '2026-01-01T00:01:00Z',
      stepStatuses: [{ name: 'plan', phase: 'Succeeded', jobName: 'j1', startTime: '2026-01-01T00:00:01Z', completionTime: '2026-01-01T00:00:41Z' }],
    }, { started: [] }, '2026-01-01T00:01:00Z')
    recordQueueDepth('ai-agents', 'nightly', 3)
    const text = await metricsOf(baseApp(log))
    expect(sample(text, 'kinetic_step_duration_seconds_sum{phase="Succeeded"}') - sample(before, 'kinetic_step_duration_seconds_sum{phase="Succeeded"}')).toBe(40)
    expect(sample(text, 'kinetic_run_duration_seconds_sum{phase="Succeeded"}') - sample(before, 'kinetic_run_duration_seconds_sum{phase="Succeeded"}')).toBe(60)
    expect(sample(text, 'kinetic_step_duration_seconds_count{phase="Succeeded"}') - sample(before, 'kinetic_step_duration_seconds_count{phase="Succeeded"}')).toBe(1)
    expect(text).toContain('kinetic_runs_queued{namespace="ai-agents",template="nightly"} 3')
  })

  it('count tokens in and out and cost per agent and model from what the executor reported', async () => {
    const usage = usageFrom({ _metrics: { tokens_in: 120, tokens_out: 30, cost_usd: 0.002, model: 'gpt-4o' } })
    expect(usage).toEqual({ tokens: 150, costUSD: 0.002, model: 'gpt-4o', tokensIn: 120, tokensOut: 30 })
    recordModelUsage('ai-agents', 'researcher', { key: 'k', ok: true, tokens: usage.tokens, costUSD: usage.costUSD, latencyMs: 1, model: 'gpt-4o', tokensIn: 120, tokensOut: 30 })
    const text = await metricsOf(baseApp(log))
    expect(text).toContain('kinetic_gen_ai_tokens_total{agent="researcher",model="gpt-4o",namespace="ai-agents",type="input"} 120')
    expect(text).toContain('kinetic_gen_ai_tokens_total{agent="researcher",model="gpt-4o",namespace="ai-agents",type="output"} 30')
    expect(text).toContain('kinetic_gen_ai_cost_usd_total{agent="researcher",model="gpt-4o",namespace="ai-agents"} 0.002')
  })
})
