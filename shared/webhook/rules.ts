/**
 * purko's trigger rules (SPEC Appendix A): ConfigMap `trigger-rules`, key `rules`, a JSON array
 * of `{name, source, match{}, workflow}` in the namespace a webhook is posted to; the first rule
 * that matches the normalised payload names the template.
 */
import { isObject, type Normalized } from './normalize.js'

/** The ConfigMap holding a namespace's rules. */
export const RULES_CONFIGMAP = 'trigger-rules'
/** Its key. */
export const RULES_KEY = 'rules'
/** The rule workflow purko reserves for its (Pro-only) LLM routing. */
export const INTENT_WORKFLOW = '_intent'

/** One routing rule. */
export interface TriggerRule {
  name: string
  /** A source name (case-insensitive) or `*` for any. */
  source: string
  /** Normalised field -> required value (case-insensitive); every entry must hold. */
  match: Record<string, string>
  /** The template to run, or `_intent`. */
  workflow: string
}

/** purko's default rules, used when the ConfigMap or its key is missing or invalid. */
export const DEFAULT_RULES: readonly TriggerRule[] = Object.freeze<TriggerRule[]>([
  { name: 'pagerduty-critical', source: 'pagerduty', match: { severity: 'critical' }, workflow: 'incident-response' },
  { name: 'pagerduty-high', source: 'pagerduty', match: { severity: 'high' }, workflow: 'cluster-investigation' },
  { name: 'github-pr', source: 'github', match: { type: 'pull_request' }, workflow: 'cluster-sdlc-analysis' },
  { name: 'github-push', source: 'github', match: { type: 'push' }, workflow: 'cluster-sdlc-analysis' },
])

/** The rules in force, and whether they came from the ConfigMap or why not. */
export interface RuleSet {
  rules: readonly TriggerRule[]
  origin: 'configmap' | 'default'
  /** Why the ConfigMap's rules were not used, when it had a `rules` key that does not decode. */
  invalid?: string
}

/** The normalised fields a rule's `match` may name; any other key compares against ''. */
const MATCHABLE = ['severity', 'service', 'action', 'type', 'repository'] as const

/**
 * Pure: the rules from the ConfigMap's data (`undefined` when there is no ConfigMap). Missing
 * key or a value that is not a JSON array of rules gives the defaults, as purko's JSON decoding
 * does: one malformed rule (a non-string field, a non-object match) invalidates the whole list.
 * An empty array is a valid list with no rules.
 */
export function parseRules(data: Record<string, string> | undefined): RuleSet {
  const raw = data?.[RULES_KEY]
  if (raw === undefined) return { rules: DEFAULT_RULES, origin: 'default' }
  let decoded: unknown
  try {
    decoded = JSON.parse(raw)
  } catch (err) {
    return { rules: DEFAULT_RULES, origin: 'default', invalid: `not JSON: ${(err as Error).message}` }
  }
  if (!Array.isArray(decoded)) return { rules: DEFAULT_RULES, origin: 'default', invalid: 'not a JSON array' }
  const rules: TriggerRule[] = []
  for (const [i, item] of decoded.entries()) {
    const rule = ruleOf(item)
    if (typeof rule === 'string') return { rules: DEFAULT_RULES, origin: 'default', invalid: `rule ${i}: ${rule}` }
    rules.push(rule)
  }
  return { rules, origin: 'configmap' }
}

/** One decoded rule, or why it does not decode (Go's zero values for absent fields). */
function ruleOf(item: unknown): TriggerRule | string {
  if (!isObject(item)) return 'not an object'
  const fields: Record<'name' | 'source' | 'workflow', string> = { name: '', source: '', workflow: '' }
  for (const key of ['name', 'source', 'workflow'] as const) {
    const v = item[key]
    if (v === undefined || v === null) continue
    if (typeof v !== 'string') return `${key} is not a string`
    fields[key] = v
  }
  const match: Record<string, string> = {}
  if (item.match !== undefined && item.match !== null) {
    if (!isObject(item.match)) return 'match is not an object'
    for (const [k, v] of Object.entries(item.match)) {
      if (typeof v !== 'string') return `match.${k} is not a string`
      match[k] = v
    }
  }
  return { ...fields, match }
}

const equalFold = (a: string, b: string) => a.toLowerCase() === b.toLowerCase()

/** Pure: whether one rule matches a normalised payload. */
export function ruleMatches(rule: TriggerRule, n: Normalized): boolean {
  if (rule.source !== '*' && !equalFold(rule.source, n.source)) return false
  return Object.entries(rule.match).every(([key, want]) => {
    const have = (MATCHABLE as readonly string[]).includes(key) ? n[key as (typeof MATCHABLE)[number]] : ''
    return equalFold(have, want)
  })
}

/** Pure: the first rule that matches, or null. */
export function matchRule(rules: readonly TriggerRule[], n: Normalized): TriggerRule | null {
  return rules.find((r) => ruleMatches(r, n)) ?? null
}
