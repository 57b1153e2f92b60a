import type { CelKind, CelType } from './cel-types.js'

/**
 * The values the CEL cost estimate (cel-cost.ts) works with: ranges of costs or sizes whose
 * arithmetic saturates at 2^64-1 like the API server's unsigned integers, and what the estimate
 * knows of one sub-expression.
 */

/** The largest unsigned 64-bit integer, where every estimate saturates. */
export const MAX_UINT64 = (1n << 64n) - 1n

/** A range of costs or sizes. */
export interface Estimate {
  min: bigint
  max: bigint
}

const TWO_TO_64 = 2 ** 64
/** A string operation costs this much per character it may traverse. */
export const STRING_TRAVERSAL = 0.1
/** A regular expression costs this much per character of its pattern, per character matched. */
export const REGEX_LENGTH = 0.25

export const estimate = (min: bigint, max: bigint = min): Estimate => ({ min, max })
export const ZERO = estimate(0n)
export const ONE = estimate(1n)
export const UNKNOWN_SIZE = estimate(0n, MAX_UINT64)

export function addSaturating(x: bigint, y: bigint): bigint {
  return x + y > MAX_UINT64 ? MAX_UINT64 : x + y
}
export function mulSaturating(x: bigint, y: bigint): bigint {
  return y !== 0n && x > MAX_UINT64 / y ? MAX_UINT64 : x * y
}
// The server converts to a 64-bit float, multiplies and rounds up; doing the same keeps the rounding identical.
function factorSaturating(x: bigint, f: number): bigint {
  const xf = Number(x)
  if (xf > 0 && f > 0 && xf > TWO_TO_64 / f) return MAX_UINT64
  const c = Math.ceil(xf * f)
  return c >= TWO_TO_64 ? MAX_UINT64 : BigInt(c)
}
export const add = (a: Estimate, b: Estimate): Estimate => estimate(addSaturating(a.min, b.min), addSaturating(a.max, b.max))
export const mul = (a: Estimate, b: Estimate): Estimate => estimate(mulSaturating(a.min, b.min), mulSaturating(a.max, b.max))
export const factor = (a: Estimate, f: number): Estimate => estimate(factorSaturating(a.min, f), factorSaturating(a.max, f))
export const union = (a: Estimate, b: Estimate): Estimate => estimate(a.min < b.min ? a.min : b.min, a.max > b.max ? a.max : b.max)
export const sum = (xs: Estimate[]): Estimate => xs.reduce(add, ZERO)

/** What the estimate knows of one sub-expression. */
export interface Costed {
  cost: Estimate
  type: CelType
  /** Where in the schema the value comes from (`self`, field names, `@items`, `@keys`, `@values`); absent when unknown. */
  path?: string[]
  /** A size known from the expression itself: a literal, a comprehension's range, a function's result. */
  size?: Estimate
  /** The value of a literal. */
  literal?: unknown
  /** The most characters or elements of each element of a list a function made (`split`). */
  elemSize?: Estimate
}

export const celType = (kind: CelKind, elem?: CelType): CelType => (elem ? { kind, elem } : { kind })
export const BOOL = celType('bool')
export const INT = celType('int')
export const STRING = celType('string')
export const DYN = celType('dyn')
