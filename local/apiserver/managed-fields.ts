import { ApiError } from './api-error.js'
import { appliedFields, compareFields, fromFieldsV1, itemElement, pathElements, pathKey, pathString, toFieldsV1, type FieldChanges, type FieldSet, type PathElement } from './field-sets.js'
import type { Shape } from './field-shapes.js'
import { deepEqual } from './object-meta.js'

/**
 * Field ownership (`metadata.managedFields`) and server-side apply, the way the real server's
 * field manager works: every write records which fields its manager set (operation `Update`,
 * or `Apply` for server-side apply), an Update takes the fields it changes away from other
 * managers, and an Apply that would change a field another manager owns is a conflict unless
 * forced. Fields are tracked along the object's schema (field-shapes.ts) as field sets
 * (field-sets.ts).
 */

type Obj = Record<string, unknown>
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v)

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
  for (const pe of pathElements(k)) {
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
    for (const k of [...kept]) for (let parts = pathElements(k); parts.length > 1; parts = parts.slice(0, -1)) kept.add(pathKey(parts.slice(0, -1)))
    for (const k of fieldsOf(previous)) if (!kept.has(k)) merged = removePath(merged, pathElements(k), shape) as Obj
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
      const pe = itemElement(item, shape.keys)
      const at = out.findIndex((x) => itemElement(x, shape.keys) === pe)
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

function removePath(value: unknown, path: PathElement[], shape: Shape): unknown {
  if (path.length === 0) return undefined
  const [pe, ...rest] = path as [PathElement, ...PathElement[]]
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
      if (itemElement(item, shape.keys) !== pe) return [item]
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
