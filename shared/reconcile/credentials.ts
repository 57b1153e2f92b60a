import type { V1Secret } from '@kubernetes/client-node'
import type { LLMProvider } from '../schemas/llmprovider.js'
import type { Workflow } from '../schemas/workflow.js'
import { API_VERSION } from '../schemas/labels.js'
import { sha256Hex } from './sha256.js'

/** Label on a mirrored credentials Secret naming the Secret it copies (`<namespace>.<name>`). */
export const LABEL_MIRRORED_FROM = 'kinetic.dev/mirrored-from'

/**
 * Pure: whether a step of this Workflow needs the provider's Secret copied into its own
 * namespace. A pod can only reference Secrets of its namespace, and purko keeps LLMProviders
 * (and their Secrets) in `purko-system`; purko put the key into the Job as a plain value,
 * Kinetic copies the Secret instead and references the copy.
 */
export function needsCredentialMirror(provider: LLMProvider | undefined, workflowNamespace: string): provider is LLMProvider {
  return provider !== undefined && Boolean(provider.spec.credentials?.secretRef)
    && (provider.metadata.namespace ?? workflowNamespace) !== workflowNamespace
}

/** Pure: the copy's name: `<workflow>-llm-<provider>`, hashed when longer than a Secret name may be. */
export function mirroredSecretName(workflowName: string, providerName: string): string {
  const name = `${workflowName}-llm-${providerName}`
  return name.length <= 253 ? name : `${name.slice(0, 236)}-${sha256Hex(name).slice(0, 16)}`
}

/**
 * Pure: the Secret to write so the Workflow's namespace holds a current copy of `source`, or null
 * when `existing` already is one. Owned by the Workflow, so it goes when the Workflow goes.
 */
export function mirroredSecret(workflow: Workflow, provider: LLMProvider, source: V1Secret, existing: V1Secret | null): V1Secret | null {
  const data = source.data ?? {}
  if (existing && sameData(existing.data ?? {}, data)) return null
  const workflowName = workflow.metadata.name ?? ''
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    type: source.type ?? 'Opaque',
    metadata: {
      name: mirroredSecretName(workflowName, provider.metadata.name ?? ''),
      namespace: workflow.metadata.namespace,
      labels: { [LABEL_MIRRORED_FROM]: `${source.metadata?.namespace ?? ''}.${source.metadata?.name ?? ''}`.slice(0, 63) },
      ownerReferences: [{ apiVersion: API_VERSION, kind: 'Workflow', name: workflowName, uid: workflow.metadata.uid ?? '', controller: true, blockOwnerDeletion: true }],
      ...(existing?.metadata?.resourceVersion ? { resourceVersion: existing.metadata.resourceVersion } : {}),
    },
    data: { ...data },
  }
}

/** Pure: the provider as seen from the Workflow's namespace: its credentials point at the copy. */
export function withLocalCredentials(provider: LLMProvider, secretName: string): LLMProvider {
  return { ...provider, spec: { ...provider.spec, credentials: { ...provider.spec.credentials, secretRef: secretName } } }
}

function sameData(a: Record<string, string>, b: Record<string, string>): boolean {
  const keys = Object.keys(a)
  return keys.length === Object.keys(b).length && keys.every((k) => a[k] === b[k])
}
