import type { CelType } from './cel-types.js'
import {
  add, BOOL, celType, DYN, estimate, factor, INT, MAX_UINT64, mul, mulSaturating, addSaturating, ONE, REGEX_LENGTH,
  STRING, STRING_TRAVERSAL, ZERO, type Costed, type Estimate,
} from './cel-cost-values.js'

/**
 * What each CEL function costs in the API server's estimate (cel-cost.ts walks the expression and
 * calls in here for every function call): Kubernetes' own libraries (lists, strings, regular
 * expressions, IP addresses and CIDRs, quantities, URLs, sets) matched by name, then the type
 * checker's estimates for the standard overloads, and every function's result type.
 */

/** How the estimate sizes an operand; the expression walk (cel-cost.ts) knows the schema and the scopes. */
export interface OperandSizes {
  /** The size the type checker assumes: known, else from the schema path, else 1 for scalars, else unbounded. */
  size(n: Costed): Estimate
  /** The size Kubernetes' library functions assume: like size() but without the scalar rule. */
  librarySize(n: Costed): Estimate
  /** Estimating one evaluation on known values (CostOptions.runtime). */
  runtime: boolean
}

/** A function's own cost (arguments excluded), its result type and, when known, its result size. */
export interface FunctionCost {
  cost: Estimate
  type: CelType
  size?: Estimate
  elemSize?: Estimate
}

/** Pure: what calling function `name` (on `target` for a member call) with `args` costs. */
export function functionCost(name: string, target: Costed | undefined, args: Costed[], sizes: OperandSizes): FunctionCost {
  const a0 = args[0]
  const a1 = args[1]
  const traverse = (n: Costed, f = STRING_TRAVERSAL) => factor(sizes.librarySize(n), f)
  // Set functions of the sets extension.
  if (name === 'sets.contains' || name === 'sets.intersects' || name === 'sets.equivalent') {
    if (a0 && a1) return { cost: add(factor(mul(sizes.librarySize(a0), sizes.librarySize(a1)), name === 'sets.equivalent' ? 2 : 1), ONE), type: BOOL }
  }
  // Kubernetes' own libraries, matched by function name.
  if (target) {
    switch (name) {
      case 'isSorted':
      case 'sum':
      case 'max':
      case 'min':
      case 'indexOf':
      case 'lastIndexOf': {
        const type = name === 'isSorted' ? BOOL : name.endsWith('ndexOf') ? INT : (target.type.elem ?? DYN)
        if (target.type.kind === 'list' || target.type.kind === 'map' || target.type.kind === 'optional') {
          const elemType = target.type.elem ?? DYN
          let perElement = ONE
          if (elemType.kind === 'string' || elemType.kind === 'bytes') {
            const elem: Costed = { cost: ZERO, type: elemType, ...(target.path ? { path: [...target.path, '@items'] } : {}) }
            perElement = add(perElement, traverse(elem))
          }
          return { cost: mul(sizes.librarySize(target), perElement), type }
        }
        return { cost: traverse(target), type }
      }
      case 'lowerAscii':
      case 'upperAscii':
      case 'substring':
      case 'trim': {
        const size = sizes.librarySize(target)
        return { cost: factor(size, STRING_TRAVERSAL), type: STRING, size }
      }
      case 'replace':
        if (a0 && a1) return { cost: traverse(target, 0.2), type: STRING, size: replaceSize(target, a0, a1, sizes) }
        break
      case 'split': {
        const size = sizes.librarySize(target)
        let max = size.max
        if (typeof a1?.literal === 'bigint') max = BigInt.asUintN(64, a1.literal)
        // Each part is at most the whole string.
        return { cost: factor(size, 0.2), type: celType('list', STRING), size: estimate(0n, max), ...(sizes.runtime ? { elemSize: estimate(0n, size.max) } : {}) }
      }
      case 'join': {
        const list = sizes.librarySize(target)
        let size = ZERO
        if (target.type.kind === 'list' || target.type.kind === 'map' || target.type.kind === 'optional') {
          const elem: Costed = { cost: ZERO, type: target.type.elem ?? DYN, ...(target.path ? { path: [...target.path, '@items'] } : {}), ...(target.elemSize ? { size: target.elemSize } : {}) }
          size = mul(list, sizes.librarySize(elem))
        }
        if (a0) {
          const separators = estimate(list.min > 0n ? list.min - 1n : 0n, list.max > 0n ? list.max - 1n : 0n)
          size = add(size, mul(sizes.librarySize(a0), separators))
        }
        return { cost: factor(size, STRING_TRAVERSAL), type: STRING, size }
      }
      case 'find':
      case 'findAll':
        if (a0) {
          const size = sizes.librarySize(target)
          const cost = mul(factor(add(size, ONE), STRING_TRAVERSAL), factor(sizes.librarySize(a0), REGEX_LENGTH))
          return { cost, type: name === 'find' ? STRING : celType('list', STRING), size: estimate(0n, size.max) }
        }
        break
      case 'ip':
        if (!a0) return { cost: ONE, type: celType('opaque') }
        break
      case 'masked':
      case 'prefixLength':
      case 'family':
      case 'isUnspecified':
      case 'isLoopback':
      case 'isLinkLocalMulticast':
      case 'isLinkLocalUnicast':
      case 'isGlobalUnicast':
        return { cost: ONE, type: name === 'masked' ? celType('opaque') : name === 'prefixLength' || name === 'family' ? INT : BOOL }
      case 'containsIP':
      case 'containsCIDR':
        if (a0) {
          const ip = estimate(4n, 16n)
          let cost = factor(add(ip, ip), STRING_TRAVERSAL)
          if (name === 'containsCIDR') cost = add(add(cost, factor(ip, STRING_TRAVERSAL)), ONE)
          if (a0.type.kind === 'string') cost = add(cost, traverse(a0))
          return { cost, type: BOOL }
        }
        break
      case 'validate':
        if (a0) return { cost: factor(traverse(a0), 32), type: celType('optional', celType('list', STRING)) }
        break
      case 'sign':
      case 'asInteger':
      case 'isInteger':
      case 'asApproximateFloat':
      case 'isGreaterThan':
      case 'isLessThan':
      case 'compareTo':
      case 'add':
      case 'sub':
      case 'getScheme':
      case 'getHostname':
      case 'getHost':
      case 'getPort':
      case 'getEscapedPath':
      case 'getQuery':
        return { cost: ONE, type: resultOf(name, target, args) }
    }
  } else {
    switch (name) {
      case 'url':
      case 'cidr':
      case 'isIP':
      case 'isCIDR':
      case 'ip':
      case 'quantity':
      case 'isQuantity':
        if (a0) return { cost: traverse(a0), type: resultOf(name, target, args) }
        break
      case 'ip.isCanonical':
        if (a0) return { cost: traverse(a0, 0.2), type: BOOL }
        break
    }
    if (name.startsWith('format.')) return { cost: ONE, type: celType('opaque') }
  }
  // The type checker's own estimates, by overload.
  if (target) {
    switch (name) {
      case 'format':
        if (target.type.kind === 'string') return { cost: factor(sizes.size(target), STRING_TRAVERSAL), type: STRING }
        break
      case 'startsWith':
      case 'endsWith':
        if (a0) return { cost: factor(sizes.size(a0), STRING_TRAVERSAL), type: BOOL }
        break
      case 'matches':
        if (a0) {
          const str = factor(add(sizes.size(target), ONE), STRING_TRAVERSAL)
          return { cost: mul(str, factor(sizes.size(a0), REGEX_LENGTH)), type: BOOL }
        }
        break
      case 'contains':
        if (a0) return { cost: mul(factor(sizes.size(target), STRING_TRAVERSAL), factor(sizes.size(a0), STRING_TRAVERSAL)), type: BOOL }
        break
    }
  } else if (a0 && args.length === 1) {
    const sz = sizes.size(a0)
    if (name === 'string' && a0.type.kind === 'bytes') return { cost: factor(sz, STRING_TRAVERSAL), type: STRING, size: estimate(sz.min / 4n, sz.max) }
    if (name === 'bytes' && a0.type.kind === 'string') return { cost: factor(sz, STRING_TRAVERSAL), type: celType('bytes'), size: estimate(sz.min, mulSaturating(sz.max, 4n)) }
    if (name === 'strings.quote') return { cost: factor(sz, STRING_TRAVERSAL), type: STRING, size: estimate(addSaturating(sz.min, 2n), addSaturating(mulSaturating(sz.max, 2n), 2n)) }
  }
  return { cost: ONE, type: resultOf(name, target, args) }
}

