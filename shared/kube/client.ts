import { StringDecoder } from 'node:string_decoder'
import { Writable } from 'node:stream'
import {
  ApiException, AppsV1Api, AuthenticationV1Api, AuthorizationV1Api, BatchV1Api, CoreV1Api, CustomObjectsApi, KubeConfig, Log, PatchStrategy, RbacAuthorizationV1Api, setHeaderOptions,
  Observable, Watch, type ConfigurationOptions, type ObservableMiddleware, type RequestContext, type ResponseContext,
  type CoreV1Event, type V1ConfigMap, type V1Deployment, type V1Job, type V1Namespace, type V1Pod, type V1Role, type V1RoleBinding,
  type V1Secret, type V1Service, type V1ServiceAccount,
} from '@kubernetes/client-node'
import { apiMessage, ConflictError, ForbiddenError, RefusedError, TransientError, UnauthenticatedError } from '../errors.js'
import { AgentSchema, type Agent, type AgentStatus } from '../schemas/agent.js'
import { AgentAutonomyPolicySchema, type AgentAutonomyPolicy, type AgentAutonomyPolicyStatus } from '../schemas/autonomypolicy.js'
import { API_GROUP, API_VERSION_NAME } from '../schemas/labels.js'
import { LLMProviderSchema, type LLMProvider, type LLMProviderStatus } from '../schemas/llmprovider.js'
import { MCPServerSchema, type MCPServer, type MCPServerStatus } from '../schemas/mcpserver.js'
import { MemoryProviderSchema, type MemoryProvider, type MemoryProviderStatus } from '../schemas/memoryprovider.js'
import { WorkflowSchema, type Workflow, type WorkflowStatus } from '../schemas/workflow.js'
import { WorkflowRecipeSchema, type WorkflowRecipe, type WorkflowRecipeStatus } from '../schemas/workflowrecipe.js'
import { WorkflowRecipePolicySchema, type WorkflowRecipePolicy, type WorkflowRecipePolicyStatus } from '../schemas/workflowrecipepolicy.js'
import type { AccessAttributes, AgentPatch, ChildKind, ChildObject, Credential, Kube, StepReport, StreamHandle, TokenIdentity } from './port.js'
import type { z } from 'zod'

/**
 * Pure: a Kubernetes API failure as one of our errors. 409 → ConflictError (redeliver and
 * re-plan); no status, 429 and 5xx → TransientError (redeliver with backoff); any other 4xx is
 * our bug or missing RBAC → a plain Error (500), a 403 as ForbiddenError and a 401 as
 * UnauthenticatedError (still 500 in a function; the console shows a person what they may not
 * see, or asks them to sign in again). A downstream status is never passed through.
 */
export function classifyApiError(err: unknown, message: string): Error {
  const code = apiStatus(err)
  if (code === 409) return new ConflictError(message, { cause: err })
  if (code === undefined || code === 429 || code >= 500) return new TransientError(message, { cause: err })
  if (code === 403) return new ForbiddenError(message, { cause: err })
  if (code === 401) return new UnauthenticatedError(message, { cause: err })
  return new Error(message, { cause: err })
}

function apiStatus(err: unknown): number | undefined {
  if (err instanceof ApiException) return err.code
  if (err && typeof err === 'object' && 'code' in err && typeof (err as { code: unknown }).code === 'number') {
    return (err as { code: number }).code
  }
  return undefined
}

/** Loads the kubeconfig the way every entry point does: `$KUBECONFIG` when set, in-cluster otherwise. */
export function loadKubeConfig(env: Record<string, string | undefined> = process.env): KubeConfig {
  const kc = new KubeConfig()
  if (env.KUBECONFIG) kc.loadFromFile(env.KUBECONFIG)
  else kc.loadFromCluster()
  return kc
}

const WORKFLOWS = { group: API_GROUP, version: API_VERSION_NAME, plural: 'workflows' }
const AGENTS = { group: API_GROUP, version: API_VERSION_NAME, plural: 'agents' }
const POLICIES = { group: API_GROUP, version: API_VERSION_NAME, plural: 'agentautonomypolicies' }
const MCP_SERVERS = { group: API_GROUP, version: API_VERSION_NAME, plural: 'mcpservers' }
const LLM_PROVIDERS = { group: API_GROUP, version: API_VERSION_NAME, plural: 'llmproviders' }
const MEMORY_PROVIDERS = { group: API_GROUP, version: API_VERSION_NAME, plural: 'memoryproviders' }
const RECIPES = { group: API_GROUP, version: API_VERSION_NAME, plural: 'workflowrecipes' }
const RECIPE_POLICIES = { group: API_GROUP, version: API_VERSION_NAME, plural: 'workflowrecipepolicies' }
const MERGE_PATCH = setHeaderOptions('Content-Type', PatchStrategy.MergePatch)
const FIELD_MANAGER = 'kinetic'

/**
 * The core group is served under `/api/v1`, not `/apis/<group>/<version>`. Children of every
 * group go through CustomObjectsApi (plain JSON in and out: no typed models turning timestamps
 * into Dates or dropping fields), so core requests name this placeholder group and a
 * middleware moves them to the core path.
 */
const CORE_PLACEHOLDER = 'core.kinetic.invalid'
const CORE_PATH: ConfigurationOptions<ObservableMiddleware> = {
  middleware: [{
    pre: (request: RequestContext) => {
      request.setUrl(request.getUrl().replace(`/apis/${CORE_PLACEHOLDER}/v1/`, '/api/v1/'))
      return new Observable(Promise.resolve(request))
    },
    post: (response: ResponseContext) => new Observable(Promise.resolve(response)),
  }],
  middlewareMergeStrategy: 'append',
}

/** Where each recipe child kind is served (all namespaced). */
export const CHILD_RESOURCES: Record<ChildKind, { group: string; version: string; plural: string }> = {
  Secret: { group: '', version: 'v1', plural: 'secrets' },
  Service: { group: '', version: 'v1', plural: 'services' },
  Deployment: { group: 'apps', version: 'v1', plural: 'deployments' },
  StatefulSet: { group: 'apps', version: 'v1', plural: 'statefulsets' },
  DaemonSet: { group: 'apps', version: 'v1', plural: 'daemonsets' },
  Job: { group: 'batch', version: 'v1', plural: 'jobs' },
  CronJob: { group: 'batch', version: 'v1', plural: 'cronjobs' },
  MCPServer: { group: API_GROUP, version: API_VERSION_NAME, plural: 'mcpservers' },
  Workflow: { group: API_GROUP, version: API_VERSION_NAME, plural: 'workflows' },
  // A scheduled template's own PingSource (Knative Eventing).
  PingSource: { group: 'sources.knative.dev', version: 'v1', plural: 'pingsources' },
}

/** The CustomObjectsApi coordinates of a child kind, and the per-call options that reach it. */
function childRef(kind: ChildKind): { ref: { group: string; version: string; plural: string }; options: typeof CORE_PATH | undefined } {
  const resource = CHILD_RESOURCES[kind]
  if (!resource) throw new Error(`${String(kind)} is not a recipe child kind`)
  return resource.group === ''
    ? { ref: { ...resource, group: CORE_PLACEHOLDER }, options: CORE_PATH }
    : { ref: resource, options: undefined }
}

