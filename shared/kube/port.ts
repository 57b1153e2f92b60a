import type {
  CoreV1Event, V1ConfigMap, V1Deployment, V1Job, V1Namespace, V1Pod, V1Role, V1RoleBinding, V1Secret, V1Service, V1ServiceAccount,
} from '@kubernetes/client-node'
import type { Agent, AgentStatus } from '../schemas/agent.js'
import type { AgentAutonomyPolicy, AgentAutonomyPolicyStatus } from '../schemas/autonomypolicy.js'
import type { LLMProvider, LLMProviderStatus } from '../schemas/llmprovider.js'
import type { MCPServer, MCPServerStatus } from '../schemas/mcpserver.js'
import type { MemoryProvider, MemoryProviderStatus } from '../schemas/memoryprovider.js'
import type { Workflow, WorkflowStatus } from '../schemas/workflow.js'
import type { WorkflowRecipe, WorkflowRecipeStatus } from '../schemas/workflowrecipe.js'
import type { WorkflowRecipePolicy, WorkflowRecipePolicyStatus } from '../schemas/workflowrecipepolicy.js'

/** What a step's pod tells about its attempt (Kube.readStepReport). */
export interface StepReport {
  /** The termination message or the log; null when the log is gone. */
  text: string | null
  /** When its container started (RFC 3339), once the kubelet has started it. */
  startedAt?: string
}

/** Who a bearer token belongs to, as a TokenReview answers. */
export interface TokenIdentity {
  username: string
  uid?: string
  groups?: string[]
  extra?: Record<string, string[]>
}

/**
 * Whose rights a Kube adapter uses. `own`: the process's kubeconfig (a function's
 * ServiceAccount). `token`: a person's bearer token instead of it. `impersonate`: the
 * process's identity with Impersonate-User / Impersonate-Group (the console behind a trusted
 * authenticating proxy; the ServiceAccount needs the `impersonate` verb).
 */
export type Credential =
  | { kind: 'own' }
  | { kind: 'token'; token: string }
  | { kind: 'impersonate'; user: string; groups: string[]; uid?: string }

/** A stream being read (a watch, a followed log): `stop()` ends it; `done` settles when it ended, rejecting on a failure. */
export interface StreamHandle {
  stop(): void
  done: Promise<void>
}

/** What a SubjectAccessReview asks about (resource attributes). */
export interface AccessAttributes {
  verb: string
  group: string
  resource: string
  namespace?: string
  name?: string
  /** e.g. `log` for `pods/log`. */
  subresource?: string
}

/** The kinds a WorkflowRecipe creates as children (spec §5), read and written generically. */
export type ChildKind = 'Secret' | 'Service' | 'Deployment' | 'StatefulSet' | 'DaemonSet' | 'Job' | 'CronJob' | 'MCPServer' | 'Workflow' | 'PingSource'

/** A child as the API server returns it: plain JSON (timestamps as strings). */
export type ChildObject = {
  apiVersion?: string
  kind?: string
  metadata?: {
    name?: string
    namespace?: string
    uid?: string
    generation?: number
    resourceVersion?: string
    labels?: Record<string, string>
    annotations?: Record<string, string>
    deletionTimestamp?: string
    finalizers?: string[]
    [field: string]: unknown
  }
  [field: string]: unknown
}

/**
 * Everything a function may ask of the Kubernetes API, in domain verbs. `KubeClient`
 * (`shared/kube/client.ts`, its verbs in `shared/kube/client/`) is the one implementation over
 * the real API; tests pass the same adapter pointed at the embedded API server, or a fake.
 *
 * Contract for every method: reads return null on 404; creates return 'exists' on
 * AlreadyExists; writes guarded by a resourceVersion throw ConflictError on 409; API
 * outages, 429 and 5xx throw TransientError; anything else is a plain Error (a bug: 500).
 */
export interface Kube {
  getWorkflow(namespace: string, name: string): Promise<Workflow | null>
  /** Every Workflow in every namespace the function may see (the resync tick). */
  listWorkflows(): Promise<Workflow[]>
  listAgents(namespace: string): Promise<Agent[]>
  getAgent(namespace: string, name: string): Promise<Agent | null>
  /** Every Agent in every namespace (agent-changed's recheck tick). */
  listAllAgents(): Promise<Agent[]>
  /**
   * JSON merge patch of an Agent's metadata and spec (autonomy level, Shu-Ha-Ri level, consumed
   * annotations, purko's finalizer), guarded by resourceVersion.
   */
  patchAgent(namespace: string, name: string, resourceVersion: string, patch: AgentPatch): Promise<Agent>
  /** Replaces an Agent's `.status` through the status subresource, guarded by resourceVersion. */
  replaceAgentStatus(namespace: string, name: string, resourceVersion: string, status: AgentStatus): Promise<Agent>

