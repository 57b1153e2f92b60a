import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { McpServerEntry } from '../config.js'

/** A tool offered by an MCP server, with the annotations autonomy filtering reads. */
export interface DiscoveredTool {
  server: string
  name: string
  description: string
  inputSchema: Record<string, unknown>
  readOnlyHint?: boolean
  destructiveHint?: boolean
}

/** A tool's answer flattened to text for the model, with its structuredContent when it sent one. */
export interface ToolOutcome {
  content: string
  isError: boolean
  structuredContent?: Record<string, unknown>
}

/** An open session with one MCP server. */
export interface McpConnection {
  server: string
  tools: DiscoveredTool[]
  call(name: string, args: Record<string, unknown>, signal: AbortSignal): Promise<ToolOutcome>
  close(): Promise<void>
}

/** Opens a session and lists its tools; rejects when the server is unreachable or refuses us. */
export type McpConnector = (entry: McpServerEntry, signal: AbortSignal) => Promise<McpConnection>

// Purko's registry and executor give up on a server after 15 s; so do we, per request.
const REQUEST_TIMEOUT_MS = 15_000

/** Pure: the Streamable HTTP endpoint for a registry URL: trailing slashes dropped, `/mcp` appended unless present. */
export function mcpEndpoint(url: string): string {
  const base = url.replace(/\/+$/, '')
  return base.endsWith('/mcp') ? base : `${base}/mcp`
}

function flatten(result: { content?: unknown; structuredContent?: unknown }): string {
  const parts: string[] = []
  const content = Array.isArray(result.content) ? (result.content as Array<Record<string, unknown>>) : []
  for (const item of content) {
    if (item.type === 'text' && typeof item.text === 'string') parts.push(item.text)
    else parts.push(JSON.stringify(item))
  }
  if (parts.length === 0 && result.structuredContent !== undefined) parts.push(JSON.stringify(result.structuredContent))
  return parts.join('\n')
}

/**
 * The real connector: the official MCP client over Streamable HTTP. A bearer token is sent as
 * `Authorization: Bearer <token>` when the registry entry has one and its auth is not `none`.
 */
export const connectMcp: McpConnector = async (entry, signal) => {
  const headers: Record<string, string> = {}
  if (entry.token !== undefined && entry.token !== '' && entry.auth !== 'none') headers.authorization = `Bearer ${entry.token}`
  const transport = new StreamableHTTPClientTransport(new URL(mcpEndpoint(entry.url)), { requestInit: { headers } })
  const client = new Client({ name: 'kinetic-executor', version: '1.0.0' })
  const opts = () => ({ signal: AbortSignal.any([signal, AbortSignal.timeout(REQUEST_TIMEOUT_MS)]) })
  try {
    await client.connect(transport, opts())
    const tools: DiscoveredTool[] = []
    let cursor: string | undefined
    do {
      const page = await client.listTools(cursor !== undefined ? { cursor } : {}, opts())
      for (const t of page.tools) {
        tools.push({
          server: entry.name,
          name: t.name,
          description: t.description ?? t.title ?? t.name,
          inputSchema: t.inputSchema as Record<string, unknown>,
          ...(t.annotations?.readOnlyHint !== undefined ? { readOnlyHint: t.annotations.readOnlyHint } : {}),
          ...(t.annotations?.destructiveHint !== undefined ? { destructiveHint: t.annotations.destructiveHint } : {}),
        })
      }
      cursor = page.nextCursor
    } while (cursor !== undefined)
    return {
      server: entry.name,
      tools,
      async call(name, args, callSignal) {
        const result = await client.callTool({ name, arguments: args }, undefined, {
          signal: AbortSignal.any([callSignal, AbortSignal.timeout(REQUEST_TIMEOUT_MS * 8)]),
        })
        const structured = result.structuredContent
        return {
          content: flatten(result as { content?: unknown; structuredContent?: unknown }),
          isError: result.isError === true,
          ...(structured !== null && typeof structured === 'object' && !Array.isArray(structured)
            ? { structuredContent: structured as Record<string, unknown> }
            : {}),
        }
      },
      close: () => client.close(),
    }
  } catch (err) {
    await client.close().catch(() => undefined)
    throw err
  }
}
