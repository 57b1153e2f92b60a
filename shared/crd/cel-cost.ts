import { Environment, type ASTNode } from '@marcbachmann/cel-js'
import { celTypeOf, type CelDecl, type CelKind, type CelType } from './cel-types.js'

/**
 * Static worst-case cost of one CEL expression, computed the way the API server's type checker
 * does when a CRD is written: every identifier and field selection costs 1, a string operation
 * costs a tenth of the largest string it may traverse, a regular expression a quarter of its
 * pattern length per character, and a macro (`all`, `exists`, `map`, ...) costs its body times
 * the most elements its list or map can hold. Sizes come from the schema (maxLength, maxItems,
 * maxProperties, enums); a value with no known size (the result of `string(...)`, say) counts
 * as 2^64-1 characters. All arithmetic saturates at 2^64-1 like the server's unsigned integers.
 */

/** The largest unsigned 64-bit integer, where every estimate saturates. */
export const MAX_UINT64 = (1n << 64n) - 1n

/** A range of costs or sizes. */
export interface Estimate {
  min: bigint
  max: bigint
}

const TWO_TO_64 = 2 ** 64
const STRING_TRAVERSAL = 0.1
const REGEX_LENGTH = 0.25

const est = (min: bigint, max: bigint = min): Estimate => ({ min, max })
const ZERO = est(0n)
const ONE = est(1n)
const UNKNOWN_SIZE = est(0n, MAX_UINT64)

function addU(x: bigint, y: bigint): bigint {
  return x + y > MAX_UINT64 ? MAX_UINT64 : x + y
}
function mulU(x: bigint, y: bigint): bigint {
  return y !== 0n && x > MAX_UINT64 / y ? MAX_UINT64 : x * y
}
// The server converts to a 64-bit float, multiplies and rounds up; doing the same keeps the rounding identical.
function factorU(x: bigint, f: number): bigint {
  const xf = Number(x)
  if (xf > 0 && f > 0 && xf > TWO_TO_64 / f) return MAX_UINT64
  const c = Math.ceil(xf * f)
  return c >= TWO_TO_64 ? MAX_UINT64 : BigInt(c)
}
const add = (a: Estimate, b: Estimate): Estimate => est(addU(a.min, b.min), addU(a.max, b.max))
const mul = (a: Estimate, b: Estimate): Estimate => est(mulU(a.min, b.min), mulU(a.max, b.max))
const factor = (a: Estimate, f: number): Estimate => est(factorU(a.min, f), factorU(a.max, f))
const union = (a: Estimate, b: Estimate): Estimate => est(a.min < b.min ? a.min : b.min, a.max > b.max ? a.max : b.max)
const sum = (xs: Estimate[]): Estimate => xs.reduce(add, ZERO)

/** What the estimate knows of one sub-expression. */
interface Costed {
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

interface IterVar {
  type: CelType
  path?: string[]
  size?: Estimate
}

const T = (kind: CelKind, elem?: CelType): CelType => (elem ? { kind, elem } : { kind })
const BOOL = T('bool')
const INT = T('int')
const STRING = T('string')
const DYN = T('dyn')
const SCALAR_KINDS = new Set<CelKind>(['bool', 'double', 'duration', 'int', 'timestamp', 'uint'])

// Kubernetes enables CEL's optional syntax (`a.?b`, `l[?0]`) for CRD rules; the estimate only parses.
const PARSER = new Environment({ enableOptionalTypes: true, unlistedVariablesAreDyn: true })

/** Options of estimateExpressionCost. */
export interface CostOptions {
  /** `oldSelf` is an optional (the rule sets optionalOldSelf). */
  optionalOldSelf?: boolean
  /**
   * Estimating one evaluation on known values rather than a CRD rule as the API server does:
   * also use what is sure beyond the server's estimate (each part of a `split` is at most the
   * whole string), so ordinary expressions on real values are not refused for sizes nobody has.
   */
  runtime?: boolean
}

/**
 * Pure: the estimated cost range of an expression whose `self` is the given declaration (the
 * schema node carrying the rule); null when the expression does not parse.
 */
export function estimateExpressionCost(expression: string, self: CelDecl, options: CostOptions = {}): Estimate | null {
  let ast: ASTNode
  try {
    ast = PARSER.parse(expression).ast
  } catch {
    return null
  }
  return new Coster(new Map([['self', self], ['oldSelf', self]]), options, self).visit(ast).cost
}

/**
 * Pure: the estimated cost range of a parsed expression whose variables are declared by
 * `variables` (a variable not listed costs 1 and has no known size). With declarations made from
 * the values an evaluation is about to see (shared/cel/budget.ts), `max` bounds that evaluation.
 */
export function estimateAstCost(ast: ASTNode, variables: ReadonlyMap<string, CelDecl>): Estimate {
  return new Coster(variables, { runtime: true }).visit(ast).cost
}

class Coster {
  private readonly scopes = new Map<string, IterVar[]>()

