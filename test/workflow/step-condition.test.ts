import { describe, expect, it } from 'vitest'
import { conditionError, conditionReferences, evaluateCondition } from '../../shared/workflow/plan/step-condition.js'

// SPEC Appendix D: step `a` has this output, step `b` has none.
const outputs: Record<string, unknown> = {
  a: { count: 5, sev: 'high', ok: true, n: { c: 2 }, big: 1000000, s: '', arr: [], response: 'line1 "q"' },
  route: { sources: ['documentation', 'code'] },
  'route-text': { sources: 'documentation and code' },
  'my-step': { x: 1 },
  llm: { count: '7', flag: 'true' },
}
const ctx = { outputs, parameters: { env: 'prod', 'my-env': 'staging' } }

describe('evaluateCondition: SPEC Appendix D golden cases (Kinetic results)', () => {
  it.each([
    ['', true],
    ['true', true],
    ['  true  ', true],
    ['false', false],
    ['steps.a.output.count > 3', true],
    ['steps.a.output.count < 10', true],
    // purko parsed these as `>`/`<` with rhs "= 5" and always said false; they work here.
    ['steps.a.output.count >= 5', true],
    ['steps.a.output.count <= 5', true],
    ['steps.a.output.count >= 6', false],
    ['steps.a.output.sev == high', true],
    ['steps.a.output.sev == "high"', true],
    ["steps.a.output.sev == 'high'", true],
    ['steps.a.output.sev == HIGH', false],
    ['steps.a.output.sev in ["critical","high"]', true],
    ['steps.a.output.sev in [critical, medium]', false],
    ['steps.a.output.sev in [critical, high]', true],
    ['steps.a.output.ok == true', true],
    ['steps.a.output.ok', true],
    ['steps.a.output.s', false],
    ['steps.a.output.arr', true],
    ['steps.a.output.n.c == 2', true],
    // purko compared Go's `1e+06` with "1000000"; numbers compare as numbers here.
    ['steps.a.output.big == 1000000', true],
    ['steps.a.output.big > 999999', true],
    ['steps.a.output.missing != x', false],
    ['steps.b.output.x != y', false],
    ['steps."a".output.count > 3', true],
    // `&&` was unsupported in purko.
    ['steps.a.output.count > 3 && steps.a.output.ok', true],
    ['steps.a.output.count > 3 && steps.a.output.s', false],
    // The `${...}` wrapper was unsupported in purko.
    ['${steps.a.output.count} > 3', true],
    // `contains` was unsupported in purko.
    ['steps.a.output.sev contains h', true],
    ['steps.a.output.sev contains x', false],
  ])('%j is %s', (expr, expected) => {
    expect(evaluateCondition(expr, ctx)).toEqual({ ok: true, value: expected })
  })

  it.each([
    ['not-a-condition'],
    // purko compared with the text "high extra"; that is a syntax error here, reported as such.
    ['steps.a.output.sev == high extra'],
  ])('%j is an error that names the expression', (expr) => {
    const result = evaluateCondition(expr, ctx)
    expect(result.ok).toBe(false)
    if (!result.ok) expect(result.error).toContain(JSON.stringify(expr))
  })
})

describe('evaluateCondition: CEL', () => {
  it.each([
    ["steps.a.output.count >= 5 && steps.a.output.sev in ['high','critical']", true],
    ["steps.a.output.count >= 6 || steps.a.output.sev in ['low']", false],
    ['size(steps.a.output.arr) == 0', true],
    ['size(steps.a.output.sev) == 4', true],
    ["parameters.env == 'prod'", true],
    ["parameters.env != 'prod'", false],
    ['steps["a"].output.count == 5', true],
    ['steps.a.output.sev.contains("ig")', true],
    ['steps.a.output.sev.startsWith("h") && !steps.a.output.s', true],
    ['has(steps.a.output.count) && !has(steps.a.output.nothing)', true],
    ['(steps.a.output.ok || steps.b.output.x) && steps.a.output.n.c == 2', true],
    ['steps.a.output.count == 5.0', true],
    ['steps.route.output.sources.exists(s, s == "code")', true],
    ['has(steps.my-step.output.x) && !has(steps.my-step.output.y)', true],
    ['steps.exists(name, name == "route")', true],
    ['parameters.my-env == "staging"', true],
  ])('%j is %s', (expr, expected) => {
    expect(evaluateCondition(expr, ctx)).toEqual({ ok: true, value: expected })
  })
})

