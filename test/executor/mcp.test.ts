import { afterEach, describe, expect, it } from 'vitest'
import { connectMcp, mcpEndpoint } from '../../executor/tools/mcp.js'
import { startMcpServer, type TestMcpServer } from './fixtures/mcp-server.js'
import { runWithEnv } from './fixtures/run-helpers.js'

let server: TestMcpServer | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
})

const never = new AbortController().signal

describe('MCP client over Streamable HTTP', () => {
  it('lists the tools of a real MCP server with their annotations', async () => {
    server = await startMcpServer()
    const conn = await connectMcp({ name: 'cluster', url: server.url }, never)
    try {
      expect(conn.tools.map((t) => t.name).sort()).toEqual(['delete_pod', 'get_and_rotate_key', 'get_status', 'list_pods', 'restart_service'])
      const listPods = conn.tools.find((t) => t.name === 'list_pods')
      expect(listPods).toMatchObject({ server: 'cluster', description: 'List pods in a namespace', readOnlyHint: true })
      expect(listPods?.inputSchema).toMatchObject({ type: 'object', properties: { namespace: { type: 'string' } } })
    } finally {
      await conn.close()
    }
  })

  it('calls a tool and returns its text content', async () => {
    server = await startMcpServer()
    const conn = await connectMcp({ name: 'cluster', url: `${server.url}/` }, never)
    try {
      const outcome = await conn.call('list_pods', { namespace: 'prod' }, never)
      expect(outcome).toEqual({ content: 'pods in prod: api-1, api-2', isError: false })
      expect(server.calls).toEqual([{ name: 'list_pods', args: { namespace: 'prod' } }])
    } finally {
      await conn.close()
    }
  })

  it('is rejected by a bearer-protected server without the token and accepted with it', async () => {
    server = await startMcpServer({ token: 'mcp-token-123456' })
    await expect(connectMcp({ name: 'cluster', url: server.url, auth: 'bearer' }, never)).rejects.toThrow()
    const conn = await connectMcp({ name: 'cluster', url: server.url, auth: 'bearer', token: 'mcp-token-123456' }, never)
    await conn.close()
    expect(server.authHeaders.at(-1)).toBe('Bearer mcp-token-123456')
  })

  it.each([
    ['http://svc:8000', 'http://svc:8000/mcp'],
    ['http://svc:8000/', 'http://svc:8000/mcp'],
    ['http://svc:8000/mcp', 'http://svc:8000/mcp'],
    ['http://svc:8000/mcp/', 'http://svc:8000/mcp'],
  ])('normalises registry URL %s to %s', (url, endpoint) => {
    expect(mcpEndpoint(url)).toBe(endpoint)
  })

  it('skips an unreachable server with a warning and keeps the tools of the others', async () => {
    server = await startMcpServer()
    const run = await runWithEnv({
      MODEL_PROVIDER: 'offline',
      MCP_SERVERS: JSON.stringify([{ name: 'down', url: 'http://127.0.0.1:1' }, { name: 'cluster', url: server.url }]),
      EXECUTOR_OFFLINE_TOOL_CALLS: '[{"name":"get_status"}]',
    })
    expect(run.exitCode).toBe(0)
    expect(server.calls.map((c) => c.name)).toEqual(['get_status'])
    expect(run.output.tool_call_log).toEqual([expect.objectContaining({ tool: 'get_status', server: 'cluster', status: 'ok' })])
    expect(run.lines.some((l) => l.includes('"server":"down"') && l.includes('Could not connect to MCP server'))).toBe(true)
  })
})
