import { describe, expect, it } from 'vitest'
import { KUBE_CHILD_USES as MEMORY_CHILD_USES, KUBE_VERBS as MEMORY_VERBS } from '../../functions/memoryprovider-changed/kube-verbs.js'
import { KUBE_CHILD_USES as RECIPES_MCP_CHILD_USES, KUBE_VERBS as RECIPES_MCP_VERBS } from '../../functions/recipes-mcp/kube-verbs.js'
import type { ChildUse } from '../../shared/kube/child-uses.js'
import type { Kube } from '../../shared/kube/port.js'
import { grantsNeededBy } from '../../shared/kube/verb-grants.js'
import { TEMPLATE_CHILD_USES, TEMPLATE_VERBS } from '../../shared/template/controller.js'
import { loadManifests, ofKind, type Manifest } from './manifests.js'

const manifests = loadManifests()
const clusterRoles = ofKind(manifests, 'rbac.authorization.k8s.io/v1', 'ClusterRole')
const bindings = ofKind(manifests, 'rbac.authorization.k8s.io/v1', 'ClusterRoleBinding')

/** `<apiGroup>/<resource>` -> sorted verbs, for comparison independent of rule grouping. */
type Grants = Record<string, string[]>

/** What these port verbs need (shared/kube/verb-grants.ts), as a Grants table. */
function neededBy(verbs: readonly (keyof Kube)[], childUses: readonly ChildUse[]): Grants {
  const grants: Grants = {}
  for (const g of grantsNeededBy(verbs, childUses)) {
    const key = `${g.group}/${g.resource}`
    grants[key] = [...new Set([...(grants[key] ?? []), g.verb])].sort()
  }
  return grants
}

/**
 * The verbs each function's port methods use (shared/kube/port.ts) in every namespace, and
 * nothing more: what acts inside a namespace (Jobs, pods, logs, ConfigMaps) is NAMESPACE_ROLES'.
 */
const FUNCTION_GRANTS: Grants = {
  'purko.io/workflows': ['get', 'list', 'patch'],
  'purko.io/workflows/status': ['update'],
  // Owner references with blockOwnerDeletion (OwnerReferencesPermissionEnforcement).
  'purko.io/workflows/finalizers': ['update'],
  // Metrics on every finished attempt, and the immediate demotion a failure may trigger.
  'purko.io/agents': ['get', 'list', 'patch'],
  'purko.io/agents/status': ['update'],
  'purko.io/agentautonomypolicies': ['list'],
  'purko.io/llmproviders': ['list'],
  'purko.io/mcpservers': ['list'],
  // No Secret right: model keys are secretKeyRefs; the opt-in label of the Workflow's namespace
  // says whether the kinetic-llm-credentials copy is there.
  '/namespaces': ['get'],
  '/events': ['create'],
}

/** resync-tick also catches up every scheduled template: runs for missed fires, history limits, the PingSource. */
const RESYNC_GRANTS: Grants = {
  ...FUNCTION_GRANTS,
  'purko.io/workflows': ['create', 'delete', 'get', 'list', 'patch'],
  'sources.knative.dev/pingsources': ['create', 'delete', 'get', 'patch'],
  // No Job right cluster-wide: step Jobs are listed per namespace, where kinetic-workflow-runner is bound.
}

/**
 * The template functions (workflow-template-changed, schedule-fired): exactly what the template
 * reconciler's port verbs need, all cluster-wide: a template and its runs (create scheduled runs,
 * delete finished ones beyond the history limits), its status, its PingSource, Events. No Job,
 * no ConfigMap, no Secret, no finalizers (nothing is owned with blockOwnerDeletion).
 */
const TEMPLATE_GRANTS: Grants = neededBy(TEMPLATE_VERBS, TEMPLATE_CHILD_USES)

