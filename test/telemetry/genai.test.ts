import { describe, expect, it } from 'vitest'
import { createSpanSink } from '../../shared/telemetry/exporter.js'
import { stepTracer } from '../../shared/telemetry/genai.js'
import type { SpanRecord } from '../../shared/telemetry/span.js'
import { startFakeApi, type FakeApi } from '../executor/fixtures/http-fake.js'
import { startMcpServer, type TestMcpServer } from '../executor/fixtures/mcp-server.js'
import { closedAfterEach, runWithEnv } from '../executor/fixtures/run-helpers.js'

const TP = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'
const track = closedAfterEach()
let api: FakeApi | undefined
let mcp: TestMcpServer | undefined

const completion = (message: Record<string, unknown>, finish: string, usage: { prompt_tokens: number; completion_tokens: number }) => ({
  json: { id: 'c1', choices: [{ index: 0, message: { role: 'assistant', ...message }, finish_reason: finish }], usage },
})

async function tracedRun(capture: boolean): Promise<SpanRecord[]> {
  mcp = track(await startMcpServer())
  api = track(await startFakeApi([
    completion({ content: null, tool_calls: [{ id: 'call_a', type: 'function', function: { name: 'list_pods', arguments: '{"namespace":"prod"}' } }] }, 'tool_calls', { prompt_tokens: 100, completion_tokens: 20 }),
    completion({ content: '{"response":"2 pods running"}' }, 'stop', { prompt_tokens: 150, completion_tokens: 30 }),
  ]))
  const recorded: SpanRecord[] = []
  const sink = { ...createSpanSink(true, async () => ({ ship: async () => ({ lost: 0 }) }), () => {}), record: (s: SpanRecord) => void recorded.push(s) }
  const facts = { provider: 'openai', model: 'qwen3:8b', maxTokens: 1024, temperature: 0.2, workflow: 'ops', step: 'inspect' }
  const trace = stepTracer(sink, TP, facts, capture, Date.now())
  const run = await runWithEnv({
    STEP_NAME: 'inspect', WORKFLOW_NAME: 'ops', STEP_INPUT: '{"task":"check the prod pods"}',
    MODEL_PROVIDER: 'ollama', MODEL_NAME: 'qwen3:8b', MODEL_ENDPOINT: `${api.url}/v1`, MODEL_API_KEY: 'sk-test-secret-0123456789',
    MODEL_PRICE_IN: '1.5', MODEL_PRICE_OUT: '6', MCP_SERVERS: JSON.stringify([{ name: 'cluster', url: mcp.url }]),
  }, { trace: trace! })
  expect(run.exitCode).toBe(0)
  return recorded
}

const attr = (s: SpanRecord | undefined, k: string) => s?.attributes[k]

describe('the executor\'s GenAI spans', () => {
  it('are an agent span below the attempt\'s TRACEPARENT with a span per model call and per MCP tool call, in the GenAI conventions', async () => {
    const spans = await tracedRun(false)
    const agent = spans.find((s) => s.name === 'invoke_agent inspect')
    expect(agent).toMatchObject({ traceId: '0af7651916cd43dd8448eb211c80319c', parentSpanId: 'b7ad6b7169203331' })
    expect(agent?.attributes).toMatchObject({ 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.usage.input_tokens': 250, 'gen_ai.usage.output_tokens': 50, 'kinetic.gen_ai.tool_calls': 1 })
    const chats = spans.filter((s) => s.name === 'chat qwen3:8b')
    expect(chats.map((c) => [c.parentSpanId, attr(c, 'gen_ai.usage.input_tokens'), attr(c, 'gen_ai.usage.output_tokens'), attr(c, 'gen_ai.response.finish_reasons')])).toEqual([
      [agent!.spanId, 100, 20, ['tool_calls']],
      [agent!.spanId, 150, 30, ['stop']],
    ])
    expect(attr(chats[0], 'kinetic.gen_ai.cost_usd')).toBeCloseTo((100 * 1.5 + 20 * 6) / 1e6, 12)
    expect(attr(chats[0], 'gen_ai.provider.name')).toBe('openai')
    expect(chats[0]?.kind).toBe('client')
    const [tool] = spans.filter((s) => s.name === 'execute_tool list_pods')
    expect(tool).toMatchObject({ parentSpanId: agent!.spanId, attributes: { 'gen_ai.tool.name': 'list_pods', 'gen_ai.tool.call.id': 'call_a', 'kinetic.mcp.server': 'cluster', 'mcp.method.name': 'tools/call' } })
  })

  it('leave prompts, answers and tool arguments out unless content capture is on', async () => {
    const off = await tracedRun(false)
    const keys = off.flatMap((s) => Object.entries(s.attributes).filter(([, v]) => v !== undefined).map(([k]) => k))
    expect(keys.filter((k) => /messages|arguments|result/.test(k))).toEqual([])
    expect(JSON.stringify(off)).not.toContain('check the prod pods')
    expect(JSON.stringify(off)).not.toContain('sk-test-secret')
    await api?.close()
    await mcp?.close()
    const on = await tracedRun(true)
    const chat = on.find((s) => s.name === 'chat qwen3:8b')
    expect(String(attr(chat, 'gen_ai.input.messages'))).toContain('check the prod pods')
    expect(String(attr(on.find((s) => s.name === 'execute_tool list_pods'), 'gen_ai.tool.call.arguments'))).toContain('prod')
  })

  it('scrub secret values from error messages and captured content', () => {
    const recorded: SpanRecord[] = []
    const sink = { ...createSpanSink(true, async () => ({ ship: async () => ({ lost: 0 }) }), () => {}), record: (s: SpanRecord) => void recorded.push(s) }
    const facts = { provider: 'openai', model: 'gpt-4o', maxTokens: 1, temperature: 0, workflow: 'w', step: 's' }
    const trace = stepTracer(sink, TP, facts, true, 0, (t) => t.replaceAll('sk-live-123', '[redacted]'))!
    trace.chat({ startMs: 0, endMs: 1, tokensIn: 0, tokensOut: 0, costUsd: 0, toolCalls: 0, input: 'key sk-live-123', error: 'Incorrect API key provided: sk-live-123' })
    expect(JSON.stringify(recorded)).not.toContain('sk-live-123')
    expect(recorded[0]?.error).toBe('Incorrect API key provided: [redacted]')
  })

  it('are not made for a missing or malformed TRACEPARENT', () => {
    const sink = createSpanSink(true, async () => ({ ship: async () => ({ lost: 0 }) }), () => {})
    const facts = { provider: 'offline', model: 'demo', maxTokens: 1, temperature: 0, workflow: 'w', step: 's' }
    expect(stepTracer(sink, undefined, facts, false, 0)).toBeUndefined()
    expect(stepTracer(sink, 'garbage', facts, false, 0)).toBeUndefined()
  })
})
