import type { V1ConfigMap } from '@kubernetes/client-node'
import { ALARM_VERBS, armTickAlarmIfSooner, type ReconcileFrom } from '../ticks/alarm.js'
import { apiMessage, ConflictError, ForbiddenError, TransientError } from '../core/errors.js'
import { applyChildWrite } from '../kube/apply.js'
import type { Kube, KubeVerbs } from '../kube/port.js'
import type { DiscoveryOptions, DiscoveryResult, DiscoveryTarget } from './discovery.js'
import {
  DEFAULT_UNAVAILABLE_AFTER_MS, deploymentAvailable, isServersEntry, planMcpServer, planMcpStatus, registryOf,
  type DiscoveryOutcome, type McpFacts, type McpOutcome, type McpPlan,
} from './plan/plan.js'
import { REGISTRY_CONFIGMAP, REGISTRY_KEY, removeEntry, renderRegistry, upsertEntry, type RegistryEntry } from './plan/registry.js'
import { BRIDGE_IDENTITY } from './plan/workload.js'
import { FINALIZER_MCPSERVER, LABEL_MCP_SERVER, type MCPServer, type MCPServerStatus } from '../schemas/mcpserver.js'
import { ENGINE_VERBS, reconcile, retryingConflicts, type Controller, type EngineDeps, type Reconciled } from '../engine/controller.js'
import { UNCHANGED, type ControllerPlan } from '../core/plan.js'
import { grantCommand, MCP_GRANT } from '../core/namespace-access.js'

/** The port verbs of reconciling an MCPServer: it, its workload and bridge identity, the registry, a bearer token, the resync alarm. */
export const MCP_SERVER_VERBS = [
  ...ENGINE_VERBS, ...ALARM_VERBS, 'getMCPServer', 'patchMCPServerMetadata', 'replaceMCPServerStatus', 'getNamespace', 'getSecret', 'listPods',
  'getDeployment', 'createDeployment', 'replaceDeployment', 'getService', 'createService', 'replaceService',
  'getServiceAccount', 'createServiceAccount', 'getRoleBinding', 'createRoleBinding', 'getConfigMap', 'createConfigMap', 'replaceConfigMap',
] as const satisfies readonly (keyof Kube)[]
export type McpServerKube = KubeVerbs<typeof MCP_SERVER_VERBS>

/** What the MCPServer controller needs besides the engine's dependencies (both injectable for tests). */
export interface McpServerDeps<K extends McpServerKube = Kube> extends EngineDeps<K> {
  /** MCP discovery; default: shared/mcp/discovery.ts over the network. */
  discover?: (target: DiscoveryTarget, opts?: DiscoveryOptions) => Promise<DiscoveryResult>
  /** Time a managed server may take to become Available (default 10 minutes). */
  unavailableAfterMs?: number
}

/** Whole reconciles tried when another writer wins a race (the registry has many writers). */
const TRIES = 8

/** The MCPServer planner's plan, refined by what its child writes and discovery found. */
export interface McpWork extends ControllerPlan {
  plan: McpPlan
  /** The status to write (the plan's, redone after the writes and discovery); null: none. */
  status: MCPServerStatus | null
  resourceVersion: string
  /** Writes that took effect, e.g. `create Deployment/search`, `register search`. */
  written: string[]
  /** Whether tool discovery ran. */
  discovered: boolean
}

/**
 * Reads an MCPServer fresh and makes the world match it: finalizer first, then the bridge
 * identity, Deployment and Service (managed servers), the registry entry (resourceVersion-guarded
 * read-modify-write of the shared ConfigMap), tool discovery when it is due, and the status last.
 * On deletion the registry entry goes, then the finalizer; ownerReferences take the workload.
 * A lost race re-plans from fresh state a few times, then reaches the Broker as a 409.
 */
export function reconcileMcpServer(deps: McpServerDeps<McpServerKube>, namespace: string, name: string, options: ReconcileFrom = {}): Promise<Reconciled<McpWork>> {
  return reconcile(controllerFor(deps, options.tick !== true), deps, namespace, name)
}

