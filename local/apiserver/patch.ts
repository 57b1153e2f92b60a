import { badRequest, ApiError } from './api-error.js'

type Obj = Record<string, unknown>
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v)
const clone = <T>(v: T): T => (v === undefined ? v : (JSON.parse(JSON.stringify(v)) as T))

/** RFC 7386 JSON merge patch: objects merge recursively, null deletes, everything else replaces. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isObj(patch)) return clone(patch)
  const out: Obj = isObj(target) ? { ...target } : {}
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k]
    else out[k] = mergePatch(out[k], v)
  }
  return out
}

function unescapePointer(token: string): string {
  return token.replace(/~1/g, '/').replace(/~0/g, '~')
}

function parsePointer(path: unknown): string[] {
  if (typeof path !== 'string') throw badRequest('json patch operation is missing a path')
  if (path === '') return []
  if (!path.startsWith('/')) throw badRequest(`invalid JSON pointer: ${path}`)
  return path.slice(1).split('/').map(unescapePointer)
}

// The real server answers every failed JSON patch operation with the same words and empty details.
function patchFailure(_why: string): ApiError {
  return new ApiError(422, 'Invalid', 'the server rejected our request due to an error in our request', {})
}

function getAt(doc: unknown, tokens: string[]): unknown {
  let v = doc
  for (const t of tokens) {
    if (Array.isArray(v)) v = v[Number(t)]
    else if (isObj(v)) v = v[t]
    else return undefined
  }
  return v
}

function parentOf(doc: unknown, tokens: string[], path: string): { parent: Obj | unknown[]; key: string } {
  const parent = getAt(doc, tokens.slice(0, -1))
  if (!Array.isArray(parent) && !isObj(parent)) throw patchFailure(`the server rejected our request due to an error in our request: doc is missing path: "${path}"`)
  return { parent, key: tokens[tokens.length - 1] as string }
}

/** RFC 6902 JSON patch (add, remove, replace, move, copy, test); a failed op answers 422. */
export function jsonPatch(target: unknown, ops: unknown): unknown {
  if (!Array.isArray(ops)) throw badRequest('json patch must be an array of operations')
  let doc = clone(target)
  for (const raw of ops) {
    if (!isObj(raw)) throw badRequest('json patch operation must be an object')
    const op = raw.op
    const path = String(raw.path)
    const tokens = parsePointer(raw.path)
    const add = (at: string[], value: unknown): void => {
      if (at.length === 0) {
        doc = value
        return
      }
      const { parent, key } = parentOf(doc, at, path)
      if (Array.isArray(parent)) {
        const i = key === '-' ? parent.length : Number(key)
        if (!Number.isInteger(i) || i < 0 || i > parent.length) throw patchFailure(`add operation index out of bounds: ${path}`)
        parent.splice(i, 0, value)
      } else parent[key] = value
    }
    const remove = (at: string[]): unknown => {
      const { parent, key } = parentOf(doc, at, path)
      if (Array.isArray(parent)) {
        const i = Number(key)
        if (!Number.isInteger(i) || i < 0 || i >= parent.length) throw patchFailure(`remove operation index out of bounds: ${path}`)
        return parent.splice(i, 1)[0]
      }
      if (!(key in parent)) throw patchFailure(`the server rejected our request due to an error in our request: remove operation does not apply: doc is missing key: ${path}`)
      const old = parent[key]
      delete parent[key]
      return old
    }
    switch (op) {
      case 'add':
        add(tokens, clone(raw.value))
        break
      case 'remove':
        remove(tokens)
        break
      case 'replace':
        if (tokens.length === 0) doc = clone(raw.value)
        else {
          remove(tokens)
          add(tokens, clone(raw.value))
        }
        break
      case 'move': {
        const value = remove(parsePointer(raw.from))
        add(tokens, value)
        break
      }
      case 'copy':
        add(tokens, clone(getAt(doc, parsePointer(raw.from))))
        break
      case 'test':
        if (JSON.stringify(getAt(doc, tokens)) !== JSON.stringify(raw.value)) throw patchFailure(`testing value ${path} failed`)
        break
      default:
        throw badRequest(`unexpected json patch operation: ${String(op)}`)
    }
  }
  return doc
}

/**
 * Merge keys of the built-in list fields that strategic merge patch merges element-wise
 * (keyed by field name; the same name means the same thing in every built-in kind we serve).
 */
