/**
 * Which LLMProvider a step uses and where its key comes from, without any Secret access by the
 * workflow functions. A pod can only read Secrets of its own namespace: a provider in the
 * Workflow's namespace is referenced directly; a platform provider (purko-system) through the
 * `kinetic-llm-credentials` copy that llmprovider-changed keeps in namespaces that opted in
 * (label `kinetic.dev/llm-credentials: enabled`). A provider that is not Ready hands its steps
 * to `spec.fallback.providerRef`, one hop only. A step whose `model.provider` overrides its
 * Agent's (spec §5.10) gets that provider by the same resolution. Pure: no I/O, no clock.
 */
import type { Agent } from '../../schemas/agent.js'
import type { LLMProvider } from '../../schemas/llmprovider.js'
import type { StepModel } from '../../schemas/workflow.js'
import { LABEL_LLM_CREDENTIALS, LLM_CREDENTIALS_ENABLED, LLM_CREDENTIALS_SECRET } from '../../llm/plan/credential-copies.js'
import { resolveProvider } from '../../agent/plan/provider-resolution.js'

/** A Secret key of the Workflow's namespace a step reads by secretKeyRef. */
export interface SecretKey {
  secret: string
  key: string
}

/** Where a step's credentials come from; every reference is to a Secret of the Workflow's namespace. */
export interface StepCredentials {
  /** MODEL_API_KEY, when the provider has a key. */
  apiKey?: SecretKey
  /** vertex-ai: the Secret mounted at /var/run/secrets/gcp; `key` (a copy) is mounted as credentials.json. */
  gcp?: { secret: string; key?: string }
}

/** The provider a step of one agent uses, as decided before its Job is built. */
export interface ProviderChoice {
  /** The provider whose endpoint, API format, model and key the step gets (the fallback when it stood in). */
  provider: LLMProvider | undefined
  credentials: StepCredentials
  /** Set when no pod could read the key yet: the step waits with this message instead of starting. */
  wait?: string
  /** What the step's status says about the choice (a fallback in use, an unhealthy provider). */
  notes: string[]
}

/** What the choice depends on besides the agent and the providers visible from the Workflow. */
export interface ChoiceContext {
  workflowNamespace: string
  platformNamespace: string
  /** Whether the Workflow's namespace carries `kinetic.dev/llm-credentials: enabled`. */
  optedIn: boolean
}

/**
 * Pure: whether steps may use a provider. No status or no phase yet (purko manifests before the
 * first probe), Ready, and Pending without a failing check are usable; Error, Degraded, and
 * Pending whose `Ready` condition is False are not.
 */
export function isProviderUsable(provider: LLMProvider): boolean {
  const phase = provider.status?.phase
  if (phase === undefined || phase === 'Ready') return true
  if (phase === 'Pending') return provider.status?.conditions?.find((c) => c.type === 'Ready')?.status !== 'False'
  return false
}

/**
 * Pure: the provider a step of `agent` uses (purko's resolution of the Agent's provider, or of
 * the step's `model.provider` override when given, then the fallback rule), the secretKeyRefs
 * of its key, and whether the step must wait because no Secret of the Workflow's namespace
 * holds that key.
 */
