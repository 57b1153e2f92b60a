import type { Logger } from 'pino'
import type { ExecutorConfig } from './config.js'
import { StepError } from './errors.js'
import { Budget, startDeadline, type Deadline } from './guardrails.js'
import { memoryContext, memoryUpdate } from './memory.js'
import { failureOutput, parseAnswerObject, successOutput, type Metrics, type ToolLogEntry } from './output.js'
import { costUsd, estimateTokens, priceFor } from './pricing.js'
import type { StepTracer } from '../shared/telemetry/genai.js'
import { DeadlineError } from './providers/retry.js'
import type { Message, ModelProvider, ToolCall, ToolResult, ToolSpec } from './providers/types.js'
import { blockReason } from './tools/autonomy.js'
import type { DiscoveredTool, McpConnection, McpConnector } from './tools/mcp.js'
import { selectTools } from './tools/select.js'

/** What a run talks to; main.ts passes the real ones, tests pass local servers and a fixed clock. */
export interface RunDeps {
  provider: ModelProvider
  connectMcp: McpConnector
  /** Milliseconds on any monotonic-enough clock; only differences are used. */
  now: () => number
  log: Logger
  /** Legacy vector-memory files, newest first (empty when the volume is not mounted). */
  vectorMemory?: () => Promise<string[]>
  /** GenAI spans of this attempt (shared/telemetry/genai.ts); none when tracing is off. */
  trace?: StepTracer
}

/** The OUTPUT object and the exit code that goes with it (0 success, 1 step failed). */
export interface RunResult {
  output: Record<string, unknown>
  exitCode: 0 | 1
}

const PREVIEW_CHARS = 100

interface Route {
  tool: DiscoveredTool
  conn: McpConnection
}

interface ToolBox {
  offered: ToolSpec[]
  routes: Map<string, Route>
  /** Tools that exist but the autonomy level forbids, with the message the model gets. */
  blocked: Map<string, { server: string; reason: string }>
  /**
   * The same choice per server (key `server/tool`), for calls that name their server: a tool
   * another server's tool of the same name shadows for the model is still reachable this way.
   */
  qualified: Map<string, { route: Route } | { blocked: { server: string; reason: string } }>
}

const qualifiedKey = (server: string, tool: string): string => `${server}/${tool}`

async function openTools(cfg: ExecutorConfig, deps: RunDeps, deadline: Deadline, connections: McpConnection[]): Promise<ToolBox> {
  const box: ToolBox = { offered: [], routes: new Map(), blocked: new Map(), qualified: new Map() }
  // Manual autonomy offers nothing, so there is no reason to open sessions.
  if (cfg.mcpServers.length === 0 || cfg.autonomy === 'manual') return box
  const opened = await Promise.all(
    cfg.mcpServers.map(async (server) => {
      try {
        const conn = await deps.connectMcp(server, deadline.signal)
        connections.push(conn)
        deps.log.info({ server: server.name, tools: conn.tools.length }, 'Connected to MCP server')
        return conn
      } catch (err) {
        // One unreachable server must not fail the step; its tools are simply not offered.
        deps.log.warn({ server: server.name, err: (err as Error).message }, 'Could not connect to MCP server; its tools are not offered')
        return undefined
      }
    }),
  )
  if (deadline.signal.aborted) throw deadline.error()
  const conns = new Map<string, McpConnection>()
  // Registry order is kept so a later server's tool replaces an earlier one of the same name.
  const discovered: DiscoveredTool[] = []
  for (const conn of opened) {
    if (conn === undefined) continue
    conns.set(conn.server, conn)
    discovered.push(...conn.tools)
  }
  const selection = selectTools(cfg.agentTools, discovered)
  if (selection.unsupported.length > 0) {
    deps.log.warn({ tools: selection.unsupported }, 'Agent tools of these types are not provided by this executor')
  }
  if (selection.missing.length > 0) deps.log.warn({ tools: selection.missing }, 'Agent tools not found on any MCP server')
  for (const tool of selection.tools) {
    const conn = conns.get(tool.server)
    if (conn === undefined) continue
    const reason = blockReason(cfg.autonomy, tool)
    if (reason !== null) {
      box.blocked.set(tool.name, { server: tool.server, reason })
      continue
    }
    box.routes.set(tool.name, { tool, conn })
    box.offered.push({ name: tool.name, description: tool.description, inputSchema: tool.inputSchema })
  }
  for (const conn of conns.values()) {
    for (const tool of selectTools(cfg.agentTools, conn.tools).tools) {
      const reason = blockReason(cfg.autonomy, tool)
      box.qualified.set(qualifiedKey(conn.server, tool.name), reason !== null ? { blocked: { server: conn.server, reason } } : { route: { tool, conn } })
    }
  }
  deps.log.info(
    { autonomy: cfg.autonomy, offered: box.offered.map((t) => t.name), blocked: [...box.blocked.keys()] },
    'Tools selected',
  )
  return box
}

