// How kube-apiserver prints the values in its field errors. Every expected text was printed by
// Go itself (fmt's %v and %q, encoding/json's Marshal) for the same value.
import { describe, expect, it } from 'vitest'
import { errorBody, notSupported, tooLong, tooMany } from '../../shared/crd/field-error.js'
import { goFloat, goJson, goQuote, GoStruct } from '../../shared/crd/go-value.js'

describe('goFloat (%v of a float64)', () => {
  it.each([
    [1e6, '1e+06'], [123456, '123456'], [1234567, '1.234567e+06'], [1e20, '1e+20'], [1e21, '1e+21'],
    [0.0001, '0.0001'], [0.00001, '1e-05'], [1.5, '1.5'], [-2.25, '-2.25'], [100000.5, '100000.5'], [1e-7, '1e-07'],
  ])('prints %d as %s', (x, text) => {
    expect(goFloat(x)).toBe(text)
  })
})

describe('goQuote (%q of a string)', () => {
  it.each([
    ['a<b>&c', '"a<b>&c"'],
    ['tab\there', '"tab\\there"'],
    ['\b\f\v\x07\x00\x1f\x7f', '"\\b\\f\\v\\a\\x00\\x1f\\x7f"'],
    ['é ünï 日本', '"é ünï 日本"'],
    ['\u2028\u00a0\u200b', '"\\u2028\\u00a0\\u200b"'],
    ['quote"back\\', '"quote\\"back\\\\"'],
    ['😀', '"😀"'],
    ['\u00ad', '"\\u00ad"'],
  ])('quotes %j as %s', (s, text) => {
    expect(goQuote(s)).toBe(text)
  })
})

describe('goJson (json.Marshal)', () => {
  it.each([
    ['a<b>&c', '"a\\u003cb\\u003e\\u0026c"'],
    ['\b\f\v\x07\x00\x1f\x7f', '"\\b\\f\\u000b\\u0007\\u0000\\u001f\x7f"'],
    ['\u2028\u00a0\u200b', '"\\u2028\u00a0\u200b"'],
    [1e6, '1000000'], [1e21, '1e+21'], [0.00001, '0.00001'], [1e-7, '1e-7'], [null, 'null'],
  ])('writes %j as %s', (value, text) => {
    expect(goJson(value)).toBe(text)
  })

  it('sorts map keys by their UTF-8 bytes, at every level', () => {
    const value = { b: 1, a: ['x', null, true, 1.5], é: 2, Z: {}, '😀': 1, '\uffff': 2 }
    expect(goJson(value)).toBe('{"Z":{},"a":["x",null,true,1.5],"b":1,"é":2,"\uffff":2,"😀":1}')
  })

  it('keeps a struct\'s fields in declaration order', () => {
    expect(goJson(new GoStruct([['Rule', 'x'], ['Message', ''], ['Reason', null]]))).toBe('{"Rule":"x","Message":"","Reason":null}')
  })
})

describe('errorBody (a field error without its field)', () => {
  it('shows a string quoted, a number or boolean as is, and anything else, nil included, as JSON', () => {
    expect(errorBody('FieldValueInvalid', 'x', 'd')).toBe('Invalid value: "x": d')
    expect(errorBody('FieldValueInvalid', 0, 'd')).toBe('Invalid value: 0: d')
    expect(errorBody('FieldValueInvalid', 2.5, 'd')).toBe('Invalid value: 2.5: d')
    expect(errorBody('FieldValueInvalid', true, 'd')).toBe('Invalid value: true: d')
    expect(errorBody('FieldValueInvalid', null, 'd')).toBe('Invalid value: null: d')
    expect(errorBody('FieldValueDuplicate', { name: 'a' })).toBe('Duplicate value: {"name":"a"}')
    expect(errorBody('FieldValueInvalid', ['a', 1])).toBe('Invalid value: ["a",1]')
  })

  it('never shows the value of a required, forbidden, too long or internal error', () => {
    expect(errorBody('FieldValueRequired', 'x')).toBe('Required value')
    expect(errorBody('FieldValueForbidden', 'x', 'no')).toBe('Forbidden: no')
    expect(tooLong('a', 3).message).toBe('Too long: may not be more than 3 bytes')
    expect(tooLong('a', 1).message).toBe('Too long: may not be more than 1 byte')
    expect(tooLong('a', -1).message).toBe('Too long: value is too long')
  })

  it('counts items singular for one, and leaves out an unknown count', () => {
    expect(tooMany('a', 3, 2).message).toBe('Too many: 3: must have at most 2 items')
    expect(tooMany('a', 2, 1).message).toBe('Too many: 2: must have at most 1 item')
    expect(tooMany('a', -1, 2).message).toBe('Too many: must have at most 2 items')
  })

  it('lists supported values quoted, non-strings as their JSON', () => {
    expect(notSupported('a', 2.5, ['x', 1.5, { a: 1 }]).message).toBe('Unsupported value: 2.5: supported values: "x", "1.5", "{\\"a\\":1}"')
  })
})
