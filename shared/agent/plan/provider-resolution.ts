/**
 * Which LLMProvider an Agent's step asks for and gets, and which model it runs, purko's way: by
 * name, else a `default: true` provider, never one for the offline model. Pure: no I/O.
 * (credentials.ts adds the fallback rule and where the key comes from; step-job-env.ts puts the
 * result into the Job.)
 */
import type { Agent } from '../../schemas/agent.js'
import type { LLMProvider } from '../../schemas/llmprovider.js'
import type { StepModel } from '../../schemas/workflow.js'

/** Pure: the provider name a step asks for: its `model.provider` override (spec §5.10), else the Agent's `spec.model.provider`. */
export function wantedProviderName(agent: Agent, override?: StepModel): string {
  return override?.provider ?? agent.spec.model.provider
}

/** Pure: whether a step's `model` names a provider other than its Agent's (then the Agent's `credentialsSecretRef` is not for it). */
export function overridesProvider(agent: Agent, override?: StepModel): boolean {
  return override?.provider !== undefined && override.provider !== agent.spec.model.provider
}

/**
 * The provider name of the executor's deterministic offline model: no model API, nothing leaves
 * the machine (the executor answers offline whenever MODEL_PROVIDER is `offline`). No default
 * provider stands in for it.
 */
export const OFFLINE_PROVIDER = 'offline'

/**
 * Pure: the LLMProvider for an Agent (or for one step of it, with the step's `model` override):
 * the first whose name equals the wanted provider (`wantedProviderName`), else (except for the
 * offline model) a `default: true` provider from the first namespace (in the given priority
 * order) that has one, the last listed there as in purko; undefined when none fits.
 */
export function resolveProvider(agent: Agent, providers: LLMProvider[], override?: StepModel): LLMProvider | undefined {
  const wanted = wantedProviderName(agent, override)
  const byName = providers.find((p) => p.metadata.name === wanted)
  if (byName) return byName
  if (wanted === OFFLINE_PROVIDER) return undefined
  const defaults = providers.filter((p) => p.spec.default === true)
  const firstNamespace = defaults[0]?.metadata.namespace
  return defaults.filter((p) => p.metadata.namespace === firstNamespace).at(-1)
}

/**
 * Pure: the model name a step uses. A provider standing in for the wanted one (a default or a
 * fallback) that names its own model: that model. Else the step's `model.name` override
 * (spec §5.10), else, when the step switches to another provider without naming a model, that
 * provider's own model if it names one (the Agent's model belongs to the Agent's provider),
 * else the Agent's.
 */
export function resolvedModelName(agent: Agent, provider: LLMProvider | undefined, override?: StepModel): string {
  if (provider && provider.metadata.name !== wantedProviderName(agent, override) && provider.spec.model) return provider.spec.model
  if (override?.name !== undefined) return override.name
  if (overridesProvider(agent, override) && provider?.spec.model) return provider.spec.model
  return agent.spec.model.name
}
