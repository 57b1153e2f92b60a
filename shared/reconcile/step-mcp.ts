/**
 * Whether the `mcp` tools an Agent declares can be found through the `mcp-servers` registry, so
 * a step whose agent names a server nobody registered says so in its status instead of running
 * with a silently empty tool list. Pure: no I/O.
 */
import type { RegistryEntry } from '../mcp/registry.js'
import type { Agent } from '../schemas/agent.js'

/** Pure: the name an `mcp` tool asks for: `config.capability` when set, else its own name (a tool or a server), as the executor reads it. */
export function wantedMcpName(tool: { name: string; config?: unknown }): string {
  const config = tool.config !== null && typeof tool.config === 'object' ? (tool.config as Record<string, unknown>) : {}
  return typeof config.capability === 'string' && config.capability !== '' ? config.capability : tool.name
}

/** Pure: whether the agent declares any `mcp` tool whose wanted name is not a registered server's name. */
export function needsToolLookup(agent: Agent, registry: readonly RegistryEntry[]): boolean {
  const servers = new Set(registry.map((e) => e.name))
  return (agent.spec.tools ?? []).some((t) => t.type === 'mcp' && !servers.has(wantedMcpName(t)))
}

/**
 * Pure: the warning for a step of `agent`, or null. `knownTools` maps each registered server to
 * the tool names its last discovery found (absent: unknown). A wanted name that is neither a
 * registered server nor a tool of one is reported, unless some registered server's tools are
 * unknown (it may offer it). An unreadable registry is always reported: MCP_SERVERS is then empty.
 */
export function mcpToolWarning(
  agent: Agent, registry: readonly RegistryEntry[], registryError: string | undefined,
  knownTools: ReadonlyMap<string, readonly string[]>, where: string,
): string | null {
  const mcpTools = (agent.spec.tools ?? []).filter((t) => t.type === 'mcp')
  if (mcpTools.length === 0) return null
  if (registryError) return `MCP registry ${where} cannot be read (${registryError}): the step gets no MCP servers`
  const servers = new Set(registry.map((e) => e.name))
  const tools = new Set([...knownTools.values()].flat())
  const allKnown = registry.every((e) => knownTools.has(e.name))
  const missing = [...new Set(mcpTools.map(wantedMcpName))].filter((n) => !servers.has(n) && !tools.has(n))
  if (missing.length === 0 || !allKnown) return null
  const shown = registry.slice(0, 10).map((e) => e.name).join(', ')
  const more = registry.length > 10 ? ` and ${registry.length - 10} more` : ''
  const listed = registry.length === 0 ? 'it lists no servers' : `it lists ${shown}${more}`
  const names = missing.map((n) => `"${n}"`).join(', ')
  return `Agent "${agent.metadata.name ?? ''}" names MCP server or tool ${names}, which no server of the registry ${where} offers (${listed}); those tools are not available to the step`
}
