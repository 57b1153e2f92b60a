import { describe, expect, it } from 'vitest'
import { functionSpan } from '../../shared/telemetry/function-span.js'
import { runSpanId, runTraceId, stepSpanId } from '../../shared/telemetry/ids.js'

const INCOMING = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'
const event = { id: 'ce-1', type: 'dev.knative.apiserver.resource.update', source: 'apiserver', subject: '/apis/batch/v1/namespaces/ns/jobs/j', time: '2026-01-01T00:00:00.000Z' }
const START = Date.parse('2026-01-01T00:00:00.250Z')

describe('the span of a handled CloudEvent', () => {
  it('joins the run it advanced, below the step it advanced, and links the event\'s own trace', () => {
    const span = functionSpan('step-job-finished', { ...event, traceparent: INCOMING }, 202, { advanced: [{ runId: 'r1', jobName: 'wf-s1-r1' }], apiCalls: 4 }, START, START + 30)
    expect(span).toMatchObject({
      traceId: runTraceId('r1'), parentSpanId: stepSpanId('wf-s1-r1'), kind: 'consumer',
      attributes: { 'faas.name': 'step-job-finished', 'cloudevents.event_id': 'ce-1', 'kinetic.api_calls': 4, 'kinetic.event.lag_ms': 250, 'http.response.status_code': 202 },
      links: [{ traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', attributes: { 'kinetic.link': 'cloudevent' } }],
    })
    expect(span.error).toBeUndefined()
  })

  it('hangs below the run root when it advanced the run but started or ended no step', () => {
    const span = functionSpan('workflow-changed', event, 202, { advanced: [{ runId: 'r1' }], apiCalls: 1 }, START, START + 1)
    expect(span.parentSpanId).toBe(runSpanId('r1'))
  })

  it('continues the event\'s trace when it advanced no run', () => {
    const span = functionSpan('agent-changed', { ...event, traceparent: INCOMING }, 202, { advanced: [], apiCalls: 0 }, START, START + 1)
    expect(span).toMatchObject({ traceId: '0af7651916cd43dd8448eb211c80319c', parentSpanId: 'b7ad6b7169203331' })
  })

  it('starts a new trace for a malformed traceparent rather than failing', () => {
    const span = functionSpan('agent-changed', { ...event, traceparent: '00-zz-yy-01' }, 202, { advanced: [], apiCalls: 0 }, START, START + 1)
    expect(span.traceId).toMatch(/^[0-9a-f]{32}$/)
    expect(span.parentSpanId).toBeUndefined()
  })

  it('marks an answer the Broker retries as an error', () => {
    expect(functionSpan('workflow-changed', event, 503, { advanced: [], apiCalls: 2 }, START, START + 1).error).toBe('answered 503')
  })
})