  /** The AgentAutonomyPolicies of one namespace, or of every namespace when none is given. */
  listAutonomyPolicies(namespace?: string): Promise<AgentAutonomyPolicy[]>
  /** Replaces a policy's `.status` through the status subresource, guarded by resourceVersion. */
  replaceAutonomyPolicyStatus(namespace: string, name: string, resourceVersion: string, status: AgentAutonomyPolicyStatus): Promise<AgentAutonomyPolicy>

  listLLMProviders(namespace: string): Promise<LLMProvider[]>
  getLLMProvider(namespace: string, name: string): Promise<LLMProvider | null>
  /** Every LLMProvider in every namespace (llmprovider-changed's probe round). */
  listAllLLMProviders(): Promise<LLMProvider[]>
  /** Replaces an LLMProvider's `.status` through the status subresource, guarded by resourceVersion. */
  replaceLLMProviderStatus(namespace: string, name: string, resourceVersion: string, status: LLMProviderStatus): Promise<LLMProvider>

  getMCPServer(namespace: string, name: string): Promise<MCPServer | null>
  /** Every MCPServer in every namespace (mcpserver-changed's resync round). */
  listAllMCPServers(): Promise<MCPServer[]>
  /** JSON merge patch of an MCPServer's finalizers/annotations, guarded by resourceVersion. */
  patchMCPServerMetadata(
    namespace: string, name: string, resourceVersion: string,
    metadata: { finalizers?: string[]; annotations?: Record<string, string | null> },
  ): Promise<MCPServer>
  /** Replaces an MCPServer's `.status` through the status subresource, guarded by resourceVersion. */
  replaceMCPServerStatus(namespace: string, name: string, resourceVersion: string, status: MCPServerStatus): Promise<MCPServer>

  getMemoryProvider(namespace: string, name: string): Promise<MemoryProvider | null>
  /** Every MemoryProvider in every namespace. */
  listAllMemoryProviders(): Promise<MemoryProvider[]>
  /** Replaces a MemoryProvider's `.status` through the status subresource, guarded by resourceVersion. */
  replaceMemoryProviderStatus(namespace: string, name: string, resourceVersion: string, status: MemoryProviderStatus): Promise<MemoryProvider>

  /** An MCPServer's workload: read, create, full replace guarded by resourceVersion. */
  getDeployment(namespace: string, name: string): Promise<V1Deployment | null>
  createDeployment(deployment: V1Deployment): Promise<'created' | 'exists'>
  replaceDeployment(deployment: V1Deployment): Promise<V1Deployment>
  getService(namespace: string, name: string): Promise<V1Service | null>
  createService(service: V1Service): Promise<'created' | 'exists'>
  replaceService(service: V1Service): Promise<V1Service>
  listPods(namespace: string, labels: Record<string, string>): Promise<V1Pod[]>

  getNamespace(name: string): Promise<V1Namespace | null>
  listNamespaces(labels: Record<string, string>): Promise<V1Namespace[]>

  /** The per-agent identity (ServiceAccount, Role, RoleBinding): read, create, full replace guarded by resourceVersion, delete. */
  getServiceAccount(namespace: string, name: string): Promise<V1ServiceAccount | null>
  createServiceAccount(serviceAccount: V1ServiceAccount): Promise<'created' | 'exists'>
  replaceServiceAccount(serviceAccount: V1ServiceAccount): Promise<V1ServiceAccount>
  /** A ServiceAccount that is already gone is not an error. */
  deleteServiceAccount(namespace: string, name: string): Promise<void>
  getRole(namespace: string, name: string): Promise<V1Role | null>
  createRole(role: V1Role): Promise<'created' | 'exists'>
  replaceRole(role: V1Role): Promise<V1Role>
  getRoleBinding(namespace: string, name: string): Promise<V1RoleBinding | null>
  createRoleBinding(binding: V1RoleBinding): Promise<'created' | 'exists'>
  replaceRoleBinding(binding: V1RoleBinding): Promise<V1RoleBinding>

