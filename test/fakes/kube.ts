import type {
  CoreV1Event, V1ConfigMap, V1Deployment, V1Job, V1Namespace, V1Pod, V1Role, V1RoleBinding, V1Secret, V1Service, V1ServiceAccount,
} from '@kubernetes/client-node'
import { ConflictError, RefusedError } from '../../shared/core/errors.js'
import { agentServiceAccountName } from '../../shared/agent/plan/names.js'
import type { AgentPatch, ChildKind, ChildObject, Kube, StepReport, StreamHandle } from '../../shared/kube/port.js'
import type { Agent, AgentStatus } from '../../shared/schemas/agent.js'
import type { AgentAutonomyPolicy, AgentAutonomyPolicyStatus } from '../../shared/schemas/autonomypolicy.js'
import type { LLMProvider, LLMProviderStatus } from '../../shared/schemas/llmprovider.js'
import type { MCPServer, MCPServerStatus } from '../../shared/schemas/mcpserver.js'
import type { MemoryProvider, MemoryProviderStatus } from '../../shared/schemas/memoryprovider.js'
import { WorkflowSchema, type Workflow, type WorkflowStatus } from '../../shared/schemas/workflow.js'
import { WorkflowRecipeSchema, WorkflowRecipeStatusSchema, type WorkflowRecipe, type WorkflowRecipeStatus } from '../../shared/schemas/workflowrecipe.js'
import { PortFaults } from '../support/port-faults.js'
import { withReviewStandIns } from '../support/review-stand-ins.js'
import { seedInto, type SeedObjects } from '../support/seed.js'
import { WorkflowRecipePolicyStatusSchema, type WorkflowRecipePolicy, type WorkflowRecipePolicyStatus } from '../../shared/schemas/workflowrecipepolicy.js'


/** FakeKube but for the review verbs. */
class FakeKubeCore extends PortFaults {
  private rv = 1
  readonly workflows = new Map<string, Workflow>()
  readonly agents = new Map<string, Agent>()
  readonly providers = new Map<string, LLMProvider>()
  readonly mcpServers = new Map<string, MCPServer>()
  readonly jobs = new Map<string, V1Job>()
  readonly logs = new Map<string, string>()
  readonly configMaps = new Map<string, V1ConfigMap>()
  readonly secrets = new Map<string, V1Secret>()
  readonly policies = new Map<string, AgentAutonomyPolicy>()
  readonly memoryProviders = new Map<string, MemoryProvider>()
  readonly serviceAccounts = new Map<string, V1ServiceAccount>()
  readonly roles = new Map<string, V1Role>()
  readonly roleBindings = new Map<string, V1RoleBinding>()
  readonly deployments = new Map<string, V1Deployment>()
  readonly services = new Map<string, V1Service>()
  readonly pods = new Map<string, V1Pod>()
  /** Namespaces by name (cluster-scoped: the key has no namespace part). */
  readonly namespaces = new Map<string, V1Namespace>()
  readonly events: CoreV1Event[] = []
  /** WorkflowRecipes by `namespace/name`. */
  readonly recipes = new Map<string, WorkflowRecipe>()
  /** WorkflowRecipePolicies by name (cluster-scoped). */
  readonly recipePolicies = new Map<string, WorkflowRecipePolicy>()
  /** Recipe children (any ChildKind) by `Kind/namespace/name`, as plain JSON. */
  readonly childObjects = new Map<string, ChildObject>()
  /** Applies the API server refuses for good, by `Kind/namespace/name` (see `refuseApply`). */
  private readonly refusals = new Map<string, { code: number; message: string }>()
  private uids = 0
  /** Every write that took effect, e.g. `create Job/wf-a-xxxx`, `status Workflow/wf`. */
  readonly writes: string[] = []
  /** Job names ever created, in order (the exactly-once evidence). */
  readonly createdJobs: string[] = []
  /** Size in bytes of the largest object any write stored, and which one it was. */
  largestWrite = { bytes: 0, what: '' }
  /** Dry-run recipe writes (they store nothing), e.g. `create WorkflowRecipe/shop`. */
  readonly dryRuns: string[] = []
  /** Open watchWorkflow streams, by `namespace/name`. */
  private readonly workflowWatchers = new Map<string, Set<FakeStream<Workflow | null>>>()
  /** Open followPodLog streams, by `namespace/pod`. */
  private readonly logFollowers = new Map<string, Set<FakeStream<string>>>()

  /**
   * `identities: false` leaves out the per-agent ServiceAccounts that agent-changed would have
   * made by the time a workflow runs (`agent-<name>-sa` or `spec.runtime.serviceAccountName`).
   */
  constructor(objects: SeedObjects = {}) {
    super()
    seedInto(this, objects)
  }

  putProvider(provider: LLMProvider): void {
    this.providers.set(key(provider.metadata.namespace, provider.metadata.name), clone(provider))
  }

  /** Stores a Workflow as a user would create it (uid, generation 1, fresh resourceVersion). */
  putWorkflow(wf: Workflow): Workflow {
    const k = key(wf.metadata.namespace, wf.metadata.name)
    const existing = this.workflows.get(k)
    const stored = WorkflowSchema.parse(clone(wf))
    stored.metadata.uid ??= existing?.metadata.uid ?? `uid-${wf.metadata.name}`
    stored.metadata.generation ??= existing?.metadata.generation ?? 1
    stored.metadata.resourceVersion = String(++this.rv)
    this.workflows.set(k, stored)
    this.notifyWorkflow(k)
    return clone(stored)
  }

