import { describe, expect, it } from 'vitest'
import { CelFormatError, celFormat } from '../../shared/crd/cel-format.js'

// Expected texts are what kube-apiserver v1.34 printed for the same template and value.
describe('celFormat prints like the API server evaluating a messageExpression', () => {
  it.each<[string, unknown[], string]>([
    ['got %d', [2000001n], 'got 2000001'],
    ['got %d', [-9223372036854775808n], 'got -9223372036854775808'],
    ['got %f', [2.5], 'got 2.500000'],
    ['got %f', [3], 'got 3.000000'],
    ['got %f', [-0.1], 'got -0.100000'],
    ['got %f', [-0.0000004], 'got -0.000000'],
    ['got %f', [-0.0000006], 'got -0.000001'],
    ['got %f', [2.0078125], 'got 2.007812'],
    ['got %f', [2.0234375], 'got 2.023438'],
    ['got %f', [2.0000005], 'got 2.000001'],
    ['got %f', [2.0000025], 'got 2.000002'],
    ['got %f', [999999.9999995], 'got 999,999.999999'],
    ['got %f', [1234.5], 'got 1,234.500000'],
    ['got %f', [1e21], 'got 1,000,000,000,000,000,000,000.000000'],
    ['%.2f %.0f', [1234567.125, 1234567.125], '1,234,567.12 1,234,567'],
    ['%.0f %.0f %.0f', [2.5, 0.5, 1.5], '2 0 2'],
    ['n s=%s d=%d', [1234567n, 1234567n], 'n s=1234567 d=1234567'],
    ['s=%s %% q', ['x"y'], 's=x"y % q'],
    ['b=%s', [true], 'b=true'],
  ])('%s with %o gives %s', (template, args, expected) => {
    expect(celFormat(template, args)).toBe(expected)
  })

  it.each<[string, string, unknown[]]>([
    ['%d of a double', 'got %d', [2.5]],
    ['%f of an int', 'got %f', [2n]],
    ['a clause it does not know', 'got %x', [2n]],
    ['a clause with no argument left', 'got %d', []],
  ])('refuses %s, so the rule\'s static message stands', (_, template, args) => {
    expect(() => celFormat(template, args)).toThrow(CelFormatError)
  })
})
