// Each function's ServiceAccount can do exactly what the function does, judged by the real
// API server: every method of the Kube port (the only way a function reaches the API) is called
// through the real adapter as each function's own ServiceAccount. The methods a function
// declares it uses must be authorized; every other method must be refused (403): least
// privilege, proven both ways. The audit log records which verb and resource each call used,
// and SubjectAccessReviews check those against knative/'s RBAC.
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { beforeAll, expect, it } from 'vitest'
import type { V1ConfigMap, V1Deployment, V1Job, V1Secret, V1Service } from '@kubernetes/client-node'
import { ConflictError, ForbiddenError, RefusedError } from '../../shared/core/errors.js'
import { silentLogger } from '../../shared/log.js'
import { PINGSOURCE_CRD } from '../../local/knative/pingsource-crd.js'
import { alarmManifest, type Tick } from '../../shared/ticks/alarm-plan.js'
import { armTickAlarm, readAlarm, settleTickAlarm } from '../../shared/ticks/alarm.js'
import { KubeClient } from '../../shared/kube/client.js'
import type { Kube } from '../../shared/kube/port.js'
import { WorkflowRecipeSchema, type WorkflowRecipe } from '../../shared/schemas/workflowrecipe.js'
import { functionNames, loadManifests, ROOT, type Manifest } from '../knative/manifests.js'
import type { AuditEvent, ControlPlane } from '../../cluster/control-plane.js'
import { grantNamespace } from './namespace-grants.js'
import { describeCluster, useControlPlane } from './tier.js'

const NS = 'rbac-team'
const SYSTEM_NS = 'kinetic-system'
/** A recipe target namespace (platform/namespaces.yaml), where kinetic-recipe-workloads is bound. */
const TARGET_NS = 'sandbox-recipes'
/** The recipe functions share one ClusterRole; the others hold `kinetic-<function>`. */
const RECIPE_FUNCTIONS = new Set(['workflowrecipe-changed', 'recipe-child-changed', 'recipe-policy-changed'])
/** The console's own reads are those of the opt-in anonymous-read component (applied here with everything in knative/). */
const roleOf = (fn: string) => (RECIPE_FUNCTIONS.has(fn) ? 'kinetic-recipes' : fn === 'console' ? 'kinetic-console-reader' : `kinetic-${fn}`)
/** Pods: where each function reads them (a recipe's test Jobs and workloads run in its target namespace). */
const podNamespace = (tag: string) => (RECIPE_FUNCTIONS.has(tag) ? TARGET_NS : NS)

/** `verb group/resource[/subresource]`, the unit RBAC grants. */
type Access = string
const accessOf = (e: AuditEvent): Access =>
  `${e.verb} ${e.objectRef?.apiGroup ?? ''}/${e.objectRef?.resource ?? ''}${e.objectRef?.subresource ? `/${e.objectRef.subresource}` : ''}`

