/**
 * Copies of platform LLMProvider keys in the namespaces that opted in (least privilege). Pure:
 * the planner of those copies; the apply step is shared/llm/sync-credential-copies.ts.
 *
 * For llmprovider-changed (helper C owns the function, helper D these two modules). Call, on
 * every provider change and every probe round, with the platform namespace's LLMProviders:
 *
 *   import { syncCredentialCopies } from '../sync-credential-copies.js'
 *   const outcome = await syncCredentialCopies(deps.kube, deps.config.platformNamespace, providers)
 *   // outcome: { written: string[]; unchanged: string[];
 *   //            failed: {namespace, message}[]; missing: {provider, message}[] }
 *
 * Each opted-in namespace (label `kinetic.dev/llm-credentials: enabled`) holds ONE Secret
 * `kinetic-llm-credentials` whose keys are provider names and whose values are only that
 * provider's key. An unchanged copy is not written; a removed provider's key is dropped; a
 * rotated key reaches every copy in the same call. Messages name Secrets and keys, never values.
 * Port calls: getSecret (platform namespace: Role in knative/rbac/llm-credentials.yaml),
 * listNamespaces (needs `namespaces: list` in llmprovider-changed's own ClusterRole), then per
 * opted-in namespace getSecret/createSecret/replaceSecret of `kinetic-llm-credentials` only
 * (ClusterRole kinetic-llm-credentials-writer, bound per namespace).
 */
import type { V1Secret } from '@kubernetes/client-node'
import type { LLMProvider } from '../../schemas/llmprovider.js'

/** The one Secret per opted-in namespace that holds copies of platform provider keys. */
export const LLM_CREDENTIALS_SECRET = 'kinetic-llm-credentials'
/** Namespace label that opts a namespace in to copies of platform provider keys. */
export const LABEL_LLM_CREDENTIALS = 'kinetic.dev/llm-credentials'
/** The value of LABEL_LLM_CREDENTIALS that opts in. */
export const LLM_CREDENTIALS_ENABLED = 'enabled'
/** Annotation on the copy: JSON object provider name → `<namespace>/<secret>:<key>` it was copied from. */
export const ANNOTATION_COPIED_FROM = 'kinetic.dev/copied-from'
/** Label on every copy, so `kubectl get secrets -A -l kinetic.dev/llm-credentials-copy` finds them. */
export const LABEL_COPY = 'kinetic.dev/llm-credentials-copy'

/** Pure: whether a Namespace object opted in to platform provider keys. */
export function isOptedIn(namespace: { metadata?: { labels?: Record<string, string> } } | null | undefined): boolean {
  return namespace?.metadata?.labels?.[LABEL_LLM_CREDENTIALS] === LLM_CREDENTIALS_ENABLED
}

/** Pure: the key of a provider's Secret that holds its credential (`credentials.secretKey`, else `api-key`, `credentials.json` for vertex-ai). */
export function providerSecretKey(provider: LLMProvider): string {
  return provider.spec.credentials?.secretKey || (provider.spec.type === 'vertex-ai' ? 'credentials.json' : 'api-key')
}

/** The copy's contents: provider name → base64 value, and where each came from. */
export interface CopyContent {
  data: Record<string, string>
  sources: Record<string, string>
  /** Providers with a secretRef whose Secret or key could not be found (their key is left out). */
  missing: Array<{ provider: string; message: string }>
}

/**
 * Pure: what every copy must hold, from the platform providers and their Secrets as read
 * (`secrets` by name; null = not found). Providers without `credentials.secretRef` need no key.
 */
export function desiredCopyContent(platformNamespace: string, providers: readonly LLMProvider[], secrets: ReadonlyMap<string, V1Secret | null>): CopyContent {
  const data: Record<string, string> = {}
  const sources: Record<string, string> = {}
  const missing: CopyContent['missing'] = []
  const sorted = [...providers].sort((a, b) => byText(a.metadata.name ?? '', b.metadata.name ?? ''))
  for (const provider of sorted) {
    const name = provider.metadata.name ?? ''
    const secretName = provider.spec.credentials?.secretRef
    if (!name || !secretName) continue
    const key = providerSecretKey(provider)
    const secret = secrets.get(secretName)
    const value = secret?.data?.[key]
    if (!secret) {
      missing.push({ provider: name, message: `Secret ${platformNamespace}/${secretName} of LLMProvider ${name} not found` })
    } else if (value === undefined || value === '') {
      missing.push({ provider: name, message: `Secret ${platformNamespace}/${secretName} of LLMProvider ${name} has no key ${key}` })
    } else {
      data[name] = value
      sources[name] = `${platformNamespace}/${secretName}:${key}`
    }
  }
  return { data, sources, missing }
}

/**
 * Pure: the Secret to write so `namespace` holds exactly `content`, or null when `existing`
 * already does (or there is nothing to hold and no copy). A replace carries the resourceVersion
 * read, so a concurrent writer makes it fail with ConflictError instead of losing a key.
 */
export function plannedCopy(namespace: string, content: CopyContent, existing: V1Secret | null): V1Secret | null {
  const annotation = JSON.stringify(content.sources)
  if (!existing && Object.keys(content.data).length === 0) return null
  if (existing && sameData(existing.data ?? {}, content.data)
    && existing.metadata?.annotations?.[ANNOTATION_COPIED_FROM] === annotation
    && existing.metadata?.labels?.[LABEL_COPY] === 'true') return null
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'Opaque',
    metadata: {
      name: LLM_CREDENTIALS_SECRET,
      namespace,
      ...(existing?.metadata?.resourceVersion ? { resourceVersion: existing.metadata.resourceVersion } : {}),
      labels: { ...(existing?.metadata?.labels ?? {}), [LABEL_COPY]: 'true', 'app.kubernetes.io/managed-by': 'llmprovider-changed' },
      annotations: { ...(existing?.metadata?.annotations ?? {}), [ANNOTATION_COPIED_FROM]: annotation },
    },
    data: { ...content.data },
  }
}

function sameData(a: Record<string, string>, b: Record<string, string>): boolean {
  const keys = Object.keys(a)
  return keys.length === Object.keys(b).length && keys.every((k) => a[k] === b[k])
}

// Locale-independent ordering.
function byText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}
