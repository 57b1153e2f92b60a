/**
 * What a namespace grants Kinetic's functions that act inside it, and the command that grants it.
 * Jobs, pods, logs and ConfigMaps (the workflow functions), Agent identities and the Secrets they
 * name (agent-changed), managed MCP servers' workloads (mcpserver-changed) and webhook secrets
 * (webhook-trigger) are granted per namespace, by a RoleBinding to a ClusterRole Kinetic ships,
 * never cluster-wide: a compromised function then reaches only the namespaces that opted in
 * (`knative/platform/` opts in the agent namespace).
 * Pure.
 */

/** Where the functions' ServiceAccounts live. */
export const FUNCTIONS_NAMESPACE = 'kinetic-system'

/** One namespace grant: the RoleBinding to create, its ClusterRole and the functions it is for. */
export interface NamespaceGrant {
  binding: string
  clusterRole: string
  serviceAccounts: readonly string[]
}

/** Jobs, pods, pod logs, ConfigMaps (outputs, memory, the registry) and ServiceAccount lookups for running Workflows. */
export const WORKFLOW_GRANT: NamespaceGrant = {
  binding: 'kinetic-workflows', clusterRole: 'kinetic-workflow-runner', serviceAccounts: ['workflow-changed', 'step-job-finished', 'resync-tick'],
}
/** Each Agent's ServiceAccount, Role and RoleBinding, and a read of the Secret it names. */
export const AGENT_GRANT: NamespaceGrant = {
  binding: 'kinetic-agents', clusterRole: 'kinetic-agent-identities', serviceAccounts: ['agent-changed'],
}
/** A managed MCPServer's Deployment, Service and pods, and a stdio server's bridge identity. */
export const MCP_GRANT: NamespaceGrant = {
  binding: 'kinetic-mcp-servers', clusterRole: 'kinetic-mcp-workloads', serviceAccounts: ['mcpserver-changed'],
}
/** A read of the Secret a template names as its webhook key. */
export const WEBHOOK_GRANT: NamespaceGrant = {
  binding: 'kinetic-webhooks', clusterRole: 'kinetic-webhook-secrets', serviceAccounts: ['webhook-trigger'],
}

/** Pure: the `kubectl create rolebinding` that grants `grant` in `namespace`. */
export function grantCommand(grant: NamespaceGrant, namespace: string): string {
  const subjects = grant.serviceAccounts.map((sa) => `--serviceaccount=${FUNCTIONS_NAMESPACE}:${sa}`).join(' ')
  return `kubectl create rolebinding ${grant.binding} -n ${namespace} --clusterrole=${grant.clusterRole} ${subjects}`
}
