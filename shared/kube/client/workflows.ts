import { apiMessage, RefusedError } from '../../core/errors.js'
import { API_GROUP, API_VERSION_NAME } from '../../schemas/labels.js'
import { WorkflowSchema, type Workflow, type WorkflowStatus } from '../../schemas/workflow.js'
import { deleteChildObject } from './children.js'
import { apiStatus, classifyApiError, FIELD_MANAGER, itemsOf, MERGE_PATCH, parseAs, parseOrSkip, selector, type KubeApi } from './kube-api.js'

const WORKFLOWS = { group: API_GROUP, version: API_VERSION_NAME, plural: 'workflows' }

/** The one reading of a Workflow from the API server (a GET or a watch event); throws when it does not match the schema. */
export function workflowFrom(raw: unknown, namespace: string, name: string): Workflow {
  return parseAs(WorkflowSchema, raw, `Workflow ${namespace}/${name}`)
}

/** The port's Workflow verbs: reads, runs created from templates, metadata and status writes. */
export function workflowVerbs(api: KubeApi) {
  return {
    async getWorkflow(namespace: string, name: string): Promise<Workflow | null> {
      const raw = await api.orNull(() => api.custom.getNamespacedCustomObject({ ...WORKFLOWS, namespace, name }), `get Workflow ${namespace}/${name}`)
      return raw === null ? null : workflowFrom(raw, namespace, name)
    },

    async listWorkflows(): Promise<Workflow[]> {
      const list = await api.call(() => api.custom.listClusterCustomObject(WORKFLOWS), 'list Workflows')
      return itemsOf(list).flatMap((item) => parseOrSkip(WorkflowSchema, item))
    },

    async listWorkflowsIn(namespace: string, labels: Record<string, string>): Promise<Workflow[]> {
      const list = await api.call(
        () => api.custom.listNamespacedCustomObject({ ...WORKFLOWS, namespace, labelSelector: selector(labels) }),
        `list Workflows in ${namespace}`,
      )
      return itemsOf(list).flatMap((item) => parseOrSkip(WorkflowSchema, item))
    },

    async createWorkflow(workflow: Workflow): Promise<Workflow | 'exists'> {
      const namespace = workflow.metadata.namespace ?? 'default'
      const name = workflow.metadata.name ?? ''
      const { status: _status, ...rest } = workflow
      const body = { ...rest, apiVersion: `${API_GROUP}/${API_VERSION_NAME}`, kind: 'Workflow' }
      try {
        const raw = await api.custom.createNamespacedCustomObject({ ...WORKFLOWS, namespace, body, fieldManager: FIELD_MANAGER })
        return parseAs(WorkflowSchema, raw, `Workflow ${namespace}/${name}`)
      } catch (err) {
        if (apiStatus(err) === 409) return 'exists'
        const code = apiStatus(err)
        if (code === 400 || code === 422) throw new RefusedError(apiMessage({ cause: err }), code, { cause: err })
        throw classifyApiError(err, `Could not create Workflow ${namespace}/${name}`)
      }
    },

    async deleteWorkflow(namespace: string, name: string, opts: { uid?: string } = {}): Promise<void> {
      await deleteChildObject(api, 'Workflow', namespace, name, { propagationPolicy: 'Background', ...(opts.uid ? { uid: opts.uid } : {}) })
    },

    async patchWorkflowMetadata(
      namespace: string,
      name: string,
      resourceVersion: string,
      metadata: { annotations?: Record<string, string | null>; finalizers?: string[] },
    ): Promise<Workflow> {
      return api.patchCustomMetadata(WORKFLOWS, WorkflowSchema, 'Workflow', namespace, name, resourceVersion, metadata)
    },

    async patchWorkflow(
      namespace: string, name: string, resourceVersion: string,
      patch: { annotations?: Record<string, string | null>; parameters?: Record<string, string | null> },
    ): Promise<Workflow> {
      const body = {
        metadata: { resourceVersion, ...(patch.annotations ? { annotations: patch.annotations } : {}) },
        ...(patch.parameters ? { spec: { parameters: patch.parameters } } : {}),
      }
      const raw = await api.call(
        () => api.custom.patchNamespacedCustomObject({ ...WORKFLOWS, namespace, name, body }, MERGE_PATCH),
        `patch Workflow ${namespace}/${name}`,
      )
      return parseAs(WorkflowSchema, raw, `Workflow ${namespace}/${name}`)
    },

    async patchWorkflowStatus(namespace: string, name: string, resourceVersion: string, status: WorkflowStatus): Promise<Workflow> {
      return api.replaceCustomStatus(WORKFLOWS, WorkflowSchema, 'Workflow', namespace, name, resourceVersion, status)
    },
  }
}
