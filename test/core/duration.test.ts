import { describe, expect, it } from 'vitest'
import { formatGoDuration, parseGoDuration } from '../../shared/core/duration.js'

describe('parseGoDuration', () => {
  it.each([
    ['30m', 1800],
    ['1h30m', 5400],
    ['1.5h', 5400],
    ['2h45m', 9900],
    ['300ms', 0.3],
    ['10s', 10],
    ['1m0.5s', 60.5],
    ['.5s', 0.5],
    ['0', 0],
    ['-2s', -2],
    ['+3m', 180],
    ['1500us', 0.0015],
    ['1500µs', 0.0015],
    ['1000000ns', 0.001],
  ])('%s is %s seconds', (text, seconds) => {
    expect(parseGoDuration(text)).toBeCloseTo(seconds, 9)
  })

  it.each([['1d'], [''], ['10'], ['h'], ['1h 30m'], ['exponential'], ['fixed'], ['.s'], ['5x']])(
    'rejects %j', (text) => {
      expect(parseGoDuration(text)).toBeNull()
    })
})

describe('formatGoDuration', () => {
  it.each([
    [1800, '30m0s'],
    [3600, '1h0m0s'],
    [1865, '31m5s'],
    [5, '5s'],
    [0, '0s'],
    [90.5, '1m30.5s'],
    [0.3, '300ms'],
    [0.0015, '1.5ms'],
    [0.000002, '2µs'],
    [-5, '-5s'],
    [37230, '10h20m30s'],
  ])('%s seconds prints as %s', (seconds, text) => {
    expect(formatGoDuration(seconds)).toBe(text)
  })

  it('round-trips what it prints', () => {
    for (const seconds of [1, 59, 61, 3599, 3601, 86400, 0.25]) {
      expect(parseGoDuration(formatGoDuration(seconds))).toBe(seconds)
    }
  })
})
