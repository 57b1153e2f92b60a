/**
 * Process configuration shared by the functions, read once from the environment at start-up.
 * Pure consumers receive it as data; only `readRuntimeConfig` touches `process.env`.
 */
import { parseSharedNamespaces, SHARED_NAMESPACES_VARIABLE, type McpVisibility } from './mcp/plan/visibility.js'

import { otelEnvForSteps, telemetryConfigFrom } from './telemetry/config.js'

export interface RuntimeConfig {
  /** Image for step Jobs when the Agent names none (`spec.runtime.image` wins). */
  executorImage: string
  /** Step pods share the node's network (purko's PURKO_EXECUTOR_HOST_NETWORK). */
  executorHostNetwork: boolean
  /** Namespace searched for LLMProviders after the Workflow's own (purko's platform namespace). */
  platformNamespace: string
  /** Namespace of the `mcp-servers` registry ConfigMap and its token Secrets (purko's --agent-namespace). */
  agentNamespace: string
  /**
   * Namespaces whose MCPServers every step sees besides its own and the agent namespace's
   * (`KINETIC_MCP_SHARED_NAMESPACES`, shared/mcp/plan/visibility.ts); empty by default.
   */
  mcpSharedNamespaces: string[]
  /** Where Kinetic's own CloudEvents go (a Broker URL); unset means they are only logged. */
  eventSink: string | undefined
  /** Kinetic's own namespace (its wake PingSources live there): KINETIC_NAMESPACE, default kinetic-system. */
  kineticNamespace?: string
  /** OTEL_* variables step Jobs get when tracing is on (shared/telemetry/config.ts); none when off. */
  stepTelemetryEnv?: ReadonlyArray<{ name: string; value: string }>
}

export const DEFAULT_EXECUTOR_IMAGE = 'kinetic-executor:latest'

/** Reads KINETIC_* (and purko's PURKO_* equivalents) with safe defaults; throws on a malformed KINETIC_MCP_SHARED_NAMESPACES. */
export function readRuntimeConfig(env: Record<string, string | undefined> = process.env): RuntimeConfig {
  return {
    executorImage: env.KINETIC_EXECUTOR_IMAGE || env.PURKO_EXECUTOR_IMAGE || DEFAULT_EXECUTOR_IMAGE,
    executorHostNetwork: (env.KINETIC_EXECUTOR_HOST_NETWORK ?? env.PURKO_EXECUTOR_HOST_NETWORK) === 'true',
    platformNamespace: env.KINETIC_PLATFORM_NAMESPACE || 'purko-system',
    agentNamespace: env.KINETIC_AGENT_NAMESPACE || env.PURKO_AGENT_NAMESPACE || 'ai-agents',
    mcpSharedNamespaces: parseSharedNamespaces(env[SHARED_NAMESPACES_VARIABLE]),
    eventSink: env.K_SINK || env.KINETIC_EVENT_SINK || undefined,
    kineticNamespace: env.KINETIC_NAMESPACE || 'kinetic-system',
    stepTelemetryEnv: telemetryConfigFrom(env).enabled ? otelEnvForSteps(env) : [],
  }
}

/** Pure: which MCPServers steps see, from the configuration (shared/mcp/plan/visibility.ts). */
export function mcpVisibilityOf(config: Pick<RuntimeConfig, 'agentNamespace' | 'mcpSharedNamespaces'>): McpVisibility {
  return { agentNamespace: config.agentNamespace, shared: config.mcpSharedNamespaces }
}
