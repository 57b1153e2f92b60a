import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it } from 'vitest'
import { startFakeApi, type FakeApi } from './fixtures/http-fake.js'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))

interface Exit {
  code: number | null
  stdout: string[]
  stderr: string[]
}

/** Runs the executor the way a step Job does: its entry point, environment variables only. */
function spawnExecutor(vars: Record<string, string>): Promise<Exit> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'executor/main.ts'], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...vars },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let out = ''
    let err = ''
    child.stdout.on('data', (c: Buffer) => (out += c.toString('utf8')))
    child.stderr.on('data', (c: Buffer) => (err += c.toString('utf8')))
    child.on('error', reject)
    child.on('close', (code) => resolve({ code, stdout: out.split('\n').filter((l) => l !== ''), stderr: err.split('\n').filter((l) => l !== '') }))
  })
}

function outputOf(exit: Exit): Record<string, unknown> {
  const lines = exit.stdout.filter((l) => l.startsWith('OUTPUT:'))
  expect(lines).toHaveLength(1)
  expect(exit.stdout).toHaveLength(1)
  return JSON.parse(lines[0]!.slice('OUTPUT:'.length)) as Record<string, unknown>
}

let api: FakeApi | undefined
afterEach(async () => {
  await api?.close()
  api = undefined
})

// Each spawn starts Node with the TypeScript loader; on a busy CI machine that takes seconds.
const SPAWN_TIMEOUT_MS = 30_000

describe('container contract (spawned process, env only)', () => {
  it('exits 0 with one OUTPUT line and JSON logs on stderr, never showing the API key', async () => {
    api = await startFakeApi([
      { json: { choices: [{ message: { role: 'assistant', content: '{"response":"planned","tasks":3}' } }], usage: { prompt_tokens: 10, completion_tokens: 5 } } },
    ])
    const exit = await spawnExecutor({
      STEP_NAME: 'plan',
      WORKFLOW_NAME: 'release',
      STEP_INPUT: '{"task":"plan the release"}',
      MODEL_PROVIDER: 'openai',
      MODEL_NAME: 'gpt-4o-mini',
      MODEL_ENDPOINT: api.url,
      MODEL_API_KEY: 'sk-container-secret-987654321',
      MCP_SERVERS: '[{"name":"gh","url":"http://127.0.0.1:1","auth":"bearer","token":"mcp-container-token-42"}]',
      TRACEPARENT: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
    })
    expect(exit.code).toBe(0)
    expect(outputOf(exit)).toMatchObject({ response: 'planned', tasks: 3, step: 'plan', _metrics: { tokens_in: 10, tokens_out: 5 } })
    expect(api.received[0]?.headers.authorization).toBe('Bearer sk-container-secret-987654321')
    expect(exit.stderr.length).toBeGreaterThan(0)
    for (const line of exit.stderr) {
      expect(() => JSON.parse(line)).not.toThrow()
      expect(line).not.toContain('sk-container-secret-987654321')
      expect(line).not.toContain('mcp-container-token-42')
    }
    expect(exit.stderr.some((l) => l.includes('"traceId":"0af7651916cd43dd8448eb211c80319c"'))).toBe(true)
  }, SPAWN_TIMEOUT_MS)

  it('exits 1 with the error in the OUTPUT line when the step fails, scrubbing secrets from it', async () => {
    const exit = await spawnExecutor({
      STEP_NAME: 'deploy',
      MODEL_PROVIDER: 'offline',
      MODEL_API_KEY: 'sk-leaky-secret-123456789',
      EXECUTOR_OFFLINE_FAIL: 'upstream refused key sk-leaky-secret-123456789',
    })
    expect(exit.code).toBe(1)
    expect(outputOf(exit)).toMatchObject({ error: 'upstream refused key [redacted]', reason: 'ModelError', step: 'deploy' })
    expect([...exit.stdout, ...exit.stderr].join('\n')).not.toContain('sk-leaky-secret-123456789')
    expect(exit.stderr.some((l) => l.includes('Step failed'))).toBe(true)
  }, SPAWN_TIMEOUT_MS)

  it('exits 2 with a ConfigInvalid OUTPUT line and a clear stderr message for bad configuration', async () => {
    const exit = await spawnExecutor({ STEP_NAME: 'scan', MAX_TOOL_CALLS: 'lots', AUTONOMY_LEVEL: 'yolo', MODEL_API_KEY: 'sk-never-shown-55555' })
    expect(exit.code).toBe(2)
    const out = outputOf(exit)
    expect(out).toMatchObject({ reason: 'ConfigInvalid', step: 'scan' })
    expect(String(out.error)).toContain('MAX_TOOL_CALLS: must be a number')
    expect(String(out.error)).toContain('AUTONOMY_LEVEL')
    expect(exit.stderr.some((l) => l.includes('MAX_TOOL_CALLS'))).toBe(true)
    expect([...exit.stdout, ...exit.stderr].join('\n')).not.toContain('sk-never-shown-55555')
  }, SPAWN_TIMEOUT_MS)
})
