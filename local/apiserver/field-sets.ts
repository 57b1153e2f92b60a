import { deepEqual } from './object-meta.js'
import type { Shape } from './field-shapes.js'
import type { ResourceType } from './resource-type.js'

/**
 * Field sets: the paths of an object's fields, as field ownership (managed-fields.ts) records
 * them: the paths a value holds or an applied configuration sets, what changed between two
 * versions, and the fieldsV1 form `metadata.managedFields` stores them in. Pure.
 */

type Obj = Record<string, unknown>
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v)

/** A path element as fieldsV1 spells it: `f:name`, `k:{"name":"a"}`, `v:"x"`. */
export type PathElement = string
/** A set of field paths, each encoded as its path elements joined by PATH_SEPARATOR. */
export type FieldSet = Set<string>
const PATH_SEPARATOR = '\u0001'
/** The FieldSet key of a path. */
export const pathKey = (path: PathElement[]) => path.join(PATH_SEPARATOR)
/** The path a FieldSet key names. */
export const pathElements = (k: string): PathElement[] => (k === '' ? [] : k.split(PATH_SEPARATOR))

// Nodes that exist in an empty object of a kind (metadata, and a built-in kind's non-pointer
// structs): creating an object does not make its creator own them as such.
// A pod spec's containers list is never omitted from the Go value, so it exists (as null) too.
const TEMPLATE = ['spec.template', 'spec.template.metadata', 'spec.template.spec', 'spec.template.spec.containers']
const ZERO_STRUCTS: Record<string, string[]> = {
  Namespace: ['spec', 'status'], Service: ['spec', 'status'], Pod: ['spec', 'spec.containers', 'status'], PersistentVolumeClaim: ['spec', 'spec.resources', 'status'],
  Job: ['spec', ...TEMPLATE, 'status'], Deployment: ['spec', ...TEMPLATE, 'spec.strategy', 'status'],
  StatefulSet: ['spec', ...TEMPLATE, 'spec.updateStrategy', 'status'], DaemonSet: ['spec', ...TEMPLATE, 'spec.updateStrategy', 'status'],
  CronJob: ['spec', 'spec.jobTemplate', 'spec.jobTemplate.metadata', 'spec.jobTemplate.spec', ...TEMPLATE.map((p) => p.replace('spec.', 'spec.jobTemplate.spec.')), 'status'],
  RoleBinding: ['roleRef'], ClusterRoleBinding: ['roleRef'], Event: ['source'],
  CustomResourceDefinition: ['spec', 'spec.names', 'status', 'status.acceptedNames'],
}

/** The nodes of a new object that its creator does not own as such. */
export function alwaysPresent(rt: ResourceType): ReadonlySet<string> {
  const paths = ['metadata', ...(rt.crdName ? [] : ZERO_STRUCTS[rt.kind] ?? [])]
  return new Set(paths.map((p) => pathKey(p.split('.').map((f) => `f:${f}`))))
}

// ---------------------------------------------------------------- field sets of values

/** The path element of an item of a keyed list: its key fields, sorted by name. */
export function itemElement(item: unknown, keys: string[]): PathElement {
  const k: Obj = {}
  for (const name of [...keys].sort()) if (isObj(item) && item[name] !== undefined) k[name] = item[name]
  return `k:${JSON.stringify(k)}`
}

/** Every path of a value under `path`, the node itself included unless it is one that always exists. */
function addAll(value: unknown, shape: Shape, path: PathElement[], out: FieldSet, present: ReadonlySet<string>): void {
  if (path.length > 0 && !present.has(pathKey(path))) out.add(pathKey(path))
  if (shape.t === 'fields' && isObj(value)) {
    for (const [name, v] of Object.entries(value)) {
      const child = shape.child(name, v)
      if (child && v !== undefined) addAll(v, child, [...path, `f:${name}`], out, present)
    }
  } else if (shape.t === 'listMap' && Array.isArray(value)) {
    for (const item of value) addAll(item, shape.item(item), [...path, itemElement(item, shape.keys)], out, present)
  } else if (shape.t === 'set' && Array.isArray(value)) {
    for (const v of value) out.add(pathKey([...path, `v:${JSON.stringify(v)}`]))
  }
}

const NOTHING: ReadonlySet<string> = new Set()

/** The fields an applied configuration sets: its leaves, list items and empty objects (not the objects holding them). */
export function appliedFields(value: unknown, shape: Shape, path: PathElement[] = [], out: FieldSet = new Set()): FieldSet {
  if (shape.t === 'fields' && isObj(value)) {
    let any = false
    for (const [name, v] of Object.entries(value)) {
      const child = shape.child(name, v)
      if (!child || v === undefined) continue
      any = true
      appliedFields(v, child, [...path, `f:${name}`], out)
    }
    if (!any && path.length > 0 && !(path.length === 1 && path[0] === 'f:metadata')) out.add(pathKey(path))
  } else if (shape.t === 'listMap' && Array.isArray(value)) {
    for (const item of value) {
      const at = [...path, itemElement(item, shape.keys)]
      out.add(pathKey(at))
      appliedFields(item, shape.item(item), at, out)
    }
  } else if (shape.t === 'set' && Array.isArray(value)) {
    for (const v of value) out.add(pathKey([...path, `v:${JSON.stringify(v)}`]))
  } else if (path.length > 0) out.add(pathKey(path))
  return out
}