function childApiVersion(kind: ChildKind): string {
  const { group, version } = CHILD_RESOURCES[kind]
  return group === '' ? version : `${group}/${version}`
}

/**
 * A KubeClient using `credential`'s rights over `base`'s cluster. `own`: base as it is. `token`:
 * the same cluster (server, CA, TLS settings) and a user holding only that bearer token, never
 * base's client certificate or token. `impersonate`: base's identity plus Impersonate-User, one
 * Impersonate-Group per group and Impersonate-Uid on every request, watches and logs included.
 */
export function kubeAs(base: KubeConfig, credential: Credential): KubeClient {
  if (credential.kind === 'own') return new KubeClient(base)
  if (credential.kind === 'token') return new KubeClient(tokenKubeConfig(base, credential.token))
  return new KubeClient(new ImpersonatingKubeConfig(base, impersonationHeaders(credential)))
}

function tokenKubeConfig(base: KubeConfig, token: string): KubeConfig {
  const cluster = base.getCurrentCluster()
  if (!cluster) throw new Error('The kubeconfig has no current cluster')
  const kc = new KubeConfig()
  kc.loadFromOptions({
    clusters: [cluster],
    users: [{ name: 'bearer', token }],
    contexts: [{ name: 'bearer', cluster: cluster.name, user: 'bearer' }],
    currentContext: 'bearer',
  })
  return kc
}

/** The header lines of an impersonation, one per group (the API server reads each line as one group). */
function impersonationHeaders(credential: Extract<Credential, { kind: 'impersonate' }>): Array<[string, string]> {
  return [
    ['Impersonate-User', credential.user],
    ...credential.groups.map((group): [string, string] => ['Impersonate-Group', group]),
    ...(credential.uid ? [['Impersonate-Uid', credential.uid] as [string, string]] : []),
  ]
}

const isImpersonation = (header: string) => header.toLowerCase().startsWith('impersonate-')

/**
 * base's cluster and user, with impersonation headers on every request. A header record holds
 * one value per name, and client-node joins arrays into one line (which the API server would
 * read as one group named "a,b"), so requests carry their headers as a list of lines instead:
 * node-fetch, which sends every client-node request, takes such a list as it is. Any
 * impersonation of base's own (a kubeconfig `as:`) is replaced, never combined.
 */
class ImpersonatingKubeConfig extends KubeConfig {
  constructor(base: KubeConfig, private readonly impersonation: Array<[string, string]>) {
    super()
    this.loadFromOptions({
      clusters: base.getClusters(), users: base.getUsers(), contexts: base.getContexts(), currentContext: base.getCurrentContext(),
    })
  }

  // The API clients (makeApiClient) authenticate each request through this.
  override async applySecurityAuthentication(context: RequestContext): Promise<void> {
    await super.applySecurityAuthentication(context)
    const headers = context.getHeaders()
    // Read when sent, so headers set after authentication (Content-Type of a patch) are kept.
    context.getHeaders = () => [
      ...Object.entries(headers).filter(([name]) => !isImpersonation(name)),
      ...this.impersonation,
    ] as never
  }

  // Watch and Log build their requests from this.
  override async applyToFetchOptions(opts: Parameters<KubeConfig['applyToFetchOptions']>[0]): ReturnType<KubeConfig['applyToFetchOptions']> {
    const init = await super.applyToFetchOptions(opts)
    const lines: Array<[string, string]> = []
    new Headers(init.headers as HeadersInit).forEach((value, name) => { if (!isImpersonation(name)) lines.push([name, value]) })
    return { ...init, headers: [...lines, ...this.impersonation] as never }
  }
}

/** The one adapter over the Kubernetes API (client-node 1.4). */
export class KubeClient implements Kube {
  private readonly core: CoreV1Api
  private readonly batch: BatchV1Api
  private readonly custom: CustomObjectsApi
  private readonly rbac: RbacAuthorizationV1Api
  private readonly apps: AppsV1Api
  private readonly authn: AuthenticationV1Api
  private readonly authz: AuthorizationV1Api

  /** Kept for the streams (Watch, Log), which take the KubeConfig rather than an API client. */
  constructor(private readonly kc: KubeConfig) {
    this.authn = kc.makeApiClient(AuthenticationV1Api)
    this.authz = kc.makeApiClient(AuthorizationV1Api)
    this.apps = kc.makeApiClient(AppsV1Api)
    this.rbac = kc.makeApiClient(RbacAuthorizationV1Api)
    this.core = kc.makeApiClient(CoreV1Api)
    this.batch = kc.makeApiClient(BatchV1Api)
    this.custom = kc.makeApiClient(CustomObjectsApi)
  }

  async getWorkflow(namespace: string, name: string): Promise<Workflow | null> {
    const raw = await this.orNull(() => this.custom.getNamespacedCustomObject({ ...WORKFLOWS, namespace, name }), `get Workflow ${namespace}/${name}`)
    return raw === null ? null : workflowFrom(raw, namespace, name)
  }

  async listWorkflows(): Promise<Workflow[]> {
    const list = await this.call(() => this.custom.listClusterCustomObject(WORKFLOWS), 'list Workflows')
    return itemsOf(list).flatMap((item) => parseOrSkip(WorkflowSchema, item))
  }

  async listAgents(namespace: string): Promise<Agent[]> {
    return this.listCustom(namespace, 'agents', AgentSchema)
  }

  async getAgent(namespace: string, name: string): Promise<Agent | null> {
    const raw = await this.orNull(
      () => this.custom.getNamespacedCustomObject({ group: API_GROUP, version: API_VERSION_NAME, plural: 'agents', namespace, name }),
      `get Agent ${namespace}/${name}`,
    )
    return raw === null ? null : parseOrSkip(AgentSchema, raw)[0] ?? null
  }

  async listAllAgents(): Promise<Agent[]> {
    const list = await this.call(() => this.custom.listClusterCustomObject(AGENTS), 'list Agents')
    return itemsOf(list).flatMap((item) => parseOrSkip(AgentSchema, item))
  }

  async patchAgent(namespace: string, name: string, resourceVersion: string, patch: AgentPatch): Promise<Agent> {
    const body = { ...patch, metadata: { ...(patch.metadata ?? {}), resourceVersion } }
    const raw = await this.call(
      () => this.custom.patchNamespacedCustomObject({ ...AGENTS, namespace, name, body }, MERGE_PATCH),
      `patch Agent ${namespace}/${name}`,
    )
    return parseAs(AgentSchema, raw, `Agent ${namespace}/${name}`)
  }

  async replaceAgentStatus(namespace: string, name: string, resourceVersion: string, status: AgentStatus): Promise<Agent> {
    const raw = await this.call(
      () => this.custom.replaceNamespacedCustomObjectStatus({
        ...AGENTS, namespace, name,
        body: { apiVersion: `${API_GROUP}/${API_VERSION_NAME}`, kind: 'Agent', metadata: { name, namespace, resourceVersion }, status },
      }),
      `update status of Agent ${namespace}/${name}`,
    )
    return parseAs(AgentSchema, raw, `Agent ${namespace}/${name}`)
  }

