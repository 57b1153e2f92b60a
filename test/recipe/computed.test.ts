// spec §2.3 and §3.2: computed values in order over inputs, earlier computed values and
// recipe, typed per spec §3.1; includeWhen must be a bool; CEL errors and cost bounds become the
// spec's reasons and messages.
import { describe, expect, it } from 'vitest'
import type { TypedValue } from '../../shared/recipe/plan/cel.js'
import { evaluateComputed } from '../../shared/recipe/plan/computed.js'
import { evaluateInclusion } from '../../shared/recipe/plan/include.js'

const recipe = { name: 'shop', namespace: 'team-a', profile: 'prod' }
const inputs = new Map<string, TypedValue>([
  ['replicas', { type: 'int', value: 2n }],
  ['ratio', { type: 'double', value: 0.5 }],
  ['env', { type: 'string', value: 'prod' }],
  ['on', { type: 'bool', value: true }],
  ['csv', { type: 'string', value: ' a,b ' }],
])
const run = (...computed: Array<[string, string]>) =>
  evaluateComputed({ computed: computed.map(([name, expression]) => ({ name, expression })) }, inputs, new Set(['broken']), recipe)

describe('computed values (spec §2.3)', () => {
  it.each([
    ['inputs.replicas * 10', { type: 'int', value: 20n }],
    ["inputs.env == 'prod' ? 'ha' : 'single'", { type: 'string', value: 'ha' }],
    ['inputs.ratio * 2.0', { type: 'double', value: 1 }],
    ['inputs.on && true', { type: 'bool', value: true }],
    ['1u + 2u', { type: 'int', value: 3n }],
    ["recipe.name + '/' + recipe.namespace + '/' + recipe.profile", { type: 'string', value: 'shop/team-a/prod' }],
    ["inputs.env.upperAscii() + inputs.env.lowerAscii()", { type: 'string', value: 'PRODprod' }],
    ["inputs.csv.trim().split(',').join('-')", { type: 'string', value: 'a-b' }],
    ["'a.b.c'.replace('.', '/')", { type: 'string', value: 'a/b/c' }],
    ["[1, 2, 3].filter(x, x > 1).map(x, x * 2).exists(x, x == 6)", { type: 'bool', value: true }],
    ["has(inputs.env) && size(inputs.env) == 4", { type: 'bool', value: true }],
    ["'prod-1'.matches('^[a-z]+-[0-9]$') && 'abc'.indexOf('c') == 2 && 'abc'.substring(1) == 'bc'", { type: 'bool', value: true }],
  ] as const)('%s', (expression, expected) => {
    const r = run(['v', expression])
    expect(r.errors).toEqual([])
    expect(r.values.get('v')).toEqual(expected)
  })

  it('sees earlier computed values in order; a later or unknown one is an error', () => {
    const r = run(['a', 'inputs.replicas + 1'], ['b', 'computed.a * 2'], ['c', 'computed.d'], ['d', '1'])
    expect(r.values.get('b')).toEqual({ type: 'int', value: 6n })
    expect(r.errors).toEqual([{ reason: 'ComputedValueError', message: 'computed "c": No such key: d', field: 'spec.computed[c]' }])
  })

  it.each([
    ['1/0', 'computed "v": division by zero'],
    ['[1, 2]', 'computed "v": result must be a string, number or boolean, got list'],
    ["{'a': 1}", 'computed "v": result must be a string, number or boolean, got map'],
    ['null', 'computed "v": result must be a string, number or boolean, got null_type'],
    ['inputs.replicas +', 'computed "v": Unexpected end of input'],
    ['inputs.replicas + 1.5', 'computed "v": no such overload: dyn<int> + double'],
    ["[1].map(x, [2].map(y, x + y))", 'computed "v": expression is too costly: a comprehension inside another comprehension is not allowed'],
    ['cel.bind(x, 1, x + 1)', 'computed "v": bind() is not available in recipes'],
    ["'abcdefghijklmnopqrstuvwxyz'.replace('', 'abcdefghijklmnopqrstuvwxyz').replace('', 'abcdefghijklmnopqrstuvwxyz').replace('', 'abcdefghijklmnopqrstuvwxyz')", 'computed "v": replace() result is longer than 65536 characters'],
  ])('%s fails with %s', (expression, message) => {
    const r = run(['v', expression])
    expect(r.errors.map((e) => e.message)).toEqual([expect.stringMatching(new RegExp(`^${message.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace('Unexpected end of input', '.+')}$`))])
    expect(r.errors[0]!.reason).toBe('ComputedValueError')
  })

  it('does not report an expression that failed on an input whose own error is already reported', () => {
    const r = run(['v', 'inputs.broken + 1'], ['w', 'computed.v'])
    expect(r.errors).toEqual([])
    expect([...r.failed]).toEqual(['v', 'w'])
  })
})

