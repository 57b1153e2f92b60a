import { existsSync, mkdtempSync, readFileSync } from 'node:fs'
import { parseAllDocuments } from 'yaml'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { KubeObject } from '../../local/knative/kube-http.js'
import { startLocalPlane, type LocalPlane } from '../../local/plane.js'
import { runSpanId, runTraceId, stepSpanId } from '../../shared/telemetry/ids.js'
import { revisionSpanId, revisionTraceId } from '../../shared/telemetry/recipe-spans.js'
import { eventually } from '../support/eventually.js'
import { attr, eventAt, orphansIn, OTELCOL_BIN, startCollector, type RunningCollector } from '../support/otel-collector.js'

/**
 * A run with a tool call, a retried step and an approval on the embedded plane, its functions and
 * executors exporting to a real OpenTelemetry Collector (npm run otelcol:build) on 127.0.0.1,
 * then the bundled WorkflowRecipe's first revision; the span trees are read back from the
 * collector's own file output.
 */

const ROOT = join(import.meta.dirname, '../..')
const NS = 'ai-agents'
const WF_PATH = `/apis/purko.io/v1alpha1/namespaces/${NS}/workflows/traced`
const REGISTRY_PATH = `/api/v1/namespaces/${NS}/configmaps/mcp-servers`

type Step = { name: string; phase?: string; jobName?: string; retryCount?: number; error?: string }
type Wf = KubeObject & { status?: { phase?: string; runId?: string; stepStatuses?: Step[] } }

let collector: RunningCollector | undefined
let plane: LocalPlane | undefined
let final: Wf
let recipeUid = ''
const jobNames = new Map<string, string[]>()
const spans = () => collector!.spans()

const agent = (name: string, extra: Record<string, unknown> = {}) => ({
  apiVersion: 'purko.io/v1alpha1', kind: 'Agent', metadata: { name, namespace: NS },
  spec: { type: 'executor', autonomyLevel: 'supervised', model: { provider: 'offline', name: 'demo' }, guardrails: { maxIterations: 3 }, ...extra },
})

