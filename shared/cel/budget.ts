import type { ASTNode } from '@marcbachmann/cel-js'
import { estimateAstCost } from '../crd/cel-cost.js'
import type { CelDecl, CelKind } from '../crd/cel-types.js'

/**
 * The evaluation budget of user CEL (workflow conditions, recipe `computed` and `includeWhen`):
 * cel-js evaluates synchronously and cannot be interrupted, so the cost is bounded before the
 * expression runs. The API server's cost estimate (shared/crd/cel-cost.ts: every step 1, string
 * work a tenth of the characters it may traverse, a regular expression a quarter of its length
 * per character, a macro its body times the elements it iterates) is computed with the sizes of
 * the values the expression is about to see, so it bounds this very evaluation; an estimate over
 * Kubernetes' own per-expression limit is refused instead of run. Regular expressions run on RE2
 * (shared/cel/regex.ts), so the estimate holds for `matches` too. Pure.
 */

/** Kubernetes' runtime cost limit of one CEL expression (apiserver PerCallLimit), in its cost units. */
export const CEL_COST_LIMIT = 1_000_000n

/** The reason an expression was not evaluated. */
export const COST_LIMIT_EXCEEDED = 'CostLimitExceeded'

/** Pure: the estimated worst-case cost of evaluating `ast` on these variable values. */
export function evaluationCost(ast: ASTNode, variables: Readonly<Record<string, unknown>>): bigint {
  const decls = new Map<string, CelDecl>()
  for (const [name, value] of Object.entries(variables)) decls.set(name, declOf(value))
  return estimateAstCost(ast, decls).max
}

/** Pure: null when the evaluation fits the budget, else the message that says it does not. */
export function overBudget(ast: ASTNode, variables: Readonly<Record<string, unknown>>, limit = CEL_COST_LIMIT): string | null {
  const cost = evaluationCost(ast, variables)
  if (cost <= limit) return null
  const shown = cost >= 10n ** 15n ? 'more than 10^15' : cost.toString()
  return `evaluation cost limit exceeded: estimated cost ${shown} on these values, limit ${limit}`
}

const known = new WeakMap<object, CelDecl>()

/**
 * Pure: a declaration with the sizes of an actual value (characters of a string, elements of a
 * list, keys of a map; list elements and map values merged into the largest of each), so the
 * estimate reads real sizes where a CRD estimate reads a schema's maximums.
 */
export function declOf(value: unknown): CelDecl {
  if (value !== null && typeof value === 'object') {
    const hit = known.get(value)
    if (hit) return hit
    const decl = composite(value)
    known.set(value, decl)
    return decl
  }
  return scalar(value)
}

function scalar(value: unknown): CelDecl {
  switch (typeof value) {
    case 'string': return { kind: 'string', maxElements: BigInt(value.length), minSerializedSize: 2n }
    case 'bigint': return { kind: 'int', maxElements: 0n, minSerializedSize: 1n }
    case 'number': return { kind: 'double', maxElements: 0n, minSerializedSize: 1n }
    case 'boolean': return { kind: 'bool', maxElements: 0n, minSerializedSize: 4n }
    default: return { kind: 'null', maxElements: 0n, minSerializedSize: 4n }
  }
}

const STRING_KEY: CelDecl = { kind: 'string', maxElements: 253n, minSerializedSize: 2n }

function composite(value: object): CelDecl {
  if (value instanceof Uint8Array) return { kind: 'bytes', maxElements: BigInt(value.length), minSerializedSize: 2n }
  if (Array.isArray(value)) {
    const elem = value.map(declOf).reduce<CelDecl | undefined>((a, b) => (a ? merge(a, b) : b), undefined)
    return { kind: 'list', maxElements: BigInt(value.length), minSerializedSize: 2n, closed: true, ...(elem ? { elem } : {}) }
  }
  const entries: Array<[string, unknown]> = value instanceof Map
    ? [...value].map(([k, v]) => [String(k), v])
    : Object.entries(value)
  const fields = new Map<string, CelDecl>()
  let elem: CelDecl | undefined
  let key = STRING_KEY
  for (const [k, v] of entries) {
    const d = declOf(v)
    fields.set(k, d)
    elem = elem ? merge(elem, d) : d
    if (BigInt(k.length) > key.maxElements) key = { ...STRING_KEY, maxElements: BigInt(k.length) }
  }
  return { kind: 'map', maxElements: BigInt(entries.length), minSerializedSize: 2n, key, fields, closed: true, ...(elem ? { elem } : {}) }
}

/** The declaration of a value that may be either: the larger of every size, `dyn` when the kinds differ. */
function merge(a: CelDecl, b: CelDecl): CelDecl {
  const kind: CelKind = a.kind === b.kind ? a.kind : 'dyn'
  const out: CelDecl = { kind, maxElements: a.maxElements > b.maxElements ? a.maxElements : b.maxElements, minSerializedSize: 1n }
  // A part neither value has, no value has: still known in full.
  if (a.closed && b.closed) out.closed = true
  const elem = a.elem && b.elem ? merge(a.elem, b.elem) : a.elem ?? b.elem
  if (elem) out.elem = elem
  const key = a.key && b.key ? (a.key.maxElements >= b.key.maxElements ? a.key : b.key) : a.key ?? b.key
  if (key) out.key = key
  if (a.fields || b.fields) {
    const fields = new Map(a.fields ?? [])
    for (const [k, d] of b.fields ?? []) fields.set(k, fields.has(k) ? merge(fields.get(k)!, d) : d)
    out.fields = fields
  }
  return out
}