async function callTool(
  call: ToolCall,
  cfg: ExecutorConfig,
  box: ToolBox,
  deps: RunDeps,
  deadline: Deadline,
): Promise<{ result: ToolResult; entry: ToolLogEntry }> {
  const preview = JSON.stringify(call.arguments).slice(0, PREVIEW_CHARS)
  const named = call.server !== undefined ? box.qualified.get(qualifiedKey(call.server, call.name)) : undefined
  const route = call.server !== undefined ? (named !== undefined && 'route' in named ? named.route : undefined) : box.routes.get(call.name)
  if (route === undefined) {
    const blocked = call.server !== undefined ? (named !== undefined && 'blocked' in named ? named.blocked : undefined) : box.blocked.get(call.name)
    const reason =
      blocked?.reason ??
      (cfg.autonomy === 'manual' ? `Manual autonomy — tool '${call.name}' not allowed. Provide analysis without tools.` : null)
    if (reason !== null) {
      deps.log.warn({ tool: call.name, autonomy: cfg.autonomy }, 'Blocked tool call')
      return {
        result: { callId: call.id, name: call.name, content: `BLOCKED: ${reason}`, isError: true },
        entry: { tool: call.name, server: blocked?.server ?? '', elapsed_s: 0, input_preview: preview, result_bytes: 0, status: 'blocked', reason },
      }
    }
    const content =
      call.server !== undefined ? `Tool '${call.name}' is not available on MCP server '${call.server}'` : `Tool '${call.name}' is not available`
    return {
      result: { callId: call.id, name: call.name, content, isError: true },
      entry: { tool: call.name, server: call.server ?? '', elapsed_s: 0, input_preview: preview, result_bytes: 0, status: 'error', reason: content },
    }
  }
  const started = deps.now()
  let content: string
  let isError: boolean
  let structuredContent: Record<string, unknown> | undefined
  try {
    const outcome = await route.conn.call(call.name, call.arguments, deadline.signal)
    content = outcome.content
    isError = outcome.isError
    structuredContent = outcome.structuredContent
  } catch (err) {
    if (deadline.signal.aborted) throw deadline.error()
    // A failing tool is the model's problem to work around, as with any tool error result.
    content = `Tool '${call.name}' failed: ${(err as Error).message}`
    isError = true
  }
  const elapsed = Math.round((deps.now() - started) / 100) / 10
  deps.log.info({ tool: call.name, server: route.tool.server, isError, elapsed_s: elapsed }, 'Tool call finished')
  return {
    result: { callId: call.id, name: call.name, content, isError, ...(structuredContent !== undefined ? { structuredContent } : {}) },
    entry: {
      tool: call.name,
      server: route.tool.server,
      elapsed_s: elapsed,
      input_preview: preview,
      result_bytes: Buffer.byteLength(content),
      status: isError ? 'error' : 'ok',
      ...(isError ? { reason: content.slice(0, 200) } : {}),
    },
  }
}

/**
 * Runs one step: opens MCP sessions, then alternates model calls and tool calls until the model
 * answers or a guardrail stops it, and builds the OUTPUT object. Never throws: every failure
 * becomes `{error, reason}` with exit code 1.
 */