describe('includeWhen (spec §3.2)', () => {
  const computed = new Map<string, TypedValue>([['mode', { type: 'string', value: 'ha' }]])
  const failed = { inputs: new Set<string>(), computed: new Set<string>() }
  it('excludes on false, includes on true or absent, in spec order', () => {
    const r = evaluateInclusion([
      { name: 'a', includeWhen: "computed.mode == 'ha'" }, { name: 'b', includeWhen: '!inputs.on' }, { name: 'c' },
    ], inputs, computed, failed, recipe)
    expect(r).toEqual({ included: ['a', 'c'], excluded: ['b'], errors: [] })
  })

  it.each([
    ['inputs.env', 'workload "w": includeWhen: must evaluate to a bool, got string'],
    ['inputs.replicas', 'workload "w": includeWhen: must evaluate to a bool, got int'],
    ['inputs.nope', 'workload "w": includeWhen: No such key: nope'],
  ])('%s gives IncludeWhenError %s', (expression, message) => {
    const r = evaluateInclusion([{ name: 'w', includeWhen: expression }], inputs, computed, failed, recipe)
    expect(r.errors).toEqual([{ reason: 'IncludeWhenError', message, field: 'spec.workloads[w].includeWhen' }])
  })
})

describe('bounded cost of recipe CEL (issue 27, item 2)', () => {
  const long = (s: string) => new Map<string, TypedValue>([['long', { type: 'string', value: s }]])
  const evaluate = (expression: string, values: Map<string, TypedValue>) =>
    evaluateComputed({ computed: [{ name: 'v', expression }] }, values, new Set(), recipe)

  it("`'aaaa…a!'.matches('^(a+)+$')` answers at once with RE2's result", () => {
    expect(evaluate("inputs.long.matches('^(a+)+$')", long(`${'a'.repeat(48)}!`)).values.get('v')).toEqual({ type: 'bool', value: false })
    expect(evaluate("inputs.long.matches('^(a+)+$')", long('a'.repeat(48))).values.get('v')).toEqual({ type: 'bool', value: true })
  })

  it('an evaluation over the cost limit on these inputs is a ComputedValueError, and the same expression on a short input runs', () => {
    const expression = "inputs.long.split('').exists(c, inputs.long.split('').size() == 0)"
    const r = evaluate(expression, long('x'.repeat(4096)))
    expect(r.errors).toEqual([{ reason: 'ComputedValueError', field: expect.any(String), message: expect.stringMatching(/^computed "v": evaluation cost limit exceeded: estimated cost \d+ on these values, limit 1000000$/) }])
    expect(evaluate(expression, long('x'.repeat(40))).values.get('v')).toEqual({ type: 'bool', value: false })
  })

  it('includeWhen over the limit is an IncludeWhenError and the workload stays included', () => {
    const r = evaluateInclusion([{ name: 'w', includeWhen: "inputs.long.split('').exists(c, inputs.long.split('').size() == 0)" }], long('x'.repeat(4096)), new Map(), { inputs: new Set(), computed: new Set() }, recipe)
    expect(r.included).toEqual(['w'])
    expect(r.errors.map((e) => [e.reason, e.message])).toEqual([['IncludeWhenError', expect.stringMatching(/^workload "w": includeWhen: evaluation cost limit exceeded/)]])
  })
})
