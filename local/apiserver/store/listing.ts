// The list verb over the object table: selectors, namespace/name order, limit and continue tokens.
import { badRequest } from '../api-error.js'
import { fieldSelectorsOf, groupResource, type ResourceType } from '../resource-type.js'
import { parseFieldSelector, parseLabelSelector, pinnedName, type FieldSelectorRules } from '../selectors.js'
import type { ObjectTable } from './object-table.js'
import type { ListOptions, ListPage, Stored, Target } from './store-types.js'

/** The field selectors a kind supports, for the selector parser. */
export function fieldSelectorRules(rt: ResourceType): FieldSelectorRules {
  return { kind: rt.kind, ...fieldSelectorsOf(rt) }
}

/** Lists stored objects in namespace/name order, honouring selectors, limit and continue. */
export function listPage(table: ObjectTable, t: Target, opts: ListOptions, resourceVersion: string): ListPage {
  const label = parseLabelSelector(opts.labelSelector)
  const field = parseFieldSelector(opts.fieldSelector, fieldSelectorRules(t.rt))
  const byNs = table.resource(groupResource(t.rt))
  let start = ''
  if (opts.continue) {
    try {
      start = String((JSON.parse(Buffer.from(opts.continue, 'base64url').toString('utf8')) as { start: string }).start)
    } catch {
      throw badRequest('continue key is not valid: illegal base64 data')
    }
  }
  const ns = t.rt.namespaced && opts.namespace ? opts.namespace : undefined
  const name = pinnedName(opts.fieldSelector)
  const indexed = name === undefined ? table.labelCandidates(groupResource(t.rt), ns, label) : undefined
  const matching: [string, Stored][] = []
  const consider = (nsKey: string, objName: string, stored: Stored | undefined): void => {
    if (!stored) return
    const key = `${nsKey}/${objName}`
    if (start && key <= start) return
    if (label.matches(stored.obj) && field.matches(stored.obj)) matching.push([key, stored])
  }
  const collect = (nsKey: string, byName: ReadonlyMap<string, Stored> | undefined): void => {
    if (!byName) return
    if (name !== undefined) consider(nsKey, name, byName.get(name))
    else if (indexed) for (const objName of indexed.get(nsKey) ?? []) consider(nsKey, objName, byName.get(objName))
    else for (const [objName, stored] of byName) consider(nsKey, objName, stored)
  }
  if (byNs) {
    if (ns !== undefined) collect(ns, byNs.get(ns))
    else for (const [nsKey, byName] of byNs) collect(nsKey, byName)
  }
  matching.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
  const items: Stored[] = []
  const limit = opts.limit && opts.limit > 0 ? opts.limit : Infinity
  for (const [, stored] of matching) {
    if (items.length >= limit) {
      const last = items[items.length - 1] as Stored
      const lastKey = `${last.obj.metadata.namespace ?? ''}/${last.obj.metadata.name}`
      return { items, resourceVersion, continue: Buffer.from(JSON.stringify({ rv: resourceVersion, start: lastKey })).toString('base64url') }
    }
    items.push(stored)
  }
  return { items, resourceVersion }
}
