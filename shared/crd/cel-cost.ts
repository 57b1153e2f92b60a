import { Environment, type ASTNode } from '@marcbachmann/cel-js'
import { functionCost, type OperandSizes } from './cel-cost-functions.js'
import {
  add, addSaturating, BOOL, celType, DYN, estimate, factor, INT, mul, ONE, STRING, STRING_TRAVERSAL, sum, union, UNKNOWN_SIZE,
  ZERO, type Costed, type Estimate,
} from './cel-cost-values.js'
import { celTypeOf, type CelDecl, type CelKind, type CelType } from './cel-types.js'

/**
 * Static worst-case cost of one CEL expression, computed the way the API server's type checker
 * does when a CRD is written: every identifier and field selection costs 1, a string operation
 * costs a tenth of the largest string it may traverse, a regular expression a quarter of its
 * pattern length per character, and a macro (`all`, `exists`, `map`, ...) costs its body times
 * the most elements its list or map can hold. Sizes come from the schema (maxLength, maxItems,
 * maxProperties, enums); a value with no known size (the result of `string(...)`, say) counts
 * as 2^64-1 characters. All arithmetic saturates at 2^64-1 like the server's unsigned integers
 * (cel-cost-values.ts). This file walks the expression; what each function costs is in
 * cel-cost-functions.ts.
 */

interface IterVar {
  type: CelType
  path?: string[]
  size?: Estimate
}

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

class Coster implements OperandSizes {
  private readonly scopes = new Map<string, IterVar[]>()

  /** `fallback`: the declaration a path from any other name walks (the API server walks `self`'s for every path). */
  constructor(private readonly roots: ReadonlyMap<string, CelDecl>, private readonly options: CostOptions, private readonly fallback?: CelDecl) {}

  /** Estimating one evaluation on known values (CostOptions.runtime). */
  get runtime(): boolean {
    return this.options.runtime === true
  }

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
        return { cost: add(ONE, o.cost), type: celType('optional', fieldType(o.type, n.args[1])) }
      }
      case 'call':
        return this.globalCall(n.args[0], n.args[1])
      case 'rcall':
        return this.memberCall(n.args[0], n.args[1], n.args[2])
      case 'list': {
        const items = n.args.map((a) => this.visit(a))
        return { cost: add(sum(items.map((i) => i.cost)), estimate(10n)), type: celType('list', items[0]?.type ?? DYN), size: estimate(BigInt(items.length)) }
      }
      case 'map': {
        const parts = n.args.flatMap(([k, v]) => [this.visit(k), this.visit(v)])
        return { cost: add(sum(parts.map((p) => p.cost)), estimate(30n)), type: { kind: 'map', key: parts[0]?.type ?? DYN, elem: parts[1]?.type ?? DYN }, size: estimate(BigInt(n.args.length)) }
      }
      case '?:': {
        const [c, t, f] = n.args.map((a) => this.visit(a)) as [Costed, Costed, Costed]
        return { cost: add(c.cost, union(t.cost, f.cost)), type: t.type.kind === 'dyn' ? f.type : t.type, size: union(this.size(t), this.size(f)) }
      }
      case '&&':
      case '||': {
        const [l, r] = n.args.map((a) => this.visit(a)) as [Costed, Costed]
        return { cost: estimate(l.cost.min, addSaturating(l.cost.max, r.cost.max)), type: BOOL }
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
        return { cost: add(ONE, add(t.cost, k.cost)), type: celType('optional', t.type.elem ?? DYN) }
      }
      default:
        return this.operator(n.op, n.args[0], n.args[1])
    }
  }

  private ident(name: string): Costed {
    const scoped = this.scopes.get(name)?.at(-1)
    if (scoped) return { cost: ONE, type: scoped.type, ...(scoped.path ? { path: scoped.path } : {}), ...(scoped.size ? { size: scoped.size } : {}) }
    const root = this.roots.get(name)
    if (!root) return { cost: ONE, type: celType('type'), path: [name] }
    const type = celTypeOf(root)
    if (name === 'oldSelf' && this.options.optionalOldSelf) return { cost: ONE, type: celType('optional', type), path: [name] }
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
    return factor(estimate(smallest > 0n ? 1n : 0n, smallest), STRING_TRAVERSAL)
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
        condition = estimate(2n) // @not_strictly_false(accu)
        step = estimate(accu.min, addSaturating(accu.max, p.cost.max)) // accu && p
        break
      case 'exists':
        condition = estimate(3n) // @not_strictly_false(!accu)
        step = estimate(accu.min, addSaturating(accu.max, p.cost.max)) // accu || p
        break
      case 'exists_one':
        step = add(p.cost, union(estimate(2n), accu)) // p ? accu + 1 : accu
        result = estimate(2n) // accu == 1
        break
      case 'filter':
        init = estimate(10n)
        step = add(p.cost, union(estimate(13n), accu)) // p ? accu + [x] : accu
        type = celType('list', iter.type)
        break
      default: {
        init = estimate(10n)
        const f = body[body.length - 1] as Costed
        const append = add(estimate(12n), f.cost) // accu + [f]
        step = body.length === 2 ? add(p.cost, union(append, accu)) : append
        type = celType('list', f.type)
      }
    }
    const count = this.size(range)
    const cost = add(add(add(range.cost, init), result), mul(count, add(step, condition)))
    return { cost, type, size: count }
  }

  private call(name: string, target: Costed | undefined, args: Costed[]): Costed {
    const argCost = sum(args.map((a) => a.cost))
    const { cost, size, type, elemSize } = functionCost(name, target, args, this)
    return { cost: add(cost, argCost), type, ...(size ? { size } : {}), ...(elemSize ? { elemSize } : {}) }
  }

  /** The size the type checker assumes: known, else from the schema path, else 1 for scalars, else unbounded. */
  size(n: Costed): Estimate {
    if (n.size) return n.size
    const fromSchema = this.schemaSize(n.path)
    if (fromSchema) return fromSchema
    return SCALAR_KINDS.has(n.type.kind) ? ONE : UNKNOWN_SIZE
  }

  /** The size Kubernetes' library functions assume: like size() but without the scalar rule. */
  librarySize(n: Costed): Estimate {
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
    return estimate(0n, node.maxElements)
  }
}

function literal(value: unknown): Costed {
  const size = (n: number) => estimate(BigInt(n))
  if (typeof value === 'string') return { cost: ZERO, type: STRING, size: size([...value].length), literal: value }
  if (typeof value === 'bigint') return { cost: ZERO, type: INT, size: ONE, literal: value }
  if (typeof value === 'number') return { cost: ZERO, type: celType('double'), size: ONE, literal: value }
  if (typeof value === 'boolean') return { cost: ZERO, type: BOOL, size: ONE }
  if (value === null) return { cost: ZERO, type: celType('null'), size: ONE }
  if (value instanceof Uint8Array) return { cost: ZERO, type: celType('bytes'), size: size(value.length) }
  return { cost: ZERO, type: celType('uint'), size: ONE }
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