/** Every field path present in an object (nodes and leaves). */
export function presentFields(value: unknown, shape: Shape): FieldSet {
  const out: FieldSet = new Set()
  addAll(value, shape, [], out, NOTHING)
  return out
}

/** What changed between two versions of an object: added and modified paths, and removed ones. */
export interface FieldChanges {
  changed: FieldSet
  removed: FieldSet
}

/**
 * The paths added or modified, and removed, from `before` to `after`. `present` names nodes that
 * exist before any write (the root, metadata, and a built-in kind's non-pointer structs): those
 * are never reported as added themselves.
 */
export function compareFields(before: unknown, after: unknown, shape: Shape, present: ReadonlySet<string> = new Set()): FieldChanges {
  const out: FieldChanges = { changed: new Set(), removed: new Set() }
  walkCompare(before, after, shape, [], out, present)
  return out
}

function walkCompare(a: unknown, b: unknown, shape: Shape, path: PathElement[], out: FieldChanges, present: ReadonlySet<string>): void {
  const here = pathKey(path)
  if (a === undefined && b === undefined) return
  if (a === undefined) {
    addAll(b, shape, path, out.changed, present)
    return
  }
  if (b === undefined) {
    addAll(a, shape, path, out.removed, NOTHING)
    return
  }
  if (shape.t === 'fields' && isObj(a) && isObj(b)) {
    for (const name of new Set([...Object.keys(a), ...Object.keys(b)])) {
      const child = shape.child(name, b[name] ?? a[name])
      if (child) walkCompare(a[name], b[name], child, [...path, `f:${name}`], out, present)
    }
    return
  }
  if (shape.t === 'listMap' && Array.isArray(a) && Array.isArray(b)) {
    const before = new Map(a.map((i) => [itemElement(i, shape.keys), i]))
    const after = new Map(b.map((i) => [itemElement(i, shape.keys), i]))
    for (const [pe, item] of after) walkCompare(before.get(pe), item, shape.item(item), [...path, pe], out, present)
    for (const [pe, item] of before) if (!after.has(pe)) walkCompare(item, undefined, shape.item(item), [...path, pe], out, present)
    return
  }
  if (shape.t === 'set' && Array.isArray(a) && Array.isArray(b)) {
    const before = new Set(a.map((v) => JSON.stringify(v)))
    const after = new Set(b.map((v) => JSON.stringify(v)))
    for (const v of after) if (!before.has(v)) out.changed.add(pathKey([...path, `v:${v}`]))
    for (const v of before) if (!after.has(v)) out.removed.add(pathKey([...path, `v:${v}`]))
    return
  }
  if (!deepEqual(a, b)) out.changed.add(here)
}

// ---------------------------------------------------------------- fieldsV1

/** A field set as fieldsV1 JSON: `{"f:spec":{".":{},"f:size":{}}}`. */
export function toFieldsV1(set: FieldSet): Obj {
  const root: Obj = {}
  const members = new Set<Obj>()
  for (const k of [...set].sort()) {
    let node = root
    for (const pe of pathElements(k)) {
      if (!isObj(node[pe])) node[pe] = {}
      node = node[pe] as Obj
    }
    members.add(node)
  }
  const finish = (node: Obj): Obj => {
    const out: Obj = {}
    const children = Object.keys(node).sort()
    if (members.has(node) && children.length > 0) out['.'] = {}
    for (const c of children) out[c] = finish(node[c] as Obj)
    return out
  }
  return finish(root)
}

/** The field set a fieldsV1 object names. */
export function fromFieldsV1(fields: unknown, path: PathElement[] = [], out: FieldSet = new Set()): FieldSet {
  if (!isObj(fields)) return out
  for (const [pe, child] of Object.entries(fields)) {
    if (pe === '.') {
      out.add(pathKey(path))
      continue
    }
    if (isObj(child) && Object.keys(child).length > 0) fromFieldsV1(child, [...path, pe], out)
    else out.add(pathKey([...path, pe]))
  }
  return out
}

/** `.spec.parts[name="a"].count`: a path as the real server prints it in conflicts. */
export function pathString(k: string): string {
  return pathElements(k).map((pe) => {
    const body = pe.slice(2)
    if (pe.startsWith('f:')) return `.${body}`
    if (pe.startsWith('v:')) return `[=${body}]`
    if (pe.startsWith('k:')) {
      const keys = JSON.parse(body) as Obj
      return `[${Object.entries(keys).map(([n, v]) => `${n}=${JSON.stringify(v)}`).join(',')}]`
    }
    return `[${body}]`
  }).join('')
}
