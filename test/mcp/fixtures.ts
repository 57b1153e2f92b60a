import type { V1ConfigMap, V1Deployment, V1Pod } from '@kubernetes/client-node'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseAllDocuments } from 'yaml'
import { DEFAULT_UNAVAILABLE_AFTER_MS, type McpFacts } from '../../shared/mcp/plan/plan.js'
import { MCPServerSchema, type MCPServer } from '../../shared/schemas/mcpserver.js'
import { referenceDir } from '../support/reference.js'

export const NOW = '2026-01-01T00:00:00.000Z'

/** An MCPServer as the API server returns it (defaults applied), with a uid and generation. */
export function aServer(spec: Record<string, unknown> = {}, metadata: Record<string, unknown> = {}): MCPServer {
  return MCPServerSchema.parse({
    apiVersion: 'purko.io/v1alpha1', kind: 'MCPServer',
    metadata: { name: 'github', namespace: 'ai-agents', uid: 'uid-github', generation: 1, resourceVersion: '1', ...metadata },
    spec: { image: 'mcp:1', ...spec },
  })
}

/** purko's examples/mcp-servers/github.yaml, as applied. */
export function githubExample(): MCPServer {
  const docs = parseAllDocuments(readFileSync(join(referenceDir(), 'purko', 'examples', 'mcp-servers', 'github.yaml'), 'utf8')).map((d) => d.toJS())
  const server = docs.find((d) => d.kind === 'MCPServer')
  return MCPServerSchema.parse({ ...server, metadata: { ...server.metadata, uid: 'uid-github', generation: 1, resourceVersion: '1' } })
}

export function facts(overrides: Partial<McpFacts> = {}): McpFacts {
  return {
    bridgeImage: 'kinetic:test', agentNamespace: 'ai-agents', sharedNamespaces: [], unavailableAfterMs: DEFAULT_UNAVAILABLE_AFTER_MS,
    registry: null, deployment: null, service: null, pods: null, ...overrides,
  }
}

/** A Deployment as the Deployment controller reports it: available or not. */
export function availableDeployment(base: V1Deployment, available = true, at = NOW): V1Deployment {
  return {
    ...base,
    metadata: { ...base.metadata, generation: 1, resourceVersion: '7' },
    status: {
      observedGeneration: 1, replicas: 1, updatedReplicas: 1, availableReplicas: available ? 1 : 0,
      conditions: [{ type: 'Available', status: available ? 'True' : 'False', lastTransitionTime: new Date(at), reason: available ? 'MinimumReplicasAvailable' : 'MinimumReplicasUnavailable' }],
    },
  }
}

export function aPod(uid: string, restarts = 0, podIP = '10.0.0.7'): V1Pod {
  return {
    metadata: { name: `github-${uid}`, namespace: 'ai-agents', uid, labels: { 'purko.io/mcp-server': 'github' } },
    status: { phase: 'Running', podIP, containerStatuses: [{ name: 'mcp-server', restartCount: restarts, ready: true, image: 'x', imageID: 'x' }] },
  } as V1Pod
}

export function registryMap(servers: string | undefined, resourceVersion = '3'): V1ConfigMap {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'mcp-servers', namespace: 'ai-agents', resourceVersion }, ...(servers !== undefined ? { data: { servers } } : {}) }
}
