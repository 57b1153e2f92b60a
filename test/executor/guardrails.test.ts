import { describe, expect, it } from 'vitest'
import { applyFilters, parseContentFilters } from '../../executor/content-filters.js'
import { parseDurationMs } from '../../executor/duration.js'
import type { ModelProvider } from '../../executor/providers/types.js'
import { startFakeApi, type FakeApi } from './fixtures/http-fake.js'
import { startMcpServer, type TestMcpServer } from './fixtures/mcp-server.js'
import { closedAfterEach, runWithEnv } from './fixtures/run-helpers.js'

const track = closedAfterEach()
let api: FakeApi | undefined
let mcp: TestMcpServer | undefined

const script = (n: number) => JSON.stringify(Array.from({ length: n }, () => ({ name: 'list_pods', arguments: { namespace: 'prod' } })))

describe('MAX_TOOL_CALLS', () => {
  it('stops the step at the call past the limit and never executes it', async () => {
    mcp = track(await startMcpServer())
    const run = await runWithEnv({
      MODEL_PROVIDER: 'offline',
      MAX_TOOL_CALLS: '2',
      MCP_SERVERS: JSON.stringify([{ name: 'cluster', url: mcp.url }]),
      EXECUTOR_OFFLINE_TOOL_CALLS: script(3),
    })
    expect(run.exitCode).toBe(1)
    expect(run.output).toMatchObject({
      reason: 'MaxToolCalls',
      error: "Tool call limit reached: the model asked for 'list_pods' after 2 of 2 allowed tool calls",
      _metrics: { tool_calls: 2 },
    })
    expect(mcp.calls).toHaveLength(2)
    expect(run.output.tool_call_log).toHaveLength(2)
  })

  it('lets a run with exactly the allowed number of calls succeed', async () => {
    mcp = track(await startMcpServer())
    const run = await runWithEnv({
      MODEL_PROVIDER: 'offline',
      MAX_TOOL_CALLS: '2',
      MCP_SERVERS: JSON.stringify([{ name: 'cluster', url: mcp.url }]),
      EXECUTOR_OFFLINE_TOOL_CALLS: script(2),
    })
    expect(run.exitCode).toBe(0)
    expect(run.output._metrics).toMatchObject({ tool_calls: 2 })
  })
})

describe('COST_LIMIT_USD', () => {
  // Offline tokens are ceil(chars / 4); price 1,000,000 USD per MTok makes one token cost 1 USD.
  const priced = { MODEL_PROVIDER: 'offline', MODEL_PRICE_IN: '1000000', MODEL_PRICE_OUT: '1000000', MODEL_MAX_TOKENS: '50' }

  it('stops before the model call whose worst case would pass the limit', async () => {
    const calls: number[] = []
    const run = await runWithEnv(
      { ...priced, COST_LIMIT_USD: '60' },
      {
        provider: () => ({
          name: 'counting',
          async complete() {
            calls.push(1)
            return { text: 'x', toolCalls: [], usage: { tokensIn: 1, tokensOut: 1 } }
          },
        }),
      },
    )
    expect(calls).toHaveLength(0)
    expect(run.exitCode).toBe(1)
    expect(run.output.reason).toBe('CostLimit')
    expect(String(run.output.error)).toMatch(/^Cost limit: the next model call could cost up to \$\d+\.\d{4}, .* past the limit of \$60\.00; stopped before calling$/)
    expect(run.output._metrics).toMatchObject({ cost_usd: 0, tokens_in: 0 })
  })

  it('allows calls while the worst case fits and stops at the first that does not', async () => {
    let turn = 0
    const provider: ModelProvider = {
      name: 'tooling',
      async complete() {
        turn += 1
        return { text: '', toolCalls: [{ id: `c${turn}`, name: 'missing_tool', arguments: {} }], usage: { tokensIn: 40, tokensOut: 10 } }
      },
    }
    const run = await runWithEnv({ ...priced, COST_LIMIT_USD: '250' }, { provider: () => provider })
    expect(run.output.reason).toBe('CostLimit')
    // Each call costs 50; the worst case of the next is input estimate + 50, so the loop stops with money left.
    expect(turn).toBeGreaterThanOrEqual(2)
    expect(String(run.output.error)).toContain('stopped before calling')
    expect((run.output._metrics as { cost_usd: number }).cost_usd).toBe(turn * 50)
    expect((run.output._metrics as { cost_usd: number }).cost_usd).toBeLessThanOrEqual(250)
  })

  it('never trips when no limit is set', async () => {
    const run = await runWithEnv({ ...priced })
    expect(run.exitCode).toBe(0)
    expect((run.output._metrics as { cost_usd: number }).cost_usd).toBeGreaterThan(0)
  })
})

