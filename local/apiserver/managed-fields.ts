import { ApiError } from './api-error.js'
import { deepEqual } from './object-meta.js'
import type { ResourceType } from './resource-type.js'
import type { JSONSchemaProps } from './validation.js'

/**
 * Field ownership (`metadata.managedFields`) and server-side apply, the way the real server's
 * field manager works: every write records which fields its manager set (operation `Update`,
 * or `Apply` for server-side apply), an Update takes the fields it changes away from other
 * managers, and an Apply that would change a field another manager owns is a conflict unless
 * forced. Fields are tracked along the object's schema: custom resources follow their
 * openAPIV3Schema (list types, map types); built-in kinds, which are schema-less here, use the
 * merge keys of their well-known lists, and every other list is atomic.
 */

type Obj = Record<string, unknown>
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v)

/** A path element as fieldsV1 spells it: `f:name`, `k:{"name":"a"}`, `v:"x"`. */
type PE = string
/** A set of field paths, each encoded as its path elements joined by SEP. */
export type FieldSet = Set<string>
const SEP = '\u0001'
const key = (path: PE[]) => path.join(SEP)
const split = (k: string): PE[] => (k === '' ? [] : k.split(SEP))

/** How a node of an object is tracked. */
export type Shape =
  | { t: 'fields'; child: (name: string, value: unknown) => Shape | undefined }
  | { t: 'atomic' }
  | { t: 'listMap'; keys: string[]; item: (value: unknown) => Shape }
  | { t: 'set' }

const ATOMIC: Shape = { t: 'atomic' }
const SET: Shape = { t: 'set' }

/** What a value becomes without a schema: objects are granular, everything else atomic. */
const deduced = (value: unknown): Shape => (isObj(value) ? { t: 'fields', child: (_, v) => deduced(v) } : ATOMIC)

// The ObjectMeta fields a manager can own; the server's own (name, uid, ...) are never tracked.
const METADATA: Shape = {
  t: 'fields',
  child: (name, v) => {
    switch (name) {
      case 'labels':
      case 'annotations':
        return isObj(v) ? { t: 'fields', child: () => ATOMIC } : ATOMIC
      case 'finalizers':
        return SET
      case 'ownerReferences':
        return { t: 'listMap', keys: ['uid'], item: (x) => deduced(x) }
      case 'generateName':
        return ATOMIC
      default:
        return undefined
    }
  },
}

/** Merge keys of the built-in kinds' keyed lists (the same names mean the same in every kind served). */
const BUILTIN_LIST_KEYS: Record<string, string[]> = {
  containers: ['name'], initContainers: ['name'], ephemeralContainers: ['name'], env: ['name'], volumes: ['name'],
  volumeMounts: ['mountPath'], volumeDevices: ['devicePath'], imagePullSecrets: ['name'], conditions: ['type'],
  hostAliases: ['ip'], topologySpreadConstraints: ['topologyKey', 'whenUnsatisfiable'], resourceClaims: ['name'],
}

// Object references are atomic structs in the built-in types: owned whole.
const ATOMIC_STRUCTS = new Set(['involvedObject', 'related'])

function builtinShape(value: unknown, field = ''): Shape {
  if (ATOMIC_STRUCTS.has(field)) return ATOMIC
  if (Array.isArray(value)) {
    if (field === 'ports') {
      const service = value.some((p) => isObj(p) && 'port' in p && !('containerPort' in p))
      return { t: 'listMap', keys: service ? ['port', 'protocol'] : ['containerPort', 'protocol'], item: (x) => builtinShape(x) }
    }
    const keys = BUILTIN_LIST_KEYS[field]
    return keys && value.every(isObj) ? { t: 'listMap', keys, item: (x) => builtinShape(x) } : ATOMIC
  }
  return isObj(value) ? { t: 'fields', child: (name, v) => builtinShape(v, name) } : ATOMIC
}

