import type { Logger } from 'pino'
import type { ExecutorConfig } from '../config.js'
import { anthropicProvider } from './anthropic.js'
import { offlineProvider } from './offline.js'
import { openAiProvider } from './openai.js'
import type { RetryPolicy } from './types.js'
import type { FetchLike, ModelProvider } from './types.js'

/** The provider for a configuration: offline when config.offline, else by MODEL_API_FORMAT. Throws ConfigError for a bad offline script. */
export function createProvider(cfg: ExecutorConfig, deps: { fetch: FetchLike; retry: RetryPolicy; log: Logger }): ModelProvider {
  if (cfg.offline) {
    return offlineProvider({ step: cfg.step, workflow: cfg.workflow, input: cfg.input, script: cfg.executor })
  }
  const common = {
    ...(cfg.model.endpoint !== undefined ? { endpoint: cfg.model.endpoint } : {}),
    ...(cfg.model.apiKey !== undefined ? { apiKey: cfg.model.apiKey } : {}),
    model: cfg.model.name,
    timeoutMs: cfg.model.timeoutMs,
    fetch: deps.fetch,
    retry: deps.retry,
    onRetry: (info: { attempt: number; status?: number; delayMs: number }) =>
      deps.log.warn(info, 'Model API call failed; retrying'),
  }
  return cfg.model.apiFormat === 'anthropic' ? anthropicProvider(common) : openAiProvider(common)
}
