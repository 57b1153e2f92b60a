/**
 * Kinetic's step executor: the entry point of a workflow step's container (`step-executor`).
 * It reads its whole configuration from environment variables, runs the agent, and prints
 * exactly one `OUTPUT:{json}` line on stdout. Logs are pino JSON lines on stderr.
 *
 * Exit codes:
 *   0  the step succeeded; the OUTPUT line carries the result.
 *   1  the step failed (model API error, a guardrail stop, an agent-reported error, an
 *      output over the 1 MiB line limit); the OUTPUT line carries `{error, reason}`.
 *   2  the configuration is invalid (a bad or missing environment variable); the OUTPUT line
 *      carries `{error, reason: "ConfigInvalid"}`.
 */
import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { parseConfig } from './config.js'
import { ConfigError } from './errors.js'
import { createExecutorLogger, scrubSecrets } from './log.js'
import { boundedOutputLine, failureOutput, outputLine } from './output.js'
import { leaveTerminationMessage } from './termination-message.js'
import { defaultRetryPolicy } from './providers/retry.js'
import { createProvider } from './providers/select.js'
import { runStep } from './run.js'
import { telemetryConfigFrom } from '../shared/telemetry/config.js'
import { spanSink } from '../shared/telemetry/exporter.js'
import { stepTracer } from '../shared/telemetry/genai.js'
import type { McpConnector } from './tools/mcp.js'

const VECTOR_MEMORY_DIR = '/var/run/agent-memory'

// The MCP SDK takes ~0.4 s to import; steps without MCP servers should not pay for it.
const connectMcp: McpConnector = async (entry, signal) => (await import('./tools/mcp.js')).connectMcp(entry, signal)

// Secrets are collected before validation so that even a config error cannot print them.
function rawSecrets(env: NodeJS.ProcessEnv): string[] {
  const found: string[] = []
  if (env.MODEL_API_KEY) found.push(env.MODEL_API_KEY)
  if (env.GITHUB_MCP_TOKEN) found.push(env.GITHUB_MCP_TOKEN)
  try {
    const servers = JSON.parse(env.MCP_SERVERS ?? '[]') as unknown
    if (Array.isArray(servers)) {
      for (const s of servers) if (s && typeof s.token === 'string' && s.token !== '') found.push(s.token)
    }
  } catch {
    // an unparseable MCP_SERVERS is reported by config validation
  }
  return found
}

async function vectorMemory(): Promise<string[]> {
  try {
    const names = (await readdir(VECTOR_MEMORY_DIR)).filter((n) => n.endsWith('.txt')).sort().reverse()
    return await Promise.all(names.map((n) => readFile(join(VECTOR_MEMORY_DIR, n), 'utf8')))
  } catch {
    return []
  }
}

async function main(): Promise<number> {
  // The executor's spans name it, not the function that created its Job.
  process.env.OTEL_SERVICE_NAME ??= 'kinetic-executor'
  const secrets = rawSecrets(process.env)
  const log = createExecutorLogger({ write: (line) => process.stderr.write(line) }, () => secrets, process.env.LOG_LEVEL ?? 'info')
  let step = process.env.STEP_NAME ?? 'unknown'
  try {
    const cfg = parseConfig(process.env)
    step = cfg.step
    const stepLog = log.child({
      workflow: cfg.workflow,
      step: cfg.step,
      ...(cfg.traceparent !== undefined ? { traceId: cfg.traceparent.split('-')[1] } : {}),
    })
    const provider = createProvider(cfg, { fetch: (u, i) => fetch(u, i), retry: defaultRetryPolicy, log: stepLog })
    if (cfg.offlineFallback) stepLog.warn({ provider: 'offline' }, 'No model API configured; the offline provider answers')
    if (cfg.codeExecutionRequested) {
      stepLog.warn('CODE_EXECUTION_ENABLED is set, but this executor has no code sandbox; use an executor image that provides execute_code')
    }
    stepLog.info({ provider: provider.name, model: cfg.model.name, autonomy: cfg.autonomy, mcpServers: cfg.mcpServers.length }, 'Step started')
    const facts = { provider: provider.name, model: cfg.model.name, maxTokens: cfg.model.maxTokens, temperature: cfg.model.temperature, workflow: cfg.workflow, step: cfg.step }
    const trace = stepTracer(spanSink(), cfg.traceparent, facts, telemetryConfigFrom(process.env).captureContent, Date.now(), (text) => scrubSecrets(text, secrets))
    if (trace) spanSink().warm()
    const result = await runStep(cfg, {
      provider,
      connectMcp,
      now: () => performance.now(),
      log: stepLog,
      ...(cfg.memory.type === 'vector' ? { vectorMemory } : {}),
      ...(trace ? { trace } : {}),
    })
    // At most 500 ms for the last spans (the exporter was loaded while the step ran), and none at
    // all when an export of this step already failed: an unreachable collector, whose exporter
    // retries until its own timeout, must not hold the step open; what is left is dropped and counted.
    await spanSink().flush(500)
    const bounded = boundedOutputLine(result.output, result.exitCode, secrets, cfg.step)
    if (bounded.exitCode !== result.exitCode) stepLog.error({ reason: 'OutputTooLarge' }, 'Step output is too large for the OUTPUT line')
    process.stdout.write(`${bounded.line}\n`)
    leaveTerminationMessage(bounded.line)
    return bounded.exitCode
  } catch (err) {
    const isConfig = err instanceof ConfigError
    const message = isConfig ? err.message : `executor crashed: ${(err as Error)?.message ?? String(err)}`
    log.error({ reason: isConfig ? 'ConfigInvalid' : 'InternalError', err: message }, 'Step failed before it could run')
    const out = failureOutput({ step, contentFilters: [] }, isConfig ? 'ConfigInvalid' : 'InternalError', message, undefined, [])
    process.stdout.write(`${outputLine(out, secrets)}\n`)
    return isConfig ? 2 : 1
  }
}

// Exit explicitly: idle keep-alive sockets of fetch or MCP sessions must not hold the Job open.
main().then(
  (code) => process.stdout.write('', () => process.exit(code)),
  () => process.exit(1),
)