  /** Stores an Agent as a user would apply it (uid, generation, fresh resourceVersion), with its ServiceAccount unless told otherwise. */
  putAgent(agent: Agent, opts: { identity?: boolean } = {}): Agent {
    const k = key(agent.metadata.namespace, agent.metadata.name)
    const existing = this.agents.get(k)
    const stored = clone(agent)
    stored.metadata.uid ??= existing?.metadata.uid ?? `uid-agent-${agent.metadata.name}`
    stored.metadata.generation ??= (existing?.metadata.generation ?? 0) + 1
    stored.metadata.resourceVersion = String(++this.rv)
    this.agents.set(k, stored)
    if (opts.identity !== false) {
      // What agent-changed leaves behind: the ServiceAccount, and its name in status.
      const name = agentServiceAccountName(agent)
      const saKey = key(agent.metadata.namespace, name)
      if (!this.serviceAccounts.has(saKey)) {
        this.serviceAccounts.set(saKey, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace: agent.metadata.namespace, resourceVersion: String(++this.rv) } })
      }
      stored.status = { ...(stored.status ?? {}), serviceAccountName: name }
    }
    return clone(stored)
  }

  /** Stores an AgentAutonomyPolicy as a user would apply it. */
  putPolicy(policy: AgentAutonomyPolicy): AgentAutonomyPolicy {
    const k = key(policy.metadata.namespace, policy.metadata.name)
    const existing = this.policies.get(k)
    const stored = clone(policy)
    stored.metadata.uid ??= existing?.metadata.uid ?? `uid-policy-${policy.metadata.name}`
    stored.metadata.generation ??= (existing?.metadata.generation ?? 0) + 1
    stored.metadata.resourceVersion = String(++this.rv)
    this.policies.set(k, stored)
    return clone(stored)
  }

  /** Changes annotations as `kubectl annotate` would (no generation bump). */
  annotate(namespace: string, name: string, annotations: Record<string, string>): Workflow {
    const wf = this.workflows.get(key(namespace, name))!
    wf.metadata.annotations = { ...(wf.metadata.annotations ?? {}), ...annotations }
    wf.metadata.resourceVersion = String(++this.rv)
    this.notifyWorkflow(key(namespace, name))
    return clone(wf)
  }

  /** Finishes a Job as the Job controller and kubelet would: conditions plus the pod log. */
  finishJob(name: string, outcome: 'Succeeded' | 'Failed', log: string, reason?: string): V1Job {
    const job = [...this.jobs.values()].find((j) => j.metadata?.name === name)!
    job.status = {
      conditions: [{ type: outcome === 'Succeeded' ? 'Complete' : 'Failed', status: 'True', ...(reason ? { reason } : {}) }],
      ...(outcome === 'Succeeded' ? { succeeded: 1 } : { failed: 1 }),
    }
    job.metadata!.resourceVersion = String(++this.rv)
    this.logs.set(key(job.metadata?.namespace, name), log)
    return clone(job)
  }

  /**
   * Stores a WorkflowRecipe as a user would apply it: uid kept, generation up when the spec
   * changed, fresh resourceVersion; the status is the one given, else the stored one.
   */
  putRecipe(recipe: WorkflowRecipe): WorkflowRecipe {
    const k = key(recipe.metadata.namespace, recipe.metadata.name)
    const existing = this.recipes.get(k)
    const stored = clone(recipe)
    stored.metadata.uid ??= existing?.metadata.uid ?? `uid-recipe-${recipe.metadata.name}`
    const specChanged = !existing || JSON.stringify(existing.spec) !== JSON.stringify(recipe.spec)
    // Like the API server, the generation is never the writer's to set once the object exists.
    stored.metadata.generation = existing ? (existing.metadata.generation ?? 1) + (specChanged ? 1 : 0) : (recipe.metadata.generation ?? 1)
    stored.metadata.resourceVersion = String(++this.rv)
    if (stored.status === undefined && existing?.status) stored.status = clone(existing.status)
    this.recipes.set(k, stored)
    return clone(stored)
  }

  /**
   * Deletes a recipe as `kubectl delete` would: with finalizers it stays, marked with
   * `deletionTimestamp` (generation up), until the last one is removed; without, it is gone.
   */
  markRecipeDeleted(namespace: string, name: string, at = new Date().toISOString()): WorkflowRecipe | null {
    const k = key(namespace, name)
    const recipe = this.recipes.get(k)
    if (!recipe) return null
    if ((recipe.metadata.finalizers ?? []).length === 0) {
      this.recipes.delete(k)
      return null
    }
    if (!recipe.metadata.deletionTimestamp) {
      recipe.metadata.deletionTimestamp = at
      recipe.metadata.generation = (recipe.metadata.generation ?? 1) + 1
      recipe.metadata.resourceVersion = String(++this.rv)
    }
    return clone(recipe)
  }

  /** Writes more of a pod's log, as its container would: open followers get it at once. */
  appendPodLog(namespace: string, pod: string, text: string): void {
    const k = key(namespace, pod)
    this.logs.set(k, (this.logs.get(k) ?? '') + text)
    for (const follower of this.logFollowers.get(k) ?? []) follower.emit(text)
  }

  /** The pod's container ended: its followers' `done` resolve (or, given `error`, the connection failed: they reject). */
  endPodLog(namespace: string, pod: string, error?: Error): void {
    for (const follower of [...(this.logFollowers.get(key(namespace, pod)) ?? [])]) follower.end(error)
  }

  /** The API server ends every open Workflow watch: cleanly (a server-side close), or with `error` (410 Gone, say). */
  endWatches(error?: Error): void {
    for (const watchers of this.workflowWatchers.values()) for (const watcher of [...watchers]) watcher.end(error)
  }

  /** How many watchWorkflow streams are open (a page that stopped watching closed its stream). */
  get openWatches(): number {
    return [...this.workflowWatchers.values()].reduce((n, set) => n + set.size, 0)
  }

  recipe(namespace: string, name: string): WorkflowRecipe | undefined {
    const found = this.recipes.get(key(namespace, name))
    return found ? clone(found) : undefined
  }

  /** Stores a WorkflowRecipePolicy as a user would apply it (cluster-scoped). */
  putRecipePolicy(policy: WorkflowRecipePolicy): WorkflowRecipePolicy {
    const name = policy.metadata.name ?? ''
    const existing = this.recipePolicies.get(name)
    const stored = clone(policy)
    stored.metadata.uid ??= existing?.metadata.uid ?? `uid-recipepolicy-${name}`
    const specChanged = !existing || JSON.stringify(existing.spec) !== JSON.stringify(policy.spec)
    // Like the API server, the generation is never the writer's to set once the object exists.
    stored.metadata.generation = existing ? (existing.metadata.generation ?? 1) + (specChanged ? 1 : 0) : (policy.metadata.generation ?? 1)
    stored.metadata.resourceVersion = String(++this.rv)
    if (stored.status === undefined && existing?.status) stored.status = clone(existing.status)
    this.recipePolicies.set(name, stored)
    return clone(stored)
  }

  /** Stores a child as if someone else had created it (uid, generation 1 where the kind has one). */
  putChild(object: ChildObject): ChildObject {
    const kind = object.kind as ChildKind
    const k = childKey(kind, object.metadata?.namespace, object.metadata?.name)
    const stored = clone(object)
    stored.metadata = { ...stored.metadata, uid: stored.metadata?.uid ?? this.newUid(kind, object.metadata?.name), resourceVersion: String(++this.rv) }
    if (HAS_GENERATION.has(kind)) stored.metadata.generation ??= 1
    this.childObjects.set(k, stored)
    return clone(stored)
  }

  /** Sets a child's status as its controller would (no generation change). */
  setChildStatus(kind: ChildKind, namespace: string, name: string, status: unknown): ChildObject {
    const found = this.childObjects.get(childKey(kind, namespace, name))
    if (!found) throw new Error(`${kind} ${namespace}/${name} not found`)
    found.status = clone(status)
    found.metadata = { ...found.metadata, resourceVersion: String(++this.rv) }
    return clone(found)
  }

  child(kind: ChildKind, namespace: string, name: string): ChildObject | undefined {
    const found = this.childObjects.get(childKey(kind, namespace, name))
    return found ? clone(found) : undefined
  }

  /** Every stored child of one kind, in any namespace. */
  children(kind: ChildKind): ChildObject[] {
    return [...this.childObjects.values()].filter((c) => c.kind === kind).map(clone)
  }

  /** Makes every apply or create of this child throw RefusedError(message, code), as a 422/403/413 (or a 404 kind) would. */
  refuseApply(kind: ChildKind, namespace: string, name: string, code: number, message: string): this {
    this.refusals.set(childKey(kind, namespace, name), { code, message })
    return this
  }

  /** Ends a `refuseApply`. */
  allowApply(kind: ChildKind, namespace: string, name: string): this {
    this.refusals.delete(childKey(kind, namespace, name))
    return this
  }

  /** Removes a deleted child's finalizers, as its controller would; it is then gone. */
  releaseChild(kind: ChildKind, namespace: string, name: string): void {
    const k = childKey(kind, namespace, name)
    const found = this.childObjects.get(k)
    if (!found?.metadata) return
    found.metadata.finalizers = []
    if (found.metadata.deletionTimestamp) this.childObjects.delete(k)
  }

  private newUid(kind: string, name: string | undefined): string {
    return `uid-${kind.toLowerCase()}-${name ?? ''}-${++this.uids}`
  }

  workflow(namespace: string, name: string): Workflow {
    return clone(this.workflows.get(key(namespace, name))!)
  }

  async getWorkflow(namespace: string, name: string): Promise<Workflow | null> {
    this.enter('getWorkflow')
    const wf = this.workflows.get(key(namespace, name))
    return wf ? clone(wf) : null
  }

  async listWorkflows(): Promise<Workflow[]> {
    this.enter('listWorkflows')
    return [...this.workflows.values()].map(clone)
  }

  async listAgents(namespace: string): Promise<Agent[]> {
    this.enter('listAgents')
    return [...this.agents.values()].filter((a) => a.metadata.namespace === namespace).map(clone)
  }

  async getAgent(namespace: string, name: string): Promise<Agent | null> {
    this.enter('getAgent')
    const agent = this.agents.get(key(namespace, name))
    return agent ? clone(agent) : null
  }

  async listAllAgents(): Promise<Agent[]> {
    this.enter('listAllAgents')
    return [...this.agents.values()].map(clone)
  }

  async patchAgent(namespace: string, name: string, resourceVersion: string, patch: AgentPatch): Promise<Agent> {
    this.enter('patchAgent')
    const agent = this.guardedIn(this.agents, 'Agent', namespace, name, resourceVersion)
    const annotations = { ...(agent.metadata.annotations ?? {}) }
    for (const [k, v] of Object.entries(patch.metadata?.annotations ?? {})) {
      if (v === null) delete annotations[k]
      else annotations[k] = v
    }
    agent.metadata.annotations = annotations
    if (patch.metadata?.finalizers) agent.metadata.finalizers = patch.metadata.finalizers
    if (patch.spec) {
      agent.spec = mergePatch(agent.spec, patch.spec) as Agent['spec']
      agent.metadata.generation = (agent.metadata.generation ?? 1) + 1
    }
    agent.metadata.resourceVersion = String(++this.rv)
    this.record(`patch Agent/${name}`, patch)
    return clone(agent)
  }

  async replaceAgentStatus(namespace: string, name: string, resourceVersion: string, status: AgentStatus): Promise<Agent> {
    this.enter('replaceAgentStatus')
    const agent = this.guardedIn(this.agents, 'Agent', namespace, name, resourceVersion)
    agent.status = clone(status)
    agent.metadata.resourceVersion = String(++this.rv)
    this.record(`status Agent/${name}`, { status })
    return clone(agent)
  }

  async listAutonomyPolicies(namespace?: string): Promise<AgentAutonomyPolicy[]> {
    this.enter('listAutonomyPolicies')
    return [...this.policies.values()].filter((p) => namespace === undefined || p.metadata.namespace === namespace).map(clone)
  }

  async replaceAutonomyPolicyStatus(namespace: string, name: string, resourceVersion: string, status: AgentAutonomyPolicyStatus): Promise<AgentAutonomyPolicy> {
    this.enter('replaceAutonomyPolicyStatus')
    const policy = this.guardedIn(this.policies, 'AgentAutonomyPolicy', namespace, name, resourceVersion)
    policy.status = clone(status)
    policy.metadata.resourceVersion = String(++this.rv)
    this.record(`status AgentAutonomyPolicy/${name}`, { status })
    return clone(policy)
  }

  async getMemoryProvider(namespace: string, name: string): Promise<MemoryProvider | null> {
    this.enter('getMemoryProvider')
    const provider = this.memoryProviders.get(key(namespace, name))
    return provider ? clone(provider) : null
  }

  async getServiceAccount(namespace: string, name: string): Promise<V1ServiceAccount | null> {
    this.enter('getServiceAccount')
    return this.getFrom(this.serviceAccounts, namespace, name)
  }

  async createServiceAccount(serviceAccount: V1ServiceAccount): Promise<'created' | 'exists'> {
    this.enter('createServiceAccount')
    return this.createIn(this.serviceAccounts, 'ServiceAccount', serviceAccount)
  }

  async replaceServiceAccount(serviceAccount: V1ServiceAccount): Promise<V1ServiceAccount> {
    this.enter('replaceServiceAccount')
    return this.replaceIn(this.serviceAccounts, 'ServiceAccount', serviceAccount)
  }

  async deleteServiceAccount(namespace: string, name: string): Promise<void> {
    this.enter('deleteServiceAccount')
    if (this.serviceAccounts.delete(key(namespace, name))) this.writes.push(`delete ServiceAccount/${name}`)
  }

  async getRole(namespace: string, name: string): Promise<V1Role | null> {
    this.enter('getRole')
    return this.getFrom(this.roles, namespace, name)
  }

  async createRole(role: V1Role): Promise<'created' | 'exists'> {
    this.enter('createRole')
    return this.createIn(this.roles, 'Role', role)
  }

  async replaceRole(role: V1Role): Promise<V1Role> {
    this.enter('replaceRole')
    return this.replaceIn(this.roles, 'Role', role)
  }

  async getRoleBinding(namespace: string, name: string): Promise<V1RoleBinding | null> {
    this.enter('getRoleBinding')
    return this.getFrom(this.roleBindings, namespace, name)
  }

  async createRoleBinding(binding: V1RoleBinding): Promise<'created' | 'exists'> {
    this.enter('createRoleBinding')
    return this.createIn(this.roleBindings, 'RoleBinding', binding)
  }

  async replaceRoleBinding(binding: V1RoleBinding): Promise<V1RoleBinding> {
    this.enter('replaceRoleBinding')
    return this.replaceIn(this.roleBindings, 'RoleBinding', binding)
  }

  async listLLMProviders(namespace: string): Promise<LLMProvider[]> {
    this.enter('listLLMProviders')
    return [...this.providers.values()].filter((p) => p.metadata.namespace === namespace).map(clone)
  }

  async getLLMProvider(namespace: string, name: string): Promise<LLMProvider | null> {
    this.enter('getLLMProvider')
    return this.getFrom(this.providers, namespace, name)
  }

  async listAllLLMProviders(): Promise<LLMProvider[]> {
    this.enter('listAllLLMProviders')
    return [...this.providers.values()].map(clone)
  }

  async replaceLLMProviderStatus(namespace: string, name: string, resourceVersion: string, status: LLMProviderStatus): Promise<LLMProvider> {
    this.enter('replaceLLMProviderStatus')
    const provider = this.guardedIn(this.providers, 'LLMProvider', namespace, name, resourceVersion)
    provider.status = clone(status)
    provider.metadata.resourceVersion = String(++this.rv)
    this.record(`status LLMProvider/${name}`, { status })
    return clone(provider)
  }

  async getMCPServer(namespace: string, name: string): Promise<MCPServer | null> {
    this.enter('getMCPServer')
    return this.getFrom(this.mcpServers, namespace, name)
  }

  async listAllMCPServers(): Promise<MCPServer[]> {
    this.enter('listAllMCPServers')
    return [...this.mcpServers.values()].map(clone)
  }

  async patchMCPServerMetadata(
    namespace: string, name: string, resourceVersion: string,
    metadata: { finalizers?: string[]; annotations?: Record<string, string | null> },
  ): Promise<MCPServer> {
    this.enter('patchMCPServerMetadata')
    const server = this.guardedIn(this.mcpServers, 'MCPServer', namespace, name, resourceVersion)
    Object.assign(server, mergePatch(server, { metadata }))
    server.metadata.resourceVersion = String(++this.rv)
    this.record(`patch MCPServer/${name}`, { metadata })
    // As the API server does: the last finalizer gone from a deleted object removes it.
    if (server.metadata.deletionTimestamp && (server.metadata.finalizers ?? []).length === 0) {
      this.mcpServers.delete(key(namespace, name))
    }
    return clone(server)
  }

  async replaceMCPServerStatus(namespace: string, name: string, resourceVersion: string, status: MCPServerStatus): Promise<MCPServer> {
    this.enter('replaceMCPServerStatus')
    const server = this.guardedIn(this.mcpServers, 'MCPServer', namespace, name, resourceVersion)
    server.status = clone(status)
    server.metadata.resourceVersion = String(++this.rv)
    this.record(`status MCPServer/${name}`, { status })
    return clone(server)
  }

  async listAllMemoryProviders(): Promise<MemoryProvider[]> {
    this.enter('listAllMemoryProviders')
    return [...this.memoryProviders.values()].map(clone)
  }

  async replaceMemoryProviderStatus(namespace: string, name: string, resourceVersion: string, status: MemoryProviderStatus): Promise<MemoryProvider> {
    this.enter('replaceMemoryProviderStatus')
    const provider = this.guardedIn(this.memoryProviders, 'MemoryProvider', namespace, name, resourceVersion)
    provider.status = clone(status)
    provider.metadata.resourceVersion = String(++this.rv)
    this.record(`status MemoryProvider/${name}`, { status })
    return clone(provider)
  }

  async getDeployment(namespace: string, name: string): Promise<V1Deployment | null> {
    this.enter('getDeployment')
    return this.getFrom(this.deployments, namespace, name)
  }

  async createDeployment(deployment: V1Deployment): Promise<'created' | 'exists'> {
    this.enter('createDeployment')
    return this.createIn(this.deployments, 'Deployment', deployment)
  }

  async replaceDeployment(deployment: V1Deployment): Promise<V1Deployment> {
    this.enter('replaceDeployment')
    return this.replaceIn(this.deployments, 'Deployment', deployment)
  }

  async getService(namespace: string, name: string): Promise<V1Service | null> {
    this.enter('getService')
    return this.getFrom(this.services, namespace, name)
  }

  async createService(service: V1Service): Promise<'created' | 'exists'> {
    this.enter('createService')
    return this.createIn(this.services, 'Service', service)
  }

  async replaceService(service: V1Service): Promise<V1Service> {
    this.enter('replaceService')
    return this.replaceIn(this.services, 'Service', service)
  }

  async listPods(namespace: string, labels: Record<string, string>): Promise<V1Pod[]> {
    this.enter('listPods')
    return [...this.pods.values()]
      .filter((p) => p.metadata?.namespace === namespace && Object.entries(labels).every(([k, v]) => p.metadata?.labels?.[k] === v))
      .map(clone)
  }

  async getNamespace(name: string): Promise<V1Namespace | null> {
    this.enter('getNamespace')
    const found = this.namespaces.get(name)
    return found ? clone(found) : null
  }

  async listNamespaces(labels: Record<string, string>): Promise<V1Namespace[]> {
    this.enter('listNamespaces')
    return [...this.namespaces.values()]
      .filter((n) => Object.entries(labels).every(([k, v]) => n.metadata?.labels?.[k] === v))
      .map(clone)
  }

  async listAllConfigMaps(labels: Record<string, string>): Promise<V1ConfigMap[]> {
    this.enter('listAllConfigMaps')
    return [...this.configMaps.values()]
      .filter((c) => Object.entries(labels).every(([k, v]) => c.metadata?.labels?.[k] === v))
      .map(clone)
  }

  async listJobs(namespace: string, labels: Record<string, string>): Promise<V1Job[]> {
    this.enter('listJobs')
    return [...this.jobs.values()]
      .filter((j) => j.metadata?.namespace === namespace && Object.entries(labels).every(([k, v]) => j.metadata?.labels?.[k] === v))
      .map(clone)
  }

  async listJobsLabelled(namespace: string, labelKey: string): Promise<V1Job[]> {
    this.enter('listJobsLabelled')
    return [...this.jobs.values()].filter((j) => j.metadata?.namespace === namespace && j.metadata?.labels?.[labelKey] !== undefined).map(clone)
  }

  async createJob(job: V1Job): Promise<'created' | 'exists'> {
    this.enter('createJob')
    const k = key(job.metadata?.namespace, job.metadata?.name)
    if (this.jobs.has(k)) return 'exists'
    const stored = clone(job)
    stored.metadata!.resourceVersion = String(++this.rv)
    this.jobs.set(k, stored)
    this.createdJobs.push(job.metadata?.name ?? '')
    this.record(`create Job/${job.metadata?.name}`, stored)
    return 'created'
  }

  async deleteJob(namespace: string, name: string): Promise<void> {
    this.enter('deleteJob')
    if (this.jobs.delete(key(namespace, name))) this.writes.push(`delete Job/${name}`)
  }

  async readJobLog(namespace: string, jobName: string): Promise<string | null> {
    this.enter('readJobLog')
    return this.logs.get(key(namespace, jobName)) ?? null
  }

  async readStepReport(namespace: string, jobName: string): Promise<StepReport | null> {
    this.enter('readStepReport')
    const text = this.logs.get(key(namespace, jobName))
    return text === undefined ? null : { text }
  }

  async getConfigMap(namespace: string, name: string): Promise<V1ConfigMap | null> {
    this.enter('getConfigMap')
    const configMap = this.configMaps.get(key(namespace, name))
    return configMap ? clone(configMap) : null
  }

  async listConfigMaps(namespace: string, labels: Record<string, string>): Promise<V1ConfigMap[]> {
    this.enter('listConfigMaps')
    return [...this.configMaps.values()]
      .filter((c) => c.metadata?.namespace === namespace && Object.entries(labels).every(([k, v]) => c.metadata?.labels?.[k] === v))
      .map(clone)
  }

  async createConfigMap(configMap: V1ConfigMap): Promise<'created' | 'exists'> {
    this.enter('createConfigMap')
    const k = key(configMap.metadata?.namespace, configMap.metadata?.name)
    if (this.configMaps.has(k)) return 'exists'
    const stored = clone(configMap)
    stored.metadata!.resourceVersion = String(++this.rv)
    this.configMaps.set(k, stored)
    this.record(`create ConfigMap/${configMap.metadata?.name}`, stored)
    return 'created'
  }

  async replaceConfigMap(configMap: V1ConfigMap): Promise<V1ConfigMap> {
    this.enter('replaceConfigMap')
    const k = key(configMap.metadata?.namespace, configMap.metadata?.name)
    const current = this.configMaps.get(k)
    if (!current || current.metadata?.resourceVersion !== configMap.metadata?.resourceVersion) {
      throw new ConflictError(`ConfigMap ${configMap.metadata?.name} was modified`)
    }
    const stored = clone(configMap)
    stored.metadata!.resourceVersion = String(++this.rv)
    this.configMaps.set(k, stored)
    this.record(`replace ConfigMap/${configMap.metadata?.name}`, stored)
    return clone(stored)
  }

  async getSecret(namespace: string, name: string): Promise<V1Secret | null> {
    this.enter('getSecret')
    const secret = this.secrets.get(key(namespace, name))
    return secret ? clone(secret) : null
  }

  async createSecret(secret: V1Secret): Promise<'created' | 'exists'> {
    this.enter('createSecret')
    const k = key(secret.metadata?.namespace, secret.metadata?.name)
    if (this.secrets.has(k)) return 'exists'
    const stored = clone(secret)
    stored.metadata = { ...stored.metadata, resourceVersion: String(++this.rv) }
    this.secrets.set(k, stored)
    this.writes.push(`create Secret/${secret.metadata?.name}`)
    return 'created'
  }

  async replaceSecret(secret: V1Secret): Promise<V1Secret> {
    this.enter('replaceSecret')
    const k = key(secret.metadata?.namespace, secret.metadata?.name)
    const current = this.secrets.get(k)
    if (!current || current.metadata?.resourceVersion !== secret.metadata?.resourceVersion) {
      throw new ConflictError(`Secret ${secret.metadata?.name} was modified`)
    }
    const stored = clone(secret)
    stored.metadata = { ...stored.metadata, resourceVersion: String(++this.rv) }
    this.secrets.set(k, stored)
    this.writes.push(`replace Secret/${secret.metadata?.name}`)
    return clone(stored)
  }

  async patchWorkflowMetadata(
    namespace: string, name: string, resourceVersion: string,
    metadata: { annotations?: Record<string, string | null>; finalizers?: string[] },
  ): Promise<Workflow> {
    this.enter('patchWorkflowMetadata')
    const wf = this.guarded(namespace, name, resourceVersion)
    const annotations = { ...(wf.metadata.annotations ?? {}) }
    for (const [k, v] of Object.entries(metadata.annotations ?? {})) {
      if (v === null) delete annotations[k]
      else annotations[k] = v
    }
    wf.metadata.annotations = annotations
    if (metadata.finalizers) wf.metadata.finalizers = metadata.finalizers
    wf.metadata.resourceVersion = String(++this.rv)
    this.record(`annotate Workflow/${name}`, { metadata })
    this.notifyWorkflow(key(namespace, name))
    return clone(wf)
  }

  async patchWorkflowStatus(namespace: string, name: string, resourceVersion: string, status: WorkflowStatus): Promise<Workflow> {
    this.enter('patchWorkflowStatus')
    const wf = this.guarded(namespace, name, resourceVersion)
    wf.status = clone(status)
    wf.metadata.resourceVersion = String(++this.rv)
    this.record(`status Workflow/${name}`, { metadata: { name, namespace, resourceVersion }, status })
    this.notifyWorkflow(key(namespace, name))
    return clone(wf)
  }

  async createWorkflow(workflow: Workflow): Promise<Workflow | 'exists'> {
    this.enter('createWorkflow')
    const k = key(workflow.metadata.namespace, workflow.metadata.name)
    if (this.workflows.has(k)) return 'exists'
    const { status: _status, ...rest } = clone(workflow)
    const stored = WorkflowSchema.parse(rest)
    stored.metadata.uid = this.newUid('Workflow', workflow.metadata.name)
    stored.metadata.generation = 1
    stored.metadata.creationTimestamp ??= new Date().toISOString()
    stored.metadata.resourceVersion = String(++this.rv)
    this.workflows.set(k, stored)
    this.record(`create Workflow/${workflow.metadata.name}`, stored)
    this.notifyWorkflow(k)
    return clone(stored)
  }

  async listWorkflowsIn(namespace: string, labels: Record<string, string>): Promise<Workflow[]> {
    this.enter('listWorkflowsIn')
    return [...this.workflows.values()]
      .filter((wf) => wf.metadata.namespace === namespace && Object.entries(labels).every(([k, v]) => wf.metadata.labels?.[k] === v))
      .map(clone)
  }

  async deleteWorkflow(namespace: string, name: string, options: { uid?: string } = {}): Promise<void> {
    this.enter('deleteWorkflow')
    const k = key(namespace, name)
    const wf = this.workflows.get(k)
    if (!wf || (options.uid && wf.metadata.uid !== options.uid)) return
    this.workflows.delete(k)
    this.record(`delete Workflow/${name}`, {})
    this.notifyWorkflow(k)
  }

  async patchWorkflow(
    namespace: string, name: string, resourceVersion: string,
    patch: { annotations?: Record<string, string | null>; parameters?: Record<string, string | null> },
  ): Promise<Workflow> {
    this.enter('patchWorkflow')
    const wf = this.guarded(namespace, name, resourceVersion)
    const merge = (into: Record<string, string>, changes: Record<string, string | null> | undefined) => {
      for (const [k, v] of Object.entries(changes ?? {})) {
        if (v === null) delete into[k]
        else into[k] = v
      }
      return into
    }
    wf.metadata.annotations = merge({ ...(wf.metadata.annotations ?? {}) }, patch.annotations)
    if (patch.parameters) {
      wf.spec.parameters = merge({ ...(wf.spec.parameters ?? {}) }, patch.parameters)
      wf.metadata.generation = (wf.metadata.generation ?? 1) + 1
    }
    wf.metadata.resourceVersion = String(++this.rv)
    this.record(`patch Workflow/${name}`, { patch })
    this.notifyWorkflow(key(namespace, name))
    return clone(wf)
  }

  async listEvents(namespace: string, involved: { kind: string; name: string }): Promise<CoreV1Event[]> {
    this.enter('listEvents')
    return this.events
      .filter((e) => (e.metadata?.namespace ?? e.involvedObject?.namespace) === namespace && e.involvedObject?.kind === involved.kind && e.involvedObject?.name === involved.name)
      .map(clone)
  }

  async createEvent(event: CoreV1Event): Promise<void> {
    this.enter('createEvent')
    if (this.events.some((e) => e.metadata?.name === event.metadata?.name)) return
    this.events.push(clone(event))
  }

  async getRecipe(namespace: string, name: string): Promise<WorkflowRecipe | null> {
    this.enter('getRecipe')
    return this.getFrom(this.recipes, namespace, name)
  }

  async listAllRecipes(): Promise<WorkflowRecipe[]> {
    this.enter('listAllRecipes')
    return [...this.recipes.values()].map(clone)
  }

  async patchRecipeMetadata(
    namespace: string, name: string, resourceVersion: string,
    metadata: { finalizers?: string[]; annotations?: Record<string, string | null> },
  ): Promise<WorkflowRecipe> {
    this.enter('patchRecipeMetadata')
    const recipe = this.guardedIn(this.recipes, 'WorkflowRecipe', namespace, name, resourceVersion)
    Object.assign(recipe, mergePatch(recipe, { metadata }))
    recipe.metadata.resourceVersion = String(++this.rv)
    this.record(`patch WorkflowRecipe/${name}`, { metadata })
    // As the API server does: the last finalizer gone from a deleted object removes it.
    if (recipe.metadata.deletionTimestamp && (recipe.metadata.finalizers ?? []).length === 0) {
      this.recipes.delete(key(namespace, name))
    }
    return clone(recipe)
  }

  async replaceRecipeStatus(namespace: string, name: string, resourceVersion: string, status: WorkflowRecipeStatus): Promise<WorkflowRecipe> {
    this.enter('replaceRecipeStatus')
    const recipe = this.guardedIn(this.recipes, 'WorkflowRecipe', namespace, name, resourceVersion)
    checkStatus(WorkflowRecipeStatusSchema, status, `WorkflowRecipe ${namespace}/${name}`)
    recipe.status = clone(status)
    recipe.metadata.resourceVersion = String(++this.rv)
    this.record(`status WorkflowRecipe/${name}`, { status })
    return clone(recipe)
  }

  async listRecipePolicies(): Promise<WorkflowRecipePolicy[]> {
    this.enter('listRecipePolicies')
    return [...this.recipePolicies.values()].map(clone)
  }

  async getRecipePolicy(name: string): Promise<WorkflowRecipePolicy | null> {
    this.enter('getRecipePolicy')
    const found = this.recipePolicies.get(name)
    return found ? clone(found) : null
  }

  async replaceRecipePolicyStatus(name: string, resourceVersion: string, status: WorkflowRecipePolicyStatus): Promise<WorkflowRecipePolicy> {
    this.enter('replaceRecipePolicyStatus')
    const policy = this.recipePolicies.get(name)
    if (!policy) throw new Error(`WorkflowRecipePolicy ${name} not found`)
    if (policy.metadata.resourceVersion !== resourceVersion) throw new ConflictError(`WorkflowRecipePolicy ${name}: the object has been modified`)
    checkStatus(WorkflowRecipePolicyStatusSchema, status, `WorkflowRecipePolicy ${name}`)
    policy.status = clone(status)
    policy.metadata.resourceVersion = String(++this.rv)
    this.record(`status WorkflowRecipePolicy/${name}`, { status })
    return clone(policy)
  }

  async getChild(kind: ChildKind, namespace: string, name: string): Promise<ChildObject | null> {
    this.enter('getChild')
    return this.child(kind, namespace, name) ?? null
  }

  async listChildren(kind: ChildKind, namespace: string, labels: Record<string, string>): Promise<ChildObject[]> {
    this.enter('listChildren')
    return [...this.childObjects.values()]
      .filter((c) => c.kind === kind && c.metadata?.namespace === namespace && Object.entries(labels).every(([k, v]) => c.metadata?.labels?.[k] === v))
      .map(clone)
  }

  /**
   * Server-side apply with one field manager: labels and annotations merge over the live ones,
   * every other top-level field is the applied one, status stays the controller's. Generation
   * goes up when the spec changes; an apply that changes nothing writes nothing.
   */
  async applyChild(manifest: ChildObject): Promise<ChildObject> {
    this.enter('applyChild')
    const kind = manifest.kind as ChildKind
    const namespace = manifest.metadata?.namespace
    const name = manifest.metadata?.name
    const k = childKey(kind, namespace, name)
    const refusal = this.refusals.get(k)
    if (refusal) throw new RefusedError(refusal.message, refusal.code)
    const live = this.childObjects.get(k)
    const { status: _ignored, ...applied } = clone(manifest)
    if (!live) {
      const stored: ChildObject = { ...applied, metadata: { ...applied.metadata, uid: this.newUid(kind, name), resourceVersion: String(++this.rv) } }
      if (HAS_GENERATION.has(kind)) stored.metadata!.generation = 1
      this.childObjects.set(k, stored)
      this.record(`apply ${kind}/${name}`, stored)
      return clone(stored)
    }
    const metadata = {
      ...live.metadata,
      ...applied.metadata,
      labels: { ...(live.metadata?.labels ?? {}), ...(applied.metadata?.labels ?? {}) },
      annotations: { ...(live.metadata?.annotations ?? {}), ...(applied.metadata?.annotations ?? {}) },
      uid: live.metadata?.uid,
      generation: live.metadata?.generation,
      resourceVersion: live.metadata?.resourceVersion,
    }
    if (Object.keys(metadata.labels).length === 0) delete (metadata as { labels?: unknown }).labels
    if (Object.keys(metadata.annotations).length === 0) delete (metadata as { annotations?: unknown }).annotations
    if (metadata.generation === undefined) delete metadata.generation
    const next: ChildObject = { ...applied, metadata, ...(live.status !== undefined ? { status: live.status } : {}) }
    if (JSON.stringify(next) === JSON.stringify(live)) return clone(live)
    if (HAS_GENERATION.has(kind) && JSON.stringify(next.spec) !== JSON.stringify(live.spec)) {
      next.metadata!.generation = (live.metadata?.generation ?? 1) + 1
    }
    next.metadata!.resourceVersion = String(++this.rv)
    this.childObjects.set(k, next)
    this.record(`apply ${kind}/${name}`, next)
    return clone(next)
  }

  async createChild(manifest: ChildObject): Promise<ChildObject> {
    this.enter('createChild')
    const kind = manifest.kind as ChildKind
    const name = manifest.metadata?.name
    const k = childKey(kind, manifest.metadata?.namespace, name)
    if (this.childObjects.has(k)) throw new ConflictError(`${kind} ${name} already exists`)
    const refusal = this.refusals.get(k)
    if (refusal) throw new RefusedError(refusal.message, refusal.code)
    const { status: _ignored, ...created } = clone(manifest)
    const stored: ChildObject = { ...created, metadata: { ...created.metadata, uid: this.newUid(kind, name), resourceVersion: String(++this.rv) } }
    if (HAS_GENERATION.has(kind)) stored.metadata!.generation = 1
    this.childObjects.set(k, stored)
    this.record(`create ${kind}/${name}`, stored)
    return clone(stored)
  }

  /** JSON merge patch (RFC 7386) guarded by resourceVersion. */
  async patchChild(kind: ChildKind, namespace: string, name: string, resourceVersion: string, patch: Record<string, unknown>): Promise<ChildObject> {
    this.enter('patchChild')
    const k = childKey(kind, namespace, name)
    const live = this.childObjects.get(k)
    if (!live) throw new ConflictError(`${kind} ${name} no longer exists`)
    if (live.metadata?.resourceVersion !== resourceVersion) throw new ConflictError(`${kind} ${name}: the object has been modified`)
    const next = mergePatch(live, patch) as ChildObject
    if (HAS_GENERATION.has(kind) && JSON.stringify(next.spec) !== JSON.stringify(live.spec)) next.metadata!.generation = (live.metadata?.generation ?? 1) + 1
    next.metadata!.resourceVersion = String(++this.rv)
    this.childObjects.set(k, next)
    this.record(`patch ${kind}/${name}`, patch)
    return clone(next)
  }

  async deleteChild(
    kind: ChildKind, namespace: string, name: string, options: { propagationPolicy: 'Foreground' | 'Background'; uid?: string; resourceVersion?: string },
  ): Promise<void> {
    this.enter('deleteChild')
    const k = childKey(kind, namespace, name)
    const live = this.childObjects.get(k)
    // Gone, or a different object now holds the name: the one meant is gone either way.
    if (!live || (options.uid !== undefined && live.metadata?.uid !== options.uid)) return
    if (options.resourceVersion !== undefined && live.metadata?.resourceVersion !== options.resourceVersion) {
      throw new ConflictError(`${kind} ${name}: the object has been modified`)
    }
    this.writes.push(`delete ${kind}/${name}`)
    if ((live.metadata?.finalizers ?? []).length > 0) {
      if (!live.metadata!.deletionTimestamp) {
        live.metadata!.deletionTimestamp = new Date().toISOString()
        live.metadata!.resourceVersion = String(++this.rv)
      }
      return
    }
    this.childObjects.delete(k)
  }

  async deleteConfigMap(namespace: string, name: string): Promise<void> {
    this.enter('deleteConfigMap')
    if (this.configMaps.delete(key(namespace, name))) this.writes.push(`delete ConfigMap/${name}`)
  }

  /**
   * Notifies `onChange` of the fake's own writes of that Workflow (null when deleted); a stored
   * version newer than `resourceVersion` is delivered first, as a watch from an older version
   * replays it. `endWatches` plays the server closing the watch.
   */
  async watchWorkflow(namespace: string, name: string, resourceVersion: string, onChange: (workflow: Workflow | null) => void): Promise<StreamHandle> {
    this.enter('watchWorkflow')
    const k = key(namespace, name)
    const watchers = this.workflowWatchers.get(k) ?? new Set()
    this.workflowWatchers.set(k, watchers)
    const stream = new FakeStream<Workflow | null>(onChange, () => watchers.delete(stream))
    watchers.add(stream)
    const current = this.workflows.get(k)
    if (current && Number(current.metadata.resourceVersion) > Number(resourceVersion)) stream.emit(clone(current))
    return stream.handle
  }

  /**
   * The pod's log from `logs` (by pod name, else by the Job named in its job-name label),
   * tailLines and limitBytes applied. A Running pod in `pods` stays followed (appendPodLog,
   * endPodLog); any other ends after what is there. A 404 without log or pod.
   */
  async followPodLog(
    namespace: string, pod: string, options: { container?: string; tailLines?: number; limitBytes?: number }, onChunk: (text: string) => void,
  ): Promise<StreamHandle> {
    this.enter('followPodLog')
    const k = key(namespace, pod)
    const podObject = this.pods.get(k)
    const job = podObject?.metadata?.labels?.['job-name']
    const text = this.logs.get(k) ?? (job ? this.logs.get(key(namespace, job)) : undefined)
    if (text === undefined && !podObject) throw new Error(`Could not follow log of pod ${namespace}/${pod}: not found`)
    let shown = text ?? ''
    if (options.tailLines !== undefined) shown = shown.split(/(?<=\n)/).slice(-options.tailLines).join('')
    if (options.limitBytes !== undefined) shown = Buffer.from(shown).subarray(0, options.limitBytes).toString()
    const followers = this.logFollowers.get(k) ?? new Set()
    this.logFollowers.set(k, followers)
    const stream = new FakeStream<string>(onChunk, () => followers.delete(stream))
    followers.add(stream)
    if (shown !== '') stream.emit(shown)
    if (podObject?.status?.phase !== 'Running') stream.end()
    return stream.handle
  }

  async listMCPServers(namespace: string): Promise<MCPServer[]> {
    this.enter('listMCPServers')
    return [...this.mcpServers.values()].filter((m) => m.metadata.namespace === namespace).map(clone)
  }

  private notifyWorkflow(k: string): void {
    const wf = this.workflows.get(k)
    for (const watcher of this.workflowWatchers.get(k) ?? []) watcher.emit(wf ? clone(wf) : null)
  }

  async listRecipes(options: { namespace?: string; labelSelector?: string; limit?: number; continue?: string }): Promise<{ items: WorkflowRecipe[]; continue?: string }> {
    this.enter('listRecipes')
    const matches = labelMatcher(options.labelSelector ?? '')
    const after = options.continue ? Buffer.from(options.continue, 'base64url').toString() : ''
    const all = [...this.recipes.entries()]
      .filter(([, r]) => (options.namespace === undefined || r.metadata.namespace === options.namespace) && matches(r.metadata.labels ?? {}))
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .filter(([k]) => k > after)
    const page = options.limit ? all.slice(0, options.limit) : all
    const more = page.length < all.length
    return {
      items: page.map(([, r]) => clone(r)),
      ...(more ? { continue: Buffer.from(page[page.length - 1]![0]).toString('base64url') } : {}),
    }
  }

  /** As the API server: the CRD schema refuses with 422 and causes; a dry run stores nothing. */
  async createRecipe(recipe: WorkflowRecipe, options: { dryRun?: boolean } = {}): Promise<WorkflowRecipe | 'exists'> {
    this.enter('createRecipe')
    const { namespace, name } = recipe.metadata
    const k = key(namespace, name)
    if (this.recipes.has(k)) return 'exists'
    checkRecipe(recipe)
    const { status: _ignored, ...body } = clone(recipe)
    const stored: WorkflowRecipe = {
      ...body,
      metadata: {
        ...body.metadata, uid: `uid-recipe-${name}`, generation: 1, resourceVersion: String(this.rv + 1),
        creationTimestamp: body.metadata.creationTimestamp ?? new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'),
      },
    }
    if (options.dryRun) {
      this.dryRuns.push(`create WorkflowRecipe/${name}`)
      return clone(stored)
    }
    this.rv++
    this.recipes.set(k, stored)
    this.record(`create WorkflowRecipe/${name}`, stored)
    return clone(stored)
  }

  /** Guarded by resourceVersion; uid, generation (up when the spec changes) and status stay the server's. */
  async replaceRecipe(recipe: WorkflowRecipe, options: { dryRun?: boolean } = {}): Promise<WorkflowRecipe> {
    this.enter('replaceRecipe')
    const { namespace, name } = recipe.metadata
    const k = key(namespace, name)
    const live = this.recipes.get(k)
    if (!live || live.metadata.resourceVersion !== recipe.metadata.resourceVersion) {
      throw new ConflictError(`WorkflowRecipe ${namespace}/${name}: the object has been modified`)
    }
    checkRecipe(recipe)
    const { status: _ignored, ...body } = clone(recipe)
    const specChanged = JSON.stringify(body.spec) !== JSON.stringify(live.spec)
    const stored: WorkflowRecipe = {
      ...body,
      metadata: {
        ...body.metadata,
        uid: live.metadata.uid,
        creationTimestamp: live.metadata.creationTimestamp,
        ...(live.metadata.deletionTimestamp ? { deletionTimestamp: live.metadata.deletionTimestamp } : {}),
        generation: (live.metadata.generation ?? 1) + (specChanged ? 1 : 0),
        resourceVersion: String(this.rv + 1),
      },
      ...(live.status !== undefined ? { status: clone(live.status) } : {}),
    }
    if (stored.metadata.creationTimestamp === undefined) delete stored.metadata.creationTimestamp
    if (options.dryRun) {
      this.dryRuns.push(`replace WorkflowRecipe/${name}`)
      return clone(stored)
    }
    this.rv++
    this.recipes.set(k, stored)
    this.record(`replace WorkflowRecipe/${name}`, stored)
    return clone(stored)
  }

  async deleteRecipe(namespace: string, name: string): Promise<boolean> {
    this.enter('deleteRecipe')
    if (!this.recipes.has(key(namespace, name))) return false
    this.writes.push(`delete WorkflowRecipe/${name}`)
    this.markRecipeDeleted(namespace, name)
    return true
  }

  private record(what: string, stored: unknown): void {
    this.writes.push(what)
    const bytes = Buffer.byteLength(JSON.stringify(stored))
    if (bytes > this.largestWrite.bytes) this.largestWrite = { bytes, what }
  }

  private getFrom<T>(store: Map<string, T>, namespace: string, name: string): T | null {
    const found = store.get(key(namespace, name))
    return found ? clone(found) : null
  }

  private createIn<T extends { metadata?: { name?: string; namespace?: string; resourceVersion?: string } }>(store: Map<string, T>, kind: string, object: T): 'created' | 'exists' {
    const k = key(object.metadata?.namespace, object.metadata?.name)
    if (store.has(k)) return 'exists'
    const stored = clone(object)
    stored.metadata = { ...stored.metadata, resourceVersion: String(++this.rv) }
    store.set(k, stored)
    this.record(`create ${kind}/${object.metadata?.name}`, stored)
    return 'created'
  }

  private replaceIn<T extends { metadata?: { name?: string; namespace?: string; resourceVersion?: string } }>(store: Map<string, T>, kind: string, object: T): T {
    const k = key(object.metadata?.namespace, object.metadata?.name)
    const current = store.get(k)
    if (!current || current.metadata?.resourceVersion !== object.metadata?.resourceVersion) {
      throw new ConflictError(`${kind} ${object.metadata?.name} was modified`)
    }
    const stored = clone(object)
    stored.metadata = { ...stored.metadata, resourceVersion: String(++this.rv) }
    store.set(k, stored)
    this.record(`replace ${kind}/${object.metadata?.name}`, stored)
    return clone(stored)
  }

  private guardedIn<T extends { metadata: { resourceVersion?: string } }>(store: Map<string, T>, kind: string, namespace: string, name: string, resourceVersion: string): T {
    const found = store.get(key(namespace, name))
    if (!found) throw new Error(`${kind} ${namespace}/${name} not found`)
    if (found.metadata.resourceVersion !== resourceVersion) {
      throw new ConflictError(`${kind} ${namespace}/${name}: the object has been modified`)
    }
    return found
  }

  private guarded(namespace: string, name: string, resourceVersion: string): Workflow {
    const wf = this.workflows.get(key(namespace, name))
    if (!wf) throw new Error(`Workflow ${namespace}/${name} not found`)
    if (wf.metadata.resourceVersion !== resourceVersion) {
      throw new ConflictError(`Workflow ${namespace}/${name}: the object has been modified`)
    }
    return wf
  }
}

