/**
 * The CEL environment of recipes (spec §2.3, §3.2): standard CEL plus the Kubernetes-named
 * string extensions, over the variables `inputs`, `computed` and `recipe`, with a bounded cost.
 * Pure: compiling is deterministic and programs are cached per expression text.
 *
 * Cost bound (the spec asks for one but fixes no mechanism): cel-js evaluates synchronously
 * and cannot be interrupted, so instead of a clock the expression itself is bounded before it
 * runs: at most 1024 characters, 512 AST nodes, depth 64, no comprehension inside another
 * comprehension and no macro outside `has`, `all`, `exists`, `exists_one`, `map`, `filter`
 * (no `cel.bind`), and `replace` refuses results over 65536 characters. `matches` runs on RE2
 * (linear time, Kubernetes' syntax) and every evaluation is refused when its cost estimated on
 * the actual values is over Kubernetes' per-expression limit (shared/cel/budget.ts): its excess
 * is a `ComputedValueError` or `IncludeWhenError` like any evaluation error (spec §2.3).
 */
import { Environment, type ASTNode } from '@marcbachmann/cel-js'
import { overBudget } from '../../cel/budget.js'
import { rewriteMatches, useRe2Matches, userFacingCelMessage } from '../../cel/regex.js'

/** A value as CEL and the template renderer see it (spec §3.1). */
export type TypedValue =
  | { type: 'string'; value: string }
  | { type: 'int'; value: bigint }
  | { type: 'double'; value: number }
  | { type: 'bool'; value: boolean }

export const MAX_EXPRESSION_LENGTH = 1024
const MAX_REPLACE_RESULT = 65536
const COMPREHENSIONS = new Set(['all', 'exists', 'exists_one', 'map', 'filter'])
const OTHER_MACROS = new Set(['bind', 'block', 'transformList', 'transformMap', 'transformMapEntry', 'optMap', 'optFlatMap'])
const CACHE_LIMIT = 1024

function buildEnvironment(): Environment {
  const env = new Environment({
    unlistedVariablesAreDyn: false,
    homogeneousAggregateLiterals: false,
    limits: { maxAstNodes: 512, maxDepth: 64, maxListElements: 256, maxMapEntries: 256, maxCallArguments: 16 },
  })
  env.registerVariable('inputs', 'map')
  env.registerVariable('computed', 'map')
  env.registerVariable('recipe', 'map')
  // Kubernetes CEL's string.replace (lowerAscii, upperAscii, trim and split are built in).
  env.registerFunction('string.replace(string, string): string', (s: string, from: string, to: string) => {
    const parts = from === '' ? [...s] : s.split(from)
    const insertions = from === '' ? parts.length + 1 : parts.length - 1
    const length = s.length - (from === '' ? 0 : insertions * from.length) + insertions * to.length
    if (length > MAX_REPLACE_RESULT) throw new Error(`replace() result is longer than ${MAX_REPLACE_RESULT} characters`)
    return from === '' ? to + parts.join(to) + to : parts.join(to)
  })
  return useRe2Matches(env)
}

const env = buildEnvironment()
type Program = (ctx: Record<string, unknown>) => unknown
type Compiled = { ok: true; run: Program; ast: ASTNode; refs: Set<string> } | { ok: false; error: string }
const cache = new Map<string, Compiled>()

/** First line of a cel-js error (its message continues with a source excerpt). */
export function celErrorDetail(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err)
  return userFacingCelMessage((message.split('\n')[0] ?? '').trim()) || 'evaluation error'
}

interface Node { op: string; args: unknown }

function isNode(v: unknown): v is Node {
  return typeof v === 'object' && v !== null && 'op' in v && 'args' in v
}

