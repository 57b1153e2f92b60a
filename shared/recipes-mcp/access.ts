/**
 * The SubjectAccessReviews each tool asks for its caller (spec §14.2), checked before the
 * tool reads or writes anything as the function's own ServiceAccount. Pure.
 */
import type { AccessAttributes } from '../kube/port.js'
import { API_GROUP } from '../schemas/labels.js'

const RECIPES = { group: API_GROUP, resource: 'workflowrecipes' } as const

/** `list` in the namespace, cluster-wide when omitted. */
export function listAccess(namespace: string | undefined): AccessAttributes[] {
  return [{ verb: 'list', ...RECIPES, ...(namespace ? { namespace } : {}) }]
}

/** `get` on the recipe (get-recipe, get-recipe-status). */
export function getAccess(namespace: string, name: string): AccessAttributes[] {
  return [{ verb: 'get', ...RECIPES, namespace, name }]
}

/** `delete` on the recipe, and `patch` too when orphaning (the annotation is a patch). */
export function deleteAccess(namespace: string, name: string, orphan: boolean): AccessAttributes[] {
  return [
    { verb: 'delete', ...RECIPES, namespace, name },
    ...(orphan ? [{ verb: 'patch', ...RECIPES, namespace, name }] : []),
  ]
}

/** `get` on the template, asked before the template is read (so its existence is not told to whoever may not see it). */
export function templateAccess(namespace: string, name: string): AccessAttributes[] {
  return [{ verb: 'get', ...RECIPES, namespace, name }]
}

/**
 * `create` (new) or `update` (existing) on the recipe, and `get` on every Secret the resulting
 * spec names (`envSecret` of workloads and tests, `mcp.tokenSecret`): the same rule the
 * admission policy applies to people (spec §12), since the write reaches the API server as the
 * function's ServiceAccount.
 */
export function deployAccess(namespace: string, name: string, exists: boolean, spec: unknown): AccessAttributes[] {
  return [
    { verb: exists ? 'update' : 'create', ...RECIPES, namespace, name },
    ...secretNamesOf(spec).map((secret) => ({ verb: 'get', group: '', resource: 'secrets', namespace, name: secret })),
  ]
}

/** Pure: the Secret names a (possibly invalid) spec refers to, sorted, each once. */
export function secretNamesOf(spec: unknown): string[] {
  const names = new Set<string>()
  const s = asObject(spec)
  const envSecrets = (owner: unknown) => {
    for (const e of asArray(asObject(owner).envSecret)) {
      const n = asObject(e).secretName
      if (typeof n === 'string' && n !== '') names.add(n)
    }
  }
  for (const w of asArray(s.workloads)) {
    envSecrets(w)
    const token = asObject(asObject(asObject(w).mcp).tokenSecret).secretName
    if (typeof token === 'string' && token !== '') names.add(token)
  }
  for (const t of asArray(s.tests)) envSecrets(t)
  return [...names].sort()
}

function asObject(v: unknown): Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? v as Record<string, unknown> : {}
}

function asArray(v: unknown): unknown[] {
  return Array.isArray(v) ? v : []
}
