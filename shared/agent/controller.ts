import { planAgent, type AgentFacts, type AgentPlan, type IdentityOutcome } from './plan/agent-plan.js'
import { agentRoleBindingName, agentRoleName, agentServiceAccountName, defaultServiceAccountName } from './plan/names.js'
import { apiMessage, ConflictError, ForbiddenError, TransientError } from '../core/errors.js'
import { hasFailedLook } from './plan/echo.js'
import { recheckAfter } from '../ticks/alarm-plan.js'
import { ALARM_VERBS, armTickAlarm } from '../ticks/alarm.js'
import { applyChildWrite } from '../kube/apply.js'
import type { Kube, KubeVerbs } from '../kube/port.js'
import type { Agent } from '../schemas/agent.js'
import { FINALIZER_AGENT } from '../schemas/labels.js'
import { AGENT_GRANT, grantCommand } from '../core/namespace-access.js'
import { providersVisibleFrom, VISIBLE_PROVIDER_VERBS } from '../llm/providers.js'
import { ENGINE_VERBS, reconcile, type Controller, type EngineDeps, type Reconciled } from '../engine/controller.js'
import { UNCHANGED, type ControllerPlan } from '../core/plan.js'

/** The port verbs of reconciling an Agent: it, what its identity is made of (and writing it), its providers, the recheck alarm. */
export const AGENT_VERBS = [
  ...ENGINE_VERBS, ...ALARM_VERBS, ...VISIBLE_PROVIDER_VERBS, 'getAgent', 'patchAgent', 'replaceAgentStatus', 'getMemoryProvider', 'getSecret',
  'getServiceAccount', 'createServiceAccount', 'replaceServiceAccount', 'deleteServiceAccount',
  'getRole', 'createRole', 'replaceRole', 'getRoleBinding', 'createRoleBinding', 'replaceRoleBinding',
] as const satisfies readonly (keyof Kube)[]
export type AgentKube = KubeVerbs<typeof AGENT_VERBS>

/** The credentials Secret could not be read: agent-changed holds no Secret right in the Agent's namespace. */
const FORBIDDEN: unique symbol = Symbol('forbidden')

/** Whole reconciles tried when another writer (metrics, autonomy) wins the status race. */
const TRIES = 6

/** The Agent planner's plan, and what its child writes did. */
export interface AgentWork extends ControllerPlan {
  plan: AgentPlan
  /** Identity writes that took effect, e.g. `create Role/agent-a-role`. */
  written: string[]
}

/**
 * Reads an Agent fresh and makes its identity (ServiceAccount, Role, RoleBinding), conditions
 * and phase match it: children first, then status (resourceVersion-guarded), then the consumed
 * annotation and purko's finalizer. Losing a race to another writer of the Agent re-plans from
 * fresh state a few times; after that the ConflictError reaches the Broker, which redelivers.
 */
export function reconcileAgent(deps: EngineDeps<AgentKube>, namespace: string, name: string): Promise<Reconciled<AgentWork>> {
  return reconcile(agentController, deps, namespace, name)
}

const agentController: Controller<Agent, AgentFacts, AgentWork, AgentKube> = {
  kind: 'Agent',
  conflictRetries: TRIES - 1,
  read: (deps, namespace, name) => deps.kube.getAgent(namespace, name),
  gather: async (deps, agent) => gatherFacts(deps, agent),
  plan(agent, facts, now) {
    const plan = planAgent(agent, facts, now)
    if (plan === UNCHANGED) return UNCHANGED
    return { plan, written: [], transitions: plan.transitions }
  },
  async writeChildren(deps, agent, facts, work) {
    const written: string[] = []
    for (const write of work.plan.identity.writes) {
      try {
        // One someone made since we looked is a ConflictError: the reconcile re-plans on what is there now.
        await applyChildWrite(deps.kube, write)
        written.push(`${write.op} ${write.kind}/${write.op === 'delete' ? write.name : write.object.metadata?.name}`)
      } catch (err) {
        if (err instanceof ConflictError || err instanceof TransientError) throw err
        // Refused for good (RBAC, an invalid name): report it on the Agent instead of redelivering forever.
        // A namespace that has not opted in: say how to let agent-changed manage identities there.
        const grant = err instanceof ForbiddenError ? `; to let Kinetic manage Agent identities in namespace ${agent.metadata.namespace}: ${grantCommand(AGENT_GRANT, agent.metadata.namespace ?? '')}` : ''
        const outcome: IdentityOutcome = {
          ok: false,
          reason: write.kind === 'ServiceAccount' && write.op !== 'delete' ? 'SACreationFailed' : 'RBACFailed',
          message: `${write.op} ${write.kind.toLowerCase()}: ${apiMessage(err)}${grant}`,
        }
        deps.log.warn({ namespace: agent.metadata.namespace, name: agent.metadata.name, err: outcome.message }, `Could not ${write.op} ${write.kind} of Agent`)
        const refined = planAgent(agent, facts, deps.now().toISOString(), outcome)
        if (refined === UNCHANGED) return { ...work, plan: { ...work.plan, status: null, metadata: null }, written, transitions: [] }
        return { plan: refined, written, transitions: refined.transitions.filter((t) => t.kind !== 'identity.written') }
      }
    }
    return { ...work, written }
  },
  async writeParent(deps, agent, { plan }) {
    const { kube } = deps
    const namespace = agent.metadata.namespace ?? ''
    const name = agent.metadata.name ?? ''
    let resourceVersion = agent.metadata.resourceVersion ?? ''
    // Status before the annotation that asked for a cost reset: a crash in between repeats the
    // reset, where the other order would lose it.
    if (plan.status) resourceVersion = (await kube.replaceAgentStatus(namespace, name, resourceVersion, plan.status)).metadata.resourceVersion ?? resourceVersion
    if (plan.metadata) await releaseMetadata(kube, namespace, name, resourceVersion, plan.metadata)
    // A look that failed now and did not before: the recheck alarm looks again in 5 minutes.
    if (plan.status && hasFailedLook(plan.status) && !(agent.status && hasFailedLook(agent.status))) {
      await armTickAlarm(deps, 'agents-recheck', recheckAfter(deps.now()))
    }
  },
  eventSeed: (agent) => `${agent.metadata.uid ?? ''}/${agent.metadata.resourceVersion ?? ''}`,
}