/** agent-changed's verbs (list: the recheck tick); configmaps get/list are what its per-agent Roles grant (the escalation check). */
const AGENT_CHANGED_GRANTS: Grants = {
  'purko.io/agents': ['get', 'list', 'patch'],
  'purko.io/agents/status': ['update'],
  'purko.io/agents/finalizers': ['update'],
  'purko.io/llmproviders': ['list'],
  'purko.io/memoryproviders': ['get'],
  // What exists of an identity; writing it (and the Secret read) is NAMESPACE_ROLES'.
  '/serviceaccounts': ['get'],
  'rbac.authorization.k8s.io/roles': ['get'],
  'rbac.authorization.k8s.io/rolebindings': ['get'],
  '/events': ['create'],
}

/**
 * What the functions that act inside a namespace may do there: ClusterRoles bound only by
 * RoleBindings in the namespaces that opt in (knative/platform/ in the agent namespace), never
 * by a ClusterRoleBinding.
 */
const NAMESPACE_ROLES: Record<string, { serviceAccounts: string[]; namespaces?: string[]; grants: Grants }> = {
  'kinetic-workflow-runner': {
    serviceAccounts: ['workflow-changed', 'step-job-finished', 'resync-tick'],
    grants: { 'batch/jobs': ['create', 'delete', 'list'], '/pods': ['list'], '/pods/log': ['get'], '/serviceaccounts': ['get'], '/configmaps': ['create', 'get', 'list', 'update'] },
  },
  'kinetic-agent-identities': {
    serviceAccounts: ['agent-changed'],
    grants: {
      '/serviceaccounts': ['create', 'delete', 'get', 'update'],
      'rbac.authorization.k8s.io/roles': ['create', 'get', 'update'],
      'rbac.authorization.k8s.io/rolebindings': ['create', 'get', 'update'],
      '/secrets': ['get'],
      '/configmaps': ['get', 'list'],
    },
  },
  'kinetic-mcp-workloads': {
    serviceAccounts: ['mcpserver-changed'],
    // The agent namespace, and mcp-server where stdio MCP recipes put their (managed) MCPServers.
    namespaces: ['ai-agents', 'mcp-server'],
    grants: {
      'apps/deployments': ['create', 'get', 'update'],
      '/services': ['create', 'get', 'update'],
      '/pods': ['list'],
      '/serviceaccounts': ['create', 'get'],
      'rbac.authorization.k8s.io/rolebindings': ['create', 'get'],
      'rbac.authorization.k8s.io/clusterroles': ['bind'],
    },
  },
  'kinetic-webhook-secrets': { serviceAccounts: ['webhook-trigger'], grants: { '/secrets': ['get'] } },
}

/** Bound per namespace by RoleBindings (opt-in), never cluster-wide. */
const LLM_CREDENTIALS_WRITER = 'kinetic-llm-credentials-writer'

/**
 * mcpserver-changed's verbs; the registry ConfigMap and bearer servers' token Secrets are granted
 * by Roles in the agent namespace only.
 */
const MCPSERVER_CHANGED_GRANTS: Grants = {
  'purko.io/mcpservers': ['get', 'list', 'patch'],
  'purko.io/mcpservers/status': ['update'],
  'purko.io/mcpservers/finalizers': ['update'],
  '/namespaces': ['get'],
  '/events': ['create'],
}

/** The stdio bridge's rights, bound per namespace by mcpserver-changed's RoleBindings, never cluster-wide. */
const MCP_BRIDGE = 'kinetic-mcp-bridge'

/** The three recipe functions run one controller and share one ClusterRole (spec §15). */
const RECIPE_FUNCTIONS = ['workflowrecipe-changed', 'recipe-child-changed', 'recipe-policy-changed']
/**
 * What they may do cluster-wide: only what lives in a recipe's own namespace (revision
 * ConfigMaps, the child Workflow) or is read from anywhere. Workload, Service, MCPServer and
 * Secret writes are granted only in the target namespaces, by kinetic-recipe-workloads.
 */
