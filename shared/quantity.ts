/**
 * Kubernetes quantities (resource.Quantity's grammar) as exact rationals: the one check of
 * MCPServer resources and rendered recipe quantities, and the comparison of recipe policy bounds
 * (spec §10.1 `resources.maxLimits`, `storage.maxClaimSize`) the way the API server does:
 * `1Gi` > `1G`, `500m` = `0.5`, `1e3` = `1k`. Pure; no floating point.
 */

/** A quantity's value as `num / den` (den a positive power of ten). */
export interface QuantityValue {
  num: bigint
  den: bigint
}

const QUANTITY = /^([+-]?)(\d+(?:\.\d*)?|\.\d+)(?:([KMGTPE]i)|([numkMGTPE])|[eE]([+-]?\d+))?$/
const BINARY: Record<string, number> = { Ki: 10, Mi: 20, Gi: 30, Ti: 40, Pi: 50, Ei: 60 }
const DECIMAL: Record<string, number> = { n: -9, u: -6, m: -3, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 }
// Kubernetes caps exponents far below this; the cap keeps BigInt powers cheap on hostile input.
const MAX_EXPONENT = 1000

/** Pure: the value of a Kubernetes quantity, or null when `text` is not one. */
export function parseQuantity(text: string): QuantityValue | null {
  const m = QUANTITY.exec(text)
  if (!m) return null
  const [, sign, number, binary, decimal, exponent] = m
  const [whole = '', fraction = ''] = number!.split('.')
  let num = BigInt((whole + fraction) || '0')
  let tens = -fraction.length
  if (binary) num *= 2n ** BigInt(BINARY[binary]!)
  if (decimal) tens += DECIMAL[decimal]!
  if (exponent !== undefined) {
    const e = Number(exponent)
    if (!Number.isSafeInteger(e) || Math.abs(e) > MAX_EXPONENT) return null
    tens += e
  }
  if (sign === '-') num = -num
  return tens >= 0 ? { num: num * 10n ** BigInt(tens), den: 1n } : { num, den: 10n ** BigInt(-tens) }
}

/** Longest quantity accepted: far beyond any real one, and it bounds the BigInt work on hostile input. */
const MAX_QUANTITY_LENGTH = 64

/** Pure: true when `text` is a Kubernetes quantity. */
export function isQuantity(text: string): boolean {
  return text.length <= MAX_QUANTITY_LENGTH && parseQuantity(text) !== null
}

/** Pure: -1, 0 or 1 as quantity `a` is less than, equal to or greater than `b`; null when either is not a quantity. */
export function compareQuantities(a: string, b: string): -1 | 0 | 1 | null {
  const x = parseQuantity(a)
  const y = parseQuantity(b)
  if (!x || !y) return null
  const l = x.num * y.den
  const r = y.num * x.den
  return l < r ? -1 : l > r ? 1 : 0
}