/** Walks the AST: the cost checks, and the `inputs.<x>` / `computed.<x>` references. */
function inspect(node: unknown, depth: number, refs: Set<string>): string | null {
  if (Array.isArray(node)) {
    for (const child of node) {
      const err = inspect(child, depth, refs)
      if (err) return err
    }
    return null
  }
  if (!isNode(node)) return null
  const args = node.args as unknown[]
  if (node.op === '.' || node.op === '.?') {
    const [target, field] = args as [unknown, string]
    if (isNode(target) && target.op === 'id' && (target.args === 'inputs' || target.args === 'computed')) {
      refs.add(`${target.args}.${field}`)
    }
  }
  if (node.op === '[]' || node.op === '[?]') {
    const [target, key] = args as [unknown, unknown]
    if (isNode(target) && target.op === 'id' && (target.args === 'inputs' || target.args === 'computed')
      && isNode(key) && key.op === 'value' && typeof key.args === 'string') {
      refs.add(`${target.args}.${key.args}`)
    }
  }
  if (node.op === 'rcall') {
    const [name, receiver, callArgs] = args as [string, unknown, unknown[]]
    if (OTHER_MACROS.has(name)) return `${name}() is not available in recipes`
    if (COMPREHENSIONS.has(name) && Array.isArray(callArgs) && callArgs.length >= 2) {
      if (depth >= 1) return 'expression is too costly: a comprehension inside another comprehension is not allowed'
      return inspect(receiver, depth, refs) ?? inspect(callArgs, depth + 1, refs)
    }
    return inspect(receiver, depth, refs) ?? inspect(callArgs, depth, refs)
  }
  if (node.op === 'value' || node.op === 'id') return null
  return inspect(args, depth, refs)
}

function compile(expression: string): Compiled {
  const cached = cache.get(expression)
  if (cached) return cached
  let compiled: Compiled
  if (expression.length > MAX_EXPRESSION_LENGTH) {
    compiled = { ok: false, error: `expression is longer than ${MAX_EXPRESSION_LENGTH} characters` }
  } else {
    try {
      const program = env.parse(expression)
      rewriteMatches(program.ast)
      const refs = new Set<string>()
      const costError = inspect(program.ast, 0, refs)
      compiled = costError ? { ok: false, error: costError } : { ok: true, run: program as Program, ast: program.ast, refs }
    } catch (err) {
      compiled = { ok: false, error: celErrorDetail(err) }
    }
  }
  if (cache.size >= CACHE_LIMIT) cache.clear()
  cache.set(expression, compiled)
  return compiled
}

/** What an expression sees (spec §2.3). */
export interface CelScope {
  inputs: Record<string, unknown>
  computed: Record<string, unknown>
  recipe: { name: string; namespace: string; profile: string }
}

export type CelOutcome =
  | { ok: true; value: unknown }
  | { ok: false; error: string; refs: Set<string> }

/** Pure: evaluates `expression` in `scope`; errors carry the first line of cel-js's message. */
export function evaluateCel(expression: string, scope: CelScope): CelOutcome {
  const compiled = compile(expression)
  if (!compiled.ok) return { ok: false, error: compiled.error, refs: new Set() }
  const variables = { inputs: scope.inputs, computed: scope.computed, recipe: scope.recipe }
  const tooCostly = overBudget(compiled.ast, variables)
  if (tooCostly) return { ok: false, error: tooCostly, refs: compiled.refs }
  try {
    return { ok: true, value: compiled.run(variables) }
  } catch (err) {
    return { ok: false, error: celErrorDetail(err), refs: compiled.refs }
  }
}

/** CEL type name of a JavaScript value produced by cel-js. */
export function celTypeName(value: unknown): string {
  if (value === null || value === undefined) return 'null_type'
  if (typeof value === 'bigint') return 'int'
  if (typeof value === 'number') return 'double'
  if (typeof value === 'boolean') return 'bool'
  if (typeof value === 'string') return 'string'
  if (Array.isArray(value)) return 'list'
  if (value instanceof Uint8Array) return 'bytes'
  const name = (value as { constructor?: { name?: string } }).constructor?.name
  if (name === 'UnsignedInt') return 'uint'
  if (name === 'Optional') return 'optional_type'
  if (value instanceof Map || name === 'Object' || name === undefined) return 'map'
  return 'type'
}

/** The CEL representation of a typed value (int as bigint, double as number). */
export function toCel(v: TypedValue): unknown {
  return v.value
}

/** Plain JSON form of a typed value (status, RenderResult): int as a number. */
export function toPlain(v: TypedValue): string | number | boolean {
  return v.type === 'int' ? Number(v.value) : v.value
}

/** spec §3.1 text rendering of a typed value. */
export function renderValue(v: TypedValue): string {
  switch (v.type) {
    case 'string': return v.value
    case 'int': return v.value.toString()
    case 'double': return String(v.value)
    case 'bool': return v.value ? 'true' : 'false'
  }
}
