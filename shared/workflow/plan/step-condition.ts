/**
 * Step conditions: CEL (as purko documents) plus purko's legacy shorthand, which is rewritten
 * into CEL text before compiling. Compiled programs are cached per expression; compiling is
 * deterministic, so the cache does not make evaluation impure. Every evaluation has a bounded
 * cost: `matches` runs on RE2 and an expression whose estimated cost on the outputs it reads is
 * over Kubernetes' limit is refused (shared/cel/budget.ts), so no condition stalls a controller.
 */
import { Environment, type ASTNode } from '@marcbachmann/cel-js'
import { COST_LIMIT_EXCEEDED, overBudget } from '../../cel/budget.js'
import { rewriteMatches, useRe2Matches, userFacingCelMessage } from '../../cel/regex.js'

/** What a condition can see: each step's parsed output and the Workflow parameters. */
export interface ConditionContext {
  outputs: Record<string, unknown>
  parameters: Record<string, string>
}

/**
 * Result of evaluating a condition: a boolean, or an error naming the expression; `reason` is
 * `CostLimitExceeded` when it was not evaluated because its cost on these outputs is over budget.
 */
export type ConditionResult = { ok: true; value: boolean } | { ok: false; error: string; reason?: typeof COST_LIMIT_EXCEEDED }

interface Tok {
  k: 'id' | 'str' | 'num' | 'op'
  v: string
}

type Compiled =
  | { ok: true; run: (ctx: Record<string, unknown>) => unknown; ast: ASTNode; refs: string[]; allSteps: boolean }
  | { ok: false; error: string; refs: string[] }

const COMPARE = new Set(['==', '!=', '<', '<=', '>', '>='])
const TWO_CHAR_OPS = new Set(['==', '!=', '<=', '>=', '&&', '||'])
const ONE_CHAR_OPS = new Set(['<', '>', '!', '(', ')', '[', ']', '{', '}', '.', ',', '?', ':', '+', '-', '*', '/', '%'])
const KEYWORDS = new Set(['true', 'false', 'null', 'in'])
const ROOTS = new Set(['steps', 'parameters'])
const MACROS = new Set(['exists', 'all', 'exists_one', 'map', 'filter', 'bind', 'transformList', 'transformMap'])
const OPENERS: Record<string, string> = { '(': ')', '[': ']', '{': '}' }
const CLOSERS = new Set([')', ']', '}'])
// Errors that mean "the referenced value is not there": a missing value never satisfies a condition.
const MISSING_CODES = new Set(['no_such_key', 'index_out_of_bounds'])
const CACHE_LIMIT = 512

