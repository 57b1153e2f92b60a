// spec §2.2: values > profile > default, no coercion, enum/pattern/bounds, unknown keys in
// values and in every profile, with the exact spec §8.2 messages.
import { describe, expect, it } from 'vitest'
import { resolveInputs } from '../../shared/recipe/plan/inputs.js'
import { recipeConfig, targetNamespace, workloadNamespaceOf, RecipeConfigError } from '../../shared/recipe/plan/config.js'
import type { Input } from '../../shared/schemas/workflowrecipe.js'

const input = (i: Partial<Input> & { name: string }): Input => ({ type: 'string', ...i }) as Input

describe('input resolution (spec §2.2)', () => {
  it('takes spec.values, else the selected profile, else the default', () => {
    const r = resolveInputs({
      inputs: [input({ name: 'a', default: 'd' }), input({ name: 'b', default: 'd' }), input({ name: 'c', default: 'd' })],
      profile: 'p',
      profiles: [{ name: 'p', values: { a: 'profile', b: 'profile' } }, { name: 'q', values: { c: 'other' } }],
      values: { a: 'value' },
    })
    expect(r.errors).toEqual([])
    expect(Object.fromEntries([...r.values].map(([k, v]) => [k, v.value]))).toEqual({ a: 'value', b: 'profile', c: 'd' })
  })

  it.each([
    ['integer', 3, { type: 'int', value: 3n }],
    ['number', 3, { type: 'double', value: 3 }],
    ['number', 0.5, { type: 'double', value: 0.5 }],
    ['boolean', false, { type: 'bool', value: false }],
    ['string', 'x', { type: 'string', value: 'x' }],
  ] as const)('types %s %j', (type, value, expected) => {
    const r = resolveInputs({ inputs: [input({ name: 'x', type, default: value })] })
    expect(r.values.get('x')).toEqual(expected)
  })

  it.each([
    [{ inputs: [input({ name: 'x' })] }, 'InputMissing', 'input "x" has no value: give it a default, a profile value or a value in spec.values'],
    [{ inputs: [input({ name: 'x', default: 'a' })], values: { y: 1 } }, 'UnknownInput', 'spec.values sets unknown input "y"'],
    [{ inputs: [input({ name: 'x', default: 'a' })], profiles: [{ name: 'big', values: { z: 1 } }] }, 'UnknownInput', 'profile "big" sets unknown input "z"'],
    [{ inputs: [input({ name: 'replicas', type: 'integer' })], values: { replicas: '3' } }, 'InputTypeMismatch', 'input "replicas" must be an integer, got string "3"'],
    [{ inputs: [input({ name: 'n', type: 'integer', default: 1.5 })] }, 'InputTypeMismatch', 'input "n" must be an integer, got number 1.5'],
    [{ inputs: [input({ name: 'n', type: 'number', default: true })] }, 'InputTypeMismatch', 'input "n" must be a number, got boolean true'],
    [{ inputs: [input({ name: 'b', type: 'boolean', default: 'true' })] }, 'InputTypeMismatch', 'input "b" must be a boolean, got string "true"'],
    [{ inputs: [input({ name: 's', default: 5 })] }, 'InputTypeMismatch', 'input "s" must be a string, got number 5'],
    [{ inputs: [input({ name: 's', default: 'x'.repeat(100) })], values: { s: 7 } }, 'InputTypeMismatch', 'input "s" must be a string, got number 7'],
    [{ inputs: [input({ name: 'env', enum: ['dev', 'prod'], default: 'staging' })] }, 'InputOutOfRange', 'input "env": "staging" is not one of ["dev", "prod"]'],
    [{ inputs: [input({ name: 'db', pattern: '[a-z]+', default: 'Shop1' })] }, 'InputOutOfRange', 'input "db": "Shop1" does not match [a-z]+'],
    [{ inputs: [input({ name: 'r', type: 'integer', minimum: 1, default: 0 })] }, 'InputOutOfRange', 'input "r": 0 is below the minimum 1'],
    [{ inputs: [input({ name: 'r', type: 'number', maximum: 2.5, default: 3 })] }, 'InputOutOfRange', 'input "r": 3 is above the maximum 2.5'],
  ] as const)('%j gives %s', (spec, reason, message) => {
    const r = resolveInputs(spec as never)
    expect(r.errors).toEqual([expect.objectContaining({ reason, message })])
  })

  it('cuts the JSON of a mismatched value to 64 characters', () => {
    const r = resolveInputs({ inputs: [input({ name: 'n', type: 'integer', default: 'y'.repeat(100) })] })
    expect(r.errors[0]!.message).toBe(`input "n" must be an integer, got string "${'y'.repeat(63)}`)
  })

  it('the pattern must match the whole value', () => {
    expect(resolveInputs({ inputs: [input({ name: 'p', pattern: 'ab', default: 'xaby' })] }).errors).toHaveLength(1)
    expect(resolveInputs({ inputs: [input({ name: 'p', pattern: 'a|b', default: 'b' })] }).errors).toHaveLength(0)
  })

  it('a template lists a missing required input instead of failing (spec §7.7)', () => {
    const r = resolveInputs({ inputs: [input({ name: 'x' })] }, { template: true })
    expect(r.errors).toEqual([])
    expect(r.missing).toEqual(['x'])
  })
})

