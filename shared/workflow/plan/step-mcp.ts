/**
 * Whether the `mcp` tools an Agent declares can be found among the MCP servers its step may use
 * (shared/mcp/plan/visibility.ts), so a step whose agent names a server it cannot use says so in its
 * status instead of running with a silently empty tool list. Pure: no I/O.
 */
import type { StepMcpView } from '../../mcp/plan/visibility.js'
import type { Agent } from '../../schemas/agent.js'

/** Pure: the name an `mcp` tool asks for: `config.capability` when set, else its own name (a tool or a server), as the executor reads it. */
export function wantedMcpName(tool: { name: string; config?: unknown }): string {
  const config = tool.config !== null && typeof tool.config === 'object' ? (tool.config as Record<string, unknown>) : {}
  return typeof config.capability === 'string' && config.capability !== '' ? config.capability : tool.name
}

/** Pure: the key of a server in {@link mcpToolWarning}'s `knownTools`: `<namespace>/<name>`. */
export function serverKey(namespace: string, name: string): string {
  return `${namespace}/${name}`
}

/** Pure: whether the agent declares any `mcp` tool whose wanted name is not the name of a server the step uses. */
export function needsToolLookup(agent: Agent, view: StepMcpView): boolean {
  const servers = new Set(view.servers.map((s) => s.entry.name))
  return (agent.spec.tools ?? []).some((t) => t.type === 'mcp' && !servers.has(wantedMcpName(t)))
}

/**
 * Pure: the warning for a step of `agent` in `namespace`, or null. `knownTools` maps each server
 * the step uses ({@link serverKey}) to the tool names its last discovery found (absent: unknown).
 * Reported: a wanted name that no usable server is or offers (unless some usable server's tools
 * are unknown), saying when it exists only in a namespace the step does not see; a wanted server
 * whose name another namespace's server shadows; a wanted bearer server of another namespace,
 * which gets no token. An unreadable registry is always reported: MCP_SERVERS is then empty.
 */
export function mcpToolWarning(
  agent: Agent, namespace: string, view: StepMcpView, registryError: string | undefined,
  knownTools: ReadonlyMap<string, readonly string[]>, where: string,
): string | null {
  const mcpTools = (agent.spec.tools ?? []).filter((t) => t.type === 'mcp')
  if (mcpTools.length === 0) return null
  if (registryError) return `MCP registry ${where} cannot be read (${registryError}): the step gets no MCP servers`
  const wanted = [...new Set(mcpTools.map(wantedMcpName))]
  const byName = new Map(view.servers.map((s) => [s.entry.name, s]))
  const notes: string[] = []

  const tools = new Set([...knownTools.values()].flat())
  const allKnown = view.servers.every((s) => knownTools.has(serverKey(s.namespace, s.entry.name)))
  const missing = wanted.filter((n) => !byName.has(n) && !tools.has(n))
  if (missing.length > 0 && allKnown) {
    const shown = view.servers.slice(0, 10).map((s) => s.entry.name).join(', ')
    const more = view.servers.length > 10 ? ` and ${view.servers.length - 10} more` : ''
    const listed = view.servers.length === 0 ? 'it may use none' : `it may use ${shown}${more}`
    const elsewhere = missing.flatMap((n) => view.unseen.filter((u) => u.entry.name === n).map((u) => `"${n}" of namespace ${u.namespace}`))
    const unseen = elsewhere.length > 0
      ? `; ${elsewhere.slice(0, 5).join(', ')} is registered, but a step in ${namespace} only sees servers of its own namespace, the agent namespace and KINETIC_MCP_SHARED_NAMESPACES`
      : ''
    notes.push(`Agent "${agent.metadata.name ?? ''}" names MCP server or tool ${missing.map((n) => `"${n}"`).join(', ')}, which no server of the registry ${where} that this step may use offers (${listed})${unseen}; those tools are not available to the step`)
  }
  for (const s of view.shadowed.filter((x) => wanted.includes(x.name))) {
    notes.push(`MCP server "${s.name}" is registered in namespaces ${[s.used, ...s.hidden].join(', ')}; this step uses the one of ${s.used}`)
  }
  for (const name of wanted) {
    const server = byName.get(name)
    if (server && server.namespace !== namespace && server.entry.auth === 'bearer' && server.entry.secretRef) {
      notes.push(`MCP server "${name}" of namespace ${server.namespace} gets no bearer token from a step in ${namespace}: a token is only read from a Secret of the step's own namespace, for a server an MCPServer of that namespace registers`)
    }
  }
  return notes.length > 0 ? notes.join('; ') : null
}
