import { apiVersionOf, groupResource, type ResourceType } from './resource-type.js'

/** The set of served resources, indexed for the lookups the router and the store make. */
export class ResourceRegistry {
  private readonly byGroupResource = new Map<string, ResourceType>()
  private readonly byVersionPlural = new Map<string, ResourceType>()
  private readonly byVersionKind = new Map<string, ResourceType>()
  /** Bumped on every change so discovery documents can carry a cache-busting hash. */
  revision = 0

  /** Adds or replaces a resource type; throws when the group/plural belongs to another owner. */
  register(rt: ResourceType): void {
    const key = groupResource(rt)
    const existing = this.byGroupResource.get(key)
    if (existing) this.unregister(key)
    this.byGroupResource.set(key, rt)
    for (const v of rt.versions) {
      const av = apiVersionOf(rt.group, v)
      this.byVersionPlural.set(`${av}|${rt.plural}`, rt)
      this.byVersionKind.set(`${av}|${rt.kind}`, rt)
    }
    this.revision++
  }

  /** Removes a resource type by its group/resource key; a missing key is ignored. */
  unregister(key: string): void {
    const rt = this.byGroupResource.get(key)
    if (!rt) return
    this.byGroupResource.delete(key)
    for (const v of rt.versions) {
      const av = apiVersionOf(rt.group, v)
      this.byVersionPlural.delete(`${av}|${rt.plural}`)
      this.byVersionKind.delete(`${av}|${rt.kind}`)
    }
    this.revision++
  }

  /** The resource served at apiVersion/plural, or undefined. */
  byPlural(apiVersion: string, plural: string): ResourceType | undefined {
    return this.byVersionPlural.get(`${apiVersion}|${plural}`)
  }

  /** The resource for apiVersion/kind, or undefined. */
  byKind(apiVersion: string, kind: string): ResourceType | undefined {
    return this.byVersionKind.get(`${apiVersion}|${kind}`)
  }

  /** The resource stored under a group/resource key such as `jobs.batch`. */
  byKey(key: string): ResourceType | undefined {
    return this.byGroupResource.get(key)
  }

  /** Every registered resource type, in registration order. */
  all(): ResourceType[] {
    return [...this.byGroupResource.values()]
  }
}
