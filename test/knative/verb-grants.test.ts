// Each function's RBAC, derived from the port verbs it declares (functions/<name>/kube-verbs.ts):
// what those verbs need (shared/kube/verb-grants.ts) is granted to its ServiceAccount, and every
// cluster-wide right its ClusterRoles hold is needed by a verb of a function bound to them, or
// allowed below for a reason the port does not show.
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import type { ChildUse } from '../../shared/kube/child-uses.js'
import type { Kube } from '../../shared/kube/port.js'
import { grantsNeededBy, VERB_GRANTS, type Grant } from '../../shared/kube/verb-grants.js'
import { functionNames, loadManifests, ofKind, ROOT, type Manifest } from './manifests.js'

const manifests = loadManifests()
const RBAC = 'rbac.authorization.k8s.io/v1'
const clusterRoles = ofKind(manifests, RBAC, 'ClusterRole')
const roles = ofKind(manifests, RBAC, 'Role')
const clusterBindings = ofKind(manifests, RBAC, 'ClusterRoleBinding')
const roleBindings = ofKind(manifests, RBAC, 'RoleBinding')

/** What a function declares: its port verbs, and the kinds it passes to which generic child verb. */
interface Declared { KUBE_VERBS: readonly (keyof Kube)[]; KUBE_CHILD_USES: readonly ChildUse[] }

const declared = new Map<string, Declared>()
for (const fn of functionNames()) {
  if (existsSync(join(ROOT, 'functions', fn, 'kube-verbs.ts'))) declared.set(fn, await import(`../../functions/${fn}/kube-verbs.ts`) as Declared)
}

/**
 * Rights held that no port verb asks for, each for a reason the port cannot express. Keyed by
 * role name, as `<group>/<resource> <verb>`.
 */
const ALLOWED_UNUSED: Record<string, Record<string, string>> = {
  ...Object.fromEntries(['kinetic-workflow-changed', 'kinetic-step-job-finished', 'kinetic-resync-tick'].map((role) => [role, {
    'purko.io/workflows/finalizers update': 'Step Jobs and outputs ConfigMaps are owned by their Workflow with blockOwnerDeletion (OwnerReferencesPermissionEnforcement).',
  }])),
  'kinetic-agent-changed': {
    'purko.io/agents/finalizers update': 'The identity objects are owned by their Agent with blockOwnerDeletion.',
  },
  'kinetic-mcpserver-changed': {
    'purko.io/mcpservers/finalizers update': 'The workload is owned by its MCPServer with blockOwnerDeletion.',
  },
  'kinetic-recipes': {
    'purko.io/workflowrecipes/finalizers update': 'Children are owned by their recipe with blockOwnerDeletion.',
  },
  // Bound per namespace. RBAC lets an account grant only what it holds itself (escalation check).
  'kinetic-agent-identities': {
    '/configmaps get': 'Each Agent\'s Role grants it; agent-changed must hold what it grants.',
    '/configmaps list': 'The same.',
  },
  'kinetic-mcp-workloads': {
    'rbac.authorization.k8s.io/clusterroles bind': 'The stdio bridge\'s RoleBinding names the ClusterRole kinetic-mcp-bridge, which mcpserver-changed does not hold.',
  },
  'kinetic-run-control': {
    'purko.io/workflows approve': 'The admission policies let only holders of approve write a decision; run-control checks its caller\'s approve first.',
    'purko.io/agents approve': 'The same, for promotion approvals.',
  },
}

/**
 * What the console's verbs need that its opt-in reader does not grant visitors nobody identified,
 * each with the reason (`<group>/<resource> <verb>`).
 */
const READER_WITHHOLDS: Record<string, string> = {
  '/configmaps get': 'A step\'s output ConfigMap: outputs show only to people who may read ConfigMaps; the step page says so.',
  'authorization.k8s.io/selfsubjectaccessreviews create': 'Every authenticated account may ask about itself (system:basic-user).',
  'authentication.k8s.io/selfsubjectreviews create': 'The same.',
}

/**
 * The functions whose RBAC is checked: all that declare their verbs but the console, whose
 * requests carry a person's rights; its own account's roles are opt-in components (reads for
 * visitors nobody identified, impersonation behind a proxy), which the cluster tier checks page
 * by page.
 */
const checked = () => [...declared.keys()].filter((fn) => fn !== 'console')

const key = (g: { group: string; resource: string; verb: string }) => `${g.group}/${g.resource} ${g.verb}`

interface Rule { apiGroups: string[]; resources: string[]; verbs: string[]; resourceNames?: string[] }
function rightsOf(role: Manifest): string[] {
  return (role.doc.rules as Rule[]).flatMap((r) => r.apiGroups.flatMap((group) => r.resources.flatMap((resource) => r.verbs.map((verb) => key({ group, resource, verb })))))
}

const boundTo = (binding: Manifest, fn: string) =>
  (binding.doc.subjects as Array<{ kind: string; name: string; namespace?: string }>).some((s) => s.kind === 'ServiceAccount' && s.name === fn && s.namespace === 'kinetic-system')

/** The ClusterRoles bound to `fn` cluster-wide. */
const clusterRolesOf = (fn: string) => clusterBindings.filter((b) => boundTo(b, fn)).map((b) => clusterRoles.find((r) => r.name === b.doc.roleRef.name)!)

/** Every right `fn` holds anywhere: cluster-wide, and in the namespaces its RoleBindings name (a Role there, or a ClusterRole). */
function rightsHeldBy(fn: string): Set<string> {
  const held = clusterRolesOf(fn).flatMap(rightsOf)
  for (const b of roleBindings.filter((rb) => boundTo(rb, fn))) {
    const role = b.doc.roleRef.kind === 'Role'
      ? roles.find((r) => r.name === b.doc.roleRef.name && r.namespace === b.namespace)
      : clusterRoles.find((r) => r.name === b.doc.roleRef.name)
    if (role) held.push(...rightsOf(role))
  }
  return new Set(held)
}

