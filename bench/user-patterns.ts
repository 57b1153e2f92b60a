// `npm run bench -- user-patterns`: what a user's regular expression or CEL expression costs
// (issue 27, item 2). Compares JavaScript's backtracking RegExp, which the functions and the
// executor used before, with RE2 (re2js) on inputs shaped against them, and times the cost
// estimate that now runs before every condition. Each backtracking case is kept small enough to
// finish: its time doubles (or grows with the square of the length) from there.
import { compileRe2 } from '../shared/cel/regex.js'
import { applyFilters, parseContentFilters } from '../executor/content-filters.js'
import { evaluateCondition } from '../shared/workflow/plan/step-condition.js'

function ms(run: () => unknown, times = 1): number {
  const start = process.hrtime.bigint()
  for (let i = 0; i < times; i++) run()
  return Number(process.hrtime.bigint() - start) / 1e6 / times
}
const row = (what: string, value: number) => console.log(`${what.padEnd(72)} ${value.toFixed(2).padStart(10)} ms`)

console.log('CEL matches / recipe patterns: ^(a+)+$ on n a\'s and a !')
for (const n of [18, 20, 22]) row(`  JavaScript RegExp, n=${n}`, ms(() => /^(a+)+$/.test(`${'a'.repeat(n)}!`)))
for (const n of [22, 48, 4096, 1_000_000]) row(`  RE2, n=${n}`, ms(() => compileRe2('^(a+)+$').test(`${'a'.repeat(n)}!`), n > 10_000 ? 1 : 20))

console.log('executor secret-assignment filter on n characters of "token-token-…" (a name that never becomes an assignment)')
const assignment = /\b([A-Za-z0-9_-]*(?:api[_-]?key|secret|token|password|passwd|credential)[A-Za-z0-9_-]*)(["']?\s*[:=]\s*["']?)([^\s"',;]{4,})/gi
const shaped = (n: number) => 'token-'.repeat(Math.ceil(n / 6)).slice(0, n)
for (const n of [1024, 2048, 4096]) row(`  JavaScript RegExp, n=${n}`, ms(() => shaped(n).replace(assignment, 'x')))
const secrets = parseContentFilters('["secrets"]')
for (const n of [8192, 262_144, 1_048_576]) row(`  all secret filters on RE2, n=${n}`, ms(() => applyFilters(shaped(n), secrets)))
const pii = parseContentFilters('["pii"]')
row('  all PII filters on RE2, 256 KB of "a."', ms(() => applyFilters('a.'.repeat(131_072), pii)))

console.log('workflow conditions: cost estimate before evaluation')
const items = Array.from({ length: 10_000 }, (_, i) => ({ id: i, name: `item-${i}` }))
row('  one pass over 10,000 items (estimated, then evaluated)', ms(() => evaluateCondition("steps.a.output.items.exists(i, i.name == 'item-9999')", { outputs: { a: { items } }, parameters: {} }), 20))
row('  a nested pass over 10,000 items (refused by the estimate)', ms(() => evaluateCondition('steps.a.output.items.exists(i, steps.a.output.items.exists(j, i.id + j.id < 0))', { outputs: { a: { items } }, parameters: {} }), 20))