function replaceSize(target: Costed, from: Costed, to: Costed, sizes: OperandSizes): Estimate {
  const sz = sizes.librarySize(target)
  const f = sizes.librarySize(from)
  const w = sizes.librarySize(to)
  const count = estimate(0n, 0n)
  const retained = estimate(0n, 0n)
  if (f.min === 0n) {
    count.max = sz.max < MAX_UINT64 ? sz.max + 1n : sz.max
    retained.max = sz.max
  } else if (w.max <= f.min) {
    retained.max = sz.max
  } else {
    count.max = BigInt(Math.ceil(Number(sz.max) / Number(f.min)))
  }
  if (f.max === 0n) {
    count.min = sz.min < MAX_UINT64 ? sz.min + 1n : sz.min
    retained.min = sz.min
  } else if (f.max <= w.min) {
    retained.min = sz.min
  } else {
    count.min = BigInt(Math.ceil(Number(sz.min) / Number(f.max)))
  }
  return add(mul(count, w), retained)
}

const RESULTS: Record<string, CelType> = {
  size: INT, int: INT, uint: celType('uint'), double: celType('double'), string: STRING, bool: BOOL, bytes: celType('bytes'),
  duration: celType('duration'), timestamp: celType('timestamp'), type: celType('type'), matches: BOOL, contains: BOOL,
  startsWith: BOOL, endsWith: BOOL, charAt: STRING, format: STRING, isURL: BOOL, url: celType('opaque'),
  quantity: celType('opaque'), isQuantity: BOOL, ip: celType('opaque'), cidr: celType('opaque'), isIP: BOOL, isCIDR: BOOL,
  sign: INT, asInteger: INT, isInteger: BOOL, asApproximateFloat: celType('double'), isGreaterThan: BOOL,
  isLessThan: BOOL, compareTo: INT, add: celType('opaque'), sub: celType('opaque'), getScheme: STRING, getHostname: STRING,
  getHost: STRING, getPort: STRING, getEscapedPath: STRING, getQuery: { kind: 'map', key: STRING, elem: celType('list', STRING) },
  hasValue: BOOL, reverse: STRING,
}

export function resultOf(name: string, target: Costed | undefined, args: Costed[]): CelType {
  if (name === 'dyn') return DYN
  if (target?.type.kind === 'optional' && (name === 'value' || name === 'orValue')) return target.type.elem ?? DYN
  if (name.startsWith('get') && (target?.type.kind === 'timestamp' || target?.type.kind === 'duration')) return INT
  return RESULTS[name] ?? args[0]?.type ?? DYN
}