/** What `fn`'s declared verbs need, each right with the verbs that need it. */
function neededBy(fn: string): Map<string, Array<keyof Kube>> {
  const { KUBE_VERBS, KUBE_CHILD_USES } = declared.get(fn)!
  const needed = new Map<string, Array<keyof Kube>>()
  for (const verb of KUBE_VERBS) {
    for (const grant of grantsNeededBy([verb], KUBE_CHILD_USES)) needed.set(key(grant), [...new Set([...(needed.get(key(grant)) ?? []), verb])])
  }
  return needed
}

/** The Roles, and ClusterRoles bound only by RoleBindings, that RoleBindings give to functions that declare their verbs. */
function namespacedRolesOfFunctions(): Array<[string, Manifest, string[]]> {
  const found = new Map<string, [string, Manifest, Set<string>]>()
  for (const b of roleBindings) {
    const functions = checked().filter((fn) => boundTo(b, fn))
    if (functions.length === 0) continue
    const role = b.doc.roleRef.kind === 'Role'
      ? roles.find((r) => r.name === b.doc.roleRef.name && r.namespace === b.namespace)
      : clusterRoles.find((r) => r.name === b.doc.roleRef.name)
    if (!role) continue
    const label = b.doc.roleRef.kind === 'Role' ? `Role ${role.namespace}/${role.name}` : `ClusterRole ${role.name}`
    const entry = found.get(label) ?? [label, role, new Set<string>()]
    for (const fn of functions) entry[2].add(fn)
    found.set(label, entry)
  }
  return [...found.values()].map(([label, role, fns]) => [label, role, [...fns].sort()])
}

describe('RBAC derived from the port verbs each function declares', () => {
  it('every function that holds a role declares its port verbs', () => {
    const bound = functionNames().filter((fn) => [...clusterBindings, ...roleBindings].some((b) => boundTo(b, fn)))
    expect(bound.filter((fn) => !declared.has(fn))).toEqual([])
  })

  it('every port verb says what it needs, on resources its client names', () => {
    for (const [verb, grants] of Object.entries(VERB_GRANTS) as Array<[keyof Kube, readonly Grant[]]>) {
      expect(grants.length, verb).toBeGreaterThan(0)
      for (const g of grants) expect(g.resource, verb).toMatch(/^[a-z]+(\/[a-z]+)?$/)
    }
  })

  it.each([...declared.keys()])('%s passes child kinds only to child verbs it declares', (fn) => {
    const { KUBE_VERBS, KUBE_CHILD_USES } = declared.get(fn)!
    expect(KUBE_CHILD_USES.filter((use) => !KUBE_VERBS.includes(use.split(':')[0] as keyof Kube))).toEqual([])
  })

  it.each(checked())('%s holds every right its declared verbs need', (fn) => {
    const held = rightsHeldBy(fn)
    const missing = [...neededBy(fn)].filter(([right]) => !held.has(right)).map(([right, verbs]) => `${fn}: ${verbs.join(', ')} needs ${right}, which none of its roles grants`)
    expect(missing).toEqual([])
  })

  it.each(clusterRoles.filter((r) => clusterBindings.some((b) => b.doc.roleRef.name === r.name && checked().some((fn) => boundTo(b, fn))))
    .map((r) => [r.name, r] as const))('%s holds nothing cluster-wide that no verb of a function bound to it needs', (name, role) => {
    const functions = checked().filter((fn) => clusterBindings.some((b) => b.doc.roleRef.name === name && boundTo(b, fn)))
    const needed = new Set(functions.flatMap((fn) => [...neededBy(fn).keys()]))
    const allowed = ALLOWED_UNUSED[name] ?? {}
    const extra = [...new Set(rightsOf(role))].filter((right) => !needed.has(right) && !(right in allowed))
      .map((right) => `${name} (bound to ${functions.join(', ')}) grants ${right}, which no declared verb needs`)
    expect(extra).toEqual([])
  })

  it.each(namespacedRolesOfFunctions())('%s (bound per namespace) holds nothing that no verb of a function bound to it needs', (name, role, functions) => {
    const needed = new Set(functions.flatMap((fn) => [...neededBy(fn).keys()]))
    const allowed = ALLOWED_UNUSED[role.name] ?? {}
    const extra = [...new Set(rightsOf(role))].filter((right) => !needed.has(right) && !(right in allowed))
      .map((right) => `${name} (bound to ${functions.join(', ')}) grants ${right}, which no declared verb needs`)
    expect(extra).toEqual([])
  })

  it('the opt-in reader for anonymous visitors (kinetic-console-reader) grants what the console\'s verbs need, but what it withholds, and nothing else', () => {
    const reader = clusterRoles.find((r) => r.name === 'kinetic-console-reader')!
    const granted = [...new Set(rightsOf(reader))].sort()
    const needed = [...neededBy('console').keys()].filter((right) => !(right in READER_WITHHOLDS)).sort()
    expect(granted).toEqual(needed)
    for (const right of Object.keys(READER_WITHHOLDS)) expect(neededBy('console').has(right), right).toBe(true)
  })

  it('every allowance is still granted, so none outlives its reason', () => {
    for (const [name, allowed] of Object.entries(ALLOWED_UNUSED)) {
      const rights = new Set([...clusterRoles, ...roles].filter((r) => r.name === name).flatMap(rightsOf))
      for (const right of Object.keys(allowed)) expect(rights.has(right), `${name} ${right}`).toBe(true)
    }
  })
})