function controllerFor(deps: McpServerDeps<McpServerKube>, arms: boolean): Controller<MCPServer, McpFacts, McpWork, McpServerKube> {
  return {
    kind: 'MCPServer',
    conflictRetries: TRIES - 1,
    read: (d, namespace, name) => d.kube.getMCPServer(namespace, name),
    gather: (d, server) => gatherFacts(d, server, deps.unavailableAfterMs ?? DEFAULT_UNAVAILABLE_AFTER_MS),
    plan(server, facts, now) {
      const plan = planMcpServer(server, facts, now)
      if (plan === UNCHANGED) return UNCHANGED
      return { plan, status: plan.status, resourceVersion: server.metadata.resourceVersion ?? '', written: [], discovered: false, transitions: plan.transitions }
    },
    writeChildren: (d, server, facts, work) => writeChildren({ ...deps, ...d }, server, facts, work),
    writeParent: async ({ kube }, server, work) => {
      const namespace = server.metadata.namespace ?? ''
      const name = server.metadata.name ?? ''
      if (work.plan.deleting && work.plan.releaseFinalizer) {
        const finalizers = (server.metadata.finalizers ?? []).filter((f) => f !== FINALIZER_MCPSERVER)
        await kube.patchMCPServerMetadata(namespace, name, work.resourceVersion, { finalizers })
        work.written.push(`release MCPServer/${name}`)
        return
      }
      if (work.status) {
        await kube.replaceMCPServerStatus(namespace, name, work.resourceVersion, work.status)
        work.written.push(`status MCPServer/${name}`)
        // A check sooner than the one before (or the first): the MCP servers alarm fires by then.
        if (arms) await armTickAlarmIfSooner(deps, 'mcpservers-resync', server.status?.nextCheckAt, work.status.nextCheckAt)
      }
    },
    eventSeed: (server) => `${server.metadata.uid ?? ''}/${server.metadata.resourceVersion ?? ''}`,
  }
}

async function gatherFacts(deps: EngineDeps<McpServerKube>, server: MCPServer, unavailableAfterMs: number): Promise<McpFacts> {
  const { kube, config } = deps
  const namespace = server.metadata.namespace ?? ''
  const name = server.metadata.name ?? ''
  const base = { bridgeImage: config.executorImage, agentNamespace: config.agentNamespace, sharedNamespaces: config.mcpSharedNamespaces, unavailableAfterMs }
  if (server.metadata.deletionTimestamp) {
    // The agent namespace first: while it terminates, the Role that grants the registry read
    // may already be gone (a 403), and the registry goes with the namespace anyway.
    const agentNamespace = await kube.getNamespace(config.agentNamespace)
    if (!agentNamespace || agentNamespace.metadata?.deletionTimestamp) {
      return { ...base, registry: null, registryNamespaceGone: true, deployment: null, service: null, pods: null }
    }
  }
  const registry = kube.getConfigMap(config.agentNamespace, REGISTRY_CONFIGMAP)
  if (server.metadata.deletionTimestamp || !server.spec.managed) {
    return { ...base, registry: await registry, deployment: null, service: null, pods: null }
  }
  const stdio = server.spec.transport === 'stdio'
  const workload = Promise.all([
    kube.getDeployment(namespace, name),
    kube.getService(namespace, name),
    stdio ? kube.getServiceAccount(namespace, BRIDGE_IDENTITY) : Promise.resolve(null),
    stdio ? kube.getRoleBinding(namespace, BRIDGE_IDENTITY) : Promise.resolve(null),
  ]).catch((err: unknown) => {
    // A namespace that has not opted in to managed MCP servers: the status says how to.
    if (err instanceof ForbiddenError) return { forbidden: apiMessage(err) }
    throw err
  })
  const [configMap, read] = await Promise.all([registry, workload])
  if ('forbidden' in read) return { ...base, registry: configMap, deployment: null, service: null, pods: null, workloadForbidden: read.forbidden }
  const [deployment, service, serviceAccount, roleBinding] = read
  // Pods only matter once the Deployment serves: their uids and restarts say when to rediscover.
  const pods = deploymentAvailable(deployment) ? await kube.listPods(namespace, { [LABEL_MCP_SERVER]: name }) : null
  return {
    ...base, registry: configMap, deployment, service, pods,
    ...(stdio ? { bridge: { serviceAccount, roleBinding } } : {}),
  }
}

