import { describe, expect, it } from 'vitest'
import { RunControlError } from '../../shared/run-control/errors.js'
import { MAX_DECIDABLE_STEP, MAX_REASON, parseAction, type ActionKind } from '../../shared/run-control/request.js'

const parse = (kind: ActionKind, params: Record<string, string>, body = '', idempotencyKey?: string) =>
  parseAction(kind, { params, body, ...(idempotencyKey !== undefined ? { idempotencyKey } : {}) }, 'ai-agents')

function refusal(f: () => unknown): { status: number; body: unknown } {
  try {
    f()
  } catch (err) {
    if (err instanceof RunControlError) return { status: err.status, body: err.body() }
    throw err
  }
  throw new Error('no refusal')
}

describe('what a request asks for', () => {
  it('reads an approval with its namespace, workflow, step and reason', () => {
    expect(parse('approve', { namespace: 'team-a', workflow: 'deploy', step: 'ship' }, '{"reason":"  looks good  "}'))
      .toEqual({ kind: 'approve', namespace: 'team-a', workflow: 'deploy', step: 'ship', reason: 'looks good' })
  })

  it("puts purko's name-only paths in the agent namespace, and an empty body or blank reason means no reason", () => {
    expect(parse('deny', { workflow: 'deploy', step: 'ship' })).toEqual({ kind: 'deny', namespace: 'ai-agents', workflow: 'deploy', step: 'ship' })
    expect(parse('cancel', { namespace: 'team-a', workflow: 'deploy' }, '{"reason":"   "}')).toEqual({ kind: 'cancel', namespace: 'team-a', workflow: 'deploy' })
  })

  it('reads rerun parameters, keeping strings and turning numbers and booleans into their JSON text', () => {
    expect(parse('rerun', { namespace: 'team-a', workflow: 'deploy' }, '{"parameters":{"env":"prod","replicas":3,"dry":false}}'))
      .toEqual({ kind: 'rerun', namespace: 'team-a', workflow: 'deploy', parameters: { env: 'prod', replicas: '3', dry: 'false' } })
  })

  it('reads a manual run with its Idempotency-Key', () => {
    expect(parse('run', { namespace: 'team-a', template: 'nightly' }, '{"parameters":{"env":"dev"}}', ' key-1 '))
      .toEqual({ kind: 'run', namespace: 'team-a', template: 'nightly', parameters: { env: 'dev' }, idempotencyKey: 'key-1' })
  })

  it('reads a promotion approval level in any case', () => {
    expect(parse('promote', { namespace: 'team-a', agent: 'reviewer' }, '{"level":"HA","reason":"two weeks clean"}'))
      .toEqual({ kind: 'promote', namespace: 'team-a', agent: 'reviewer', level: 'ha', reason: 'two weeks clean' })
  })

  it('reads no body for logs', () => {
    expect(parse('logs', { namespace: 'team-a', workflow: 'deploy', step: 'ship' }, 'not json')).toEqual({ kind: 'logs', namespace: 'team-a', workflow: 'deploy', step: 'ship' })
  })

  it.each([
    ['a body that is not JSON', 'approve', { namespace: 'team-a', workflow: 'w', step: 's' }, '{', 'The body must be a JSON object'],
    ['a JSON array', 'approve', { namespace: 'team-a', workflow: 'w', step: 's' }, '[1]', 'The body must be a JSON object'],
    ['a reason that is not a string', 'deny', { namespace: 'team-a', workflow: 'w', step: 's' }, '{"reason":5}', '"reason" must be a string'],
    ['a reason too long', 'deny', { namespace: 'team-a', workflow: 'w', step: 's' }, JSON.stringify({ reason: 'x'.repeat(MAX_REASON + 1) }), `"reason" is longer than ${MAX_REASON} characters`],
    ['an invalid namespace', 'cancel', { namespace: 'Team_A', workflow: 'w' }, '', 'Invalid namespace "Team_A"'],
    ['an invalid workflow name', 'cancel', { namespace: 'team-a', workflow: 'W!' }, '', 'Invalid workflow name "W!"'],
    ['an invalid step name', 'approve', { namespace: 'team-a', workflow: 'w', step: 'Step.1' }, '', 'Invalid step name "Step.1"'],
    ['nested parameters', 'rerun', { namespace: 'team-a', workflow: 'w' }, '{"parameters":{"a":{"b":1}}}', 'Parameter "a" must be a string, number or boolean'],
    ['parameters that are a list', 'run', { namespace: 'team-a', template: 't' }, '{"parameters":["a"]}', '"parameters" must be an object of strings'],
    ['an unknown level', 'promote', { namespace: 'team-a', agent: 'a' }, '{"level":"shu"}', '"level" must be "ha" or "ri", the level the promotion is approved for'],
  ] as const)('answers 400 for %s', (_, kind, params, body, message) => {
    expect(refusal(() => parse(kind, params, body))).toEqual({ status: 400, body: { error: 'bad_request', message } })
  })

  it('refuses to decide a step whose annotation key could not be written (the key name is at most 63 characters)', () => {
    const fits = 'a'.repeat(MAX_DECIDABLE_STEP)
    expect(parse('approve', { namespace: 'team-a', workflow: 'w', step: fits })).toMatchObject({ step: fits })
    expect(refusal(() => parse('approve', { namespace: 'team-a', workflow: 'w', step: `${fits}a` })).status).toBe(400)
    // Logs of such a step are fine: no annotation is written.
    expect(parse('logs', { namespace: 'team-a', workflow: 'w', step: `${fits}a` })).toMatchObject({ kind: 'logs' })
  })

  it('refuses an Idempotency-Key with control characters or over 255 characters', () => {
    expect(refusal(() => parse('run', { namespace: 'team-a', template: 't' }, '', 'a b')).status).toBe(400)
    expect(refusal(() => parse('run', { namespace: 'team-a', template: 't' }, '', 'k'.repeat(256))).status).toBe(400)
  })
})
