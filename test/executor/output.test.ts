import { describe, expect, it } from 'vitest'
import { extractFields } from '../../executor/extract.js'
import { memoryContext, memoryUpdate, truncateChars } from '../../executor/memory.js'
import { boundedOutputLine, failureOutput, MAX_OUTPUT_LINE_BYTES, outputLine, parseAnswerObject, successOutput, type Metrics } from '../../executor/output.js'
import type { ChatRequest } from '../../executor/providers/types.js'
import { runWithEnv } from './fixtures/run-helpers.js'

const metrics: Metrics = { tokens_in: 1, tokens_out: 2, cost_usd: 0.5, tool_calls: 0, duration_ms: 3, autonomy: 'full', provider: 'offline', model: 'm' }
const cfg = { step: 'review', contentFilters: [] }

describe('OUTPUT object', () => {
  it('merges the keys of a JSON answer and keeps reserved keys for the executor', () => {
    const out = successOutput(cfg, '{"verdict":"approve","_metrics":{"tokens_in":999},"tool_call_log":"forged","score":7}', metrics, [], undefined)
    expect(out).toEqual({
      verdict: 'approve',
      score: 7,
      response: '{"verdict":"approve","_metrics":{"tokens_in":999},"tool_call_log":"forged","score":7}',
      step: 'review',
      _metrics: metrics,
    })
  })

  it('reads a JSON object inside a lone fenced block', () => {
    expect(parseAnswerObject('```json\n{"a":1}\n```')).toEqual({ a: 1 })
    expect(parseAnswerObject('[1,2]')).toBeNull()
    expect(parseAnswerObject('"text"')).toBeNull()
    expect(parseAnswerObject('plain words')).toBeNull()
  })

  it('wraps text answers as response and lifts Markdown fields out of them', () => {
    const out = successOutput(cfg, '## Review\n**Verdict**: APPROVE\n**Risk Level:** `medium`\nfindings_count: 3\n**Anomaly Detected**: false', metrics, [], undefined)
    expect(out).toMatchObject({ step: 'review', verdict: 'approve', riskLevel: 'medium', findingsCount: 3, anomalyDetected: false })
  })

  it('never overwrites a key the answer already has with an extracted field', () => {
    expect(extractFields('**Severity**: high', { severity: 'p1' })).toEqual({})
    expect(extractFields('**Status**: succeeded and more', {})).toEqual({ status: 'succeeded' })
    expect(extractFields('status: fine', {})).toEqual({})
  })

  it('builds failures as {error, reason, step} and one line with secrets scrubbed', () => {
    const out = failureOutput(cfg, 'CostLimit', 'over budget with key sk-abcdef', metrics, [])
    expect(out).toEqual({ error: 'over budget with key sk-abcdef', reason: 'CostLimit', step: 'review', _metrics: metrics })
    const line = outputLine({ ...out, note: 'a\nb' }, ['sk-abcdef'])
    expect(line.startsWith('OUTPUT:{')).toBe(true)
    expect(line).not.toContain('\n')
    expect(line).not.toContain('sk-abcdef')
    expect(JSON.parse(line.slice('OUTPUT:'.length))).toMatchObject({ error: 'over budget with key [redacted]' })
  })

  it('replaces an output too large for the controller\'s log scanner with an OutputTooLarge failure', () => {
    const small = boundedOutputLine({ response: 'ok', _metrics: metrics }, 0, [], 'review')
    expect(small).toEqual({ line: `OUTPUT:{"response":"ok","_metrics":${JSON.stringify(metrics)}}`, exitCode: 0 })
    const huge = { response: 'x'.repeat(MAX_OUTPUT_LINE_BYTES), _metrics: metrics }
    const big = boundedOutputLine(huge, 0, [], 'review')
    expect(big.exitCode).toBe(1)
    expect(JSON.parse(big.line.slice('OUTPUT:'.length))).toEqual({
      error: `Output of ${outputLine(huge, []).length} bytes exceeds the 1048576-byte OUTPUT line limit`,
      reason: 'OutputTooLarge',
      step: 'review',
      _metrics: metrics,
    })
  })

  it('fails the step when the agent answers with a truthy error, as purko does', async () => {
    const run = await runWithEnv({ MODEL_PROVIDER: 'offline', EXECUTOR_OFFLINE_RESPONSE: '{"error":"repository not found"}' })
    expect(run.exitCode).toBe(1)
    expect(run.output).toMatchObject({ error: 'repository not found', reason: 'AgentError' })
  })
})

describe('memory', () => {
  const mem = (over: Partial<Parameters<typeof memoryContext>[0]>) => ({ type: 'buffer' as const, agentMemory: '', maxContextTokens: 8192, ...over })

  it('appends recalled memory to the first user message for persistent behavior', async () => {
    const seen: string[] = []
    await runWithEnv(
      { MODEL_PROVIDER: 'offline', MEMORY_BEHAVIOR: 'persistent', MEMORY_TYPE: 'summary', AGENT_MEMORY: '[2026-07-01 wf/s] Task: a | Result: b', STEP_INPUT: '{"task":"x"}' },
      {
        provider: () => ({
          name: 'spy',
          async complete(req: ChatRequest) {
            const first = req.messages[0]
            if (first?.role === 'user') seen.push(first.content)
            return { text: 'ok', toolCalls: [], usage: { tokensIn: 1, tokensOut: 1 } }
          },
        }),
      },
    )
    expect(seen).toEqual([
      'Execute this task:\n\n{"task":"x"}\n\n[Previous execution context]\n[2026-07-01 wf/s] Task: a | Result: b\n\n[Current task follows]',
    ])
  })

  it.each([
    [{ behavior: 'session' as const, agentMemory: 'ignored' }, ''],
    [{ type: 'none' as const, agentMemory: 'ignored' }, ''],
    [{ type: 'summary' as const, agentMemory: '' }, ''],
    [{ type: 'summary' as const, agentMemory: 'abcdefghij', maxContextTokens: 1 }, '\n\n[Previous execution context]\nabcd\n\n[Current task follows]'],
  ])('recalls only when the memory is persistent or summary: %j', (over, expected) => {
    expect(memoryContext(mem(over))).toBe(expected)
  })

  it('reads legacy vector memory newest first within the token budget', () => {
    expect(memoryContext(mem({ type: 'vector', maxContextTokens: 3 }), ['newest', 'older', 'oldest'])).toBe(
      '\n\n[Previous execution context]\nnewest\n\n[Current task follows]',
    )
  })

  it('emits _memory_update as Task | Result only when the agent remembers', () => {
    const base = { input: { task: 'investigate\nthe pod' }, inputText: '{}' }
    expect(memoryUpdate({ ...base, memory: mem({ behavior: 'persistent' }) }, 'found OOM')).toBe('Task: investigate the pod | Result: found OOM')
    expect(memoryUpdate({ ...base, memory: mem({ type: 'summary' }) }, 'x'.repeat(600))).toBe(`Task: investigate the pod | Result: ${'x'.repeat(500)}`)
    expect(memoryUpdate({ ...base, memory: mem({ behavior: 'session' }) }, 'found OOM')).toBeUndefined()
    expect(memoryUpdate({ input: 'not json', inputText: 'not json', memory: mem({ type: 'summary' }) }, 'r')).toBe('Task: not json | Result: r')
  })

  it('truncates without splitting characters', () => {
    expect(truncateChars('日本語', 2)).toBe('日本')
    expect(truncateChars('a😀b', 2)).toBe('a😀')
  })
})