/** The child kinds whose objects carry metadata.generation (as on the real API server). */
const HAS_GENERATION = new Set<ChildKind>(['Deployment', 'StatefulSet', 'DaemonSet', 'Job', 'CronJob', 'MCPServer', 'Workflow'])

/** The port's verbs, as FakeKubeCore and the review stand-ins provide them. */
interface FakeKubeCore extends Omit<Kube, 'reviewToken' | 'reviewAccess' | 'reviewSelfAccess' | 'whoAmI'> {}

/**
 * An in-memory Kube that behaves like the API server where it matters to the engine:
 * resourceVersion-guarded writes (ConflictError), AlreadyExists on create, objects copied in
 * and out, and every write recorded in order. `failNext` injects one error into a method.
 */
export class FakeKube extends withReviewStandIns(FakeKubeCore) implements Kube {}

function childKey(kind: string | undefined, namespace: string | undefined, name: string | undefined): string {
  return `${kind ?? ''}/${namespace ?? ''}/${name ?? ''}`
}

/** What the CRD's status schema would refuse with a 422, refused here too. */
function checkStatus(schema: { safeParse(v: unknown): { success: boolean; error?: { issues: Array<{ message: string; path: PropertyKey[] }> } } }, status: unknown, what: string): void {
  const result = schema.safeParse(status)
  if (!result.success) {
    const issue = result.error?.issues[0]
    throw new Error(`${what} is invalid: status.${issue?.path.map(String).join('.') ?? ''}: ${issue?.message ?? 'invalid'}`)
  }
}

