import { AgentSchema, type Agent } from '../../shared/schemas/agent.js'
import { WorkflowSchema, type Workflow, type WorkflowStep } from '../../shared/schemas/workflow.js'

/** A Workflow in namespace `team` as `kubectl apply` would store it (schema defaults applied). */
export function workflowOf(name: string, steps: Partial<WorkflowStep>[], spec: Record<string, unknown> = {}): Workflow {
  return WorkflowSchema.parse({
    apiVersion: 'purko.io/v1alpha1',
    kind: 'Workflow',
    metadata: { name, namespace: 'team', uid: `uid-${name}`, generation: 1, resourceVersion: '1' },
    spec: { steps: steps.map((s) => ({ agentRef: s.type ? undefined : { name: 'helper' }, ...s })), ...spec },
  })
}

/** An Agent in namespace `team`; `approval` makes its steps wait for a human. */
export function agentOf(name: string, options: { approval?: boolean; memory?: Record<string, unknown> } = {}): Agent {
  return AgentSchema.parse({
    apiVersion: 'purko.io/v1alpha1',
    kind: 'Agent',
    metadata: { name, namespace: 'team', uid: `uid-agent-${name}` },
    spec: {
      model: { provider: 'offline', name: 'scripted' },
      ...(options.approval ? { guardrails: { humanApprovalRequired: true } } : {}),
      ...(options.memory ? { memory: options.memory } : {}),
    },
  })
}