  async listAutonomyPolicies(namespace?: string): Promise<AgentAutonomyPolicy[]> {
    const list = await this.call(
      () => (namespace ? this.custom.listNamespacedCustomObject({ ...POLICIES, namespace }) : this.custom.listClusterCustomObject(POLICIES)),
      `list AgentAutonomyPolicies${namespace ? ` in ${namespace}` : ''}`,
    )
    return itemsOf(list).flatMap((item) => parseOrSkip(AgentAutonomyPolicySchema, item))
  }

  async replaceAutonomyPolicyStatus(namespace: string, name: string, resourceVersion: string, status: AgentAutonomyPolicyStatus): Promise<AgentAutonomyPolicy> {
    const raw = await this.call(
      () => this.custom.replaceNamespacedCustomObjectStatus({
        ...POLICIES, namespace, name,
        body: { apiVersion: `${API_GROUP}/${API_VERSION_NAME}`, kind: 'AgentAutonomyPolicy', metadata: { name, namespace, resourceVersion }, status },
      }),
      `update status of AgentAutonomyPolicy ${namespace}/${name}`,
    )
    return parseAs(AgentAutonomyPolicySchema, raw, `AgentAutonomyPolicy ${namespace}/${name}`)
  }

  async getMemoryProvider(namespace: string, name: string): Promise<MemoryProvider | null> {
    const raw = await this.orNull(
      () => this.custom.getNamespacedCustomObject({ group: API_GROUP, version: API_VERSION_NAME, plural: 'memoryproviders', namespace, name }),
      `get MemoryProvider ${namespace}/${name}`,
    )
    return raw === null ? null : parseOrSkip(MemoryProviderSchema, raw)[0] ?? null
  }

  async getServiceAccount(namespace: string, name: string): Promise<V1ServiceAccount | null> {
    return this.orNull(() => this.core.readNamespacedServiceAccount({ namespace, name }), `get ServiceAccount ${namespace}/${name}`)
  }

  async createServiceAccount(serviceAccount: V1ServiceAccount): Promise<'created' | 'exists'> {
    const namespace = serviceAccount.metadata?.namespace ?? 'default'
    return this.create(() => this.core.createNamespacedServiceAccount({ namespace, body: serviceAccount }), `create ServiceAccount ${namespace}/${serviceAccount.metadata?.name}`)
  }

  async replaceServiceAccount(serviceAccount: V1ServiceAccount): Promise<V1ServiceAccount> {
    const namespace = serviceAccount.metadata?.namespace ?? 'default'
    const name = serviceAccount.metadata?.name ?? ''
    return this.call(() => this.core.replaceNamespacedServiceAccount({ namespace, name, body: serviceAccount }), `replace ServiceAccount ${namespace}/${name}`)
  }

  async deleteServiceAccount(namespace: string, name: string): Promise<void> {
    await this.orNull(() => this.core.deleteNamespacedServiceAccount({ namespace, name }), `delete ServiceAccount ${namespace}/${name}`)
  }

  async getRole(namespace: string, name: string): Promise<V1Role | null> {
    return this.orNull(() => this.rbac.readNamespacedRole({ namespace, name }), `get Role ${namespace}/${name}`)
  }

  async createRole(role: V1Role): Promise<'created' | 'exists'> {
    const namespace = role.metadata?.namespace ?? 'default'
    return this.create(() => this.rbac.createNamespacedRole({ namespace, body: role }), `create Role ${namespace}/${role.metadata?.name}`)
  }

  async replaceRole(role: V1Role): Promise<V1Role> {
    const namespace = role.metadata?.namespace ?? 'default'
    const name = role.metadata?.name ?? ''
    return this.call(() => this.rbac.replaceNamespacedRole({ namespace, name, body: role }), `replace Role ${namespace}/${name}`)
  }

  async getRoleBinding(namespace: string, name: string): Promise<V1RoleBinding | null> {
    return this.orNull(() => this.rbac.readNamespacedRoleBinding({ namespace, name }), `get RoleBinding ${namespace}/${name}`)
  }

  async createRoleBinding(binding: V1RoleBinding): Promise<'created' | 'exists'> {
    const namespace = binding.metadata?.namespace ?? 'default'
    return this.create(() => this.rbac.createNamespacedRoleBinding({ namespace, body: binding }), `create RoleBinding ${namespace}/${binding.metadata?.name}`)
  }

  async replaceRoleBinding(binding: V1RoleBinding): Promise<V1RoleBinding> {
    const namespace = binding.metadata?.namespace ?? 'default'
    const name = binding.metadata?.name ?? ''
    return this.call(() => this.rbac.replaceNamespacedRoleBinding({ namespace, name, body: binding }), `replace RoleBinding ${namespace}/${name}`)
  }

  async listLLMProviders(namespace: string): Promise<LLMProvider[]> {
    return this.listCustom(namespace, 'llmproviders', LLMProviderSchema)
  }

  async getLLMProvider(namespace: string, name: string): Promise<LLMProvider | null> {
    return this.getCustom(LLM_PROVIDERS, LLMProviderSchema, 'LLMProvider', namespace, name)
  }

  async listAllLLMProviders(): Promise<LLMProvider[]> {
    return this.listAllCustom(LLM_PROVIDERS, LLMProviderSchema)
  }

  async replaceLLMProviderStatus(namespace: string, name: string, resourceVersion: string, status: LLMProviderStatus): Promise<LLMProvider> {
    return this.replaceCustomStatus(LLM_PROVIDERS, LLMProviderSchema, 'LLMProvider', namespace, name, resourceVersion, status)
  }

  async getMCPServer(namespace: string, name: string): Promise<MCPServer | null> {
    return this.getCustom(MCP_SERVERS, MCPServerSchema, 'MCPServer', namespace, name)
  }

  async listAllMCPServers(): Promise<MCPServer[]> {
    return this.listAllCustom(MCP_SERVERS, MCPServerSchema)
  }

  async patchMCPServerMetadata(
    namespace: string, name: string, resourceVersion: string,
    metadata: { finalizers?: string[]; annotations?: Record<string, string | null> },
  ): Promise<MCPServer> {
    const body = { metadata: { ...metadata, resourceVersion } }
    const raw = await this.call(
      () => this.custom.patchNamespacedCustomObject({ ...MCP_SERVERS, namespace, name, body }, MERGE_PATCH),
      `patch metadata of MCPServer ${namespace}/${name}`,
    )
    return parseAs(MCPServerSchema, raw, `MCPServer ${namespace}/${name}`)
  }

  async replaceMCPServerStatus(namespace: string, name: string, resourceVersion: string, status: MCPServerStatus): Promise<MCPServer> {
    return this.replaceCustomStatus(MCP_SERVERS, MCPServerSchema, 'MCPServer', namespace, name, resourceVersion, status)
  }