function schemaShape(s: JSONSchemaProps | undefined, value: unknown): Shape {
  if (!s) return deduced(value)
  if (Array.isArray(value)) {
    const listType = s['x-kubernetes-list-type']
    if (listType === 'map') return { t: 'listMap', keys: s['x-kubernetes-list-map-keys'] ?? [], item: (x) => schemaShape(s.items, x) }
    if (listType === 'set') return SET
    return ATOMIC
  }
  if (!isObj(value) || s['x-kubernetes-map-type'] === 'atomic') return ATOMIC
  const props = s.properties
  const additional = isObj(s.additionalProperties) ? (s.additionalProperties as JSONSchemaProps) : undefined
  return {
    t: 'fields',
    child: (name, v) => {
      const sub = props?.[name] ?? additional
      if (sub) return schemaShape(sub, v)
      return deduced(v)
    },
  }
}

/** The tracking shape of a whole object of a kind at a served version. */
export function rootShape(rt: ResourceType, schema: JSONSchemaProps | undefined): Shape {
  return {
    t: 'fields',
    child: (name, v) => {
      if (name === 'apiVersion' || name === 'kind') return undefined
      if (name === 'metadata') return METADATA
      if (rt.crdName) return schemaShape(schema?.properties?.[name], v)
      return builtinShape(v, name)
    },
  }
}

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
  return new Set(paths.map((p) => key(p.split('.').map((f) => `f:${f}`))))
}

// ---------------------------------------------------------------- field sets of values

function itemPE(item: unknown, keys: string[]): PE {
  const k: Obj = {}
  for (const name of [...keys].sort()) if (isObj(item) && item[name] !== undefined) k[name] = item[name]
  return `k:${JSON.stringify(k)}`
}

/** Every path of a value under `path`, the node itself included unless it is one that always exists. */
function addAll(value: unknown, shape: Shape, path: PE[], out: FieldSet, present: ReadonlySet<string>): void {
  if (path.length > 0 && !present.has(key(path))) out.add(key(path))
  if (shape.t === 'fields' && isObj(value)) {
    for (const [name, v] of Object.entries(value)) {
      const child = shape.child(name, v)
      if (child && v !== undefined) addAll(v, child, [...path, `f:${name}`], out, present)
    }
  } else if (shape.t === 'listMap' && Array.isArray(value)) {
    for (const item of value) addAll(item, shape.item(item), [...path, itemPE(item, shape.keys)], out, present)
  } else if (shape.t === 'set' && Array.isArray(value)) {
    for (const v of value) out.add(key([...path, `v:${JSON.stringify(v)}`]))
  }
}

const NOTHING: ReadonlySet<string> = new Set()

