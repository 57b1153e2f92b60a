import { badRequest } from './api-error.js'
import type { KubeObject } from './types.js'

type Requirement =
  | { op: 'exists' | 'notexists'; key: string }
  | { op: 'eq' | 'neq'; key: string; value: string }
  | { op: 'in' | 'notin'; key: string; values: Set<string> }

/** A parsed selector; `matches` answers for one object. */
export interface Selector {
  readonly empty: boolean
  matches(obj: KubeObject): boolean
}

const everything: Selector = { empty: true, matches: () => true }

function splitTopLevel(src: string): string[] {
  const parts: string[] = []
  let depth = 0
  let start = 0
  for (let i = 0; i < src.length; i++) {
    const ch = src[i]
    if (ch === '(') depth++
    else if (ch === ')') depth--
    else if (ch === ',' && depth === 0) {
      parts.push(src.slice(start, i))
      start = i + 1
    }
  }
  parts.push(src.slice(start))
  return parts.map((p) => p.trim()).filter((p) => p.length > 0)
}

function parseRequirement(part: string, source: string): Requirement {
  const set = /^([^\s!=(),]+)\s+(in|notin)\s*\(([^)]*)\)$/.exec(part)
  if (set) {
    const values = new Set((set[3] as string).split(',').map((v) => v.trim()).filter((v) => v.length > 0))
    return { op: set[2] as 'in' | 'notin', key: set[1] as string, values }
  }
  const cmp = /^([^\s!=(),]+)\s*(==|!=|=)\s*([^\s!=(),]*)$/.exec(part)
  if (cmp) return { op: cmp[2] === '!=' ? 'neq' : 'eq', key: cmp[1] as string, value: cmp[3] as string }
  const not = /^!\s*([^\s!=(),]+)$/.exec(part)
  if (not) return { op: 'notexists', key: not[1] as string }
  if (/^[^\s!=(),]+$/.test(part)) return { op: 'exists', key: part }
  throw badRequest(`unable to parse requirement: found '${part}' in selector "${source}"`)
}

function test(req: Requirement, value: string | undefined): boolean {
  switch (req.op) {
    case 'exists':
      return value !== undefined
    case 'notexists':
      return value === undefined
    case 'eq':
      return value === req.value
    case 'neq':
      return value !== req.value
    case 'in':
      return value !== undefined && req.values.has(value)
    case 'notin':
      return value === undefined || !req.values.has(value)
  }
}

/** Parses a label selector (`=`, `==`, `!=`, `in`, `notin`, `key`, `!key`); 400 on bad syntax. */
export function parseLabelSelector(src: string | null | undefined): Selector {
  if (!src || !src.trim()) return everything
  const reqs = splitTopLevel(src).map((p) => parseRequirement(p, src))
  return {
    empty: reqs.length === 0,
    matches: (obj) => {
      const labels = obj.metadata.labels
      return reqs.every((r) => test(r, labels?.[r.key]))
    },
  }
}

function fieldValue(obj: KubeObject, path: string): string | undefined {
  let v: unknown = obj
  for (const key of path.split('.')) {
    if (!v || typeof v !== 'object') return undefined
    v = (v as Record<string, unknown>)[key]
  }
  if (v === undefined || v === null) return ''
  return typeof v === 'object' ? JSON.stringify(v) : String(v)
}

/**
 * Parses a field selector; any dotted path is accepted (`metadata.name`, `status.phase`,
 * `involvedObject.uid`), and a missing field compares as the empty string, like the server does.
 */
export function parseFieldSelector(src: string | null | undefined): Selector {
  if (!src || !src.trim()) return everything
  const reqs = splitTopLevel(src).map((part) => {
    const r = parseRequirement(part, src)
    if (r.op !== 'eq' && r.op !== 'neq') throw badRequest(`invalid field selector: ${part}`)
    return r
  })
  return {
    empty: reqs.length === 0,
    matches: (obj) => reqs.every((r) => test(r, fieldValue(obj, r.key))),
  }
}

/** The exact `metadata.name` a field selector pins, for a direct map lookup instead of a scan. */
export function pinnedName(src: string | null | undefined): string | undefined {
  if (!src) return undefined
  for (const part of splitTopLevel(src)) {
    const m = /^metadata\.name\s*==?\s*(\S+)$/.exec(part)
    if (m) return m[1]
  }
  return undefined
}
