import { describe, expect, it } from 'vitest'
import { CRD_CEL } from '../../shared/crd/cel-rules.js'
import { allCrds } from '../../shared/crd/definitions.js'
import type { JsonSchemaProps, ValidationRule } from '../../shared/crd/structural.js'
import { toCel } from '../../shared/crd/validate.js'
import { MAX_STEP_DEPENDENCIES, MAX_STEPS } from '../../shared/schemas/workflow.js'

interface FoundRule { crd: string; path: string; schema: JsonSchemaProps; arrayAncestors: JsonSchemaProps[]; rule: ValidationRule }

function collect(schema: JsonSchemaProps, crd: string, path: string, arrays: JsonSchemaProps[], out: FoundRule[]): FoundRule[] {
  for (const rule of schema['x-kubernetes-validations'] ?? []) out.push({ crd, path, schema, arrayAncestors: arrays, rule })
  for (const [k, child] of Object.entries(schema.properties ?? {})) collect(child, crd, `${path}.${k}`, arrays, out)
  if (schema.items) collect(schema.items, crd, `${path}[]`, [...arrays, schema], out)
  if (typeof schema.additionalProperties === 'object') collect(schema.additionalProperties, crd, `${path}[*]`, arrays, out)
  return out
}

const parse = (expression: string) => CRD_CEL.parse(expression)
const rules = allCrds().flatMap((c) => collect(c.spec.versions[0]!.schema.openAPIV3Schema, c.metadata.name, '', [], []))

/** For every rule (by its static message): values of `self` that must pass, and values that must fail. */
const samples: Record<string, { pass: unknown[]; fail: unknown[] }> = {
  'step must have either agentRef.name or type': {
    pass: [{ name: 'a', agentRef: { name: 'x' } }, { name: 'a', type: 'approval' }, { name: 'a', agentRef: { name: '' }, type: 'x' }],
    fail: [{ name: 'a' }, { name: 'a', agentRef: { name: '' } }, { name: 'a', type: '' }],
  },
  'WF-003: step cannot depend on itself': {
    pass: [{ name: 'a' }, { name: 'a', dependsOn: ['b', 'c'] }, { name: 'a', dependsOn: [] }],
    fail: [{ name: 'a', dependsOn: ['a'] }, { name: 'a', dependsOn: ['b', 'a'] }],
  },
  'step timeout must be non-negative': {
    pass: [{ name: 'a' }, { name: 'a', timeout: {} }, { name: 'a', timeout: { timeoutSeconds: 0 } }, { name: 'a', timeout: { timeoutSeconds: 60 } }],
    fail: [{ name: 'a', timeout: { timeoutSeconds: -1 } }],
  },
  'spec.model.provider must not be empty': {
    pass: [{ provider: 'anthropic', name: 'm' }],
    fail: [{ provider: '', name: 'm' }],
  },
  'spec.model.name must not be empty': {
    pass: [{ provider: 'p', name: 'claude' }],
    fail: [{ provider: 'p', name: '' }],
  },
  'spec.model.maxTokens must be between 1 and 2000000': {
    pass: [{ provider: 'p', name: 'm' }, { provider: 'p', name: 'm', maxTokens: 1 }, { provider: 'p', name: 'm', maxTokens: 2000000 }],
    fail: [{ provider: 'p', name: 'm', maxTokens: 0 }, { provider: 'p', name: 'm', maxTokens: -3 }, { provider: 'p', name: 'm', maxTokens: 2000001 }],
  },
  'spec.model.temperature must be between 0.0 and 2.0': {
    pass: [{ provider: 'p', name: 'm' }, { provider: 'p', name: 'm', temperature: 0 }, { provider: 'p', name: 'm', temperature: 0.7 }, { provider: 'p', name: 'm', temperature: 2 }],
    fail: [{ provider: 'p', name: 'm', temperature: -0.1 }, { provider: 'p', name: 'm', temperature: 2.01 }],
  },
  'spec.memory.type must be buffer, summary, vector, or none': {
    pass: [{}, { type: 'buffer' }, { type: 'none' }],
    fail: [{ type: 'graph' }, { type: '' }],
  },
  'spec.memory.behavior must be off, session, or persistent': {
    pass: [{}, { behavior: 'off' }, { behavior: 'persistent' }],
    fail: [{ behavior: 'bogus' }],
  },
  'spec.memory.scope must be agent, group, or namespace': {
    pass: [{}, { scope: 'agent' }, { scope: 'namespace' }],
    fail: [{ scope: 'cluster' }],
  },
  'spec.memory.maxContextTokens must be <= 32768': {
    pass: [{}, { maxContextTokens: 32768 }],
    fail: [{ maxContextTokens: 32769 }],
  },
  'spec.memory.maxEntries must be <= 10000': {
    pass: [{}, { maxEntries: 0 }, { maxEntries: 10000 }],
    fail: [{ maxEntries: 10001 }],
  },
  'AG-005: monitor agents are limited to replicas <= 1': {
    pass: [{ model: {} }, { type: 'monitor', replicas: 1 }, { type: 'monitor', replicas: 0 }, { type: 'executor', replicas: 5 }],
    fail: [{ type: 'monitor', replicas: 2 }],
  },
  'AG-010: retriever agents need spec.memory.type (vector/buffer/summary) or spec.memory.behavior (session/persistent)': {
    pass: [{ type: 'executor' }, { type: 'retriever', memory: { type: 'vector' } }, { type: 'retriever', memory: { behavior: 'session' } }],
    fail: [{ type: 'retriever' }, { type: 'retriever', memory: {} }, { type: 'retriever', memory: { type: 'none' } }, { type: 'retriever', memory: { behavior: 'off' } }],
  },
  'an unmanaged MCPServer needs spec.url': {
    pass: [{ image: 'i', managed: true }, { image: 'i', managed: false, url: 'http://x' }],
    fail: [{ image: 'i', managed: false }],
  },
  'spec.url is only for unmanaged MCPServers': {
    pass: [{ image: 'i', managed: true }, { image: 'i', managed: false, url: 'http://x' }],
    fail: [{ image: 'i', managed: true, url: 'http://x' }],
  },
  'stdio transport requires managed: true': {
    pass: [{ image: 'i', managed: true, transport: 'stdio' }, { image: 'i', managed: false, transport: 'http', url: 'http://x' }],
    fail: [{ image: 'i', managed: false, transport: 'stdio', url: 'http://x' }],
  },
  'spec.env[].value and spec.env[].valueFrom are mutually exclusive': {
    pass: [{ name: 'A' }, { name: 'A', value: 'v' }, { name: 'A', valueFrom: { secretKeyRef: { name: 's', key: 'k' } } }],
    fail: [{ name: 'A', value: 'v', valueFrom: { secretKeyRef: { name: 's', key: 'k' } } }],
  },
}

