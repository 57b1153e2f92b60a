import type { V1ConfigMap, V1Deployment, V1Pod, V1RoleBinding, V1Service, V1ServiceAccount } from '@kubernetes/client-node'
import { UNCHANGED, type Transition } from '../../core/plan.js'
import { setCondition } from '../../core/conditions.js'
import { grantCommand, MCP_GRANT } from '../../core/namespace-access.js'
import { sha256Hex } from '../../core/sha256.js'
import type { Condition } from '../../schemas/condition.js'
import {
  FINALIZER_MCPSERVER, MAX_STATUS_TOOLS, MAX_TOOL_DESCRIPTION, type MCPServer, type MCPServerPhase, type MCPServerStatus, type MCPTool,
} from '../../schemas/mcpserver.js'
import { ownedBy, ownerNamespace, parseRegistry, REGISTRY_KEY, sameEntry, type RegistryEntry, type RegistryOwner } from './registry.js'
import { seenTogether } from './visibility.js'
import {
  ANNOTATION_SPEC_HASH, bridgeRoleBindingManifest, bridgeServiceAccountManifest, deploymentManifest, deploymentReplacement,
  discoveryUrl, hasOwner, invalidQuantities, isOwnUnownedEntry, registryEntry, registryUrl, serverOwnerReference, serviceManifest,
  serviceMatches, serviceReplacement, withSpecHash,
} from './workload.js'

/**
 * The MCPServer planner: what to write (workload, registry, finalizer), whether to discover,
 * and the status that follows from what happened. Pure: facts and outcomes come in, `now` as an
 * ISO string; the shell (shared/mcp/controller.ts) does the I/O.
 */

/** Default time a managed server may take to become Available before `DeploymentUnavailable`. */
export const DEFAULT_UNAVAILABLE_AFTER_MS = 10 * 60_000
/** A Ready server is rediscovered this often by the resync tick (tools of a running server may change). */
export const REFRESH_MS = 30 * 60_000
/** First retry after a failure; doubles per failure in a row, up to {@link MAX_BACKOFF_MS}. */
export const FIRST_BACKOFF_MS = 30_000
export const MAX_BACKOFF_MS = 10 * 60_000

/** Condition types of an MCPServer. */
export const READY = 'Ready'
export const AVAILABLE = 'Available'
export const TOOLS_DISCOVERED = 'ToolsDiscovered'
/** Another namespace registers a server of the same name that some step also sees (never a takeover). */
export const NAME_CONFLICT = 'NameConflict'

/** purko's message for a Ready managed server. */
export const DEPLOYED_MESSAGE = 'Deployment and Service created, registered in mcp-servers ConfigMap'
export const REGISTERED_MESSAGE = 'Registered in mcp-servers ConfigMap'

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
const ms = (iso: string | undefined) => (iso ? Date.parse(iso) : Number.NaN)
const at = (t: number) => new Date(t).toISOString()
/** A time as client-node gives it (a Date) or as JSON has it (a string); NaN when absent. */
const timeOf = (t: Date | string | undefined) => (t instanceof Date ? t.getTime() : ms(t))

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
  return `${generation}/${hash(seen.join(','))}`
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

/**
 * Pure: jittered time after `from`: `base` plus up to 20% derived from the uid and a salt, so
 * every replica and every tick agrees on when a server is due.
 */
export function jittered(server: MCPServer, from: number, base: number, salt: string): string {
  const fraction = Number.parseInt(hash(`${server.metadata.uid ?? server.metadata.name ?? ''}/${salt}`, 8), 16) / 0xffffffff
  return at(from + base + Math.floor(base * 0.2 * fraction))
}

/** The reason of `Available` and `Ready` when the server's namespace has not opted in. */
export const NAMESPACE_NOT_ENABLED = 'NamespaceNotEnabled'

/** Pure: the message for a managed server of `namespace` whose workload reads got `refusal`. */
export function notEnabledMessage(namespace: string, refusal: string): string {
  return `Kinetic may not run MCP servers in namespace ${namespace} (${refusal}); to let it: ${grantCommand(MCP_GRANT, namespace)}`
}

/** Pure: backoff after `failures` failures in a row (30 s, doubling, at most 10 min). */
export function backoffMs(failures: number): number {
  return Math.min(MAX_BACKOFF_MS, FIRST_BACKOFF_MS * 2 ** Math.max(0, failures - 1))
}

