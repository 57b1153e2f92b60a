/**
 * The deploy planner (spec §7.11 order, apply and prune; §5.2 never adopt and Job
 * immutability; spec §7.4 `NameConflict`; §6 readiness as the gate between waves). Pure: no I/O, no
 * clock (`now` only reaches the spec §6 readiness helpers).
 *
 * Given the desired children of revision N (`buildManifests`, or a snapshot rebuilt by
 * rollback.ts), the live objects found under the children's names, the readiness of each
 * workload for N and the inventory of the previous current revision, {@link planDeploy} returns
 * the next wave:
 *
 * - **Conflicts first.** A live object under a desired child's name without
 *   `purko.io/recipe-uid` equal to the recipe's UID is never adopted: every such object is
 *   reported (`NameConflict`, `<Kind> <namespace>/<name> already exists and is not managed by
 *   this recipe`, joined by `; `) and nothing at all is written or deleted.
 * - **Writes** in `resolved.order`: a workload is written once every included workload it
 *   depends on is Ready for N (independent ones in the same wave); its children in the order
 *   copied Secrets, Service, workload object, then (`afterReady`, the http MCPServer) only once
 *   the workload object is Ready. A child is created when absent, updated when its
 *   `purko.io/manifest-digest` differs, and left alone when it matches. A Job's spec is
 *   immutable and its name is a hash of that spec (spec §5.2), so a live Job of the same name is never
 *   updated: a changed Job is a new object, and the old one is pruned. A Job workload listed in
 *   `completedJobs` (the snapshot's `completed-jobs`) is not created again once it is gone
 *   (ttlSecondsAfterFinished). An own object that is terminating is waited for, not written.
 * - **Prune** once every included workload of N is Ready and nothing is left to write: the
 *   objects of the previous revision's inventory that N does not have, only of the kinds Kinetic
 *   creates and only when they carry this recipe's UID (a foreign object of the same name is
 *   never touched), in reverse topological order of the previous revision: the objects of the
 *   workload latest in that order first (MCPServer, workload object, Service, copied Secrets),
 *   the next workload only when those are gone (404), tests and the child Workflow before any
 *   workload. PersistentVolumeClaims and revision ConfigMaps are never in an inventory.
 *
 * The revision's own child Workflow and test Jobs are not written here (the lifecycle creates
 * them after the workloads, spec §7.11, §2.9), but they count as objects N has, so pruning never
 * deletes them.
 */
import { ANNOTATION_MANIFEST_DIGEST, LABEL_RECIPE_UID, type Component } from './labels.js'
import type { RecipeChild, RecipeObjects, WorkloadObjects } from './objects.js'
import { workloadReadiness, type ObservedObject } from './readiness.js'

/** A live object as read from the API server (only metadata is looked at here). */
export interface LiveObject {
  apiVersion?: string
  kind?: string
  metadata?: {
    name?: string
    namespace?: string
    generation?: number
    labels?: Record<string, string>
    annotations?: Record<string, string>
    deletionTimestamp?: string | Date
    finalizers?: string[]
    [field: string]: unknown
  }
  [field: string]: unknown
}

/** Live objects by {@link objectKey}; a missing key means the object is absent (404). */
export type LiveObjects = ReadonlyMap<string, LiveObject> | Readonly<Record<string, LiveObject | undefined>>

/** The kinds Kinetic creates as children (never PersistentVolumeClaims; revision ConfigMaps go with the recipe). */
export const KINETIC_KINDS = ['Secret', 'Service', 'Deployment', 'StatefulSet', 'DaemonSet', 'Job', 'CronJob', 'MCPServer', 'Workflow'] as const
const KINETIC_KIND_SET: ReadonlySet<string> = new Set(KINETIC_KINDS)
/** The workload kinds (deleted with `propagationPolicy: Foreground`). */
export const WORKLOAD_KINDS: ReadonlySet<string> = new Set(['Deployment', 'StatefulSet', 'DaemonSet', 'Job', 'CronJob'])

export function isKineticKind(kind: string): boolean {
  return KINETIC_KIND_SET.has(kind)
}

/** `<Kind> <namespace>/<name>`: the key of an object, and how messages name it. */
export function objectKey(kind: string, namespace: string, name: string): string {
  return `${kind} ${namespace}/${name}`
}

