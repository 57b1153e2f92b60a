import { KubeConfig, type RequestContext } from '@kubernetes/client-node'
import type { Credential } from '../port.js'

/**
 * The KubeConfig that holds `credential`'s rights over `base`'s cluster. `own`: base as it is.
 * `token`: the same cluster (server, CA, TLS settings) and a user holding only that bearer
 * token, never base's client certificate or token. `impersonate`: base's identity plus
 * Impersonate-User, one Impersonate-Group per group and Impersonate-Uid on every request,
 * watches and logs included.
 */
export function kubeConfigFor(base: KubeConfig, credential: Credential): KubeConfig {
  if (credential.kind === 'own') return base
  if (credential.kind === 'token') return tokenKubeConfig(base, credential.token)
  return new ImpersonatingKubeConfig(base, impersonationHeaders(credential))
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
