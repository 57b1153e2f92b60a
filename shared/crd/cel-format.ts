/**
 * CEL's `string.format(list)` as the Kubernetes API server evaluates it in a rule's
 * messageExpression. A real server estimates `'... got %d'.format([self.n])` as cheap, while
 * `'... got ' + string(self.n)` counts as a string of unbounded size and makes the CRD
 * unaffordable, so the purko.io CRDs use format() to quote numbers back to the user.
 */

/** A format clause this implementation does not know, or an argument of the wrong type. */
export class CelFormatError extends Error {
  override name = 'CelFormatError'
}

/**
 * Pure: `template` with each clause replaced by its argument, as the API server prints it:
 * `%s` (strings, ints, bools), `%d` (ints), `%f` / `%.<n>f` (doubles: `n` decimals, default 6,
 * rounded half to even on the exact binary value, thousands grouped with commas) and `%%`.
 * Throws CelFormatError for anything else, so the caller falls back to the rule's static message.
 */
export function celFormat(template: string, args: readonly unknown[]): string {
  let out = ''
  let next = 0
  for (let i = 0; i < template.length; i++) {
    const ch = template[i]
    if (ch !== '%') {
      out += ch
      continue
    }
    const clause = /^%(?:\.(\d+))?([a-zA-Z%])/.exec(template.slice(i))
    if (!clause) throw new CelFormatError(`unfinished format clause at position ${i}`)
    i += clause[0].length - 1
    const verb = clause[2]
    if (verb === '%') {
      out += '%'
      continue
    }
    if (next >= args.length) throw new CelFormatError(`index ${next} out of range`)
    const arg = args[next++]
    const precision = clause[1] === undefined ? undefined : Number(clause[1])
    if (verb === 's' && precision === undefined) out += asString(arg)
    else if (verb === 'd' && precision === undefined) out += asDecimal(arg)
    else if (verb === 'f') out += fixedPoint(arg, precision ?? 6)
    else throw new CelFormatError(`unsupported format clause ${clause[0]}`)
  }
  return out
}

function asString(arg: unknown): string {
  if (typeof arg === 'string') return arg
  if (typeof arg === 'bigint' || typeof arg === 'boolean') return String(arg)
  if (arg === null) return 'null'
  throw new CelFormatError(`string clause can only be used on strings, ints and bools, got ${typeof arg}`)
}

function asDecimal(arg: unknown): string {
  if (typeof arg === 'bigint') return arg.toString()
  throw new CelFormatError(`decimal clause can only be used on integers, got ${typeof arg}`)
}

function fixedPoint(arg: unknown, precision: number): string {
  if (typeof arg !== 'number' || !Number.isFinite(arg)) throw new CelFormatError('fixed-point clause can only be used on finite doubles')
  const { negative, mantissa, exponent } = decompose(arg)
  // The exact value is mantissa * 2^exponent; scale by 10^precision and round half to even.
  const scaled = mantissa * 10n ** BigInt(precision)
  let q: bigint
  if (exponent >= 0) {
    q = scaled << BigInt(exponent)
  } else {
    const den = 1n << BigInt(-exponent)
    q = scaled / den
    const twice = 2n * (scaled % den)
    if (twice > den || (twice === den && q % 2n === 1n)) q += 1n
  }
  const digits = q.toString().padStart(precision + 1, '0')
  const whole = digits.slice(0, digits.length - precision)
  const fraction = digits.slice(digits.length - precision)
  return `${negative ? '-' : ''}${group(whole)}${precision > 0 ? `.${fraction}` : ''}`
}

function decompose(x: number): { negative: boolean; mantissa: bigint; exponent: number } {
  const view = new DataView(new ArrayBuffer(8))
  view.setFloat64(0, x)
  const bits = view.getBigUint64(0)
  const negative = bits >> 63n === 1n
  const biased = Number((bits >> 52n) & 0x7ffn)
  const fraction = bits & ((1n << 52n) - 1n)
  return biased === 0
    ? { negative, mantissa: fraction, exponent: -1074 }
    : { negative, mantissa: fraction | (1n << 52n), exponent: biased - 1075 }
}

function group(whole: string): string {
  return whole.replace(/\B(?=(\d{3})+(?!\d))/g, ',')
}