export function chooseProvider(agent: Agent, providers: readonly LLMProvider[], ctx: ChoiceContext, override?: Pick<StepModel, 'provider'>): ProviderChoice {
  const primary = resolveProvider(agent, [...providers], override)
  if (!primary) return { provider: undefined, credentials: {}, notes: [] }
  const notes: string[] = []
  let provider = primary
  if (!isProviderUsable(primary)) {
    const health = healthOf(primary)
    const wanted = primary.spec.fallback?.providerRef
    const fallback = wanted ? findFallback(primary, wanted, providers) : undefined
    if (!wanted) {
      notes.push(`LLMProvider ${idOf(primary)} is ${health} and names no fallback`)
    } else if (!fallback) {
      notes.push(`LLMProvider ${idOf(primary)} is ${health}; its fallback "${wanted}" was not found, so the step uses ${idOf(primary)}`)
    } else if (!isProviderUsable(fallback)) {
      notes.push(`LLMProvider ${idOf(primary)} is ${health}; its fallback ${idOf(fallback)} is ${healthOf(fallback)} too, so the step uses ${idOf(primary)}`)
    } else {
      provider = fallback
      notes.push(`LLMProvider ${idOf(primary)} is ${health}: using fallback ${idOf(fallback)} (model ${fallback.spec.model})`)
    }
  }
  const keyed = credentialsFor(provider, ctx)
  return { provider, credentials: keyed.credentials, notes, ...(keyed.wait ? { wait: keyed.wait } : {}) }
}

/** The one-line commands that opt a namespace in (also in knative/rbac/llm-credentials.yaml). */
export function optInCommands(namespace: string): string {
  return `kubectl label namespace ${namespace} ${LABEL_LLM_CREDENTIALS}=${LLM_CREDENTIALS_ENABLED} && `
    + `kubectl create rolebinding kinetic-llm-credentials-writer -n ${namespace} --clusterrole=kinetic-llm-credentials-writer --serviceaccount=kinetic-system:llmprovider-changed`
}

function credentialsFor(provider: LLMProvider, ctx: ChoiceContext): { credentials: StepCredentials; wait?: string } {
  const spec = provider.spec
  const secretRef = spec.credentials?.secretRef
  const vertex = spec.type === 'vertex-ai'
  // A vertex-ai Secret holds service-account credentials (a mounted file), not an API key, unless a key is named.
  const hasApiKey = Boolean(secretRef) && (!vertex || Boolean(spec.credentials?.secretKey))
  const home = provider.metadata.namespace ?? ctx.workflowNamespace
  if (!secretRef || home === ctx.workflowNamespace) {
    return {
      credentials: {
        ...(hasApiKey ? { apiKey: { secret: secretRef!, key: spec.credentials?.secretKey || 'api-key' } } : {}),
        ...(vertex ? { gcp: { secret: secretRef || 'gcp-credentials' } } : {}),
      },
    }
  }
  const name = provider.metadata.name ?? ''
  if (home !== ctx.platformNamespace || !ctx.optedIn) {
    const why = home !== ctx.platformNamespace
      ? `only providers of "${ctx.workflowNamespace}" and "${ctx.platformNamespace}" can be used`
      : `namespace "${ctx.workflowNamespace}" has not opted in to copies of platform provider keys; run: ${optInCommands(ctx.workflowNamespace)}`
    return { credentials: {}, wait: `Waiting for the key of LLMProvider ${idOf(provider)} in namespace "${ctx.workflowNamespace}": ${why}` }
  }
  // llmprovider-changed keeps only this provider's key in the copy, under the provider's name.
  return {
    credentials: {
      ...(hasApiKey ? { apiKey: { secret: LLM_CREDENTIALS_SECRET, key: name } } : {}),
      ...(vertex ? { gcp: { secret: LLM_CREDENTIALS_SECRET, key: name } } : {}),
    },
  }
}

function findFallback(primary: LLMProvider, wanted: string, providers: readonly LLMProvider[]): LLMProvider | undefined {
  const candidates = providers.filter((p) => p.metadata.name === wanted && p !== primary)
  return candidates.find((p) => p.metadata.namespace === primary.metadata.namespace) ?? candidates[0]
}

function healthOf(provider: LLMProvider): string {
  const phase = provider.status?.phase ?? 'Pending'
  const ready = provider.status?.conditions?.find((c) => c.type === 'Ready')
  return ready?.status === 'False' && ready.reason ? `${phase} (${ready.reason})` : phase
}

function idOf(provider: LLMProvider): string {
  return `${provider.metadata.namespace ?? ''}/${provider.metadata.name ?? ''}`
}
