import type { V1Deployment, V1RoleBinding, V1Service, V1ServiceAccount } from '@kubernetes/client-node'
import { UNCHANGED, type Transition } from '../../core/plan.js'
import { setCondition } from '../../core/conditions.js'
import { sha256Hex } from '../../core/sha256.js'
import { FINALIZER_MCPSERVER, type MCPServer, type MCPServerStatus } from '../../schemas/mcpserver.js'
import { REGISTRY_KEY, sameEntry, type RegistryEntry, type RegistryOwner } from './registry.js'
import {
  ANNOTATION_SPEC_HASH, bridgeRoleBindingManifest, bridgeServiceAccountManifest, deploymentManifest, deploymentReplacement,
  discoveryUrl, hasOwner, invalidQuantities, registryEntry, serverOwnerReference, serviceManifest,
  serviceMatches, serviceReplacement, withSpecHash,
} from './workload.js'
import { READY } from './conditions.js'
import { deploymentAvailable, discoveryFingerprint, isServersEntry, ownerOf, registryOf, type McpFacts, type McpOutcome } from './facts.js'
import { planMcpStatus } from './status.js'
import { backoffMs, epochMs, jittered } from './timing.js'

/**
 * The MCPServer planner: what to write (workload, registry, finalizer), whether to discover,
 * and the status that follows from what happened. Pure: facts and outcomes come in, `now` as an
 * ISO string; the shell (shared/mcp/controller.ts) does the I/O.
 *
 * This file is the planner's entry: the plan of writes is made here, the status after them in
 * status.ts, from the facts of facts.ts. The shell calls both halves (`planMcpServer` before its
 * writes, `planMcpStatus` after them) and reads the same facts, so the names it needs are
 * re-exported here rather than imported from three places.
 */
export { DEFAULT_UNAVAILABLE_AFTER_MS, deploymentAvailable, isServersEntry, registryOf } from './facts.js'
export type { DiscoveryOutcome, McpFacts, McpOutcome } from './facts.js'
export { planMcpStatus } from './status.js'

/** One workload write, in the order the shell applies them. */
export type WorkloadWrite =
  | { kind: 'ServiceAccount'; op: 'create'; object: V1ServiceAccount }
  | { kind: 'RoleBinding'; op: 'create'; object: V1RoleBinding }
  | { kind: 'Deployment'; op: 'create' | 'replace'; object: V1Deployment }
  | { kind: 'Service'; op: 'create' | 'replace'; object: V1Service }

/** A discovery the shell should run, and the fingerprint it counts for. */
export interface DiscoveryRequest {
  url: string
  /** Secret `<secretRef>` key `token` in the MCPServer's namespace, for a bearer server. */
  tokenSecret?: string
  fingerprint: string
}


export interface McpPlan {
  addFinalizer: boolean
  /** Deletion: remove the registry entry, then the finalizer. */
  deleting: boolean
  /** Deletion: the finalizer may go (the entry is gone or provably never was there). */
  releaseFinalizer: boolean
  writes: WorkloadWrite[]
  registry: { op: 'upsert'; entry: RegistryEntry } | { op: 'remove'; owner: RegistryOwner } | null
  discover: DiscoveryRequest | null
  /** The status if everything goes as planned and nothing is discovered (null: unchanged). */
  status: MCPServerStatus | null
  transitions: Transition[]
}

const hash = (text: string, length = 16) => sha256Hex(text).slice(0, length)

/**
 * Pure: whether the server may need work: not observed at its generation, finalizer to add or
 * release, or its `nextCheckAt` has come. False means an event about it (our own status write
 * coming back, say) can be dropped without reading anything.
 */
export function mcpServerIsDue(server: MCPServer, now: string): boolean {
  const meta = server.metadata
  const hasFinalizer = meta.finalizers?.includes(FINALIZER_MCPSERVER) ?? false
  if (meta.deletionTimestamp) return hasFinalizer
  if (!hasFinalizer) return true
  const status = server.status
  if (!status || status.observedGeneration !== meta.generation) return true
  const next = epochMs(status.nextCheckAt)
  return !Number.isNaN(next) && next <= epochMs(now)
}

