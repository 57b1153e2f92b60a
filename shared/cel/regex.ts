import type { ASTNode, Environment } from '@marcbachmann/cel-js'
import { RE2JS } from 're2js'

/**
 * Regular expressions of users (CEL `matches`, recipe input patterns, the executor's `regex:`
 * filters) run on RE2 (re2js, a JavaScript port of Go's and Kubernetes CEL's engine), which
 * matches in time linear in the text: no backtracking, so `(a+)+$` costs what `a+$` costs. The
 * price is RE2's syntax: no backreferences (`\1`) and no lookaround (`(?=`, `(?!`, `(?<=`,
 * `(?<!`), exactly as in Kubernetes' CEL. Pure apart from a bounded cache of compiled patterns.
 */

/** A pattern RE2 cannot compile; `message` says why. */
export class RegexSyntaxError extends Error {
  constructor(readonly pattern: string, detail: string) {
    super(`invalid regular expression ${JSON.stringify(pattern)} (RE2 syntax: no backreferences or lookaround): ${detail}`)
    this.name = 'RegexSyntaxError'
  }
}

const CACHE_LIMIT = 256
const cache = new Map<string, RE2JS | RegexSyntaxError>()

/** Compiles `pattern` with RE2 (cached); throws RegexSyntaxError when it is not RE2 syntax. */
export function compileRe2(pattern: string): RE2JS {
  let hit = cache.get(pattern)
  if (hit === undefined) {
    try {
      hit = RE2JS.compile(pattern)
    } catch (err) {
      hit = new RegexSyntaxError(pattern, (err instanceof Error ? err.message : String(err)).replace(/^error parsing regexp: /, ''))
    }
    if (cache.size >= CACHE_LIMIT) cache.delete(cache.keys().next().value!)
    cache.set(pattern, hit)
  }
  if (hit instanceof RegexSyntaxError) throw hit
  return hit
}

/**
 * Compiles a pattern written in ECMAScript syntax (recipe input patterns, the executor's filters)
 * for RE2: the two agree on everything but what backtracking needs, which is refused with
 * RegexSyntaxError: backreferences (`\1`, `\k<name>`) and lookaround.
 */
export function compileEcmaScriptOnRe2(pattern: string): RE2JS {
  if (/\\(?:[1-9]|k<)/.test(pattern.replace(/\\\\/g, ''))) throw new RegexSyntaxError(pattern, 'backreferences are not supported')
  let translated: string
  try {
    translated = RE2JS.translateRegExp(pattern)
  } catch (err) {
    throw new RegexSyntaxError(pattern, err instanceof Error ? err.message : String(err))
  }
  return compileRe2(translated)
}

/** Whether `pattern` matches somewhere in `text` (CEL's `matches`, unanchored like RE2's). */
export function re2Test(pattern: string, text: string): boolean {
  return compileRe2(pattern).test(text)
}

/** Whether `pattern` matches the whole of `text`. */
export function re2TestExact(pattern: string, text: string): boolean {
  return compileRe2(pattern).testExact(text)
}

/** The name cel-js sees for `matches` once {@link rewriteMatches} ran; never shown to users. */
const RE2_MATCHES = 'kineticRe2Matches'

/**
 * Registers RE2 `matches` on a cel-js environment. cel-js's own `string.matches` compiles a
 * backtracking JavaScript RegExp and cannot be replaced, so {@link rewriteMatches} points every
 * call at this one before the expression is checked.
 */
export function useRe2Matches(env: Environment): Environment {
  env.registerFunction(`string.${RE2_MATCHES}(string): bool`, (text: string, pattern: string) => {
    try {
      return re2Test(pattern, text)
    } catch (err) {
      throw Object.assign(new Error(err instanceof Error ? err.message : String(err)), { code: 'invalid_regular_expression' })
    }
  })
  return env
}

/** Rewrites every `x.matches(re)` of a freshly parsed AST to the RE2 function (before its first check or evaluation). */
export function rewriteMatches(ast: ASTNode): ASTNode {
  visit(ast)
  return ast
}

function visit(node: unknown): void {
  if (Array.isArray(node)) {
    for (const child of node) visit(child)
    return
  }
  if (node === null || typeof node !== 'object' || !('op' in node) || !('args' in node)) return
  const n = node as { op: string; args: unknown }
  if (n.op === 'rcall' && Array.isArray(n.args) && n.args[0] === 'matches') n.args[0] = RE2_MATCHES
  visit(n.args)
}

/** The user's name back in a cel-js message that mentions the RE2 function. */
export function userFacingCelMessage(message: string): string {
  return message.split(RE2_MATCHES).join('matches')
}
