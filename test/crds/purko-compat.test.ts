import { describe, expect, it } from 'vitest'
import { allCrds, PURKO_KINDS } from '../../shared/crd/definitions.js'
import type { JsonSchemaProps } from '../../shared/crd/structural.js'
import { purkoCrd } from './purko-fixtures.js'

/** Deliberate, documented departures from purko's CRD shapes (the docs win over the CRD). */
const TYPE_DECISIONS = new Set([
  'spec.timeout', // duration string or {timeoutSeconds}
  'spec.trigger.webhook.secret', // an object {name, namespace, key}, as the docs and Go type describe
])

/** Columns Kinetic adds (docs/guide/purko-compatibility.md): where an agent stands in its autonomy cycle. */
const ADDED_COLUMNS: Record<string, string[]> = {
  Agent: ['Level', 'Autonomy'],
  AgentAutonomyPolicy: ['Agents', 'Ready'],
}

type Node = Record<string, any>

function walk(node: Node, path: string, visit: (path: string, node: Node) => void): void {
  visit(path, node)
  for (const [k, child] of Object.entries((node.properties ?? {}) as Record<string, Node>)) {
    walk(child, path ? `${path}.${k}` : k, visit)
  }
  if (node.items) walk(node.items as Node, `${path}[]`, visit)
}

function lookup(root: JsonSchemaProps, path: string): { node?: JsonSchemaProps; preservedBy?: string } {
  let node: JsonSchemaProps | undefined = root
  let at = ''
  for (const part of path.split(/\.|(?=\[\])/).filter(Boolean)) {
    if (!node) return {}
    const next: JsonSchemaProps | undefined = part === '[]' ? node.items : node.properties?.[part]
      ?? (typeof node.additionalProperties === 'object' ? node.additionalProperties : undefined)
    if (!next) return node['x-kubernetes-preserve-unknown-fields'] ? { preservedBy: at || '<root>' } : {}
    node = next
    at = at ? `${at}.${part}` : part
  }
  return { node }
}

describe.each(allCrds().filter((c) => PURKO_KINDS.has(c.spec.names.kind)).map((c) => [c.spec.names.kind, c] as const))('%s stays compatible with purko', (kind, ours) => {
  const theirs = purkoCrd(kind)
  const ourSchema = ours.spec.versions[0]!.schema.openAPIV3Schema
  const theirSchema = theirs.spec.versions[0].schema.openAPIV3Schema as Node

  it('has the same names, scope and subresources, and purko\'s printer columns in purko\'s order (Kinetic only adds columns before Age)', () => {
    expect(ours.spec.names).toEqual(theirs.spec.names)
    expect(ours.spec.scope).toBe(theirs.spec.scope)
    expect(ours.spec.versions[0]!.subresources).toEqual(theirs.spec.versions[0].subresources)
    const columns = (ours.spec.versions[0]!.additionalPrinterColumns ?? []) as Array<{ name: string }>
    const purkos = (theirs.spec.versions[0].additionalPrinterColumns ?? []) as Array<{ name: string }>
    const added = ADDED_COLUMNS[kind] ?? []
    expect(columns.filter((c) => !added.includes(c.name))).toEqual(purkos)
    expect(columns.map((c) => c.name).filter((n) => added.includes(n))).toEqual(added)
    expect(columns.at(-1)).toEqual(purkos.at(-1))
  })

  it('declares or preserves every field purko declares, with the same type', () => {
    const problems: string[] = []
    walk(theirSchema, '', (path, node) => {
      if (!path || path === 'metadata') return
      const found = lookup(ourSchema, path)
      if (found.preservedBy) return
      if (!found.node) return void problems.push(`${path}: missing`)
      if (TYPE_DECISIONS.has(path)) return
      if (node.type && found.node.type !== node.type) problems.push(`${path}: ${String(found.node.type)} instead of ${node.type}`)
    })
    expect(problems).toEqual([])
  })

  it('keeps unknown fields at every object level where purko keeps them', () => {
    const problems: string[] = []
    walk(theirSchema, '', (path, node) => {
      if (node.type !== 'object' || !node['x-kubernetes-preserve-unknown-fields']) return
      const found = lookup(ourSchema, path)
      const n = found.node
      if (found.preservedBy || (n && (n['x-kubernetes-preserve-unknown-fields'] || typeof n.additionalProperties === 'object'))) return
      problems.push(path || '<root>')
    })
    expect(problems).toEqual([])
  })

  it("accepts every enum value and applies every default purko's CRD has", () => {
    const problems: string[] = []
    walk(theirSchema, '', (path, node) => {
      const n = lookup(ourSchema, path).node
      if (!n) return
      for (const value of (node.enum ?? []) as unknown[]) {
        if (n.enum && !n.enum.includes(value)) problems.push(`${path}: rejects ${String(value)}`)
      }
      if (node.default !== undefined && JSON.stringify(n.default) !== JSON.stringify(node.default)) {
        problems.push(`${path}: default ${JSON.stringify(n.default)} instead of ${JSON.stringify(node.default)}`)
      }
    })
    expect(problems).toEqual([])
  })
})

