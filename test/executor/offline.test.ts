import { describe, expect, it } from 'vitest'
import { runWithEnv, withoutTiming } from './fixtures/run-helpers.js'

const env = {
  STEP_NAME: 'route',
  WORKFLOW_NAME: 'research',
  STEP_INPUT: '{"raw":"Where is the rollout guide?","offline":{"sources":["documentation","web"],"confidence":0.9}}',
  MEMORY_TYPE: 'summary',
}

describe('offline provider', () => {
  it('gives the same OUTPUT for the same environment, apart from duration_ms', async () => {
    const a = await runWithEnv(env)
    const b = await runWithEnv(env)
    expect(withoutTiming(a.output)).toEqual(withoutTiming(b.output))
    expect(JSON.stringify(withoutTiming(a.output))).toBe(JSON.stringify(withoutTiming(b.output)))
  })

  it('answers with the step, a summary of the input and the keys of STEP_INPUT.offline', async () => {
    const run = await runWithEnv(env)
    expect(run.exitCode).toBe(0)
    expect(withoutTiming(run.output)).toEqual({
      response: 'route done: Where is the rollout guide?',
      step: 'route',
      workflow: 'research',
      sources: ['documentation', 'web'],
      confidence: 0.9,
      _memory_update: 'Task: Where is the rollout guide? | Result: route done: Where is the rollout guide?',
      _metrics: { tokens_in: 49, tokens_out: 36, cost_usd: 0, tool_calls: 0, autonomy: 'supervised', provider: 'offline', model: 'claude-sonnet-4-6' },
    })
  })

  it('is chosen when no key and no endpoint are set, and refused when EXECUTOR_OFFLINE=false', async () => {
    expect((await runWithEnv({})).cfg.offline).toBe(true)
    await expect(runWithEnv({ EXECUTOR_OFFLINE: 'false' })).rejects.toThrow(/MODEL_API_KEY: required/)
  })

  it('answers with EXECUTOR_OFFLINE_RESPONSE, merging a JSON object', async () => {
    const run = await runWithEnv({ ...env, EXECUTOR_OFFLINE_RESPONSE: '{"verdict":"approve","findingsCount":0}' })
    expect(run.output).toMatchObject({ verdict: 'approve', findingsCount: 0, response: '{"verdict":"approve","findingsCount":0}', step: 'route' })
    const text = await runWithEnv({ ...env, EXECUTOR_OFFLINE_RESPONSE: 'Looks fine. **Verdict**: Request_Changes' })
    expect(text.output).toMatchObject({ response: 'Looks fine. **Verdict**: Request_Changes', verdict: 'request_changes' })
  })

  it('fails with the scripted message and exit code 1', async () => {
    const run = await runWithEnv({ ...env, EXECUTOR_OFFLINE_FAIL: 'model overloaded' })
    expect(run.exitCode).toBe(1)
    expect(withoutTiming(run.output)).toEqual({
      error: 'model overloaded',
      reason: 'ModelError',
      step: 'route',
      _metrics: { tokens_in: 0, tokens_out: 0, cost_usd: 0, tool_calls: 0, autonomy: 'supervised', provider: 'offline', model: 'claude-sonnet-4-6' },
    })
  })

  it('asks for scripted tool calls first and names them in its answer', async () => {
    const run = await runWithEnv({
      ...env,
      EXECUTOR_OFFLINE_TOOL_CALLS: '[{"name":"search_docs","arguments":{"q":"rollout"}}]',
    })
    // No MCP server offers search_docs, so the call is answered with an error and the model carries on.
    expect(run.exitCode).toBe(0)
    expect(run.output).toMatchObject({
      response: 'route done: Where is the rollout guide? (tools: search_docs)',
      tool_call_log: [{ tool: 'search_docs', status: 'error', reason: "Tool 'search_docs' is not available", input_preview: '{"q":"rollout"}' }],
    })
  })

  it('rejects a tool-call script that is not a JSON array as a configuration error', async () => {
    await expect(runWithEnv({ EXECUTOR_OFFLINE_TOOL_CALLS: '{"name":"x"}' })).rejects.toThrow(/EXECUTOR_OFFLINE_TOOL_CALLS/)
  })
})
