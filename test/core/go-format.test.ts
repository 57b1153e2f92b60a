import { describe, expect, it } from 'vitest'
import {
  canonicalJson, goFixed2, goFormatFloat, goFormatValue, goJson, goShortestDecimal,
} from '../../shared/core/go-format.js'

describe('Go text formats seen by executors', () => {
  it.each([
    [1000000, '1e+06'],
    [1234567, '1.234567e+06'],
    [0.00001, '1e-05'],
    [5, '5'],
    [0.5, '0.5'],
    [123456, '123456'],
    [0.0001, '0.0001'],
    [-2.5e-7, '-2.5e-07'],
    [1e21, '1e+21'],
  ])('%%v of %s is %s', (x, text) => {
    expect(goFormatFloat(x)).toBe(text)
  })

  it.each([
    [null, '<nil>'],
    [true, 'true'],
    ['text', 'text'],
    [['a', 1], '[a 1]'],
    [{ b: 1, a: 'x' }, 'map[a:x b:1]'],
  ])('%%v of JSON %j is %s', (value, text) => {
    expect(goFormatValue(value)).toBe(text)
  })

  it.each([[1.5, '1.5'], [6, '6'], [0.8, '0.8'], [1e-7, '0.0000001'], [2e21, '2000000000000000000000'], [-0.25, '-0.25']])(
    'shortest decimal of %s is %s', (x, text) => {
      expect(goShortestDecimal(x)).toBe(text)
    })

  it.each([[0.2, '0.20'], [0.125, '0.12'], [0.375, '0.38'], [1, '1.00'], [0.7, '0.70'], [1.999, '2.00']])(
    '%%.2f of %s is %s', (x, text) => {
      expect(goFixed2(x)).toBe(text)
    })

  it('marshals JSON like Go: keys sorted at every level, HTML characters and line separators escaped', () => {
    expect(goJson({ b: 'a<b & c>d', a: [1, { z: 1, y: '\u2028' }] }))
      .toBe('{"a":[1,{"y":"\\u2028","z":1}],"b":"a\\u003cb \\u0026 c\\u003ed"}')
    expect(canonicalJson({ b: '<', a: 1 })).toBe('{"a":1,"b":"<"}')
  })
})