/**
 * Pure: whether the server may need work: not observed at its generation, finalizer to add or
 * release, or its `nextCheckTime` has come. False means an event about it (our own status write
 * coming back, say) can be dropped without reading anything.
 */
export function mcpServerIsDue(server: MCPServer, now: string): boolean {
  const meta = server.metadata
  const hasFinalizer = meta.finalizers?.includes(FINALIZER_MCPSERVER) ?? false
  if (meta.deletionTimestamp) return hasFinalizer
  if (!hasFinalizer) return true
  const status = server.status
  if (!status || status.observedGeneration !== meta.generation) return true
  const next = ms(status.nextCheckTime)
  return !Number.isNaN(next) && next <= ms(now)
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
    || (ms(status.nextCheckTime) <= ms(now))
  if (!due) return null
  const podIP = (facts.pods ?? []).find((p) => p.status?.phase === 'Running' && p.status.podIP)?.status?.podIP
  const url = discoveryUrl(server, podIP)
  if (!url) return null
  return { url, fingerprint, ...(server.spec.auth === 'bearer' && server.spec.secretRef ? { tokenSecret: server.spec.secretRef } : {}) }
}

interface Verdict { status: Condition['status']; reason: string; message: string }

/**
 * Pure: the status after a reconcile with this outcome, and the transitions worth announcing;
 * `status: null` when it would say nothing new. Status reports what was observed: a Deployment
 * written this round is not available yet, a discovery not run keeps the last one's result.
 */