  /** `fallback`: the declaration a path from any other name walks (the API server walks `self`'s for every path). */
  constructor(private readonly roots: ReadonlyMap<string, CelDecl>, private readonly options: CostOptions, private readonly fallback?: CelDecl) {}

  visit(n: ASTNode): Costed {
    switch (n.op) {
      case 'value':
        return literal(n.args)
      case 'id':
        return this.ident(n.args)
      case '.':
        return this.select(n.args[0], n.args[1])
      case '.?': {
        // `a.?b` is a call of the optional-select function.
        const o = this.visit(n.args[0])
        return { cost: add(ONE, o.cost), type: T('optional', fieldType(o.type, n.args[1])) }
      }
      case 'call':
        return this.globalCall(n.args[0], n.args[1])
      case 'rcall':
        return this.memberCall(n.args[0], n.args[1], n.args[2])
      case 'list': {
        const items = n.args.map((a) => this.visit(a))
        return { cost: add(sum(items.map((i) => i.cost)), est(10n)), type: T('list', items[0]?.type ?? DYN), size: est(BigInt(items.length)) }
      }
      case 'map': {
        const parts = n.args.flatMap(([k, v]) => [this.visit(k), this.visit(v)])
        return { cost: add(sum(parts.map((p) => p.cost)), est(30n)), type: { kind: 'map', key: parts[0]?.type ?? DYN, elem: parts[1]?.type ?? DYN }, size: est(BigInt(n.args.length)) }
      }
      case '?:': {
        const [c, t, f] = n.args.map((a) => this.visit(a)) as [Costed, Costed, Costed]
        return { cost: add(c.cost, union(t.cost, f.cost)), type: t.type.kind === 'dyn' ? f.type : t.type, size: union(this.size(t), this.size(f)) }
      }
      case '&&':
      case '||': {
        const [l, r] = n.args.map((a) => this.visit(a)) as [Costed, Costed]
        return { cost: est(l.cost.min, addU(l.cost.max, r.cost.max)), type: BOOL }
      }
      case '!_': {
        const a = this.visit(n.args)
        return { cost: add(ONE, a.cost), type: BOOL }
      }
      case '-_': {
        // The grammar reads a minus sign before a number as part of the literal.
        if (n.args.op === 'value' && (typeof n.args.args === 'bigint' || typeof n.args.args === 'number')) return literal(-n.args.args)
        const a = this.visit(n.args)
        return { cost: add(ONE, a.cost), type: a.type }
      }
      case '[]':
        return this.index(n.args[0], n.args[1])
      case '[?]': {
        const t = this.visit(n.args[0])
        const k = this.visit(n.args[1])
        return { cost: add(ONE, add(t.cost, k.cost)), type: T('optional', t.type.elem ?? DYN) }
      }
      default:
        return this.operator(n.op, n.args[0], n.args[1])
    }
  }

  private ident(name: string): Costed {
    const scoped = this.scopes.get(name)?.at(-1)
    if (scoped) return { cost: ONE, type: scoped.type, ...(scoped.path ? { path: scoped.path } : {}), ...(scoped.size ? { size: scoped.size } : {}) }
    const root = this.roots.get(name)
    if (!root) return { cost: ONE, type: T('type'), path: [name] }
    const type = celTypeOf(root)
    if (name === 'oldSelf' && this.options.optionalOldSelf) return { cost: ONE, type: T('optional', type), path: [name] }
    return { cost: ONE, type, path: [name] }
  }

