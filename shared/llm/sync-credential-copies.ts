/**
 * The apply step of the copies planned in shared/llm/plan/credential-copies.ts: called by
 * llmprovider-changed on every provider change and probe round (see that file's header).
 */
import type { V1Secret } from '@kubernetes/client-node'
import { applyChildWrite } from '../kube/apply.js'
import type { Kube, KubeVerbs } from '../kube/port.js'
import {
  desiredCopyContent, LABEL_LLM_CREDENTIALS, LLM_CREDENTIALS_ENABLED, LLM_CREDENTIALS_SECRET, plannedCopy, type CopyContent,
} from './plan/credential-copies.js'
import type { LLMProvider } from '../schemas/llmprovider.js'
import { retryingConflicts } from '../engine/controller.js'

/** What one sync did. */
export interface CopyOutcome {
  /** Namespaces whose copy was created or replaced. */
  written: string[]
  /** Namespaces whose copy already held the current keys. */
  unchanged: string[]
  /** Namespaces whose copy could not be written; the message names the Secret, never a value. */
  failed: Array<{ namespace: string; message: string }>
  /** Providers whose key could not be read from the platform namespace. */
  missing: Array<{ provider: string; message: string }>
}

/**
 * Brings every opted-in namespace's `kinetic-llm-credentials` to the platform providers' current
 * keys. Reads source Secrets only in `platformNamespace`; throws only when such a read fails
 * (TransientError: the Broker redelivers), never for one namespace's copy.
 */
/** The port verbs of the copies: the platform Secrets, the opted-in namespaces, each copy read and written. */
export const CREDENTIAL_COPY_VERBS = ['getSecret', 'listNamespaces', 'createSecret', 'replaceSecret'] as const satisfies readonly (keyof Kube)[]
type CredentialCopyKube = KubeVerbs<typeof CREDENTIAL_COPY_VERBS>

export async function syncCredentialCopies(kube: CredentialCopyKube, platformNamespace: string, providers: readonly LLMProvider[]): Promise<CopyOutcome> {
  const own = providers.filter((p) => (p.metadata.namespace ?? platformNamespace) === platformNamespace)
  const secretNames = [...new Set(own.flatMap((p) => p.spec.credentials?.secretRef ? [p.spec.credentials.secretRef] : []))]
  const secrets = new Map<string, V1Secret | null>()
  await Promise.all(secretNames.map(async (name) => { secrets.set(name, await kube.getSecret(platformNamespace, name)) }))
  const content = desiredCopyContent(platformNamespace, own, secrets)
  const outcome: CopyOutcome = { written: [], unchanged: [], failed: [], missing: content.missing }
  const namespaces = (await kube.listNamespaces({ [LABEL_LLM_CREDENTIALS]: LLM_CREDENTIALS_ENABLED }))
    .map((n) => n.metadata?.name ?? '').filter((n) => n !== '' && n !== platformNamespace).sort(byText)
  await Promise.all(namespaces.map(async (namespace) => {
    try {
      const wrote = await retryingConflicts(4, () => writeCopy(kube, namespace, content))
      ;(wrote ? outcome.written : outcome.unchanged).push(namespace)
    } catch (err) {
      outcome.failed.push({ namespace, message: `Could not write Secret ${namespace}/${LLM_CREDENTIALS_SECRET}: ${(err as Error).message}` })
    }
  }))
  outcome.written.sort(byText)
  outcome.unchanged.sort(byText)
  outcome.failed.sort((a, b) => byText(a.namespace, b.namespace))
  return outcome
}

async function writeCopy(kube: CredentialCopyKube, namespace: string, content: CopyContent): Promise<boolean> {
  const existing = await kube.getSecret(namespace, LLM_CREDENTIALS_SECRET)
  const next = plannedCopy(namespace, content, existing)
  if (!next) return false
  await applyChildWrite(kube, { op: existing ? 'replace' : 'create', kind: 'Secret', object: next })
  return true
}

// Locale-independent ordering.
function byText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}