export function planMcpStatus(server: MCPServer, facts: McpFacts, outcome: McpOutcome, now: string): { status: MCPServerStatus | null; transitions: Transition[] } {
  const prev = server.status ?? {}
  const name = server.metadata.name ?? ''
  const generation = server.metadata.generation
  const managed = server.spec.managed
  const nowMs = ms(now)
  const invalid = managed ? invalidQuantities(server) : []
  const fingerprint = discoveryFingerprint(server, facts.pods)

  const rolloutStartTime = managed ? (outcome.rolledOut ? now : prev.rolloutStartTime ?? now) : undefined
  // --- Available ---
  let available: Verdict
  let pendingUntil: number | undefined
  if (!managed) available = { status: 'True', reason: 'Unmanaged', message: `no workload: ${server.spec.url ?? ''} is registered as it is` }
  else if (invalid.length > 0) available = { status: 'False', reason: 'InvalidResources', message: `not Kubernetes quantities: ${invalid.join(', ')}` }
  else if (facts.workloadForbidden !== undefined) {
    available = { status: 'False', reason: NAMESPACE_NOT_ENABLED, message: notEnabledMessage(server.metadata.namespace ?? '', facts.workloadForbidden) }
  }
  else if (outcome.failure && outcome.failure.reason !== 'RegistryFailed') available = { status: 'False', reason: outcome.failure.reason, message: outcome.failure.message }
  else if (server.spec.replicas === 0) available = { status: 'False', reason: 'ScaledToZero', message: 'spec.replicas is 0' }
  else if (!outcome.rolledOut && deploymentAvailable(facts.deployment)) {
    const n = facts.deployment?.status?.availableReplicas ?? 0
    available = { status: 'True', reason: 'MinimumReplicasAvailable', message: `Deployment ${name} has ${n} of ${server.spec.replicas} replicas available` }
  } else {
    const own = facts.deployment?.status?.conditions?.find((c) => c.type === 'Available' && c.status === 'False')
    // Counted from our rollout, or from when the Deployment lost its last available replica.
    const lost = outcome.rolledOut ? Number.NaN : timeOf(own?.lastTransitionTime)
    const since = Number.isNaN(lost) ? ms(rolloutStartTime) : Math.max(ms(rolloutStartTime), lost)
    const waited = nowMs - since
    const ready = facts.deployment?.status?.availableReplicas ?? 0
    if (waited >= facts.unavailableAfterMs) {
      const minutes = Math.round(facts.unavailableAfterMs / 60_000)
      const progressing = facts.deployment?.status?.conditions?.find((c) => c.type === 'Progressing' && c.status === 'False')
      available = {
        status: 'False', reason: 'DeploymentUnavailable',
        message: `Deployment ${name} has had no available replica for ${minutes} minutes or more${progressing?.message ? ` (${progressing.message})` : ''}`,
      }
    } else {
      available = { status: 'False', reason: 'Progressing', message: `waiting for Deployment ${name} to become available (${ready} of ${server.spec.replicas} replicas)` }
      pendingUntil = since + facts.unavailableAfterMs
    }
  }

  // --- ToolsDiscovered (and the tool fields) ---
  let tools: Pick<MCPServerStatus, 'toolCount' | 'tools' | 'toolsTruncated' | 'lastDiscovery' | 'discoveredTransport' | 'discoveredFor'> = {
    ...(prev.toolCount !== undefined ? { toolCount: prev.toolCount } : {}),
    ...(prev.tools ? { tools: prev.tools } : {}),
    ...(prev.toolsTruncated ? { toolsTruncated: prev.toolsTruncated } : {}),
    ...(prev.lastDiscovery ? { lastDiscovery: prev.lastDiscovery } : {}),
    ...(prev.discoveredTransport ? { discoveredTransport: prev.discoveredTransport } : {}),
    ...(prev.discoveredFor ? { discoveredFor: prev.discoveredFor } : {}),
  }
  const prevTools = prev.conditions?.find((c) => c.type === TOOLS_DISCOVERED)
  let discovered: Verdict
  const d = outcome.discovery
  if (d?.ok) {
    const list = boundedTools(d.tools)
    const truncated = d.truncated || d.tools.length > list.length
    tools = { toolCount: list.length, tools: list, ...(truncated ? { toolsTruncated: true } : {}), lastDiscovery: now, discoveredTransport: d.transport, discoveredFor: fingerprint }
    discovered = { status: 'True', reason: 'Discovered', message: `${list.length}${truncated ? '+' : ''} tools over ${d.transport === 'sse' ? 'legacy SSE' : 'Streamable HTTP'}` }
  } else if (d && !d.ok) {
    tools = { toolCount: 0, tools: [], ...(prev.lastDiscovery ? { lastDiscovery: prev.lastDiscovery } : {}), discoveredFor: fingerprint }
    discovered = { status: 'False', reason: d.reason, message: d.message }
  } else if (available.status === 'True' && prev.discoveredFor === fingerprint && prevTools) {
    discovered = { status: prevTools.status, reason: prevTools.reason ?? '', message: prevTools.message ?? '' }
  } else if (available.status === 'True' && managed && server.spec.hostNetwork && !(facts.pods ?? []).some((p) => p.status?.podIP)) {
    discovered = { status: 'False', reason: 'Unreachable', message: 'no running pod with an IP to reach a host-network server on' }
  } else {
    discovered = { status: 'Unknown', reason: 'Waiting', message: available.status === 'True' ? 'discovery not run yet' : 'waiting for the server to become available' }
  }

  // --- Ready and phase ---
  // purko's: Ready once the server is deployed (or, unmanaged, registered) and serving. What
  // discovery found is ToolsDiscovered's to say: a server whose tools cannot be listed (a
  // NetworkPolicy, an auth it wants, a slow start) is still running.
  let ready: Verdict
  let phase: MCPServerPhase
  if (outcome.registryError) {
    ready = { status: 'False', reason: 'RegistryUnparseable', message: `ConfigMap ${facts.agentNamespace}/mcp-servers key servers cannot be read (${outcome.registryError}); fix or delete it, it is not overwritten` }
    phase = 'Error'
  } else if (outcome.failure?.reason === 'RegistryFailed') {
    ready = { status: 'False', reason: 'RegistryFailed', message: outcome.failure.message }
    phase = 'Error'
  } else if (available.status !== 'True') {
    ready = { status: 'False', reason: available.reason, message: available.message }
    phase = available.reason === 'Progressing' || available.reason === 'ScaledToZero' ? 'Pending' : 'Error'
  } else {
    ready = managed ? { status: 'True', reason: 'Deployed', message: DEPLOYED_MESSAGE } : { status: 'True', reason: 'Registered', message: REGISTERED_MESSAGE }
    phase = 'Ready'
  }

  // --- When the resync tick looks again ---
  // A failed discovery is retried with the backoff too, though the phase stays Ready.
  const failing = phase === 'Error' || discovered.status === 'False'
  const prevReady = prev.conditions?.find((c) => c.type === READY)
  const sameState = prevReady?.status === ready.status && prevReady.reason === ready.reason && prev.observedGeneration === generation
    && prevTools?.status === discovered.status && prevTools.reason === discovered.reason
  const prevNext = ms(prev.nextCheckTime)
  const waiting = prevNext > nowMs
  // A failure counts again only when it was tried again (a discovery, or the tick's recheck).
  const failures = !failing ? 0 : sameState && waiting && !d ? prev.failures ?? 1 : (prev.failures ?? 0) + 1
  let nextCheckTime: string | undefined
  if (sameState && waiting && !d && !outcome.registered && !outcome.rolledOut) nextCheckTime = prev.nextCheckTime
  else if (invalid.length > 0) nextCheckTime = undefined // only an edit of the spec helps
  else if (pendingUntil !== undefined) nextCheckTime = at(pendingUntil)
  else if (failing) nextCheckTime = jittered(server, nowMs, backoffMs(failures), `f${failures}`)
  else nextCheckTime = jittered(server, nowMs, REFRESH_MS, fingerprint)

  let conditions = prev.conditions
  conditions = setCondition(conditions, { type: READY, ...ready, ...(generation !== undefined ? { observedGeneration: generation } : {}) }, now)
  conditions = setCondition(conditions, { type: AVAILABLE, ...available, ...(generation !== undefined ? { observedGeneration: generation } : {}) }, now)
  conditions = setCondition(conditions, { type: TOOLS_DISCOVERED, ...discovered, ...(generation !== undefined ? { observedGeneration: generation } : {}) }, now)
  const conflict = outcome.registryError ? null : nameConflict(server, facts)
  if (conflict && (conflict.status === 'True' || prev.conditions?.some((c) => c.type === NAME_CONFLICT))) {
    conditions = setCondition(conditions, { type: NAME_CONFLICT, ...conflict, ...(generation !== undefined ? { observedGeneration: generation } : {}) }, now)
  }

  const status: MCPServerStatus = {
    phase,
    message: ready.message,
    conditions,
    ...(generation !== undefined ? { observedGeneration: generation } : {}),
    ...(invalid.length === 0 && !outcome.registryError ? { url: registryUrl(server) } : prev.url ? { url: prev.url } : {}),
    ...tools,
    ...(failures > 0 ? { failures } : {}),
    ...(nextCheckTime ? { nextCheckTime } : {}),
    ...(rolloutStartTime ? { rolloutStartTime } : {}),
  }
  const changed = canonical(status) !== canonical(prev)
  return { status: changed ? status : null, transitions: changed || outcome.registered ? transitionsFor(server, prev, status, outcome, facts) : [] }
}