export async function runStep(cfg: ExecutorConfig, deps: RunDeps): Promise<RunResult> {
  const started = deps.now()
  const price = priceFor(cfg.model)
  const budget = new Budget({
    maxToolCalls: cfg.maxToolCalls,
    costLimitUsd: cfg.costLimitUsd,
    price,
    maxTokensPerCall: cfg.model.maxTokens,
  })
  const deadline = startDeadline(cfg.maxExecutionMs, deps.now)
  const toolLog: ToolLogEntry[] = []
  const connections: McpConnection[] = []
  const metrics = (): Metrics => ({
    tokens_in: budget.usage.tokensIn,
    tokens_out: budget.usage.tokensOut,
    cost_usd: Math.round(budget.usage.costUsd * 1e6) / 1e6,
    tool_calls: budget.usage.toolCalls,
    duration_ms: Math.max(0, Math.round(deps.now() - started)),
    autonomy: cfg.autonomy,
    provider: deps.provider.name,
    model: cfg.model.name,
  })

  try {
    const box = await openTools(cfg, deps, deadline, connections)
    const offered = cfg.maxToolCalls > 0 ? box.offered : []
    const vector = deps.vectorMemory !== undefined ? await deps.vectorMemory() : []
    const messages: Message[] = [{ role: 'user', content: `Execute this task:\n\n${cfg.inputText}${memoryContext(cfg.memory, vector)}` }]

    let answer: string
    for (;;) {
      deadline.check()
      budget.beforeModelCall(estimateTokens(cfg.systemPrompt + JSON.stringify(messages) + JSON.stringify(offered)))
      const callStart = Date.now()
      let res
      try {
        res = await deps.provider.complete({
          system: cfg.systemPrompt,
          messages,
          tools: offered,
          maxTokens: cfg.model.maxTokens,
          temperature: cfg.model.temperature,
          signal: deadline.signal,
        })
      } catch (err) {
        deps.trace?.chat({ startMs: callStart, endMs: Date.now(), tokensIn: 0, tokensOut: 0, costUsd: 0, toolCalls: 0, input: messages, error: (err as Error)?.message ?? String(err) })
        throw err
      }
      deps.trace?.chat({
        startMs: callStart, endMs: Date.now(), tokensIn: res.usage.tokensIn, tokensOut: res.usage.tokensOut,
        costUsd: costUsd(price, res.usage.tokensIn, res.usage.tokensOut), toolCalls: res.toolCalls.length,
        ...(res.finishReason !== undefined ? { finishReason: res.finishReason } : {}),
        input: messages, output: { text: res.text, toolCalls: res.toolCalls },
      })
      budget.afterModelCall(res.usage.tokensIn, res.usage.tokensOut)
      deps.log.info(
        { tokensIn: res.usage.tokensIn, tokensOut: res.usage.tokensOut, toolCalls: res.toolCalls.map((c) => c.name) },
        'Model answered',
      )
      if (res.toolCalls.length === 0) {
        answer = res.text
        break
      }
      messages.push({ role: 'assistant', text: res.text, toolCalls: res.toolCalls })
      const results: ToolResult[] = []
      for (const call of res.toolCalls) {
        budget.beforeToolCall(call.name)
        deadline.check()
        const toolStart = Date.now()
        const { result, entry } = await callTool(call, cfg, box, deps, deadline)
        deps.trace?.tool({
          startMs: toolStart, endMs: Date.now(), name: call.name, callId: call.id, status: entry.status,
          ...(entry.server ? { server: entry.server } : {}), ...(entry.reason !== undefined ? { error: entry.reason } : {}),
          arguments: call.arguments, result: result.content,
        })
        results.push(result)
        toolLog.push(entry)
      }
      messages.push({ role: 'tool', results })
    }

    const answered = parseAnswerObject(answer)?.response
    const update = memoryUpdate(cfg, typeof answered === 'string' ? answered : answer)
    const output = successOutput(cfg, answer, metrics(), toolLog, update)
    const err = output.error
    if (err !== undefined && err !== null && err !== false && err !== '' && err !== 0) {
      // Purko's convention: an answer carrying a truthy `error` fails the step.
      deps.log.error({ reason: 'AgentError' }, 'The agent answered with an error')
      finishTrace(deps, budget.usage, 'AgentError')
      return { output: { ...output, reason: output.reason ?? 'AgentError' }, exitCode: 1 }
    }
    deps.log.info({ metrics: output._metrics }, 'Step succeeded')
    finishTrace(deps, budget.usage)
    return { output, exitCode: 0 }
  } catch (thrown) {
    const err =
      thrown instanceof StepError
        ? thrown
        : thrown instanceof DeadlineError || deadline.signal.aborted
          ? deadline.error()
          : new StepError('InternalError', (thrown as Error)?.message ?? String(thrown))
    deps.log.error({ reason: err.reason, err: err.message }, 'Step failed')
    finishTrace(deps, budget.usage, err.reason)
    return { output: failureOutput(cfg, err.reason, err.message, metrics(), toolLog), exitCode: 1 }
  } finally {
    deadline.dispose()
    await Promise.all(connections.map((conn) => conn.close().catch(() => undefined)))
  }
}

function finishTrace(deps: RunDeps, usage: Budget['usage'], error?: string): void {
  deps.trace?.finish({
    endMs: Date.now(), tokensIn: usage.tokensIn, tokensOut: usage.tokensOut, costUsd: usage.costUsd, toolCalls: usage.toolCalls,
    ...(error !== undefined ? { error } : {}),
  })
}
