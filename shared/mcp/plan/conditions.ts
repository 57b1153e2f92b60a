/**
 * An MCPServer's condition types, and the reasons and messages of its conditions that more than
 * one part of the planner writes. Pure.
 */
import { grantCommand, MCP_GRANT } from '../../core/namespace-access.js'

/** Condition types of an MCPServer. */
export const READY = 'Ready'
export const AVAILABLE = 'Available'
export const TOOLS_DISCOVERED = 'ToolsDiscovered'
/** Another namespace registers a server of the same name that some step also sees (never a takeover). */
export const NAME_CONFLICT = 'NameConflict'

/** purko's message for a Ready managed server. */
export const DEPLOYED_MESSAGE = 'Deployment and Service created, registered in mcp-servers ConfigMap'
export const REGISTERED_MESSAGE = 'Registered in mcp-servers ConfigMap'

/** The reason of `Available` and `Ready` when the server's namespace has not opted in. */
export const NAMESPACE_NOT_ENABLED = 'NamespaceNotEnabled'

/** Pure: the message for a managed server of `namespace` whose workload reads got `refusal`. */
export function notEnabledMessage(namespace: string, refusal: string): string {
  return `Kinetic may not run MCP servers in namespace ${namespace} (${refusal}); to let it: ${grantCommand(MCP_GRANT, namespace)}`
}