const NUMERIC = /^\s*[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?\s*$/

function asNumber(v: unknown): number | null {
  if (typeof v === 'number') return v
  if (typeof v === 'bigint') return Number(v)
  if (typeof v === 'string' && NUMERIC.test(v)) return Number(v)
  return null
}

function requireNumber(s: string): number {
  const n = asNumber(s)
  if (n === null) throw new Error(`cannot compare the text ${JSON.stringify(s)} with a number`)
  return n
}

/** purko's truthiness for a bare value: empty, "false", "null", 0 and null are false. */
function truthy(v: unknown): boolean {
  if (typeof v === 'boolean') return v
  if (typeof v === 'number') return v !== 0 && !Number.isNaN(v)
  if (typeof v === 'bigint') return v !== 0n
  if (typeof v === 'string') return v !== '' && v !== 'false' && v !== 'null'
  if (v === null || v === undefined) return false
  return true
}

function looseEquals(a: unknown, b: unknown): boolean {
  if (a === b) return true
  const na = asNumber(a)
  const nb = asNumber(b)
  if (na !== null && nb !== null && (typeof a !== 'string' || typeof b !== 'string')) return na === nb
  if (typeof a === 'boolean' || typeof b === 'boolean') return String(a) === String(b)
  if (typeof a === 'object' && typeof b === 'object' && a !== null && b !== null) {
    return JSON.stringify(a) === JSON.stringify(b)
  }
  return false
}

function contains(haystack: unknown, needle: unknown): boolean {
  if (typeof haystack === 'string') {
    return haystack.includes(typeof needle === 'string' ? needle : String(needle))
  }
  if (Array.isArray(haystack)) return haystack.some((item) => looseEquals(item, needle))
  if (haystack instanceof Map) return haystack.has(needle)
  if (typeof haystack === 'object' && haystack !== null) return Object.hasOwn(haystack, String(needle))
  return false
}

function buildEnvironment(): Environment {
  const env = new Environment({ unlistedVariablesAreDyn: false, homogeneousAggregateLiterals: false })
  env.registerVariable('steps', 'map')
  env.registerVariable('parameters', 'map')
  env.registerFunction('kineticTruthy(dyn): bool', truthy)
  env.registerFunction('kineticContains(dyn, dyn): bool', contains)
  // Outputs written by language models often carry numbers and booleans as text; purko compared
  // them by their text, so a string meets a number or bool by value instead of "no such overload".
  // (cel-js derives `!=` and the mirrored operand order of `==` itself.)
  for (const num of ['double', 'int']) {
    env.registerOperator(`string == ${num}`, (a: string, b: number | bigint) => asNumber(a) === Number(b))
    const ordered: Array<[string, (x: number, y: number) => boolean]> = [
      ['<', (x, y) => x < y], ['<=', (x, y) => x <= y], ['>', (x, y) => x > y], ['>=', (x, y) => x >= y],
    ]
    for (const [op, cmp] of ordered) {
      env.registerOperator(`string ${op} ${num}`, (a: string, b: number | bigint) => cmp(requireNumber(a), Number(b)))
      env.registerOperator(`${num} ${op} string`, (a: number | bigint, b: string) => cmp(Number(a), requireNumber(b)))
    }
  }
  env.registerOperator('string == bool', (a: string, b: boolean) => a === String(b))
  return useRe2Matches(env)
}

const env = buildEnvironment()
const cache = new Map<string, Compiled>()

function isOp(t: Tok | undefined, v: string): boolean {
  return t !== undefined && t.k === 'op' && t.v === v
}

function isOperandEnd(t: Tok | undefined): boolean {
  if (t === undefined) return false
  if (t.k === 'op') return CLOSERS.has(t.v)
  return !(t.k === 'id' && (t.v === 'in' || t.v === 'contains'))
}

/** Reads a CEL string literal (optional r/b prefix, single/double/triple quotes) starting at i. */
function readStringLiteral(src: string, i: number): number {
  let j = i
  let raw = false
  while (/[rRbB]/.test(src[j] ?? '') && j < i + 2) {
    if (src[j] === 'r' || src[j] === 'R') raw = true
    j++
  }
  const q = src[j]
  const triple = src.startsWith(q!.repeat(3), j)
  const close = triple ? q!.repeat(3) : q!
  j += close.length
  while (j < src.length) {
    if (!raw && src[j] === '\\') { j += 2; continue }
    if (src.startsWith(close, j)) return j + close.length
    if (!triple && src[j] === '\n') break
    j++
  }
  throw new Error('unterminated string literal')
}

/** Decodes the content of a plain quoted CEL literal (enough for step names and placeholders). */
function decodeLiteral(lit: string): string | null {
  const m = /^(["'])(.*)\1$/s.exec(lit)
  if (!m) return null
  return m[2]!.replace(/\\(.)/g, (_, c: string) => ({ n: '\n', t: '\t', r: '\r' } as Record<string, string>)[c] ?? c)
}

/** Pure: the identifier a step name is reachable under in CEL (`my-step` becomes `my_step`). */
function stepAlias(name: string): string {
  return name.replaceAll('-', '_')
}

function lex(src: string, refs: string[] = []): Tok[] {
  const out: Tok[] = []
  const stack: string[] = []
  const bound = new Set<string>()
  let pendingBind = false
  let i = 0
  const last = (n = 1) => out[out.length - n]
  const push = (t: Tok) => {
    if (t.k === 'id' && pendingBind) { bound.add(t.v); pendingBind = false }
    out.push(t)
  }
  // `steps.<name>` and `parameters.<name>`: the member after a root variable is a name that may
  // contain hyphens (or be quoted), which CEL cannot parse. Step names become an identifier alias
  // (step names are DNS labels, so `-` to `_` cannot collide, and `has()` keeps working); other
  // names become an index expression.
  const afterRootDot = () =>
    isOp(last(), '.') && last(2)?.k === 'id' && ROOTS.has(last(2)!.v) && !isOp(last(3), '.')
  const addRef = (name: string) => { if (!refs.includes(name)) refs.push(name) }
  const member = (name: string) => {
    const root = last(2)!.v
    if (root === 'steps') addRef(name)
    const id = root === 'steps' ? stepAlias(name) : name
    if (/^[A-Za-z_]\w*$/.test(id) && !KEYWORDS.has(id)) {
      push({ k: 'id', v: id })
      return
    }
    out.pop()
    push({ k: 'op', v: '[' }); push({ k: 'str', v: JSON.stringify(name) }); push({ k: 'op', v: ']' })
  }
  const bareWordHere = () => {
    const p = last()
    if (!p) return false
    if (p.k === 'op') {
      if (COMPARE.has(p.v)) return true
      return (p.v === '[' || p.v === ',') && stack[stack.length - 1] === 'inlist'
    }
    return p.k === 'id' && (p.v === 'contains' || p.v === 'in') && isOperandEnd(last(2))
  }
  const readBareWord = (at: number): { word: string; end: number } | null => {
    const ident = /^[A-Za-z_]\w*/.exec(src.slice(at))
    if (!ident) return null
    const word = /^[A-Za-z_][\w\-.:/]*/.exec(src.slice(at))![0].replace(/\.+$/, '')
    const after = src.slice(at + ident[0].length).trimStart()
    if (KEYWORDS.has(ident[0]) || bound.has(ident[0]) || after.startsWith('(')) return null
    if (ROOTS.has(ident[0]) && /^\s*\./.test(src.slice(at + ident[0].length))) return null
    return { word, end: at + word.length }
  }

  while (i < src.length) {
    const c = src[i]!
    if (/\s/.test(c)) { i++; continue }
    if (c === '$' && src[i + 1] === '{') { stack.push('dollar'); i += 2; continue }
    if (c === '}' && stack[stack.length - 1] === 'dollar') { stack.pop(); i++; continue }
    if (c === '"' || c === "'" || (/[rRbB]/.test(c) && /^[rRbB]{0,2}["']/.test(src.slice(i, i + 3)) && !/\w/.test(src[i - 1] ?? ''))) {
      const end = readStringLiteral(src, i)
      const lit = src.slice(i, end)
      const text = decodeLiteral(lit)
      i = end
      const placeholder = text === null ? null : /^\$\{([^}]*)\}$/.exec(text)
      if (placeholder) {
        // A literal that is exactly one `${...}` placeholder means the referenced value.
        for (const t of lex(placeholder[1]!, refs)) push(t)
        continue
      }
      if (afterRootDot() && text !== null) {
        member(text)
        continue
      }
      if (text !== null && isOp(last(), '[') && last(2)?.k === 'id' && last(2)!.v === 'steps' && !isOp(last(3), '.')) {
        addRef(text)
      }
      push({ k: 'str', v: lit })
      continue
    }
    if (/\w/.test(c) && afterRootDot()) {
      const name = /^\w[\w-]*/.exec(src.slice(i))![0]
      if (!src.slice(i + name.length).trimStart().startsWith('(')) {
        member(name)
        i += name.length
        continue
      }
    }
    if (/\d/.test(c)) {
      const m = /^(?:0[xX][0-9a-fA-F]+|\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)[uU]?/.exec(src.slice(i))!
      push({ k: 'num', v: m[0] })
      i += m[0].length
      continue
    }
    if (/[A-Za-z_]/.test(c)) {
      if (bareWordHere()) {
        const p = last()!
        const listWithoutBrackets = p.k === 'id' && p.v === 'in'
        const first = readBareWord(i)
        if (first && listWithoutBrackets) {
          // purko's `x in a, b` form: the rest is a comma-separated list of bare words.
          push({ k: 'op', v: '[' })
          push({ k: 'str', v: JSON.stringify(first.word) })
          i = first.end
          for (;;) {
            const m = /^\s*,\s*/.exec(src.slice(i))
            if (!m) break
            const next = readBareWord(i + m[0].length)
            if (!next) break
            push({ k: 'op', v: ',' }); push({ k: 'str', v: JSON.stringify(next.word) })
            i = next.end
          }
          push({ k: 'op', v: ']' })
          continue
        }
        if (first) {
          push({ k: 'str', v: JSON.stringify(first.word) })
          i = first.end
          continue
        }
      }
      const id = /^[A-Za-z_]\w*/.exec(src.slice(i))![0]
      push({ k: 'id', v: id })
      i += id.length
      continue
    }
    const two = src.slice(i, i + 2)
    if (TWO_CHAR_OPS.has(two)) { push({ k: 'op', v: two }); i += 2; continue }
    if (ONE_CHAR_OPS.has(c)) {
      if (c === '(') {
        const p = last()
        if (p?.k === 'id' && MACROS.has(p.v)) pendingBind = true
        stack.push(p?.k === 'id' && !KEYWORDS.has(p.v) ? 'call' : 'group')
      } else if (c === '[') {
        const p = last()
        stack.push(p?.k === 'id' && p.v === 'in' ? 'inlist' : isOperandEnd(p) ? 'index' : 'list')
      } else if (c === '{') {
        stack.push('map')
      } else if (CLOSERS.has(c)) {
        stack.pop()
      }
      push({ k: 'op', v: c })
      i++
      continue
    }
    throw new Error(`unexpected character ${JSON.stringify(c)} at position ${i}`)
  }
  return out
}

function matchForward(t: Tok[], open: number): number {
  let depth = 0
  for (let j = open; j < t.length; j++) {
    const tok = t[j]!
    if (tok.k !== 'op') continue
    if (OPENERS[tok.v]) depth++
    else if (CLOSERS.has(tok.v) && --depth === 0) return j
  }
  throw new Error('unbalanced brackets')
}

function matchBackward(t: Tok[], close: number): number {
  let depth = 0
  for (let j = close; j >= 0; j--) {
    const tok = t[j]!
    if (tok.k !== 'op') continue
    if (CLOSERS.has(tok.v)) depth++
    else if (OPENERS[tok.v] && --depth === 0) return j
  }
  throw new Error('unbalanced brackets')
}

/** Index of the last token of the operand (primary plus member/index/call chain) starting at k. */
function operandEnd(t: Tok[], k: number): number {
  let j = k
  while (isOp(t[j], '!') || isOp(t[j], '-')) j++
  const first = t[j]
  if (first === undefined) throw new Error('missing operand')
  if (first.k === 'op') {
    if (!OPENERS[first.v]) throw new Error(`unexpected ${first.v}`)
    j = matchForward(t, j)
  } else if (first.k === 'id' && isOp(t[j + 1], '(')) {
    j = matchForward(t, j + 1)
  }
  for (;;) {
    if (isOp(t[j + 1], '.') && t[j + 2]?.k === 'id') {
      j += 2
      if (isOp(t[j + 1], '(')) j = matchForward(t, j + 1)
      continue
    }
    if (isOp(t[j + 1], '[')) { j = matchForward(t, j + 1); continue }
    return j
  }
}

/** Index of the first token of the operand chain that ends at `end`. */
function operandStart(t: Tok[], end: number): number {
  let j = end
  for (;;) {
    const tok = t[j]!
    if (tok.k === 'op' && CLOSERS.has(tok.v)) {
      const open = matchBackward(t, j)
      if (tok.v === ']' && open > 0 && isOperandEnd(t[open - 1])) { j = open - 1; continue }
      j = tok.v === ')' && open > 0 && t[open - 1]!.k === 'id' ? open - 1 : open
    }
    if (j >= 2 && isOp(t[j - 1], '.')) { j -= 2; continue }
    return j
  }
}

/** Rewrites infix `a contains b` into a call that handles strings (substring) and lists (element). */
function rewriteContains(t: Tok[]): Tok[] {
  let out = t
  for (let i = 0; i < out.length; i++) {
    const tok = out[i]!
    if (tok.k !== 'id' || tok.v !== 'contains' || isOp(out[i - 1], '.') || !isOperandEnd(out[i - 1])) continue
    const start = operandStart(out, i - 1)
    const end = operandEnd(out, i + 1)
    out = [
      ...out.slice(0, start),
      { k: 'id', v: 'kineticContains' }, { k: 'op', v: '(' },
      ...out.slice(start, i), { k: 'op', v: ',' }, ...out.slice(i + 1, end + 1),
      { k: 'op', v: ')' },
      ...out.slice(end + 1),
    ]
  }
  return out
}

/**
 * Wraps operands of `&&`, `||` and `!` that are a bare value (`steps.a.output.ok`) in purko's
 * truthiness test, so that a string, number or list works where CEL wants a bool.
 */
function wrapBareOperands(t: Tok[], from: number, to: number): Tok[] {
  const out: Tok[] = []
  let seg = from
  const flush = (end: number) => {
    let k = seg
    while (k < end && isOp(t[k], '!')) out.push(t[k++]!)
    const first = t[k]
    if (k >= end || first === undefined) return
    if (isOp(first, '(') && matchForward(t, k) === end - 1) {
      out.push(first, ...wrapBareOperands(t, k + 1, end - 1), t[end - 1]!)
      return
    }
    const bare = first.k === 'id' && !KEYWORDS.has(first.v) && operandEnd(t, k) === end - 1
    if (bare) out.push({ k: 'id', v: 'kineticTruthy' }, { k: 'op', v: '(' }, ...t.slice(k, end), { k: 'op', v: ')' })
    else out.push(...t.slice(k, end))
  }
  for (let i = from; i < to; i++) {
    const tok = t[i]!
    if (tok.k === 'op' && OPENERS[tok.v]) { i = matchForward(t, i); continue }
    if (isOp(tok, '&&') || isOp(tok, '||')) { flush(i); out.push(tok); seg = i + 1 }
  }
  flush(to)
  return out
}

/** True when `steps` is used other than as `steps.<name>` / `steps["<name>"]`, e.g. `steps.exists(...)`. */
function readsStepsDynamically(t: Tok[]): boolean {
  return t.some((tok, i) => tok.k === 'id' && tok.v === 'steps' && !isOp(t[i - 1], '.')
    && !(isOp(t[i + 1], '.') && t[i + 2]?.k === 'id' && !isOp(t[i + 3], '('))
    && !(isOp(t[i + 1], '[') && t[i + 2]?.k === 'str' && isOp(t[i + 3], ']')))
}

function describe(expr: string, err: unknown, what = 'invalid condition'): string {
  const e = err as { summary?: unknown; message?: unknown }
  const detail = typeof e.summary === 'string' ? e.summary : typeof e.message === 'string' ? e.message.split('\n')[0] : String(err)
  return `${what} ${JSON.stringify(expr)}: ${userFacingCelMessage(detail ?? '')}`
}

function compile(expr: string): Compiled {
  const hit = cache.get(expr)
  if (hit) return hit
  let compiled: Compiled
  const refs: string[] = []
  try {
    const tokens = lex(expr, refs)
    const withContains = rewriteContains(tokens)
    const text = wrapBareOperands(withContains, 0, withContains.length).map((t) => t.v).join(' ')
    const program = env.parse(text)
    rewriteMatches(program.ast)
    const checked = program.check()
    compiled = checked.valid
      ? { ok: true, run: (ctx) => program(ctx), ast: program.ast, refs, allSteps: readsStepsDynamically(tokens) }
      : { ok: false, error: describe(expr, checked.error), refs }
  } catch (err) {
    compiled = { ok: false, error: describe(expr, err), refs }
  }
  if (cache.size >= CACHE_LIMIT) cache.delete(cache.keys().next().value!)
  cache.set(expr, compiled)
  return compiled
}

/** Pure: compile-time check of a condition; null when valid, else the error message. */
export function conditionError(expr: string): string | null {
  const trimmed = expr.trim()
  if (trimmed === '') return null
  const compiled = compile(trimmed)
  return compiled.ok ? null : compiled.error
}

/** Pure: names of the steps a condition reads (`steps.<name>` in any spelling), in order of appearance. */
export function conditionReferences(expr: string): string[] {
  const trimmed = expr.trim()
  return trimmed === '' ? [] : compile(trimmed).refs
}

/**
 * Pure: evaluates a step condition; empty means true, a reference to a missing step output or
 * key makes it false, and a malformed expression or a type error is `{ ok: false }`.
 */
export function evaluateCondition(expr: string, ctx: ConditionContext): ConditionResult {
  const trimmed = expr.trim()
  if (trimmed === '') return { ok: true, value: true }
  const compiled = compile(trimmed)
  if (!compiled.ok) return { ok: false, error: compiled.error }
  // Only the referenced outputs are handed to CEL, so a condition costs the same in a workflow of
  // ten steps as in one of ten thousand.
  const names = compiled.allSteps ? Object.keys(ctx.outputs) : compiled.refs
  const steps: Record<string, { output: unknown }> = {}
  for (const name of names) if (Object.hasOwn(ctx.outputs, name)) steps[name] = { output: ctx.outputs[name] }
  for (const name of names) {
    const alias = stepAlias(name)
    if (Object.hasOwn(ctx.outputs, name) && !Object.hasOwn(steps, alias)) steps[alias] = { output: ctx.outputs[name] }
  }
  const tooCostly = overBudget(compiled.ast, { steps, parameters: ctx.parameters })
  if (tooCostly) return { ok: false, error: describe(expr, { message: tooCostly }, 'cannot evaluate condition'), reason: COST_LIMIT_EXCEEDED }
  try {
    const value = compiled.run({ steps, parameters: ctx.parameters })
    return { ok: true, value: truthy(value) }
  } catch (err) {
    // purko: a value that is not there never satisfies a condition, whatever the operator
    // (`!=` and `!` included), so the step is skipped rather than failed.
    const code = (err as { code?: unknown }).code
    if (typeof code === 'string' && MISSING_CODES.has(code)) return { ok: true, value: false }
    return { ok: false, error: describe(expr, err, 'cannot evaluate condition') }
  }
}