describe('function configuration (spec §1.1)', () => {
  it('defaults to mcp-server and sandbox-recipes with kubernetes auth', () => {
    expect(recipeConfig({})).toEqual({ mcpNamespace: 'mcp-server', sandboxNamespace: 'sandbox-recipes', mcpAuth: 'kubernetes' })
    expect(recipeConfig({ KINETIC_RECIPES_MCP_NAMESPACE: '', KINETIC_RECIPES_MCP_AUTH: 'none', KINETIC_RECIPES_MCP_AUDIENCE: 'kinetic' }))
      .toEqual({ mcpNamespace: 'mcp-server', sandboxNamespace: 'sandbox-recipes', mcpAuth: 'none', mcpAudience: 'kinetic' })
  })

  it('substitutes {namespace} and places transport workloads in the MCP namespace', () => {
    const config = recipeConfig({ KINETIC_RECIPES_SANDBOX_NAMESPACE: 'recipes-{namespace}', KINETIC_RECIPES_MCP_NAMESPACE: '{namespace}' })
    expect(targetNamespace(config.sandboxNamespace, 'team-a')).toBe('recipes-team-a')
    expect(workloadNamespaceOf(config, 'team-a', {})).toBe('recipes-team-a')
    expect(workloadNamespaceOf(config, 'team-a', { transport: 'stdio' })).toBe('team-a')
  })

  it('refuses values that are no namespace and an unknown auth mode', () => {
    expect(() => recipeConfig({ KINETIC_RECIPES_SANDBOX_NAMESPACE: 'Bad_NS' })).toThrow(RecipeConfigError)
    expect(() => recipeConfig({ KINETIC_RECIPES_MCP_AUTH: 'oidc' })).toThrow('KINETIC_RECIPES_MCP_AUTH must be "kubernetes" or "none", got "oidc"')
  })
})

describe('input patterns run in linear time (issue 27, item 2)', () => {
  it('a catastrophic pattern on a long value answers at once: it does not match', () => {
    const r = resolveInputs({ inputs: [input({ name: 'p', pattern: '(a+)+', default: `${'a'.repeat(4000)}!` })] })
    expect(r.errors.map((e) => e.message)).toEqual([expect.stringMatching(/^input "p": "a+.* does not match \(a\+\)\+$/)])
    expect(resolveInputs({ inputs: [input({ name: 'p', pattern: '(a+)+', default: 'a'.repeat(4000) })] }).errors).toEqual([])
  })

  it('a pattern that needs backtracking (a backreference, lookaround) is refused with the reason', () => {
    const r = resolveInputs({ inputs: [input({ name: 'p', pattern: '(a)\\1', default: 'aa' })] })
    expect(r.errors.map((e) => e.message)).toEqual(['input "p": "aa" does not match (a)\\1 (invalid regular expression "(a)\\\\1" (RE2 syntax: no backreferences or lookaround): backreferences are not supported)'])
    expect(resolveInputs({ inputs: [input({ name: 'p', pattern: 'a(?=b)', default: 'ab' })] }).errors.map((e) => e.message)).toEqual([
      expect.stringMatching(/does not match a\(\?=b\) \(invalid regular expression .*RE2 syntax/),
    ])
  })
})
