import type { CoreV1Event, V1ConfigMap, V1Job, V1Secret } from '@kubernetes/client-node'
import { ConflictError } from '../../shared/errors.js'
import type { Kube } from '../../shared/kube/port.js'
import type { Agent } from '../../shared/schemas/agent.js'
import type { LLMProvider } from '../../shared/schemas/llmprovider.js'
import type { MCPServer } from '../../shared/schemas/mcpserver.js'
import { WorkflowSchema, type Workflow, type WorkflowStatus } from '../../shared/schemas/workflow.js'

type Method = keyof Kube

/**
 * An in-memory Kube that behaves like the API server where it matters to the engine:
 * resourceVersion-guarded writes (ConflictError), AlreadyExists on create, objects copied in
 * and out, and every write recorded in order. `failNext` injects one error into a method.
 */
export class FakeKube implements Kube {
  private rv = 1
  readonly workflows = new Map<string, Workflow>()
  readonly agents = new Map<string, Agent>()
  readonly providers = new Map<string, LLMProvider>()
  readonly mcpServers = new Map<string, MCPServer>()
  readonly jobs = new Map<string, V1Job>()
  readonly logs = new Map<string, string>()
  readonly configMaps = new Map<string, V1ConfigMap>()
  readonly secrets = new Map<string, V1Secret>()
  readonly events: CoreV1Event[] = []
  /** Every write that took effect, e.g. `create Job/wf-a-xxxx`, `status Workflow/wf`. */
  readonly writes: string[] = []
  /** Job names ever created, in order (the exactly-once evidence). */
  readonly createdJobs: string[] = []
  calls = 0
  /** Size in bytes of the largest object any write stored, and which one it was. */
  largestWrite = { bytes: 0, what: '' }
  private readonly faults = new Map<Method, Error[]>()

  constructor(objects: { workflows?: Workflow[]; agents?: Agent[]; providers?: LLMProvider[] } = {}) {
    for (const wf of objects.workflows ?? []) this.putWorkflow(wf)
    for (const agent of objects.agents ?? []) this.agents.set(key(agent.metadata.namespace, agent.metadata.name), clone(agent))
    for (const p of objects.providers ?? []) this.providers.set(key(p.metadata.namespace, p.metadata.name), clone(p))
  }

  /** Makes the next call of `method` throw `error` (queue several by calling again). */
  failNext(method: Method, error: Error): this {
    this.faults.set(method, [...(this.faults.get(method) ?? []), error])
    return this
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
    return clone(stored)
  }

  /** Changes annotations as `kubectl annotate` would (no generation bump). */
  annotate(namespace: string, name: string, annotations: Record<string, string>): Workflow {
    const wf = this.workflows.get(key(namespace, name))!
    wf.metadata.annotations = { ...(wf.metadata.annotations ?? {}), ...annotations }
    wf.metadata.resourceVersion = String(++this.rv)
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

  workflow(namespace: string, name: string): Workflow {
    return clone(this.workflows.get(key(namespace, name))!)
  }

  private enter(method: Method): void {
    this.calls++
    const queue = this.faults.get(method)
    const fault = queue?.shift()
    if (queue && queue.length === 0) this.faults.delete(method)
    if (fault) throw fault
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

  async listLLMProviders(namespace: string): Promise<LLMProvider[]> {
    this.enter('listLLMProviders')
    return [...this.providers.values()].filter((p) => p.metadata.namespace === namespace).map(clone)
  }

  async listMCPServers(namespace: string): Promise<MCPServer[]> {
    this.enter('listMCPServers')
    return [...this.mcpServers.values()].filter((m) => m.metadata.namespace === namespace).map(clone)
  }

  async listJobs(namespace: string, labels: Record<string, string>): Promise<V1Job[]> {
    this.enter('listJobs')
    return [...this.jobs.values()]
      .filter((j) => j.metadata?.namespace === namespace && Object.entries(labels).every(([k, v]) => j.metadata?.labels?.[k] === v))
      .map(clone)
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
    return clone(wf)
  }

  async patchWorkflowStatus(namespace: string, name: string, resourceVersion: string, status: WorkflowStatus): Promise<Workflow> {
    this.enter('patchWorkflowStatus')
    const wf = this.guarded(namespace, name, resourceVersion)
    wf.status = clone(status)
    wf.metadata.resourceVersion = String(++this.rv)
    this.record(`status Workflow/${name}`, { metadata: { name, namespace, resourceVersion }, status })
    return clone(wf)
  }

  async createEvent(event: CoreV1Event): Promise<void> {
    this.enter('createEvent')
    if (this.events.some((e) => e.metadata?.name === event.metadata?.name)) return
    this.events.push(clone(event))
  }

  private record(what: string, stored: unknown): void {
    this.writes.push(what)
    const bytes = Buffer.byteLength(JSON.stringify(stored))
    if (bytes > this.largestWrite.bytes) this.largestWrite = { bytes, what }
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

function key(namespace: string | undefined, name: string | undefined): string {
  return `${namespace ?? ''}/${name ?? ''}`
}

function clone<T>(value: T): T {
  return structuredClone(value)
}
