/**
 * Which Workflows may use an Agent: those of its own namespace, and those of the namespaces the
 * Agent lists in `kinetic.dev/allow-workflows-from` (comma-separated, `*` for every namespace).
 * A step's `agentRef.namespace` otherwise lets the author of a Workflow in one namespace run
 * another namespace's Agent (its prompt, tools, image, metrics and autonomy) with the workflow
 * functions' rights; only someone who may annotate the Agent can share it. Pure.
 */
import type { Agent } from '../../schemas/agent.js'

/** The annotation by which an Agent allows Workflows of other namespaces to use it. */
export const ANNOTATION_ALLOW_WORKFLOWS_FROM = 'kinetic.dev/allow-workflows-from'

/** Pure: whether Workflows of `namespace` may run steps as this Agent. */
export function allowsWorkflowsFrom(agent: Pick<Agent, 'metadata'>, namespace: string): boolean {
  if ((agent.metadata.namespace ?? '') === namespace) return true
  const value = agent.metadata.annotations?.[ANNOTATION_ALLOW_WORKFLOWS_FROM] ?? ''
  return value.split(',').map((v) => v.trim()).some((v) => v === '*' || v === namespace)
}

/** Pure: the waiting message of a step whose Agent of another namespace is not shared with the Workflow's. */
export function notSharedMessage(agentNamespace: string, agentName: string, step: string, workflowNamespace: string): string {
  return `Agent "${agentName}" in namespace ${agentNamespace} does not allow Workflows of namespace ${workflowNamespace} (step "${step}"): `
    + `kubectl annotate agent ${agentName} -n ${agentNamespace} ${ANNOTATION_ALLOW_WORKFLOWS_FROM}=${workflowNamespace}`
}
