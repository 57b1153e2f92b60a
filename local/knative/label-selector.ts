/** A metav1.LabelSelector. */
export interface LabelSelector {
  matchLabels?: Record<string, string>
  matchExpressions?: Array<{ key: string; operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist'; values?: string[] }>
}

/** The `labelSelector` query string form of a LabelSelector; empty for an empty selector. */
export function selectorQuery(selector: LabelSelector | undefined): string {
  if (!selector) return ''
  const parts: string[] = []
  for (const [k, v] of Object.entries(selector.matchLabels ?? {})) parts.push(`${k}=${v}`)
  for (const e of selector.matchExpressions ?? []) {
    const values = (e.values ?? []).join(',')
    if (e.operator === 'In') parts.push(`${e.key} in (${values})`)
    else if (e.operator === 'NotIn') parts.push(`${e.key} notin (${values})`)
    else if (e.operator === 'Exists') parts.push(e.key)
    else if (e.operator === 'DoesNotExist') parts.push(`!${e.key}`)
    else throw new Error(`Unknown label selector operator ${String((e as { operator: unknown }).operator)}`)
  }
  return parts.join(',')
}

/** True when `labels` satisfy the selector; an empty selector matches everything. */
export function selectorMatches(selector: LabelSelector, labels: Record<string, string> | undefined): boolean {
  const l = labels ?? {}
  for (const [k, v] of Object.entries(selector.matchLabels ?? {})) if (l[k] !== v) return false
  for (const e of selector.matchExpressions ?? []) {
    const has = Object.hasOwn(l, e.key)
    const value = l[e.key]
    if (e.operator === 'In' && !(has && (e.values ?? []).includes(value as string))) return false
    if (e.operator === 'NotIn' && has && (e.values ?? []).includes(value as string)) return false
    if (e.operator === 'Exists' && !has) return false
    if (e.operator === 'DoesNotExist' && has) return false
  }
  return true
}

/** True for `{}` (or a selector with no requirements): Knative reads that as "all namespaces". */
export function isEmptySelector(selector: LabelSelector): boolean {
  return Object.keys(selector.matchLabels ?? {}).length === 0 && (selector.matchExpressions ?? []).length === 0
}