describe('CEL rules in the generated CRDs', () => {
  it('exist, and every one has positive and negative samples in this table', () => {
    expect(rules.length).toBeGreaterThan(0)
    expect(rules.map((r) => r.rule.message).sort()).toEqual(Object.keys(samples).sort())
  })

  it.each(rules.map((r) => [`${r.crd} ${r.path}: ${r.rule.message}`, r] as const))('%s compiles, including its messageExpression', (_, r) => {
    expect(() => parse(r.rule.rule)).not.toThrow()
    if (r.rule.messageExpression) expect(() => parse(r.rule.messageExpression!)).not.toThrow()
  })

  it.each(rules.map((r) => [`${r.crd} ${r.path}: ${r.rule.message}`, r] as const))('%s holds on good samples and fails on bad ones', (_, r) => {
    const { pass, fail } = samples[r.rule.message!]!
    const run = parse(r.rule.rule)
    for (const self of pass) expect(run({ self: toCel(r.schema, self) }), JSON.stringify(self)).toBe(true)
    for (const self of fail) expect(run({ self: toCel(r.schema, self) }), JSON.stringify(self)).toBe(false)
    if (r.rule.messageExpression) {
      const message = parse(r.rule.messageExpression)({ self: toCel(r.schema, fail[0]) })
      expect(typeof message === 'string' && message.length > 0).toBe(true)
    }
  })

  it.each(rules.map((r) => [`${r.crd} ${r.path}: ${r.rule.message}`, r] as const))(
    '%s runs under bounded lists only, so the CEL cost estimate stays finite',
    (_, r) => {
      for (const list of r.arrayAncestors) expect(list.maxItems).toBeGreaterThan(0)
    },
  )

  it('bounds what the per-step rules read: names, dependencies and agent references', () => {
    const wf = allCrds().find((c) => c.spec.names.kind === 'Workflow')!
    const steps = wf.spec.versions[0]!.schema.openAPIV3Schema.properties!.spec!.properties!.steps!
    expect(steps.maxItems).toBe(10000)
    expect(steps['x-kubernetes-list-type']).toBe('map')
    expect(steps['x-kubernetes-list-map-keys']).toEqual(['name'])
    const step = steps.items!.properties!
    expect(step.name!.maxLength).toBe(63)
    expect(step.dependsOn!.maxItems).toBe(64)
    expect(step.dependsOn!.items!.maxLength).toBe(63)
    expect(step.agentRef!.properties!.name!.maxLength).toBeGreaterThan(0)
    expect(step.type!.maxLength).toBeGreaterThan(0)
  })

  it('keeps the self-dependency rule under the API server per-rule estimated cost limit of 10,000,000', () => {
    // The estimator charges `x in list` as list size times one string comparison (ceil(maxLength / 10)),
    // and multiplies a per-item rule by the largest number of items it can run on.
    const perStep = MAX_STEP_DEPENDENCIES * Math.ceil(63 / 10) + 10
    expect(perStep * MAX_STEPS).toBeLessThan(10_000_000)
  })

  it.each(rules.filter((r) => r.rule.messageExpression).map((r) => [`${r.crd} ${r.path}: ${r.rule.message}`, r] as const))(
    '%s quotes numbers with format(), never by concatenating string()',
    (_, r) => {
      // kube-apiserver estimates the result of string(<int or double>) as a string of unbounded
      // size, so `'...' + string(self.n)` makes the whole CRD unaffordable; format() is costed
      // by its template instead.
      expect(r.rule.messageExpression).not.toMatch(/\bstring\(/)
    },
  )

  it.each(rules.map((r) => [`${r.crd} ${r.path}: ${r.rule.message}`, r] as const))(
    '%s reads only bounded strings and lists',
    (_, r) => {
      const unbounded: string[] = []
      for (const source of [r.rule.rule, r.rule.messageExpression ?? '']) {
        for (const [ref] of source.matchAll(/self(\.[A-Za-z_][A-Za-z0-9_]*)+/g)) {
          let node: JsonSchemaProps | undefined = r.schema
          for (const part of ref.split('.').slice(1)) node = node?.properties?.[part]
          if (!node) continue
          const bounded = (n: JsonSchemaProps | undefined): boolean =>
            !n || (n.type === 'string' ? n.maxLength !== undefined || n.enum !== undefined
              : n.type === 'array' ? n.maxItems !== undefined && bounded(n.items) : true)
          if (!bounded(node)) unbounded.push(ref)
        }
      }
      expect(unbounded).toEqual([])
    },
  )
})