/** The fields an applied configuration sets: its leaves, list items and empty objects (not the objects holding them). */
export function appliedFields(value: unknown, shape: Shape, path: PE[] = [], out: FieldSet = new Set()): FieldSet {
  if (shape.t === 'fields' && isObj(value)) {
    let any = false
    for (const [name, v] of Object.entries(value)) {
      const child = shape.child(name, v)
      if (!child || v === undefined) continue
      any = true
      appliedFields(v, child, [...path, `f:${name}`], out)
    }
    if (!any && path.length > 0 && !(path.length === 1 && path[0] === 'f:metadata')) out.add(key(path))
  } else if (shape.t === 'listMap' && Array.isArray(value)) {
    for (const item of value) {
      const at = [...path, itemPE(item, shape.keys)]
      out.add(key(at))
      appliedFields(item, shape.item(item), at, out)
    }
  } else if (shape.t === 'set' && Array.isArray(value)) {
    for (const v of value) out.add(key([...path, `v:${JSON.stringify(v)}`]))
  } else if (path.length > 0) out.add(key(path))
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

function walkCompare(a: unknown, b: unknown, shape: Shape, path: PE[], out: FieldChanges, present: ReadonlySet<string>): void {
  const here = key(path)
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
    const before = new Map(a.map((i) => [itemPE(i, shape.keys), i]))
    const after = new Map(b.map((i) => [itemPE(i, shape.keys), i]))
    for (const [pe, item] of after) walkCompare(before.get(pe), item, shape.item(item), [...path, pe], out, present)
    for (const [pe, item] of before) if (!after.has(pe)) walkCompare(item, undefined, shape.item(item), [...path, pe], out, present)
    return
  }
  if (shape.t === 'set' && Array.isArray(a) && Array.isArray(b)) {
    const before = new Set(a.map((v) => JSON.stringify(v)))
    const after = new Set(b.map((v) => JSON.stringify(v)))
    for (const v of after) if (!before.has(v)) out.changed.add(key([...path, `v:${v}`]))
    for (const v of before) if (!after.has(v)) out.removed.add(key([...path, `v:${v}`]))
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
    for (const pe of split(k)) {
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
export function fromFieldsV1(fields: unknown, path: PE[] = [], out: FieldSet = new Set()): FieldSet {
  if (!isObj(fields)) return out
  for (const [pe, child] of Object.entries(fields)) {
    if (pe === '.') {
      out.add(key(path))
      continue
    }
    if (isObj(child) && Object.keys(child).length > 0) fromFieldsV1(child, [...path, pe], out)
    else out.add(key([...path, pe]))
  }
  return out
}

/** `.spec.parts[name="a"].count`: a path as the real server prints it in conflicts. */
export function pathString(k: string): string {
  return split(k).map((pe) => {
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

// ---------------------------------------------------------------- managedFields entries

/**
 * One `metadata.managedFields` entry. Its fields stay in their fieldsV1 form (`raw`) until a
 * write touches them, so the entries a write does not concern cost nothing to carry over.
 */
export interface ManagerEntry {
  manager: string
  operation: 'Apply' | 'Update'
  apiVersion: string
  time?: string
  subresource?: string
  raw?: Obj
  set?: FieldSet
}

/** The entry's field set, decoded on first use. */
export function fieldsOf(e: ManagerEntry): FieldSet {
  e.set ??= fromFieldsV1(e.raw)
  return e.set
}

function owns(e: ManagerEntry, k: string): boolean {
  if (e.set) return e.set.has(k)
  let node: unknown = e.raw
  for (const pe of split(k)) {
    node = isObj(node) ? node[pe] : undefined
    if (!isObj(node)) return false
  }
  return isObj(node) && (Object.keys(node).length === 0 || '.' in node)
}

const nonEmpty = (e: ManagerEntry) => (e.set ? e.set.size > 0 : isObj(e.raw) && Object.keys(e.raw).length > 0)
const withSet = (e: ManagerEntry, set: FieldSet): ManagerEntry => {
  const { raw: _raw, ...rest } = e
  return { ...rest, set }
}

/** The entries of an object's `metadata.managedFields`. */
export function readEntries(managedFields: unknown): ManagerEntry[] {
  if (!Array.isArray(managedFields)) return []
  return managedFields.filter(isObj).map((m) => ({
    manager: String(m.manager ?? ''),
    operation: m.operation === 'Apply' ? 'Apply' : 'Update',
    apiVersion: String(m.apiVersion ?? ''),
    ...(typeof m.time === 'string' && !Number.isNaN(Date.parse(m.time)) ? { time: `${new Date(m.time).toISOString().slice(0, 19)}Z` } : {}),
    ...(typeof m.subresource === 'string' && m.subresource ? { subresource: m.subresource } : {}),
    raw: isObj(m.fieldsV1) ? m.fieldsV1 : {},
  }))
}

/** The entries as `metadata.managedFields`, ordered as the real server orders them. */
export function writeEntries(entries: ManagerEntry[]): Obj[] | undefined {
  const kept = entries.filter(nonEmpty)
  if (kept.length === 0) return undefined
  const seconds = (e: ManagerEntry) => (e.time ? Date.parse(e.time) / 1000 : 0)
  kept.sort((p, q) => (p.operation !== q.operation ? (p.operation < q.operation ? -1 : 1)
    : seconds(p) !== seconds(q) ? seconds(p) - seconds(q)
      : p.manager !== q.manager ? (p.manager < q.manager ? -1 : 1)
        : p.apiVersion !== q.apiVersion ? (p.apiVersion < q.apiVersion ? -1 : 1)
          : (p.subresource ?? '') < (q.subresource ?? '') ? -1 : 1))
  return kept.map((e) => ({
    manager: e.manager,
    operation: e.operation,
    apiVersion: e.apiVersion,
    ...(e.time ? { time: e.time } : {}),
    fieldsType: 'FieldsV1',
    fieldsV1: e.set ? toFieldsV1(e.set) : e.raw,
    ...(e.subresource ? { subresource: e.subresource } : {}),
  }))
}

const sameEntry = (e: ManagerEntry, manager: string, operation: string, apiVersion: string, subresource?: string) =>
  e.manager === manager && e.operation === operation && (operation === 'Apply' || e.apiVersion === apiVersion) && (e.subresource ?? '') === (subresource ?? '')

/** Who is writing, and how. */
export interface Writer {
  manager: string
  operation: 'Apply' | 'Update'
  apiVersion: string
  subresource?: string
  time: string
}

/**
 * The managedFields after an Update: the writer gains what it added or modified, other managers
 * lose those fields, and removed fields leave every set. Null when nothing changed.
 */
export function afterUpdate(entries: ManagerEntry[], changes: FieldChanges, writer: Writer): ManagerEntry[] {
  const touched = [...changes.changed, ...changes.removed]
  const out = entries.map((e) => {
    if (!touched.some((k) => owns(e, k))) return e
    const set = new Set(fieldsOf(e))
    for (const k of touched) set.delete(k)
    return withSet(e, set)
  })
  if (changes.changed.size === 0) return out
  const at = out.findIndex((e) => sameEntry(e, writer.manager, 'Update', writer.apiVersion, writer.subresource))
  const mine: ManagerEntry = at >= 0
    ? withSet(out[at] as ManagerEntry, new Set(fieldsOf(out[at] as ManagerEntry)))
    : { manager: writer.manager, operation: 'Update', apiVersion: writer.apiVersion, set: new Set(), ...(writer.subresource ? { subresource: writer.subresource } : {}) }
  for (const k of changes.changed) fieldsOf(mine).add(k)
  mine.time = writer.time
  if (at >= 0) out[at] = mine
  else out.push(mine)
  return out
}

/** A field another manager owns that an apply would change. */
export interface Conflict {
  manager: string
  path: string
  /** The field as a FieldSet key. */
  key: string
}

/** How a conflicting manager is named in messages: Apply managers by name, Update managers with their apiVersion. */
function managerName(e: ManagerEntry): string {
  const sub = e.subresource ? ` (subresource: ${e.subresource})` : ''
  return e.operation === 'Update' ? `${JSON.stringify(e.manager)} using ${e.apiVersion}${sub}` : `${JSON.stringify(e.manager)}${sub}`
}

/** 409 Conflict for an apply, worded and detailed as the real server does. */
export function conflictError(conflicts: Conflict[]): ApiError {
  let text: string
  if (conflicts.length === 1) {
    const c = conflicts[0] as Conflict
    text = `conflict with ${c.manager}: ${c.path}`
  } else {
    const byManager = new Map<string, string[]>()
    for (const c of conflicts) byManager.set(c.manager, [...(byManager.get(c.manager) ?? []), c.path])
    const lines: string[] = []
    for (const m of [...byManager.keys()].sort()) {
      lines.push(`conflicts with ${m}:`)
      for (const p of byManager.get(m) ?? []) lines.push(`- ${p}`)
    }
    text = lines.join('\n')
  }
  const n = conflicts.length
  return new ApiError(409, 'Conflict', `Apply failed with ${n} conflict${n === 1 ? '' : 's'}: ${text}`, {
    causes: conflicts.map((c) => ({ reason: 'FieldManagerConflict', message: `conflict with ${c.manager}`, field: c.path })),
  })
}

/** The outcome of planning an apply: the merged object and the managedFields to record. */
export interface ApplyPlan {
  merged: Obj
  entries: ManagerEntry[]
}

/**
 * Server-side apply of `applied` onto `live` (undefined to create): merges the configuration,
 * removes what this manager applied before and no longer does (unless someone else owns it),
 * and refuses, with every conflict, to change fields other managers own, unless `force` or
 * every conflict is on a field in `allowed`.
 */
export function planApply(live: Obj | undefined, applied: Obj, shape: Shape, entries: ManagerEntry[], writer: Writer, force: boolean, allowed: FieldSet = new Set()): ApplyPlan {
  const mineNow = appliedFields(applied, shape)
  const others = entries.filter((e) => !sameEntry(e, writer.manager, 'Apply', writer.apiVersion, writer.subresource))
  const previous = entries.find((e) => sameEntry(e, writer.manager, 'Apply', writer.apiVersion, writer.subresource))
  let merged = mergeApplied(live ?? {}, applied, shape) as Obj
  if (previous) {
    // What some manager still owns stays, and so do the objects holding it.
    const kept = new Set([...mineNow, ...others.flatMap((e) => [...fieldsOf(e)])])
    for (const k of [...kept]) for (let parts = split(k); parts.length > 1; parts = parts.slice(0, -1)) kept.add(key(parts.slice(0, -1)))
    for (const k of fieldsOf(previous)) if (!kept.has(k)) merged = removePath(merged, split(k), shape) as Obj
  }
  const { changed } = compareFields(live ?? {}, merged, shape)
  const conflicts: Conflict[] = []
  const lost = new Map<ManagerEntry, string[]>()
  for (const e of others) {
    for (const k of fieldsOf(e)) {
      if (!mineNow.has(k) || !changed.has(k)) continue
      conflicts.push({ manager: managerName(e), path: pathString(k), key: k })
      lost.set(e, [...(lost.get(e) ?? []), k])
    }
  }
  // Conflicts the caller may overrule (`allowed`) force the apply when they are the only ones.
  const refused = conflicts.filter((c) => !allowed.has(c.key))
  if (refused.length && !force) throw conflictError(refused.sort((a, b) => (a.manager === b.manager ? (a.path < b.path ? -1 : 1) : a.manager < b.manager ? -1 : 1)))
  const next = others.map((e) => {
    const gone = lost.get(e)
    if (!gone) return e
    const set = new Set(fieldsOf(e))
    for (const k of gone) set.delete(k)
    return withSet(e, set)
  })
  const objectChanged = changed.size > 0 || !deepEqual(live ?? {}, merged)
  const time = objectChanged ? writer.time : previous?.time
  next.push({ manager: writer.manager, operation: 'Apply', apiVersion: writer.apiVersion, set: mineNow, ...(time ? { time } : {}), ...(writer.subresource ? { subresource: writer.subresource } : {}) })
  return { merged, entries: next }
}

/** Drops from every set the paths the stored object does not have (after defaulting and pruning). */
export function keepPresent(entries: ManagerEntry[], present: FieldSet): ManagerEntry[] {
  return entries.map((e) => withSet(e, new Set([...fieldsOf(e)].filter((k) => present.has(k)))))
}

function mergeApplied(live: unknown, applied: unknown, shape: Shape): unknown {
  if (shape.t === 'fields' && isObj(applied)) {
    const out: Obj = isObj(live) ? { ...live } : {}
    for (const [name, v] of Object.entries(applied)) {
      if (v === null) {
        delete out[name]
        continue
      }
      const child = shape.child(name, v)
      out[name] = child ? mergeApplied(out[name], v, child) : structuredClone(v)
    }
    return out
  }
  if (shape.t === 'listMap' && Array.isArray(applied)) {
    const out = Array.isArray(live) ? [...live] : []
    for (const item of applied) {
      const pe = itemPE(item, shape.keys)
      const at = out.findIndex((x) => itemPE(x, shape.keys) === pe)
      if (at >= 0) out[at] = mergeApplied(out[at], item, shape.item(item))
      else out.push(structuredClone(item))
    }
    return out
  }
  if (shape.t === 'set' && Array.isArray(applied)) {
    const out = Array.isArray(live) ? [...live] : []
    for (const v of applied) if (!out.some((x) => deepEqual(x, v))) out.push(structuredClone(v))
    return out
  }
  return structuredClone(applied)
}

function removePath(value: unknown, path: PE[], shape: Shape): unknown {
  if (path.length === 0) return undefined
  const [pe, ...rest] = path as [PE, ...PE[]]
  if (shape.t === 'fields' && isObj(value) && pe.startsWith('f:')) {
    const name = pe.slice(2)
    if (!(name in value)) return value
    const out = { ...value }
    const child = shape.child(name, value[name])
    const next = rest.length === 0 || !child ? undefined : removePath(value[name], rest, child)
    if (next === undefined) delete out[name]
    else out[name] = next
    return out
  }
  if (shape.t === 'listMap' && Array.isArray(value) && pe.startsWith('k:')) {
    return value.flatMap((item) => {
      if (itemPE(item, shape.keys) !== pe) return [item]
      if (rest.length === 0) return []
      const next = removePath(item, rest, shape.item(item))
      return next === undefined ? [] : [next]
    })
  }
  if (shape.t === 'set' && Array.isArray(value) && pe.startsWith('v:')) {
    return value.filter((v) => `v:${JSON.stringify(v)}` !== pe)
  }
  return value
}
