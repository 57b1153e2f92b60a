import { API_GROUP } from '../schemas/labels.js'
import { CHILD_RESOURCES } from './client/children.js'
import type { ChildUse } from './child-uses.js'
import type { ChildKind, Kube } from './port.js'

/**
 * One RBAC right a port verb needs: `verb` on `resource` (with its subresource, e.g.
 * `workflows/status`, `pods/log`) of API group `group` ('' is the core group). A generic child
 * verb needs its right only on the kinds it is given: `childKind` says which.
 */
export interface Grant {
  group: string
  resource: string
  verb: string
  childKind?: ChildKind
}

const on = (group: string, resource: string, ...verbs: string[]): Grant[] => verbs.map((verb) => ({ group, resource, verb }))
const purko = (resource: string, ...verbs: string[]) => on(API_GROUP, resource, ...verbs)
const core = (resource: string, ...verbs: string[]) => on('', resource, ...verbs)

/**
 * A generic child verb (getChild, applyChild, ...) acts on whichever ChildKind it is passed:
 * one grant per kind of CHILD_RESOURCES, each tagged with its kind. A function says which
 * kinds it passes to which of them (its KUBE_CHILD_USES) and needs those grants only.
 */
const onChildren = (...verbs: string[]): Grant[] => (Object.entries(CHILD_RESOURCES) as Array<[ChildKind, { group: string; plural: string }]>)
  .flatMap(([childKind, { group, plural }]) => verbs.map((verb) => ({ group, resource: plural, verb, childKind })))

/**
 * What each port verb asks of the API server: the HTTP verb and path its implementation in
 * `shared/kube/client/` sends (test/kube/verb-grants-wire.test.ts checks each row on the wire).
 * Keyed by every method of Kube, so a new verb does not compile until it says what it needs.
 */