async function writeChildren(deps: McpServerDeps<McpServerKube>, server: MCPServer, facts: McpFacts, work: McpWork): Promise<McpWork> {
  const { kube, log } = deps
  const { plan } = work
  const namespace = server.metadata.namespace ?? ''
  const name = server.metadata.name ?? ''
  const written: string[] = []
  let resourceVersion = work.resourceVersion

  if (plan.addFinalizer) {
    // First, so a deletion from here on always finds the registry entry to remove.
    const patched = await kube.patchMCPServerMetadata(namespace, name, resourceVersion, {
      finalizers: [...(server.metadata.finalizers ?? []), FINALIZER_MCPSERVER],
    })
    resourceVersion = patched.metadata.resourceVersion ?? resourceVersion
    written.push(`finalizer MCPServer/${name}`)
  }

  if (plan.deleting) {
    if (plan.registry?.op === 'remove') {
      const owner = plan.registry.owner
      const result = await changeRegistry(deps, facts.registry, (entries) =>
        removeEntry(entries, owner, deps.config.agentNamespace, (e) => isServersEntry(server, e, deps.config.agentNamespace)))
      // Someone made it unreadable since we looked: re-plan (which reports it and keeps the finalizer).
      if ('error' in result) throw new ConflictError(`registry became unreadable: ${result.error}`)
      if (result.written) written.push(`unregister ${name}`)
    }
    const unregistered = written.includes(`unregister ${name}`)
    const transitions = !plan.releaseFinalizer ? work.transitions : unregistered
      ? [{ kind: 'unregistered', type: 'Normal' as const, reason: 'Unregistered', record: true, message: `Removed ${name} from ConfigMap ${deps.config.agentNamespace}/mcp-servers` }]
      : []
    return { ...work, resourceVersion, written, transitions }
  }

  const outcome: McpOutcome = { registered: false, rolledOut: false }
  for (const write of plan.writes) {
    try {
      // The bridge identity is shared by a namespace's stdio servers: another reconcile made it, fine.
      await applyChildWrite(kube, write, { shared: write.kind === 'ServiceAccount' || write.kind === 'RoleBinding' })
      written.push(`${write.op} ${write.kind}/${write.object.metadata?.name ?? ''}`)
      if (write.kind === 'Deployment') outcome.rolledOut = true
    } catch (err) {
      if (err instanceof ConflictError || err instanceof TransientError) throw err
      const reason = write.kind === 'Deployment' ? 'DeploymentFailed' : write.kind === 'Service' ? 'ServiceFailed' : 'BridgeIdentityFailed'
      const grant = err instanceof ForbiddenError ? `; to let Kinetic run MCP servers in namespace ${namespace}: ${grantCommand(MCP_GRANT, namespace)}` : ''
      outcome.failure = { reason, message: `${write.op} ${write.kind.toLowerCase()}: ${apiMessage(err)}${grant}` }
      log.warn({ namespace, name, err: outcome.failure.message }, `Could not ${write.op} ${write.kind} of MCPServer`)
      break
    }
  }

  const registryOk = !outcome.failure
  if (registryOk && plan.registry?.op === 'upsert') {
    const entry = plan.registry.entry
    try {
      // Only this server's own entry is replaced; a server of the same name elsewhere keeps its entry.
      const result = await changeRegistry(deps, facts.registry, (entries) =>
        upsertEntry(entries, entry, deps.config.agentNamespace, (e) => isServersEntry(server, e, deps.config.agentNamespace)))
      if ('error' in result) outcome.registryError = result.error
      else if (result.written) {
        outcome.registered = true
        written.push(`register ${name}`)
      }
    } catch (err) {
      if (err instanceof ConflictError || err instanceof TransientError) throw err
      outcome.failure = { reason: 'RegistryFailed', message: `update ConfigMap ${deps.config.agentNamespace}/mcp-servers: ${apiMessage(err)}` }
    }
  } else if (!plan.registry) {
    const unreadable = registryOf(facts.registry).error
    if (unreadable) outcome.registryError = unreadable
  }

  let discovered = false
  if (plan.discover && !outcome.failure && !outcome.registryError) {
    outcome.discovery = await discover(deps, server, plan.discover.url, plan.discover.tokenSecret)
    discovered = true
  }
  const next = planMcpStatus(server, facts, outcome, deps.now().toISOString())
  return { ...work, status: next.status, transitions: next.transitions, resourceVersion, written, discovered }
}

