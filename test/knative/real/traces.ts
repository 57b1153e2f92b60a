// A run's trace on real Knative, on the install of kinetic.ts: tracing turned on the documented
// way (the kinetic-telemetry ConfigMap every function's Service reads, docs/guide/traces-and-metrics.md),
// an OpenTelemetry Collector (npm run otelcol:build) on this machine at the node's address, and a
// run with a retried step and an approval. The functions run as Knative Services, their events
// come through the real ApiServerSource, Broker and Triggers, and the executors run in step pods
// the real kubelet started: the trace must still be one tree.
import { expect, it } from 'vitest'
import type { KubeObject } from '../../../local/knative/kube-http.js'
import { runSpanId, runTraceId, stepSpanId } from '../../../shared/telemetry/ids.js'
import { eventually } from '../../support/eventually.js'
import { attr, eventAt, orphansIn, startCollector } from '../../support/otel-collector.js'
import type { KineticTier } from './kinetic.js'

// The agent namespace the platform step opted in (a new namespace would need its RoleBindings first).
const NS = 'ai-agents'
const SYSTEM = 'kinetic-system'
const WF_PATH = `/apis/purko.io/v1alpha1/namespaces/${NS}/workflows/traced`

type Step = { name: string; phase?: string; jobName?: string; error?: string }
type Wf = KubeObject & { status?: { phase?: string; runId?: string; stepStatuses?: Step[] } }
interface Pod { metadata: { name: string } }

const agent = (name: string, extra: Record<string, unknown> = {}): KubeObject => ({
  apiVersion: 'purko.io/v1alpha1', kind: 'Agent', metadata: { name, namespace: NS },
  spec: { type: 'executor', autonomyLevel: 'supervised', model: { provider: 'offline', name: 'demo' }, guardrails: { maxIterations: 2 }, ...extra },
})

