import { KubeConfig } from '@kubernetes/client-node'
import { agentVerbs } from './client/agents.js'
import { childVerbs } from './client/children.js'
import { configMapAndSecretVerbs } from './client/config-maps-and-secrets.js'
import { kubeConfigFor } from './client/credentials.js'
import { eventAndReviewVerbs } from './client/events-and-reviews.js'
import { identityVerbs } from './client/identities.js'
import { jobVerbs } from './client/jobs.js'
import { KubeApi } from './client/kube-api.js'
import { mcpServerVerbs } from './client/mcp-servers.js'
import { providerVerbs } from './client/providers.js'
import { recipeVerbs } from './client/recipes.js'
import { streamVerbs } from './client/streams.js'
import { workflowVerbs } from './client/workflows.js'
import { workloadVerbs } from './client/workloads.js'
import type { Credential, Kube } from './port.js'

/** Loads the kubeconfig the way every entry point does: `$KUBECONFIG` when set, in-cluster otherwise. */
export function loadKubeConfig(env: Record<string, string | undefined> = process.env): KubeConfig {
  const kc = new KubeConfig()
  if (env.KUBECONFIG) kc.loadFromFile(env.KUBECONFIG)
  else kc.loadFromCluster()
  return kc
}

/**
 * A KubeClient using `credential`'s rights over `base`'s cluster: base's own, a person's bearer
 * token on the same cluster, or base's identity impersonating someone (see `kubeConfigFor`).
 */
export function kubeAs(base: KubeConfig, credential: Credential): KubeClient {
  return new KubeClient(kubeConfigFor(base, credential))
}

/** Every verb of the port, as the class below takes them on (declared here, assigned in its constructor). */
export interface KubeClient extends Kube {}

/**
 * The one adapter over the Kubernetes API (client-node 1.4). Its verbs live in `client/`, one
 * file an area (purko kinds, core objects, reviews, streams), all over one `KubeApi`: the API
 * clients of this KubeConfig and the calls that classify every failure.
 */
export class KubeClient implements Kube {
  constructor(kc: KubeConfig) {
    const api = new KubeApi(kc)
    // Typed as the port, so a verb no area provides fails to compile here.
    const verbs: Kube = {
      ...workflowVerbs(api),
      ...agentVerbs(api),
      ...providerVerbs(api),
      ...mcpServerVerbs(api),
      ...recipeVerbs(api),
      ...childVerbs(api),
      ...jobVerbs(api),
      ...workloadVerbs(api),
      ...configMapAndSecretVerbs(api),
      ...identityVerbs(api),
      ...eventAndReviewVerbs(api),
      ...streamVerbs(api),
    }
    Object.assign(this, verbs)
  }
}