/** Pure: the NameConflict verdict from the registry as read (never a reason to change what is registered). */
function nameConflict(server: MCPServer, facts: McpFacts): Verdict {
  const others = conflictingNamespaces(server, registryOf(facts.registry).entries, facts)
  const name = server.metadata.name ?? ''
  if (others.length === 0) return { status: 'False', reason: 'UniqueName', message: `no other namespace registers a server named ${name} that a step also sees` }
  const listed = others.slice(0, 5).join(', ') + (others.length > 5 ? ` and ${others.length - 5} more` : '')
  return {
    status: 'True', reason: NAME_CONFLICT,
    message: `namespace ${listed} also registers a server named ${name}; neither entry replaces the other: a step that sees both uses `
      + `the one of its own namespace, then the agent namespace's (${facts.agentNamespace}), then the shared namespaces' in their order`,
  }
}

function boundedTools(tools: readonly { name: string; description?: string; readOnly?: boolean }[]): MCPTool[] {
  return tools.slice(0, MAX_STATUS_TOOLS).map((t) => ({
    name: t.name.slice(0, 253),
    ...(t.description ? { description: [...t.description].slice(0, MAX_TOOL_DESCRIPTION).join('') } : {}),
    ...(t.readOnly !== undefined ? { readOnly: t.readOnly } : {}),
  }))
}

