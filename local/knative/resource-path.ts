/**
 * Knative's guess of a kind's resource name (apimachinery's UnsafeGuessKindToResource):
 * lowercase, then `s` -> `ses`, `y` -> `ies`, `...endpoints` unchanged, else add `s`.
 */
export function guessPlural(kind: string): string {
  const lower = kind.toLowerCase()
  if (lower.length === 0) return lower
  if (lower.endsWith('endpoints')) return lower
  if (lower.endsWith('s')) return `${lower}es`
  if (lower.endsWith('y')) return `${lower.slice(0, -1)}ies`
  return `${lower}s`
}

/**
 * The ApiServerSource `subject`: `/apis/<apiVersion>/namespaces/<ns>/<guessed plural>/<name>`,
 * with `/apis/v1` for the core group and an empty namespace segment for cluster-scoped objects.
 */
export function subjectFor(apiVersion: string, kind: string, namespace: string, name: string): string {
  return `/apis/${apiVersion}/namespaces/${namespace}/${guessPlural(kind)}/${name}`
}

/**
 * The REST collection path the adapter lists and watches, built from the guessed plural as
 * Knative does (a CRD with an irregular plural is therefore not found, like on a cluster).
 */
export function collectionPath(apiVersion: string, kind: string, namespace: string | undefined): string {
  const base = apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`
  const ns = namespace ? `/namespaces/${encodeURIComponent(namespace)}` : ''
  return `${base}${ns}/${guessPlural(kind)}`
}
