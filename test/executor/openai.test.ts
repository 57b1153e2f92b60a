import { describe, expect, it } from 'vitest'
import { startFakeApi, type FakeApi } from './fixtures/http-fake.js'
import { startMcpServer, type TestMcpServer } from './fixtures/mcp-server.js'
import { closedAfterEach, recordingRetry, runWithEnv } from './fixtures/run-helpers.js'

const track = closedAfterEach()
let api: FakeApi | undefined
let mcp: TestMcpServer | undefined

const completion = (message: Record<string, unknown>, usage = { prompt_tokens: 100, completion_tokens: 20 }) => ({
  json: { id: 'c1', choices: [{ index: 0, message: { role: 'assistant', ...message }, finish_reason: 'stop' }], usage },
})

const base = (url: string): Record<string, string> => ({
  STEP_NAME: 'inspect',
  WORKFLOW_NAME: 'ops',
  STEP_INPUT: '{"task":"check the prod pods"}',
  MODEL_PROVIDER: 'ollama',
  MODEL_NAME: 'qwen3:8b',
  MODEL_ENDPOINT: `${url}/v1`,
  MODEL_API_KEY: 'sk-test-secret-0123456789',
  MODEL_PRICE_IN: '1.5',
  MODEL_PRICE_OUT: '6',
})

describe('OpenAI-compatible provider', () => {
  it('round-trips a tool call through a real MCP server and merges the JSON answer', async () => {
    mcp = track(await startMcpServer())
    api = track(await startFakeApi([
      completion({
        content: null,
        tool_calls: [{ id: 'call_a', type: 'function', function: { name: 'list_pods', arguments: '{"namespace":"prod"}' } }],
      }),
      completion({ content: '{"response":"2 pods running","podCount":2,"healthy":true}' }, { prompt_tokens: 150, completion_tokens: 30 }),
    ]))
    const run = await runWithEnv({ ...base(api.url), MCP_SERVERS: JSON.stringify([{ name: 'cluster', url: mcp.url }]) })

    expect(run.exitCode).toBe(0)
    expect(mcp.calls).toEqual([{ name: 'list_pods', args: { namespace: 'prod' } }])
    const [first, second] = api.received
    expect(first?.url).toBe('/v1/chat/completions')
    expect(first?.headers.authorization).toBe('Bearer sk-test-secret-0123456789')
    const firstBody = first?.body as { model: string; tools: Array<{ function: { name: string } }>; messages: Array<{ role: string; content: string }> }
    expect(firstBody.model).toBe('qwen3:8b')
    expect(firstBody.tools.map((t) => t.function.name)).toContain('list_pods')
    expect(firstBody.messages[0]).toEqual({ role: 'system', content: 'You are a helpful assistant.' })
    expect(firstBody.messages[1]?.content).toContain('check the prod pods')
    const toolMsg = (second?.body as { messages: Array<Record<string, unknown>> }).messages.at(-1)
    expect(toolMsg).toEqual({ role: 'tool', tool_call_id: 'call_a', content: 'pods in prod: api-1, api-2' })

    expect(run.output).toMatchObject({
      response: '2 pods running',
      podCount: 2,
      healthy: true,
      step: 'inspect',
      tools_called: ['list_pods'],
      tool_call_log: [{ tool: 'list_pods', server: 'cluster', input_preview: '{"namespace":"prod"}', result_bytes: 26, status: 'ok' }],
      _metrics: { tokens_in: 250, tokens_out: 50, tool_calls: 1, cost_usd: 0.000675, provider: 'openai', model: 'qwen3:8b' },
    })
  })

  it('retries a 429 with backoff and then succeeds', async () => {
    api = track(await startFakeApi([
      { status: 429, json: { error: 'slow down' }, headers: { 'retry-after': '2' } },
      { status: 503, json: { error: 'busy' } },
      completion({ content: 'all good' }),
    ]))
    const retry = recordingRetry()
    const run = await runWithEnv(base(api.url), { retry })
    expect(run.exitCode).toBe(0)
    expect(run.output.response).toBe('all good')
    expect(api.received).toHaveLength(3)
    expect(retry.delays).toEqual([2000, 1000])
  })

  it('gives up after the last attempt with a ModelError', async () => {
    api = track(await startFakeApi([{ status: 500, json: {} }]))
    const run = await runWithEnv(base(api.url), { retry: recordingRetry(3) })
    expect(run.exitCode).toBe(1)
    expect(run.output).toMatchObject({ reason: 'ModelError', error: 'Model API failed after 3 attempts: HTTP 500' })
    expect(api.received).toHaveLength(3)
  })

  it.each([
    ['a body that is not JSON', { text: '<html>oops</html>' }, 'malformed response: not JSON'],
    ['JSON without choices', { json: { id: 'x', choices: [] } }, 'malformed response: no choices[0].message'],
    [
      'tool arguments that are not an object',
      completion({ content: null, tool_calls: [{ id: 'c', type: 'function', function: { name: 'list_pods', arguments: 'nope' } }] }),
      'arguments of tool call list_pods are not a JSON object',
    ],
  ])('fails the step with ModelError on %s', async (_, reply, message) => {
    api = track(await startFakeApi([reply]))
    const run = await runWithEnv(base(api.url))
    expect(run.exitCode).toBe(1)
    expect(run.output.reason).toBe('ModelError')
    expect(String(run.output.error)).toContain(message)
  })

  it('reports rejected credentials without retrying and without printing the key', async () => {
    api = track(await startFakeApi([{ status: 401, json: { error: 'bad key sk-test-secret-0123456789' } }]))
    const run = await runWithEnv(base(api.url))
    expect(run.output).toMatchObject({
      reason: 'ModelError',
      error: 'Model API rejected credentials (HTTP 401) — check the provider API key',
    })
    expect(api.received).toHaveLength(1)
    expect(run.lines.join('')).not.toContain('sk-test-secret-0123456789')
  })

  it('sends no Authorization header to a keyless endpoint such as Ollama', async () => {
    api = track(await startFakeApi([completion({ content: 'hi' })]))
    const env = base(api.url)
    delete env.MODEL_API_KEY
    const run = await runWithEnv(env)
    expect(run.exitCode).toBe(0)
    expect(api.received[0]?.headers.authorization).toBeUndefined()
  })
})
