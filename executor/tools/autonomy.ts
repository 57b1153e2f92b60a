import type { AutonomyLevel } from '../config.js'
import type { DiscoveredTool } from './mcp.js'

/**
 * AUTONOMY_LEVEL decides which tools the model is offered:
 * - `manual`: none.
 * - `restricted`: read-only tools only. A tool is read-only when its MCP annotation says
 *   `readOnlyHint: true`. An explicit `readOnlyHint: false` or `destructiveHint: true` makes it
 *   a write tool whatever its name. Without annotations the first word of its name decides
 *   (`list_pods`, `getIssue`, `search-code`): it must be one of READ_ONLY_VERBS.
 * - `supervised`, `full`: all tools.
 * A call to a tool that was filtered out is answered with a BLOCKED message and logged in
 * `tool_call_log` with status `blocked`; it is never sent to the server.
 */

/** Name prefixes that mark a tool without annotations as read-only. */
export const READ_ONLY_VERBS: ReadonlySet<string> = new Set([
  'get', 'list', 'read', 'search', 'describe', 'query', 'fetch', 'show', 'find', 'view', 'lookup',
])

function firstWord(name: string): string {
  const spaced = name.replace(/([a-z0-9])([A-Z])/g, '$1 $2')
  return (spaced.split(/[\s_.\-/:]+/).find((w) => w !== '') ?? '').toLowerCase()
}

/** Pure: whether a tool only reads, by annotation first and by its name's first word otherwise. */
export function isReadOnly(tool: Pick<DiscoveredTool, 'name' | 'readOnlyHint' | 'destructiveHint'>): boolean {
  if (tool.readOnlyHint === true) return true
  if (tool.readOnlyHint === false || tool.destructiveHint === true) return false
  return READ_ONLY_VERBS.has(firstWord(tool.name))
}

/** Pure: why a level forbids a tool, or null when the tool may be offered. */
export function blockReason(level: AutonomyLevel, tool: Pick<DiscoveredTool, 'name' | 'readOnlyHint' | 'destructiveHint'>): string | null {
  if (level === 'manual') return `Manual autonomy — tool '${tool.name}' not allowed. Provide analysis without tools.`
  if (level === 'restricted' && !isReadOnly(tool)) return `Restricted autonomy — write tool '${tool.name}' not allowed.`
  return null
}