const MERGE_KEYS: Record<string, string> = {
  containers: 'name',
  initContainers: 'name',
  ephemeralContainers: 'name',
  env: 'name',
  volumes: 'name',
  volumeMounts: 'mountPath',
  volumeDevices: 'devicePath',
  ports: 'containerPort',
  imagePullSecrets: 'name',
  conditions: 'type',
  ownerReferences: 'uid',
  hostAliases: 'ip',
  topologySpreadConstraints: 'topologyKey',
  resourceClaims: 'name',
}

/** Lists of scalars that strategic merge treats as sets (union on patch). */
const SET_LISTS = new Set(['finalizers'])

function servicePortKey(list: unknown[]): string {
  return list.some((p) => isObj(p) && 'port' in p && !('containerPort' in p)) ? 'port' : 'containerPort'
}

function strategicList(field: string, target: unknown, patch: unknown[], parentPatch: Obj): unknown[] {
  const base = Array.isArray(target) ? target : []
  let key = MERGE_KEYS[field]
  if (key === 'containerPort') key = servicePortKey([...patch, ...base])
  if (SET_LISTS.has(field)) {
    const out = [...base]
    for (const v of patch) if (!out.includes(v)) out.push(v)
    return out
  }
  if (!key || !patch.every(isObj) || !base.every(isObj)) {
    return patch.filter((p) => !(isObj(p) && p.$patch === 'replace')).map((p) => clone(p))
  }
  if (patch.some((p) => isObj(p) && p.$patch === 'replace')) {
    return patch.filter((p) => !(isObj(p) && p.$patch === 'replace')).map((p) => stripDirectives(clone(p)))
  }
  const out: Obj[] = base.map((b) => ({ ...(b as Obj) }))
  for (const p of patch as Obj[]) {
    const id = p[key]
    const at = out.findIndex((o) => o[key] === id)
    if (p.$patch === 'delete') {
      if (at >= 0) out.splice(at, 1)
      continue
    }
    if (at >= 0) out[at] = strategicMergePatch(out[at], p) as Obj
    else out.push(stripDirectives(clone(p)) as Obj)
  }
  const order = parentPatch[`$setElementOrder/${field}`]
  if (Array.isArray(order)) {
    const rank = new Map(order.map((o, i) => [isObj(o) ? o[key] : o, i]))
    out.sort((a, b) => (rank.get(a[key]) ?? Number.MAX_SAFE_INTEGER) - (rank.get(b[key]) ?? Number.MAX_SAFE_INTEGER))
  }
  return out
}

function stripDirectives(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(stripDirectives)
  if (!isObj(v)) return v
  const out: Obj = {}
  for (const [k, val] of Object.entries(v)) if (!k.startsWith('$')) out[k] = stripDirectives(val)
  return out
}

/**
 * Strategic merge patch for the built-in kinds: a JSON merge patch in which the well-known
 * keyed lists (containers by name, env by name, conditions by type, ...) merge element-wise,
 * and the `$patch`, `$setElementOrder`, `$retainKeys` and `$deleteFromPrimitiveList` directives
 * kubectl sends are honoured.
 */
export function strategicMergePatch(target: unknown, patch: unknown): unknown {
  if (!isObj(patch)) return clone(patch)
  if (patch.$patch === 'replace') return stripDirectives(clone(patch))
  if (patch.$patch === 'delete') return undefined
  let out: Obj = isObj(target) ? { ...target } : {}
  const retain = patch.$retainKeys
  if (Array.isArray(retain)) {
    const keep = new Set(retain.map(String))
    out = Object.fromEntries(Object.entries(out).filter(([k]) => keep.has(k)))
  }
  for (const [k, v] of Object.entries(patch)) {
    if (k.startsWith('$deleteFromPrimitiveList/')) {
      const field = k.slice('$deleteFromPrimitiveList/'.length)
      const drop = new Set(Array.isArray(v) ? v : [])
      if (Array.isArray(out[field])) out[field] = (out[field] as unknown[]).filter((x) => !drop.has(x))
      continue
    }
    if (k.startsWith('$')) continue
    if (v === null) delete out[k]
    else if (Array.isArray(v)) out[k] = strategicList(k, out[k], v, patch)
    else if (isObj(v)) {
      const merged = strategicMergePatch(out[k], v)
      if (merged === undefined) delete out[k]
      else out[k] = merged
    } else out[k] = v
  }
  return out
}