  async listAllMemoryProviders(): Promise<MemoryProvider[]> {
    return this.listAllCustom(MEMORY_PROVIDERS, MemoryProviderSchema)
  }

  async replaceMemoryProviderStatus(namespace: string, name: string, resourceVersion: string, status: MemoryProviderStatus): Promise<MemoryProvider> {
    return this.replaceCustomStatus(MEMORY_PROVIDERS, MemoryProviderSchema, 'MemoryProvider', namespace, name, resourceVersion, status)
  }

  async getDeployment(namespace: string, name: string): Promise<V1Deployment | null> {
    return this.orNull(() => this.apps.readNamespacedDeployment({ namespace, name }), `get Deployment ${namespace}/${name}`)
  }

  async createDeployment(deployment: V1Deployment): Promise<'created' | 'exists'> {
    const namespace = deployment.metadata?.namespace ?? 'default'
    return this.create(() => this.apps.createNamespacedDeployment({ namespace, body: deployment }), `create Deployment ${namespace}/${deployment.metadata?.name}`)
  }

  async replaceDeployment(deployment: V1Deployment): Promise<V1Deployment> {
    const namespace = deployment.metadata?.namespace ?? 'default'
    const name = deployment.metadata?.name ?? ''
    return this.call(() => this.apps.replaceNamespacedDeployment({ namespace, name, body: deployment }), `replace Deployment ${namespace}/${name}`)
  }

  async getService(namespace: string, name: string): Promise<V1Service | null> {
    return this.orNull(() => this.core.readNamespacedService({ namespace, name }), `get Service ${namespace}/${name}`)
  }

  async createService(service: V1Service): Promise<'created' | 'exists'> {
    const namespace = service.metadata?.namespace ?? 'default'
    return this.create(() => this.core.createNamespacedService({ namespace, body: service }), `create Service ${namespace}/${service.metadata?.name}`)
  }

  async replaceService(service: V1Service): Promise<V1Service> {
    const namespace = service.metadata?.namespace ?? 'default'
    const name = service.metadata?.name ?? ''
    return this.call(() => this.core.replaceNamespacedService({ namespace, name, body: service }), `replace Service ${namespace}/${name}`)
  }

  async listPods(namespace: string, labels: Record<string, string>): Promise<V1Pod[]> {
    const list = await this.call(() => this.core.listNamespacedPod({ namespace, labelSelector: selector(labels) }), `list pods in ${namespace}`)
    return list.items
  }

  async getNamespace(name: string): Promise<V1Namespace | null> {
    return this.orNull(() => this.core.readNamespace({ name }), `get Namespace ${name}`)
  }

  async listNamespaces(labels: Record<string, string>): Promise<V1Namespace[]> {
    const list = await this.call(() => this.core.listNamespace({ labelSelector: selector(labels) }), 'list Namespaces')
    return list.items
  }

  async listAllConfigMaps(labels: Record<string, string>): Promise<V1ConfigMap[]> {
    const list = await this.call(() => this.core.listConfigMapForAllNamespaces({ labelSelector: selector(labels) }), 'list ConfigMaps')
    return list.items
  }

  async listJobs(namespace: string, labels: Record<string, string>): Promise<V1Job[]> {
    const list = await this.call(() => this.batch.listNamespacedJob({ namespace, labelSelector: selector(labels) }), `list Jobs in ${namespace}`)
    return list.items
  }

  async listJobsLabelled(namespace: string, labelKey: string): Promise<V1Job[]> {
    const list = await this.call(() => this.batch.listNamespacedJob({ namespace, labelSelector: labelKey }), `list Jobs labelled ${labelKey} in ${namespace}`)
    return list.items
  }

  async createJob(job: V1Job): Promise<'created' | 'exists'> {
    const namespace = job.metadata?.namespace ?? 'default'
    return this.create(() => this.batch.createNamespacedJob({ namespace, body: job }), `create Job ${namespace}/${job.metadata?.name}`)
  }

  async deleteJob(namespace: string, name: string): Promise<void> {
    await this.orNull(
      () => this.batch.deleteNamespacedJob({ namespace, name, propagationPolicy: 'Background' }),
      `delete Job ${namespace}/${name}`,
    )
  }

  async readJobLog(namespace: string, jobName: string): Promise<string | null> {
    const pod = await this.jobPod(namespace, jobName)
    return pod ? this.podLog(namespace, pod.metadata!.name!) : null
  }

  async readStepReport(namespace: string, jobName: string, want: 'output' | 'log'): Promise<StepReport | null> {
    const pod = await this.jobPod(namespace, jobName)
    if (!pod) return null
    const containers = pod.status?.containerStatuses ?? []
    const message = want === 'output' ? containers.map((c) => c.state?.terminated?.message).find((m) => m?.startsWith('OUTPUT:')) : undefined
    const started = containers.map((c) => c.state?.terminated?.startedAt ?? c.state?.running?.startedAt).find((t) => t !== undefined)
    return {
      text: message ?? await this.podLog(namespace, pod.metadata!.name!),
      ...(started !== undefined ? { startedAt: new Date(started).toISOString() } : {}),
    }
  }

  /** The first pod of a Job (`job-name=<job>`), or null when it has none. */
  private async jobPod(namespace: string, jobName: string): Promise<V1Pod | null> {
    const pods = await this.call(() => this.core.listNamespacedPod({ namespace, labelSelector: `job-name=${jobName}` }), `list pods of Job ${namespace}/${jobName}`)
    const pod = pods.items[0]
    return pod?.metadata?.name ? pod : null
  }

  private async podLog(namespace: string, pod: string): Promise<string | null> {
    const log = await this.orNull(() => this.core.readNamespacedPodLog({ namespace, name: pod }), `read log of pod ${namespace}/${pod}`)
    return log === null ? null : String(log)
  }

  async getConfigMap(namespace: string, name: string): Promise<V1ConfigMap | null> {
    return this.orNull(() => this.core.readNamespacedConfigMap({ namespace, name }), `get ConfigMap ${namespace}/${name}`)
  }

  async listConfigMaps(namespace: string, labels: Record<string, string>): Promise<V1ConfigMap[]> {
    const list = await this.call(() => this.core.listNamespacedConfigMap({ namespace, labelSelector: selector(labels) }), `list ConfigMaps in ${namespace}`)
    return list.items
  }

  async createConfigMap(configMap: V1ConfigMap): Promise<'created' | 'exists'> {
    const namespace = configMap.metadata?.namespace ?? 'default'
    return this.create(() => this.core.createNamespacedConfigMap({ namespace, body: configMap }), `create ConfigMap ${namespace}/${configMap.metadata?.name}`)
  }

  async replaceConfigMap(configMap: V1ConfigMap): Promise<V1ConfigMap> {
    const namespace = configMap.metadata?.namespace ?? 'default'
    const name = configMap.metadata?.name ?? ''
    return this.call(() => this.core.replaceNamespacedConfigMap({ namespace, name, body: configMap }), `replace ConfigMap ${namespace}/${name}`)
  }

  async getSecret(namespace: string, name: string): Promise<V1Secret | null> {
    return this.orNull(() => this.core.readNamespacedSecret({ namespace, name }), `get Secret ${namespace}/${name}`)
  }