  private select(operand: ASTNode, field: string): Costed {
    const o = this.visit(operand)
    const structured = o.type.kind === 'object' || o.type.kind === 'map'
    return { cost: structured ? add(o.cost, ONE) : o.cost, type: fieldType(o.type, field), path: [...(o.path ?? []), field] }
  }

  private index(target: ASTNode, key: ASTNode): Costed {
    const t = this.visit(target)
    const k = this.visit(key)
    const cost = add(ONE, add(t.cost, k.cost))
    if (t.type.kind === 'list') return { cost, type: t.type.elem ?? DYN, path: [...(t.path ?? []), '@items'] }
    if (t.type.kind === 'map') return { cost, type: t.type.elem ?? DYN, path: [...(t.path ?? []), '@values'] }
    // A dyn operand matches the list and the map overloads; the map one is resolved last.
    return { cost, type: DYN, path: [...(t.path ?? []), '@values'] }
  }

  private operator(op: string, left: ASTNode, right: ASTNode): Costed {
    const l = this.visit(left)
    const r = this.visit(right)
    const args = add(l.cost, r.cost)
    switch (op) {
      case '==':
      case '!=':
        return { cost: add(this.compareBySize(l, r), args), type: BOOL }
      case '<':
      case '<=':
      case '>':
      case '>=': {
        const kinds = candidates(l.type.kind, r.type.kind, ['string', 'bytes'])
        let cost: Estimate | undefined
        for (const k of kinds) {
          const c = k === 'string' || k === 'bytes' ? this.compareBySize(l, r) : ONE
          cost = cost ? union(cost, c) : c
        }
        return { cost: add(cost ?? ONE, args), type: BOOL }
      }
      case '+': {
        const kinds = candidates(l.type.kind, r.type.kind, ['string', 'bytes', 'list'])
        let cost: Estimate | undefined
        let size: Estimate | undefined
        for (const k of kinds) {
          let c = ONE
          if (k === 'string' || k === 'bytes' || k === 'list') {
            const s = add(this.size(l), this.size(r))
            size = size ? union(size, s) : s
            if (k !== 'list') c = factor(s, STRING_TRAVERSAL)
          }
          cost = cost ? union(cost, c) : c
        }
        const type = l.type.kind !== 'dyn' ? l.type : r.type
        return { cost: add(cost ?? ONE, args), type, ...(size ? { size } : {}) }
      }
      case 'in': {
        const c = r.type.kind
        let cost = c === 'list' ? factor(this.size(r), 1) : ONE
        if (c === 'dyn') cost = union(factor(this.size(r), 1), ONE)
        return { cost: add(cost, args), type: BOOL }
      }
      default:
        return { cost: add(ONE, args), type: l.type.kind === 'dyn' ? r.type : l.type }
    }
  }

  // Equality and string ordering traverse at most the shorter operand.
  private compareBySize(l: Costed, r: Costed): Estimate {
    const ls = this.size(l)
    const rs = this.size(r)
    const smallest = ls.max < rs.max ? ls.max : rs.max
    return factor(est(smallest > 0n ? 1n : 0n, smallest), STRING_TRAVERSAL)
  }

  private globalCall(name: string, argNodes: ASTNode[]): Costed {
    if (name === 'has' && argNodes.length === 1 && argNodes[0]?.op === '.') {
      // A presence test costs nothing beyond evaluating the operand it tests.
      const operand = this.visit((argNodes[0] as Extract<ASTNode, { op: '.' }>).args[0])
      return { cost: operand.cost, type: BOOL }
    }
    const args = argNodes.map((a) => this.visit(a))
    return this.call(name, undefined, args)
  }

  private memberCall(name: string, targetNode: ASTNode, argNodes: ASTNode[]): Costed {
    const macro = this.macro(name, targetNode, argNodes)
    if (macro) return macro
    // `sets.contains(...)`, `strings.quote(...)`: a namespaced function, not a member call.
    if (targetNode.op === 'id' && ['sets', 'strings', 'format'].includes(targetNode.args) && !this.scopes.get(targetNode.args)?.length) {
      return this.call(`${targetNode.args}.${name}`, undefined, argNodes.map((a) => this.visit(a)))
    }
    const args = argNodes.map((a) => this.visit(a))
    const target = this.visit(targetNode)
    const result = this.call(name, target, args)
    return { ...result, cost: add(target.cost, result.cost) }
  }

