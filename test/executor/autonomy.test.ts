import { afterEach, describe, expect, it } from 'vitest'
import type { ChatRequest, ModelProvider } from '../../executor/providers/types.js'
import { blockReason, isReadOnly } from '../../executor/tools/autonomy.js'
import { selectTools } from '../../executor/tools/select.js'
import { startMcpServer, type TestMcpServer } from './fixtures/mcp-server.js'
import { runWithEnv } from './fixtures/run-helpers.js'

let mcp: TestMcpServer | undefined
afterEach(async () => {
  await mcp?.close()
  mcp = undefined
})

/** A model that records the tools it was offered, asks for `wants` once, then answers. */
function recordingModel(wants: string[]): { provider: ModelProvider; offered: string[][] } {
  const offered: string[][] = []
  let asked = false
  return {
    offered,
    provider: {
      name: 'recording',
      async complete(req: ChatRequest) {
        offered.push(req.tools.map((t) => t.name).sort())
        if (!asked && wants.length > 0) {
          asked = true
          return { text: '', toolCalls: wants.map((name, i) => ({ id: `c${i}`, name, arguments: { name: 'api-1', namespace: 'prod' } })), usage: { tokensIn: 1, tokensOut: 1 } }
        }
        return { text: 'done', toolCalls: [], usage: { tokensIn: 1, tokensOut: 1 } }
      },
    },
  }
}

const ALL = ['delete_pod', 'get_and_rotate_key', 'get_status', 'list_pods', 'restart_service']

async function runAt(level: string | undefined, wants: string[]) {
  mcp = await startMcpServer()
  const model = recordingModel(wants)
  const run = await runWithEnv(
    { MODEL_PROVIDER: 'offline', MCP_SERVERS: JSON.stringify([{ name: 'cluster', url: mcp.url }]), ...(level ? { AUTONOMY_LEVEL: level } : {}) },
    { provider: () => model.provider },
  )
  return { run, offered: model.offered[0] ?? [], executed: mcp.calls.map((c) => c.name) }
}

describe('autonomy levels', () => {
  it('manual offers no tools and blocks any call the model makes anyway', async () => {
    const { run, offered, executed } = await runAt('manual', ['list_pods'])
    expect(offered).toEqual([])
    expect(executed).toEqual([])
    expect(run.exitCode).toBe(0)
    expect(run.output.tool_call_log).toEqual([
      expect.objectContaining({ tool: 'list_pods', status: 'blocked', reason: "Manual autonomy — tool 'list_pods' not allowed. Provide analysis without tools." }),
    ])
    expect(run.output.tools_called).toEqual([])
  })

  it('restricted offers only read-only tools and blocks a write tool at call time', async () => {
    const { run, offered, executed } = await runAt('restricted', ['delete_pod', 'get_status'])
    expect(offered).toEqual(['get_status', 'list_pods'])
    expect(executed).toEqual(['get_status'])
    expect(run.output.tool_call_log).toEqual([
      expect.objectContaining({ tool: 'delete_pod', server: 'cluster', status: 'blocked', reason: "Restricted autonomy — write tool 'delete_pod' not allowed." }),
      expect.objectContaining({ tool: 'get_status', status: 'ok' }),
    ])
  })

  it.each(['supervised', 'full', undefined])('%s offers and executes every tool', async (level) => {
    const { run, offered, executed } = await runAt(level, ['restart_service'])
    expect(offered).toEqual(ALL)
    expect(executed).toEqual(['restart_service'])
    expect(run.output._metrics).toMatchObject({ autonomy: level ?? 'supervised' })
  })

  it.each([
    [{ name: 'delete_everything', readOnlyHint: true }, true],
    [{ name: 'get_and_rotate_key', readOnlyHint: false }, false],
    [{ name: 'list_pods', destructiveHint: true }, false],
    [{ name: 'list_pods' }, true],
    [{ name: 'getIssue' }, true],
    [{ name: 'search-code' }, true],
    [{ name: 'Describe.Deployment' }, true],
    [{ name: 'create_pull_request' }, false],
    [{ name: 'execute_code' }, false],
    [{ name: 'listing_manager_update' }, false],
  ])('judges %j read-only: %s', (tool, expected) => {
    expect(isReadOnly(tool)).toBe(expected)
    expect(blockReason('restricted', tool) === null).toBe(expected)
    expect(blockReason('full', tool)).toBeNull()
  })
})

describe('tool selection from AGENT_TOOLS', () => {
  const discovered = [
    { server: 'github', name: 'get_issue', description: '', inputSchema: {} },
    { server: 'github', name: 'push_files', description: '', inputSchema: {} },
    { server: 'cluster', name: 'list_pods', description: '', inputSchema: {} },
  ]

  it('offers every discovered tool when the agent declares none', () => {
    expect(selectTools([], discovered).tools.map((t) => t.name)).toEqual(['get_issue', 'push_files', 'list_pods'])
  })

  it('offers named tools, whole servers named like a tool, and capabilities; reports the rest', () => {
    const sel = selectTools(
      [
        { name: 'cluster', type: 'mcp' },
        { name: 'issues', type: 'mcp', config: { capability: 'get_issue' } },
        { name: 'code-sandbox', type: 'function' },
        { name: 'nowhere', type: 'mcp' },
      ],
      discovered,
    )
    expect(sel.tools.map((t) => t.name)).toEqual(['list_pods', 'get_issue'])
    expect(sel.unsupported).toEqual(['code-sandbox (function)'])
    expect(sel.missing).toEqual(['nowhere'])
  })
})
