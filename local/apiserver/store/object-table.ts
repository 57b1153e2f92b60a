import { deepEqual } from '../object-meta.js'
import { groupResource, type ResourceType } from '../resource-type.js'
import type { Selector } from '../selectors.js'
import type { KubeObject } from '../types.js'
import { LabelIndex } from './label-index.js'
import type { Stored } from './store-types.js'

/** Where an object is kept: its group-resource key (`jobs.batch`), namespace ('' if cluster-scoped) and name. */
export interface ObjectAddress {
  gr: string
  ns: string
  name: string
}

/**
 * The objects themselves, by group-resource, namespace and name, with the indexes kept beside
 * them: by uid, by owner uid (for the garbage collector) and by label (for lists). It holds no
 * resourceVersions and sends no events; the ledger does that around every change.
 */
export class ObjectTable {
  private readonly objects = new Map<string, Map<string, Map<string, Stored>>>()
  private readonly byUid = new Map<string, ObjectAddress>()
  /** Owner uid → the keys (`gr|ns|name`) of the objects whose ownerReferences name it. */
  private readonly dependents = new Map<string, Set<string>>()
  private readonly labels = new LabelIndex()

  /** The stored object of a resource type, or undefined. */
  find(rt: Pick<ResourceType, 'group' | 'plural'>, ns: string, name: string): Stored | undefined {
    return this.findByKey(groupResource(rt), ns, name)
  }

  /** The stored object under a group-resource key, or undefined. */
  findByKey(gr: string, ns: string, name: string): Stored | undefined {
    return this.objects.get(gr)?.get(ns)?.get(name)
  }

  /** A resource's objects, namespace → name → object; undefined when it never had any. */
  resource(gr: string): ReadonlyMap<string, ReadonlyMap<string, Stored>> | undefined {
    return this.objects.get(gr)
  }

  /** The names a resource has in a namespace, as a copy the caller may delete along. */
  namesIn(rt: Pick<ResourceType, 'group' | 'plural'>, ns: string): string[] {
    return [...(this.objects.get(groupResource(rt))?.get(ns)?.keys() ?? [])]
  }

  /** Whether a resource has anything left in a namespace. */
  hasAnyIn(rt: Pick<ResourceType, 'group' | 'plural'>, ns: string): boolean {
    return Boolean(this.objects.get(groupResource(rt))?.get(ns)?.size)
  }

  /** The names (by namespace) that can match a label selector; undefined when the whole resource must be scanned. */
  labelCandidates(gr: string, ns: string | undefined, label: Selector): Map<string, Iterable<string>> | undefined {
    return this.labels.candidates(gr, ns, label)
  }

  /** Stores an object (replacing `prev`) and brings the indexes up to date. */
  set(gr: string, ns: string, name: string, stored: Stored, prev: Stored | undefined): void {
    let byNs = this.objects.get(gr)
    if (!byNs) this.objects.set(gr, (byNs = new Map()))
    let byName = byNs.get(ns)
    if (!byName) byNs.set(ns, (byName = new Map()))
    byName.set(name, stored)
    const key = `${gr}|${ns}|${name}`
    if (prev) this.unindexOwners(key, prev.obj)
    this.indexOwners(key, stored.obj)
    if (!prev || !deepEqual(prev.obj.metadata.labels ?? {}, stored.obj.metadata.labels ?? {})) {
      if (prev) this.labels.remove(gr, ns, name, prev.obj.metadata.labels)
      this.labels.add(gr, ns, name, stored.obj.metadata.labels)
    }
    if (stored.obj.metadata.uid) this.byUid.set(stored.obj.metadata.uid, { gr, ns, name })
  }

  /** Removes an object (last stored as `prev`, known by `uid`) and its index entries. */
  delete(gr: string, ns: string, name: string, prev: Stored | undefined, uid: string | undefined): void {
    const byNs = this.objects.get(gr)
    const byName = byNs?.get(ns)
    byName?.delete(name)
    if (byName?.size === 0) byNs?.delete(ns)
    const key = `${gr}|${ns}|${name}`
    if (prev) this.unindexOwners(key, prev.obj)
    if (prev) this.labels.remove(gr, ns, name, prev.obj.metadata.labels)
    if (uid) this.byUid.delete(uid)
  }

  /** Forgets a whole resource: its objects and its label index (its CRD is gone). */
  dropResource(gr: string): void {
    this.objects.delete(gr)
    this.labels.drop(gr)
  }

  /** Where the object with this uid is, or undefined when none exists. */
  locate(uid: string): ObjectAddress | undefined {
    return this.byUid.get(uid)
  }

  /** Whether an object with this uid exists. */
  isLive(uid: string): boolean {
    return this.byUid.has(uid)
  }

  /** The keys of an owner's dependents, as a copy the caller may delete along. */
  dependentKeys(ownerUid: string): string[] {
    return [...(this.dependents.get(ownerUid) ?? [])]
  }

  /** The dependent a key from `dependentKeys` names, as it is now; undefined once it is gone. */
  dependent(key: string): (ObjectAddress & { stored: Stored }) | undefined {
    const [gr, ns, name] = key.split('|') as [string, string, string]
    const stored = this.findByKey(gr, ns, name)
    return stored ? { gr, ns, name, stored } : undefined
  }

  /** Drops an owner's entry from the owner index (its dependents have been dealt with). */
  forgetDependents(ownerUid: string): void {
    this.dependents.delete(ownerUid)
  }

  private indexOwners(key: string, obj: KubeObject): void {
    for (const ref of obj.metadata.ownerReferences ?? []) {
      if (!ref?.uid) continue
      let set = this.dependents.get(ref.uid)
      if (!set) this.dependents.set(ref.uid, (set = new Set()))
      set.add(key)
    }
  }

  private unindexOwners(key: string, obj: KubeObject): void {
    for (const ref of obj.metadata.ownerReferences ?? []) {
      const set = ref?.uid ? this.dependents.get(ref.uid) : undefined
      if (!set) continue
      set.delete(key)
      if (set.size === 0) this.dependents.delete(ref.uid)
    }
  }
}