  private macro(name: string, targetNode: ASTNode, argNodes: ASTNode[]): Costed | null {
    const arity = argNodes.length
    const known = ((name === 'all' || name === 'exists' || name === 'exists_one' || name === 'filter') && arity === 2) || (name === 'map' && (arity === 2 || arity === 3))
    const first = argNodes[0]
    if (!known || first?.op !== 'id') return null
    const range = this.visit(targetNode)
    const rangeKind = range.type.kind
    const iter: IterVar = { type: rangeKind === 'list' ? (range.type.elem ?? DYN) : rangeKind === 'map' ? (range.type.key ?? STRING) : DYN }
    if (rangeKind === 'list') iter.path = [...(range.path ?? []), '@items']
    if (range.elemSize) iter.size = range.elemSize
    else if (rangeKind === 'map') iter.path = [...(range.path ?? []), '@keys']
    const stack = this.scopes.get(first.args) ?? []
    stack.push(iter)
    this.scopes.set(first.args, stack)
    const body = argNodes.slice(1).map((a) => this.visit(a))
    stack.pop()

    // The parts of the comprehension each macro expands to: accumulator init, loop condition, step, result.
    let init = ZERO
    let condition = ZERO
    let step: Estimate
    let result = ONE
    let type: CelType = BOOL
    const p = body[0] as Costed
    const accu = ONE
    switch (name) {
      case 'all':
        condition = est(2n) // @not_strictly_false(accu)
        step = est(accu.min, addU(accu.max, p.cost.max)) // accu && p
        break
      case 'exists':
        condition = est(3n) // @not_strictly_false(!accu)
        step = est(accu.min, addU(accu.max, p.cost.max)) // accu || p
        break
      case 'exists_one':
        step = add(p.cost, union(est(2n), accu)) // p ? accu + 1 : accu
        result = est(2n) // accu == 1
        break
      case 'filter':
        init = est(10n)
        step = add(p.cost, union(est(13n), accu)) // p ? accu + [x] : accu
        type = T('list', iter.type)
        break
      default: {
        init = est(10n)
        const f = body[body.length - 1] as Costed
        const append = add(est(12n), f.cost) // accu + [f]
        step = body.length === 2 ? add(p.cost, union(append, accu)) : append
        type = T('list', f.type)
      }
    }
    const count = this.size(range)
    const cost = add(add(add(range.cost, init), result), mul(count, add(step, condition)))
    return { cost, type, size: count }
  }

  private call(name: string, target: Costed | undefined, args: Costed[]): Costed {
    const argCost = sum(args.map((a) => a.cost))
    const { cost, size, type, elemSize } = this.functionCost(name, target, args)
    return { cost: add(cost, argCost), type, ...(size ? { size } : {}), ...(elemSize ? { elemSize } : {}) }
  }

