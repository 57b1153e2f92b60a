/**
 * What the MCPServer planner reads (the server's facts, gathered by the shell) and what the shell
 * reports back after carrying out a plan, with the pure readings both halves of the planner make of
 * them: the registry as read, which entry is the server's own, the name conflicts a step would see,
 * what a discovery counts for and whether the Deployment serves.
 */
import type { V1ConfigMap, V1Deployment, V1Pod, V1RoleBinding, V1Service, V1ServiceAccount } from '@kubernetes/client-node'
import { sha256Hex } from '../../core/sha256.js'
import type { MCPServer } from '../../schemas/mcpserver.js'
import { ownedBy, ownerNamespace, parseRegistry, REGISTRY_KEY, type RegistryEntry, type RegistryOwner } from './registry.js'
import { seenTogether } from './visibility.js'
import { isOwnUnownedEntry } from './workload.js'

/** Default time a managed server may take to become Available before `DeploymentUnavailable`. */
export const DEFAULT_UNAVAILABLE_AFTER_MS = 10 * 60_000

/** What the planner needs besides the MCPServer. */
export interface McpFacts {
  /** Image of the stdio bridge sidecar (the Kinetic image). */
  bridgeImage: string
  /** Namespace of the registry ConfigMap. */
  agentNamespace: string
  /** Namespaces whose servers every step sees (shared/mcp/plan/visibility.ts), for name conflicts. */
  sharedNamespaces: readonly string[]
  unavailableAfterMs: number
  /** The registry ConfigMap as read (null when absent). */
  registry: V1ConfigMap | null
  /**
   * Deletion only: the agent namespace is terminating or gone, so the registry (and the Role that
   * lets this function read it) goes with it and there is no entry left to remove.
   */
  registryNamespaceGone?: boolean
  /**
   * Managed servers only: the API server's refusal when this function may not read the server's
   * workload (its namespace has no RoleBinding to kinetic-mcp-workloads).
   */
  workloadForbidden?: string
  /** Managed servers only (null otherwise, or when absent). */
  deployment: V1Deployment | null
  service: V1Service | null
  /** Pods of the server, read only once its Deployment is available (for the restart fingerprint). */
  pods: V1Pod[] | null
  /** stdio only: the bridge identity in the server's namespace (undefined when not stdio). */
  bridge?: { serviceAccount: V1ServiceAccount | null; roleBinding: V1RoleBinding | null }
}

/** Result of a discovery as the shell reports it (the shape of discovery.ts's result). */
export type DiscoveryOutcome =
  | { ok: true; transport: 'streamable-http' | 'sse'; tools: { name: string; description?: string; readOnly?: boolean }[]; truncated: boolean }
  | { ok: false; reason: string; message: string }

/** What the shell did with a plan; the status is computed from it. */
export interface McpOutcome {
  /** A write refused for good (not a conflict, not an outage). */
  failure?: { reason: 'DeploymentFailed' | 'ServiceFailed' | 'RegistryFailed' | 'BridgeIdentityFailed'; message: string }
  /** The registry content could not be read; nothing was written to it. */
  registryError?: string
  /** Our registry entry was written (added or changed). */
  registered: boolean
  /** The Deployment was created or its spec replaced. */
  rolledOut: boolean
  discovery?: DiscoveryOutcome
}

/** Pure: the registry entries as read, or the reason they cannot be. */
export function registryOf(configMap: V1ConfigMap | null): { entries: RegistryEntry[]; error?: string } {
  return parseRegistry(configMap?.data?.[REGISTRY_KEY])
}

/** Pure: the owner of the server's registry entry: its namespace and name. */
export function ownerOf(server: MCPServer): RegistryOwner {
  return { namespace: server.metadata.namespace ?? '', name: server.metadata.name ?? '' }
}

/** Pure: whether a registry entry is the server's own (written by it, or by it before entries named their owner). */
export function isServersEntry(server: MCPServer, entry: RegistryEntry, agentNamespace: string): boolean {
  return ownedBy(entry, ownerOf(server), agentNamespace) || isOwnUnownedEntry(server, entry)
}

/**
 * Pure: the namespaces (sorted) that register a server of the same name which some step sees
 * together with this one; empty when none does.
 */
export function conflictingNamespaces(server: MCPServer, entries: readonly RegistryEntry[], facts: Pick<McpFacts, 'agentNamespace' | 'sharedNamespaces'>): string[] {
  const own = server.metadata.namespace ?? ''
  const vis = { agentNamespace: facts.agentNamespace, shared: facts.sharedNamespaces }
  const others = entries
    .filter((e) => e.name === server.metadata.name && !isServersEntry(server, e, facts.agentNamespace))
    .map((e) => ownerNamespace(e, facts.agentNamespace))
    .filter((ns) => ns !== own && seenTogether(own, ns, vis))
  return [...new Set(others)].sort()
}

/**
 * Pure: what discovery is "for": the spec generation, and for a managed server the pods it ran
 * on (uid and restarts), so a restarted or replaced pod rediscovers.
 */
export function discoveryFingerprint(server: MCPServer, pods: readonly V1Pod[] | null): string {
  const generation = `g${server.metadata.generation ?? 0}`
  if (!server.spec.managed) return generation
  const seen = (pods ?? [])
    .filter((p) => !p.metadata?.deletionTimestamp && p.status?.phase === 'Running')
    .map((p) => `${p.metadata?.uid ?? p.metadata?.name ?? ''}:${(p.status?.containerStatuses ?? []).reduce((n, c) => n + (c.restartCount ?? 0), 0)}`)
    .sort()
  return `${generation}/${sha256Hex(seen.join(',')).slice(0, 16)}`
}

/** Pure: whether a Deployment serves its current spec with at least one available replica. */
export function deploymentAvailable(deployment: V1Deployment | null): boolean {
  if (!deployment) return false
  const status = deployment.status
  const generation = deployment.metadata?.generation ?? 0
  if ((status?.observedGeneration ?? 0) < generation) return false
  const available = status?.conditions?.find((c) => c.type === 'Available')
  return available?.status === 'True' && (status?.availableReplicas ?? 0) >= 1
    && (status?.updatedReplicas ?? 0) >= Math.min(1, deployment.spec?.replicas ?? 1)
}
