import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { ObjectStore, type KubeObject } from '../../../local/apiserver/index.js'

const CM = { apiVersion: 'v1', kind: 'ConfigMap' }
const NAMESPACES = ['team-a', 'team-b']
const NAMES = ['c0', 'c1', 'c2', 'c3', 'c4']
const KEYS = ['app', 'tier', 'kinetic.dev/shard']
const VALUES = ['x', 'y', '1']

const labelsArb = fc.dictionary(fc.constantFrom(...KEYS), fc.constantFrom(...VALUES), { maxKeys: 3 })
const opArb = fc.oneof(
  fc.record({ op: fc.constant('put' as const), ns: fc.constantFrom(...NAMESPACES), name: fc.constantFrom(...NAMES), labels: labelsArb }),
  fc.record({ op: fc.constant('delete' as const), ns: fc.constantFrom(...NAMESPACES), name: fc.constantFrom(...NAMES) }),
)
const selectorArb = fc.oneof(
  fc.tuple(fc.constantFrom(...KEYS), fc.constantFrom(...VALUES)).map(([k, v]) => `${k}=${v}`),
  fc.tuple(fc.constantFrom(...KEYS), fc.constantFrom(...VALUES), fc.constantFrom(...VALUES)).map(([k, a, b]) => `${k} in (${a},${b})`),
  fc.constantFrom(...KEYS),
  fc.tuple(fc.constantFrom(...KEYS), fc.constantFrom(...VALUES), fc.constantFrom(...KEYS)).map(([k, v, other]) => `${k}=${v},!${other}`),
  fc.tuple(fc.constantFrom(...KEYS), fc.constantFrom(...VALUES), fc.constantFrom(...KEYS), fc.constantFrom(...VALUES)).map(([k, v, o, w]) => `${k}==${v},${o} notin (${w})`),
)

/** What a selector must select, decided from the objects alone. */
function expected(objects: Map<string, Record<string, string>>, selector: string, ns: string | undefined): string[] {
  const tests = selector.split(/,(?![^()]*\))/).map((term): ((l: Record<string, string>) => boolean) => {
    let m = /^(\S+) in \((.*)\)$/.exec(term)
    if (m) { const [, k, vs] = m; return (l) => l[k!] !== undefined && vs!.split(',').includes(l[k!]!) }
    m = /^(\S+) notin \((.*)\)$/.exec(term)
    if (m) { const [, k, vs] = m; return (l) => l[k!] === undefined || !vs!.split(',').includes(l[k!]!) }
    m = /^([^=!]+)==?(.*)$/.exec(term)
    if (m) { const [, k, v] = m; return (l) => l[k!] === v }
    if (term.startsWith('!')) return (l) => l[term.slice(1)] === undefined
    return (l) => l[term] !== undefined
  })
  return [...objects].filter(([key, labels]) => (ns === undefined || key.startsWith(`${ns}/`)) && tests.every((t) => t(labels))).map(([key]) => key).sort()
}

describe('lists by label selector', () => {
  it('select exactly the objects whose current labels match, after any creates, relabels and deletes, in one namespace and across all', () => {
    fc.assert(fc.property(fc.array(opArb, { maxLength: 40 }), fc.array(selectorArb, { minLength: 1, maxLength: 6 }), (ops, selectors) => {
      const store = new ObjectStore()
      const objects = new Map<string, Record<string, string>>()
      for (const op of ops) {
        const key = `${op.ns}/${op.name}`
        if (op.op === 'put') {
          const obj: KubeObject = { ...CM, metadata: { name: op.name, namespace: op.ns, labels: op.labels }, data: { n: String(objects.size) } }
          if (objects.has(key)) {
            const current = store.list(CM, { namespace: op.ns, fieldSelector: `metadata.name=${op.name}` }).items[0]!
            store.update({ ...obj, metadata: { ...obj.metadata, resourceVersion: current.metadata.resourceVersion } })
          } else store.create(obj)
          objects.set(key, op.labels)
        } else if (objects.has(key)) {
          store.delete(CM, op.ns, op.name)
          objects.delete(key)
        }
      }
      for (const selector of selectors) {
        for (const ns of [...NAMESPACES, undefined]) {
          const got = store.list(CM, { labelSelector: selector, ...(ns ? { namespace: ns } : {}) }).items.map((o) => `${o.metadata.namespace}/${o.metadata.name}`)
          expect(got, `${selector} in ${ns ?? 'all namespaces'}`).toEqual(expected(objects, selector, ns))
        }
      }
    }), { numRuns: 300 })
  })

  it('pages a label-selected list with limit and continue without losing or repeating an object', () => {
    const store = new ObjectStore()
    for (let i = 0; i < 25; i++) store.create({ ...CM, metadata: { name: `c${String(i).padStart(2, '0')}`, namespace: 'team-a', labels: { app: i % 2 === 0 ? 'x' : 'y' } } })
    const seen: string[] = []
    let next: string | undefined
    do {
      const page = store.list(CM, { namespace: 'team-a', labelSelector: 'app=x', limit: 4, ...(next ? { continue: next } : {}) })
      seen.push(...page.items.map((o) => o.metadata.name as string))
      next = page.continue
    } while (next)
    expect(seen).toEqual(Array.from({ length: 13 }, (_, i) => `c${String(i * 2).padStart(2, '0')}`))
  })
})