  // The cost of the function itself (arguments excluded), its result type and, when known, its result size.
  private functionCost(name: string, target: Costed | undefined, args: Costed[]): { cost: Estimate; type: CelType; size?: Estimate; elemSize?: Estimate } {
    const a0 = args[0]
    const a1 = args[1]
    const traverse = (n: Costed, f = STRING_TRAVERSAL) => factor(this.librarySize(n), f)
    // Set functions of the sets extension.
    if (name === 'sets.contains' || name === 'sets.intersects' || name === 'sets.equivalent') {
      if (a0 && a1) return { cost: add(factor(mul(this.librarySize(a0), this.librarySize(a1)), name === 'sets.equivalent' ? 2 : 1), ONE), type: BOOL }
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
            return { cost: mul(this.librarySize(target), perElement), type }
          }
          return { cost: traverse(target), type }
        }
        case 'lowerAscii':
        case 'upperAscii':
        case 'substring':
        case 'trim': {
          const size = this.librarySize(target)
          return { cost: factor(size, STRING_TRAVERSAL), type: STRING, size }
        }
        case 'replace':
          if (a0 && a1) return { cost: traverse(target, 0.2), type: STRING, size: this.replaceSize(target, a0, a1) }
          break
        case 'split': {
          const size = this.librarySize(target)
          let max = size.max
          if (typeof a1?.literal === 'bigint') max = BigInt.asUintN(64, a1.literal)
          // Each part is at most the whole string.
          return { cost: factor(size, 0.2), type: T('list', STRING), size: est(0n, max), ...(this.options.runtime ? { elemSize: est(0n, size.max) } : {}) }
        }
        case 'join': {
          const list = this.librarySize(target)
          let size = ZERO
          if (target.type.kind === 'list' || target.type.kind === 'map' || target.type.kind === 'optional') {
            const elem: Costed = { cost: ZERO, type: target.type.elem ?? DYN, ...(target.path ? { path: [...target.path, '@items'] } : {}), ...(target.elemSize ? { size: target.elemSize } : {}) }
            size = mul(list, this.librarySize(elem))
          }
          if (a0) {
            const separators = est(list.min > 0n ? list.min - 1n : 0n, list.max > 0n ? list.max - 1n : 0n)
            size = add(size, mul(this.librarySize(a0), separators))
          }
          return { cost: factor(size, STRING_TRAVERSAL), type: STRING, size }
        }
        case 'find':
        case 'findAll':
          if (a0) {
            const size = this.librarySize(target)
            const cost = mul(factor(add(size, ONE), STRING_TRAVERSAL), factor(this.librarySize(a0), REGEX_LENGTH))
            return { cost, type: name === 'find' ? STRING : T('list', STRING), size: est(0n, size.max) }
          }
          break
        case 'ip':
          if (!a0) return { cost: ONE, type: T('opaque') }
          break
        case 'masked':
        case 'prefixLength':
        case 'family':
        case 'isUnspecified':
        case 'isLoopback':
        case 'isLinkLocalMulticast':
        case 'isLinkLocalUnicast':
        case 'isGlobalUnicast':
          return { cost: ONE, type: name === 'masked' ? T('opaque') : name === 'prefixLength' || name === 'family' ? INT : BOOL }
        case 'containsIP':
        case 'containsCIDR':
          if (a0) {
            const ip = est(4n, 16n)
            let cost = factor(add(ip, ip), STRING_TRAVERSAL)
            if (name === 'containsCIDR') cost = add(add(cost, factor(ip, STRING_TRAVERSAL)), ONE)
            if (a0.type.kind === 'string') cost = add(cost, traverse(a0))
            return { cost, type: BOOL }
          }
          break
        case 'validate':
          if (a0) return { cost: factor(traverse(a0), 32), type: T('optional', T('list', STRING)) }
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
      if (name.startsWith('format.')) return { cost: ONE, type: T('opaque') }
    }
    // The type checker's own estimates, by overload.
    if (target) {
      switch (name) {
        case 'format':
          if (target.type.kind === 'string') return { cost: factor(this.size(target), STRING_TRAVERSAL), type: STRING }
          break
        case 'startsWith':
        case 'endsWith':
          if (a0) return { cost: factor(this.size(a0), STRING_TRAVERSAL), type: BOOL }
          break
        case 'matches':
          if (a0) {
            const str = factor(add(this.size(target), ONE), STRING_TRAVERSAL)
            return { cost: mul(str, factor(this.size(a0), REGEX_LENGTH)), type: BOOL }
          }
          break
        case 'contains':
          if (a0) return { cost: mul(factor(this.size(target), STRING_TRAVERSAL), factor(this.size(a0), STRING_TRAVERSAL)), type: BOOL }
          break
      }
    } else if (a0 && args.length === 1) {
      const sz = this.size(a0)
      if (name === 'string' && a0.type.kind === 'bytes') return { cost: factor(sz, STRING_TRAVERSAL), type: STRING, size: est(sz.min / 4n, sz.max) }
      if (name === 'bytes' && a0.type.kind === 'string') return { cost: factor(sz, STRING_TRAVERSAL), type: T('bytes'), size: est(sz.min, mulU(sz.max, 4n)) }
      if (name === 'strings.quote') return { cost: factor(sz, STRING_TRAVERSAL), type: STRING, size: est(addU(sz.min, 2n), addU(mulU(sz.max, 2n), 2n)) }
    }
    return { cost: ONE, type: resultOf(name, target, args) }
  }

  private replaceSize(target: Costed, from: Costed, to: Costed): Estimate {
    const sz = this.librarySize(target)
    const f = this.librarySize(from)
    const w = this.librarySize(to)
    const count = est(0n, 0n)
    const retained = est(0n, 0n)
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

  /** The size the type checker assumes: known, else from the schema path, else 1 for scalars, else unbounded. */
  private size(n: Costed): Estimate {
    if (n.size) return n.size
    const fromSchema = this.schemaSize(n.path)
    if (fromSchema) return fromSchema
    return SCALAR_KINDS.has(n.type.kind) ? ONE : UNKNOWN_SIZE
  }

  /** The size Kubernetes' library functions assume: like size() but without the scalar rule. */
  private librarySize(n: Costed): Estimate {
    return n.size ?? this.schemaSize(n.path) ?? UNKNOWN_SIZE
  }

  // The first path element names the variable (self, oldSelf, or whatever the path started from); the rest walks its declaration.
  private schemaSize(path: string[] | undefined): Estimate | undefined {
    if (!path || path.length === 0) return undefined
    let node: CelDecl | undefined = this.roots.get(path[0]!) ?? this.fallback
    if (!node) return undefined
    for (const step of path.slice(1)) {
      const from: CelDecl = node
      if (step === '@items' || step === '@values') node = node.elem
      else if (step === '@keys') node = node.key
      else node = node.fields?.get(step)
      // A value known in full has no such part: evaluation stops there, having traversed nothing.
      if (!node) return from.closed ? ZERO : undefined
    }
    return est(0n, node.maxElements)
  }
}

