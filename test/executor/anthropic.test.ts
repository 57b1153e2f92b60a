import { describe, expect, it } from 'vitest'
import { startFakeApi, type FakeApi } from './fixtures/http-fake.js'
import { startMcpServer, type TestMcpServer } from './fixtures/mcp-server.js'
import { closedAfterEach, runWithEnv } from './fixtures/run-helpers.js'

const track = closedAfterEach()
let api: FakeApi | undefined
let mcp: TestMcpServer | undefined

const message = (content: unknown[], usage = { input_tokens: 80, output_tokens: 12 }) => ({
  json: { id: 'msg_1', type: 'message', role: 'assistant', content, stop_reason: 'end_turn', usage },
})

describe('Anthropic Messages provider', () => {
  it('round-trips a tool_use block through a real MCP server', async () => {
    mcp = track(await startMcpServer())
    api = track(await startFakeApi([
      message([
        { type: 'text', text: 'Let me look.' },
        { type: 'tool_use', id: 'toolu_1', name: 'get_status', input: {} },
      ]),
      message([{ type: 'text', text: '**Severity**: High\nThe cluster is healthy but noisy.' }], { input_tokens: 120, output_tokens: 20 }),
    ]))
    const run = await runWithEnv({
      STEP_NAME: 'triage',
      STEP_INPUT: '{"raw":"alert fired"}',
      MODEL_PROVIDER: 'anthropic',
      MODEL_NAME: 'claude-sonnet-4-6',
      MODEL_ENDPOINT: `${api.url}/v1`,
      MODEL_API_KEY: 'ant-key-abcdef123456',
      AGENT_SYSTEM_PROMPT: 'You triage incidents.',
      MCP_SERVERS: JSON.stringify([{ name: 'cluster', url: `${mcp.url}/mcp` }]),
    })

    expect(run.exitCode).toBe(0)
    const [first, second] = api.received
    expect(first?.url).toBe('/v1/messages')
    expect(first?.headers['x-api-key']).toBe('ant-key-abcdef123456')
    expect(first?.headers['anthropic-version']).toBe('2023-06-01')
    const body = first?.body as { system: string; max_tokens: number; tools: Array<{ name: string; input_schema: unknown }> }
    expect(body.system).toBe('You triage incidents.')
    expect(body.max_tokens).toBe(4096)
    expect(body.tools.map((t) => t.name)).toContain('get_status')
    const messages = (second?.body as { messages: Array<{ role: string; content: unknown }> }).messages
    expect(messages[1]).toEqual({
      role: 'assistant',
      content: [
        { type: 'text', text: 'Let me look.' },
        { type: 'tool_use', id: 'toolu_1', name: 'get_status', input: {} },
      ],
    })
    expect(messages[2]).toEqual({ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'status: healthy' }] })
    expect(mcp.calls.map((c) => c.name)).toEqual(['get_status'])
    // Built-in list price for claude-sonnet-4-6 (3 / 15 USD per million tokens).
    expect(run.output).toMatchObject({
      response: '**Severity**: High\nThe cluster is healthy but noisy.',
      severity: 'high',
      _metrics: { tokens_in: 200, tokens_out: 32, cost_usd: 0.00108, tool_calls: 1, provider: 'anthropic' },
    })
  })

  it('fails with ModelError when the answer has no usage block', async () => {
    api = track(await startFakeApi([{ json: { content: [{ type: 'text', text: 'hi' }] } }]))
    const run = await runWithEnv({ MODEL_PROVIDER: 'anthropic', MODEL_ENDPOINT: api.url, MODEL_API_KEY: 'k-123456789' })
    expect(run.exitCode).toBe(1)
    expect(run.output).toMatchObject({ reason: 'ModelError', error: 'Anthropic API returned a malformed response: no content or usage' })
  })

  it('fails with ModelError on a tool_use block without an id', async () => {
    api = track(await startFakeApi([message([{ type: 'tool_use', name: 'get_status', input: {} }])]))
    const run = await runWithEnv({ MODEL_PROVIDER: 'anthropic', MODEL_ENDPOINT: api.url, MODEL_API_KEY: 'k-123456789' })
    expect(run.output).toMatchObject({
      reason: 'ModelError',
      error: 'Anthropic API returned a malformed response: tool_use block without id, name or input',
    })
  })

  it('retries an overloaded answer (529) and then succeeds', async () => {
    api = track(await startFakeApi([{ status: 529, json: { type: 'error' } }, message([{ type: 'text', text: 'ok' }])]))
    const run = await runWithEnv({ MODEL_PROVIDER: 'anthropic', MODEL_ENDPOINT: api.url, MODEL_API_KEY: 'k-123456789' })
    expect(run.exitCode).toBe(0)
    expect(run.output.response).toBe('ok')
    expect(api.received).toHaveLength(2)
  })
})
