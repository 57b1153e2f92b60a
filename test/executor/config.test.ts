import { describe, expect, it } from 'vitest'
import { parseConfig } from '../../executor/config.js'
import { ConfigError } from '../../executor/errors.js'

function issues(env: Record<string, string>): string[] {
  try {
    parseConfig(env)
  } catch (err) {
    if (err instanceof ConfigError) return [...err.issues]
    throw err
  }
  return []
}

describe('executor configuration', () => {
  it('applies purko executor defaults to an empty environment', () => {
    const cfg = parseConfig({})
    expect(cfg).toMatchObject({
      step: 'unknown',
      workflow: 'unknown',
      inputText: '{}',
      input: {},
      systemPrompt: 'You are a helpful assistant.',
      autonomy: 'supervised',
      maxToolCalls: 20,
      costLimitUsd: 0,
      contentFilters: [],
      offline: true,
      memory: { type: 'buffer', agentMemory: '', maxContextTokens: 8192 },
      model: { provider: 'anthropic', name: 'claude-sonnet-4-6', apiFormat: 'offline', timeoutMs: 120_000, maxTokens: 4096, temperature: 0.2 },
    })
    expect(cfg.maxExecutionMs).toBeUndefined()
  })

  it('reads the variables the controller sets, in the formats it writes them', () => {
    const cfg = parseConfig({
      STEP_NAME: 'review',
      WORKFLOW_NAME: 'pr',
      MODEL_PROVIDER: 'openrouter',
      MODEL_NAME: 'x/y',
      MODEL_ENDPOINT: 'https://models.example/api/v1/',
      MODEL_API_KEY: 'k-1234567890',
      MODEL_TIMEOUT: '600',
      MODEL_MAX_TOKENS: '200',
      MODEL_TEMPERATURE: '0.20',
      MODEL_PRICE_IN: '1.5',
      MODEL_PRICE_OUT: '6',
      AUTONOMY_LEVEL: 'Restricted',
      MAX_TOOL_CALLS: '50',
      COST_LIMIT_USD: '20',
      MAX_EXECUTION_TIME: '15m',
      CONTENT_FILTERS: '["no-pii"]',
      MEMORY_TYPE: 'summary',
      MEMORY_BEHAVIOR: 'persistent',
      AGENT_MEMORY: 'recalled',
      MAX_CONTEXT_TOKENS: '2048',
      MCP_SERVERS: '[{"name":"github","url":"http://localhost:8002","auth":"bearer","token":"t-abcdef"}]',
      AGENT_TOOLS: '[{"name":"get_issue","type":"mcp"}]',
      STEP_INPUT: '{"raw":"go"}',
      STEP_INPUT_PLAN_SUMMARY: '"found 3 issues"',
      STEP_INPUT_SCAN_COUNT: '3',
      EXECUTOR_OFFLINE_RESPONSE: 'hi',
      TRACEPARENT: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
    })
    expect(cfg).toMatchObject({
      step: 'review',
      offline: false,
      autonomy: 'restricted',
      maxToolCalls: 50,
      costLimitUsd: 20,
      maxExecutionMs: 900_000,
      contentFilters: [{ kind: 'pii' }],
      model: {
        apiFormat: 'openai',
        endpoint: 'https://models.example/api/v1',
        timeoutMs: 600_000,
        maxTokens: 200,
        temperature: 0.2,
        price: { inPerMTok: 1.5, outPerMTok: 6 },
      },
      memory: { type: 'summary', behavior: 'persistent', agentMemory: 'recalled', maxContextTokens: 2048 },
      stepInputs: { PLAN_SUMMARY: 'found 3 issues', SCAN_COUNT: 3 },
      executor: { OFFLINE_RESPONSE: 'hi' },
      traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
      secrets: ['k-1234567890', 't-abcdef'],
    })
  })

  it.each([
    [{ MODEL_PROVIDER: 'anthropic', MODEL_API_KEY: 'k' }, 'anthropic'],
    [{ MODEL_PROVIDER: 'vertex-ai', MODEL_ENDPOINT: 'http://h' }, 'anthropic'],
    [{ MODEL_PROVIDER: 'ollama', MODEL_ENDPOINT: 'http://h' }, 'openai'],
    [{ MODEL_PROVIDER: 'anthropic', MODEL_API_FORMAT: 'openai', MODEL_API_KEY: 'k' }, 'openai'],
    [{ MODEL_PROVIDER: 'offline', MODEL_API_KEY: 'k' }, 'offline'],
    [{ MODEL_API_KEY: 'k', EXECUTOR_OFFLINE: 'true' }, 'offline'],
    [{}, 'offline'],
  ])('infers the API format for %j as %s', (env, format) => {
    expect(parseConfig(env).model.apiFormat).toBe(format)
  })

  it('keeps STEP_INPUT that is not JSON as text, as purko passes it through', () => {
    expect(parseConfig({ STEP_INPUT: 'fix "it"' })).toMatchObject({ inputText: 'fix "it"', input: 'fix "it"' })
  })

  it('drops a malformed TRACEPARENT instead of failing the step', () => {
    expect(parseConfig({ TRACEPARENT: 'garbage' }).traceparent).toBeUndefined()
  })

  it.each([
    [{ MAX_TOOL_CALLS: '1.5' }, 'MAX_TOOL_CALLS: must be a whole number >= 0'],
    [{ MAX_TOOL_CALLS: 'many' }, 'MAX_TOOL_CALLS: must be a number'],
    [{ COST_LIMIT_USD: '-1' }, 'COST_LIMIT_USD: must be >= 0'],
    [{ MODEL_TEMPERATURE: '3' }, 'MODEL_TEMPERATURE: must be between 0 and 2'],
    [{ MAX_EXECUTION_TIME: 'soon' }, 'MAX_EXECUTION_TIME: must be a Go duration such as 90s or 15m, or a number of seconds'],
    [{ AUTONOMY_LEVEL: 'yolo' }, 'AUTONOMY_LEVEL:'],
    [{ MCP_SERVERS: '[{"name":"x"' }, 'MCP_SERVERS: must be valid JSON'],
    [{ MCP_SERVERS: '[{"name":"x","url":"not a url"}]' }, 'MCP_SERVERS.0.url:'],
    [{ AGENT_TOOLS: '{"name":"x"}' }, 'AGENT_TOOLS:'],
    [{ MEMORY_TYPE: 'graph' }, 'MEMORY_TYPE:'],
    [{ MODEL_PRICE_IN: '1' }, 'MODEL_PRICE_IN/MODEL_PRICE_OUT: set both or neither'],
    [{ EXECUTOR_OFFLINE: 'false' }, 'MODEL_API_KEY: required (or MODEL_ENDPOINT) when EXECUTOR_OFFLINE=false'],
    [{ ANTHROPIC_VERTEX_PROJECT_ID: 'p' }, 'ANTHROPIC_VERTEX_PROJECT_ID: Vertex AI authentication is not built in'],
  ])('rejects %j naming the variable', (env, message) => {
    expect(issues(env).join('\n')).toContain(message)
  })

  it('never repeats a secret value in its messages', () => {
    const msg = issues({ MCP_SERVERS: '[{"name":"x","url":"nope","token":"tok-secret-value"}]', MODEL_API_KEY: 'sk-secret-value', MODEL_TEMPERATURE: 'hot' }).join(' ')
    expect(msg).not.toContain('secret-value')
    expect(msg).toContain('MODEL_TEMPERATURE')
  })

  it('falls back to purko\'s legacy MCP variables when MCP_SERVERS is empty', () => {
    const cfg = parseConfig({ MCP_SERVER_URL: 'http://lumino:8080', GITHUB_MCP_URL: 'http://localhost:8002', GITHUB_MCP_TOKEN: 'gh-token-1234' })
    expect(cfg.mcpServers).toEqual([
      { name: 'lumino', url: 'http://lumino:8080' },
      { name: 'github', url: 'http://localhost:8002', auth: 'bearer', token: 'gh-token-1234' },
    ])
    expect(cfg.secrets).toContain('gh-token-1234')
    expect(parseConfig({ MCP_SERVERS: '[{"name":"a","url":"http://a"}]', MCP_SERVER_URL: 'http://lumino:8080' }).mcpServers).toEqual([
      { name: 'a', url: 'http://a' },
    ])
  })

  it('takes an MCP bearer token from the env var its MCP_SERVERS entry names, and treats it as a secret', () => {
    const cfg = parseConfig({
      MCP_SERVERS: '[{"name":"github","url":"http://github.team.svc.cluster.local:8000/mcp","auth":"bearer","tokenEnv":"MCP_TOKEN_GITHUB"}]',
      MCP_TOKEN_GITHUB: 'ghp-secret-value',
    })
    expect(cfg.mcpServers[0]).toMatchObject({ name: 'github', auth: 'bearer', token: 'ghp-secret-value' })
    expect(cfg.secrets).toContain('ghp-secret-value')
  })

  it("never sends a token to a server of another namespace than the step's, whatever the entry carries, and still redacts it", () => {
    const cfg = parseConfig({
      KINETIC_NAMESPACE: 'team',
      MCP_SERVERS: JSON.stringify([
        { name: 'recipes', url: 'https://attacker.example/mcp', auth: 'bearer', tokenEnv: 'MCP_TOKEN_RECIPES', namespace: 'evil' },
        { name: 'inline', url: 'http://inline.ai-agents.svc/mcp', auth: 'bearer', token: 'inline-secret-value', namespace: 'ai-agents' },
        { name: 'own', url: 'http://own.team.svc/mcp', auth: 'bearer', tokenEnv: 'MCP_TOKEN_OWN', namespace: 'team' },
      ]),
      MCP_TOKEN_RECIPES: 'sa-token-of-team',
      MCP_TOKEN_OWN: 'own-secret-value',
    })
    expect(cfg.mcpServers.map((s) => [s.name, s.token])).toEqual([['recipes', undefined], ['inline', undefined], ['own', 'own-secret-value']])
    expect(cfg.secrets).toEqual(expect.arrayContaining(['sa-token-of-team', 'inline-secret-value', 'own-secret-value']))
  })
})