const RECIPE_GRANTS: Grants = {
  'purko.io/workflowrecipes': ['get', 'list', 'patch'],
  'purko.io/workflowrecipes/status': ['update'],
  'purko.io/workflowrecipes/finalizers': ['update'],
  'purko.io/workflowrecipepolicies': ['get', 'list'],
  'purko.io/workflowrecipepolicies/status': ['update'],
  '/secrets': ['get'],
  '/configmaps': ['create', 'delete', 'get', 'list', 'update'],
  'purko.io/workflows': ['create', 'delete', 'get', 'list', 'patch'],
  'purko.io/agents': ['get'],
  '/namespaces': ['get'],
  '/events': ['create'],
}
const RECIPE_WORKLOAD_GRANTS: Grants = Object.fromEntries([
  ...['apps/deployments', 'apps/statefulsets', 'apps/daemonsets', 'batch/jobs', 'batch/cronjobs', '/services', '/secrets', 'purko.io/mcpservers']
    .map((r) => [r, ['create', 'delete', 'get', 'list', 'patch']]),
  ['/pods', ['list']],
  ['/pods/log', ['get']],
])
const RECIPE_TARGET_NAMESPACES = ['mcp-server', 'sandbox-recipes']

const EXPECTED: Record<string, { serviceAccount: string | string[]; grants: Grants }> = {
  // The copies of platform provider keys: any Secret may be created (RBAC cannot limit create by
  // name), only kinetic-llm-credentials read or updated.
  [LLM_CREDENTIALS_WRITER]: { serviceAccount: 'llmprovider-changed', grants: { '/secrets': ['create', 'get', 'update'] } },
  'kinetic-agent-changed': { serviceAccount: 'agent-changed', grants: AGENT_CHANGED_GRANTS },
  'kinetic-mcpserver-changed': { serviceAccount: 'mcpserver-changed', grants: MCPSERVER_CHANGED_GRANTS },
  [MCP_BRIDGE]: { serviceAccount: 'kinetic-mcp-bridge', grants: { '/pods/attach': ['create', 'get'] } },
  'kinetic-recipes': { serviceAccount: RECIPE_FUNCTIONS, grants: RECIPE_GRANTS },
  // Its caller's token and rights are checked by the API server; recipes only, no Secret
  // (spec §14.2); deploy-recipe evaluates policies and Pod Security in-process (spec §14.3).
  // Exactly what its port verbs need, all cluster-wide.
  'kinetic-recipes-mcp': { serviceAccount: 'recipes-mcp', grants: neededBy(RECIPES_MCP_VERBS, RECIPES_MCP_CHILD_USES) },
  // Callers checked by TokenReview/SubjectAccessReview; then purko's annotations, manual runs, step logs, promotion approvals.
  'kinetic-run-control': {
    serviceAccount: 'run-control',
    grants: {
      'authentication.k8s.io/tokenreviews': ['create'],
      'authorization.k8s.io/subjectaccessreviews': ['create'],
      // approve: the admission policies let only its holders write a decision, which run-control
      // does after checking the caller's own approve verb.
      'purko.io/workflows': ['approve', 'create', 'get', 'patch'],
      'purko.io/agents': ['approve', 'get', 'patch'],
      'batch/jobs': ['list'],
      '/pods': ['list'],
      '/pods/log': ['get'],
      '/events': ['create'],
    },
  },
  // Opt-in (components/console-proxy): the console behind a proxy reads and acts as the person it impersonates.
  'kinetic-console-impersonator': { serviceAccount: 'console', grants: { '/users': ['impersonate'], '/groups': ['impersonate'] } },
  // Opt-in (components/console-anonymous-read): what visitors who are not signed in may see, read only.
  'kinetic-console-reader': {
    serviceAccount: 'console',
    grants: {
      'purko.io/workflows': ['get', 'list', 'watch'],
      'purko.io/agents': ['get', 'list'],
      'purko.io/workflowrecipes': ['get', 'list'],
      'purko.io/mcpservers': ['list'],
      'purko.io/llmproviders': ['list'],
      '/events': ['list'],
      '/pods': ['list'],
      '/pods/log': ['get'],
      'batch/jobs': ['list'],
    },
  },
  // The template and its run, the namespace's trigger-rules, the template's webhook Secret, Events on refusals.
  'kinetic-webhook-trigger': {
    serviceAccount: 'webhook-trigger',
    // configmaps: trigger-rules only (resourceNames); no Secret (NAMESPACE_ROLES).
    grants: { 'purko.io/workflows': ['create', 'get'], '/configmaps': ['get'], '/events': ['create'] },
  },
  // Provider checks: Secrets only through the platform-namespace Role and the opt-in copy writer.
  'kinetic-llmprovider-changed': {
    serviceAccount: 'llmprovider-changed',
    grants: { 'purko.io/llmproviders': ['get', 'list'], 'purko.io/llmproviders/status': ['update'], '/namespaces': ['list'], '/events': ['create'] },
  },
  // Exactly what its port verbs need, all cluster-wide (memory ConfigMaps are counted in every namespace).
  'kinetic-memoryprovider-changed': { serviceAccount: 'memoryprovider-changed', grants: neededBy(MEMORY_VERBS, MEMORY_CHILD_USES) },
  'kinetic-workflow-changed': { serviceAccount: 'workflow-changed', grants: FUNCTION_GRANTS },
  'kinetic-step-job-finished': { serviceAccount: 'step-job-finished', grants: FUNCTION_GRANTS },
  'kinetic-resync-tick': { serviceAccount: 'resync-tick', grants: RESYNC_GRANTS },
  'kinetic-workflow-template-changed': { serviceAccount: 'workflow-template-changed', grants: TEMPLATE_GRANTS },
  'kinetic-schedule-fired': { serviceAccount: 'schedule-fired', grants: TEMPLATE_GRANTS },
  'kinetic-autonomy-tick': {
    serviceAccount: 'autonomy-tick',
    grants: {
      'purko.io/agents': ['get', 'list', 'patch'],
      'purko.io/agents/status': ['update'],
      'purko.io/agentautonomypolicies': ['list'],
      'purko.io/agentautonomypolicies/status': ['update'],
      '/events': ['create'],
    },
  },
  // The one ApiServerSource adapter only watches what it sends.
  'kinetic-resources-source': {
    serviceAccount: 'resources-source',
    grants: Object.fromEntries([
      'purko.io/workflows', 'purko.io/agents', 'purko.io/llmproviders', 'purko.io/memoryproviders', 'purko.io/mcpservers',
      'purko.io/workflowrecipes', 'purko.io/workflowrecipepolicies', 'batch/jobs', 'batch/cronjobs', 'apps/deployments',
      'apps/statefulsets', 'apps/daemonsets', '/serviceaccounts', '/services', 'rbac.authorization.k8s.io/roles', 'rbac.authorization.k8s.io/rolebindings',
    ].map((r) => [r, ['get', 'list', 'watch']])),
  },
}

