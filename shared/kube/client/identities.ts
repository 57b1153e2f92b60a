import type { V1Role, V1RoleBinding, V1ServiceAccount } from '@kubernetes/client-node'
import type { KubeApi } from './kube-api.js'

/** The port's verbs over an agent's own identity: its ServiceAccount, Role and RoleBinding. */
export function identityVerbs(api: KubeApi) {
  return {
    async getServiceAccount(namespace: string, name: string): Promise<V1ServiceAccount | null> {
      return api.orNull(() => api.core.readNamespacedServiceAccount({ namespace, name }), `get ServiceAccount ${namespace}/${name}`)
    },

    async createServiceAccount(serviceAccount: V1ServiceAccount): Promise<'created' | 'exists'> {
      const namespace = serviceAccount.metadata?.namespace ?? 'default'
      return api.createIfAbsent(() => api.core.createNamespacedServiceAccount({ namespace, body: serviceAccount }), `create ServiceAccount ${namespace}/${serviceAccount.metadata?.name}`)
    },

    async replaceServiceAccount(serviceAccount: V1ServiceAccount): Promise<V1ServiceAccount> {
      const namespace = serviceAccount.metadata?.namespace ?? 'default'
      const name = serviceAccount.metadata?.name ?? ''
      return api.call(() => api.core.replaceNamespacedServiceAccount({ namespace, name, body: serviceAccount }), `replace ServiceAccount ${namespace}/${name}`)
    },

    async deleteServiceAccount(namespace: string, name: string): Promise<void> {
      await api.orNull(() => api.core.deleteNamespacedServiceAccount({ namespace, name }), `delete ServiceAccount ${namespace}/${name}`)
    },

    async getRole(namespace: string, name: string): Promise<V1Role | null> {
      return api.orNull(() => api.rbac.readNamespacedRole({ namespace, name }), `get Role ${namespace}/${name}`)
    },

    async createRole(role: V1Role): Promise<'created' | 'exists'> {
      const namespace = role.metadata?.namespace ?? 'default'
      return api.createIfAbsent(() => api.rbac.createNamespacedRole({ namespace, body: role }), `create Role ${namespace}/${role.metadata?.name}`)
    },

    async replaceRole(role: V1Role): Promise<V1Role> {
      const namespace = role.metadata?.namespace ?? 'default'
      const name = role.metadata?.name ?? ''
      return api.call(() => api.rbac.replaceNamespacedRole({ namespace, name, body: role }), `replace Role ${namespace}/${name}`)
    },

    async getRoleBinding(namespace: string, name: string): Promise<V1RoleBinding | null> {
      return api.orNull(() => api.rbac.readNamespacedRoleBinding({ namespace, name }), `get RoleBinding ${namespace}/${name}`)
    },

    async createRoleBinding(binding: V1RoleBinding): Promise<'created' | 'exists'> {
      const namespace = binding.metadata?.namespace ?? 'default'
      return api.createIfAbsent(() => api.rbac.createNamespacedRoleBinding({ namespace, body: binding }), `create RoleBinding ${namespace}/${binding.metadata?.name}`)
    },

    async replaceRoleBinding(binding: V1RoleBinding): Promise<V1RoleBinding> {
      const namespace = binding.metadata?.namespace ?? 'default'
      const name = binding.metadata?.name ?? ''
      return api.call(() => api.rbac.replaceNamespacedRoleBinding({ namespace, name, body: binding }), `replace RoleBinding ${namespace}/${name}`)
    },
  }
}
