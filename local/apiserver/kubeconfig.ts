import { stringify } from 'yaml'

/** The context, cluster and user name written into generated kubeconfigs. */
export const KUBECONFIG_NAME = 'kinetic-local'

/**
 * A kubeconfig for a plain-HTTP server. `insecure-skip-tls-verify` is set because
 * @kubernetes/client-node refuses http:// clusters without it ("HTTP protocol is not allowed").
 */
export function kubeconfigYaml(serverUrl: string, namespace = 'default'): string {
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: KUBECONFIG_NAME, cluster: { server: serverUrl, 'insecure-skip-tls-verify': true } }],
    users: [{ name: KUBECONFIG_NAME, user: { token: 'kinetic-local' } }],
    contexts: [{ name: KUBECONFIG_NAME, context: { cluster: KUBECONFIG_NAME, user: KUBECONFIG_NAME, namespace } }],
    'current-context': KUBECONFIG_NAME,
  })
}