describe('evaluateCondition: purko example forms and legacy shorthand', () => {
  it.each([
    ['steps.route.output.sources contains documentation', true],
    ['steps.route.output.sources contains web', false],
    ['steps.route-text.output.sources contains documentation', true],
    ['steps.route-text.output.sources contains web', false],
    ['steps.my-step.output.x == 1', true],
    ['steps."my-step".output.x == 1', true],
    ['steps.a.output.sev in high, critical', true],
    ['!steps.a.output.s', true],
    ['steps.a.output.sev != request_changes', true],
    ['steps.a.output.sev != needs-discussion', true],
    ['steps.a.output.count == "${parameters.env}"', false],
    ['steps.a.output.sev == steps.a.output.sev', true],
  ])('%j is %s', (expr, expected) => {
    expect(evaluateCondition(expr, ctx)).toEqual({ ok: true, value: expected })
  })

  it.each([
    // Model output often carries numbers and booleans as text; they compare by value.
    ['steps.llm.output.count > 6', true],
    ['steps.llm.output.count == 7', true],
    ['steps.llm.output.count != 7', false],
    ['steps.llm.output.flag == true', true],
  ])('text output %j is %s', (expr, expected) => {
    expect(evaluateCondition(expr, ctx)).toEqual({ ok: true, value: expected })
  })

  it('reports a number comparison against text that is not a number as an error', () => {
    const result = evaluateCondition('steps.a.output.sev > 6', ctx)
    expect(result.ok).toBe(false)
  })

  it.each([
    ['!steps.a.output.missing'],
    ['steps.b.output.x == 1 || false'],
    ['size(steps.a.output.nothing) == 0'],
    ['parameters.unknown == ""'],
  ])('a missing value never satisfies: %j is false', (expr) => {
    expect(evaluateCondition(expr, ctx)).toEqual({ ok: true, value: false })
  })

  it('gives the same answer when an expression is evaluated again (cached program)', () => {
    const expr = 'steps.a.output.count > 3'
    expect(evaluateCondition(expr, ctx)).toEqual(evaluateCondition(expr, ctx))
    expect(evaluateCondition(expr, { outputs: { a: { count: 1 } }, parameters: {} })).toEqual({ ok: true, value: false })
  })
})

describe('conditionReferences and conditionError', () => {
  it.each([
    ['steps.a.output.x == 1 && steps."b-c".output.y', ['a', 'b-c']],
    ['steps.my-step.output.x > 1 || steps["other"].output.ok', ['my-step', 'other']],
    ['${steps.a.output.count} > 3 && steps.a.output.ok', ['a']],
    ['parameters.env == prod', []],
    ['', []],
  ])('%j references %j', (expr, refs) => {
    expect(conditionReferences(expr)).toEqual(refs)
  })

  it('accepts valid expressions and explains invalid ones', () => {
    expect(conditionError('steps.a.output.count >= 5')).toBeNull()
    expect(conditionError('steps.a.output.count >=')).toMatch(/^invalid condition "steps\.a\.output\.count >="/)
    expect(conditionError('unknownVariable == 1')).toContain('unknownVariable')
  })
})

describe('evaluateCondition: bounded cost (issue 27, item 2)', () => {
  const evil = `${'a'.repeat(48)}!`

  it("`'aaaa…a!'.matches('^(a+)+$')` answers at once with RE2's result instead of backtracking for hours", () => {
    expect(evaluateCondition(`steps.a.output.s.matches('^(a+)+$')`, { outputs: { a: { s: evil } }, parameters: {} })).toEqual({ ok: true, value: false })
    expect(evaluateCondition(`steps.a.output.s.matches('^(a+)+$')`, { outputs: { a: { s: 'a'.repeat(48) } }, parameters: {} })).toEqual({ ok: true, value: true })
  })

  it('a webhook parameter fed to an author\'s regex is just as bounded', () => {
    expect(evaluateCondition(`parameters.title.matches('(x+x+)+y')`, { outputs: {}, parameters: { title: 'x'.repeat(5000) } })).toEqual({ ok: true, value: false })
  })

  it('a pattern RE2 does not accept (backreferences, lookaround) is a condition error that says so', () => {
    const verdict = evaluateCondition(`parameters.p.matches('(?=a)a')`, { outputs: {}, parameters: { p: 'a' } })
    expect(verdict).toMatchObject({ ok: false })
    expect(!verdict.ok && verdict.error).toMatch(/invalid regular expression "\(\?=a\)a" \(RE2 syntax: no backreferences or lookaround\)/)
    expect(!verdict.ok && verdict.error).not.toContain('kineticRe2Matches')
  })

  it('an expression whose cost on the outputs it reads is over the limit is refused with CostLimitExceeded, not run', () => {
    const list = Array.from({ length: 20_000 }, (_, i) => i)
    const verdict = evaluateCondition('steps.a.output.l.exists(x, steps.a.output.l.exists(y, x + y < 0))', { outputs: { a: { l: list } }, parameters: {} })
    expect(verdict).toMatchObject({ ok: false, reason: 'CostLimitExceeded' })
    expect(!verdict.ok && verdict.error).toMatch(/evaluation cost limit exceeded: estimated cost \d+ on these values, limit 1000000$/)
  })

  it('the same expression on small outputs, and one pass over a large one, still evaluate', () => {
    const small = Array.from({ length: 20 }, (_, i) => i)
    expect(evaluateCondition('steps.a.output.l.exists(x, steps.a.output.l.exists(y, x + y == 37))', { outputs: { a: { l: small } }, parameters: {} })).toEqual({ ok: true, value: true })
    const large = Array.from({ length: 20_000 }, (_, i) => ({ id: i, name: `item-${i}` }))
    expect(evaluateCondition("steps.a.output.items.exists(i, i.name == 'item-19999')", { outputs: { a: { items: large } }, parameters: {} })).toEqual({ ok: true, value: true })
    expect(evaluateCondition('steps.a.output.missing.exists(i, i == 1)', { outputs: { a: { items: large } }, parameters: {} })).toEqual({ ok: true, value: false })
  })
})