async function gatherFacts(deps: EngineDeps<AgentKube>, agent: Agent): Promise<AgentFacts | typeof UNCHANGED> {
  const { kube, config } = deps
  const namespace = agent.metadata.namespace ?? ''
  const name = agent.metadata.name ?? ''
  const base = { executorImage: config.executorImage, platformNamespace: config.platformNamespace }
  if (agent.metadata.deletionTimestamp) {
    // Only purko's finalizer is left to deal with; the planner needs nothing else.
    return { ...base, identity: { serviceAccount: null, defaultServiceAccount: null, role: null, roleBinding: null }, providers: [] }
  }
  const saName = agentServiceAccountName(agent)
  const defaultName = defaultServiceAccountName(name)
  const secretName = agent.spec.model.credentialsSecretRef?.name
  const memoryRef = agent.spec.memory?.providerRef
  const [serviceAccount, defaultServiceAccount, role, roleBinding, credentialsSecret, providers, memoryProvider] = await Promise.all([
    kube.getServiceAccount(namespace, saName),
    saName === defaultName ? Promise.resolve(null) : kube.getServiceAccount(namespace, defaultName),
    kube.getRole(namespace, agentRoleName(name)),
    kube.getRoleBinding(namespace, agentRoleBindingName(name)),
    secretName ? kube.getSecret(namespace, secretName).catch((err: unknown): typeof FORBIDDEN => {
      if (err instanceof ForbiddenError) return FORBIDDEN
      throw err
    }) : Promise.resolve(undefined),
    providersVisibleFrom(kube, namespace, config.platformNamespace),
    memoryRef ? kube.getMemoryProvider(config.platformNamespace, memoryRef) : Promise.resolve(undefined),
  ])
  return {
    ...base,
    identity: { serviceAccount, defaultServiceAccount, role, roleBinding },
    ...(credentialsSecret === FORBIDDEN
      ? { credentialsForbidden: `agent-changed may not read Secret ${secretName} in namespace ${namespace}, so the credentials are not checked; to let it: ${grantCommand(AGENT_GRANT, namespace)}` }
      : credentialsSecret !== undefined ? { credentialsSecret } : {}),
    providers,
    ...(memoryProvider !== undefined ? { memoryProviderFound: memoryProvider !== null } : {}),
  }
}

/**
 * Removes the consumed annotation and purko's finalizer. Once the status carries a cost reset,
 * losing this race to another writer must not mean a second reset on redelivery, so it is
 * retried here against the fresh object (keeping any finalizer added meanwhile).
 */
async function releaseMetadata(kube: AgentKube, namespace: string, name: string, resourceVersion: string, metadata: NonNullable<AgentPlan['metadata']>): Promise<void> {
  let version = resourceVersion
  let patch = metadata
  for (let attempt = 1; ; attempt++) {
    try {
      await kube.patchAgent(namespace, name, version, { metadata: patch })
      return
    } catch (err) {
      if (!(err instanceof ConflictError) || attempt >= TRIES) throw err
      const fresh = await kube.getAgent(namespace, name)
      if (!fresh) return
      version = fresh.metadata.resourceVersion ?? ''
      patch = { ...metadata, ...(metadata.finalizers ? { finalizers: (fresh.metadata.finalizers ?? []).filter((f) => f !== FINALIZER_AGENT) } : {}) }
    }
  }
}

