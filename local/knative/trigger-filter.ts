import { attributeOf, type KEvent } from './cloud-event.js'

/** One element of a Trigger's `filters` (CloudEvents Subscriptions API dialects). */
export interface SubscriptionsFilter {
  exact?: Record<string, unknown>
  prefix?: Record<string, unknown>
  suffix?: Record<string, unknown>
  all?: SubscriptionsFilter[]
  any?: SubscriptionsFilter[]
  not?: SubscriptionsFilter
  cesql?: string
}

/** The filtering part of a Trigger spec. */
export interface TriggerFilterSpec {
  filter?: { attributes?: Record<string, string> }
  filters?: SubscriptionsFilter[]
}

type Verdict = 'pass' | 'fail' | 'skip'

/**
 * Pure: whether the event passes the Trigger's filter, as Knative's broker-filter decides it.
 * A non-empty `filters` overrides `filter.attributes`; neither means everything passes.
 * A dialect element that Knative cannot build (empty attribute value) is skipped, so it
 * blocks nothing; `cesql` is not evaluated locally and never passes (see unsupportedFilters).
 */
export function triggerMatches(spec: TriggerFilterSpec, event: KEvent): boolean {
  if (spec.filters && spec.filters.length > 0) return evalAll(spec.filters, event) !== 'fail'
  const attrs = spec.filter?.attributes ?? {}
  for (const [key, want] of Object.entries(attrs)) {
    const have = attributeOf(event, key)
    if (want === '') {
      if (have === undefined || have === '') return false
    } else if (have !== want) {
      return false
    }
  }
  return true
}

/**
 * Pure: human-readable problems with a Trigger's filter that make the local emulation differ
 * from expectations (`cesql`, empty values that Knative silently skips, mixed dialects).
 */
export function filterWarnings(spec: TriggerFilterSpec): string[] {
  const out: string[] = []
  const visit = (f: SubscriptionsFilter, path: string) => {
    const dialects = (['exact', 'prefix', 'suffix', 'all', 'any', 'not', 'cesql'] as const).filter((d) => f[d] !== undefined)
    if (dialects.length !== 1) out.push(`${path} must use exactly one dialect, found ${dialects.length === 0 ? 'none' : dialects.join(', ')}`)
    if (f.cesql !== undefined) out.push(`${path}.cesql is not evaluated by the local emulation: this filter matches nothing locally`)
    for (const d of ['exact', 'prefix', 'suffix'] as const) {
      for (const [k, v] of Object.entries(f[d] ?? {})) {
        if (k === '' || v === '' || v === undefined || v === null) out.push(`${path}.${d}.${k} has an empty value: Knative skips this filter, so it blocks nothing`)
      }
    }
    f.all?.forEach((c, i) => visit(c, `${path}.all[${i}]`))
    f.any?.forEach((c, i) => visit(c, `${path}.any[${i}]`))
    if (f.not) visit(f.not, `${path}.not`)
  }
  spec.filters?.forEach((f, i) => visit(f, `filters[${i}]`))
  return out
}

function evalAll(filters: SubscriptionsFilter[], event: KEvent): Verdict {
  let any = false
  for (const f of filters) {
    const v = evalOne(f, event)
    if (v === 'fail') return 'fail'
    if (v === 'pass') any = true
  }
  return any ? 'pass' : 'skip'
}

function evalOne(f: SubscriptionsFilter, event: KEvent): Verdict {
  if (f.cesql !== undefined) return 'fail'
  if (f.exact) return compare(f.exact, event, (have, want) => have === want)
  if (f.prefix) return compare(f.prefix, event, (have, want) => have.startsWith(want))
  if (f.suffix) return compare(f.suffix, event, (have, want) => have.endsWith(want))
  if (f.all) return evalAll(f.all, event)
  if (f.any) {
    let skipped = true
    for (const c of f.any) {
      const v = evalOne(c, event)
      if (v === 'pass') return 'pass'
      if (v === 'fail') skipped = false
    }
    return skipped ? 'skip' : 'fail'
  }
  if (f.not) {
    const v = evalOne(f.not, event)
    return v === 'skip' ? 'skip' : v === 'pass' ? 'fail' : 'pass'
  }
  return 'skip'
}

function compare(entries: Record<string, unknown>, event: KEvent, test: (have: string, want: string) => boolean): Verdict {
  let any = false
  for (const [key, raw] of Object.entries(entries)) {
    if (key === '' || raw === '' || raw === undefined || raw === null) continue
    any = true
    const have = attributeOf(event, key)
    if (have === undefined || !test(have, String(raw))) return 'fail'
  }
  return any ? 'pass' : 'skip'
}
