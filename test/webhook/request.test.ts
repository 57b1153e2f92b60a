import { describe, expect, it } from 'vitest'
import { deliverySuffix } from '../../shared/template/run-builder.js'
import { normalize } from '../../shared/webhook/normalize.js'
import { RateLimiter, rateLimitFromEnv } from '../../shared/webhook/rate-limit.js'
import { deliveryIdOf, parsePayload, parseTriggerPath, PATH_ERROR, webhookRun } from '../../shared/webhook/request.js'
import { payloadParameters } from '../../shared/webhook/run-inputs.js'
import { workflowOf } from '../support/objects.js'

const enc = (s: string) => new TextEncoder().encode(s)

describe('the trigger path', () => {
  it.each([
    ['/api/trigger/team/deploy', { namespace: 'team', workflow: 'deploy' }],
    ['/api/trigger/team/deploy/', { namespace: 'team', workflow: 'deploy' }],
    ['/api/trigger/team', { namespace: 'team' }],
    ['/api/trigger/team/', { namespace: 'team' }],
    ['/api/trigger/team/nightly.report', { namespace: 'team', workflow: 'nightly.report' }],
  ])('%s', (path, want) => {
    expect(parseTriggerPath(path)).toEqual(want)
  })

  it.each([
    ['/api/trigger', PATH_ERROR],
    ['/api/trigger/', PATH_ERROR],
    ['/api/trigger//deploy', PATH_ERROR],
    ['/api/trigger/team/deploy/extra', PATH_ERROR],
    ['/api/trigger/Team/deploy', 'is not a namespace name'],
    ['/api/trigger/team/Deploy_Now', 'is not a Workflow name'],
    ['/api/trigger/team/%2e%2e', 'is not a Workflow name'],
  ])('%s is refused', (path, words) => {
    const got = parseTriggerPath(path)
    expect('error' in got && got.error).toContain(words)
  })
})

describe('the delivery id', () => {
  const from = (h: Record<string, string>) => deliveryIdOf((n) => h[n])

  it('is read from X-GitHub-Delivery, then X-Kinetic-Delivery, then Idempotency-Key', () => {
    expect(from({ 'x-github-delivery': 'gh-1', 'x-kinetic-delivery': 'k-1', 'idempotency-key': 'i-1' })).toEqual({ id: 'gh-1' })
    expect(from({ 'x-kinetic-delivery': ' k-1 ', 'idempotency-key': 'i-1' })).toEqual({ id: 'k-1' })
    expect(from({ 'idempotency-key': 'i-1' })).toEqual({ id: 'i-1' })
    expect(from({})).toEqual({})
  })

  it('refuses one that is too long or not printable', () => {
    expect(from({ 'idempotency-key': 'x'.repeat(257) })).toEqual({ error: expect.stringContaining('at most 256') })
    expect(from({ 'idempotency-key': 'a\u0007b' })).toEqual({ error: expect.stringContaining('printable') })
  })
})

describe('the body', () => {
  it.each([
    ['an object', '{"a":1}', { a: 1 }],
    ['an empty body', '', {}],
    ['whitespace', ' \n', {}],
  ])('%s is a payload', (_, body, payload) => {
    expect(parsePayload(enc(body))).toEqual({ payload })
  })

  it.each([['not JSON', 'title=x'], ['an array', '[1,2]'], ['a string', '"x"'], ['null', 'null'], ['a number', '3']])('%s is refused', (_, body) => {
    expect(parsePayload(enc(body))).toEqual({ error: 'body must be a JSON object' })
  })
})

describe('run parameters from the payload (purko\'s webhook trigger)', () => {
  it('merges every top-level key: strings verbatim, other values as Go %v', () => {
    expect(payloadParameters({
      env: 'prod', replicas: 3, ratio: 0.5, big: 1000000, tiny: 0.00001, on: true, none: null,
      list: ['a', 1], obj: { b: 2, a: 'x' },
    })).toEqual({
      env: 'prod', replicas: '3', ratio: '0.5', big: '1e+06', tiny: '1e-05', on: 'true', none: '<nil>',
      list: '[a 1]', obj: 'map[a:x b:2]',
    })
  })

  it('merges a top-level `parameters` object key by key, over the top-level keys (the docs\' form)', () => {
    expect(payloadParameters({ env: 'staging', parameters: { env: 'prod', count: 2 } })).toEqual({ env: 'prod', count: '2' })
  })

  it('a `parameters` that is not an object is one parameter, as any other key', () => {
    expect(payloadParameters({ parameters: 'x=1' })).toEqual({ parameters: 'x=1' })
    expect(payloadParameters({ parameters: [1] })).toEqual({ parameters: '[1]' })
  })
})