  listJobs(namespace: string, labels: Record<string, string>): Promise<V1Job[]>
  /** Jobs of `namespace` carrying label `labelKey` (the resync tick's one look at a namespace's step Jobs). */
  listJobsLabelled(namespace: string, labelKey: string): Promise<V1Job[]>
  createJob(job: V1Job): Promise<'created' | 'exists'>
  /** Background propagation; a Job that is already gone is not an error. */
  deleteJob(namespace: string, name: string): Promise<void>
  /** The log of the first pod of the Job (`job-name=<job>`), or null when it has no pod. */
  readJobLog(namespace: string, jobName: string): Promise<string | null>
  /**
   * What a finished step's pod tells, null when the Job has no pod. `output`: text holding the
   * `OUTPUT:` line, its termination message when the executor left the line there (one call), else
   * the pod's log (two). `log`: the pod's log (a failure's last lines). Either way, when its
   * container started, from the same pod read.
   */
  readStepReport(namespace: string, jobName: string, want: 'output' | 'log'): Promise<StepReport | null>

  getConfigMap(namespace: string, name: string): Promise<V1ConfigMap | null>
  listConfigMaps(namespace: string, labels: Record<string, string>): Promise<V1ConfigMap[]>
  /** ConfigMaps with these labels in every namespace. */
  listAllConfigMaps(labels: Record<string, string>): Promise<V1ConfigMap[]>
  createConfigMap(configMap: V1ConfigMap): Promise<'created' | 'exists'>
  /** Full replace guarded by `metadata.resourceVersion`. */
  replaceConfigMap(configMap: V1ConfigMap): Promise<V1ConfigMap>

  getSecret(namespace: string, name: string): Promise<V1Secret | null>
  createSecret(secret: V1Secret): Promise<'created' | 'exists'>
  /** Full replace guarded by `metadata.resourceVersion`. */
  replaceSecret(secret: V1Secret): Promise<V1Secret>

  /** JSON merge patch of labels/annotations, guarded by resourceVersion. */
  patchWorkflowMetadata(
    namespace: string,
    name: string,
    resourceVersion: string,
    metadata: { annotations?: Record<string, string | null>; finalizers?: string[] },
  ): Promise<Workflow>
  /** Creates a Workflow (a run from a template); 'exists' when the name is taken (a duplicate fire or delivery). */
  createWorkflow(workflow: Workflow): Promise<Workflow | 'exists'>
  /** The Workflows of one namespace, by labels (a template's runs). */
  listWorkflowsIn(namespace: string, labels: Record<string, string>): Promise<Workflow[]>
  /** Deletes a Workflow (background); with `uid`, only that object. Already gone is not an error. */
  deleteWorkflow(namespace: string, name: string, options?: { uid?: string }): Promise<void>
  /**
   * JSON merge patch of a Workflow's annotations and `spec.parameters` together (a rerun with
   * parameter overrides), guarded by resourceVersion. `null` removes a key.
   */
  patchWorkflow(
    namespace: string, name: string, resourceVersion: string,
    patch: { annotations?: Record<string, string | null>; parameters?: Record<string, string | null> },
  ): Promise<Workflow>
  /** Replaces `.status` through the status subresource, guarded by resourceVersion. */
  patchWorkflowStatus(namespace: string, name: string, resourceVersion: string, status: WorkflowStatus): Promise<Workflow>

  createEvent(event: CoreV1Event): Promise<void>
  /** Kubernetes Events about one object (by involvedObject kind and name), oldest first. */
  listEvents(namespace: string, involved: { kind: string; name: string }): Promise<CoreV1Event[]>

  getRecipe(namespace: string, name: string): Promise<WorkflowRecipe | null>
  /** Every WorkflowRecipe in every namespace (resync tick, policy re-evaluation). */
  listAllRecipes(): Promise<WorkflowRecipe[]>
  /** JSON merge patch of a recipe's finalizers/annotations, guarded by resourceVersion. */
  patchRecipeMetadata(
    namespace: string, name: string, resourceVersion: string,
    metadata: { finalizers?: string[]; annotations?: Record<string, string | null> },
  ): Promise<WorkflowRecipe>
  /** Replaces a recipe's `.status` through the status subresource, guarded by resourceVersion. */
  replaceRecipeStatus(namespace: string, name: string, resourceVersion: string, status: WorkflowRecipeStatus): Promise<WorkflowRecipe>
  /** Every WorkflowRecipePolicy (cluster-scoped). */
  listRecipePolicies(): Promise<WorkflowRecipePolicy[]>
  getRecipePolicy(name: string): Promise<WorkflowRecipePolicy | null>
  /** Replaces a policy's `.status` through the status subresource, guarded by resourceVersion. */
  replaceRecipePolicyStatus(name: string, resourceVersion: string, status: WorkflowRecipePolicyStatus): Promise<WorkflowRecipePolicy>