// One call of every port method, with arguments that reach the API server (and, where the
// contract says so, its 404 / AlreadyExists / Conflict answers).
type PortCalls = { [M in keyof Kube]: (kube: Kube, tag: string) => Promise<unknown> }
// Children are owned by their Workflow with blockOwnerDeletion, as the engine writes them.
let owner: { apiVersion: string; kind: string; name: string; uid: string; controller: boolean; blockOwnerDeletion: boolean }[] = []
const job = (tag: string): V1Job => ({
  apiVersion: 'batch/v1', kind: 'Job',
  metadata: { name: `rbac-${tag}`, namespace: NS, labels: { 'purko.io/workflow': 'rbac' }, ownerReferences: owner },
  spec: { template: { spec: { restartPolicy: 'Never', containers: [{ name: 'step', image: 'kinetic' }] } } },
})
// A recipe function's ConfigMaps are revision snapshots, owned by their recipe.
const configMap = (tag: string): V1ConfigMap => ({
  apiVersion: 'v1', kind: 'ConfigMap',
  metadata: { name: `rbac-${tag}`, namespace: NS, labels: { 'purko.io/workflow': 'rbac' }, ownerReferences: RECIPE_FUNCTIONS.has(tag) ? recipeOwner : owner }, data: { a: '1' },
})
// A recipe's children: a workload in the target namespace, and the child Workflow in the
// recipe's own namespace, owned by the recipe with blockOwnerDeletion as the engine writes it.
let recipeOwner: { apiVersion: string; kind: string; name: string; uid: string; controller: boolean; blockOwnerDeletion: boolean }[] = []
let recipeVersion = ''
const RECIPE_LABELS = { 'purko.io/recipe': 'rbac-recipe', 'purko.io/recipe-namespace': NS }
const childWorkload = (tag: string, namespace = TARGET_NS) => ({
  apiVersion: 'apps/v1', kind: 'StatefulSet',
  metadata: { name: `rbac-${tag}`, namespace, labels: RECIPE_LABELS },
  spec: { serviceName: 'rbac', selector: { matchLabels: { app: 'rbac' } },
    template: { metadata: { labels: { app: 'rbac' } }, spec: { containers: [{ name: 'web', image: 'kinetic' }] } } },
})
const childWorkflow = (tag: string) => ({
  apiVersion: 'purko.io/v1alpha1', kind: 'Workflow',
  metadata: { name: `rbac-child-${tag}`, namespace: NS, labels: RECIPE_LABELS, ownerReferences: recipeOwner },
  spec: { steps: [{ name: 'a', agentRef: { name: 'x' } }] },
})
/** Both calls are made; the first failure, if any, is the method's. */
async function each(...calls: Array<() => Promise<unknown>>): Promise<void> {
  const failures: unknown[] = []
  for (const call of calls) await call().catch((err: unknown) => failures.push(err))
  if (failures.length > 0) throw failures[0]
}
// An MCPServer's workload, owned by the MCPServer as mcpserver-changed writes it.
let mcpOwner: { apiVersion: string; kind: string; name: string; uid: string; controller: boolean; blockOwnerDeletion: boolean }[] = []
const deployment = (tag: string): V1Deployment => ({
  apiVersion: 'apps/v1', kind: 'Deployment',
  metadata: { name: `rbac-${tag}`, namespace: NS, labels: { 'purko.io/mcp-server': 'rbac-mcp' }, ownerReferences: mcpOwner },
  spec: { selector: { matchLabels: { 'purko.io/mcp-server': 'rbac-mcp' } },
    template: { metadata: { labels: { 'purko.io/mcp-server': 'rbac-mcp' } }, spec: { containers: [{ name: 'mcp-server', image: 'kinetic' }] } } },
})
const service = (tag: string): V1Service => ({
  apiVersion: 'v1', kind: 'Service',
  metadata: { name: `rbac-${tag}`, namespace: NS, labels: { 'purko.io/mcp-server': 'rbac-mcp' }, ownerReferences: mcpOwner },
  spec: { selector: { 'purko.io/mcp-server': 'rbac-mcp' }, ports: [{ port: 8000, targetPort: 8000 as never, protocol: 'TCP' }] },
})
const secret = (tag: string): V1Secret => ({ apiVersion: 'v1', kind: 'Secret', metadata: { name: `rbac-${tag}`, namespace: NS, ownerReferences: owner }, stringData: { key: 'x' } })
// Grants no request uses but admission checks: with OwnerReferencesPermissionEnforcement,
// setting blockOwnerDeletion needs update on the owner's finalizers.
// A server-side apply that creates its object is authorized for create as well, inside the one
// PATCH request, so the audit log shows only the patch (without the grant, applyChild is refused).
const CHECKED_BY_ADMISSION = new Set<Access>([
  'update purko.io/workflows/finalizers', 'update purko.io/agents/finalizers', 'update purko.io/mcpservers/finalizers', 'update purko.io/workflowrecipes/finalizers',
  'create purko.io/workflows',
])
// Per-agent identities are owned by their Agent, as agent-changed writes them.
let agentOwner: { apiVersion: string; kind: string; name: string; uid: string; controller: boolean; blockOwnerDeletion: boolean }[] = []
let agentVersion = ''
// A guarded write that lost the race still reached the API server and was authorized.
const conflictIsFine = (err: unknown) => { if (!(err instanceof ConflictError)) throw err; return null }
/** A Node object no kubelet runs; the step pods are bound to it and tolerate its taints (it never becomes Ready). */
const RBAC_NODE = 'rbac-node'
const ON_RBAC_NODE = { nodeName: RBAC_NODE, tolerations: [{ operator: 'Exists' }] }
const PORT_CALLS: PortCalls = {
  getWorkflow: (k) => k.getWorkflow(NS, 'rbac'),
  listWorkflows: (k) => k.listWorkflows(),
  listAgents: (k) => k.listAgents(NS),
  getAgent: (k) => k.getAgent(NS, 'missing'),
  listLLMProviders: (k) => k.listLLMProviders(NS),
  listJobs: (k) => k.listJobs(NS, { 'purko.io/workflow': 'rbac' }),
  listJobsLabelled: (k) => k.listJobsLabelled(NS, 'purko.io/workflow'),
  createJob: (k, t) => k.createJob(job(t)),
  deleteJob: (k, t) => k.deleteJob(NS, `rbac-${t}`),
  // The pod's node has no kubelet, so the log request itself fails after authorization: what
  // matters here is that it was authorized, which the audit record shows.
  readJobLog: (k, t) => k.readJobLog(podNamespace(t), 'rbac-with-pod').catch(() => null),
  // Its pod left no termination message, so it reads the log too, failing as above.
  readStepReport: (k, t) => k.readStepReport(podNamespace(t), 'rbac-with-pod', 'output').catch(() => null),
  // webhook-trigger may read only the namespace's routing rules.
  getConfigMap: (k, t) => k.getConfigMap(NS, t === 'webhook-trigger' ? 'trigger-rules' : `rbac-${t}`),
  listConfigMaps: (k) => k.listConfigMaps(NS, { 'purko.io/workflow': 'rbac' }),
  createConfigMap: (k, t) => k.createConfigMap(configMap(t)),
  replaceConfigMap: async (k, t) => {
    const live = await k.getConfigMap(NS, `rbac-${t}`)
    return k.replaceConfigMap({ ...configMap(t), metadata: { ...configMap(t).metadata, resourceVersion: live?.metadata?.resourceVersion }, data: { a: '2' } })
  },
  getSecret: (k, t) => k.getSecret(NS, `rbac-${t}`),
  createSecret: (k, t) => k.createSecret(secret(t)),
  replaceSecret: async (k, t) => {
    const live = await k.getSecret(NS, `rbac-${t}`)
    return k.replaceSecret({ ...secret(t), metadata: { ...secret(t).metadata, resourceVersion: live?.metadata?.resourceVersion } })
  },
  patchWorkflowMetadata: async (k) => {
    const wf = await k.getWorkflow(NS, 'rbac')
    return k.patchWorkflowMetadata(NS, 'rbac', wf?.metadata.resourceVersion ?? '', { annotations: { 'purko.io/touched': 'yes' } })
  },
  createWorkflow: (k, t) => k.createWorkflow({
    apiVersion: 'purko.io/v1alpha1', kind: 'Workflow',
    metadata: { name: `rbac-run-${t}`, namespace: NS, labels: { 'kinetic.dev/template': 'rbac' } },
    spec: { steps: [{ name: 'a', agentRef: { name: 'x' } }] },
  } as never),
  listWorkflowsIn: (k) => k.listWorkflowsIn(NS, { 'kinetic.dev/template': 'rbac' }),
  deleteWorkflow: (k, t) => k.deleteWorkflow(NS, `rbac-run-${t}`),
  patchWorkflow: async (k) => {
    const wf = await k.getWorkflow(NS, 'rbac')
    return k.patchWorkflow(NS, 'rbac', wf?.metadata.resourceVersion ?? '', { annotations: { 'purko.io/touched': 'yes' }, parameters: { touched: 'yes' } }).catch(conflictIsFine)
  },
  listEvents: (k) => k.listEvents(NS, { kind: 'Workflow', name: 'rbac' }),
  reviewSelfAccess: (k) => k.reviewSelfAccess([{ verb: 'get', group: 'purko.io', resource: 'workflows', namespace: NS, name: 'rbac' }]),
  whoAmI: (k) => k.whoAmI(),
  watchWorkflow: async (k) => { const h = await k.watchWorkflow(NS, 'rbac', '0', () => {}); h.stop(); await h.done.catch(() => {}) },
  // As readJobLog: the pod's node has no kubelet, so the log request fails after authorization.
  followPodLog: async (k, t) => {
    const h = await k.followPodLog(podNamespace(t), 'rbac-with-pod-x', {}, () => {}).catch(() => null)
    h?.stop()
  },
  listMCPServers: (k) => k.listMCPServers(NS),
  patchWorkflowStatus: async (k) => {
    const wf = await k.getWorkflow(NS, 'rbac')
    return k.patchWorkflowStatus(NS, 'rbac', wf?.metadata.resourceVersion ?? '', { phase: 'Pending' } as never)
  },
  listAllAgents: (k) => k.listAllAgents(),
  patchAgent: (k) => k.patchAgent(NS, 'rbac-agent', agentVersion, { metadata: { annotations: { 'purko.io/touched': null } } }).catch(conflictIsFine),
  replaceAgentStatus: (k) => k.replaceAgentStatus(NS, 'rbac-agent', agentVersion, { phase: 'Ready' }).catch(conflictIsFine),
  listAutonomyPolicies: (k) => k.listAutonomyPolicies(),
  replaceAutonomyPolicyStatus: (k) => k.replaceAutonomyPolicyStatus(NS, 'rbac-policy', '1', {}).catch(conflictIsFine),
  getMemoryProvider: (k) => k.getMemoryProvider('purko-system', 'missing'),
  getServiceAccount: (k, t) => k.getServiceAccount(NS, `rbac-${t}`),
  // mcpserver-changed's bridge identity is shared by a namespace's stdio servers: no owner, and
  // bound to the shipped ClusterRole kinetic-mcp-bridge; agent-changed's is owned by its Agent.
  createServiceAccount: (k, t) => k.createServiceAccount(t === 'mcpserver-changed'
    ? { metadata: { name: `rbac-${t}`, namespace: NS } }
    : { metadata: { name: `rbac-${t}`, namespace: NS, ownerReferences: agentOwner }, automountServiceAccountToken: false }),
  replaceServiceAccount: async (k, t) => {
    const live = await k.getServiceAccount(NS, `rbac-${t}`)
    return k.replaceServiceAccount({ ...live, metadata: { ...live?.metadata, name: `rbac-${t}`, namespace: NS, labels: { 'purko.io/agent': 'rbac-agent' } } })
  },
  deleteServiceAccount: (k, t) => k.deleteServiceAccount(NS, `rbac-${t}`),
  getRole: (k, t) => k.getRole(NS, `rbac-${t}`),
  createRole: (k, t) => k.createRole({ metadata: { name: `rbac-${t}`, namespace: NS, ownerReferences: agentOwner },
    rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list'] }, { apiGroups: [''], resources: ['secrets'], resourceNames: ['llm-key'], verbs: ['get'] }] }),
  replaceRole: async (k, t) => {
    const live = await k.getRole(NS, `rbac-${t}`)
    return k.replaceRole({ ...live, metadata: { ...live?.metadata, name: `rbac-${t}`, namespace: NS }, rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list'] }] })
  },
  getRoleBinding: (k, t) => k.getRoleBinding(NS, `rbac-${t}`),
  createRoleBinding: (k, t) => k.createRoleBinding(t === 'mcpserver-changed'
    ? { metadata: { name: `rbac-${t}`, namespace: NS }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'kinetic-mcp-bridge' },
      subjects: [{ kind: 'ServiceAccount', name: `rbac-${t}`, namespace: NS }] }
    : { metadata: { name: `rbac-${t}`, namespace: NS, ownerReferences: agentOwner },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: `rbac-${t}` }, subjects: [{ kind: 'ServiceAccount', name: `rbac-${t}`, namespace: NS }] }),
  replaceRoleBinding: async (k, t) => {
    const live = await k.getRoleBinding(NS, `rbac-${t}`)
    return k.replaceRoleBinding({
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: `rbac-${t}` }, ...live,
      metadata: { ...live?.metadata, name: `rbac-${t}`, namespace: NS }, subjects: [{ kind: 'ServiceAccount', name: `rbac-${t}-other`, namespace: NS }],
    })
  },
  getLLMProvider: (k) => k.getLLMProvider(NS, 'rbac-llm'),
  listAllLLMProviders: (k) => k.listAllLLMProviders(),
  replaceLLMProviderStatus: (k) => k.replaceLLMProviderStatus(NS, 'rbac-llm', '1', {}).catch(conflictIsFine),
  getMCPServer: (k) => k.getMCPServer(NS, 'rbac-mcp'),
  listAllMCPServers: (k) => k.listAllMCPServers(),
  patchMCPServerMetadata: (k) => k.patchMCPServerMetadata(NS, 'rbac-mcp', '1', { annotations: { 'purko.io/touched': null } }).catch(conflictIsFine),
  replaceMCPServerStatus: (k) => k.replaceMCPServerStatus(NS, 'rbac-mcp', '1', {}).catch(conflictIsFine),
  listAllMemoryProviders: (k) => k.listAllMemoryProviders(),
  replaceMemoryProviderStatus: (k) => k.replaceMemoryProviderStatus(NS, 'rbac-mem', '1', {}).catch(conflictIsFine),
  getDeployment: (k, t) => k.getDeployment(NS, `rbac-${t}`),
  createDeployment: (k, t) => k.createDeployment(deployment(t)),
  replaceDeployment: async (k, t) => {
    const live = await k.getDeployment(NS, `rbac-${t}`)
    return k.replaceDeployment({ ...deployment(t), metadata: { ...deployment(t).metadata, resourceVersion: live?.metadata?.resourceVersion } })
  },
  getService: (k, t) => k.getService(NS, `rbac-${t}`),
  createService: (k, t) => k.createService(service(t)),
  replaceService: async (k, t) => {
    const live = await k.getService(NS, `rbac-${t}`)
    return k.replaceService({ ...service(t), metadata: { ...service(t).metadata, resourceVersion: live?.metadata?.resourceVersion }, spec: { ...service(t).spec, clusterIP: live?.spec?.clusterIP } })
  },
  listPods: (k, t) => k.listPods(podNamespace(t), { 'purko.io/mcp-server': 'rbac-mcp' }),
  getNamespace: (k) => k.getNamespace(NS),
  listNamespaces: (k) => k.listNamespaces({ 'kinetic.dev/llm-credentials': 'enabled' }),
  listAllConfigMaps: (k) => k.listAllConfigMaps({ 'purko.io/memory-type': 'summary' }),
  createEvent: (k, t) => k.createEvent({
    metadata: { name: `rbac-${t}.1`, namespace: NS }, involvedObject: { kind: 'Workflow', namespace: NS, name: 'rbac' },
    reason: 'Checked', message: 'RBAC check', type: 'Normal',
  }),
  getRecipe: (k) => k.getRecipe(NS, 'rbac-recipe'),
  listAllRecipes: (k) => k.listAllRecipes(),
  patchRecipeMetadata: (k) => k.patchRecipeMetadata(NS, 'rbac-recipe', recipeVersion, { annotations: { 'purko.io/touched': null } }).catch(conflictIsFine),
  replaceRecipeStatus: (k) => k.replaceRecipeStatus(NS, 'rbac-recipe', recipeVersion, {}).catch(conflictIsFine),
  listRecipePolicies: (k) => k.listRecipePolicies(),
  getRecipePolicy: (k) => k.getRecipePolicy('rbac-recipe-policy'),
  replaceRecipePolicyStatus: (k) => k.replaceRecipePolicyStatus('rbac-recipe-policy', '1', {}).catch(conflictIsFine),
  // Each child verb on a workload in the target namespace and on the child Workflow.
  getChild: (k, t) => each(() => k.getChild('StatefulSet', TARGET_NS, `rbac-${t}`), () => k.getChild('Workflow', NS, `rbac-child-${t}`)),
  listChildren: (k) => each(() => k.listChildren('StatefulSet', TARGET_NS, RECIPE_LABELS), () => k.listChildren('Workflow', NS, RECIPE_LABELS)),
  applyChild: (k, t) => each(() => k.applyChild(childWorkload(t)), () => k.applyChild(childWorkflow(t))),
  createChild: (k, t) => each(
    () => k.createChild(childWorkload(`${t}-created`)).catch(conflictIsFine),
    () => k.createChild(childWorkflow(`${t}-created`)).catch(conflictIsFine),
  ),
  patchChild: (k, t) => each(
    () => k.patchChild('StatefulSet', TARGET_NS, `rbac-${t}`, '1', { metadata: { labels: { touched: 'yes' } } }).catch(conflictIsFine),
    () => k.patchChild('Workflow', NS, `rbac-child-${t}`, '1', { metadata: { labels: { touched: 'yes' } } }).catch(conflictIsFine),
  ),
  deleteChild: (k, t) => each(
    () => k.deleteChild('StatefulSet', TARGET_NS, `rbac-${t}`, { propagationPolicy: 'Foreground' }),
    () => k.deleteChild('Workflow', NS, `rbac-child-${t}`, { propagationPolicy: 'Background' }),
  ),
  deleteConfigMap: (k, t) => k.deleteConfigMap(NS, `rbac-${t}`),
  // The recipes MCP server's: a token that does not authenticate still needs the create right.
  reviewToken: (k) => k.reviewToken('not-a-token'),
  reviewAccess: (k) => k.reviewAccess({ username: 'rbac-caller', groups: ['system:authenticated'] }, { verb: 'get', group: 'purko.io', resource: 'workflowrecipes', namespace: NS, name: 'rbac-recipe' }),
  listRecipes: (k) => k.listRecipes({ namespace: NS, limit: 5 }),
  // Created, replaced and deleted again within one function's turn (no finalizer: no controller runs here).
  createRecipe: (k, t) => k.createRecipe(mcpRecipe(t)),
  replaceRecipe: async (k, t) => {
    const live = await k.getRecipe(NS, `rbac-${t}`)
    return k.replaceRecipe({ ...mcpRecipe(t), metadata: { ...mcpRecipe(t).metadata, resourceVersion: live?.metadata.resourceVersion ?? '1' } })
  },
  deleteRecipe: (k, t) => k.deleteRecipe(NS, `rbac-${t}`),
}

type Method = keyof Kube
// What deploy-recipe writes (as recipes-mcp): a recipe of the caller's, marked as deployed over MCP.
function mcpRecipe(tag: string): WorkflowRecipe {
  return WorkflowRecipeSchema.parse({
    apiVersion: 'purko.io/v1alpha1', kind: 'WorkflowRecipe',
    metadata: { name: `rbac-${tag}`, namespace: NS, annotations: { 'purko.io/deployed-via': 'mcp', 'purko.io/deployed-by': 'rbac-caller' } },
    spec: { workloads: [{ name: 'web', kind: 'Deployment', image: 'kinetic' }] },
  })
}
/**
 * What each function may call: the port verbs it declares (functions/<name>/kube-verbs.ts, its
 * deps' type), read here so that what compiles and what the real API server authorizes are one
 * list. Every declared method must be authorized in the test namespace, but its `elsewhere` ones.
 */
const DECLARED = new Map<string, readonly Method[]>()
for (const fn of functionNames()) {
  if (existsSync(join(ROOT, 'functions', fn, 'kube-verbs.ts'))) DECLARED.set(fn, (await import(`../../functions/${fn}/kube-verbs.ts`) as { KUBE_VERBS: readonly Method[] }).KUBE_VERBS)
}
/**
 * Methods outside a function's set that a grant held for another reason lets through (each with
 * that reason); every other undeclared method must be refused.
 */
const WORKFLOW_ALSO: Partial<Record<Method, string>> = {
  listAllAgents: 'list agents, cluster-wide (the ClusterRole lists them for listAgents in every namespace)',
  listAllLLMProviders: 'list llmproviders, cluster-wide (the ClusterRole lists them for listLLMProviders in every namespace)',
  listJobsLabelled: 'list jobs: what listJobs lists (the per-namespace grant is shared with resync-tick)',
  readJobLog: 'list pods and get pods/log: what readStepReport reads',
  followPodLog: 'get pods/log: readStepReport reads a step pod\'s log',
  listMCPServers: 'list mcpservers, cluster-wide (the ClusterRole lists them for listAllMCPServers)',
  listWorkflows: 'list workflows, cluster-wide (the ClusterRole lists them for listWorkflowsIn in every namespace)',
  patchWorkflow: 'patch workflows (patchWorkflowMetadata writes the run-id annotation and the finalizer)',
}
const RECIPE_ALSO: Partial<Record<Method, string>> = {
  listRecipes: 'list workflowrecipes, cluster-wide (listAllRecipes: the resync tick lists them in every namespace)',
  getWorkflow: 'get workflows: getChild reads the child Workflow, in any recipe namespace',
  listWorkflows: 'list workflows, cluster-wide (listChildren lists child Workflows in every recipe namespace)',
  patchWorkflowMetadata: 'patch workflows: applyChild server-side applies the child Workflow',
  patchWorkflow: 'patch workflows: applyChild server-side applies the child Workflow',
  createWorkflow: 'create workflows: applyChild creates the child Workflow when it is absent',
  listWorkflowsIn: 'list workflows: listChildren lists child Workflows by label',
  deleteWorkflow: 'delete workflows: deleteChild deletes the child Workflow at recipe deletion',
  listAllConfigMaps: 'list configmaps, cluster-wide (listConfigMaps lists revision snapshots in every recipe namespace)',
  followPodLog: 'get pods/log: readJobLog reads a test Job\'s log',
  readStepReport: 'list pods and get pods/log: what readJobLog reads',
}
/** The ClusterRole kinetic-recipes is one for the three recipe functions. */
const RECIPE_SHARED: Partial<Record<Method, string>> = {
  replaceRecipePolicyStatus: 'workflowrecipepolicies/status update: the ClusterRole kinetic-recipes is shared with recipe-policy-changed',
  getRecipePolicy: 'get workflowrecipepolicies: the ClusterRole kinetic-recipes is shared with recipe-policy-changed',
  listAllRecipes: 'list workflowrecipes, cluster-wide: the ClusterRole kinetic-recipes is shared with workflowrecipe-changed',
}
/**
 * Port methods only the kinetic CLI calls, as the person running it (their kubeconfig), never a
 * function: no function's ServiceAccount needs them. `kinetic events` reads a Workflow's Events.
 */
const CLI_ONLY: Method[] = ['listEvents']
const TEMPLATE_ALSO: Partial<Record<Method, string>> = {
  listWorkflows: 'list workflows, cluster-wide (the ClusterRole lists them for listWorkflowsIn in every namespace)',
}
/**
 * The generic child methods, which the template functions use for the template's PingSource
 * only (sources.knative.dev pingsources): the calls here are about recipe children (a
 * StatefulSet), which they are refused.
 */
const PINGSOURCE_ONLY: Partial<Record<Method, string>> = {
  getChild: 'a template\'s PingSource only; recipe children are refused',
  applyChild: 'a template\'s PingSource only; recipe children are refused',
  deleteChild: 'a template\'s PingSource only; recipe children are refused',
}
/**
 * The generic child methods of the functions that settle or arm a tick's alarm: only the one
 * PingSource `<tick>-alarm` in kinetic-system (knative/rbac/alarms.yaml), so the calls here, about
 * recipe children in ordinary namespaces, are refused.
 */
const ALARM_ONLY: Partial<Record<Method, string>> = {
  getChild: 'their tick\'s alarm PingSource in kinetic-system only',
  createChild: 'their tick\'s alarm PingSource in kinetic-system only',
  patchChild: 'their tick\'s alarm PingSource in kinetic-system only',
  deleteChild: 'their tick\'s alarm PingSource in kinetic-system only',
}
/** resync-tick: a template's PingSource, and the resync alarm. */
const PINGSOURCE_AND_ALARM: Partial<Record<Method, string>> = { ...ALARM_ONLY, ...PINGSOURCE_ONLY }
const CONSOLE_ALSO: Partial<Record<Method, string>> = {
  readStepReport: 'list pods and get pods/log: what readJobLog reads',
  listJobsLabelled: 'list jobs: what listJobs lists',
  listMCPServers: 'list mcpservers, cluster-wide (listAllMCPServers)',
}
/**
 * Methods every authenticated account may call (kube-apiserver's system:basic-user role): a
 * self review asks only about the caller itself.
 */
const EVERYONE: Partial<Record<Method, string>> = {
  reviewSelfAccess: 'SelfSubjectAccessReviews: every authenticated account may ask about itself (system:basic-user)',
  whoAmI: 'SelfSubjectReviews: every authenticated account may ask who it is (system:basic-user)',
}
/**
 * Per function: `alsoAllowed` (above), and `elsewhere`: declared methods the function uses only
 * in namespaces that grant them by a RoleBinding of their own (with the reason); in the test
 * namespace, which grants nothing, they must be refused.
 */
const USES: Record<string, { alsoAllowed?: Partial<Record<Method, string>>; elsewhere?: Partial<Record<Method, string>> }> = {
  'workflow-changed': { alsoAllowed: WORKFLOW_ALSO, elsewhere: ALARM_ONLY },
  'step-job-finished': { alsoAllowed: WORKFLOW_ALSO, elsewhere: ALARM_ONLY },
  // And every scheduled template's catch-up: a run for a missed fire, prunes, its PingSource.
  'resync-tick': { alsoAllowed: WORKFLOW_ALSO, elsewhere: PINGSOURCE_AND_ALARM },
  'workflow-template-changed': { alsoAllowed: TEMPLATE_ALSO, elsewhere: PINGSOURCE_ONLY },
  'schedule-fired': { alsoAllowed: TEMPLATE_ALSO, elsewhere: PINGSOURCE_ONLY },
  'agent-changed': {
    alsoAllowed: {
      listAgents: 'list agents: the recheck tick lists them cluster-wide, which covers every namespace',
      getConfigMap: 'configmaps get: the per-agent Role grants it, and the API server only lets a holder grant it',
      listConfigMaps: 'configmaps list: the per-agent Role grants it, and the API server only lets a holder grant it',
      listAllLLMProviders: 'list llmproviders, cluster-wide (the ClusterRole lists them for listLLMProviders in every namespace)',
    },
    elsewhere: ALARM_ONLY,
  },
  'autonomy-tick': {
    alsoAllowed: { listAllAgents: 'list agents, cluster-wide (the ClusterRole lists them for listAgents in every namespace)' },
    elsewhere: ALARM_ONLY,
  },
  // Secrets only in the platform namespace (a Role there) and the copy in opted-in namespaces
  // (RoleBindings there): here, in an ordinary namespace, every Secret method is refused.
  'llmprovider-changed': {
    elsewhere: {
      ...ALARM_ONLY,
      getSecret: 'providers\' Secrets in purko-system (Role there), the copy in opted-in namespaces',
      createSecret: 'the copy kinetic-llm-credentials, in namespaces opted in with a RoleBinding',
      replaceSecret: 'the copy kinetic-llm-credentials, in namespaces opted in with a RoleBinding',
    },
  },
  // The registry ConfigMap and token Secrets only in the agent namespace (Roles there): here, in
  // an ordinary namespace, every ConfigMap and Secret method is refused.
  'mcpserver-changed': {
    alsoAllowed: { listMCPServers: 'list mcpservers, cluster-wide (listAllMCPServers)' },
    elsewhere: {
      ...ALARM_ONLY,
      getSecret: 'bearer servers\' token Secrets in ai-agents (Role there), elsewhere only where a namespace grants the one Secret',
      getConfigMap: 'the MCP registry ConfigMap in ai-agents (Role there)',
      createConfigMap: 'the MCP registry ConfigMap in ai-agents (Role there)',
      replaceConfigMap: 'the MCP registry ConfigMap in ai-agents (Role there)',
    },
  },
  'memoryprovider-changed': {
    alsoAllowed: { listConfigMaps: 'list configmaps, cluster-wide (the ClusterRole counts the memory ConfigMaps of every namespace)' },
  },
  'workflowrecipe-changed': { alsoAllowed: { ...RECIPE_ALSO, ...RECIPE_SHARED } },
  'recipe-child-changed': { alsoAllowed: { ...RECIPE_ALSO, ...RECIPE_SHARED } },
  'recipe-policy-changed': { alsoAllowed: RECIPE_ALSO },
  'recipes-mcp': {
    alsoAllowed: { listAllRecipes: 'list workflowrecipes, cluster-wide (list-recipes without a namespace lists them all)' },
  },
  'run-control': {
    alsoAllowed: {
      followPodLog: 'get pods/log: readJobLog reads a step pod\'s log',
      readStepReport: 'list pods and get pods/log: what readJobLog reads',
      listJobsLabelled: 'list jobs: what listJobs lists',
    },
  },
  // People read with their own rights (token, or impersonation behind a proxy): the console's own
  // account reads only for visitors nobody identified, with components/console-anonymous-read.
  console: {
    alsoAllowed: CONSOLE_ALSO,
    elsewhere: { getConfigMap: 'a step\'s output ConfigMap, with the person\'s own rights only: the anonymous reader withholds it' },
  },
  'webhook-trigger': {},
}
/** The declared methods `fn` must be allowed in the test namespace. */
const methodsOf = (fn: string): Method[] => (DECLARED.get(fn) ?? []).filter((m) => !(m in (USES[fn]?.elsewhere ?? {})))

const manifests = loadManifests()
// Functions whose Service runs with an API identity: the ServiceAccount named by the Service.
const services = manifests.filter((m) => m.kind === 'Service' && m.apiVersion === 'serving.knative.dev/v1')
const accountOf = (svc: Manifest) => String(svc.doc.spec.template.spec.serviceAccountName ?? 'default')
const sources = manifests.filter((m) => m.kind === 'ApiServerSource')

// The audit record of a request is written as its answer goes out, so wait until the log is quiet.
async function settledAudit(cp: ControlPlane): Promise<AuditEvent[]> {
  let last = -1
  for (let i = 0; i < 40; i++) {
    const events = cp.auditEvents()
    if (events.length === last) return events
    last = events.length
    await new Promise((r) => setTimeout(r, 75))
  }
  return cp.auditEvents()
}

async function allowed(cp: ControlPlane, user: string, access: Access, namespace?: string, name?: string): Promise<boolean> {
  const [verb, path] = access.split(' ') as [string, string]
  const [group, resource, subresource] = path.split('/') as [string, string, string | undefined]
  const review = await cp.admin.request<{ status: { allowed: boolean } }>('POST', '/apis/authorization.k8s.io/v1/subjectaccessreviews', {
    apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview',
    spec: { user, groups: ['system:serviceaccounts', `system:serviceaccounts:${SYSTEM_NS}`, 'system:authenticated'],
      resourceAttributes: { verb, group, resource, ...(subresource ? { subresource } : {}), ...(namespace ? { namespace } : {}), ...(name ? { name } : {}) } },
  })
  return review.status.allowed
}

function grantsOf(roleName: string): Set<Access> {
  const role = manifests.find((m) => m.kind === 'ClusterRole' && m.name === roleName)
  const out = new Set<Access>()
  for (const rule of (role?.doc.rules ?? []) as Array<{ apiGroups: string[]; resources: string[]; verbs: string[] }>) {
    for (const g of rule.apiGroups) for (const r of rule.resources) for (const v of rule.verbs) out.add(`${v} ${g}/${r}`)
  }
  return out
}

describeCluster("every function's ServiceAccount may do what the function does (real RBAC)", () => {
  // The admission plugin of hardened clusters (and OpenShift) that checks blockOwnerDeletion.
  const cp = useControlPlane({ auditLog: true, apiServerArgs: ['--enable-admission-plugins=OwnerReferencesPermissionEnforcement'] })
  // Per port method, what it sent to the API server; per function, what it needed.
  const usedByMethod = new Map<string, Set<Access>>()

  beforeAll(async () => {
    const admin = cp.current.admin
    for (const file of ['workflows', 'agents', 'llmproviders', 'mcpservers', 'memoryproviders', 'agentautonomypolicies', 'workflowrecipes', 'workflowrecipepolicies']) {
      const crd = JSON.parse(JSON.stringify((await import('yaml')).parse(readFileSync(join(ROOT, 'crds', `${file}.purko.io.yaml`), 'utf8'))))
      await admin.request('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', crd)
    }
    // PingSources as the local plane serves them without Knative: the alarms are PingSources.
    await admin.request('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', PINGSOURCE_CRD)
    const rbac = manifests.filter((m) => ['Namespace', 'ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding'].includes(m.kind))
    for (const m of [...rbac].sort((a, b) => Number(b.kind === 'Namespace') - Number(a.kind === 'Namespace'))) await admin.apply(m.doc)
    await admin.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } })
    await grantNamespace(admin, NS)
    await admin.apply({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'default', namespace: NS } })
    // The step pods are bound to a Node no kubelet runs, so the log verbs ask for a log (a pod no
    // node runs has none, and is not asked), which the API server refuses after authorization.
    await admin.apply({ apiVersion: 'v1', kind: 'Node', metadata: { name: RBAC_NODE } })
    await admin.apply({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'rbac-with-pod-x', namespace: NS, labels: { 'job-name': 'rbac-with-pod' } },
      spec: { ...ON_RBAC_NODE, automountServiceAccountToken: false, containers: [{ name: 'step', image: 'kinetic' }] } })
    for (let i = 0; i < 100 && !(await admin.get('/apis/purko.io/v1alpha1') && await admin.get('/apis/sources.knative.dev/v1')); i++) await new Promise((r) => setTimeout(r, 100))
    admin.forgetDiscovery()
    const wf = await admin.apply({ apiVersion: 'purko.io/v1alpha1', kind: 'Workflow', metadata: { name: 'rbac', namespace: NS }, spec: { steps: [{ name: 'a', agentRef: { name: 'x' } }] } })
    owner = [{ apiVersion: 'purko.io/v1alpha1', kind: 'Workflow', name: 'rbac', uid: String(wf.metadata?.uid), controller: true, blockOwnerDeletion: true }]
    const agent = await admin.apply({ apiVersion: 'purko.io/v1alpha1', kind: 'Agent', metadata: { name: 'rbac-agent', namespace: NS }, spec: { model: { provider: 'p', name: 'm' } } })
    agentOwner = [{ apiVersion: 'purko.io/v1alpha1', kind: 'Agent', name: 'rbac-agent', uid: String(agent.metadata?.uid), controller: true, blockOwnerDeletion: true }]
    agentVersion = String(agent.metadata?.resourceVersion)
    await admin.apply({ apiVersion: 'purko.io/v1alpha1', kind: 'AgentAutonomyPolicy', metadata: { name: 'rbac-policy', namespace: NS }, spec: { shuHaRi: { progressionCriteria: {} } } })
    const mcp = await admin.apply({ apiVersion: 'purko.io/v1alpha1', kind: 'MCPServer', metadata: { name: 'rbac-mcp', namespace: NS }, spec: { image: 'kinetic' } })
    mcpOwner = [{ apiVersion: 'purko.io/v1alpha1', kind: 'MCPServer', name: 'rbac-mcp', uid: String(mcp.metadata?.uid), controller: true, blockOwnerDeletion: true }]
    await admin.apply({ apiVersion: 'purko.io/v1alpha1', kind: 'LLMProvider', metadata: { name: 'rbac-llm', namespace: NS }, spec: { type: 'ollama', model: 'm' } })
    await admin.apply({ apiVersion: 'purko.io/v1alpha1', kind: 'MemoryProvider', metadata: { name: 'rbac-mem', namespace: NS }, spec: { type: 'builtin' } })
    const recipe = await admin.apply({ apiVersion: 'purko.io/v1alpha1', kind: 'WorkflowRecipe', metadata: { name: 'rbac-recipe', namespace: NS },
      spec: { workloads: [{ name: 'web', kind: 'Deployment', image: 'kinetic' }] } })
    recipeOwner = [{ apiVersion: 'purko.io/v1alpha1', kind: 'WorkflowRecipe', name: 'rbac-recipe', uid: String(recipe.metadata?.uid), controller: true, blockOwnerDeletion: true }]
    recipeVersion = String(recipe.metadata?.resourceVersion)
    await admin.apply({ apiVersion: 'purko.io/v1alpha1', kind: 'WorkflowRecipePolicy', metadata: { name: 'rbac-recipe-policy' }, spec: { mode: 'Audit' } })
    // A test Job's pod in the target namespace (baseline Pod Security admits it).
    await admin.apply({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'default', namespace: TARGET_NS } })
    await admin.apply({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'rbac-with-pod-x', namespace: TARGET_NS, labels: { 'job-name': 'rbac-with-pod' } },
      spec: { ...ON_RBAC_NODE, automountServiceAccountToken: false, containers: [{ name: 'test', image: 'kinetic' }] } })
  }, 60_000)

  it('every function that runs with an API identity declares the port methods it uses', () => {
    const withRole = services.filter((svc) => grantsOf(roleOf(svc.name)).size > 0).map((svc) => svc.name)
    expect(withRole.filter((fn) => !USES[fn] || !DECLARED.has(fn))).toEqual([])
    const declared = new Set([...CLI_ONLY, ...[...DECLARED.values()].flat()])
    expect(Object.keys(PORT_CALLS).filter((m) => !declared.has(m as Method))).toEqual([])
    // Nothing here names a method its function does not declare.
    const stale = Object.entries(USES).flatMap(([fn, u]) => Object.keys(u.elsewhere ?? {}).filter((m) => !DECLARED.get(fn)?.includes(m as Method)).map((m) => `${fn} ${m}`))
    expect(stale).toEqual([])
  })

  it.each(services.filter((s) => accountOf(s) !== 'default').map((s) => [s.name, accountOf(s)] as const))(
    '%s: the port methods it uses are authorized, every other one is refused (403), and unused grants are reported',
    async (fn, account) => {
      const { kubeConfig } = await cp.current.serviceAccountKubeconfig(SYSTEM_NS, account)
      const kube = new KubeClient(kubeConfig)
      const user = `system:serviceaccount:${SYSTEM_NS}:${account}`
      const grants = grantsOf(roleOf(fn))
      if (grants.size === 0) {
        // A function without a role has no port: its account may not even read.
        expect(await allowed(cp.current, user, 'get /configmaps', NS)).toBe(false)
        return
      }
      const uses = { ...USES[fn]!, alsoAllowed: { ...EVERYONE, ...USES[fn]!.alsoAllowed } }
      const methods = methodsOf(fn)
      const before = (await settledAudit(cp.current)).length
      const wronglyRefused: string[] = []
      const wronglyAllowed: string[] = []
      for (const [method, call] of Object.entries(PORT_CALLS) as Array<[Method, PortCalls[Method]]>) {
        const used = methods.includes(method)
        const seen = (await settledAudit(cp.current)).length
        const failure = await call(kube, fn).then(() => null, (err: unknown) => err as Error)
        const sent = (await settledAudit(cp.current)).slice(seen).filter((e) => e.user.username === user)
        expect(sent.length, `${method} sent no request${failure ? ` (${failure.message})` : ''}`).toBeGreaterThan(0)
        const refused = sent.filter((e) => e.responseStatus?.code === 403)
        if (used) {
          if (refused.length > 0 || failure) wronglyRefused.push(`${method}: ${refused.map(accessOf).join(', ') || failure?.message}`)
          usedByMethod.set(method, new Set([...(usedByMethod.get(method) ?? []), ...sent.map(accessOf)]))
        } else if (refused.length === 0 && !uses.alsoAllowed?.[method]) {
          wronglyAllowed.push(`${method}: ${sent.map(accessOf).join(', ')}`)
        } else if (refused.length > 0 && uses.alsoAllowed?.[method]) {
          wronglyRefused.push(`${method} (allowed because ${uses.alsoAllowed[method]}): ${refused.map(accessOf).join(', ')}`)
        }
      }
      expect(wronglyRefused, `${fn} needs these and is refused`).toEqual([])
      expect(wronglyAllowed, `${fn} does not use these and may still call them`).toEqual([])

      // The adapter's contract holds on the real server too.
      if (methods.includes('createJob')) {
        expect(await kube.createJob(job(`${fn}-twice`))).toBe('created')
        expect(await kube.createJob(job(`${fn}-twice`))).toBe('exists')
        expect(await kube.getWorkflow(NS, 'missing')).toBeNull()
        await expect(kube.patchWorkflowStatus(NS, 'rbac', '1', { phase: 'Pending' } as never)).rejects.toBeInstanceOf(ConflictError)
      }
      if (methods.includes('createRole')) {
        expect(await kube.getRole(NS, 'missing')).toBeNull()
        expect(await kube.createRole({ metadata: { name: `rbac-${fn}`, namespace: NS }, rules: [] })).toBe('exists')
        await expect(kube.replaceAgentStatus(NS, 'rbac-agent', '1', {})).rejects.toBeInstanceOf(ConflictError)
      }

      // Each authorized request checked in the scope it was made in (cluster-wide for the lists),
      // for the object it named (a grant by resourceNames allows only those).
      const requests = (await settledAudit(cp.current)).slice(before).filter((e) => e.user.username === user && e.responseStatus?.code !== 403)
      const used = new Set(requests.map(accessOf))
      for (const e of requests) expect(await allowed(cp.current, user, accessOf(e), e.objectRef?.namespace, e.objectRef?.name), `${user} may ${accessOf(e)}`).toBe(true)
      const unused = [...grants].filter((g) => !used.has(g) && !CHECKED_BY_ADMISSION.has(g))
      console.log(`${fn}: uses ${[...used].sort().join(', ')}; granted but never used: ${unused.length > 0 ? unused.join(', ') : 'none'}`)
    },
    90_000,
  )

  it.each(sources.map((s) => [s.name, s] as const))('ApiServerSource %s may get, list and watch what it watches, cluster-wide, and nothing more', async (_, source) => {
    const account = String(source.doc.spec.serviceAccountName)
    const user = `system:serviceaccount:${SYSTEM_NS}:${account}`
    for (const r of source.doc.spec.resources as Array<{ apiVersion: string; kind: string }>) {
      const group = r.apiVersion.includes('/') ? r.apiVersion.split('/')[0] : ''
      const path = await cp.current.admin.pathFor(r.apiVersion, r.kind, NS)
      const plural = String(path?.split('/').pop())
      for (const verb of ['get', 'list', 'watch']) expect(await allowed(cp.current, user, `${verb} ${group}/${plural}`), `${account} ${verb} ${plural}`).toBe(true)
      for (const verb of ['create', 'update', 'patch', 'delete']) expect(await allowed(cp.current, user, `${verb} ${group}/${plural}`, NS), `${account} ${verb} ${plural}`).toBe(false)
    }
  })

  it.each([...RECIPE_FUNCTIONS].map((fn) => [fn]))('%s writes workloads only where kinetic-recipe-workloads is bound: in an ordinary namespace the apply is refused for good', async (fn) => {
    const { kubeConfig } = await cp.current.serviceAccountKubeconfig(SYSTEM_NS, fn)
    const kube = new KubeClient(kubeConfig)
    const refused = await kube.applyChild(childWorkload(`${fn}-elsewhere`, NS)).catch((e: unknown) => e as RefusedError)
    expect(refused).toBeInstanceOf(RefusedError)
    expect((refused as RefusedError).message).toMatch(/forbidden/)
    const podsRefused = await kube.listPods(NS, {}).catch((e: unknown) => e as { cause?: { code?: number } })
    expect((podsRefused as { cause?: { code?: number } }).cause?.code).toBe(403)
    // In the target namespace the same apply creates the workload, and applying it again changes nothing.
    const created = await kube.applyChild(childWorkload(`${fn}-twice`))
    expect((await kube.applyChild(childWorkload(`${fn}-twice`))).metadata?.resourceVersion).toBe(created.metadata?.resourceVersion)
  })

  it('owning a child with blockOwnerDeletion needs update on workflows/finalizers, which the functions have', async () => {
    const admin = cp.current.admin
    // workflow-changed's rights, cluster-wide and those of the namespace (Jobs), less the finalizers.
    const roles = manifests.filter((m) => m.kind === 'ClusterRole' && ['kinetic-workflow-changed', 'kinetic-workflow-runner'].includes(m.name))
    const withoutFinalizers = roles.flatMap((r) => r.doc.rules as Array<{ resources: string[] }>).filter((r) => !r.resources.includes('workflows/finalizers'))
    await admin.apply({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'rbac-no-finalizers' }, rules: withoutFinalizers })
    await admin.apply({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: 'rbac-no-finalizers' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'rbac-no-finalizers' },
      subjects: [{ kind: 'ServiceAccount', name: 'no-finalizers', namespace: SYSTEM_NS }] })
    const { kubeConfig } = await cp.current.serviceAccountKubeconfig(SYSTEM_NS, 'no-finalizers')
    const refused = await new KubeClient(kubeConfig).createJob(job('no-finalizers')).catch((e: unknown) => e as Error & { cause?: { code?: number; body?: unknown } })
    expect(refused).toBeInstanceOf(Error)
    expect((refused as { cause?: { code?: number } }).cause?.code).toBe(403)
    expect(String((refused as { cause?: { body?: unknown } }).cause?.body)).toMatch(/cannot set blockOwnerDeletion/)
    const { kubeConfig: asFunction } = await cp.current.serviceAccountKubeconfig(SYSTEM_NS, 'workflow-changed')
    expect(await new KubeClient(asFunction).createJob(job('with-finalizers'))).toBe('created')
  })

  const alarmBindings = manifests.filter((m) => m.kind === 'RoleBinding' && m.name.endsWith('-alarm'))
  it.each(alarmBindings.flatMap((b) => (b.doc.subjects as Array<{ name: string }>).map((sub) => [sub.name, b.name.replace(/^kinetic-|-alarm$/g, '')] as const)))(
    '%s makes, reschedules and deletes the %s alarm in kinetic-system, and touches no other PingSource',
    async (account, tick) => {
      const { kubeConfig } = await cp.current.serviceAccountKubeconfig(SYSTEM_NS, account)
      const kube = new KubeClient(kubeConfig)
      const deps = { kube, now: () => new Date('2026-01-01T10:00:00Z'), log: silentLogger, config: { kineticNamespace: SYSTEM_NS } }
      await armTickAlarm(deps, tick as Tick, '2026-01-01T10:30:00Z')
      await armTickAlarm(deps, tick as Tick, '2026-01-01T10:00:00Z') // sooner: rescheduled to every minute
      const armed = await kube.getChild('PingSource', SYSTEM_NS, `${tick}-alarm`)
      expect((armed?.spec as { schedule?: string }).schedule).toBe('* * * * *')
      await settleTickAlarm(deps, tick as Tick, await readAlarm(deps, tick as Tick), undefined)
      expect(await kube.getChild('PingSource', SYSTEM_NS, `${tick}-alarm`)).toBeNull()
      // The heartbeat, another tick's alarm, a PingSource of another namespace: refused (resync-tick
      // holds every PingSource for the templates' schedules, knative/rbac/resync-tick.yaml).
      const heartbeat = tick === 'resync' ? 'recipes-resync' : 'resync'
      if (account !== 'resync-tick') {
        await expect(kube.patchChild('PingSource', SYSTEM_NS, heartbeat, '1', { spec: { schedule: '* * * * *' } })).rejects.toBeInstanceOf(ForbiddenError)
        await expect(kube.getChild('PingSource', SYSTEM_NS, `${heartbeat}-alarm`)).rejects.toBeInstanceOf(ForbiddenError)
        await expect(kube.createChild(alarmManifest(tick as Tick, NS, '* * * * *', '2026-01-01T10:00:00Z'))).rejects.toBeInstanceOf(ForbiddenError)
      }
    },
  )

  it('the function tests above exercised, as allowed, every method their functions declare', () => {
    const running = services.map((svc) => svc.name).filter((fn) => USES[fn])
    const declared = new Set(running.flatMap(methodsOf))
    expect([...usedByMethod.keys()].sort()).toEqual([...declared].sort())
  })
})