function literal(value: unknown): Costed {
  const size = (n: number) => est(BigInt(n))
  if (typeof value === 'string') return { cost: ZERO, type: STRING, size: size([...value].length), literal: value }
  if (typeof value === 'bigint') return { cost: ZERO, type: INT, size: ONE, literal: value }
  if (typeof value === 'number') return { cost: ZERO, type: T('double'), size: ONE, literal: value }
  if (typeof value === 'boolean') return { cost: ZERO, type: BOOL, size: ONE }
  if (value === null) return { cost: ZERO, type: T('null'), size: ONE }
  if (value instanceof Uint8Array) return { cost: ZERO, type: T('bytes'), size: size(value.length) }
  return { cost: ZERO, type: T('uint'), size: ONE }
}

function fieldType(t: CelType, field: string): CelType {
  if (t.kind === 'object') {
    const decl = t.decl?.fields?.get(field)
    return decl ? celTypeOf(decl) : DYN
  }
  if (t.kind === 'map') return t.elem ?? DYN
  return DYN
}

/**
 * The overload families an operator can resolve to: the family of the concrete operand, every
 * listed family when both operands are dyn, and 'other' for the numeric and time overloads.
 */
function candidates(l: CelKind, r: CelKind, families: CelKind[]): CelKind[] {
  if (l === 'dyn' && r === 'dyn') return [...families, 'int']
  const k = l === 'dyn' ? r : l
  return [families.includes(k) ? k : 'int']
}

const RESULTS: Record<string, CelType> = {
  size: INT, int: INT, uint: T('uint'), double: T('double'), string: STRING, bool: BOOL, bytes: T('bytes'),
  duration: T('duration'), timestamp: T('timestamp'), type: T('type'), matches: BOOL, contains: BOOL,
  startsWith: BOOL, endsWith: BOOL, charAt: STRING, format: STRING, isURL: BOOL, url: T('opaque'),
  quantity: T('opaque'), isQuantity: BOOL, ip: T('opaque'), cidr: T('opaque'), isIP: BOOL, isCIDR: BOOL,
  sign: INT, asInteger: INT, isInteger: BOOL, asApproximateFloat: T('double'), isGreaterThan: BOOL,
  isLessThan: BOOL, compareTo: INT, add: T('opaque'), sub: T('opaque'), getScheme: STRING, getHostname: STRING,
  getHost: STRING, getPort: STRING, getEscapedPath: STRING, getQuery: { kind: 'map', key: STRING, elem: T('list', STRING) },
  hasValue: BOOL, reverse: STRING,
}

function resultOf(name: string, target: Costed | undefined, args: Costed[]): CelType {
  if (name === 'dyn') return DYN
  if (target?.type.kind === 'optional' && (name === 'value' || name === 'orValue')) return target.type.elem ?? DYN
  if (name.startsWith('get') && (target?.type.kind === 'timestamp' || target?.type.kind === 'duration')) return INT
  return RESULTS[name] ?? args[0]?.type ?? DYN
}
