import { describe, expect, it } from 'vitest'
import { celCostCauses, costErrorMessage, schemaLocations, toFixedExact } from '../../shared/crd/cel-budget.js'
import { estimateExpressionCost } from '../../shared/crd/cel-cost.js'
import { MAX_UINT64 } from '../../shared/crd/cel-cost-values.js'
import { celDecl, escapeCelName } from '../../shared/crd/cel-types.js'
import type { JsonSchemaProps } from '../../shared/crd/structural.js'
import { CEL_COST_CASES, celCostCrd, type ExpectedCause } from '../cluster/cel-cost-corpus.js'

const sorted = (causes: ExpectedCause[]) => [...causes].map((c) => `${c.field} | ${c.reason} | ${c.message}`).sort()

describe('CEL cost estimation against the real API server\'s recorded verdicts', () => {
  it('has a corpus of at least 40 cases, both accepted and refused ones', () => {
    expect(CEL_COST_CASES.length).toBeGreaterThanOrEqual(40)
    expect(CEL_COST_CASES.filter((c) => c.expected.length === 0).length).toBeGreaterThan(5)
    expect(CEL_COST_CASES.filter((c) => c.expected.length > 0).length).toBeGreaterThan(5)
  })

  it.each(CEL_COST_CASES.map((c, i) => [c.name, c, i] as const))('%s', (_, c, i) => {
    expect(sorted(celCostCauses(celCostCrd(c, i)))).toEqual(sorted(c.expected))
  })
})

describe('the cost of one expression', () => {
  const decl = (properties: Record<string, JsonSchemaProps>) => celDecl({ type: 'object', properties }, false)!

  it('counts string(int) as a string of unknown size, so concatenating it saturates', () => {
    const cost = estimateExpressionCost("'got ' + string(self.n)", decl({ n: { type: 'integer' } }))
    // (2^64-1) * 0.1 rounded up as a 64-bit float, plus 3 for the call and the field selection.
    expect(cost?.max).toBe(BigInt(Math.ceil(Number(MAX_UINT64) * 0.1)) + 3n)
  })

  it('reads a string of maxLength n as 4n bytes', () => {
    expect(estimateExpressionCost("'x' + self.p", decl({ p: { type: 'string', maxLength: 63 } }))?.max).toBe(26n + 2n)
  })

  it('is null for an expression that does not parse', () => {
    expect(estimateExpressionCost('self.p ==', decl({ p: { type: 'string' } }))).toBeNull()
  })
})

describe('where and how the budget is reported', () => {
  it('prints factors as the server does: six decimals below 1.5, one decimal up to 100, half to even', () => {
    expect(toFixedExact(1.209, 6)).toBe('1.209000')
    expect(toFixedExact(2.25, 1)).toBe('2.2')
    expect(toFixedExact(2.35, 1)).toBe('2.4')
    expect(toFixedExact(1.0000001, 6)).toBe('1.000000')
    expect(costErrorMessage('estimated rule cost', 1_000_000_001n, 10_000_000n)).toMatch(/^estimated rule cost exceeds budget by factor of more than 100x \(try simplifying/)
    expect(costErrorMessage('estimated rule cost', 1_000_000_000n, 10_000_000n)).toMatch(/factor of 100\.0x /)
  })

  it('reports a schema all versions share once, under spec.validation, and differing schemas per version', () => {
    const a: JsonSchemaProps = { type: 'object', properties: { spec: { type: 'object' } } }
    const b: JsonSchemaProps = { type: 'object', properties: { spec: { type: 'string' } } }
    const crd = (...schemas: JsonSchemaProps[]) => ({ spec: { versions: schemas.map((s, i) => ({ name: `v${i}`, schema: { openAPIV3Schema: s } })) } })
    expect(schemaLocations(crd(a, { ...a })).map((l) => l.field)).toEqual(['spec.validation.openAPIV3Schema'])
    expect(schemaLocations(crd(a, b)).map((l) => l.field)).toEqual(['spec.versions[0].schema.openAPIV3Schema', 'spec.versions[1].schema.openAPIV3Schema'])
  })

  it('names properties the way CEL expressions spell them', () => {
    expect(['my-field', 'a.b', 'x/y', 'a__b', 'namespace', '1st', 'ok_name', 'a b'].map(escapeCelName))
      .toEqual(['my__dash__field', 'a__dot__b', 'x__slash__y', 'a__underscores__b', '__namespace__', null, 'ok_name', null])
  })
})