/**
 * Read-modify-write of the registry, guarded by resourceVersion: a lost race re-reads and
 * applies the change again to what the other writer left, so no writer's entry is lost. Content
 * that cannot be read is reported and never written over.
 */
async function changeRegistry(
  deps: EngineDeps<McpServerKube>, first: V1ConfigMap | null, change: (entries: RegistryEntry[]) => RegistryEntry[],
): Promise<{ written: boolean } | { error: string }> {
  const { kube, config } = deps
  let configMap: V1ConfigMap | null | undefined = first
  return retryingConflicts(TRIES, async () => {
    const current = configMap === undefined ? await kube.getConfigMap(config.agentNamespace, REGISTRY_CONFIGMAP) : configMap
    configMap = undefined // every retry reads fresh
    const parsed = registryOf(current)
    if (parsed.error) return { error: parsed.error }
    const next = change(parsed.entries)
    if (JSON.stringify(next) === JSON.stringify(parsed.entries)) return { written: false }
    const servers = renderRegistry(next)
    await applyChildWrite(kube, current
      ? { op: 'replace', kind: 'ConfigMap', object: { ...current, data: { ...current.data, [REGISTRY_KEY]: servers } } }
      : { op: 'create', kind: 'ConfigMap', object: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: REGISTRY_CONFIGMAP, namespace: config.agentNamespace }, data: { [REGISTRY_KEY]: servers } } })
    return { written: true }
  })
}

async function discover(deps: McpServerDeps<McpServerKube>, server: MCPServer, url: string, tokenSecret: string | undefined): Promise<DiscoveryOutcome> {
  const namespace = server.metadata.namespace ?? ''
  let token: string | undefined
  if (tokenSecret) {
    let secret: Awaited<ReturnType<Kube['getSecret']>>
    try {
      secret = await deps.kube.getSecret(namespace, tokenSecret)
    } catch (err) {
      // Outside the agent namespace the read needs a grant of the namespace's own: a finding on
      // the MCPServer, retried with the failure backoff, not a 500 the Broker redelivers.
      if (!(err instanceof ConflictError || err instanceof TransientError) && refused(err)) {
        return { ok: false, reason: 'SecretForbidden', message: secretForbiddenMessage(namespace, tokenSecret, deps.config.agentNamespace) }
      }
      throw err
    }
    const encoded = secret?.data?.['token']
    if (!secret) return { ok: false, reason: 'SecretMissing', message: `Secret ${namespace}/${tokenSecret} not found` }
    if (!encoded) return { ok: false, reason: 'SecretMissing', message: `Secret ${namespace}/${tokenSecret} has no key token` }
    token = Buffer.from(encoded, 'base64').toString('utf8').trim()
  }
  const run = deps.discover ?? (await import('./discovery.js')).discoverTools
  const result = await run({ url, ...(token ? { token } : {}) })
  if (result.ok) return { ok: true, transport: result.transport, tools: result.tools, truncated: result.truncated }
  return { ok: false, reason: result.reason, message: token ? result.message.split(token).join('[redacted]') : result.message }
}

/** Name of the ServiceAccount this function runs as (knative/rbac/mcpserver-changed.yaml). */
const FUNCTION_ACCOUNT = 'kinetic-system:mcpserver-changed'

/** Whether the API server refused the request (403, kept by the client as the error's cause). */
function refused(err: unknown): boolean {
  return (err as { cause?: { code?: unknown } } | null)?.cause?.code === 403
}

/** What a bearer server outside the agent namespace reports, with the grant that allows the read. */
export function secretForbiddenMessage(namespace: string, secretRef: string, agentNamespace: string): string {
  const role = `kinetic-mcp-token-${secretRef}`
  return `mcpserver-changed may not read Secret ${namespace}/${secretRef} (it reads token Secrets only in ${agentNamespace}); allow it with: `
    + `kubectl create role ${role} -n ${namespace} --verb=get --resource=secrets --resource-name=${secretRef} && `
    + `kubectl create rolebinding ${role} -n ${namespace} --role=${role} --serviceaccount=${FUNCTION_ACCOUNT}`
}

