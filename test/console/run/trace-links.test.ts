import { describe, expect, it } from 'vitest'
import { consoleConfig } from '../../../shared/console/auth/config.js'
import { runPage, stepPage } from '../../../shared/console/run/run-page.js'
import { currentRunId } from '../../../shared/workflow/plan/run-status.js'
import { runSpanId, runTraceId, stepSpanId } from '../../../shared/telemetry/ids.js'
import { EmbeddedKube } from '../../support/embedded-kube.js'
import { aStep, aWorkflow, NAMESPACE } from '../../fixtures/workflows.js'
import { requestFor } from '../pages/support.js'

const TEMPLATE = 'https://jaeger.example/trace/{traceId}?uiFind={spanId}'

function aRun() {
  const wf = aWorkflow({ spec: { steps: [aStep('build')] } })
  wf.status = { phase: 'Running', runId: currentRunId(wf), startTime: '2026-12-01T11:50:00Z', stepStatuses: [{ name: 'build', phase: 'Running', jobName: 'wf-build-1', startTime: '2026-12-01T11:50:00Z' }] }
  return wf
}

describe('links from the console to the trace UI', () => {
  it('link the run to its root span and a step to its attempt span when KINETIC_TRACE_URL_TEMPLATE is set', async () => {
    const wf = aRun()
    const runId = wf.status!.runId!
    const kube = new EmbeddedKube({ workflows: [wf] })
    const config = { traceUrlTemplate: TEMPLATE }
    const run = (await runPage(requestFor(kube, '/workflows/ai-agents/wf', { config }), NAMESPACE, 'wf')).body.html
    expect(run).toContain(`href="https://jaeger.example/trace/${runTraceId(runId)}?uiFind=${runSpanId(runId)}"`)
    const step = (await stepPage(requestFor(kube, '/workflows/ai-agents/wf/steps/build', { config }), NAMESPACE, 'wf', 'build')).body.html
    expect(step).toContain(`href="https://jaeger.example/trace/${runTraceId(runId)}?uiFind=${stepSpanId('wf-build-1')}"`)
  })

  it('show no trace link without a template', async () => {
    const kube = new EmbeddedKube({ workflows: [aRun()] })
    const run = (await runPage(requestFor(kube, '/workflows/ai-agents/wf'), NAMESPACE, 'wf')).body.html
    expect(run).not.toContain('trace-link')
  })

  it.each([
    ['javascript:alert(1)/{traceId}', 'must be an http(s) URL'],
    ['https://jaeger.example/search', 'must contain {traceId}'],
  ])('refuse the template %s: %s', (template, problem) => {
    expect(() => consoleConfig({ KINETIC_TRACE_URL_TEMPLATE: template })).toThrow(problem)
  })
})
