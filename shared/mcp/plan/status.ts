/**
 * The MCPServer's status after a reconcile: its Available, ToolsDiscovered, Ready and NameConflict
 * conditions, its phase, its tools and when the resync tick looks again, from the server's facts and
 * what the shell did; and the transitions worth announcing. Pure: `now` comes in as an ISO string.
 */
import type { Transition } from '../../core/plan.js'
import { setCondition } from '../../core/conditions.js'
import type { Condition } from '../../schemas/condition.js'
import {
  MAX_STATUS_TOOLS, MAX_TOOL_DESCRIPTION, type MCPServer, type MCPServerPhase, type MCPServerStatus, type MCPTool,
} from '../../schemas/mcpserver.js'
import {
  AVAILABLE, DEPLOYED_MESSAGE, NAME_CONFLICT, NAMESPACE_NOT_ENABLED, notEnabledMessage, READY, REGISTERED_MESSAGE, TOOLS_DISCOVERED,
} from './conditions.js'
import { conflictingNamespaces, deploymentAvailable, discoveryFingerprint, registryOf, type McpFacts, type McpOutcome } from './facts.js'
import { backoffMs, epochMs, isoAt, jittered, REFRESH_MS } from './timing.js'
import { invalidQuantities, registryUrl } from './workload.js'

/** A time as client-node gives it (a Date) or as JSON has it (a string); NaN when absent. */
const timeOf = (t: Date | string | undefined) => (t instanceof Date ? t.getTime() : epochMs(t))

/** What one condition says. */
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
  const nowMs = epochMs(now)
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
    const since = Number.isNaN(lost) ? epochMs(rolloutStartTime) : Math.max(epochMs(rolloutStartTime), lost)
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
  const prevNext = epochMs(prev.nextCheckAt)
  const waiting = prevNext > nowMs
  // A failure counts again only when it was tried again (a discovery, or the tick's recheck).
  const failures = !failing ? 0 : sameState && waiting && !d ? prev.failures ?? 1 : (prev.failures ?? 0) + 1
  let nextCheckAt: string | undefined
  if (sameState && waiting && !d && !outcome.registered && !outcome.rolledOut) nextCheckAt = prev.nextCheckAt
  else if (invalid.length > 0) nextCheckAt = undefined // only an edit of the spec helps
  else if (pendingUntil !== undefined) nextCheckAt = isoAt(pendingUntil)
  else if (failing) nextCheckAt = jittered(server, nowMs, backoffMs(failures), `f${failures}`)
  else nextCheckAt = jittered(server, nowMs, REFRESH_MS, fingerprint)

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
    ...(nextCheckAt ? { nextCheckAt } : {}),
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

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`
  if (value !== null && typeof value === 'object') {
    const obj = value as Record<string, unknown>
    return `{${Object.keys(obj).filter((k) => obj[k] !== undefined).sort().map((k) => `${JSON.stringify(k)}:${canonical(obj[k])}`).join(',')}}`
  }
  return JSON.stringify(value)
}
