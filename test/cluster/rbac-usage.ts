import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { LocalPlane } from '../../local/plane.js'
import type { AuditEvent, ControlPlane } from '../../cluster/control-plane.js'

/** One permission as RBAC sees it: a verb on a resource (or subresource) of an API group. */
export interface Permission {
  verb: string
  group: string
  resource: string
  subresource: string
}

/** What the recorded run says about each Kinetic ServiceAccount's permissions. */
export interface RbacUsage {
  /** Per username, the permissions its requests needed (sorted, distinct). */
  used: Map<string, Permission[]>
  /** Requests answered 403, as `<user> <verb> <uri>`. */
  forbidden: string[]
  /** Requests answered with another 4xx or a 5xx (404 and 409, absent objects and lost races, are normal), as `<user> <verb> <uri> <code>`. */
  failed: string[]
  /** Used permissions a SubjectAccessReview does not allow, as `<user> <permission> in <namespace>`. */
  notAllowed: string[]
  /** Per username, what its ClusterRoles grant that no request used. */
  unused: Map<string, Permission[]>
  /** A printable summary of all of the above. */
  report: string
}

const PREFIX = 'system:serviceaccount:'

// Completed requests, plus watches that are still open (their record so far is ResponseStarted).
function auditRecords(cp: ControlPlane): AuditEvent[] {
  const file = join(cp.dir, 'audit.log')
  if (!existsSync(file)) return []
  const all = readFileSync(file, 'utf8').split('\n').filter((l) => l.length > 0).map((l) => JSON.parse(l) as AuditEvent & { auditID: string })
  const done = new Set(all.filter((e) => e.stage === 'ResponseComplete').map((e) => e.auditID))
  return all.filter((e) => e.stage === 'ResponseComplete' || (e.stage === 'ResponseStarted' && e.verb === 'watch' && !done.has(e.auditID)))
}

/** `get purko.io/workflows/status`, with `core` for the "" group. */
export function describePermission(p: Permission): string {
  return `${p.verb} ${p.group || 'core'}/${p.resource}${p.subresource ? `/${p.subresource}` : ''}`
}

/**
 * Pure: the permissions each user's requests needed, from audit records (non-resource
 * requests, which RBAC checks by path, are left out), and the namespaces they were used in.
 */
export function permissionsFromAudit(events: AuditEvent[], users: ReadonlySet<string>): Map<string, Map<string, UsedPermission>> {
  const out = new Map<string, Map<string, UsedPermission>>()
  for (const e of events) {
    if (!users.has(e.user.username) || !e.objectRef?.resource) continue
    const permission: Permission = {
      verb: e.verb, group: e.objectRef.apiGroup ?? '', resource: e.objectRef.resource, subresource: e.objectRef.subresource ?? '',
    }
    const key = describePermission(permission)
    let perUser = out.get(e.user.username)
    if (!perUser) out.set(e.user.username, (perUser = new Map()))
    const entry = perUser.get(key) ?? { permission, namespaces: new Set<string>(), names: new Map<string, Set<string>>() }
    const namespace = e.objectRef.namespace ?? ''
    entry.namespaces.add(namespace)
    if (e.objectRef.name) {
      const names = entry.names.get(namespace) ?? new Set<string>()
      names.add(e.objectRef.name)
      entry.names.set(namespace, names)
    }
    perUser.set(key, entry)
  }
  return out
}

/** A permission some requests needed, where, and (per namespace) which named objects they touched. */
interface UsedPermission {
  permission: Permission
  namespaces: Set<string>
  names: Map<string, Set<string>>
}

type Rule = { apiGroups?: string[]; resources?: string[]; verbs?: string[] }

/**
 * Checked at admission rather than requested, so absent from the audit log: creating an object
 * whose ownerReference sets blockOwnerDeletion needs update on the owner's finalizers (the
 * OwnerReferencesPermissionEnforcement plugin). Kinetic's children are owned by Workflows.
 */
const OWNED_CHILDREN = new Set(['batch/jobs', '/configmaps', '/secrets'])
const OWNER_FINALIZERS: Permission = { verb: 'update', group: 'purko.io', resource: 'workflows', subresource: 'finalizers' }

/**
 * Reads the audit log of the control plane the plane ran against and checks every permission
 * the ServiceAccounts of knative/ (functions and sources) used: no request may have been
 * refused, and a SubjectAccessReview (as the admin) must allow each, in each namespace it was
 * used in; update on workflows/finalizers counts as used by whoever created an owned child.
 * Also lists what their ClusterRoles grant that went unused.
 */
