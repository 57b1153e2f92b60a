import type { V1Secret } from '@kubernetes/client-node'
import type { ChildKind, ChildObject } from '../kube/port.js'
import type { RecipeKube } from './kube-verbs.js'
import { objectKey, type LiveObject } from './plan/deploy-plan.js'
import { LABEL_COMPONENT, LABEL_RECIPE_UID } from './plan/labels.js'
import { parseSnapshot, type RevisionSnapshot } from './plan/rollback.js'

/** A child the planners may look at: where it is and what it is. */
export interface ChildRef { kind: string; namespace: string; name: string }

/** Reads at most this many objects at once: one reconcile must not flood the API server. */
const READ_CONCURRENCY = 8

/** A revision snapshot with the ConfigMap it came from. */
export interface StoredSnapshot {
  snapshot: RevisionSnapshot
  configMapName: string
  data: Record<string, string>
}

/** A revision ConfigMap as a snapshot, or why it is not one. */
export function storedSnapshotOf(cm: { metadata?: { name?: string; namespace?: string; labels?: Record<string, string> }; data?: Record<string, string> }): StoredSnapshot | { damaged: string } {
  const data = cm.data ?? {}
  const parsed = parseSnapshot({ metadata: { name: cm.metadata?.name ?? '', namespace: cm.metadata?.namespace ?? '', labels: cm.metadata?.labels ?? {} }, data })
  return parsed.ok ? { snapshot: parsed.snapshot, configMapName: cm.metadata?.name ?? '', data } : { damaged: parsed.message }
}

/**
 * The reads of one recipe reconcile, each made once: live children by key, namespaces, source
 * Secrets, Agents and the revision snapshots. Writes of this reconcile `forget` what they
 * changed, so the next planning pass reads it fresh.
 */
export class RecipeReads {
  readonly calls = { reads: 0 }
  private readonly live = new Map<string, ChildObject | null>()
  private readonly namespaces = new Map<string, Promise<{ terminating: boolean; labels: Record<string, string> } | null>>()
  private readonly secrets = new Map<string, Promise<V1Secret | null>>()
  private readonly agents = new Map<string, Promise<boolean>>()

  constructor(private readonly kube: RecipeKube, private readonly recipeNamespace: string) {}

  /** Fetches every ref not read yet (404 = absent). */
  async load(refs: readonly ChildRef[]): Promise<void> {
    const missing = refs.filter((r) => !this.live.has(objectKey(r.kind, r.namespace, r.name)))
    const unique = [...new Map(missing.map((r) => [objectKey(r.kind, r.namespace, r.name), r])).values()]
    for (let i = 0; i < unique.length; i += READ_CONCURRENCY) {
      await Promise.all(unique.slice(i, i + READ_CONCURRENCY).map(async (r) => {
        this.calls.reads++
        this.live.set(objectKey(r.kind, r.namespace, r.name), await this.kube.getChild(r.kind as ChildKind, r.namespace, r.name))
      }))
    }
  }

  /** Every live object read so far, by key. */
  liveObjects(): Map<string, LiveObject> {
    const out = new Map<string, LiveObject>()
    for (const [k, v] of this.live) if (v) out.set(k, v as LiveObject)
    return out
  }

  get(kind: string, namespace: string, name: string): ChildObject | undefined {
    return this.live.get(objectKey(kind, namespace, name)) ?? undefined
  }

  /** Records an object this reconcile wrote (the API server's answer) or removed. */
  remember(kind: string, namespace: string, name: string, object: ChildObject | null): void {
    this.live.set(objectKey(kind, namespace, name), object)
  }

  forget(kind: string, namespace: string, name: string): void {
    this.live.delete(objectKey(kind, namespace, name))
  }

  namespace(name: string): Promise<{ terminating: boolean; labels: Record<string, string> } | null> {
    let p = this.namespaces.get(name)
    if (!p) {
      this.calls.reads++
      p = this.kube.getNamespace(name).then((ns) => ns ? { terminating: ns.status?.phase === 'Terminating' || ns.metadata?.deletionTimestamp !== undefined, labels: ns.metadata?.labels ?? {} } : null)
      this.namespaces.set(name, p)
    }
    return p
  }

  /** A source Secret of the recipe's namespace (never logged; only its keys and values are copied). */
  secret(name: string): Promise<V1Secret | null> {
    let p = this.secrets.get(name)
    if (!p) {
      this.calls.reads++
      p = this.kube.getSecret(this.recipeNamespace, name)
      this.secrets.set(name, p)
    }
    return p
  }

  agent(name: string): Promise<boolean> {
    let p = this.agents.get(name)
    if (!p) {
      this.calls.reads++
      p = this.kube.getAgent(this.recipeNamespace, name).then((a) => a !== null)
      this.agents.set(name, p)
    }
    return p
  }

  /** The recipe's revision snapshots by revision; damaged ones are reported through `damaged`. */
  async snapshots(uid: string): Promise<{ byRevision: Map<number, StoredSnapshot>; damaged: string[] }> {
    this.calls.reads++
    const maps = await this.kube.listConfigMaps(this.recipeNamespace, { [LABEL_RECIPE_UID]: uid, [LABEL_COMPONENT]: 'revision' })
    const byRevision = new Map<number, StoredSnapshot>()
    const damaged: string[] = []
    for (const cm of maps) {
      const stored = storedSnapshotOf(cm)
      if ('damaged' in stored) damaged.push(stored.damaged)
      else byRevision.set(stored.snapshot.revision, stored)
    }
    return { byRevision, damaged }
  }
}
