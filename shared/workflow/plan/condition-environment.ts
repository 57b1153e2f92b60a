/**
 * The CEL environment step conditions run in, with purko's value rules: a bare value's truthiness,
 * `contains` over text, lists and maps, and text meeting a number or bool by value (outputs written
 * by language models often carry numbers as text). `matches` runs on RE2 (shared/cel/regex.ts).
 */
import { Environment } from '@marcbachmann/cel-js'
import { useRe2Matches } from '../../cel/regex.js'

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
export function truthy(v: unknown): boolean {
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

/** The one environment every condition compiles in; building it is deterministic. */
export const conditionEnvironment = buildEnvironment()
