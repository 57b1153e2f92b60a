import { planAutonomy, rollbackDue, type AutonomyPlan } from './plan/evaluate.js'
import { declaredLevel, isOptedIn } from './plan/levels.js'
import { choosePolicy, effectivePolicy, type EffectivePolicy } from './plan/policy.js'
import type { Agent } from '../schemas/agent.js'
import { ENGINE_VERBS, reconcile, type Controller, type EngineDeps, type Reconciled } from '../engine/controller.js'
import type { Kube, KubeVerbs } from '../kube/port.js'
import { UNCHANGED } from '../core/plan.js'

/** The port verbs of an autonomy evaluation: the agent, its namespace's policies, its spec and status writes. */
export const AUTONOMY_VERBS = [...ENGINE_VERBS, 'getAgent', 'listAutonomyPolicies', 'patchAgent', 'replaceAgentStatus'] as const satisfies readonly (keyof Kube)[]
export type AutonomyKube = KubeVerbs<typeof AUTONOMY_VERBS>

/** Attempts at one agent's autonomy write before leaving it to the next tick. */
export const AUTONOMY_ATTEMPTS = 4

/**
 * One agent's Shu-Ha-Ri evaluation as a controller of the shared shell. The first attempt plans
 * on the object the caller already holds (the tick's LIST, or the workflow engine's fresh
 * write), so an idle tick costs no GET per agent; a retry after a lost race reads it fresh.
 */
function autonomyController(policy: EffectivePolicy, known: Agent | undefined): Controller<Agent, EffectivePolicy, AutonomyPlan, AutonomyKube> {
  let held = known
  return {
    kind: 'Agent',
    conflictRetries: AUTONOMY_ATTEMPTS - 1,
    async read(deps, namespace, name) {
      const agent = held ?? (await deps.kube.getAgent(namespace, name))
      held = undefined
      return agent
    },
    gather: async (_, agent) => (isOptedIn(agent) ? policy : UNCHANGED),
    plan: (agent, facts, now) => planAutonomy(agent, facts, now),
    writeChildren: async (_, __, ___, plan) => plan,
    async writeParent({ kube }, agent, plan) {
      const namespace = agent.metadata.namespace ?? 'default'
      const name = agent.metadata.name ?? ''
      let resourceVersion = agent.metadata.resourceVersion ?? ''
      // A level change is one spec patch, then the status that mirrors it; an approval is
      // recorded in status before its annotation goes, so a lost write never loses it.
      if (plan.patch && !plan.patchAfterStatus) {
        resourceVersion = (await kube.patchAgent(namespace, name, resourceVersion, plan.patch)).metadata.resourceVersion ?? resourceVersion
      }
      if (plan.status) {
        resourceVersion = (await kube.replaceAgentStatus(namespace, name, resourceVersion, plan.status)).metadata.resourceVersion ?? resourceVersion
      }
      if (plan.patch && plan.patchAfterStatus) await kube.patchAgent(namespace, name, resourceVersion, plan.patch)
    },
    // The level clock after the change: a redelivered evaluation of the same change repeats Event names.
    eventSeed: (agent, plan) => `${agent.metadata.uid ?? ''}/${plan.status?.shuHaRi?.levelSince ?? ''}`,
  }
}

/**
 * Evaluates one agent against a policy and writes the result (spec patch, then status, then
 * Events and CloudEvents). A lost race re-reads and re-plans, up to AUTONOMY_ATTEMPTS times;
 * after that ConflictError.
 */
export function applyAutonomy(deps: EngineDeps<AutonomyKube>, agent: Agent, policy: EffectivePolicy): Promise<Reconciled<AutonomyPlan>> {
  const namespace = agent.metadata.namespace ?? 'default'
  const name = agent.metadata.name ?? ''
  const controller = autonomyController(policy, agent)
  return reconcile(controller, deps, namespace, name)
}

/**
 * The immediate rollback path, called by the workflow engine right after it recorded a failed
 * step attempt on `agent` (the object its status write returned). When the agent opted in, sits
 * above shu and a rollback trigger of its namespace's policy fires, it is demoted now rather than
 * at the next tick. Never throws: the tick catches whatever this could not do within 5 minutes.
 */
export async function demoteIfTriggered(deps: EngineDeps<AutonomyKube>, agent: Agent): Promise<void> {
  if (!isOptedIn(agent) || declaredLevel(agent) === 'shu') return
  const namespace = agent.metadata.namespace ?? 'default'
  try {
    const chosen = choosePolicy(await deps.kube.listAutonomyPolicies(namespace))
    if (!chosen) return
    const policy = effectivePolicy(chosen)
    if (!rollbackDue(agent, policy)) return
    await applyAutonomy(deps, agent, policy)
  } catch (err) {
    deps.log.info({ namespace, name: agent.metadata.name, err: (err as Error).message }, `Could not demote Agent ${namespace}/${agent.metadata.name} now; the autonomy tick will`)
  }
}