export function liveObject(live: LiveObjects, key: string): LiveObject | undefined {
  if (live instanceof Map) return live.get(key)
  return (live as Readonly<Record<string, LiveObject | undefined>>)[key]
}

/** The object carries `purko.io/recipe-uid` equal to `uid` (an empty uid never matches). */
export function isOwnedBy(object: LiveObject, uid: string): boolean {
  return uid !== '' && object.metadata?.labels?.[LABEL_RECIPE_UID] === uid
}

export function isTerminating(object: LiveObject): boolean {
  return object.metadata?.deletionTimestamp !== undefined && object.metadata.deletionTimestamp !== null
}

/** `<Kind> <ns>/<name> is terminating[ (finalizers: a, b)]`. */
export function terminatingMessage(key: string, object: LiveObject): string {
  const finalizers = object.metadata?.finalizers ?? []
  return `${key} is terminating${finalizers.length > 0 ? ` (finalizers: ${finalizers.join(', ')})` : ''}`
}

/** One object recorded for a revision (from `buildManifests` or a snapshot), in apply order. */
export interface InventoryEntry {
  kind: string
  namespace: string
  name: string
  component: Component
  workload?: string
  test?: string
  /** Index of its workload in the revision's order; tests and the Workflow come after every workload. */
  order: number
}

/** The inventory of a revision's children, in apply order (workloads, Workflow, tests). */
export function inventoryOf(objects: Pick<RecipeObjects, 'children'>): InventoryEntry[] {
  return objects.children.map((c) => entryOf(c))
}

function entryOf(c: RecipeChild): InventoryEntry {
  const e: InventoryEntry = { kind: c.kind, namespace: c.namespace, name: c.name, component: c.component, order: c.order }
  if (c.workload !== undefined) e.workload = c.workload
  if (c.test !== undefined) e.test = c.test
  return e
}

export function entryKey(e: Pick<InventoryEntry, 'kind' | 'namespace' | 'name'>): string {
  return objectKey(e.kind, e.namespace, e.name)
}

/**
 * The inventory in reverse dependency order, grouped into waves: test Jobs, test Secrets and
 * the child Workflow first, then each workload's objects from the last workload in the order
 * to the first (within a workload, the reverse of its write order).
 */
export function reverseWaves(inventory: InventoryEntry[]): InventoryEntry[][] {
  const groups = new Map<number, InventoryEntry[]>()
  for (const e of inventory) {
    const g = groups.get(e.order) ?? []
    g.push(e)
    groups.set(e.order, g)
  }
  return [...groups.entries()].sort((a, b) => b[0] - a[0]).map(([, g]) => [...g].reverse())
}

/** A workload's readiness for revision N, as the planner needs it. */
export interface WorkloadReadyState {
  /** Ready for N (spec §6): its dependents may be written, prune may start. */
  ready: boolean
  /** The workload object (and Service) is Ready: an `afterReady` MCPServer may be written. */
  mainReady?: boolean
  /** Failed for good (a Job with `Failed=True`). */
  failed?: { reason: string; message: string }
  message?: string
}

export interface NameConflict {
  kind: string
  namespace: string
  name: string
  reason: 'NameConflict'
  message: string
}

export interface PlannedWrite {
  action: 'create' | 'update'
  /** The desired child: `manifest` is what to apply (copied Secrets: add `data`, secrets.ts). */
  child: RecipeChild
  key: string
  /** `WorkloadApplied` message: `created|updated <Kind> <ns>/<name>`. */
  message: string
}

export interface PlannedDelete {
  kind: string
  namespace: string
  name: string
  key: string
  workload?: string
  propagationPolicy: 'Foreground' | 'Background'
}

export interface WorkloadPlan {
  name: string
  /** `Waiting` (a dependency is not Ready), `Progressing` (written or being written, not Ready), `Ready`, `Failed`. */
  phase: 'Waiting' | 'Progressing' | 'Ready' | 'Failed'
  /** Dependencies not yet Ready (phase `Waiting`). */
  waitingFor: string[]
  message: string
}

