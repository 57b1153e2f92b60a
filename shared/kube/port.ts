import type { CoreV1Event, V1ConfigMap, V1Job, V1Secret } from '@kubernetes/client-node'
import type { Agent } from '../schemas/agent.js'
import type { LLMProvider } from '../schemas/llmprovider.js'
import type { MCPServer } from '../schemas/mcpserver.js'
import type { Workflow, WorkflowStatus } from '../schemas/workflow.js'

/**
 * Everything a function may ask of the Kubernetes API, in domain verbs. `shared/kube/client.ts`
 * is the one implementation over the real API; tests pass the same adapter pointed at the
 * embedded API server, or a fake.
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
  listLLMProviders(namespace: string): Promise<LLMProvider[]>
  listMCPServers(namespace: string): Promise<MCPServer[]>

  listJobs(namespace: string, labels: Record<string, string>): Promise<V1Job[]>
  createJob(job: V1Job): Promise<'created' | 'exists'>
  /** Background propagation; a Job that is already gone is not an error. */
  deleteJob(namespace: string, name: string): Promise<void>
  /** The log of the first pod of the Job (`job-name=<job>`), or null when it has no pod. */
  readJobLog(namespace: string, jobName: string): Promise<string | null>

  getConfigMap(namespace: string, name: string): Promise<V1ConfigMap | null>
  listConfigMaps(namespace: string, labels: Record<string, string>): Promise<V1ConfigMap[]>
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
  /** Replaces `.status` through the status subresource, guarded by resourceVersion. */
  patchWorkflowStatus(namespace: string, name: string, resourceVersion: string, status: WorkflowStatus): Promise<Workflow>

  createEvent(event: CoreV1Event): Promise<void>
}
