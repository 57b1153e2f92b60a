/** How the planner names a step's agent and its provider choice in the maps it is given. Pure. */
import type { Workflow, WorkflowStep } from '../../schemas/workflow.js'

/** Pure: the agent lookup key of a step (its own namespace, else the Workflow's). */
export function agentKeyOf(workflow: Workflow, step: WorkflowStep): string {
  return `${step.agentRef?.namespace || workflow.metadata.namespace}/${step.agentRef?.name ?? ''}`
}

/**
 * Pure: the key of a step's provider choice: its agent's key, followed by `@<provider>` when
 * the step's `model.provider` (spec §5.10) names a provider (`@` never occurs in
 * an agent key), so steps of one agent on different providers get their own choice.
 */
export function choiceKeyOf(workflow: Workflow, step: WorkflowStep): string {
  const key = agentKeyOf(workflow, step)
  return step.model?.provider === undefined ? key : `${key}@${step.model.provider}`
}
