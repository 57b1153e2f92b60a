import { describe, expect, it } from 'vitest'
import { isBrokerRetryable, retryPolicyFor } from '../../../local/knative/delivery.js'
import { parseIsoDuration } from '../../../local/knative/iso-duration.js'

describe('delivery spec', () => {
  it.each([
    ['exponential waits delay*2^i', { retry: 4, backoffPolicy: 'exponential' as const, backoffDelay: 'PT0.2S' }, [200, 400, 800, 1600]],
    ['linear waits delay*i, so the first retry is immediate', { retry: 3, backoffPolicy: 'linear' as const, backoffDelay: 'PT1S' }, [0, 1000, 2000]],
    ['a policy without a delay retries at once', { retry: 2, backoffPolicy: 'exponential' as const }, [0, 0]],
    ['a delay without a policy retries at once', { retry: 2, backoffDelay: 'PT1S' }, [0, 0]],
    ['no retry field means no retries', { backoffPolicy: 'exponential' as const, backoffDelay: 'PT1S' }, []],
  ])('%s', (_, spec, delays) => {
    expect(retryPolicyFor(spec).delays).toEqual(delays)
  })

  it('has 10 retries with the stock broker default adding up to about 204.6 s', () => {
    const total = retryPolicyFor({ retry: 10, backoffPolicy: 'exponential', backoffDelay: 'PT0.2S' }).delays.reduce((a, b) => a + b, 0)
    expect(total).toBe(204_600)
  })

  it.each([[0, true], [404, true], [408, true], [409, true], [429, true], [500, true], [503, true], [400, false], [401, false], [403, false], [410, false], [413, false], [422, false]])(
    'status %i retryable: %s', (status, expected) => {
      expect(isBrokerRetryable(status)).toBe(expected)
    },
  )

  it.each([['PT0.2S', 200], ['PT1M', 60_000], ['PT1H30M', 5_400_000], ['P1D', 86_400_000], ['PT60S', 60_000], ['P1DT1S', 86_401_000]])('parses %s', (text, ms) => {
    expect(parseIsoDuration(text)).toBe(ms)
  })

  it.each(['0.2s', 'PT', 'P', '200ms', ''])('rejects %j', (text) => {
    expect(() => parseIsoDuration(text)).toThrow(/ISO-8601/)
  })
})