export async function rbacUsage(cp: ControlPlane, plane: LocalPlane): Promise<RbacUsage> {
  const admin = cp.admin
  const namespace = [...plane.functions.values()].find((f) => f.identity)?.identity?.split(':')[2] ?? 'kinetic-system'
  const events = auditRecords(cp)
  const users = new Set(events.map((e) => e.user.username).filter((u) => u.startsWith(`${PREFIX}${namespace}:`)))
  for (const fn of plane.functions.values()) if (fn.identity) users.add(fn.identity)
  const forbidden = events
    .filter((e) => users.has(e.user.username) && e.responseStatus?.code === 403)
    .map((e) => `${e.user.username} ${e.verb} ${e.requestURI}`)
  // kube-apiserver v1.34 answers a list or watch of a resource whose watch cache is still
  // initializing (just after its CRD is established) with 429 and Retry-After; the sources retry.
  const cacheWarmingUp = (e: AuditEvent) => e.responseStatus?.code === 429 && (e.verb === 'list' || e.verb === 'watch')
  const failed = events
    .filter((e) => users.has(e.user.username) && (e.responseStatus?.code ?? 0) >= 400 && ![403, 404, 409].includes(e.responseStatus?.code ?? 0) && !cacheWarmingUp(e))
    .map((e) => `${e.user.username} ${e.verb} ${e.requestURI} ${e.responseStatus?.code}`)
  const perUser = permissionsFromAudit(events, users)
  const implied = new Set<string>()
  for (const [user, perms] of perUser) {
    const namespaces = new Set<string>()
    for (const { permission: p, namespaces: ns } of perms.values()) {
      if (p.verb === 'create' && OWNED_CHILDREN.has(`${p.group}/${p.resource}`)) for (const n of ns) namespaces.add(n)
    }
    if (namespaces.size === 0) continue
    perms.set(describePermission(OWNER_FINALIZERS), { permission: OWNER_FINALIZERS, namespaces, names: new Map() })
    implied.add(`${user} ${describePermission(OWNER_FINALIZERS)}`)
  }

  const notAllowed: string[] = []
  const checks: Array<Promise<void>> = []
  for (const [user, perms] of perUser) {
    const sa = user.slice(PREFIX.length).split(':') as [string, string]
    const groups = ['system:serviceaccounts', `system:serviceaccounts:${sa[0]}`, 'system:authenticated']
    const allowedFor = async (p: Permission, ns: string, name?: string): Promise<boolean> => {
      const review = await admin.request<{ status?: { allowed?: boolean; reason?: string } }>('POST', '/apis/authorization.k8s.io/v1/subjectaccessreviews', {
        apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview',
        spec: { user, groups, resourceAttributes: { namespace: ns, verb: p.verb, group: p.group, resource: p.resource, subresource: p.subresource, ...(name ? { name } : {}) } },
      })
      return review.status?.allowed === true
    }
    for (const { permission: p, namespaces, names } of perms.values()) {
      for (const ns of namespaces) {
        checks.push((async () => {
          if (await allowedFor(p, ns)) return
          // A grant scoped by resourceNames allows only the named objects: check each one used.
          const touched = [...(names.get(ns) ?? [])]
          const refused = touched.length === 0 ? [''] : (await Promise.all(touched.map(async (n) => ((await allowedFor(p, ns, n)) ? null : n)))).filter((n) => n !== null)
          for (const n of refused) notAllowed.push(`${user} ${describePermission(p)}${n ? ` ${n}` : ''} in ${ns || '(all namespaces)'}`)
        })())
      }
    }
  }
  await Promise.all(checks)

  const bindings = await admin.request<{ items: Array<{ roleRef: { kind: string; name: string }; subjects?: Array<{ kind: string; name: string; namespace?: string }> }> }>('GET', '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings')
  const unused = new Map<string, Permission[]>()
  const used = new Map<string, Permission[]>()
  for (const user of [...users].sort()) {
    const [ns, name] = user.slice(PREFIX.length).split(':') as [string, string]
    const mine = perUser.get(user) ?? new Map()
    used.set(user, [...mine.values()].map((v) => v.permission).sort((a, b) => describePermission(a).localeCompare(describePermission(b))))
    const granted: Permission[] = []
    for (const b of bindings.items) {
      if (b.roleRef.kind !== 'ClusterRole' || !b.subjects?.some((s) => s.kind === 'ServiceAccount' && s.name === name && s.namespace === ns)) continue
      const role = await admin.get<{ rules?: Rule[] }>(`/apis/rbac.authorization.k8s.io/v1/clusterroles/${b.roleRef.name}`)
      for (const rule of role?.rules ?? []) {
        for (const group of rule.apiGroups ?? []) for (const res of rule.resources ?? []) for (const verb of rule.verbs ?? []) {
          const [resource, subresource = ''] = res.split('/') as [string, string?]
          granted.push({ verb, group, resource, subresource })
        }
      }
    }
    unused.set(user, granted.filter((g) => !mine.has(describePermission(g))))
  }

  const lines = ['RBAC of the ServiceAccounts of knative/ in this run (audit log; every used permission checked with SubjectAccessReview):']
  for (const user of [...users].sort()) {
    lines.push(`  ${user.slice(PREFIX.length)}`)
    const shown = (used.get(user) ?? []).map((p) => `${describePermission(p)}${implied.has(`${user} ${describePermission(p)}`) ? ' (at admission, for blockOwnerDeletion)' : ''}`)
    lines.push(`    used:               ${shown.join(', ') || '(no API requests)'}`)
    lines.push(`    granted but unused: ${(unused.get(user) ?? []).map(describePermission).join(', ') || '(none)'}`)
  }
  if (forbidden.length > 0) lines.push(`  refused (403): ${forbidden.join('; ')}`)
  if (failed.length > 0) lines.push(`  failed: ${failed.join('; ')}`)
  if (notAllowed.length > 0) lines.push(`  not allowed by SubjectAccessReview: ${notAllowed.join('; ')}`)
  return { used, forbidden, failed, notAllowed, unused, report: lines.join('\n') }
}
