/**
 * Deletion of a recipe (spec §11). Pure: no I/O, no clock.
 *
 * 1. `purko.io/orphan: "true"` or `spec.deletionPolicy: Orphan`: remove the finalizer at once
 *    (Event `Orphaned`); children keep their labels.
 * 2. The inventory is built **without rendering anything**: the children recorded in the
 *    snapshots of the current, last good and in-flight revisions, plus objects of the kinds
 *    Kinetic creates that carry `purko.io/recipe-uid=<uid>` in the target namespaces (a crash
 *    before a snapshot write). Revision ConfigMaps go with the recipe (ownerReference);
 *    PersistentVolumeClaims are never in it (they follow `persistentVolumeClaimRetention`).
 * 3. Waves, each waiting until every object of it is gone (404) before the next: (a) test Jobs
 *    and the child Workflow; (b) MCPServers; (c) workloads in reverse order, the workload last
 *    in the order first, one at a time (a snapshot records the order, not `dependsOn`, so this
 *    is the safe reverse topological order), with `propagationPolicy: Foreground`; (d) Services
 *    and copied Secrets; then the finalizer is removed. A workload recorded in no snapshot
 *    (found by label only) goes first among the workloads.
 * 4. While waiting: `status.deletion.remaining` (≤ 32, `<Kind> <ns>/<name>`, in deletion order)
 *    and `status.deletion.blockedBy`, e.g.
 *    `Deployment sandbox-recipes/team-a-shop-web is terminating (finalizers: example.com/hold)`.
 *
 * An object under an inventory name without this recipe's UID is another owner's: it is never
 * deleted and does not hold the deletion up.
 */
import { LABEL_COMPONENT, LABEL_RECIPE_UID, LABEL_TEST, LABEL_WORKLOAD, type Component } from './labels.js'
import {
  entryKey, isKineticKind, isOwnedBy, isTerminating, liveObject, objectKey, terminatingMessage, WORKLOAD_KINDS,
  type InventoryEntry, type LiveObject, type LiveObjects, type PlannedDelete,
} from './deploy-plan.js'
import { snapshotInventory, type RevisionSnapshot } from './rollback.js'

export const ANNOTATION_ORPHAN = 'purko.io/orphan'
export const REMAINING_LIMIT = 32

export type DeletionWave = 'tests' | 'mcpservers' | 'workloads' | 'services'

export interface DeletionInput {
  uid: string
  annotations?: Record<string, string>
  deletionPolicy?: 'Delete' | 'Orphan'
  /** Snapshots of the current, last good and in-flight revisions (whichever exist). */
  snapshots: RevisionSnapshot[]
  /** Objects of the kinds Kinetic creates found by `purko.io/recipe-uid=<uid>` in the target namespaces. */
  labelled?: LiveObject[]
  /** The live state of every inventory object (absent = gone). */
  live: LiveObjects
  /** `status.deletion.remaining` of the previous reconcile (to report what is gone now). */
  previousRemaining?: readonly string[]
}

export type DeletionPlan =
  | { action: 'orphan'; removeFinalizer: true; event: { reason: 'Orphaned'; message: string } }
  | {
    action: 'delete'
    /** The wave being worked on (undefined when everything is gone). */
    wave?: DeletionWave
    /** Deletes to issue now. */
    deletes: PlannedDelete[]
    /** `status.deletion.remaining`: objects still present, in deletion order, ≤ 32. */
    remaining: string[]
    /** `status.deletion.blockedBy`. */
    blockedBy?: string
    /** Objects of the previous `remaining` that are gone now (`WorkloadDeleted`, `dev.kinetic.recipe.workload.deleted`). */
    deleted: InventoryEntry[]
    /** Every object is gone: remove the finalizer. */
    removeFinalizer: boolean
    /** `Ready=False` reason `Deleting` while children remain. */
    ready: { status: 'False'; reason: 'Deleting'; message: string }
  }

function waveOf(e: InventoryEntry): DeletionWave {
  if (e.component === 'test' || e.component === 'workflow' || e.kind === 'Workflow') return 'tests'
  if (e.kind === 'MCPServer') return 'mcpservers'
  if (WORKLOAD_KINDS.has(e.kind) && e.test === undefined) return 'workloads'
  return 'services'
}

const WAVES: DeletionWave[] = ['tests', 'mcpservers', 'workloads', 'services']

function labelledEntry(o: LiveObject, orders: Map<string, number>): InventoryEntry | undefined {
  const kind = o.kind ?? ''
  const name = o.metadata?.name
  const namespace = o.metadata?.namespace
  if (!isKineticKind(kind) || !name || !namespace) return undefined
  const labels = o.metadata?.labels ?? {}
  const component = (labels[LABEL_COMPONENT] as Component | undefined) ?? (kind === 'Secret' ? 'secret' : kind === 'Service' ? 'service' : kind === 'MCPServer' ? 'mcpserver' : kind === 'Workflow' ? 'workflow' : 'workload')
  const workload = labels[LABEL_WORKLOAD]
  const test = labels[LABEL_TEST]
  const e: InventoryEntry = { kind, namespace, name, component, order: workload !== undefined ? (orders.get(workload) ?? Number.MAX_SAFE_INTEGER) : Number.MAX_SAFE_INTEGER }
  if (workload !== undefined) e.workload = workload
  if (test !== undefined) e.test = test
  return e
}