  async createSecret(secret: V1Secret): Promise<'created' | 'exists'> {
    const namespace = secret.metadata?.namespace ?? 'default'
    return this.create(() => this.core.createNamespacedSecret({ namespace, body: secret }), `create Secret ${namespace}/${secret.metadata?.name}`)
  }

  async replaceSecret(secret: V1Secret): Promise<V1Secret> {
    const namespace = secret.metadata?.namespace ?? 'default'
    const name = secret.metadata?.name ?? ''
    return this.call(() => this.core.replaceNamespacedSecret({ namespace, name, body: secret }), `replace Secret ${namespace}/${name}`)
  }

  async patchWorkflowMetadata(
    namespace: string,
    name: string,
    resourceVersion: string,
    metadata: { annotations?: Record<string, string | null>; finalizers?: string[] },
  ): Promise<Workflow> {
    const body = { metadata: { ...metadata, resourceVersion } }
    const raw = await this.call(
      () => this.custom.patchNamespacedCustomObject({ ...WORKFLOWS, namespace, name, body }, MERGE_PATCH),
      `patch metadata of Workflow ${namespace}/${name}`,
    )
    return parseAs(WorkflowSchema, raw, `Workflow ${namespace}/${name}`)
  }

  async patchWorkflowStatus(namespace: string, name: string, resourceVersion: string, status: WorkflowStatus): Promise<Workflow> {
    const raw = await this.call(
      () => this.custom.replaceNamespacedCustomObjectStatus({
        ...WORKFLOWS, namespace, name,
        body: { apiVersion: `${API_GROUP}/${API_VERSION_NAME}`, kind: 'Workflow', metadata: { name, namespace, resourceVersion }, status },
      }),
      `update status of Workflow ${namespace}/${name}`,
    )
    return parseAs(WorkflowSchema, raw, `Workflow ${namespace}/${name}`)
  }

  async createWorkflow(workflow: Workflow): Promise<Workflow | 'exists'> {
    const namespace = workflow.metadata.namespace ?? 'default'
    const name = workflow.metadata.name ?? ''
    const { status: _status, ...rest } = workflow
    const body = { ...rest, apiVersion: `${API_GROUP}/${API_VERSION_NAME}`, kind: 'Workflow' }
    try {
      const raw = await this.custom.createNamespacedCustomObject({ ...WORKFLOWS, namespace, body, fieldManager: FIELD_MANAGER })
      return parseAs(WorkflowSchema, raw, `Workflow ${namespace}/${name}`)
    } catch (err) {
      if (apiStatus(err) === 409) return 'exists'
      const code = apiStatus(err)
      if (code === 400 || code === 422) throw new RefusedError(apiMessage({ cause: err }), code, { cause: err })
      throw classifyApiError(err, `Could not create Workflow ${namespace}/${name}`)
    }
  }

  async listWorkflowsIn(namespace: string, labels: Record<string, string>): Promise<Workflow[]> {
    const list = await this.call(
      () => this.custom.listNamespacedCustomObject({ ...WORKFLOWS, namespace, labelSelector: selector(labels) }),
      `list Workflows in ${namespace}`,
    )
    return itemsOf(list).flatMap((item) => parseOrSkip(WorkflowSchema, item))
  }

  async deleteWorkflow(namespace: string, name: string, opts: { uid?: string } = {}): Promise<void> {
    await this.deleteChild('Workflow', namespace, name, { propagationPolicy: 'Background', ...(opts.uid ? { uid: opts.uid } : {}) })
  }

  async patchWorkflow(
    namespace: string, name: string, resourceVersion: string,
    patch: { annotations?: Record<string, string | null>; parameters?: Record<string, string | null> },
  ): Promise<Workflow> {
    const body = {
      metadata: { resourceVersion, ...(patch.annotations ? { annotations: patch.annotations } : {}) },
      ...(patch.parameters ? { spec: { parameters: patch.parameters } } : {}),
    }
    const raw = await this.call(
      () => this.custom.patchNamespacedCustomObject({ ...WORKFLOWS, namespace, name, body }, MERGE_PATCH),
      `patch Workflow ${namespace}/${name}`,
    )
    return parseAs(WorkflowSchema, raw, `Workflow ${namespace}/${name}`)
  }

  async listEvents(namespace: string, involved: { kind: string; name: string }): Promise<CoreV1Event[]> {
    const list = await this.call(
      () => this.core.listNamespacedEvent({ namespace, fieldSelector: `involvedObject.kind=${involved.kind},involvedObject.name=${involved.name}` }),
      `list Events of ${involved.kind} ${namespace}/${involved.name}`,
    )
    const time = (e: CoreV1Event) => new Date(e.lastTimestamp ?? e.eventTime ?? e.firstTimestamp ?? e.metadata?.creationTimestamp ?? 0).getTime()
    return [...list.items].sort((a, b) => time(a) - time(b))
  }

  async createEvent(event: CoreV1Event): Promise<void> {
    const namespace = event.metadata?.namespace ?? 'default'
    await this.create(() => this.core.createNamespacedEvent({ namespace, body: event }), `create Event in ${namespace}`)
  }

  async getRecipe(namespace: string, name: string): Promise<WorkflowRecipe | null> {
    return this.getCustom(RECIPES, WorkflowRecipeSchema, 'WorkflowRecipe', namespace, name)
  }

  async listAllRecipes(): Promise<WorkflowRecipe[]> {
    return this.listAllCustom(RECIPES, WorkflowRecipeSchema)
  }

  async patchRecipeMetadata(
    namespace: string, name: string, resourceVersion: string,
    metadata: { finalizers?: string[]; annotations?: Record<string, string | null> },
  ): Promise<WorkflowRecipe> {
    const body = { metadata: { ...metadata, resourceVersion } }
    const raw = await this.call(
      () => this.custom.patchNamespacedCustomObject({ ...RECIPES, namespace, name, body }, MERGE_PATCH),
      `patch metadata of WorkflowRecipe ${namespace}/${name}`,
    )
    return parseAs(WorkflowRecipeSchema, raw, `WorkflowRecipe ${namespace}/${name}`)
  }

  async replaceRecipeStatus(namespace: string, name: string, resourceVersion: string, status: WorkflowRecipeStatus): Promise<WorkflowRecipe> {
    return this.replaceCustomStatus(RECIPES, WorkflowRecipeSchema, 'WorkflowRecipe', namespace, name, resourceVersion, status)
  }

  async listRecipePolicies(): Promise<WorkflowRecipePolicy[]> {
    return this.listAllCustom(RECIPE_POLICIES, WorkflowRecipePolicySchema)
  }

  async getRecipePolicy(name: string): Promise<WorkflowRecipePolicy | null> {
    const raw = await this.orNull(() => this.custom.getClusterCustomObject({ ...RECIPE_POLICIES, name }), `get WorkflowRecipePolicy ${name}`)
    return raw === null ? null : parseOrSkip(WorkflowRecipePolicySchema, raw)[0] ?? null
  }