describe.skipIf(!existsSync(OTELCOL_BIN))('traces of a run in a real OpenTelemetry Collector (npm run otelcol:build)', () => {
  beforeAll(async () => {
    const scratch = mkdtempSync(join(tmpdir(), 'kinetic-otel-plane-'))
    collector = await startCollector()
    plane = await startLocalPlane({
      root: ROOT, kubeconfigPath: join(scratch, 'kubeconfig'), logDir: join(scratch, 'logs'), pingIntervalMs: 5000,
      functionEnv: { OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf' },
    })
    await eventually('the recipes server in the mcp-servers registry', async () => {
      const cm = await plane!.kube.get(REGISTRY_PATH)
      return String((cm?.data as Record<string, string> | undefined)?.servers ?? '').includes('"recipes"')
    }, 120_000)
    await plane.kube.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } })
    await plane.kube.apply(agent('tooler', { tools: [{ name: 'recipes', type: 'mcp' }] }))
    await plane.kube.apply(agent('breaker', { runtime: { config: { OFFLINE_FAIL: 'the model is overloaded' } } }))
    await plane.kube.apply(agent('approver', { guardrails: { maxIterations: 2, humanApprovalRequired: true } }))
    for (const name of ['tooler', 'breaker', 'approver']) {
      await eventually(`Agent ${name} ready`, async () => ((await plane!.kube.get(`/apis/purko.io/v1alpha1/namespaces/${NS}/agents/${name}`))?.status as { serviceAccountName?: string } | undefined)?.serviceAccountName, 60_000)
    }
    await plane.kube.apply({
      apiVersion: 'purko.io/v1alpha1', kind: 'Workflow', metadata: { name: 'traced', namespace: NS },
      spec: {
        failureStrategy: 'continueOnError',
        steps: [
          { name: 'lookup', agentRef: { name: 'tooler' }, input: { task: 'List the templates.', mcp: { server: 'recipes', tool: 'list-recipes', arguments: { namespace: NS, kind: 'templates' } } } },
          { name: 'flaky', agentRef: { name: 'breaker' }, retryPolicy: { maxRetries: 1, backoffSeconds: 2 }, input: { task: 'Try once more.' } },
          { name: 'publish', agentRef: { name: 'approver' }, dependsOn: ['lookup'], input: { task: 'Publish.' } },
        ],
      },
    })
    final = await eventually('the traced run to end', async () => {
      const wf = (await plane!.kube.get(WF_PATH)) as Wf
      for (const s of wf.status?.stepStatuses ?? []) {
        if (s.jobName && !(jobNames.get(s.name) ?? []).includes(s.jobName)) jobNames.set(s.name, [...(jobNames.get(s.name) ?? []), s.jobName])
      }
      const waiting = wf.status?.stepStatuses?.find((s) => s.name === 'publish' && s.error?.startsWith('Waiting for human approval'))
      if (waiting && wf.metadata?.annotations?.['purko.io/approve-publish'] !== 'true') {
        await plane!.kube.mergePatch(WF_PATH, { metadata: { annotations: { 'purko.io/approve-publish': 'true' } } })
      }
      return ['Succeeded', 'Failed', 'CompletedWithErrors'].includes(wf.status?.phase ?? '') ? wf : undefined
    }, 150_000, 100)
    // The root span is written with the final status; the executors' and functions' spans before it.
    const traceId = runTraceId(final.status?.runId ?? '')
    await eventually('the run root span at the collector', () => spans().some((s) => s.traceId === traceId && !s.parentSpanId), 30_000)

    const recipeDocs = parseAllDocuments(readFileSync(join(ROOT, 'examples', 'local', '30-recipe.yaml'), 'utf8')).map((d) => d.toJSON() as KubeObject)
    for (const obj of recipeDocs) await plane.kube.apply(obj)
    const recipe = await eventually('the shop recipe to settle', async () => {
      const r = await plane!.kube.get(`/apis/purko.io/v1alpha1/namespaces/${NS}/workflowrecipes/shop`)
      return ['Active', 'Failed', 'RollbackFailed'].includes(String((r?.status as { phase?: string } | undefined)?.phase)) ? r : undefined
    }, 150_000)
    recipeUid = recipe?.metadata?.uid ?? ''
    await eventually('the revision span at the collector', () => spans().some((s) => s.spanId === revisionSpanId(recipeUid, 1)), 30_000)
  }, 420_000)

  afterAll(async () => {
    await plane?.stop()
    collector?.stop()
  }, 30_000)

  const runSpans = () => spans().filter((s) => s.traceId === runTraceId(final.status?.runId ?? ''))
  const named = (name: string) => runSpans().filter((s) => s.name === name)

  it('writes one root span for the run, with its outcome, and every other span of the trace hangs below a span of the same trace', () => {
    const runId = final.status?.runId ?? ''
    const roots = runSpans().filter((s) => !s.parentSpanId)
    expect(roots.map((s) => s.name)).toEqual(['run traced'])
    const [root] = roots
    expect(root!.spanId).toBe(runSpanId(runId))
    expect(attr(root!, 'kinetic.run.phase')).toBe(final.status?.phase)
    expect(attr(root!, 'kinetic.run.id')).toBe(runId)
    expect(orphansIn(runSpans())).toEqual([])
  })

  it('writes a span per step attempt under the root: the failed first attempt of the retried step, then its second', () => {
    const root = runSpanId(final.status?.runId ?? '')
    const flaky = named('step flaky').sort((a, b) => Number(attr(a, 'kinetic.step.attempt')) - Number(attr(b, 'kinetic.step.attempt')))
    expect(flaky.map((s) => [attr(s, 'kinetic.step.attempt'), attr(s, 'kinetic.step.phase'), s.status?.code])).toEqual([[0, 'Retrying', 2], [1, 'Failed', 2]])
    expect(flaky.map((s) => s.spanId)).toEqual((jobNames.get('flaky') ?? []).map(stepSpanId))
    for (const s of [...flaky, ...named('step lookup'), ...named('step publish')]) expect(s.parentSpanId).toBe(root)
    expect(named('step lookup').map((s) => attr(s, 'kinetic.step.phase'))).toEqual(['Succeeded'])
    expect(named('step publish').map((s) => attr(s, 'kinetic.step.phase'))).toEqual(['Succeeded'])
    // The pod's start comes from its container status, between the Job's creation and the end.
    const lookup = named('step lookup')[0]!
    expect(lookup.events?.map((e) => e.name)).toEqual(['queued', 'job.created', 'pod.started', 'finished'])
    expect(eventAt(lookup, 'pod.started')!).toBeGreaterThanOrEqual(eventAt(lookup, 'job.created')!)
    expect(eventAt(lookup, 'pod.started')!).toBeLessThanOrEqual(eventAt(lookup, 'finished')!)
  })

  it('writes the retry\'s backoff as a span from the failed attempt\'s end until the retry was due, before the retry\'s Job', () => {
    const [first, second] = named('step flaky').sort((a, b) => Number(attr(a, 'kinetic.step.attempt')) - Number(attr(b, 'kinetic.step.attempt')))
    const backoff = named('backoff flaky')
    expect(backoff.map((s) => attr(s, 'kinetic.step.attempt'))).toEqual([1])
    // At least the policy's 2 s, and the span is exactly as long as the wait it names.
    const seconds = Number(attr(backoff[0]!, 'kinetic.step.backoff.seconds'))
    expect(seconds).toBeGreaterThanOrEqual(2)
    expect(Number(BigInt(backoff[0]!.endTimeUnixNano) - BigInt(backoff[0]!.startTimeUnixNano)) / 1e9).toBeCloseTo(seconds, 3)
    expect(backoff[0]!.parentSpanId).toBe(runSpanId(final.status?.runId ?? ''))
    expect(backoff[0]!.startTimeUnixNano).toBe(first!.endTimeUnixNano)
    expect(BigInt(backoff[0]!.endTimeUnixNano)).toBeLessThanOrEqual(BigInt(second!.startTimeUnixNano))
  })

  it('writes the wait for approval as its own span, ending when the approved step starts', () => {
    const [wait] = named('approval publish')
    const [publish] = named('step publish')
    expect(wait?.parentSpanId).toBe(runSpanId(final.status?.runId ?? ''))
    expect(attr(wait!, 'kinetic.approval.outcome')).toBe('approved')
    expect(BigInt(wait!.endTimeUnixNano)).toBeLessThanOrEqual(BigInt(publish!.startTimeUnixNano))
    expect(BigInt(wait!.endTimeUnixNano)).toBeGreaterThan(BigInt(wait!.startTimeUnixNano))
  })

  it('has the executor\'s GenAI spans under the step attempt that ran them: the agent, its model calls and its MCP tool call', () => {
    const [lookup] = named('step lookup')
    const agentSpans = runSpans().filter((s) => s.name === 'invoke_agent lookup')
    expect(agentSpans).toHaveLength(1)
    expect(agentSpans[0]!.parentSpanId).toBe(lookup!.spanId)
    expect(agentSpans[0]!.service).toBe('kinetic-executor')
    const chats = runSpans().filter((s) => s.parentSpanId === agentSpans[0]!.spanId && s.name === 'chat demo')
    expect(chats.length).toBeGreaterThanOrEqual(1)
    for (const chat of chats) {
      expect(attr(chat, 'gen_ai.operation.name')).toBe('chat')
      expect(attr(chat, 'gen_ai.provider.name')).toBe('offline')
      expect(attr(chat, 'gen_ai.request.model')).toBe('demo')
      expect(Number(attr(chat, 'gen_ai.usage.input_tokens'))).toBeGreaterThan(0)
      expect(Number(attr(chat, 'gen_ai.usage.output_tokens'))).toBeGreaterThan(0)
      expect(attr(chat, 'gen_ai.response.finish_reasons')).toEqual([expect.any(String)])
      // Content capture is off: no prompt or answer leaves the executor.
      expect(attr(chat, 'gen_ai.input.messages')).toBeUndefined()
      expect(attr(chat, 'gen_ai.output.messages')).toBeUndefined()
    }
    const tools = runSpans().filter((s) => s.parentSpanId === agentSpans[0]!.spanId && s.name === 'execute_tool list-recipes')
    expect(tools.map((t) => [attr(t, 'gen_ai.tool.name'), attr(t, 'kinetic.mcp.server'), attr(t, 'kinetic.tool.status')])).toEqual([['list-recipes', 'recipes', 'ok']])
    expect(attr(tools[0]!, 'gen_ai.tool.call.arguments')).toBeUndefined()
    const failing = runSpans().filter((s) => s.name === 'invoke_agent flaky')
    expect(failing).toHaveLength(2)
    expect(failing.every((s) => s.status?.code === 2)).toBe(true)
    expect(failing.map((s) => s.parentSpanId).sort()).toEqual((jobNames.get('flaky') ?? []).map(stepSpanId).sort())
  })

  it('puts the function work that advanced the run in its trace, below the step it advanced, naming the CloudEvent', () => {
    const stepIds = new Set(runSpans().filter((s) => s.name.startsWith('step ')).map((s) => s.spanId))
    const finished = runSpans().filter((s) => s.name.startsWith('step-job-finished '))
    expect(finished.length).toBeGreaterThan(0)
    for (const s of finished) {
      expect(stepIds.has(s.parentSpanId ?? '') || s.parentSpanId === runSpanId(final.status?.runId ?? '')).toBe(true)
      expect(attr(s, 'faas.name')).toBe('step-job-finished')
      expect(String(attr(s, 'cloudevents.event_id'))).not.toBe('')
      expect(Number(attr(s, 'kinetic.api_calls'))).toBeGreaterThan(0)
    }
    // The approval: the function that started the approved step names it.
    const [publish] = named('step publish')
    expect(runSpans().filter((s) => s.parentSpanId === publish!.spanId && attr(s, 'faas.name') !== undefined).length).toBeGreaterThan(0)
  })

  it('writes a recipe revision deploy as a trace of its own: the deploy, a span per wave with its workloads below, and one per test', () => {
    const revision = spans().filter((s) => s.traceId === revisionTraceId(recipeUid, 1))
    const [root] = revision.filter((s) => !s.parentSpanId)
    expect(root?.name).toBe('recipe deploy shop r1')
    expect(attr(root!, 'kinetic.recipe.revision.state')).toBe('Active')
    const children = revision.filter((s) => s.parentSpanId === root!.spanId)
    // web depends on db: two waves, one after the other, each the parent of its workload.
    const waves = children.filter((s) => s.name.startsWith('recipe wave ')).sort((a, b) => Number(attr(a, 'kinetic.recipe.wave')) - Number(attr(b, 'kinetic.recipe.wave')))
    expect(waves.map((s) => [s.name, attr(s, 'kinetic.recipe.wave.workloads'), s.status?.code ?? 0])).toEqual([['recipe wave 0', ['db'], 0], ['recipe wave 1', ['web'], 0]])
    expect(BigInt(waves[1]!.startTimeUnixNano)).toBeGreaterThanOrEqual(BigInt(waves[0]!.endTimeUnixNano))
    const workloads = revision.filter((s) => s.name.startsWith('recipe workload '))
    expect(workloads.map((s) => [s.name, attr(s, 'kinetic.workload.phase'), s.parentSpanId]).sort()).toEqual([
      ['recipe workload db', 'Ready', waves[0]!.spanId], ['recipe workload web', 'Ready', waves[1]!.spanId],
    ])
    expect(children.filter((s) => s.name.startsWith('recipe test ')).map((s) => [s.name, attr(s, 'kinetic.test.phase')])).toEqual([['recipe test smoke', 'Succeeded']])
  })
})