/** What the CRD's schema would refuse with a 422, refused here too, with the causes the API server gives. */
function checkRecipe(recipe: WorkflowRecipe): void {
  const result = WorkflowRecipeSchema.safeParse(recipe)
  if (result.success) return
  const causes = result.error.issues.map((issue) => ({ field: issue.path.map(String).join('.'), message: issue.message }))
  const name = recipe.metadata.name ?? ''
  throw new RefusedError(
    `WorkflowRecipe.purko.io "${name}" is invalid: ${causes.map((c) => `${c.field}: ${c.message}`).join(', ')}`,
    422, { causes },
  )
}

/** Equality-based label selectors (`a=b`, `a==b`, `a!=b`, `a`, `!a`), comma-separated, all must hold. */
function labelMatcher(selector: string): (labels: Record<string, string>) => boolean {
  const terms = selector.split(',').map((t) => t.trim()).filter(Boolean).map((term) => {
    // As the API server: a requirement it cannot parse is a 400.
    if (!/^!?[A-Za-z0-9._/-]+((==?|!=)[A-Za-z0-9._-]*)?$/.test(term)) throw new RefusedError(`unable to parse requirement: ${JSON.stringify(term)}`, 400)
    const ne = /^([^!=]+)!=(.*)$/.exec(term)
    if (ne) return (l: Record<string, string>) => l[ne[1]!.trim()] !== ne[2]!.trim()
    const eq = /^([^!=]+)==?(.*)$/.exec(term)
    if (eq) return (l: Record<string, string>) => l[eq[1]!.trim()] === eq[2]!.trim()
    if (term.startsWith('!')) return (l: Record<string, string>) => !(term.slice(1).trim() in l)
    return (l: Record<string, string>) => term in l
  })
  return (labels) => terms.every((t) => t(labels))
}