  async replaceRecipePolicyStatus(name: string, resourceVersion: string, status: WorkflowRecipePolicyStatus): Promise<WorkflowRecipePolicy> {
    const raw = await this.call(
      () => this.custom.replaceClusterCustomObjectStatus({
        ...RECIPE_POLICIES, name,
        body: { apiVersion: `${API_GROUP}/${API_VERSION_NAME}`, kind: 'WorkflowRecipePolicy', metadata: { name, resourceVersion }, status },
      }),
      `update status of WorkflowRecipePolicy ${name}`,
    )
    return parseAs(WorkflowRecipePolicySchema, raw, `WorkflowRecipePolicy ${name}`)
  }

  async getChild(kind: ChildKind, namespace: string, name: string): Promise<ChildObject | null> {
    const { ref, options } = childRef(kind)
    const raw = await this.orNull(() => this.custom.getNamespacedCustomObject({ ...ref, namespace, name }, options), `get ${kind} ${namespace}/${name}`)
    return raw === null ? null : withKind(kind, raw as ChildObject)
  }

  async listChildren(kind: ChildKind, namespace: string, labels: Record<string, string>): Promise<ChildObject[]> {
    const { ref, options } = childRef(kind)
    const list = await this.call(
      () => this.custom.listNamespacedCustomObject({ ...ref, namespace, labelSelector: selector(labels) }, options),
      `list ${kind} in ${namespace}`,
    )
    // List items of built-in kinds come without apiVersion/kind; callers compare whole objects.
    return itemsOf(list).map((item) => withKind(kind, item as ChildObject))
  }

