/**
 * purko's legacy condition shorthand, rewritten into CEL text before compiling: hyphenated and
 * quoted step names after `steps.`, `${...}` placeholders, bare words compared as text
 * (`steps.a.output.kind == bug`), `x in a, b`, infix `contains`, and bare values under `&&`, `||`
 * and `!` tested for truthiness. Plain CEL passes through unchanged. While reading, it collects the
 * names of the steps the expression refers to.
 */

interface Token {
  kind: 'id' | 'str' | 'num' | 'op'
  value: string
}

const COMPARE = new Set(['==', '!=', '<', '<=', '>', '>='])
const TWO_CHAR_OPS = new Set(['==', '!=', '<=', '>=', '&&', '||'])
const ONE_CHAR_OPS = new Set(['<', '>', '!', '(', ')', '[', ']', '{', '}', '.', ',', '?', ':', '+', '-', '*', '/', '%'])
const KEYWORDS = new Set(['true', 'false', 'null', 'in'])
const ROOTS = new Set(['steps', 'parameters'])
const MACROS = new Set(['exists', 'all', 'exists_one', 'map', 'filter', 'bind', 'transformList', 'transformMap'])
const OPENERS: Record<string, string> = { '(': ')', '[': ']', '{': '}' }
const CLOSERS = new Set([')', ']', '}'])

function isOp(token: Token | undefined, text: string): boolean {
  return token !== undefined && token.kind === 'op' && token.value === text
}

function isOperandEnd(token: Token | undefined): boolean {
  if (token === undefined) return false
  if (token.kind === 'op') return CLOSERS.has(token.value)
  return !(token.kind === 'id' && (token.value === 'in' || token.value === 'contains'))
}

/** Reads a CEL string literal (optional r/b prefix, single/double/triple quotes) starting at i. */
function readStringLiteral(src: string, i: number): number {
  let j = i
  let raw = false
  while (/[rRbB]/.test(src[j] ?? '') && j < i + 2) {
    if (src[j] === 'r' || src[j] === 'R') raw = true
    j++
  }
  const q = src[j]
  const triple = src.startsWith(q!.repeat(3), j)
  const close = triple ? q!.repeat(3) : q!
  j += close.length
  while (j < src.length) {
    if (!raw && src[j] === '\\') { j += 2; continue }
    if (src.startsWith(close, j)) return j + close.length
    if (!triple && src[j] === '\n') break
    j++
  }
  throw new Error('unterminated string literal')
}

