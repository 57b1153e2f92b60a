/**
 * The subset of Kubernetes JSONPath that printer columns and `kubectl wait --for=jsonpath`
 * use: `.a.b`, `['a.b']`, `[0]`, `[*]`, `..` is not supported, and filters of the form
 * `[?(@.type=="Ready")]` with `==` or `!=` against a string, number or boolean literal.
 */
type Step =
  | { kind: 'field'; name: string }
  | { kind: 'index'; index: number }
  | { kind: 'wildcard' }
  | { kind: 'filter'; path: string[]; op: '==' | '!='; value: unknown }

/** A compiled JSONPath expression; `find` returns every value it selects, in order. */
export interface JsonPath {
  find(root: unknown): unknown[]
}

/** Compiles a printer-column JSONPath; throws Error with a reason for unsupported syntax. */
export function compileJsonPath(expression: string): JsonPath {
  let src = expression.trim()
  if (src.startsWith('{') && src.endsWith('}')) src = src.slice(1, -1).trim()
  if (src.startsWith('$')) src = src.slice(1)
  const steps: Step[] = []
  let i = 0
  const readName = (): string => {
    let name = ''
    while (i < src.length) {
      const ch = src[i] as string
      if (ch === '\\' && i + 1 < src.length) {
        name += src[i + 1]
        i += 2
        continue
      }
      if (ch === '.' || ch === '[') break
      name += ch
      i++
    }
    return name
  }
  while (i < src.length) {
    const ch = src[i]
    if (ch === '.') {
      i++
      if (src[i] === '.') throw new Error(`recursive descent is not supported: ${expression}`)
      if (src[i] === '*') {
        i++
        steps.push({ kind: 'wildcard' })
        continue
      }
      const name = readName()
      if (name) steps.push({ kind: 'field', name })
      continue
    }
    if (ch === '[') {
      const end = findClosing(src, i)
      const inner = src.slice(i + 1, end).trim()
      i = end + 1
      if (inner === '*') steps.push({ kind: 'wildcard' })
      else if (/^-?\d+$/.test(inner)) steps.push({ kind: 'index', index: Number(inner) })
      else if (/^'.*'$|^".*"$/.test(inner)) steps.push({ kind: 'field', name: inner.slice(1, -1) })
      else if (inner.startsWith('?(') && inner.endsWith(')')) steps.push(parseFilter(inner.slice(2, -1), expression))
      else throw new Error(`unsupported JSONPath segment [${inner}] in ${expression}`)
      continue
    }
    const name = readName()
    if (!name) throw new Error(`unexpected character ${ch ?? ''} in ${expression}`)
    steps.push({ kind: 'field', name })
  }
  return { find: (root) => evaluate(steps, root) }
}

function findClosing(src: string, open: number): number {
  let depth = 0
  let quote: string | null = null
  for (let j = open; j < src.length; j++) {
    const c = src[j]
    if (quote) {
      if (c === quote) quote = null
      continue
    }
    if (c === '"' || c === "'") quote = c
    else if (c === '[') depth++
    else if (c === ']' && --depth === 0) return j
  }
  throw new Error(`unterminated [ in ${src}`)
}

function parseFilter(body: string, expression: string): Step {
  const m = /^@((?:\.[^=!\s]+)+)\s*(==|!=)\s*(.+)$/.exec(body.trim())
  if (!m) throw new Error(`unsupported JSONPath filter ${body} in ${expression}`)
  const raw = (m[3] as string).trim()
  let value: unknown
  if (/^'.*'$|^".*"$/.test(raw)) value = raw.slice(1, -1)
  else if (raw === 'true' || raw === 'false') value = raw === 'true'
  else if (!Number.isNaN(Number(raw))) value = Number(raw)
  else throw new Error(`unsupported JSONPath filter value ${raw} in ${expression}`)
  return { kind: 'filter', path: (m[1] as string).slice(1).split('.'), op: m[2] as '==' | '!=', value }
}

function evaluate(steps: Step[], root: unknown): unknown[] {
  let current: unknown[] = [root]
  for (const step of steps) {
    const next: unknown[] = []
    for (const node of current) {
      if (step.kind === 'field') {
        if (node && typeof node === 'object' && !Array.isArray(node) && step.name in node) {
          next.push((node as Record<string, unknown>)[step.name])
        }
      } else if (step.kind === 'index') {
        if (Array.isArray(node)) {
          const at = step.index < 0 ? node.length + step.index : step.index
          if (at >= 0 && at < node.length) next.push(node[at])
        }
      } else if (step.kind === 'wildcard') {
        if (Array.isArray(node)) next.push(...node)
        else if (node && typeof node === 'object') next.push(...Object.values(node))
      } else {
        const items = Array.isArray(node) ? node : node && typeof node === 'object' ? Object.values(node) : []
        for (const item of items) {
          let v: unknown = item
          for (const key of step.path) v = v && typeof v === 'object' ? (v as Record<string, unknown>)[key] : undefined
          if ((v === step.value) === (step.op === '==') && v !== undefined) next.push(item)
        }
      }
    }
    current = next
  }
  return current
}