describe('MAX_EXECUTION_TIME', () => {
  it('stops between steps once the run clock passes the limit', async () => {
    let clock = 0
    const provider: ModelProvider = {
      name: 'slow',
      async complete() {
        clock += 40_000
        return { text: '', toolCalls: [{ id: `c${clock}`, name: 'nothing', arguments: {} }], usage: { tokensIn: 1, tokensOut: 1 } }
      },
    }
    const run = await runWithEnv({ MODEL_PROVIDER: 'offline', MAX_EXECUTION_TIME: '1m' }, { provider: () => provider, now: () => clock })
    expect(run.exitCode).toBe(1)
    expect(run.output).toMatchObject({ reason: 'MaxExecutionTime', error: 'Execution time limit of 60s (MAX_EXECUTION_TIME) reached' })
    expect(clock).toBe(80_000)
  })

  it('cuts off a model request that never answers', async () => {
    api = track(await startFakeApi([{ hang: true }]))
    const run = await runWithEnv({ MODEL_PROVIDER: 'openai', MODEL_ENDPOINT: api.url, MAX_EXECUTION_TIME: '300ms' })
    expect(run.exitCode).toBe(1)
    expect(run.output).toMatchObject({ reason: 'MaxExecutionTime' })
    expect(api.received).toHaveLength(1)
  })

  it('does not trip at once for a limit longer than a Node timer can wait', async () => {
    const provider: ModelProvider = {
      name: 'pausing',
      complete: () =>
        new Promise((resolve) => setTimeout(() => resolve({ text: 'done', toolCalls: [], usage: { tokensIn: 1, tokensOut: 1 } }), 20)),
    }
    const run = await runWithEnv({ MODEL_PROVIDER: 'offline', MAX_EXECUTION_TIME: '720h' }, { provider: () => provider })
    expect(run.exitCode).toBe(0)
  })

  it.each([
    ['90s', 90_000],
    ['15m', 900_000],
    ['1h30m', 5_400_000],
    ['2.5s', 2500],
    ['300ms', 300],
    ['300', 300_000],
    ['1.5', 1500],
    ['soon', null],
    ['5 minutes', null],
  ])('reads %s as %s ms', (text, ms) => {
    expect(parseDurationMs(text)).toBe(ms)
  })
})