function transitionsFor(server: MCPServer, prev: MCPServerStatus, next: MCPServerStatus, outcome: McpOutcome, facts: McpFacts): Transition[] {
  const out: Transition[] = []
  const of = (s: MCPServerStatus, type: string) => s.conditions?.find((c) => c.type === type)
  const url = registryUrl(server)
  if (outcome.rolledOut) {
    out.push({ kind: 'deployed', type: 'Normal', reason: 'Deployed', message: `Applied Deployment and Service ${server.metadata.name}`, record: true })
  }
  if (outcome.registered) {
    out.push({ kind: 'registered', type: 'Normal', reason: 'Registered', message: `Registered ${server.metadata.name} at ${url} in ConfigMap ${facts.agentNamespace}/mcp-servers`, record: true, data: { url } })
  }
  const before = of(prev, TOOLS_DISCOVERED)
  const after = of(next, TOOLS_DISCOVERED)
  if (outcome.discovery?.ok && (before?.status !== 'True' || JSON.stringify(prev.tools ?? []) !== JSON.stringify(next.tools ?? []))) {
    out.push({
      kind: 'tools.discovered', type: 'Normal', reason: 'ToolsDiscovered', message: `Discovered ${after?.message ?? ''}`, record: true,
      data: { toolCount: next.toolCount, tools: (next.tools ?? []).map((t) => t.name) },
    })
  }
  if (outcome.discovery && !outcome.discovery.ok && (before?.status !== 'False' || before.reason !== after?.reason || before.message !== after?.message)) {
    out.push({
      kind: 'discovery.failed', type: 'Warning', reason: 'DiscoveryFailed', record: true, data: { failure: outcome.discovery.reason },
      message: `Tool discovery failed (${after?.reason ?? outcome.discovery.reason}): ${after?.message ?? ''}`,
    })
  }
  const c0 = of(prev, NAME_CONFLICT)
  const c1 = of(next, NAME_CONFLICT)
  if (c1?.status === 'True' && (c0?.status !== 'True' || c0.message !== c1.message)) {
    out.push({ kind: 'name.conflict', type: 'Warning', reason: NAME_CONFLICT, message: c1.message ?? '', record: true })
  }
  const r0 = of(prev, READY)
  const r1 = of(next, READY)
  if (r1 && (r0?.status !== r1.status || r0.reason !== r1.reason)) {
    if (r1.status === 'True') out.push({ kind: 'ready', type: 'Normal', reason: r1.reason ?? 'Ready', message: r1.message ?? '', record: true })
    else if (!out.some((t) => t.kind === 'discovery.failed')) {
      const warning = next.phase === 'Error'
      out.push({
        kind: kindFor(r1.reason ?? ''), type: warning ? 'Warning' : 'Normal', reason: r1.reason ?? 'NotReady', message: r1.message ?? '', record: true,
      })
    }
  }
  return out
}

function kindFor(reason: string): string {
  switch (reason) {
    case 'DeploymentUnavailable': return 'deployment.unavailable'
    case 'RegistryUnparseable': return 'registry.unparseable'
    case 'Progressing': case 'ScaledToZero': return 'pending'
    default: return 'failed'
  }
}

function deletionBlockedStatus(server: MCPServer, error: string, now: string): MCPServerStatus | null {
  const prev = server.status ?? {}
  const message = `ConfigMap mcp-servers key servers cannot be read (${error}); the entry of ${server.metadata.name} cannot be removed, so deletion waits until it is fixed`
  const prevReady = prev.conditions?.find((c) => c.type === READY)
  if (prevReady?.reason === 'RegistryUnparseable' && prevReady.message === message && ms(prev.nextCheckTime) > ms(now)) return null
  const failures = (prev.failures ?? 0) + 1
  return {
    ...prev,
    phase: 'Error',
    message,
    conditions: setCondition(prev.conditions, { type: READY, status: 'False', reason: 'RegistryUnparseable', message }, now),
    failures,
    nextCheckTime: jittered(server, ms(now), backoffMs(failures), `d${failures}`),
  }
}

function registryTransitions(server: MCPServer, error: string): Transition[] {
  return [{
    kind: 'registry.unparseable', type: 'Warning', reason: 'RegistryUnparseable', record: true,
    message: `Cannot remove ${server.metadata.name} from ConfigMap mcp-servers: key servers cannot be read (${error})`,
  }]
}

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`
  if (value !== null && typeof value === 'object') {
    const obj = value as Record<string, unknown>
    return `{${Object.keys(obj).filter((k) => obj[k] !== undefined).sort().map((k) => `${JSON.stringify(k)}:${canonical(obj[k])}`).join(',')}}`
  }
  return JSON.stringify(value)
}
