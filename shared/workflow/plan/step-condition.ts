/**
 * Step conditions: CEL (as purko documents) plus purko's legacy shorthand, which is rewritten
 * into CEL text before compiling. Compiled programs are cached per expression; compiling is
 * deterministic, so the cache does not make evaluation impure. Every evaluation has a bounded
 * cost: `matches` runs on RE2 and an expression whose estimated cost on the outputs it reads is
 * over Kubernetes' limit is refused (shared/cel/budget.ts), so no condition stalls a controller.
 */
import { type ASTNode } from '@marcbachmann/cel-js'
import { COST_LIMIT_EXCEEDED, overBudget } from '../../cel/budget.js'
import { rewriteMatches, userFacingCelMessage } from '../../cel/regex.js'
import { conditionEnvironment, truthy } from './condition-environment.js'
import { shorthandToCel, stepAlias } from './condition-shorthand.js'

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

type Compiled =
  | { ok: true; run: (ctx: Record<string, unknown>) => unknown; ast: ASTNode; refs: string[]; allSteps: boolean }
  | { ok: false; error: string; refs: string[] }

// Errors that mean "the referenced value is not there": a missing value never satisfies a condition.
const MISSING_CODES = new Set(['no_such_key', 'index_out_of_bounds'])
const CACHE_LIMIT = 512

const cache = new Map<string, Compiled>()

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
    const { text, readsAllSteps } = shorthandToCel(expr, refs)
    const program = conditionEnvironment.parse(text)
    rewriteMatches(program.ast)
    const checked = program.check()
    compiled = checked.valid
      ? { ok: true, run: (ctx) => program(ctx), ast: program.ast, refs, allSteps: readsAllSteps }
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