export interface DeployPlan {
  /** Foreign objects holding a child's name: when non-empty nothing else is planned. */
  conflicts: NameConflict[]
  /** `PrerequisitesMet=False` with reason `NameConflict` and every message joined by `; ` (only with conflicts). */
  prerequisite?: { reason: 'NameConflict'; message: string }
  /** Server-side applies to make now, in order. */
  writes: PlannedWrite[]
  workloads: WorkloadPlan[]
  /** The first workload that failed for good, in order (`JobFailed`). */
  failed?: { workload: string; reason: string; message: string }
  /** Deletes to issue now (the current prune wave). */
  prune: PlannedDelete[]
  /** Objects still to prune (present, own), in prune order, as `<Kind> <ns>/<name>`. */
  pruneRemaining: string[]
  /** Why the prune waits (not every workload Ready, or an object still terminating). */
  pruneBlockedBy?: string
  /** Own objects under desired names that are terminating (written once gone). */
  waitingForDeletion: string[]
  allReady: boolean
  /** Every workload Ready for N, nothing to write, pruning finished: `Deploying` may move on (T14). */
  done: boolean
}

export interface DeployInput {
  /** The recipe's UID (`purko.io/recipe-uid` of every child). */
  uid: string
  /** Desired children of revision N. */
  desired: Pick<RecipeObjects, 'workloads' | 'children'>
  /** Live objects under the desired names and the previous inventory's names. */
  live: LiveObjects
  /** Readiness of each included workload for N (see {@link readinessFromLive}); absent = not Ready. */
  readiness: Readonly<Record<string, WorkloadReadyState | undefined>>
  /** Inventory of the previous current revision (what the children carry now), or none. */
  previous?: InventoryEntry[]
  /** Job workloads that already completed (snapshot `completed-jobs`): never created again. */
  completedJobs?: readonly string[]
}

function propagationOf(kind: string): 'Foreground' | 'Background' {
  return kind === 'Secret' || kind === 'Service' ? 'Background' : 'Foreground'
}

/** spec §7.11: the next wave of applies and prunes of revision N (see the file header). */
export function planDeploy(input: DeployInput): DeployPlan {
  const { uid, desired, live, readiness } = input
  const completed = new Set(input.completedJobs ?? [])
  const conflicts: NameConflict[] = []
  for (const c of desired.children) {
    const key = objectKey(c.kind, c.namespace, c.name)
    const found = liveObject(live, key)
    if (found && !isOwnedBy(found, uid)) {
      conflicts.push({ kind: c.kind, namespace: c.namespace, name: c.name, reason: 'NameConflict', message: `${key} already exists and is not managed by this recipe` })
    }
  }
  const workloadStates = (phase: (w: WorkloadObjects) => WorkloadPlan): WorkloadPlan[] => [...desired.workloads].sort((a, b) => a.order - b.order).map(phase)
  if (conflicts.length > 0) {
    return {
      conflicts,
      prerequisite: { reason: 'NameConflict', message: conflicts.map((c) => c.message).join('; ') },
      writes: [],
      workloads: workloadStates((w) => ({ name: w.name, phase: 'Waiting', waitingFor: [], message: 'waiting for a name conflict to be resolved' })),
      prune: [],
      pruneRemaining: [],
      waitingForDeletion: [],
      allReady: false,
      done: false,
    }
  }

  const writes: PlannedWrite[] = []
  const waitingForDeletion: string[] = []
  const workloads: WorkloadPlan[] = []
  let failed: DeployPlan['failed']
  const ordered = [...desired.workloads].sort((a, b) => a.order - b.order)
  for (const w of ordered) {
    const state = readiness[w.name]
    const waitingFor = w.dependsOn.filter((d) => readiness[d]?.ready !== true)
    if (state?.failed && !failed) failed = { workload: w.name, reason: state.failed.reason, message: state.failed.message }
    if (waitingFor.length > 0) {
      workloads.push({ name: w.name, phase: 'Waiting', waitingFor, message: `waiting for ${waitingFor.map((d) => `"${d}"`).join(', ')} to be ready` })
      continue
    }
    for (const c of w.children) {
      if (c.afterReady && state?.mainReady !== true) continue
      const key = objectKey(c.kind, c.namespace, c.name)
      const found = liveObject(live, key)
      if (!found) {
        if (c.kind === 'Job' && c.component === 'workload' && completed.has(c.name)) continue
        writes.push({ action: 'create', child: c, key, message: `created ${key}` })
        continue
      }
      if (isTerminating(found)) { waitingForDeletion.push(key); continue }
      if (c.kind === 'Job') continue
      if (found.metadata?.annotations?.[ANNOTATION_MANIFEST_DIGEST] !== c.digest) {
        writes.push({ action: 'update', child: c, key, message: `updated ${key}` })
      }
    }
    const phase: WorkloadPlan['phase'] = state?.failed ? 'Failed' : state?.ready ? 'Ready' : 'Progressing'
    workloads.push({ name: w.name, phase, waitingFor: [], message: state?.failed?.message ?? state?.message ?? (phase === 'Ready' ? 'ready' : 'progressing') })
  }

  const allReady = ordered.every((w) => readiness[w.name]?.ready === true)
  const desiredKeys = new Set(desired.children.map((c) => objectKey(c.kind, c.namespace, c.name)))
  const stale = (input.previous ?? []).filter((e) => isKineticKind(e.kind) && !desiredKeys.has(entryKey(e)))
  const present = dedupe(stale).filter((e) => {
    const found = liveObject(live, entryKey(e))
    return found !== undefined && isOwnedBy(found, uid)
  })
  const pruneRemaining = reverseWaves(present).flat().map(entryKey)
  const prune: PlannedDelete[] = []
  let pruneBlockedBy: string | undefined
  if (present.length > 0) {
    if (!allReady || writes.length > 0 || waitingForDeletion.length > 0) {
      const notReady = ordered.find((w) => readiness[w.name]?.ready !== true)
      pruneBlockedBy = notReady ? `waiting for workload "${notReady.name}" to be ready` : 'waiting for the writes of this revision'
    } else {
      const wave = reverseWaves(present)[0] ?? []
      for (const e of wave) {
        const key = entryKey(e)
        const found = liveObject(live, key)!
        if (isTerminating(found)) {
          pruneBlockedBy ??= terminatingMessage(key, found)
          continue
        }
        const d: PlannedDelete = { kind: e.kind, namespace: e.namespace, name: e.name, key, propagationPolicy: propagationOf(e.kind) }
        if (e.workload !== undefined) d.workload = e.workload
        prune.push(d)
      }
    }
  }
  const result: DeployPlan = {
    conflicts: [],
    writes,
    workloads,
    prune,
    pruneRemaining,
    waitingForDeletion,
    allReady,
    done: allReady && writes.length === 0 && waitingForDeletion.length === 0 && present.length === 0,
  }
  if (failed) result.failed = failed
  if (pruneBlockedBy !== undefined) result.pruneBlockedBy = pruneBlockedBy
  return result
}

