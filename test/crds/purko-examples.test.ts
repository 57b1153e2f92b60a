import { Ajv } from 'ajv'
import * as ajvFormats from 'ajv-formats'
import { describe, expect, it } from 'vitest'
import type { z } from 'zod'
import { allCrds, KINDS } from '../../shared/crd/definitions.js'
import { validateAgainstCrd } from '../../shared/crd/validate.js'
import { purkoExamples } from './purko-fixtures.js'

const ajv = new Ajv({ strict: false, allErrors: true })
;(ajvFormats.default as unknown as (a: Ajv) => void)(ajv)
ajv.addFormat('int64', true)

const crds = allCrds()
const examples = purkoExamples()
const crdOf = (kind: string) => crds.find((c) => c.spec.names.kind === kind)!
const zodOf = (kind: string): z.ZodType => KINDS.find((k) => k.kind === kind)!.schema

describe("purko's example manifests", () => {
  it('are all present in the fixtures, for every kind that has examples', () => {
    expect(examples.length).toBeGreaterThanOrEqual(20)
    expect(new Set(examples.map((e) => e.kind))).toEqual(
      new Set(['Agent', 'Workflow', 'AgentAutonomyPolicy', 'LLMProvider', 'MCPServer', 'MemoryProvider']),
    )
  })

  it.each(examples.map((e) => [`${e.file} (${e.kind} ${e.name})`, e] as const))('%s validates against the generated openAPIV3Schema', (_, e) => {
    const validate = ajv.compile(crdOf(e.kind).spec.versions[0]!.schema.openAPIV3Schema)
    expect(validate(e.object), JSON.stringify(validate.errors)).toBe(true)
  })

  it.each(examples.map((e) => [`${e.file} (${e.kind} ${e.name})`, e] as const))('%s parses with the zod schema', (_, e) => {
    const parsed = zodOf(e.kind).safeParse(e.object)
    expect(parsed.success, parsed.success ? '' : JSON.stringify(parsed.error.issues)).toBe(true)
  })

  it.each(examples.map((e) => [`${e.file} (${e.kind} ${e.name})`, e] as const))('%s passes every CEL rule and keeps its fields', (_, e) => {
    const result = validateAgainstCrd(crdOf(e.kind), e.object)
    expect(result).toMatchObject({ ok: true })
    if (!result.ok) return
    // Nothing a purko user wrote is pruned away: the stored spec contains the whole manifest spec.
    expect(result.object.spec).toMatchObject(e.object.spec as object)
  })
})
