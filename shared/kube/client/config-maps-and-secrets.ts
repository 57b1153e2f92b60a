import type { V1ConfigMap, V1Secret } from '@kubernetes/client-node'
import { selector, type KubeApi } from './kube-api.js'

/** The port's verbs over ConfigMaps (revision snapshots, settings) and Secrets. */
export function configMapAndSecretVerbs(api: KubeApi) {
  return {
    async getConfigMap(namespace: string, name: string): Promise<V1ConfigMap | null> {
      return api.orNull(() => api.core.readNamespacedConfigMap({ namespace, name }), `get ConfigMap ${namespace}/${name}`)
    },

    async listConfigMaps(namespace: string, labels: Record<string, string>): Promise<V1ConfigMap[]> {
      const list = await api.call(() => api.core.listNamespacedConfigMap({ namespace, labelSelector: selector(labels) }), `list ConfigMaps in ${namespace}`)
      return list.items
    },

    async listAllConfigMaps(labels: Record<string, string>): Promise<V1ConfigMap[]> {
      const list = await api.call(() => api.core.listConfigMapForAllNamespaces({ labelSelector: selector(labels) }), 'list ConfigMaps')
      return list.items
    },

    async createConfigMap(configMap: V1ConfigMap): Promise<'created' | 'exists'> {
      const namespace = configMap.metadata?.namespace ?? 'default'
      return api.createIfAbsent(() => api.core.createNamespacedConfigMap({ namespace, body: configMap }), `create ConfigMap ${namespace}/${configMap.metadata?.name}`)
    },

    async replaceConfigMap(configMap: V1ConfigMap): Promise<V1ConfigMap> {
      const namespace = configMap.metadata?.namespace ?? 'default'
      const name = configMap.metadata?.name ?? ''
      return api.call(() => api.core.replaceNamespacedConfigMap({ namespace, name, body: configMap }), `replace ConfigMap ${namespace}/${name}`)
    },

    async deleteConfigMap(namespace: string, name: string): Promise<void> {
      await api.orNull(() => api.core.deleteNamespacedConfigMap({ namespace, name }), `delete ConfigMap ${namespace}/${name}`)
    },

    async getSecret(namespace: string, name: string): Promise<V1Secret | null> {
      return api.orNull(() => api.core.readNamespacedSecret({ namespace, name }), `get Secret ${namespace}/${name}`)
    },

    async createSecret(secret: V1Secret): Promise<'created' | 'exists'> {
      const namespace = secret.metadata?.namespace ?? 'default'
      return api.createIfAbsent(() => api.core.createNamespacedSecret({ namespace, body: secret }), `create Secret ${namespace}/${secret.metadata?.name}`)
    },

    async replaceSecret(secret: V1Secret): Promise<V1Secret> {
      const namespace = secret.metadata?.namespace ?? 'default'
      const name = secret.metadata?.name ?? ''
      return api.call(() => api.core.replaceNamespacedSecret({ namespace, name, body: secret }), `replace Secret ${namespace}/${name}`)
    },
  }
}