describe('CONTENT_FILTERS', () => {
  const pii = parseContentFilters('["pii"]')
  const secrets = parseContentFilters('["no-secrets-in-output"]')

  it.each([
    ['mail ops@example.com now', 'mail ***EMAIL*** now'],
    ['call +1 415-555-0132 today', 'call ***PHONE*** today'],
    ['call (415) 555-0132', 'call ***PHONE***'],
    ['card 4111 1111 1111 1111 on file', 'card ***CARD*** on file'],
    ['ssn 123-45-6789', 'ssn ***SSN***'],
    ['order 1234567890123 is not a card', 'order 1234567890123 is not a card'],
    ['host 10.0.12.150 on 2026-11-30', 'host 10.0.12.150 on 2026-11-30'],
  ])('pii redacts %j', (input, expected) => {
    expect(applyFilters(input, pii)).toBe(expected)
  })

  it.each([
    ['key sk-proj-abcdefghijklmnop1234 leaked', 'key ***REDACTED*** leaked'],
    ['token ghp_abcdefghijklmnopqrstuvwxyz0123456789', 'token ***REDACTED***'],
    ['AKIAIOSFODNN7EXAMPLE', '***REDACTED***'],
    ['-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----', '***REDACTED***'],
    ['Authorization: Bearer abcdefghijklmnop.qrstuv', 'Authorization: ***REDACTED***'],
    ['password=hunter2hunter2', 'password=***REDACTED***'],
    ['"api_key": "abc123def456"', '"api_key": "***REDACTED***"'],
    ['tokens_used: 1234', 'tokens_used: 1234'],
  ])('secrets redacts %j', (input, expected) => {
    expect(applyFilters(input, secrets)).toBe(expected)
  })

  it('redacts the step output, including structured keys, but not _metrics', async () => {
    const run = await runWithEnv({
      MODEL_PROVIDER: 'offline',
      CONTENT_FILTERS: '["no-pii","secrets","regex:INC-\\\\d+:INC-NNNN"]',
      EXECUTOR_OFFLINE_RESPONSE: JSON.stringify({
        response: 'Escalated INC-4711 to oncall@example.com',
        contact: { phone: '+44 20 7946 0958' },
        leaked: 'api_key=abcdef1234567890',
      }),
    })
    expect(run.exitCode).toBe(0)
    expect(run.output).toMatchObject({
      response: 'Escalated INC-NNNN to ***EMAIL***',
      contact: { phone: '***PHONE***' },
      leaked: 'api_key=***REDACTED***',
    })
    expect(run.output._metrics).toMatchObject({ provider: 'offline' })
  })

  it('a phone number touching a word character or a dot is not one; one later in the same run still is', () => {
    expect(applyFilters('id x415-555-0132 and 415-555-0133.', pii)).toBe('id x415-555-0132 and 415-555-0133.')
    expect(applyFilters('a1415 555 0132, then 020 7946 0958 ok', pii)).toBe('a1415 555 0132, then ***PHONE*** ok')
  })

  describe('bounded cost (issue 27, item 2)', () => {
    it('an agent author\'s `regex:` filter runs on RE2: `(a+)+$` on 48 a\'s and a ! answers at once', () => {
      const filters = parseContentFilters(JSON.stringify(['regex:^(a+)+$:X']))
      expect(applyFilters(`${'a'.repeat(48)}!`, filters)).toBe(`${'a'.repeat(48)}!`)
      expect(applyFilters('a'.repeat(48), filters)).toBe('X')
    })

    it('a filter pattern that needs backtracking is a configuration error that says why', () => {
      expect(() => parseContentFilters(JSON.stringify(['regex:secret(?=\\d)']))).toThrow(/does not compile: invalid regular expression .*RE2 syntax: no backreferences or lookaround/)
      expect(() => parseContentFilters(JSON.stringify([{ type: 'regex', pattern: '(x)\\1' }]))).toThrow(/backreferences are not supported/)
    })

    it('the built-in filters finish on model output shaped against them (256 KB each) and still redact what follows', () => {
      const shaped = [
        `${'a'.repeat(262_144)} password=hunter2hunter2`, // a long name that almost is one (the secret assignment)
        `${'a.'.repeat(131_072)} mail ops@example.com`, // an address that never comes (e-mail)
        `${'eyJ'.repeat(87_382)} token ghp_abcdefghijklmnopqrstuvwxyz0123456789`, // a JWT that never completes
        `${'-----BEGIN RSA PRIVATE KEY-----'.repeat(8_192)} AKIAIOSFODNN7EXAMPLE`, // keys that never end
      ]
      const all = parseContentFilters('["pii","secrets"]')
      const out = shaped.map((text) => applyFilters(text, all))
      expect(out[0]!.endsWith('password=***REDACTED***')).toBe(true)
      expect(out[1]!.endsWith('mail ***EMAIL***')).toBe(true)
      expect(out[2]!.endsWith('token ***REDACTED***')).toBe(true)
      expect(out[3]!.endsWith(' ***REDACTED***')).toBe(true)
    })
  })

  it('keeps unknown filter names so the run can warn instead of failing a purko manifest', () => {
    expect(parseContentFilters('no-profanity, pii')).toEqual([{ kind: 'unknown', name: 'no-profanity' }, { kind: 'pii' }])
    expect(() => parseContentFilters('["regex:([:x"]')).toThrow(/does not compile/)
  })
})