function dedupe(entries: InventoryEntry[]): InventoryEntry[] {
  const seen = new Set<string>()
  return entries.filter((e) => {
    const k = entryKey(e)
    if (seen.has(k)) return false
    seen.add(k)
    return true
  })
}

/**
 * spec §6 readiness of every workload of N from the live objects (digests of N checked), for
 * {@link planDeploy}. A Job workload listed in `completedJobs` that is gone counts as Ready.
 */
export function readinessFromLive(desired: Pick<RecipeObjects, 'workloads'>, live: LiveObjects, now: string, completedJobs: readonly string[] = []): Record<string, WorkloadReadyState> {
  const out: Record<string, WorkloadReadyState> = {}
  const completed = new Set(completedJobs)
  for (const w of desired.workloads) {
    const pick = (component: Component) => w.children.find((c) => c.component === component)
    const main = pick('workload')
    const service = pick('service')
    const mcp = pick('mcpserver')
    const get = (c: RecipeChild | undefined): ObservedObject | undefined => (c ? liveObject(live, objectKey(c.kind, c.namespace, c.name)) as ObservedObject | undefined : undefined)
    if (main && main.kind === 'Job' && !get(main) && completed.has(main.name)) {
      out[w.name] = { ready: true, mainReady: true, message: 'Job completed' }
      continue
    }
    const digests: { workload?: string; service?: string; mcpServer?: string } = {}
    if (main) digests.workload = main.digest
    if (service) digests.service = service.digest
    if (mcp) digests.mcpServer = mcp.digest
    const kind = w.kind as 'Deployment' | 'StatefulSet' | 'DaemonSet' | 'Job' | 'CronJob'
    const r = workloadReadiness({ kind, ...(w.transport ? { transport: w.transport } : {}), hasService: service !== undefined }, { workload: get(main), service: get(service), mcpServer: get(mcp) }, now, digests)
    const state: WorkloadReadyState = { ready: r.ready, mainReady: r.mainReady, message: r.message }
    if (r.failed) state.failed = { reason: r.failed.reason, message: r.failed.message }
    out[w.name] = state
  }
  return out
}