export const VERB_GRANTS: { readonly [M in keyof Kube]: readonly Grant[] } = {
  getWorkflow: purko('workflows', 'get'),
  listWorkflows: purko('workflows', 'list'),
  listWorkflowsIn: purko('workflows', 'list'),
  createWorkflow: purko('workflows', 'create'),
  deleteWorkflow: purko('workflows', 'delete'),
  patchWorkflowMetadata: purko('workflows', 'patch'),
  patchWorkflow: purko('workflows', 'patch'),
  patchWorkflowStatus: purko('workflows/status', 'update'),
  // A GET with watch=true is the watch verb.
  watchWorkflow: purko('workflows', 'watch'),

  listAgents: purko('agents', 'list'),
  getAgent: purko('agents', 'get'),
  listAllAgents: purko('agents', 'list'),
  patchAgent: purko('agents', 'patch'),
  replaceAgentStatus: purko('agents/status', 'update'),
  listAutonomyPolicies: purko('agentautonomypolicies', 'list'),
  replaceAutonomyPolicyStatus: purko('agentautonomypolicies/status', 'update'),

  listLLMProviders: purko('llmproviders', 'list'),
  getLLMProvider: purko('llmproviders', 'get'),
  listAllLLMProviders: purko('llmproviders', 'list'),
  replaceLLMProviderStatus: purko('llmproviders/status', 'update'),
  getMemoryProvider: purko('memoryproviders', 'get'),
  listAllMemoryProviders: purko('memoryproviders', 'list'),
  replaceMemoryProviderStatus: purko('memoryproviders/status', 'update'),

  getMCPServer: purko('mcpservers', 'get'),
  listMCPServers: purko('mcpservers', 'list'),
  listAllMCPServers: purko('mcpservers', 'list'),
  patchMCPServerMetadata: purko('mcpservers', 'patch'),
  replaceMCPServerStatus: purko('mcpservers/status', 'update'),

  getRecipe: purko('workflowrecipes', 'get'),
  listAllRecipes: purko('workflowrecipes', 'list'),
  listRecipes: purko('workflowrecipes', 'list'),
  createRecipe: purko('workflowrecipes', 'create'),
  replaceRecipe: purko('workflowrecipes', 'update'),
  deleteRecipe: purko('workflowrecipes', 'delete'),
  patchRecipeMetadata: purko('workflowrecipes', 'patch'),
  replaceRecipeStatus: purko('workflowrecipes/status', 'update'),
  listRecipePolicies: purko('workflowrecipepolicies', 'list'),
  getRecipePolicy: purko('workflowrecipepolicies', 'get'),
  replaceRecipePolicyStatus: purko('workflowrecipepolicies/status', 'update'),

  getChild: onChildren('get'),
  listChildren: onChildren('list'),
  // Server-side apply is a patch; when the object is absent the API server also asks for create.
  applyChild: onChildren('create', 'patch'),
  createChild: onChildren('create'),
  patchChild: onChildren('patch'),
  deleteChild: onChildren('delete'),

  getDeployment: on('apps', 'deployments', 'get'),
  createDeployment: on('apps', 'deployments', 'create'),
  replaceDeployment: on('apps', 'deployments', 'update'),
  getService: core('services', 'get'),
  createService: core('services', 'create'),
  replaceService: core('services', 'update'),
  listPods: core('pods', 'list'),
  followPodLog: core('pods/log', 'get'),

  getNamespace: core('namespaces', 'get'),
  listNamespaces: core('namespaces', 'list'),

  getServiceAccount: core('serviceaccounts', 'get'),
  createServiceAccount: core('serviceaccounts', 'create'),
  replaceServiceAccount: core('serviceaccounts', 'update'),
  deleteServiceAccount: core('serviceaccounts', 'delete'),
  getRole: on('rbac.authorization.k8s.io', 'roles', 'get'),
  createRole: on('rbac.authorization.k8s.io', 'roles', 'create'),
  replaceRole: on('rbac.authorization.k8s.io', 'roles', 'update'),
  getRoleBinding: on('rbac.authorization.k8s.io', 'rolebindings', 'get'),
  createRoleBinding: on('rbac.authorization.k8s.io', 'rolebindings', 'create'),
  replaceRoleBinding: on('rbac.authorization.k8s.io', 'rolebindings', 'update'),

  listJobs: on('batch', 'jobs', 'list'),
  listJobsLabelled: on('batch', 'jobs', 'list'),
  createJob: on('batch', 'jobs', 'create'),
  deleteJob: on('batch', 'jobs', 'delete'),
  // The Job's pod by its job-name label, then (unless a termination message holds it) its log.
  readJobLog: [...core('pods', 'list'), ...core('pods/log', 'get')],
  readStepReport: [...core('pods', 'list'), ...core('pods/log', 'get')],

  getConfigMap: core('configmaps', 'get'),
  listConfigMaps: core('configmaps', 'list'),
  listAllConfigMaps: core('configmaps', 'list'),
  createConfigMap: core('configmaps', 'create'),
  replaceConfigMap: core('configmaps', 'update'),
  deleteConfigMap: core('configmaps', 'delete'),
  getSecret: core('secrets', 'get'),
  createSecret: core('secrets', 'create'),
  replaceSecret: core('secrets', 'update'),

  createEvent: core('events', 'create'),
  listEvents: core('events', 'list'),

  reviewToken: on('authentication.k8s.io', 'tokenreviews', 'create'),
  reviewAccess: on('authorization.k8s.io', 'subjectaccessreviews', 'create'),
  // Both self reviews are granted to every authenticated identity (system:basic-user).
  reviewSelfAccess: on('authorization.k8s.io', 'selfsubjectaccessreviews', 'create'),
  whoAmI: on('authentication.k8s.io', 'selfsubjectreviews', 'create'),
}

/** The rights these verbs need, a generic child verb's only on the kinds `childUses` pairs it with. */
export function grantsNeededBy(verbs: readonly (keyof Kube)[], childUses: readonly ChildUse[] = []): Grant[] {
  return verbs.flatMap((verb) => VERB_GRANTS[verb].filter((g) => g.childKind === undefined || childUses.includes(`${verb}:${g.childKind}` as ChildUse)))
}