/** Pure: the first plan for an MCPServer as read; UNCHANGED when nothing is to be written or discovered. */
export function planMcpServer(server: MCPServer, facts: McpFacts, now: string): McpPlan | typeof UNCHANGED {
  const name = server.metadata.name ?? ''
  const hasFinalizer = server.metadata.finalizers?.includes(FINALIZER_MCPSERVER) ?? false
  const registry = registryOf(facts.registry)
  const base: McpPlan = { addFinalizer: false, deleting: false, releaseFinalizer: false, writes: [], registry: null, discover: null, status: null, transitions: [] }

  if (server.metadata.deletionTimestamp) {
    if (!hasFinalizer) return UNCHANGED
    // A finalizer must not wait on what a namespace's own deletion removes: the entry dies with
    // the registry, and the grant to read it may already be gone.
    if (facts.registryNamespaceGone) return { ...base, deleting: true, releaseFinalizer: true }
    if (registry.error) {
      // We cannot tell where our entry is; when the text does not even mention the name, it is not there.
      const text = facts.registry?.data?.[REGISTRY_KEY] ?? ''
      if (!text.includes(name)) return { ...base, deleting: true, releaseFinalizer: true }
      const status = deletionBlockedStatus(server, registry.error, now)
      return status ? { ...base, deleting: true, status, transitions: registryTransitions(server, registry.error) } : UNCHANGED
    }
    const present = registry.entries.some((e) => isServersEntry(server, e, facts.agentNamespace))
    return { ...base, deleting: true, releaseFinalizer: true, registry: present ? { op: 'remove', owner: ownerOf(server) } : null }
  }

  const plan: McpPlan = { ...base, addFinalizer: !hasFinalizer }
  const invalid = server.spec.managed ? invalidQuantities(server) : []
  const forbidden = server.spec.managed && facts.workloadForbidden !== undefined
  if (invalid.length === 0 && server.spec.managed && !forbidden) plan.writes = workloadWrites(server, facts)
  if (invalid.length === 0 && !registry.error && !forbidden) {
    const entry = registryEntry(server)
    if (!sameEntry(registry.entries.find((e) => isServersEntry(server, e, facts.agentNamespace)), entry)) plan.registry = { op: 'upsert', entry }
  }
  plan.discover = invalid.length === 0 && !forbidden ? discoveryRequest(server, facts, plan.writes, now) : null

  const expected: McpOutcome = {
    registered: plan.registry !== null,
    rolledOut: plan.writes.some((w) => w.kind === 'Deployment'),
    ...(registry.error ? { registryError: registry.error } : {}),
  }
  const next = planMcpStatus(server, facts, expected, now)
  plan.status = next.status
  plan.transitions = next.transitions
  if (!plan.addFinalizer && plan.writes.length === 0 && !plan.registry && !plan.discover && !plan.status) return UNCHANGED
  return plan
}

function workloadWrites(server: MCPServer, facts: McpFacts): WorkloadWrite[] {
  const writes: WorkloadWrite[] = []
  const namespace = server.metadata.namespace ?? ''
  if (server.spec.transport === 'stdio' && facts.bridge) {
    if (!facts.bridge.serviceAccount) writes.push({ kind: 'ServiceAccount', op: 'create', object: bridgeServiceAccountManifest(namespace) })
    if (!facts.bridge.roleBinding) writes.push({ kind: 'RoleBinding', op: 'create', object: bridgeRoleBindingManifest(namespace) })
  }
  const owner = serverOwnerReference(server)
  const desired = deploymentManifest(server, facts.bridgeImage)
  const specHash = hash(JSON.stringify(desired.spec))
  const live = facts.deployment
  if (!live) writes.push({ kind: 'Deployment', op: 'create', object: withSpecHash(desired, specHash) })
  else if (live.metadata?.annotations?.[ANNOTATION_SPEC_HASH] !== specHash || !hasOwner(live.metadata?.ownerReferences, owner)) {
    writes.push({ kind: 'Deployment', op: 'replace', object: deploymentReplacement(live, desired, specHash, owner) })
  }
  const service = serviceManifest(server)
  if (!facts.service) writes.push({ kind: 'Service', op: 'create', object: service })
  else if (!serviceMatches(facts.service, service) || !hasOwner(facts.service.metadata?.ownerReferences, owner)) {
    writes.push({ kind: 'Service', op: 'replace', object: serviceReplacement(facts.service, service, owner) })
  }
  return writes
}

function discoveryRequest(server: MCPServer, facts: McpFacts, writes: readonly WorkloadWrite[], now: string): DiscoveryRequest | null {
  const managed = server.spec.managed
  if (managed && (server.spec.replicas === 0 || writes.some((w) => w.kind === 'Deployment') || !deploymentAvailable(facts.deployment))) return null
  const fingerprint = discoveryFingerprint(server, facts.pods)
  const status = server.status
  const due = status?.discoveredFor !== fingerprint
    || status.observedGeneration !== server.metadata.generation
    || (epochMs(status.nextCheckAt) <= epochMs(now))
  if (!due) return null
  const podIP = (facts.pods ?? []).find((p) => p.status?.phase === 'Running' && p.status.podIP)?.status?.podIP
  const url = discoveryUrl(server, podIP)
  if (!url) return null
  return { url, fingerprint, ...(server.spec.auth === 'bearer' && server.spec.secretRef ? { tokenSecret: server.spec.secretRef } : {}) }
}
function deletionBlockedStatus(server: MCPServer, error: string, now: string): MCPServerStatus | null {
  const prev = server.status ?? {}
  const message = `ConfigMap mcp-servers key servers cannot be read (${error}); the entry of ${server.metadata.name} cannot be removed, so deletion waits until it is fixed`
  const prevReady = prev.conditions?.find((c) => c.type === READY)
  if (prevReady?.reason === 'RegistryUnparseable' && prevReady.message === message && epochMs(prev.nextCheckAt) > epochMs(now)) return null
  const failures = (prev.failures ?? 0) + 1
  return {
    ...prev,
    phase: 'Error',
    message,
    conditions: setCondition(prev.conditions, { type: READY, status: 'False', reason: 'RegistryUnparseable', message }, now),
    failures,
    nextCheckAt: jittered(server, epochMs(now), backoffMs(failures), `d${failures}`),
  }
}

function registryTransitions(server: MCPServer, error: string): Transition[] {
  return [{
    kind: 'registry.unparseable', type: 'Warning', reason: 'RegistryUnparseable', record: true,
    message: `Cannot remove ${server.metadata.name} from ConfigMap mcp-servers: key servers cannot be read (${error})`,
  }]
}
