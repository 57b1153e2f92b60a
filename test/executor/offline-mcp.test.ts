import { afterEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { buildStepInput } from '../../shared/workflow/plan/step-input.js'
import { startMcpServer, type RegisterTools, type TestMcpServer } from './fixtures/mcp-server.js'
import { runWithEnv, withoutTiming } from './fixtures/run-helpers.js'

// A recipes-like MCP server: results carry structuredContent and the same JSON as text, errors
// are isError results with {error: {code, message}}, as spec §14 has them.
const templates = [
  { namespace: 'ai-agents', name: 'hello-web', template: true, phase: 'Active' },
  { namespace: 'ai-agents', name: 'batch', template: true, phase: 'Active' },
]

const result = (structuredContent: Record<string, unknown>, isError = false) => ({
  content: [{ type: 'text' as const, text: JSON.stringify(structuredContent) }],
  structuredContent,
  ...(isError ? { isError: true } : {}),
})

const recipeTools: RegisterTools = (server, record) => {
  server.registerTool(
    'list-recipes',
    { description: 'List recipes', inputSchema: { namespace: z.string().optional(), kind: z.enum(['all', 'templates', 'instances']).optional() }, annotations: { readOnlyHint: true } },
    async (args) => {
      record('list-recipes', args)
      return result({ items: args.kind === 'instances' ? [] : templates })
    },
  )
  server.registerTool(
    'deploy-recipe',
    {
      description: 'Deploy a recipe',
      inputSchema: { namespace: z.string(), name: z.string(), template: z.object({ name: z.string() }).optional(), values: z.record(z.string(), z.unknown()).optional() },
      annotations: { readOnlyHint: false },
    },
    async (args) => {
      record('deploy-recipe', args)
      if (args.template !== undefined && !templates.some((t) => t.name === args.template?.name)) {
        return result({ error: { code: 'NotFound', message: `template ${args.namespace}/${args.template.name} not found` } }, true)
      }
      return result({ namespace: args.namespace, name: args.name, created: true, phase: 'Pending' })
    },
  )
}

// A second server with a tool of the same name: registry order lets it shadow the first for a model.
const otherTools: RegisterTools = (server, record) => {
  server.registerTool('list-recipes', { description: 'Another list', inputSchema: {}, annotations: { readOnlyHint: true } }, async () => {
    record('list-recipes', {})
    return { content: [{ type: 'text', text: 'other server' }] }
  })
}

const servers: TestMcpServer[] = []
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()))
})

async function start(tools: RegisterTools): Promise<TestMcpServer> {
  const s = await startMcpServer({ tools })
  servers.push(s)
  return s
}

const base = { MODEL_PROVIDER: 'offline', STEP_NAME: 'pick', WORKFLOW_NAME: 'self-service' }

