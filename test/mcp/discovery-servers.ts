// Real MCP servers from the SDK on 127.0.0.1, plus misbehaving HTTP endpoints, for the
// discovery and bridge tests.
import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import { ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js'

export interface Running {
  url: string
  port: number
  close(): Promise<void>
}

type Handler = (req: IncomingMessage, res: ServerResponse) => void | Promise<void>

/** Serves `handler` on 127.0.0.1 at a free port. */
export async function serve(handler: Handler): Promise<Running> {
  const server: HttpServer = createServer((req, res) => {
    Promise.resolve(handler(req, res)).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500).end(String(err))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as AddressInfo).port
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections()
      server.close(() => resolve())
    }),
  }
}

/** A port on 127.0.0.1 where nothing listens. */
export async function closedPort(): Promise<number> {
  const s = await serve(() => undefined)
  await s.close()
  return s.port
}

export const LONG_DESCRIPTION = 'x'.repeat(600)

/** The tools every test server offers. */
export function demoServer(name = 'demo-server'): McpServer {
  const server = new McpServer({ name, version: '1.2.3' })
  server.registerTool('search', { description: 'Searches the index', annotations: { readOnlyHint: true } }, async () => ({
    content: [{ type: 'text', text: 'found' }],
  }))
  server.registerTool('write_file', { description: LONG_DESCRIPTION, annotations: { readOnlyHint: false } }, async () => ({
    content: [{ type: 'text', text: 'written' }],
  }))
  server.registerTool('ping', {}, async () => ({ content: [{ type: 'text', text: 'pong' }] }))
  return server
}

/** A stateless Streamable HTTP handler at `/mcp` (new server per request, as the SDK suggests). */
export function streamableHandler(make: () => McpServer | Server = () => demoServer(), path = '/mcp'): Handler {
  return async (req, res) => {
    if (new URL(req.url ?? '/', 'http://x').pathname !== path) return void res.writeHead(404).end('not found')
    if (req.method !== 'POST') return void res.writeHead(405).end()
    const server = make()
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined })
    res.on('close', () => void transport.close().then(() => server.close()))
    await server.connect(transport)
    await transport.handleRequest(req, res)
  }
}

/** Requires `Authorization: Bearer <token>` before `inner` sees the request. */
export function bearer(token: string, inner: Handler): Handler {
  return (req, res) => {
    if (req.headers.authorization !== `Bearer ${token}`) return void res.writeHead(401, { 'www-authenticate': 'Bearer' }).end('unauthorized')
    return inner(req, res)
  }
}

/** A legacy HTTP+SSE server: GET /sse opens the stream, POST /messages?sessionId= carries requests; /mcp is 404. */
export function legacySseHandler(): Handler {
  const sessions = new Map<string, SSEServerTransport>()
  return async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://x')
    if (req.method === 'GET' && url.pathname === '/sse') {
      const transport = new SSEServerTransport('/messages', res)
      sessions.set(transport.sessionId, transport)
      res.on('close', () => sessions.delete(transport.sessionId))
      await demoServer('legacy-server').connect(transport)
      return
    }
    if (req.method === 'POST' && url.pathname === '/messages') {
      const transport = sessions.get(url.searchParams.get('sessionId') ?? '')
      if (!transport) return void res.writeHead(404).end('no session')
      await transport.handlePostMessage(req, res)
      return
    }
    res.writeHead(404).end('not found')
  }
}

/** A low-level server whose tools/list hands out `total` tools `pageSize` at a time. */
export function pagedServer(total: number, pageSize: number): Server {
  const server = new Server({ name: 'paged', version: '1' }, { capabilities: { tools: {} } })
  server.setRequestHandler(ListToolsRequestSchema, (request) => {
    const start = Number(request.params?.cursor ?? '0')
    const tools = Array.from({ length: Math.min(pageSize, total - start) }, (_, i) => ({
      name: `tool-${start + i}`,
      inputSchema: { type: 'object' as const },
    }))
    const next = start + pageSize
    return next < total ? { tools, nextCursor: String(next) } : { tools }
  })
  return server
}