describe('the run a webhook makes', () => {
  const template = workflowOf('incident', [
    { name: 'triage' },
    { name: 'empty', input: {} },
    { name: 'fixed', input: { task: 'page the on-call' } },
  ], { description: 'Incident', parameters: { env: 'staging', team: 'sre' }, trigger: { webhook: { secret: { name: 'hook' } } } })
  const payload = { title: 'DB down', severity: 'critical', env: 'prod' }
  const n = normalize('unknown', payload)

  it('is named from the template uid and the delivery key, so a redelivery names the same run; the sender\'s id is only recorded', () => {
    const a = webhookRun({ template, payload, normalized: n, route: 'explicit', deliveryId: 'd-1', deliveryKey: 'github:1:abc', randomSuffix: 'aaaaaaaa' })
    const b = webhookRun({ template, payload, normalized: n, route: 'explicit', deliveryId: 'd-2', deliveryKey: 'github:1:abc', randomSuffix: 'bbbbbbbb' })
    expect(a.metadata.name).toBe(`incident-run-${deliverySuffix('uid-incident', 'github:1:abc')}`)
    expect(b.metadata.name).toBe(a.metadata.name)
    expect(a.metadata.annotations).toMatchObject({ 'kinetic.dev/delivery-id': 'd-1', 'kinetic.dev/delivery-key': 'github:1:abc' })
    const unkeyed = webhookRun({ template, payload, normalized: n, route: 'explicit', deliveryId: 'd-1', randomSuffix: 'cccccccc' })
    expect(unkeyed.metadata.name).toBe('incident-run-cccccccc')
  })

  it('without a delivery id it takes the random suffix and records none', () => {
    const run = webhookRun({ template, payload, normalized: n, route: 'rule:catch', randomSuffix: '0123abcd' })
    expect(run.metadata.name).toBe('incident-run-0123abcd')
    expect(run.metadata.annotations).toEqual({
      'purko.io/workflow-template': 'incident', 'purko.io/trigger-type': 'webhook', 'purko.io/trigger-source': 'unknown', 'purko.io/trigger-route': 'rule:catch',
    })
  })

  it("merges the payload's parameters over the template's, drops the trigger, and gives steps without input the webhook input", () => {
    const run = webhookRun({ template, payload, normalized: n, route: 'explicit', randomSuffix: '0123abcd' })
    expect(run.spec.trigger).toBeUndefined()
    expect(run.spec.parameters).toEqual({ env: 'prod', team: 'sre', title: 'DB down', severity: 'critical' })
    const input = { description: 'DB down | severity: critical', task: 'DB down | severity: critical', webhook_payload: payload, webhook_source: 'unknown' }
    expect(run.spec.steps.map((s) => [s.name, s.input])).toEqual([['triage', input], ['empty', input], ['fixed', { task: 'page the on-call' }]])
    expect(run.metadata.ownerReferences).toEqual([{ apiVersion: 'purko.io/v1alpha1', kind: 'Workflow', name: 'incident', uid: 'uid-incident', controller: true, blockOwnerDeletion: false }])
    expect(run.metadata.labels).toEqual({ 'kinetic.dev/template': 'incident' })
  })
})

describe('the rate limit (token bucket per key)', () => {
  it('lets a burst through, then refills at the rate, and says when to retry', () => {
    const limiter = new RateLimiter({ ratePerSecond: 2, burst: 3 })
    const at = (ms: number) => limiter.take('team/deploy', ms)
    expect([at(0), at(0), at(0)].every((a) => a.allowed)).toBe(true)
    expect(at(0)).toEqual({ allowed: false, retryAfterSeconds: 1 })
    expect(at(499).allowed).toBe(false)
    expect(at(500).allowed).toBe(true)
    expect(at(500).allowed).toBe(false)
  })

  it('keeps one bucket per key', () => {
    const limiter = new RateLimiter({ ratePerSecond: 1, burst: 1 })
    expect(limiter.take('team/a', 0).allowed).toBe(true)
    expect(limiter.take('team/a', 0).allowed).toBe(false)
    expect(limiter.take('team/b', 0).allowed).toBe(true)
  })

  it('a slow rate asks for a longer wait', () => {
    const limiter = new RateLimiter({ ratePerSecond: 0.1, burst: 1 })
    limiter.take('k', 0)
    expect(limiter.take('k', 0)).toEqual({ allowed: false, retryAfterSeconds: 10 })
  })

  it('rate 0 turns it off', () => {
    const limiter = new RateLimiter({ ratePerSecond: 0, burst: 1 })
    expect(Array.from({ length: 100 }, () => limiter.take('k', 0).allowed).every(Boolean)).toBe(true)
  })

  it('holds a bounded number of keys, dropping refilled buckets first', () => {
    const limiter = new RateLimiter({ ratePerSecond: 1, burst: 1 })
    for (let i = 0; i < 10_050; i++) limiter.take(`k${i}`, 0)
    expect(limiter.size).toBeLessThanOrEqual(10_000)
    // An hour later every bucket has refilled and is dropped when room is needed.
    limiter.take('fresh', 3_600_000)
    expect(limiter.size).toBeLessThanOrEqual(10_000)
  })

  it.each([
    [{}, { ratePerSecond: 10, burst: 20 }],
    [{ KINETIC_WEBHOOK_RATE: '5', KINETIC_WEBHOOK_BURST: '7' }, { ratePerSecond: 5, burst: 7 }],
    [{ KINETIC_WEBHOOK_RATE: '50' }, { ratePerSecond: 50, burst: 50 }],
    [{ KINETIC_WEBHOOK_RATE: '0' }, { ratePerSecond: 0, burst: 20 }],
    [{ KINETIC_WEBHOOK_RATE: 'fast', KINETIC_WEBHOOK_BURST: '-1' }, { ratePerSecond: 10, burst: 20 }],
  ])('configured from the environment %j', (env, want) => {
    expect(rateLimitFromEnv(env)).toEqual(want)
  })
})
