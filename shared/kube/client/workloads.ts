import type { V1Deployment, V1Namespace, V1Pod, V1Service } from '@kubernetes/client-node'
import { selector, type KubeApi } from './kube-api.js'

/** The port's verbs over an MCPServer's workload (its Deployment, Service and pods) and over Namespaces. */
export function workloadVerbs(api: KubeApi) {
  return {
    async getDeployment(namespace: string, name: string): Promise<V1Deployment | null> {
      return api.orNull(() => api.apps.readNamespacedDeployment({ namespace, name }), `get Deployment ${namespace}/${name}`)
    },

    async createDeployment(deployment: V1Deployment): Promise<'created' | 'exists'> {
      const namespace = deployment.metadata?.namespace ?? 'default'
      return api.createIfAbsent(() => api.apps.createNamespacedDeployment({ namespace, body: deployment }), `create Deployment ${namespace}/${deployment.metadata?.name}`)
    },

    async replaceDeployment(deployment: V1Deployment): Promise<V1Deployment> {
      const namespace = deployment.metadata?.namespace ?? 'default'
      const name = deployment.metadata?.name ?? ''
      return api.call(() => api.apps.replaceNamespacedDeployment({ namespace, name, body: deployment }), `replace Deployment ${namespace}/${name}`)
    },

    async getService(namespace: string, name: string): Promise<V1Service | null> {
      return api.orNull(() => api.core.readNamespacedService({ namespace, name }), `get Service ${namespace}/${name}`)
    },

    async createService(service: V1Service): Promise<'created' | 'exists'> {
      const namespace = service.metadata?.namespace ?? 'default'
      return api.createIfAbsent(() => api.core.createNamespacedService({ namespace, body: service }), `create Service ${namespace}/${service.metadata?.name}`)
    },

    async replaceService(service: V1Service): Promise<V1Service> {
      const namespace = service.metadata?.namespace ?? 'default'
      const name = service.metadata?.name ?? ''
      return api.call(() => api.core.replaceNamespacedService({ namespace, name, body: service }), `replace Service ${namespace}/${name}`)
    },

    async listPods(namespace: string, labels: Record<string, string>): Promise<V1Pod[]> {
      const list = await api.call(() => api.core.listNamespacedPod({ namespace, labelSelector: selector(labels) }), `list pods in ${namespace}`)
      return list.items
    },

    async getNamespace(name: string): Promise<V1Namespace | null> {
      return api.orNull(() => api.core.readNamespace({ name }), `get Namespace ${name}`)
    },

    async listNamespaces(labels: Record<string, string>): Promise<V1Namespace[]> {
      const list = await api.call(() => api.core.listNamespace({ labelSelector: selector(labels) }), 'list Namespaces')
      return list.items
    },
  }
}
