import type { AgentTool } from '../config.js'
import type { DiscoveredTool } from './mcp.js'

/** The tools an agent asked for, and the declared tools this executor cannot provide. */
export interface ToolSelection {
  tools: DiscoveredTool[]
  unsupported: string[]
  missing: string[]
}

/**
 * Pure: which discovered MCP tools an agent gets. No AGENT_TOOLS means every discovered tool
 * (as in purko). An `mcp` entry names a tool (or `config.capability` does); when it names a
 * server instead, all of that server's tools are offered. Other tool types (function, builtin,
 * api, ...) are reported as unsupported. A later server's tool replaces an earlier one of the
 * same name.
 */
export function selectTools(agentTools: readonly AgentTool[], discovered: readonly DiscoveredTool[]): ToolSelection {
  const byName = new Map<string, DiscoveredTool>()
  for (const t of discovered) byName.set(t.name, t)
  if (agentTools.length === 0) return { tools: [...byName.values()], unsupported: [], missing: [] }

  const chosen = new Map<string, DiscoveredTool>()
  const unsupported: string[] = []
  const missing: string[] = []
  for (const declared of agentTools) {
    if (declared.type !== 'mcp') {
      unsupported.push(`${declared.name} (${declared.type})`)
      continue
    }
    const config = declared.config !== null && typeof declared.config === 'object' ? (declared.config as Record<string, unknown>) : {}
    const wanted = typeof config.capability === 'string' && config.capability !== '' ? config.capability : declared.name
    const tool = byName.get(wanted)
    if (tool !== undefined) {
      chosen.set(tool.name, tool)
      continue
    }
    const ofServer = [...byName.values()].filter((t) => t.server === wanted)
    if (ofServer.length === 0) missing.push(wanted)
    for (const t of ofServer) chosen.set(t.name, t)
  }
  return { tools: [...chosen.values()], unsupported, missing }
}