describe('offline provider: the mcp directive of a step input', () => {
  it('calls the named tool on the named server and puts its structuredContent in the output', async () => {
    const recipes = await start(recipeTools)
    const run = await runWithEnv({
      ...base,
      MCP_SERVERS: JSON.stringify([{ name: 'recipes', url: recipes.url, auth: 'none' }]),
      STEP_INPUT: JSON.stringify({
        task: 'List the recipe templates',
        mcp: { server: 'recipes', tool: 'list-recipes', arguments: { namespace: 'ai-agents', kind: 'templates' } },
      }),
    })
    expect(run.exitCode).toBe(0)
    expect(recipes.calls).toEqual([{ name: 'list-recipes', args: { namespace: 'ai-agents', kind: 'templates' } }])
    expect(run.output).toMatchObject({
      response: 'pick done: List the recipe templates (tools: list-recipes)',
      mcp: { server: 'recipes', tool: 'list-recipes', isError: false, structuredContent: { items: templates } },
      tools_called: ['list-recipes'],
      tool_call_log: [{ tool: 'list-recipes', server: 'recipes', status: 'ok' }],
      _metrics: { tool_calls: 1, provider: 'offline' },
    })
  })

  it('is deterministic: the same environment gives the same OUTPUT apart from timings', async () => {
    const recipes = await start(recipeTools)
    const env = {
      ...base,
      MCP_SERVERS: JSON.stringify([{ name: 'recipes', url: recipes.url }]),
      STEP_INPUT: JSON.stringify({ mcp: { server: 'recipes', tool: 'list-recipes', arguments: { kind: 'templates' } } }),
    }
    const untimed = (o: Record<string, unknown>) => ({
      ...withoutTiming(o),
      tool_call_log: (o.tool_call_log as Array<Record<string, unknown>>).map(({ elapsed_s: _t, ...rest }) => rest),
    })
    const [a, b] = [await runWithEnv(env), await runWithEnv(env)]
    expect(untimed(a.output)).toEqual(untimed(b.output))
  })

  it('lets a later step deploy the template an earlier step listed, through ${steps.X.output.mcp...}', async () => {
    const recipes = await start(recipeTools)
    const mcpServers = JSON.stringify([{ name: 'recipes', url: recipes.url, auth: 'none' }])
    const list = await runWithEnv({
      ...base,
      STEP_NAME: 'list-templates',
      MCP_SERVERS: mcpServers,
      STEP_INPUT: JSON.stringify({ mcp: { server: 'recipes', tool: 'list-recipes', arguments: { namespace: 'ai-agents', kind: 'templates' } } }),
    })
    expect(list.exitCode).toBe(0)
    // The controller builds the next step's STEP_INPUT from the Workflow's template and the outputs.
    const { stepInput, warnings } = buildStepInput(
      {
        input: {
          task: 'Deploy ${steps.list-templates.output.mcp.structuredContent.items.0.name} as hello',
          mcp: {
            server: 'recipes',
            tool: 'deploy-recipe',
            arguments: { namespace: 'ai-agents', name: 'hello', template: { name: '${steps.list-templates.output.mcp.structuredContent.items.0.name}' } },
          },
        },
      },
      { outputs: { 'list-templates': JSON.parse(JSON.stringify(list.output)) }, parameters: {} },
    )
    expect(warnings).toEqual([])
    const deploy = await runWithEnv({ ...base, STEP_NAME: 'deploy', MCP_SERVERS: mcpServers, STEP_INPUT: stepInput })
    expect(deploy.exitCode).toBe(0)
    expect(recipes.calls.at(-1)).toEqual({ name: 'deploy-recipe', args: { namespace: 'ai-agents', name: 'hello', template: { name: 'hello-web' } } })
    expect(deploy.output).toMatchObject({
      response: 'deploy done: Deploy hello-web as hello (tools: deploy-recipe)',
      mcp: { tool: 'deploy-recipe', structuredContent: { namespace: 'ai-agents', name: 'hello', created: true } },
    })
  })

  it('takes an array of calls, made in order, and answers with an array of results', async () => {
    const recipes = await start(recipeTools)
    const run = await runWithEnv({
      ...base,
      MCP_SERVERS: JSON.stringify([{ name: 'recipes', url: recipes.url }]),
      STEP_INPUT: JSON.stringify({
        mcp: [
          { server: 'recipes', tool: 'deploy-recipe', arguments: { namespace: 'ai-agents', name: 'one', template: { name: 'batch' } } },
          { server: 'recipes', tool: 'list-recipes', arguments: { kind: 'instances' } },
        ],
      }),
    })
    expect(run.exitCode).toBe(0)
    expect(recipes.calls.map((c) => c.name)).toEqual(['deploy-recipe', 'list-recipes'])
    expect(run.output.mcp).toEqual([
      { server: 'recipes', tool: 'deploy-recipe', isError: false, structuredContent: { namespace: 'ai-agents', name: 'one', created: true, phase: 'Pending' } },
      { server: 'recipes', tool: 'list-recipes', isError: false, structuredContent: { items: [] } },
    ])
  })

  it('reaches the named server even when another server shadows the tool name for a model', async () => {
    const recipes = await start(recipeTools)
    const other = await start(otherTools)
    const run = await runWithEnv({
      ...base,
      // `other` comes later, so a model would be offered its list-recipes.
      MCP_SERVERS: JSON.stringify([{ name: 'recipes', url: recipes.url }, { name: 'other', url: other.url }]),
      STEP_INPUT: JSON.stringify({ mcp: { server: 'recipes', tool: 'list-recipes', arguments: { kind: 'templates' } } }),
    })
    expect(run.exitCode).toBe(0)
    expect(other.calls).toEqual([])
    expect(recipes.calls).toHaveLength(1)
    expect(run.output).toMatchObject({ tool_call_log: [{ server: 'recipes', status: 'ok' }], mcp: { server: 'recipes', structuredContent: { items: templates } } })
  })

  it('fails the step (AgentError) when the tool answers with an error, keeping its structuredContent', async () => {
    const recipes = await start(recipeTools)
    const run = await runWithEnv({
      ...base,
      MCP_SERVERS: JSON.stringify([{ name: 'recipes', url: recipes.url }]),
      STEP_INPUT: JSON.stringify({ mcp: { server: 'recipes', tool: 'deploy-recipe', arguments: { namespace: 'ai-agents', name: 'x', template: { name: 'nope' } } } }),
    })
    expect(run.exitCode).toBe(1)
    expect(run.output).toMatchObject({
      reason: 'AgentError',
      error: expect.stringContaining('MCP tool recipes/deploy-recipe failed: {"error":{"code":"NotFound"'),
      mcp: { isError: true, structuredContent: { error: { code: 'NotFound', message: 'template ai-agents/nope not found' } } },
      tool_call_log: [{ tool: 'deploy-recipe', status: 'error' }],
    })
  })

  it('fails the step when the named server is not registered, without calling anything', async () => {
    const recipes = await start(recipeTools)
    const run = await runWithEnv({
      ...base,
      MCP_SERVERS: JSON.stringify([{ name: 'recipes', url: recipes.url }]),
      STEP_INPUT: JSON.stringify({ mcp: { server: 'recipe', tool: 'list-recipes' } }),
    })
    expect(run.exitCode).toBe(1)
    expect(recipes.calls).toEqual([])
    expect(run.output).toMatchObject({
      reason: 'AgentError',
      mcp: { server: 'recipe', tool: 'list-recipes', isError: true, text: "Tool 'list-recipes' is not available on MCP server 'recipe'" },
      tool_call_log: [{ tool: 'list-recipes', server: 'recipe', status: 'error' }],
    })
  })

  it('keeps the guardrails: restricted autonomy blocks a write tool and the step fails', async () => {
    const recipes = await start(recipeTools)
    const run = await runWithEnv({
      ...base,
      AUTONOMY_LEVEL: 'restricted',
      MCP_SERVERS: JSON.stringify([{ name: 'recipes', url: recipes.url }]),
      STEP_INPUT: JSON.stringify({ mcp: { server: 'recipes', tool: 'deploy-recipe', arguments: { namespace: 'ai-agents', name: 'x' } } }),
    })
    expect(run.exitCode).toBe(1)
    expect(recipes.calls).toEqual([])
    expect(run.output).toMatchObject({
      reason: 'AgentError',
      mcp: { isError: true, text: expect.stringMatching(/^BLOCKED: /) },
      tool_call_log: [{ tool: 'deploy-recipe', server: 'recipes', status: 'blocked' }],
    })
  })

  it('runs before the agent script, and a scripted JSON answer still gets the results', async () => {
    const recipes = await start(recipeTools)
    const run = await runWithEnv({
      ...base,
      MCP_SERVERS: JSON.stringify([{ name: 'recipes', url: recipes.url }]),
      EXECUTOR_OFFLINE_TOOL_CALLS: '[{"name":"list-recipes","arguments":{"kind":"instances"}}]',
      EXECUTOR_OFFLINE_RESPONSE: '{"response":"picked","choice":"hello-web"}',
      STEP_INPUT: JSON.stringify({ mcp: { server: 'recipes', tool: 'list-recipes', arguments: { kind: 'templates' } } }),
    })
    expect(run.exitCode).toBe(0)
    expect(recipes.calls.map((c) => c.args)).toEqual([{ kind: 'templates' }, { kind: 'instances' }])
    expect(run.output).toMatchObject({ response: 'picked', choice: 'hello-web', mcp: { structuredContent: { items: templates } } })
  })

  it.each([
    ['a string', 'list recipes'],
    ['a misspelt key', { server: 'recipes', tool: 'list-recipes', args: {} }],
    ['no server', { tool: 'list-recipes' }],
    ['an empty array', []],
  ])('rejects %s as a configuration error', async (_what, mcp) => {
    await expect(runWithEnv({ ...base, STEP_INPUT: JSON.stringify({ mcp }) })).rejects.toThrow(/STEP_INPUT\.mcp/)
  })
})