/** spec §11 inventory: snapshot entries (newest snapshot first wins) plus objects found by label, each once. */
export function deletionInventory(uid: string, snapshots: RevisionSnapshot[], labelled: LiveObject[] = []): InventoryEntry[] {
  const out = new Map<string, InventoryEntry>()
  const orders = new Map<string, number>()
  for (const s of [...snapshots].sort((a, b) => b.revision - a.revision)) {
    for (const e of snapshotInventory(s)) {
      if (!isKineticKind(e.kind)) continue
      if (e.workload !== undefined && !orders.has(e.workload)) orders.set(e.workload, e.order)
      if (!out.has(entryKey(e))) out.set(entryKey(e), e)
    }
  }
  for (const o of labelled) {
    if (!isOwnedBy(o, uid)) continue
    const e = labelledEntry(o, orders)
    if (e && !out.has(entryKey(e))) out.set(entryKey(e), e)
  }
  return [...out.values()]
}

/** Deletion order: waves a-d; workloads by descending order, the objects of one workload in reverse write order. */
function deletionOrder(inventory: InventoryEntry[]): { wave: DeletionWave; group: number; entry: InventoryEntry }[] {
  const indexed = inventory.map((entry, i) => ({ entry, i, wave: waveOf(entry) }))
  indexed.sort((a, b) => WAVES.indexOf(a.wave) - WAVES.indexOf(b.wave)
    || (a.wave === 'workloads' ? b.entry.order - a.entry.order : 0)
    || b.i - a.i)
  return indexed.map(({ entry, wave }) => ({ wave, group: wave === 'workloads' ? entry.order : -1, entry }))
}

/** spec §11: what to do for a recipe being deleted (see the file header). */
export function planDeletion(input: DeletionInput): DeletionPlan {
  const orphanAnnotation = input.annotations?.[ANNOTATION_ORPHAN] === 'true'
  if (orphanAnnotation || input.deletionPolicy === 'Orphan') {
    const why = orphanAnnotation ? `${ANNOTATION_ORPHAN}: "true"` : 'deletionPolicy: Orphan'
    return { action: 'orphan', removeFinalizer: true, event: { reason: 'Orphaned', message: `finalizer removed without deleting children (${why}); they keep their labels (${LABEL_RECIPE_UID}=${input.uid})` } }
  }
  const inventory = deletionInventory(input.uid, input.snapshots, input.labelled)
  const ordered = deletionOrder(inventory)
  const present = ordered.filter(({ entry }) => {
    const o = liveObject(input.live, entryKey(entry))
    return o !== undefined && isOwnedBy(o, input.uid)
  })
  const remainingAll = present.map(({ entry }) => entryKey(entry))
  const presentKeys = new Set(remainingAll)
  const deleted = (input.previousRemaining ?? [])
    .filter((k) => !presentKeys.has(k))
    .map((k) => inventory.find((e) => entryKey(e) === k))
    .filter((e): e is InventoryEntry => e !== undefined)
  const first = present[0]
  if (!first) {
    return { action: 'delete', deletes: [], remaining: [], deleted, removeFinalizer: true, ready: { status: 'False', reason: 'Deleting', message: 'every child is gone' } }
  }
  const current = present.filter((p) => p.wave === first.wave && p.group === first.group)
  const deletes: PlannedDelete[] = []
  let blockedBy: string | undefined
  for (const { entry } of current) {
    const key = entryKey(entry)
    const o = liveObject(input.live, key)!
    if (isTerminating(o)) {
      blockedBy ??= terminatingMessage(key, o)
      continue
    }
    const d: PlannedDelete = {
      kind: entry.kind, namespace: entry.namespace, name: entry.name, key,
      propagationPolicy: entry.kind === 'Service' || entry.kind === 'Secret' ? 'Background' : 'Foreground',
    }
    if (entry.workload !== undefined) d.workload = entry.workload
    deletes.push(d)
  }
  blockedBy ??= `waiting for ${objectKey(first.entry.kind, first.entry.namespace, first.entry.name)} to be deleted`
  return {
    action: 'delete',
    wave: first.wave,
    deletes,
    remaining: remainingAll.slice(0, REMAINING_LIMIT),
    blockedBy,
    deleted,
    removeFinalizer: false,
    ready: { status: 'False', reason: 'Deleting', message: `deleting ${remainingAll.length} ${remainingAll.length === 1 ? 'child' : 'children'}: ${blockedBy}` },
  }
}
