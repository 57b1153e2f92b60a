/**
 * Process configuration shared by the functions, read once from the environment at start-up.
 * Pure consumers receive it as data; only `readRuntimeConfig` touches `process.env`.
 */
export interface RuntimeConfig {
  /** Image for step Jobs when the Agent names none (`spec.runtime.image` wins). */
  executorImage: string
  /** Step pods share the node's network (purko's PURKO_EXECUTOR_HOST_NETWORK). */
  executorHostNetwork: boolean
  /** Namespace searched for LLMProviders after the Workflow's own (purko's platform namespace). */
  platformNamespace: string
  /** Namespace of the `mcp-servers` registry ConfigMap and its token Secrets (purko's --agent-namespace). */
  agentNamespace: string
  /** Where Kinetic's own CloudEvents go (a Broker URL); unset means they are only logged. */
  eventSink: string | undefined
}

export const DEFAULT_EXECUTOR_IMAGE = 'kinetic-executor:latest'

/** Reads KINETIC_* (and purko's PURKO_* equivalents) with safe defaults. */
export function readRuntimeConfig(env: Record<string, string | undefined> = process.env): RuntimeConfig {
  return {
    executorImage: env.KINETIC_EXECUTOR_IMAGE || env.PURKO_EXECUTOR_IMAGE || DEFAULT_EXECUTOR_IMAGE,
    executorHostNetwork: (env.KINETIC_EXECUTOR_HOST_NETWORK ?? env.PURKO_EXECUTOR_HOST_NETWORK) === 'true',
    platformNamespace: env.KINETIC_PLATFORM_NAMESPACE || 'purko-system',
    agentNamespace: env.KINETIC_AGENT_NAMESPACE || env.PURKO_AGENT_NAMESPACE || 'ai-agents',
    eventSink: env.K_SINK || env.KINETIC_EVENT_SINK || undefined,
  }
}
