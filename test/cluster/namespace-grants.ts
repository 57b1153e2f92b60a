import type { KubeHttp } from '../../local/knative/kube-http.js'
import { AGENT_GRANT, FUNCTIONS_NAMESPACE, MCP_GRANT, WEBHOOK_GRANT, WORKFLOW_GRANT } from '../../shared/core/namespace-access.js'

/**
 * Opts a test namespace in, as a user does with the commands docs/guide/security.md gives: the RoleBindings of
 * kinetic-workflow-runner, kinetic-agent-identities, kinetic-mcp-workloads and
 * kinetic-webhook-secrets there.
 */
export async function grantNamespace(admin: KubeHttp, namespace: string): Promise<void> {
  for (const grant of [WORKFLOW_GRANT, AGENT_GRANT, MCP_GRANT, WEBHOOK_GRANT]) {
    await admin.apply({
      apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding',
      metadata: { name: grant.binding, namespace },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: grant.clusterRole },
      subjects: grant.serviceAccounts.map((name) => ({ kind: 'ServiceAccount', name, namespace: FUNCTIONS_NAMESPACE })),
    })
  }
}
