import { describe, expect, it } from 'vitest'
import { backoffSeconds, MAX_BACKOFF_SECONDS, retryDecision } from '../../shared/workflow/plan/retry.js'
import type { RetryPolicy } from '../../shared/schemas/workflow.js'
import { aStep } from '../fixtures/workflows.js'

const withPolicy = (policy: Partial<RetryPolicy> | undefined) =>
  aStep('s1', policy === undefined ? {} : { retryPolicy: { maxRetries: 3, ...policy } })

describe('backoffSeconds', () => {
  it.each<[string, Partial<RetryPolicy>, number[]]>([
    ['defaults to 5s doubling', {}, [5, 10, 20, 40]],
    ['doubles backoffSeconds', { backoffSeconds: 7 }, [7, 14, 28]],
    ['keeps 5s with backoff: fixed', { backoff: 'fixed' }, [5, 5, 5]],
    ['keeps backoffSeconds with backoff: fixed', { backoff: 'fixed', backoffSeconds: 30 }, [30, 30, 30]],
    ['doubles from 5s with backoff: exponential', { backoff: 'exponential' }, [5, 10, 20]],
    ['doubles a duration given as backoff', { backoff: '10s' }, [10, 20, 40]],
    ['reads a Go duration with minutes', { backoff: '1m' }, [60, 120, 240]],
    ['prefers backoffSeconds over a duration', { backoff: '10s', backoffSeconds: 3 }, [3, 6, 12]],
    ['falls back to 5s for an unparseable backoff', { backoff: 'soon' }, [5, 10, 20]],
    ['caps at 300s', { backoffSeconds: 100 }, [100, 200, 300, 300]],
    ['caps a fixed delay at 300s', { backoff: 'fixed', backoffSeconds: 900 }, [300, 300]],
    ['allows no delay', { backoffSeconds: 0 }, [0, 0]],
  ])('%s', (_, policy, delays) => {
    const step = withPolicy(policy)
    expect(delays.map((_, retryCount) => backoffSeconds(step, retryCount))).toEqual(delays)
  })

  it('never exceeds the cap however many retries were made', () => {
    expect(backoffSeconds(withPolicy({}), 60)).toBe(MAX_BACKOFF_SECONDS)
  })
})

describe('retryDecision', () => {
  const failure = (error: string, cls: 'error' | 'timeout' | 'output' = 'error') => ({ ok: false as const, class: cls, error })

  it.each<[string, Partial<RetryPolicy> | undefined, number, ReturnType<typeof failure>, boolean]>([
    ['no retry policy', undefined, 0, failure('exit 1'), false],
    ['maxRetries 0', { maxRetries: 0 }, 0, failure('exit 1'), false],
    ['the first failure under the default of 3 retries', {}, 0, failure('exit 1'), true],
    ['the third failure under the default of 3 retries', {}, 2, failure('exit 1'), true],
    ['the fourth failure under the default of 3 retries', {}, 3, failure('exit 1'), false],
    ['a timeout when retryOn names timeout', { retryOn: ['timeout'] }, 0, failure('Step exceeded its timeout', 'timeout'), true],
    ['an error when retryOn names only timeout', { retryOn: ['timeout'] }, 0, failure('exit 1'), false],
    ['an error when retryOn names error', { retryOn: ['error'] }, 0, failure('exit 1'), true],
    ['a timeout when retryOn names only error', { retryOn: ['error'] }, 0, failure('deadline hit', 'timeout'), false],
    ['an error containing a retryOn substring, ignoring case', { retryOn: ['rate limit'] }, 0, failure('HTTP 429: Rate Limit exceeded'), true],
    ['an error without any retryOn substring', { retryOn: ['rate limit', '503'] }, 0, failure('connection refused'), false],
    ['any failure when retryOn is empty', { retryOn: [] }, 0, failure('bad output', 'output'), true],
  ])('%s → retry %s', (_, policy, retryCount, result, retry) => {
    expect(retryDecision(withPolicy(policy), retryCount, result).retry).toBe(retry)
  })

  it('gives the backoff of the retry about to be made', () => {
    expect(retryDecision(withPolicy({ backoffSeconds: 4 }), 2, failure('exit 1'))).toEqual({ retry: true, delaySeconds: 16 })
  })
})
