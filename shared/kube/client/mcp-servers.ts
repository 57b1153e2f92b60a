import { API_GROUP, API_VERSION_NAME } from '../../schemas/labels.js'
import { MCPServerSchema, type MCPServer, type MCPServerStatus } from '../../schemas/mcpserver.js'
import type { KubeApi } from './kube-api.js'

const MCP_SERVERS = { group: API_GROUP, version: API_VERSION_NAME, plural: 'mcpservers' }

/** The port's verbs over MCPServers: reads, finalizer and annotation patches, status writes. */
export function mcpServerVerbs(api: KubeApi) {
  return {
    async getMCPServer(namespace: string, name: string): Promise<MCPServer | null> {
      return api.getCustom(MCP_SERVERS, MCPServerSchema, 'MCPServer', namespace, name)
    },

    async listMCPServers(namespace: string): Promise<MCPServer[]> {
      return api.listCustom(namespace, 'mcpservers', MCPServerSchema)
    },

    async listAllMCPServers(): Promise<MCPServer[]> {
      return api.listAllCustom(MCP_SERVERS, MCPServerSchema)
    },

    async patchMCPServerMetadata(
      namespace: string, name: string, resourceVersion: string,
      metadata: { finalizers?: string[]; annotations?: Record<string, string | null> },
    ): Promise<MCPServer> {
      return api.patchCustomMetadata(MCP_SERVERS, MCPServerSchema, 'MCPServer', namespace, name, resourceVersion, metadata)
    },

    async replaceMCPServerStatus(namespace: string, name: string, resourceVersion: string, status: MCPServerStatus): Promise<MCPServer> {
      return api.replaceCustomStatus(MCP_SERVERS, MCPServerSchema, 'MCPServer', namespace, name, resourceVersion, status)
    },
  }
}