/** Decodes the content of a plain quoted CEL literal (enough for step names and placeholders). */
function decodeLiteral(lit: string): string | null {
  const m = /^(["'])(.*)\1$/s.exec(lit)
  if (!m) return null
  return m[2]!.replace(/\\(.)/g, (_, c: string) => ({ n: '\n', t: '\t', r: '\r' } as Record<string, string>)[c] ?? c)
}

/** Pure: the identifier a step name is reachable under in CEL (`my-step` becomes `my_step`). */
export function stepAlias(name: string): string {
  return name.replaceAll('-', '_')
}

function lex(src: string, refs: string[] = []): Token[] {
  const out: Token[] = []
  const stack: string[] = []
  const bound = new Set<string>()
  let pendingBind = false
  let i = 0
  const last = (n = 1) => out[out.length - n]
  const push = (token: Token) => {
    if (token.kind === 'id' && pendingBind) { bound.add(token.value); pendingBind = false }
    out.push(token)
  }
  // `steps.<name>` and `parameters.<name>`: the member after a root variable is a name that may
  // contain hyphens (or be quoted), which CEL cannot parse. Step names become an identifier alias
  // (step names are DNS labels, so `-` to `_` cannot collide, and `has()` keeps working); other
  // names become an index expression.
  const afterRootDot = () =>
    isOp(last(), '.') && last(2)?.kind === 'id' && ROOTS.has(last(2)!.value) && !isOp(last(3), '.')
  const addRef = (name: string) => { if (!refs.includes(name)) refs.push(name) }
  const member = (name: string) => {
    const root = last(2)!.value
    if (root === 'steps') addRef(name)
    const id = root === 'steps' ? stepAlias(name) : name
    if (/^[A-Za-z_]\w*$/.test(id) && !KEYWORDS.has(id)) {
      push({ kind: 'id', value: id })
      return
    }
    out.pop()
    push({ kind: 'op', value: '[' }); push({ kind: 'str', value: JSON.stringify(name) }); push({ kind: 'op', value: ']' })
  }
  const bareWordHere = () => {
    const p = last()
    if (!p) return false
    if (p.kind === 'op') {
      if (COMPARE.has(p.value)) return true
      return (p.value === '[' || p.value === ',') && stack[stack.length - 1] === 'inlist'
    }
    return p.kind === 'id' && (p.value === 'contains' || p.value === 'in') && isOperandEnd(last(2))
  }
  const readBareWord = (at: number): { word: string; end: number } | null => {
    const ident = /^[A-Za-z_]\w*/.exec(src.slice(at))
    if (!ident) return null
    const word = /^[A-Za-z_][\w\-.:/]*/.exec(src.slice(at))![0].replace(/\.+$/, '')
    const after = src.slice(at + ident[0].length).trimStart()
    if (KEYWORDS.has(ident[0]) || bound.has(ident[0]) || after.startsWith('(')) return null
    if (ROOTS.has(ident[0]) && /^\s*\./.test(src.slice(at + ident[0].length))) return null
    return { word, end: at + word.length }
  }

  while (i < src.length) {
    const c = src[i]!
    if (/\s/.test(c)) { i++; continue }
    if (c === '$' && src[i + 1] === '{') { stack.push('dollar'); i += 2; continue }
    if (c === '}' && stack[stack.length - 1] === 'dollar') { stack.pop(); i++; continue }
    if (c === '"' || c === "'" || (/[rRbB]/.test(c) && /^[rRbB]{0,2}["']/.test(src.slice(i, i + 3)) && !/\w/.test(src[i - 1] ?? ''))) {
      const end = readStringLiteral(src, i)
      const lit = src.slice(i, end)
      const text = decodeLiteral(lit)
      i = end
      const placeholder = text === null ? null : /^\$\{([^}]*)\}$/.exec(text)
      if (placeholder) {
        // A literal that is exactly one `${...}` placeholder means the referenced value.
        for (const token of lex(placeholder[1]!, refs)) push(token)
        continue
      }
      if (afterRootDot() && text !== null) {
        member(text)
        continue
      }
      if (text !== null && isOp(last(), '[') && last(2)?.kind === 'id' && last(2)!.value === 'steps' && !isOp(last(3), '.')) {
        addRef(text)
      }
      push({ kind: 'str', value: lit })
      continue
    }
    if (/\w/.test(c) && afterRootDot()) {
      const name = /^\w[\w-]*/.exec(src.slice(i))![0]
      if (!src.slice(i + name.length).trimStart().startsWith('(')) {
        member(name)
        i += name.length
        continue
      }
    }
    if (/\d/.test(c)) {
      const m = /^(?:0[xX][0-9a-fA-F]+|\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)[uU]?/.exec(src.slice(i))!
      push({ kind: 'num', value: m[0] })
      i += m[0].length
      continue
    }
    if (/[A-Za-z_]/.test(c)) {
      if (bareWordHere()) {
        const p = last()!
        const listWithoutBrackets = p.kind === 'id' && p.value === 'in'
        const first = readBareWord(i)
        if (first && listWithoutBrackets) {
          // purko's `x in a, b` form: the rest is a comma-separated list of bare words.
          push({ kind: 'op', value: '[' })
          push({ kind: 'str', value: JSON.stringify(first.word) })
          i = first.end
          for (;;) {
            const m = /^\s*,\s*/.exec(src.slice(i))
            if (!m) break
            const next = readBareWord(i + m[0].length)
            if (!next) break
            push({ kind: 'op', value: ',' }); push({ kind: 'str', value: JSON.stringify(next.word) })
            i = next.end
          }
          push({ kind: 'op', value: ']' })
          continue
        }
        if (first) {
          push({ kind: 'str', value: JSON.stringify(first.word) })
          i = first.end
          continue
        }
      }
      const id = /^[A-Za-z_]\w*/.exec(src.slice(i))![0]
      push({ kind: 'id', value: id })
      i += id.length
      continue
    }
    const two = src.slice(i, i + 2)
    if (TWO_CHAR_OPS.has(two)) { push({ kind: 'op', value: two }); i += 2; continue }
    if (ONE_CHAR_OPS.has(c)) {
      if (c === '(') {
        const p = last()
        if (p?.kind === 'id' && MACROS.has(p.value)) pendingBind = true
        stack.push(p?.kind === 'id' && !KEYWORDS.has(p.value) ? 'call' : 'group')
      } else if (c === '[') {
        const p = last()
        stack.push(p?.kind === 'id' && p.value === 'in' ? 'inlist' : isOperandEnd(p) ? 'index' : 'list')
      } else if (c === '{') {
        stack.push('map')
      } else if (CLOSERS.has(c)) {
        stack.pop()
      }
      push({ kind: 'op', value: c })
      i++
      continue
    }
    throw new Error(`unexpected character ${JSON.stringify(c)} at position ${i}`)
  }
  return out
}

function matchForward(tokens: Token[], open: number): number {
  let depth = 0
  for (let j = open; j < tokens.length; j++) {
    const tok = tokens[j]!
    if (tok.kind !== 'op') continue
    if (OPENERS[tok.value]) depth++
    else if (CLOSERS.has(tok.value) && --depth === 0) return j
  }
  throw new Error('unbalanced brackets')
}

function matchBackward(tokens: Token[], close: number): number {
  let depth = 0
  for (let j = close; j >= 0; j--) {
    const tok = tokens[j]!
    if (tok.kind !== 'op') continue
    if (CLOSERS.has(tok.value)) depth++
    else if (OPENERS[tok.value] && --depth === 0) return j
  }
  throw new Error('unbalanced brackets')
}

/** Index of the last token of the operand (primary plus member/index/call chain) starting at k. */
function operandEnd(tokens: Token[], k: number): number {
  let j = k
  while (isOp(tokens[j], '!') || isOp(tokens[j], '-')) j++
  const first = tokens[j]
  if (first === undefined) throw new Error('missing operand')
  if (first.kind === 'op') {
    if (!OPENERS[first.value]) throw new Error(`unexpected ${first.value}`)
    j = matchForward(tokens, j)
  } else if (first.kind === 'id' && isOp(tokens[j + 1], '(')) {
    j = matchForward(tokens, j + 1)
  }
  for (;;) {
    if (isOp(tokens[j + 1], '.') && tokens[j + 2]?.kind === 'id') {
      j += 2
      if (isOp(tokens[j + 1], '(')) j = matchForward(tokens, j + 1)
      continue
    }
    if (isOp(tokens[j + 1], '[')) { j = matchForward(tokens, j + 1); continue }
    return j
  }
}

/** Index of the first token of the operand chain that ends at `end`. */
function operandStart(tokens: Token[], end: number): number {
  let j = end
  for (;;) {
    const tok = tokens[j]!
    if (tok.kind === 'op' && CLOSERS.has(tok.value)) {
      const open = matchBackward(tokens, j)
      if (tok.value === ']' && open > 0 && isOperandEnd(tokens[open - 1])) { j = open - 1; continue }
      j = tok.value === ')' && open > 0 && tokens[open - 1]!.kind === 'id' ? open - 1 : open
    }
    if (j >= 2 && isOp(tokens[j - 1], '.')) { j -= 2; continue }
    return j
  }
}

/** Rewrites infix `a contains b` into a call that handles strings (substring) and lists (element). */
function rewriteContains(tokens: Token[]): Token[] {
  let out = tokens
  for (let i = 0; i < out.length; i++) {
    const tok = out[i]!
    if (tok.kind !== 'id' || tok.value !== 'contains' || isOp(out[i - 1], '.') || !isOperandEnd(out[i - 1])) continue
    const start = operandStart(out, i - 1)
    const end = operandEnd(out, i + 1)
    out = [
      ...out.slice(0, start),
      { kind: 'id', value: 'kineticContains' }, { kind: 'op', value: '(' },
      ...out.slice(start, i), { kind: 'op', value: ',' }, ...out.slice(i + 1, end + 1),
      { kind: 'op', value: ')' },
      ...out.slice(end + 1),
    ]
  }
  return out
}

/**
 * Wraps operands of `&&`, `||` and `!` that are a bare value (`steps.a.output.ok`) in purko's
 * truthiness test, so that a string, number or list works where CEL wants a bool.
 */
function wrapBareOperands(tokens: Token[], from: number, to: number): Token[] {
  const out: Token[] = []
  let seg = from
  const flush = (end: number) => {
    let k = seg
    while (k < end && isOp(tokens[k], '!')) out.push(tokens[k++]!)
    const first = tokens[k]
    if (k >= end || first === undefined) return
    if (isOp(first, '(') && matchForward(tokens, k) === end - 1) {
      out.push(first, ...wrapBareOperands(tokens, k + 1, end - 1), tokens[end - 1]!)
      return
    }
    const bare = first.kind === 'id' && !KEYWORDS.has(first.value) && operandEnd(tokens, k) === end - 1
    if (bare) out.push({ kind: 'id', value: 'kineticTruthy' }, { kind: 'op', value: '(' }, ...tokens.slice(k, end), { kind: 'op', value: ')' })
    else out.push(...tokens.slice(k, end))
  }
  for (let i = from; i < to; i++) {
    const tok = tokens[i]!
    if (tok.kind === 'op' && OPENERS[tok.value]) { i = matchForward(tokens, i); continue }
    if (isOp(tok, '&&') || isOp(tok, '||')) { flush(i); out.push(tok); seg = i + 1 }
  }
  flush(to)
  return out
}

/** True when `steps` is used other than as `steps.<name>` / `steps["<name>"]`, e.g. `steps.exists(...)`. */
function readsStepsDynamically(tokens: Token[]): boolean {
  return tokens.some((tok, i) => tok.kind === 'id' && tok.value === 'steps' && !isOp(tokens[i - 1], '.')
    && !(isOp(tokens[i + 1], '.') && tokens[i + 2]?.kind === 'id' && !isOp(tokens[i + 3], '('))
    && !(isOp(tokens[i + 1], '[') && tokens[i + 2]?.kind === 'str' && isOp(tokens[i + 3], ']')))
}

/**
 * Pure: the CEL text for a condition written in CEL or in purko's shorthand, and whether it reads
 * `steps` as a whole (so every step's output must be handed to it). The names of the steps it refers
 * to are added to `refs` as they are read, so they are there even when the expression turns out
 * malformed and this throws.
 */
export function shorthandToCel(expr: string, refs: string[]): { text: string; readsAllSteps: boolean } {
  const tokens = lex(expr, refs)
  const withContains = rewriteContains(tokens)
  const text = wrapBareOperands(withContains, 0, withContains.length).map((token) => token.value).join(' ')
  return { text, readsAllSteps: readsStepsDynamically(tokens) }
}