  async applyChild(manifest: ChildObject): Promise<ChildObject> {
    const kind = manifest.kind as ChildKind
    const { ref, options } = childRef(kind)
    const namespace = manifest.metadata?.namespace ?? 'default'
    const name = manifest.metadata?.name ?? ''
    const what = `apply ${kind} ${namespace}/${name}`
    try {
      // A JSON body is valid YAML, so the apply content type takes it as it is.
      const raw = await this.custom.patchNamespacedCustomObject(
        { ...ref, namespace, name, body: manifest, fieldManager: FIELD_MANAGER, force: true },
        setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply, options),
      )
      return withKind(kind, raw as ChildObject)
    } catch (err) {
      const code = apiStatus(err)
      if (code !== undefined && code >= 400 && code < 500 && code !== 409 && code !== 429) {
        throw new RefusedError(apiMessage({ cause: err }), code, { cause: err })
      }
      throw classifyApiError(err, `Could not ${what}`)
    }
  }

  async createChild(manifest: ChildObject): Promise<ChildObject> {
    const kind = manifest.kind as ChildKind
    const { ref, options } = childRef(kind)
    const namespace = manifest.metadata?.namespace ?? 'default'
    const what = `create ${kind} ${namespace}/${manifest.metadata?.name ?? ''}`
    try {
      const raw = await this.custom.createNamespacedCustomObject({ ...ref, namespace, body: manifest }, options)
      return withKind(kind, raw as ChildObject)
    } catch (err) {
      // The kind is not served here (a cluster without Knative, for PingSources), or admission refused it.
      const code = apiStatus(err)
      if (code === 404 || code === 422) throw new RefusedError(`Could not ${what}: ${apiMessage({ cause: err })}`, code, { cause: err })
      throw classifyApiError(err, `Could not ${what}`)
    }
  }

  async patchChild(kind: ChildKind, namespace: string, name: string, resourceVersion: string, patch: Record<string, unknown>): Promise<ChildObject> {
    const { ref, options } = childRef(kind)
    const meta = (patch.metadata ?? {}) as Record<string, unknown>
    const body = { ...patch, metadata: { ...meta, resourceVersion } }
    const what = `patch ${kind} ${namespace}/${name}`
    try {
      const raw = await this.custom.patchNamespacedCustomObject({ ...ref, namespace, name, body }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch, options))
      return withKind(kind, raw as ChildObject)
    } catch (err) {
      if (apiStatus(err) === 404) throw new ConflictError(`Could not ${what}: it no longer exists`, { cause: err })
      throw classifyApiError(err, `Could not ${what}`)
    }
  }

  async deleteChild(
    kind: ChildKind, namespace: string, name: string, opts: { propagationPolicy: 'Foreground' | 'Background'; uid?: string; resourceVersion?: string },
  ): Promise<void> {
    const { ref, options } = childRef(kind)
    const preconditions = { ...(opts.uid ? { uid: opts.uid } : {}), ...(opts.resourceVersion ? { resourceVersion: opts.resourceVersion } : {}) }
    const body = { propagationPolicy: opts.propagationPolicy, ...(Object.keys(preconditions).length > 0 ? { preconditions } : {}) }
    try {
      await this.custom.deleteNamespacedCustomObject({ ...ref, namespace, name, propagationPolicy: opts.propagationPolicy, body }, options)
    } catch (err) {
      const code = apiStatus(err)
      if (code === 404) return
      // The version we read changed since: the caller re-reads and decides again.
      if (code === 409 && opts.resourceVersion) throw new ConflictError(`Could not delete ${kind} ${namespace}/${name}: it changed since it was read`, { cause: err })
      // A failed uid precondition: the object we meant is gone and another now holds the name.
      if (code === 409 && opts.uid) return
      throw classifyApiError(err, `Could not delete ${kind} ${namespace}/${name}`)
    }
  }

  async deleteConfigMap(namespace: string, name: string): Promise<void> {
    await this.orNull(() => this.core.deleteNamespacedConfigMap({ namespace, name }), `delete ConfigMap ${namespace}/${name}`)
  }

  async reviewToken(token: string, audiences?: string[]): Promise<TokenIdentity | null> {
    const review = await this.call(
      () => this.authn.createTokenReview({
        body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token, ...(audiences?.length ? { audiences } : {}) } },
      }),
      'create TokenReview',
    )
    const status = review.status
    if (!status?.authenticated || !status.user?.username) return null
    const { username, uid, groups, extra } = status.user
    return { username, ...(uid ? { uid } : {}), ...(groups ? { groups } : {}), ...(extra ? { extra } : {}) }
  }

  async reviewAccess(subject: TokenIdentity, attributes: AccessAttributes): Promise<boolean> {
    const review = await this.call(
      () => this.authz.createSubjectAccessReview({
        body: {
          apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview',
          spec: {
            user: subject.username,
            ...(subject.uid ? { uid: subject.uid } : {}),
            ...(subject.groups ? { groups: subject.groups } : {}),
            ...(subject.extra ? { extra: subject.extra } : {}),
            resourceAttributes: { ...attributes },
          },
        },
      }),
      `create SubjectAccessReview (${attributes.verb} ${attributes.resource})`,
    )
    return review.status?.allowed === true && review.status.denied !== true
  }

  async reviewSelfAccess(attributes: readonly AccessAttributes[]): Promise<boolean[]> {
    // One review per question, in parallel: the API has no batch form.
    return Promise.all(attributes.map(async (attrs) => {
      const review = await this.call(
        () => this.authz.createSelfSubjectAccessReview({
          body: { apiVersion: 'authorization.k8s.io/v1', kind: 'SelfSubjectAccessReview', spec: { resourceAttributes: { ...attrs } } },
        }),
        `create SelfSubjectAccessReview (${attrs.verb} ${attrs.resource})`,
      )
      return review.status?.allowed === true && review.status.denied !== true
    }))
  }

  async whoAmI(): Promise<TokenIdentity> {
    const review = await this.call(
      () => this.authn.createSelfSubjectReview({ body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' } }),
      'create SelfSubjectReview',
    )
    const user = review.status?.userInfo
    if (!user?.username) throw new Error('The SelfSubjectReview named no user')
    const { username, uid, groups, extra } = user
    return { username, ...(uid ? { uid } : {}), ...(groups ? { groups } : {}), ...(extra ? { extra } : {}) }
  }

  async watchWorkflow(namespace: string, name: string, resourceVersion: string, onChange: (workflow: Workflow | null) => void): Promise<StreamHandle> {
    const what = `watch Workflow ${namespace}/${name}`
    const stream = openStream()
    // An ERROR event (410 Gone, mostly) comes in-band; the server closes the watch right after it.
    let failure: Error | undefined
    let controller: AbortController | undefined
    const onEvent = (type: string, object: unknown) => {
      if (stream.settled) return
      try {
        if (type === 'ADDED' || type === 'MODIFIED') onChange(workflowFrom(object, namespace, name))
        else if (type === 'DELETED') onChange(null)
        else if (type === 'ERROR') failure = watchEventError(object, what)
      } catch (err) {
        // Watch swallows what its callback throws: end the stream with it instead.
        failure = err instanceof Error ? err : new Error(String(err))
        controller?.abort()
      }
    }
    controller = await new Watch(this.kc).watch(
      `/apis/${API_GROUP}/${API_VERSION_NAME}/namespaces/${encodeURIComponent(namespace)}/workflows`,
      { fieldSelector: `metadata.name=${name}`, resourceVersion, allowWatchBookmarks: true },
      onEvent,
      (err: unknown) => stream.end(failure ?? (err ? streamError(err, what) : undefined)),
    )
    return stream.handle(controller)
  }

  async followPodLog(
    namespace: string, pod: string, options: { container?: string; tailLines?: number; limitBytes?: number }, onChunk: (text: string) => void,
  ): Promise<StreamHandle> {
    const what = `follow log of pod ${namespace}/${pod}`
    const stream = openStream()
    // Multi-byte characters may be split across chunks: decode across them.
    const decoder = new StringDecoder('utf8')
    const sink = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        const text = decoder.write(chunk)
        if (text !== '' && !stream.settled) onChunk(text)
        callback()
      },
      final(callback) {
        const rest = decoder.end()
        if (rest !== '' && !stream.settled) onChunk(rest)
        callback()
      },
    })
    sink.on('finish', () => stream.end())
    let controller: AbortController
    try {
      // An empty container name lets the API server pick a single-container pod's container.
      controller = await new Log(this.kc).log(namespace, pod, options.container ?? '', sink, {
        follow: true,
        ...(options.tailLines !== undefined ? { tailLines: options.tailLines } : {}),
        ...(options.limitBytes !== undefined ? { limitBytes: options.limitBytes } : {}),
      })
    } catch (err) {
      throw classifyApiError(err, `Could not ${what}`)
    }
    return stream.handle(controller)
  }

  async listMCPServers(namespace: string): Promise<MCPServer[]> {
    return this.listCustom(namespace, 'mcpservers', MCPServerSchema)
  }

  async listRecipes(options: { namespace?: string; labelSelector?: string; limit?: number; continue?: string }): Promise<{ items: WorkflowRecipe[]; continue?: string }> {
    const query = {
      ...RECIPES,
      ...(options.labelSelector ? { labelSelector: options.labelSelector } : {}),
      ...(options.limit ? { limit: options.limit } : {}),
      ...(options.continue ? { _continue: options.continue } : {}),
    }
    const { namespace } = options
    let list: unknown
    try {
      list = await (namespace ? this.custom.listNamespacedCustomObject({ ...query, namespace }) : this.custom.listClusterCustomObject(query))
    } catch (err) {
      // A malformed label selector (400) or an expired continue token (410) is the caller's to fix.
      const code = apiStatus(err)
      if (code === 400 || code === 410) throw new RefusedError(apiMessage({ cause: err }), code, { cause: err })
      throw classifyApiError(err, `Could not list WorkflowRecipes${namespace ? ` in ${namespace}` : ''}`)
    }
    const next = (list as { metadata?: { continue?: unknown } }).metadata?.continue
    return {
      items: itemsOf(list).flatMap((item) => parseOrSkip(WorkflowRecipeSchema, item)),
      ...(typeof next === 'string' && next !== '' ? { continue: next } : {}),
    }
  }

  async createRecipe(recipe: WorkflowRecipe, opts: { dryRun?: boolean } = {}): Promise<WorkflowRecipe | 'exists'> {
    const namespace = recipe.metadata.namespace ?? 'default'
    const name = recipe.metadata.name ?? ''
    const what = `create WorkflowRecipe ${namespace}/${name}`
    try {
      const raw = await this.custom.createNamespacedCustomObject({
        ...RECIPES, namespace, body: recipeBody(recipe), fieldManager: FIELD_MANAGER, ...(opts.dryRun ? { dryRun: 'All' } : {}),
      })
      return parseAs(WorkflowRecipeSchema, raw, `WorkflowRecipe ${namespace}/${name}`)
    } catch (err) {
      if (apiStatus(err) === 409) return 'exists'
      throw recipeWriteError(err, what)
    }
  }

  async replaceRecipe(recipe: WorkflowRecipe, opts: { dryRun?: boolean } = {}): Promise<WorkflowRecipe> {
    const namespace = recipe.metadata.namespace ?? 'default'
    const name = recipe.metadata.name ?? ''
    const what = `replace WorkflowRecipe ${namespace}/${name}`
    try {
      const raw = await this.custom.replaceNamespacedCustomObject({
        ...RECIPES, namespace, name, body: recipeBody(recipe), fieldManager: FIELD_MANAGER, ...(opts.dryRun ? { dryRun: 'All' } : {}),
      })
      return parseAs(WorkflowRecipeSchema, raw, `WorkflowRecipe ${namespace}/${name}`)
    } catch (err) {
      // Gone since it was read: the resourceVersion it was guarded by no longer exists either.
      if (apiStatus(err) === 404) throw new ConflictError(`Could not ${what}: it no longer exists`, { cause: err })
      throw recipeWriteError(err, what)
    }
  }

  async deleteRecipe(namespace: string, name: string): Promise<boolean> {
    try {
      await this.custom.deleteNamespacedCustomObject({ ...RECIPES, namespace, name })
      return true
    } catch (err) {
      if (apiStatus(err) === 404) return false
      throw classifyApiError(err, `Could not delete WorkflowRecipe ${namespace}/${name}`)
    }
  }

  private async getCustom<S extends z.ZodType>(
    ref: typeof MCP_SERVERS, schema: S, kind: string, namespace: string, name: string,
  ): Promise<z.output<S> | null> {
    const raw = await this.orNull(() => this.custom.getNamespacedCustomObject({ ...ref, namespace, name }), `get ${kind} ${namespace}/${name}`)
    return raw === null ? null : parseOrSkip(schema, raw)[0] ?? null
  }

  private async listAllCustom<S extends z.ZodType>(ref: typeof MCP_SERVERS, schema: S): Promise<z.output<S>[]> {
    const list = await this.call(() => this.custom.listClusterCustomObject(ref), `list ${ref.plural}`)
    return itemsOf(list).flatMap((item) => parseOrSkip(schema, item))
  }

  private async replaceCustomStatus<S extends z.ZodType>(
    ref: typeof MCP_SERVERS, schema: S, kind: string, namespace: string, name: string, resourceVersion: string, status: unknown,
  ): Promise<z.output<S>> {
    const raw = await this.call(
      () => this.custom.replaceNamespacedCustomObjectStatus({
        ...ref, namespace, name,
        body: { apiVersion: `${API_GROUP}/${API_VERSION_NAME}`, kind, metadata: { name, namespace, resourceVersion }, status },
      }),
      `update status of ${kind} ${namespace}/${name}`,
    )
    return parseAs(schema, raw, `${kind} ${namespace}/${name}`)
  }

  private async listCustom<S extends z.ZodType>(namespace: string, plural: string, schema: S): Promise<z.output<S>[]> {
    const list = await this.call(
      () => this.custom.listNamespacedCustomObject({ group: API_GROUP, version: API_VERSION_NAME, namespace, plural }),
      `list ${plural} in ${namespace}`,
    )
    return itemsOf(list).flatMap((item) => parseOrSkip(schema, item))
  }

  private async call<T>(fn: () => Promise<T>, what: string): Promise<T> {
    try {
      return await fn()
    } catch (err) {
      throw classifyApiError(err, `Could not ${what}`)
    }
  }

  private async orNull<T>(fn: () => Promise<T>, what: string): Promise<T | null> {
    try {
      return await fn()
    } catch (err) {
      if (apiStatus(err) === 404) return null
      throw classifyApiError(err, `Could not ${what}`)
    }
  }

  private async create(fn: () => Promise<unknown>, what: string): Promise<'created' | 'exists'> {
    try {
      await fn()
      return 'created'
    } catch (err) {
      if (apiStatus(err) === 409) return 'exists'
      throw classifyApiError(err, `Could not ${what}`)
    }
  }
}

