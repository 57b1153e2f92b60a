import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { allCrds } from '../../shared/crd/definitions.js'
import { NotStructuralError, structuralViolations, toCrdSchema, toStructural, type JsonSchemaProps } from '../../shared/crd/structural.js'

describe('generated CRD schemas', () => {
  it.each(allCrds().map((c) => [c.metadata.name, c] as const))('%s obeys the structural-schema rules', (_, crd) => {
    expect(structuralViolations(crd.spec.versions[0]!.schema.openAPIV3Schema)).toEqual([])
  })
})

describe('structuralViolations', () => {
  it.each<[string, JsonSchemaProps, string]>([
    ['an untyped field', { type: 'object', properties: { a: { description: 'x' } } }, 'a: type is required'],
    ['a stray anyOf', { type: 'object', properties: { a: { type: 'string', anyOf: [{ type: 'string' }] } } }, 'a: anyOf is not allowed'],
    [
      'additionalProperties next to properties',
      { type: 'object', properties: { a: { type: 'object', properties: { b: { type: 'string' } }, additionalProperties: { type: 'string' } } } },
      'a: additionalProperties and properties are mutually exclusive',
    ],
    [
      'a list-map key that is neither required nor defaulted',
      {
        type: 'object',
        properties: {
          l: { type: 'array', 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['name'], items: { type: 'object', properties: { name: { type: 'string' } } } },
        },
      },
      'l: list-map key name must be required or defaulted',
    ],
  ])('reports %s', (_, schema, problem) => {
    expect(structuralViolations(schema)).toContain(problem)
  })
})

describe('toStructural', () => {
  it('turns an integer-or-string union into x-kubernetes-int-or-string', () => {
    expect(toStructural(z.union([z.number().int(), z.string()]))).toEqual({ 'x-kubernetes-int-or-string': true })
  })

  it('keeps unknown fields of loose objects and string-to-unknown records, and prunes those of plain objects', () => {
    const s = toStructural(z.object({
      loose: z.looseObject({ a: z.string() }),
      record: z.record(z.string(), z.unknown()),
      plain: z.object({ a: z.string() }),
      anything: z.unknown(),
    }))
    expect(s.properties?.loose).toEqual({ type: 'object', properties: { a: { type: 'string' } }, required: ['a'], 'x-kubernetes-preserve-unknown-fields': true })
    expect(s.properties?.record).toEqual({ type: 'object', 'x-kubernetes-preserve-unknown-fields': true })
    expect(s.properties?.plain).toEqual({ type: 'object', properties: { a: { type: 'string' } }, required: ['a'] })
    expect(s.properties?.anything).toEqual({ 'x-kubernetes-preserve-unknown-fields': true })
  })

  it('drops the safe-integer bounds of .int() but keeps real bounds, and turns const into enum', () => {
    const s = toStructural(z.object({ n: z.number().int(), m: z.number().int().min(1), k: z.literal('x') }))
    expect(s.properties?.n).toEqual({ type: 'integer' })
    expect(s.properties?.m).toEqual({ type: 'integer', minimum: 1 })
    expect(s.properties?.k).toEqual({ type: 'string', enum: ['x'] })
  })

  it('accepts a union only when the author marked it as preserving unknown fields', () => {
    const marked = z.union([z.string(), z.object({ a: z.number() })]).meta({ 'x-kubernetes-preserve-unknown-fields': true })
    expect(toStructural(marked)).toEqual({ 'x-kubernetes-preserve-unknown-fields': true })
    expect(() => toStructural(z.object({ u: z.union([z.string(), z.boolean()]) }))).toThrow(NotStructuralError)
    expect(() => toStructural(z.discriminatedUnion('k', [z.object({ k: z.literal('a') }), z.object({ k: z.literal('b') })])))
      .toThrow(/anyOf|oneOf/)
  })

  it('gives every CRD root plain apiVersion, kind and an untouched metadata object', () => {
    const root = toCrdSchema(z.object({ apiVersion: z.literal('x/v1'), kind: z.literal('X'), metadata: z.looseObject({ name: z.string() }), spec: z.object({}) }))
    expect(root.properties?.apiVersion?.type).toBe('string')
    expect(root.properties?.apiVersion?.enum).toBeUndefined()
    expect(root.properties?.metadata).toEqual({ type: 'object' })
    expect(root.required).toBeUndefined()
  })
})
