import { API_GROUP, API_VERSION_NAME } from '../../schemas/labels.js'
import { LLMProviderSchema, type LLMProvider, type LLMProviderStatus } from '../../schemas/llmprovider.js'
import { MemoryProviderSchema, type MemoryProvider, type MemoryProviderStatus } from '../../schemas/memoryprovider.js'
import type { KubeApi } from './kube-api.js'

const LLM_PROVIDERS = { group: API_GROUP, version: API_VERSION_NAME, plural: 'llmproviders' }
const MEMORY_PROVIDERS = { group: API_GROUP, version: API_VERSION_NAME, plural: 'memoryproviders' }

/** The port's verbs over LLMProviders and MemoryProviders: reads and status writes. */
export function providerVerbs(api: KubeApi) {
  return {
    async listLLMProviders(namespace: string): Promise<LLMProvider[]> {
      return api.listCustom(namespace, 'llmproviders', LLMProviderSchema)
    },

    async getLLMProvider(namespace: string, name: string): Promise<LLMProvider | null> {
      return api.getCustom(LLM_PROVIDERS, LLMProviderSchema, 'LLMProvider', namespace, name)
    },

    async listAllLLMProviders(): Promise<LLMProvider[]> {
      return api.listAllCustom(LLM_PROVIDERS, LLMProviderSchema)
    },

    async replaceLLMProviderStatus(namespace: string, name: string, resourceVersion: string, status: LLMProviderStatus): Promise<LLMProvider> {
      return api.replaceCustomStatus(LLM_PROVIDERS, LLMProviderSchema, 'LLMProvider', namespace, name, resourceVersion, status)
    },

    async getMemoryProvider(namespace: string, name: string): Promise<MemoryProvider | null> {
      return api.getCustom(MEMORY_PROVIDERS, MemoryProviderSchema, 'MemoryProvider', namespace, name)
    },

    async listAllMemoryProviders(): Promise<MemoryProvider[]> {
      return api.listAllCustom(MEMORY_PROVIDERS, MemoryProviderSchema)
    },

    async replaceMemoryProviderStatus(namespace: string, name: string, resourceVersion: string, status: MemoryProviderStatus): Promise<MemoryProvider> {
      return api.replaceCustomStatus(MEMORY_PROVIDERS, MemoryProviderSchema, 'MemoryProvider', namespace, name, resourceVersion, status)
    },
  }
}