  /** A recipe child by kind and name, as plain JSON; null on 404. */
  getChild(kind: ChildKind, namespace: string, name: string): Promise<ChildObject | null>
  /** Children of one kind in one namespace by labels. */
  listChildren(kind: ChildKind, namespace: string, labels: Record<string, string>): Promise<ChildObject[]>
  /**
   * Server-side apply (field manager `kinetic`, force) of a complete child manifest; creates it
   * when absent. A 4xx other than 409 throws RefusedError with the API server's message.
   */
  applyChild(manifest: ChildObject): Promise<ChildObject>
  /** Creates a child; ConflictError when one of that name exists. */
  createChild(manifest: ChildObject): Promise<ChildObject>
  /**
   * JSON merge patch of a child, guarded by resourceVersion: ConflictError when it changed since
   * (or is gone).
   */
  patchChild(kind: ChildKind, namespace: string, name: string, resourceVersion: string, patch: Record<string, unknown>): Promise<ChildObject>
  /**
   * Deletes a child with the given propagation; with `uid`, only that object (a precondition,
   * so a same-named object created since is never touched). Already gone is not an error. With
   * `resourceVersion`, only that version of it: ConflictError when it changed since.
   */
  deleteChild(kind: ChildKind, namespace: string, name: string, options: { propagationPolicy: 'Foreground' | 'Background'; uid?: string; resourceVersion?: string }): Promise<void>
  /** A ConfigMap that is already gone is not an error (revision snapshots beyond the history limit). */
  deleteConfigMap(namespace: string, name: string): Promise<void>

  /** TokenReview of a bearer token (for these audiences when given); null when it does not authenticate. */
  reviewToken(token: string, audiences?: string[]): Promise<TokenIdentity | null>
  /** SubjectAccessReview: may this caller do this? */
  reviewAccess(subject: TokenIdentity, attributes: AccessAttributes): Promise<boolean>
  /** SelfSubjectAccessReviews: may this adapter's own identity do each of these? Same order as asked. */
  reviewSelfAccess(attributes: readonly AccessAttributes[]): Promise<boolean[]>
  /** SelfSubjectReview: who this adapter's credential authenticates as. */
  whoAmI(): Promise<TokenIdentity>
  /**
   * Watches one Workflow from `resourceVersion` (the version already shown): `onChange` gets
   * each newer version, or null when it was deleted. The caller re-reads and watches again when
   * `done` settles (the server closed the watch, or 410 Gone).
   */
  watchWorkflow(namespace: string, name: string, resourceVersion: string, onChange: (workflow: Workflow | null) => void): Promise<StreamHandle>
  /** Follows a pod's log (`follow=true`); `onChunk` gets text as it is written; `done` settles when the container ended. */
  followPodLog(namespace: string, pod: string, options: { container?: string; tailLines?: number; limitBytes?: number }, onChunk: (text: string) => void): Promise<StreamHandle>
  /** The MCPServers of one namespace. */
  listMCPServers(namespace: string): Promise<MCPServer[]>

  /** One page of WorkflowRecipes (one namespace, or all), by label selector. */
  listRecipes(options: { namespace?: string; labelSelector?: string; limit?: number; continue?: string }): Promise<{ items: WorkflowRecipe[]; continue?: string }>
  /** Creates a recipe ('exists' on AlreadyExists); `dryRun` sends `dryRun=All`. A 422 throws RefusedError with causes. */
  createRecipe(recipe: WorkflowRecipe, options?: { dryRun?: boolean }): Promise<WorkflowRecipe | 'exists'>
  /** Replaces a recipe, guarded by `metadata.resourceVersion`; `dryRun` sends `dryRun=All`. A 422 throws RefusedError with causes. */
  replaceRecipe(recipe: WorkflowRecipe, options?: { dryRun?: boolean }): Promise<WorkflowRecipe>
  /** Deletes a recipe (its finalizer then runs the deletion); false when it was not there. */
  deleteRecipe(namespace: string, name: string): Promise<boolean>
}

/**
 * The part of the port a list of verbs names: what a function or module declares it calls
 * (its `*_VERBS`), so calling any other verb is a type error. A full Kube is assignable to it.
 */
export type KubeVerbs<L extends readonly (keyof Kube)[]> = Pick<Kube, L[number]>

/** What `patchAgent` may change. `null` removes an annotation (JSON merge patch). */
export interface AgentPatch {
  metadata?: { annotations?: Record<string, string | null>; finalizers?: string[] }
  spec?: { autonomyLevel?: string; shuHaRi?: { level?: string; promotedAt?: string } }
}