/**
 * The roles a platform team binds to people (spec §15), never to a Kinetic account:
 * `approve` is the custom verb the spec §12 admission policy checks for purko.io/approve and /reject.
 */
const USER_ROLES: Record<string, Grants> = {
  'kinetic-recipe-author': { 'purko.io/workflowrecipes': ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'] },
  'kinetic-recipe-approver': { 'purko.io/workflowrecipes': ['approve', 'get', 'list', 'patch'] },
  // The admission policy kinetic-mcpservers lets only holders of it turn on spec.hostNetwork.
  'kinetic-mcpserver-host-network': { 'purko.io/mcpservers/hostnetwork': ['use'] },
}
const USER_ROLE_FILES: Record<string, string> = {
  'kinetic-recipe-author': 'admission/recipe-roles.yaml',
  'kinetic-recipe-approver': 'admission/recipe-roles.yaml',
  'kinetic-mcpserver-host-network': 'admission/mcpservers.yaml',
}

function grantsOf(role: Manifest): Grants {
  const grants: Grants = {}
  for (const rule of role.doc.rules as Array<{ apiGroups: string[]; resources: string[]; verbs: string[] }>) {
    for (const group of rule.apiGroups) {
      for (const resource of rule.resources) {
        const key = `${group}/${resource}`
        grants[key] = [...new Set([...(grants[key] ?? []), ...rule.verbs])].sort()
      }
    }
  }
  return grants
}

describe('least-privilege RBAC', () => {
  it('defines exactly the expected ClusterRoles', () => {
    expect(clusterRoles.map((m) => m.name).sort()).toEqual([...Object.keys(EXPECTED), ...Object.keys(USER_ROLES), ...Object.keys(NAMESPACE_ROLES)].sort())
  })

  it.each(Object.entries(NAMESPACE_ROLES))('%s grants exactly its verbs, and only RoleBindings in the namespaces the platform opts in bind it, to its functions', (name, expected) => {
    const role = clusterRoles.find((m) => m.name === name)!
    expect(role.file).toBe('rbac/namespace-access.yaml')
    expect(grantsOf(role)).toEqual(expected.grants)
    expect(bindings.filter((b) => b.doc.roleRef.name === name)).toEqual([])
    const roleBindings = ofKind(manifests, 'rbac.authorization.k8s.io/v1', 'RoleBinding').filter((b) => b.doc.roleRef.name === name)
    expect(roleBindings.map((b) => [b.file, b.namespace])).toEqual((expected.namespaces ?? ['ai-agents']).map((ns) => ['platform/access.yaml', ns]))
    for (const b of roleBindings) expect(b.doc.subjects).toEqual(expected.serviceAccounts.map((sa) => ({ kind: 'ServiceAccount', name: sa, namespace: 'kinetic-system' })))
  })

  it('webhook-trigger, which the internet calls, reads no Secret and only the trigger-rules ConfigMap cluster-wide', () => {
    const role = clusterRoles.find((m) => m.name === 'kinetic-webhook-trigger')!
    const configMaps = (role.doc.rules as Array<{ resources: string[]; resourceNames?: string[] }>).filter((r) => r.resources.includes('configmaps'))
    expect(configMaps.map((r) => r.resourceNames)).toEqual([['trigger-rules']])
    expect(grantsOf(role)).not.toHaveProperty(['/secrets'])
  })

  it('no function may start a pod (Job, Deployment), create a Role or RoleBinding, or read a Secret, in every namespace (kube-system included), but the recipe functions\' Secret reads', () => {
    for (const binding of bindings) {
      const role = clusterRoles.find((m) => m.name === binding.doc.roleRef.name)
      if (!role || role.name === 'kinetic-recipes') continue
      const grants = grantsOf(role)
      for (const resource of ['batch/jobs', 'apps/deployments', 'apps/statefulsets', 'apps/daemonsets', '/pods', 'rbac.authorization.k8s.io/roles', 'rbac.authorization.k8s.io/rolebindings']) {
        expect(grants[resource] ?? [], `${role.name} ${resource}`).not.toContain('create')
      }
      expect(grants['rbac.authorization.k8s.io/clusterroles'] ?? [], role.name).not.toContain('bind')
      expect(grants, role.name).not.toHaveProperty(['/secrets'])
    }
  })

  it.each(Object.entries(USER_ROLES))('%s (for people) grants exactly its verbs, no Secret, and is bound by nothing Kinetic ships', (name, grants) => {
    const role = clusterRoles.find((m) => m.name === name)!
    expect(role.file).toBe(USER_ROLE_FILES[name])
    expect(grantsOf(role)).toEqual(grants)
    const roleBindings = ofKind(manifests, 'rbac.authorization.k8s.io/v1', 'RoleBinding')
    expect([...bindings, ...roleBindings].filter((b) => b.doc.roleRef.name === name)).toEqual([])
  })

  it('only the approver role and run-control (which checks its caller\'s first) hold the approve verb', () => {
    const holders = clusterRoles.filter((r) => Object.values(grantsOf(r)).flat().includes('approve')).map((r) => r.name)
    expect(holders.sort()).toEqual(['kinetic-recipe-approver', 'kinetic-run-control'])
  })

  it.each(Object.entries(EXPECTED))('%s grants exactly the verbs in the table', (name, expected) => {
    const role = clusterRoles.find((m) => m.name === name)!
    expect(grantsOf(role)).toEqual(expected.grants)
  })

  it.each(Object.entries(EXPECTED).filter(([name]) => name !== LLM_CREDENTIALS_WRITER && name !== MCP_BRIDGE))('%s is bound to its own ServiceAccounts only', (name, expected) => {
    const bound = bindings.filter((b) => b.doc.roleRef.name === name)
    expect(bound).toHaveLength(1)
    expect(bound[0]!.doc.subjects).toEqual([expected.serviceAccount].flat().map((sa) => ({ kind: 'ServiceAccount', name: sa, namespace: 'kinetic-system' })))
  })

  it('no rule uses a wildcard, resourceNames or nonResourceURLs', () => {
    for (const role of clusterRoles) {
      for (const rule of role.doc.rules) {
        expect([...rule.apiGroups, ...rule.resources, ...rule.verbs], role.name).not.toContain('*')
        expect(rule).not.toHaveProperty('nonResourceURLs')
      }
    }
  })

  it('no workflow function may touch any Secret', () => {
    for (const name of ['kinetic-workflow-changed', 'kinetic-step-job-finished', 'kinetic-resync-tick', 'kinetic-workflow-template-changed', 'kinetic-schedule-fired']) {
      expect(grantsOf(clusterRoles.find((m) => m.name === name)!), name).not.toHaveProperty(['/secrets'])
    }
  })

  it('the provider functions hold no cluster-wide Secret right', () => {
    for (const name of ['kinetic-llmprovider-changed', 'kinetic-memoryprovider-changed', 'kinetic-mcpserver-changed']) {
      expect(grantsOf(clusterRoles.find((m) => m.name === name)!), name).not.toHaveProperty(['/secrets'])
    }
  })

  it('the copy writer reads and updates only kinetic-llm-credentials, and is bound only by RoleBindings in opted-in namespaces', () => {
    const writer = clusterRoles.find((m) => m.name === LLM_CREDENTIALS_WRITER)!
    expect(writer.doc.rules).toEqual([
      { apiGroups: [''], resources: ['secrets'], verbs: ['create'] },
      { apiGroups: [''], resources: ['secrets'], resourceNames: ['kinetic-llm-credentials'], verbs: ['get', 'update'] },
    ])
    expect(bindings.filter((b) => b.doc.roleRef.name === LLM_CREDENTIALS_WRITER)).toEqual([])
    const roleBindings = ofKind(manifests, 'rbac.authorization.k8s.io/v1', 'RoleBinding')
    const shipped = roleBindings.filter((b) => b.doc.roleRef.name === LLM_CREDENTIALS_WRITER)
    expect(shipped.map((b) => [b.namespace, b.doc.roleRef.kind, b.doc.subjects])).toEqual([
      ['ai-agents', 'ClusterRole', [{ kind: 'ServiceAccount', name: 'llmprovider-changed', namespace: 'kinetic-system' }]],
    ])
    const agentNamespace = ofKind(manifests, 'v1', 'Namespace').find((m) => m.name === 'ai-agents')!
    expect(agentNamespace.doc.metadata.labels).toEqual({ 'kinetic.dev/llm-credentials': 'enabled' })
  })

  it('llmprovider-changed reads Secrets only in the platform namespace', () => {
    const roles = ofKind(manifests, 'rbac.authorization.k8s.io/v1', 'Role').filter((r) => r.name === 'kinetic-llmprovider-changed-secrets')
    expect(roles.map((r) => [r.namespace, r.doc.rules])).toEqual([['purko-system', [{ apiGroups: [''], resources: ['secrets'], verbs: ['get'] }]]])
    const bound = ofKind(manifests, 'rbac.authorization.k8s.io/v1', 'RoleBinding').filter((b) => b.doc.roleRef.name === 'kinetic-llmprovider-changed-secrets')
    expect(bound.map((b) => [b.namespace, b.doc.subjects])).toEqual([['purko-system', [{ kind: 'ServiceAccount', name: 'llmprovider-changed', namespace: 'kinetic-system' }]]])
  })

  it('mcpserver-changed reads token Secrets only in the agent namespace', () => {
    const roles = ofKind(manifests, 'rbac.authorization.k8s.io/v1', 'Role').filter((r) => r.doc.rules.some((rule: { resources: string[] }) => rule.resources.includes('secrets')))
      .filter((r) => r.name.startsWith('kinetic-mcpserver-changed'))
    expect(roles.map((r) => [r.name, r.namespace, r.doc.rules])).toEqual([['kinetic-mcpserver-changed-secrets', 'ai-agents', [{ apiGroups: [''], resources: ['secrets'], verbs: ['get'] }]]])
    const bound = ofKind(manifests, 'rbac.authorization.k8s.io/v1', 'RoleBinding').filter((b) => b.doc.roleRef.name === 'kinetic-mcpserver-changed-secrets')
    expect(bound.map((b) => [b.namespace, b.doc.roleRef.kind, b.doc.subjects])).toEqual([['ai-agents', 'Role', [{ kind: 'ServiceAccount', name: 'mcpserver-changed', namespace: 'kinetic-system' }]]])
  })

  it('the ApiServerSource account may not write anything, nor read a Secret', () => {
    const sources = ofKind(manifests, 'sources.knative.dev/v1', 'ApiServerSource').map((m) => `kinetic-${m.doc.spec.serviceAccountName}`)
    expect(sources).toEqual(['kinetic-resources-source'])
    expect(grantsOf(clusterRoles.find((m) => m.name === sources[0])!)).not.toHaveProperty(['/secrets'])
    for (const name of sources) {
      const verbs = Object.values(grantsOf(clusterRoles.find((m) => m.name === name)!)).flat()
      expect(verbs.filter((v) => !['get', 'list', 'watch'].includes(v))).toEqual([])
    }
  })

  it('mcpserver-changed reads and updates only the mcp-servers ConfigMap, only in the agent namespace, and may bind only the bridge role, only in opted-in namespaces', () => {
    const roles = ofKind(manifests, 'rbac.authorization.k8s.io/v1', 'Role').filter((r) => r.name === 'kinetic-mcpserver-changed-registry')
    expect(roles.map((r) => [r.namespace, r.doc.rules])).toEqual([['ai-agents', [
      { apiGroups: [''], resources: ['configmaps'], verbs: ['create'] },
      { apiGroups: [''], resources: ['configmaps'], resourceNames: ['mcp-servers'], verbs: ['get', 'update'] },
    ]]])
    const bound = ofKind(manifests, 'rbac.authorization.k8s.io/v1', 'RoleBinding').filter((b) => b.doc.roleRef.name === 'kinetic-mcpserver-changed-registry')
    expect(bound.map((b) => [b.namespace, b.doc.subjects])).toEqual([['ai-agents', [{ kind: 'ServiceAccount', name: 'mcpserver-changed', namespace: 'kinetic-system' }]]])
    const role = clusterRoles.find((m) => m.name === 'kinetic-mcp-workloads')!
    expect(role.doc.rules.filter((r: { verbs: string[] }) => r.verbs.includes('bind'))).toEqual([
      { apiGroups: ['rbac.authorization.k8s.io'], resources: ['clusterroles'], resourceNames: [MCP_BRIDGE], verbs: ['bind'] },
    ])
    expect(Object.values(grantsOf(role)).flat()).not.toContain('escalate')
    // The bridge role is bound only by the RoleBindings mcpserver-changed makes, per namespace.
    expect(bindings.filter((b) => b.doc.roleRef.name === MCP_BRIDGE)).toEqual([])
  })

  it('the recipe functions write workloads, Services, Secrets and MCPServers only in the two target namespaces, by one Role bound to their three accounts there', () => {
    const grantsWorkloads = (g: Grants) => ['apps/deployments', 'batch/jobs', '/services', 'purko.io/mcpservers'].some((r) => g[r]?.some((v) => v !== 'get' && v !== 'list' && v !== 'watch'))
    expect(grantsWorkloads(RECIPE_GRANTS)).toBe(false)
    expect(grantsOf(clusterRoles.find((m) => m.name === 'kinetic-recipes')!)['/secrets']).toEqual(['get'])
    const roles = ofKind(manifests, 'rbac.authorization.k8s.io/v1', 'Role').filter((r) => r.name === 'kinetic-recipe-workloads')
    expect(roles.map((r) => [r.file, r.namespace])).toEqual(RECIPE_TARGET_NAMESPACES.map((ns) => ['platform/access.yaml', ns]))
    for (const role of roles) expect(grantsOf(role), role.namespace).toEqual(RECIPE_WORKLOAD_GRANTS)
    const bound = ofKind(manifests, 'rbac.authorization.k8s.io/v1', 'RoleBinding').filter((b) => b.doc.roleRef.name === 'kinetic-recipe-workloads')
    expect(bound.map((b) => [b.namespace, b.doc.roleRef.kind, b.doc.subjects])).toEqual(RECIPE_TARGET_NAMESPACES.map((ns) => [ns, 'Role',
      RECIPE_FUNCTIONS.map((name) => ({ kind: 'ServiceAccount', name, namespace: 'kinetic-system' }))]))
    // And the Services place children exactly where the Role is bound.
    for (const fn of RECIPE_FUNCTIONS) {
      const env = ofKind(manifests, 'serving.knative.dev/v1', 'Service').find((m) => m.name === fn)!.doc.spec.template.spec.containers[0].env as Array<{ name: string; value: string }>
      expect(['KINETIC_RECIPES_MCP_NAMESPACE', 'KINETIC_RECIPES_SANDBOX_NAMESPACE'].map((n) => env.find((e) => e.name === n)?.value), fn).toEqual(RECIPE_TARGET_NAMESPACES)
    }
  })

  it('recipes-mcp holds no Secret right and no Role anywhere: a deploy naming Secrets is authorized for the caller', () => {
    const bound = [...bindings, ...ofKind(manifests, 'rbac.authorization.k8s.io/v1', 'RoleBinding')]
      .filter((b) => b.doc.subjects.some((s: { name: string; namespace: string }) => s.name === 'recipes-mcp' && s.namespace === 'kinetic-system'))
    expect(bound.map((b) => [b.kind, b.doc.roleRef.name])).toEqual([['ClusterRoleBinding', 'kinetic-recipes-mcp']])
    expect(grantsOf(clusterRoles.find((m) => m.name === 'kinetic-recipes-mcp')!)).not.toHaveProperty(['/secrets'])
  })

  it('the base install gives the console account no role: people read with their own rights; impersonation and anonymous reads come only from opt-in components', () => {
    const boundToConsole = [...bindings, ...ofKind(manifests, 'rbac.authorization.k8s.io/v1', 'RoleBinding')]
      .filter((b) => b.doc.subjects.some((s: { name: string; namespace: string }) => s.name === 'console' && s.namespace === 'kinetic-system'))
    expect(boundToConsole.map((b) => [b.file, b.doc.roleRef.name]).sort()).toEqual([
      ['components/console-anonymous-read/reader.yaml', 'kinetic-console-reader'],
      ['components/console-proxy/impersonator.yaml', 'kinetic-console-impersonator'],
    ])
    // Only the impersonator may impersonate, and it may impersonate nothing but users and groups.
    const impersonators = clusterRoles.filter((r) => Object.values(grantsOf(r)).flat().includes('impersonate')).map((r) => r.name)
    expect(impersonators).toEqual(['kinetic-console-impersonator'])
    // Only by name, and as shipped nobody: impersonating any name would include system:masters.
    const impersonator = clusterRoles.find((r) => r.name === 'kinetic-console-impersonator')!
    expect(impersonator.doc.rules).toEqual([
      { apiGroups: [''], resources: ['users'], resourceNames: ['kinetic-console-nobody'], verbs: ['impersonate'] },
      { apiGroups: [''], resources: ['groups'], resourceNames: ['kinetic-console-nobody'], verbs: ['impersonate'] },
    ])
    // The reader only reads, and never a Secret or ConfigMap.
    const reader = grantsOf(clusterRoles.find((m) => m.name === 'kinetic-console-reader')!)
    expect(Object.values(reader).flat().filter((v) => !['get', 'list', 'watch'].includes(v))).toEqual([])
    expect(Object.keys(reader).filter((r) => r === '/secrets' || r === '/configmaps')).toEqual([])
  })

  it('the dead-letter account has no role and mounts no API token', () => {
    const account = ofKind(manifests, 'v1', 'ServiceAccount').find((m) => m.name === 'dead-letter')!
    expect(account.doc.automountServiceAccountToken).toBe(false)
    expect(bindings.flatMap((b) => b.doc.subjects).filter((s: { name: string }) => s.name === 'dead-letter')).toEqual([])
  })
})
