/**
 * Structured fields read out of a free-text answer, the way purko's executor does it, so that
 * conditions written for purko (`steps.review.output.verdict == approve`) keep working when the
 * model answers in Markdown instead of JSON. Values are lower-cased; `true`/`false` become
 * booleans and digits become numbers.
 */

interface Field {
  key: string
  label: string
  value: string
}

const FIELDS: readonly Field[] = [
  { key: 'verdict', label: 'verdict', value: 'approve|request_changes|comment|reject|merge|revise|discuss' },
  { key: 'severity', label: 'severity', value: 'p[1-4]|critical|high|medium|low|clean' },
  { key: 'riskLevel', label: 'risk[ _-]?level', value: 'critical|high|medium|low|clean' },
  { key: 'status', label: 'status', value: '[A-Za-z][\\w-]*' },
  { key: 'recommendation', label: 'recommendation', value: 'approve|reject|merge|revise|discuss|monitor|remediate|escalate' },
  { key: 'feasibility', label: 'feasibility', value: 'approved|rejected|needs-discussion|feasible|infeasible' },
  { key: 'anomalyDetected', label: 'anomaly[ _-]?detected', value: 'true|false' },
  { key: 'findingsCount', label: 'findings[ _-]?count', value: '\\d+' },
  { key: 'coveragePercent', label: 'coverage[ _-]?percent(?:age)?', value: '\\d+' },
]

const PATTERNS = FIELDS.map((f) => ({
  key: f.key,
  // `**Verdict**: approve`, `Verdict: approve`, `**Verdict:** \`approve\``, with up to 10 other characters before the value.
  re: new RegExp(`(?<![\\w])\\**${f.label}\\**\\s*:\\s*\\**\\s*\`?[^\\n\`]{0,10}?\\b(${f.value})\\b`, 'i'),
  // `status` takes any word, so it is read only from the bold Markdown form.
  strict: f.key === 'status' ? new RegExp(`\\*\\*${f.label}\\*\\*\\s*:\\s*\`?(${f.value})`, 'i') : null,
}))

function coerce(raw: string): string | number | boolean {
  const v = raw.toLowerCase()
  if (v === 'true') return true
  if (v === 'false') return false
  if (/^\d+$/.test(v)) return Number(v)
  return v
}

/** Pure: the fields found in `text` whose keys are not already in `existing`. */
export function extractFields(text: string, existing: Readonly<Record<string, unknown>>): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {}
  for (const p of PATTERNS) {
    if (p.key in existing) continue
    const m = (p.strict ?? p.re).exec(text)
    if (m?.[1] !== undefined) out[p.key] = coerce(m[1])
  }
  return out
}