/** The one reading of a Workflow from the API server (a GET or a watch event); throws when it does not match the schema. */
function workflowFrom(raw: unknown, namespace: string, name: string): Workflow {
  return parseAs(WorkflowSchema, raw, `Workflow ${namespace}/${name}`)
}

/**
 * The StreamHandle bookkeeping of a watch or a followed log: `done` settles once, `stop()`
 * resolves it at once, and a stream that failed before it was handed out throws instead.
 */
function openStream() {
  let settled = false
  let early: Error | undefined
  let resolve!: () => void
  let reject!: (err: Error) => void
  const done = new Promise<void>((res, rej) => { resolve = res; reject = rej })
  // Nobody may be waiting on `done` when the stream fails; that is not an unhandled rejection.
  done.catch(() => {})
  let handedOut = false
  return {
    get settled() { return settled },
    end(err?: Error) {
      if (settled) return
      settled = true
      if (!handedOut && err) early = err
      if (err) reject(err)
      else resolve()
    },
    handle(controller: AbortController): StreamHandle {
      if (early) throw early
      handedOut = true
      return {
        stop: () => {
          if (!settled) { settled = true; resolve() }
          controller.abort()
        },
        done,
      }
    },
  }
}

/** A failed stream request (Watch reports a non-200 as `statusCode`) as one of our errors. */
function streamError(err: unknown, what: string): Error {
  const statusCode = (err as { statusCode?: unknown }).statusCode
  const cause = typeof statusCode === 'number' ? new ApiException(statusCode, (err as Error).message, undefined, {}) : err
  return classifyApiError(cause, `Could not ${what}`)
}

/** A watch's in-band ERROR event (a Status: 410 Gone when the resourceVersion is too old) as one of our errors. */
function watchEventError(object: unknown, what: string): Error {
  const status = object as { code?: unknown; message?: unknown } | undefined
  const code = typeof status?.code === 'number' ? status.code : 500
  const message = typeof status?.message === 'string' ? status.message : 'watch error'
  return classifyApiError(new ApiException(code, message, status, {}), `Could not ${what}: ${message}`)
}

/** A recipe as the API server takes it: apiVersion/kind set, and never the status (a subresource). */
function recipeBody(recipe: WorkflowRecipe): Record<string, unknown> {
  const { status: _status, ...rest } = recipe
  return { ...rest, apiVersion: `${API_GROUP}/${API_VERSION_NAME}`, kind: 'WorkflowRecipe' }
}

/** A refused recipe write: 422 (invalid) carries the API server's causes; everything else as classifyApiError. */
function recipeWriteError(err: unknown, what: string): Error {
  if (apiStatus(err) !== 422) return classifyApiError(err, `Could not ${what}`)
  const status = statusBody(err)
  const causes = (status?.details?.causes ?? []).flatMap((c) => typeof c?.message === 'string'
    ? [{ ...(typeof c.field === 'string' && c.field !== '' ? { field: c.field } : {}), message: c.message }]
    : [])
  return new RefusedError(apiMessage({ cause: err }), 422, { cause: err, causes })
}

/** The Status object an API error carries (client-node gives it as a string or already parsed). */
function statusBody(err: unknown): { details?: { causes?: Array<{ field?: unknown; message?: unknown }> } } | undefined {
  const body = (err as { body?: unknown }).body
  if (typeof body === 'string') {
    try {
      return JSON.parse(body) as never
    } catch {
      return undefined
    }
  }
  return body && typeof body === 'object' ? body as never : undefined
}

function selector(labels: Record<string, string>): string {
  return Object.entries(labels).map(([k, v]) => `${k}=${v}`).join(',')
}

function withKind(kind: ChildKind, object: ChildObject): ChildObject {
  return { ...object, apiVersion: object.apiVersion ?? childApiVersion(kind), kind: object.kind ?? kind }
}

function itemsOf(list: unknown): unknown[] {
  const items = (list as { items?: unknown }).items
  return Array.isArray(items) ? items : []
}

function parseAs<S extends z.ZodType>(schema: S, raw: unknown, what: string): z.output<S> {
  const result = schema.safeParse(raw)
  if (!result.success) throw new Error(`${what} does not match its schema: ${result.error.issues[0]?.message ?? 'invalid'}`)
  return result.data
}

/** Objects that fail their schema are skipped in lists rather than failing the whole call. */
function parseOrSkip<S extends z.ZodType>(schema: S, raw: unknown): z.output<S>[] {
  const result = schema.safeParse(raw)
  return result.success ? [result.data] : []
}