/** One open fake stream: delivers while open; `done` settles once (stop, end, or end with an error). */
class FakeStream<T> {
  private open = true
  private resolve!: () => void
  private reject!: (err: Error) => void
  readonly done = new Promise<void>((res, rej) => { this.resolve = res; this.reject = rej })
  readonly handle: StreamHandle

  constructor(private readonly deliver: (value: T) => void, private readonly forget: () => void) {
    this.done.catch(() => {})
    this.handle = { stop: () => this.end(), done: this.done }
  }

  emit(value: T): void {
    if (this.open) this.deliver(value)
  }

  end(error?: Error): void {
    if (!this.open) return
    this.open = false
    this.forget()
    if (error) this.reject(error)
    else this.resolve()
  }
}

function key(namespace: string | undefined, name: string | undefined): string {
  return `${namespace ?? ''}/${name ?? ''}`
}

/** RFC 7386: objects merge, null deletes, anything else replaces. */
function mergePatch(target: unknown, patch: unknown): unknown {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return clone(patch)
  const out: Record<string, unknown> = target && typeof target === 'object' && !Array.isArray(target) ? { ...(target as Record<string, unknown>) } : {}
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k]
    else out[k] = mergePatch(out[k], v)
  }
  return out
}

function clone<T>(value: T): T {
  return structuredClone(value)
}

