import type { Agent } from '../../schemas/agent.js'

/** The ServiceAccount an Agent's step Jobs run as: `spec.runtime.serviceAccountName`, else `agent-<name>-sa` (purko's name). */
export function agentServiceAccountName(agent: Pick<Agent, 'metadata' | 'spec'>): string {
  return agent.spec.runtime?.serviceAccountName || defaultServiceAccountName(agent.metadata.name ?? '')
}

/** purko's default per-agent ServiceAccount name. */
export function defaultServiceAccountName(agentName: string): string {
  return `agent-${agentName}-sa`
}

/** purko's per-agent Role name. */
export function agentRoleName(agentName: string): string {
  return `agent-${agentName}-role`
}

/** purko's per-agent RoleBinding name. */
export function agentRoleBindingName(agentName: string): string {
  return `agent-${agentName}-binding`
}