/**
 * Fields Kinetic declares that purko's CRD does not, per kind (docs/guide/purko-compatibility.md).
 * Only kinds listed here are checked: for them, every addition must be named on purpose.
 */
const ADDED_FIELDS: Record<string, string[]> = {
  LLMProvider: ['status.observedGeneration', 'status.discoveredModels', 'status.consecutiveFailures', 'status.nextProbeAt'],
  MemoryProvider: ['status.observedGeneration'],
  // spec §5.10: the per-step model override of a recipe's child Workflow.
  Workflow: ['spec.steps[].model'],
}

describe.each(Object.entries(ADDED_FIELDS))('%s adds only the fields Kinetic means to add', (kind, added) => {
  it('declares nothing purko lacks beyond its listed additions, all of them optional', () => {
    const ours = allCrds().find((c) => c.spec.names.kind === kind)!
    const ourSchema = ours.spec.versions[0]!.schema.openAPIV3Schema as Node
    const theirSchema = purkoCrd(kind).spec.versions[0].schema.openAPIV3Schema as unknown as JsonSchemaProps
    const extra: string[] = []
    walk(ourSchema, '', (path) => {
      if (!path || path === 'metadata' || path.startsWith('metadata.')) return
      if (path.startsWith('status.conditions')) return // metav1.Condition in both
      if ([...TYPE_DECISIONS].some((d) => path.startsWith(`${d}.`))) return // the decided shape's own fields
      const found = lookup(theirSchema, path)
      if (!found.node && !found.preservedBy && !added.some((a) => path === a || path.startsWith(`${a}.`) || path.startsWith(`${a}[]`))) extra.push(path)
    })
    expect(extra).toEqual([])
    for (const field of added) {
      const cut = field.lastIndexOf('.')
      const parent = lookup(ourSchema, field.slice(0, cut)).node
      expect(parent?.properties?.[field.slice(cut + 1)], `${kind} declares ${field}`).toBeDefined()
      expect(parent?.required ?? [], `${field} is optional`).not.toContain(field.slice(cut + 1))
    }
  })
})

describe('Workflow step model override (Kinetic extension, spec §5.10)', () => {
  it('is {provider, name, temperature 0..2, maxTokens >= 1}, all optional, and purko\'s step keeps unknown fields so purko ignores it', () => {
    const ours = allCrds().find((c) => c.spec.names.kind === 'Workflow')!.spec.versions[0]!.schema.openAPIV3Schema
    const model = lookup(ours, 'spec.steps[].model').node!
    expect(Object.keys(model.properties ?? {})).toEqual(['provider', 'name', 'temperature', 'maxTokens'])
    expect(model.required ?? []).toEqual([])
    expect(model.properties!.temperature).toMatchObject({ type: 'number', minimum: 0, maximum: 2 })
    expect(model.properties!.maxTokens).toMatchObject({ type: 'integer', minimum: 1 })
    const theirs = purkoCrd('Workflow').spec.versions[0].schema.openAPIV3Schema as unknown as JsonSchemaProps
    expect(lookup(theirs, 'spec.steps[].model').preservedBy).toBe('spec.steps.[]')
  })
})