/** Registers the test; `tier()` is called once it runs (after Kinetic's install test). */
export function tracesOnKinetic(tier: () => KineticTier): void {
  it('traces a run on real Knative as one tree: functions as Knative Services and executors in step pods export to a collector turned on by one ConfigMap', async () => {
    const { admin } = tier()
    const nodes = await admin.get<{ items: Array<{ status: { addresses: Array<{ type: string; address: string }> } }> }>('/api/v1/nodes')
    const nodeIp = nodes!.items[0]!.status.addresses.find((a) => a.type === 'InternalIP')!.address
    // Pods reach this machine at the node's address, so the collector listens there.
    const collector = await startCollector(nodeIp)
    const podsPath = `/api/v1/namespaces/${SYSTEM}/pods?labelSelector=${encodeURIComponent('serving.knative.dev/service')}`
    try {
      await admin.apply({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'kinetic-telemetry', namespace: SYSTEM }, data: { OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint } }, SYSTEM)
      // As the guide says: running function pods read the ConfigMap when they start, so they go.
      const before = ((await admin.get<{ items: Pod[] }>(podsPath))?.items ?? []).map((p) => p.metadata.name)
      for (const name of before) await admin.request('DELETE', `/api/v1/namespaces/${SYSTEM}/pods/${name}`).catch(() => undefined)
      await eventually('the function pods that started before the ConfigMap gone', async () => {
        const now = ((await admin.get<{ items: Pod[] }>(podsPath))?.items ?? []).map((p) => p.metadata.name)
        return !now.some((n) => before.includes(n))
      }, 180_000, 2000)

      await admin.apply(agent('trace-breaker', { runtime: { config: { OFFLINE_FAIL: 'the model is overloaded' } } }), NS)
      await admin.apply(agent('trace-approver', { guardrails: { maxIterations: 2, humanApprovalRequired: true } }), NS)
      for (const name of ['trace-breaker', 'trace-approver']) {
        await eventually(`Agent ${name} ready`, async () => ((await admin.get(`/apis/purko.io/v1alpha1/namespaces/${NS}/agents/${name}`))?.status as { serviceAccountName?: string } | undefined)?.serviceAccountName, 120_000, 1000)
      }
      await admin.apply({
        apiVersion: 'purko.io/v1alpha1', kind: 'Workflow', metadata: { name: 'traced', namespace: NS },
        spec: {
          failureStrategy: 'continueOnError',
          steps: [
            { name: 'flaky', agentRef: { name: 'trace-breaker' }, retryPolicy: { maxRetries: 1, backoffSeconds: 2 }, input: { task: 'Try once more.' } },
            { name: 'publish', agentRef: { name: 'trace-approver' }, input: { task: 'Publish.' } },
          ],
        },
      }, NS)
      const jobNames = new Map<string, string[]>()
      const final = await eventually('the traced run to end', async () => {
        const wf = (await admin.get<Wf>(WF_PATH))!
        for (const s of wf.status?.stepStatuses ?? []) {
          if (s.jobName && !(jobNames.get(s.name) ?? []).includes(s.jobName)) jobNames.set(s.name, [...(jobNames.get(s.name) ?? []), s.jobName])
        }
        const waiting = wf.status?.stepStatuses?.find((s) => s.name === 'publish' && s.error?.startsWith('Waiting for human approval'))
        if (waiting && wf.metadata?.annotations?.['purko.io/approve-publish'] !== 'true') {
          await admin.request('PATCH', WF_PATH, { metadata: { annotations: { 'purko.io/approve-publish': 'true' } } }, 'application/merge-patch+json')
        }
        return ['Succeeded', 'Failed', 'CompletedWithErrors'].includes(wf.status?.phase ?? '') ? wf : undefined
      }, 600_000, 1000)
      const runId = final.status?.runId ?? ''
      const root = runSpanId(runId)
      const trace = () => collector.spans().filter((s) => s.traceId === runTraceId(runId))
      // Every attempt's executor span, and the root written with the final status.
      const attempts = [...jobNames.values()].flat()
      await eventually('the run\'s spans at the collector', () => trace().some((s) => s.spanId === root)
        && attempts.every((job) => trace().some((s) => s.parentSpanId === stepSpanId(job) && s.service === 'kinetic-executor')), 60_000, 1000)
      const spans = trace()
      const named = (name: string) => spans.filter((s) => s.name === name)
      console.log(`kinetic: the traced run on Knative: ${spans.length} spans from ${[...new Set(spans.map((s) => s.service))].sort().join(', ')}`)

      expect(spans.filter((s) => !s.parentSpanId).map((s) => s.name)).toEqual(['run traced'])
      expect(orphansIn(spans)).toEqual([])
      const flaky = named('step flaky').sort((a, b) => Number(attr(a, 'kinetic.step.attempt')) - Number(attr(b, 'kinetic.step.attempt')))
      expect(flaky.map((s) => [attr(s, 'kinetic.step.attempt'), attr(s, 'kinetic.step.phase')])).toEqual([[0, 'Retrying'], [1, 'Failed']])
      expect(named('step publish').map((s) => attr(s, 'kinetic.step.phase'))).toEqual(['Succeeded'])
      // The real kubelet's container start, between the Job's creation and the attempt's end.
      for (const s of [...flaky, ...named('step publish')]) {
        expect(s.parentSpanId).toBe(root)
        expect(eventAt(s, 'pod.started'), s.name).toBeDefined()
        expect(eventAt(s, 'pod.started')!).toBeGreaterThanOrEqual(eventAt(s, 'job.created')!)
        expect(eventAt(s, 'pod.started')!).toBeLessThanOrEqual(eventAt(s, 'finished')!)
      }
      expect(named('backoff flaky').map((s) => [s.parentSpanId, attr(s, 'kinetic.step.attempt')])).toEqual([[root, 1]])
      expect(named('approval publish').map((s) => s.parentSpanId)).toEqual([root])
      // Each step pod's executor exported its agent span below its own attempt.
      for (const job of attempts) {
        expect(spans.filter((s) => s.parentSpanId === stepSpanId(job) && s.name.startsWith('invoke_agent ')).map((s) => s.service), job).toEqual(['kinetic-executor'])
      }
      // The function work that ended each attempt, handling an event the real Broker delivered.
      const finished = spans.filter((s) => attr(s, 'faas.name') === 'step-job-finished' && attempts.map(stepSpanId).includes(s.parentSpanId ?? ''))
      expect(finished.length).toBeGreaterThan(0)
      for (const s of finished) {
        expect(String(attr(s, 'cloudevents.event_id'))).not.toBe('')
        expect(s.service).toBe('step-job-finished')
      }
    } finally {
      await admin.request('DELETE', `/api/v1/namespaces/${SYSTEM}/configmaps/kinetic-telemetry`).catch(() => undefined)
      collector.stop()
    }
  }, 1_200_000)
}
