import type { Kube, KubeVerbs } from '../kube/port.js'
import type { LLMProvider } from '../schemas/llmprovider.js'

/** The port verbs of providersVisibleFrom. */
export const VISIBLE_PROVIDER_VERBS = ['listLLMProviders'] as const satisfies readonly (keyof Kube)[]

/**
 * The LLMProviders an object in `namespace` may use: its own namespace's first, then the
 * platform namespace's (purko-system), in the order resolveProvider expects.
 */
export async function providersVisibleFrom(kube: KubeVerbs<typeof VISIBLE_PROVIDER_VERBS>, namespace: string, platformNamespace: string): Promise<LLMProvider[]> {
  const [own, platform] = await Promise.all([
    kube.listLLMProviders(namespace),
    namespace === platformNamespace ? Promise.resolve([]) : kube.listLLMProviders(platformNamespace),
  ])
  return [...own, ...platform]
}
