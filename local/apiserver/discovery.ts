import { standardVerbs } from './builtin-resources.js'
import type { ResourceRegistry } from './resource-registry.js'
import { REVIEW_RESOURCES } from './reviews.js'
import { apiVersionOf, type ResourceType } from './resource-type.js'

/** The Kubernetes version this server reports at /version and in OpenAPI documents. */
export const SERVER_VERSION = { major: '1', minor: '32', gitVersion: 'v1.32.0-kinetic' }

function versionRank(v: string): [number, number, number] {
  const m = /^v(\d+)(?:(alpha|beta)(\d+))?$/.exec(v)
  if (!m) return [0, 0, 0]
  const stability = m[2] === 'alpha' ? 1 : m[2] === 'beta' ? 2 : 3
  return [stability, Number(m[1]), Number(m[3] ?? 0)]
}

/** Sorts versions by Kubernetes version priority: GA before beta before alpha, newest first. */
export function byVersionPriority(a: string, b: string): number {
  const ra = versionRank(a)
  const rb = versionRank(b)
  for (let i = 0; i < 3; i++) if (ra[i] !== rb[i]) return (rb[i] as number) - (ra[i] as number)
  return a < b ? -1 : a > b ? 1 : 0
}

/** GET /api */
export function apiVersions(serverAddress: string): object {
  return { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress }] }
}

/** A custom resource's verbs, in the order kube-apiserver lists them (`kubectl api-resources -o wide` shows it). */
const CUSTOM_RESOURCE_VERBS = ['delete', 'deletecollection', 'get', 'list', 'patch', 'create', 'update', 'watch']

function resourceEntries(rt: ResourceType): object[] {
  const main: Record<string, unknown> = {
    name: rt.plural,
    singularName: rt.singular,
    namespaced: rt.namespaced,
    kind: rt.kind,
    verbs: rt.crdName ? CUSTOM_RESOURCE_VERBS : standardVerbs,
  }
  if (rt.shortNames.length) main.shortNames = rt.shortNames
  if (rt.categories.length) main.categories = rt.categories
  const out: object[] = [main]
  if (rt.statusSubresource) out.push({ name: `${rt.plural}/status`, singularName: '', namespaced: rt.namespaced, kind: rt.kind, verbs: ['get', 'patch', 'update'] })
  for (const sub of rt.extraSubresources) out.push({ name: `${rt.plural}/${sub}`, singularName: '', namespaced: rt.namespaced, kind: rt.kind, verbs: ['get'] })
  return out
}

/** GET /api/v1 or /apis/<group>/<version>; undefined when nothing is served there. */
export function resourceList(registry: ResourceRegistry, group: string, version: string): object | undefined {
  const rts = registry.all().filter((rt) => rt.group === group && rt.versions.includes(version))
  const reviews = REVIEW_RESOURCES.filter((r) => r.group === group && r.version === version)
    .map((r) => ({ name: r.plural, singularName: r.singular, namespaced: false, kind: r.kind, verbs: ['create'] }))
  if (!rts.length && !reviews.length && !(group === '' && version === 'v1')) return undefined
  return { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: apiVersionOf(group, version), resources: [...rts.flatMap(resourceEntries), ...reviews] }
}

function groupVersions(registry: ResourceRegistry): Map<string, string[]> {
  const groups = new Map<string, Set<string>>()
  for (const rt of registry.all()) {
    if (!rt.group) continue
    let set = groups.get(rt.group)
    if (!set) groups.set(rt.group, (set = new Set()))
    for (const v of rt.versions) set.add(v)
  }
  return new Map([...groups].map(([g, vs]) => [g, [...vs].sort(byVersionPriority)]))
}

function groupEntry(name: string, versions: string[]): object {
  const list = versions.map((version) => ({ groupVersion: `${name}/${version}`, version }))
  return { name, versions: list, preferredVersion: list[0] }
}

/** The stored kinds' groups plus the self reviews' (which store nothing and have no OpenAPI document). */
function discoveredGroups(registry: ResourceRegistry): Map<string, string[]> {
  const groups = groupVersions(registry)
  for (const r of REVIEW_RESOURCES) if (!groups.has(r.group)) groups.set(r.group, [r.version])
  return groups
}

/** GET /apis */
export function groupList(registry: ResourceRegistry): object {
  return { kind: 'APIGroupList', apiVersion: 'v1', groups: [...discoveredGroups(registry)].map(([g, vs]) => groupEntry(g, vs)) }
}

/** GET /apis/<group>; undefined for an unknown group. */
export function apiGroup(registry: ResourceRegistry, group: string): object | undefined {
  const versions = discoveredGroups(registry).get(group)
  return versions ? { kind: 'APIGroup', apiVersion: 'v1', ...groupEntry(group, versions) } : undefined
}

/** Every served group/version pair, the core group first, for the OpenAPI v3 index. */
export function servedGroupVersions(registry: ResourceRegistry): { group: string; version: string }[] {
  const out = [{ group: '', version: 'v1' }]
  for (const [g, vs] of groupVersions(registry)) for (const v of vs) out.push({ group: g, version: v })
  return out
}
