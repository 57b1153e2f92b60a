/**
 * Revisions and rollback from snapshots (spec §7.9). Pure: no I/O, no clock.
 *
 * - {@link parseSnapshot} reads a revision ConfigMap `<recipe>-rev-<N>` (snapshot.ts format).
 * - {@link snapshotObjects} rebuilds revision R's children exactly as recorded: templates are not
 *   re-rendered and CEL is not evaluated; a copied Secret is rebuilt from its `SecretCopy` entry
 *   (sources only, the caller adds the bytes). The snapshot records each workload's place in
 *   the order but not its `dependsOn`, so a rollback applies the workloads strictly one after
 *   the other in R's order (each waits for every earlier one to be Ready): a valid topological
 *   order of R, never faster than R's own graph allowed.
 * - {@link planRollback}: the deploy plan of R over the live objects: R's workloads re-applied
 *   where their digest differs, then the objects of the revisions the children may still carry
 *   (the failed revision, and the previous current one) that R does not have pruned in reverse
 *   order once R is Ready. Job workloads in R's `completed-jobs` are not run again; tests and the
 *   child Workflow are never written by a rollback. PersistentVolumeClaims are never in an
 *   inventory, so never deleted.
 * - {@link snapshotsToDelete}: snapshots kept are the newest `revisionHistoryLimit`, plus always
 *   `currentRevision` and `lastGoodRevision`; {@link trimRevisionEntries}: `status.revisions[]`
 *   keeps the newest 20.
 * - {@link checkRollbackTarget}: the `purko.io/rollback` guard of spec §7.2 (the revision once reached
 *   `Active` and its snapshot exists, else `RollbackIgnored`), and {@link rolledBackMessage}.
 */
import { withDigest } from './digest.js'
import { LABEL_COMPONENT, LABEL_INSTANCE, LABEL_RECIPE, LABEL_RECIPE_NAMESPACE, LABEL_RECIPE_UID, LABEL_REVISION, type Component, type RecipeRef } from './labels.js'
import type { Manifest, RecipeChild, SecretCopy, WorkloadObjects } from './objects.js'
import { copiedSecretManifest } from './secrets.js'
import { inventoryOf, planDeploy, type DeployPlan, type InventoryEntry, type LiveObjects, type WorkloadReadyState } from './deploy-plan.js'

/** One entry of `manifests.json` / `tests.json`. */
export interface SnapshotEntry {
  workload?: string
  test?: string
  order?: number
  digest: string
  afterReady?: boolean
  object: Manifest | SecretCopy
}

/** A parsed revision snapshot. */
export interface RevisionSnapshot {
  revision: number
  recipe: RecipeRef
  generation: number
  /** The snapshot's `digest` key (64 hex). */
  digest: string
  manifests: SnapshotEntry[]
  tests: SnapshotEntry[]
  workflow: Manifest | null
  resolved: { profile?: string; inputs?: Record<string, unknown>; computed?: Record<string, unknown>; included?: string[]; excluded?: string[]; order?: string[] }
  completedJobs: string[]
}

export interface SnapshotConfigMap {
  metadata?: { name?: string; namespace?: string; labels?: Record<string, string> }
  data?: Record<string, string>
}

export type ParsedSnapshot = { ok: true; snapshot: RevisionSnapshot } | { ok: false; message: string }

function isSecretCopy(o: Manifest | SecretCopy): o is SecretCopy {
  return o.kind === 'SecretCopy'
}

/** Reads a revision ConfigMap; a damaged one is reported, never guessed at. */
export function parseSnapshot(cm: SnapshotConfigMap): ParsedSnapshot {
  const name = cm.metadata?.name ?? ''
  const labels = cm.metadata?.labels ?? {}
  const data = cm.data ?? {}
  const revision = Number(labels[LABEL_REVISION] ?? /-rev-(\d+)$/.exec(name)?.[1])
  if (!Number.isInteger(revision) || revision < 1) return { ok: false, message: `ConfigMap ${name} is not a revision snapshot` }
  try {
    const manifests = JSON.parse(data['manifests.json'] ?? '[]') as SnapshotEntry[]
    const tests = JSON.parse(data['tests.json'] ?? '[]') as SnapshotEntry[]
    const workflow = JSON.parse(data['workflow.json'] ?? 'null') as Manifest | null
    const resolved = JSON.parse(data['resolved.json'] ?? '{}') as RevisionSnapshot['resolved']
    if (!Array.isArray(manifests) || !Array.isArray(tests)) return { ok: false, message: `ConfigMap ${name} has no manifest list` }
    return {
      ok: true,
      snapshot: {
        revision,
        recipe: { name: labels[LABEL_RECIPE] ?? '', namespace: labels[LABEL_RECIPE_NAMESPACE] ?? cm.metadata?.namespace ?? '', uid: labels[LABEL_RECIPE_UID] ?? '' },
        generation: Number(data.generation ?? 0),
        digest: data.digest ?? '',
        manifests,
        tests,
        workflow,
        resolved,
        completedJobs: (data['completed-jobs'] ?? '').split('\n').filter((n) => n.length > 0),
      },
    }
  } catch (e) {
    return { ok: false, message: `ConfigMap ${name} holds invalid JSON: ${(e as Error).message}` }
  }
}

function componentOf(m: Manifest): Component {
  return (m.metadata.labels[LABEL_COMPONENT] as Component | undefined) ?? 'workload'
}

function childOf(s: RevisionSnapshot, e: SnapshotEntry, order: number): RecipeChild {
  const owner = e.test !== undefined ? { test: e.test } : { workload: e.workload ?? '' }
  const manifest: Manifest = isSecretCopy(e.object)
    ? withDigest(copiedSecretManifest(s.recipe, e.object, owner, s.revision))
    : e.object
  const c: RecipeChild = {
    component: isSecretCopy(e.object) ? 'secret' : componentOf(manifest),
    kind: manifest.kind,
    namespace: manifest.metadata.namespace,
    name: manifest.metadata.name,
    order,
    manifest,
    digest: e.digest,
  }
  if (e.workload !== undefined) c.workload = e.workload
  if (e.test !== undefined) c.test = e.test
  if (isSecretCopy(e.object)) c.secretCopy = e.object
  if (e.afterReady) c.afterReady = true
  return c
}

/** Revision R's children rebuilt from its snapshot (workloads in R's order, then the Workflow, then tests). */
export function snapshotObjects(s: RevisionSnapshot): { revision: number; workloads: WorkloadObjects[]; children: RecipeChild[] } {
  const groups = new Map<string, SnapshotEntry[]>()
  for (const e of s.manifests) {
    const g = groups.get(e.workload ?? '') ?? []
    g.push(e)
    groups.set(e.workload ?? '', g)
  }
  const names = [...groups.keys()].sort((a, b) => (groups.get(a)![0]!.order ?? 0) - (groups.get(b)![0]!.order ?? 0))
  const workloads: WorkloadObjects[] = names.map((name, i) => {
    const children = groups.get(name)!.map((e) => childOf(s, e, e.order ?? i))
    const main = children.find((c) => c.component === 'workload')
    const service = children.find((c) => c.component === 'service')
    const mcp = children.find((c) => c.component === 'mcpserver')
    const mcpTransport = (mcp?.manifest.spec as { transport?: string } | undefined)?.transport
    const transport = mcp ? (mcpTransport === 'stdio' || !main ? 'stdio' : 'http') : undefined
    const w: WorkloadObjects = {
      name,
      kind: main?.kind ?? 'Deployment',
      namespace: (main ?? mcp ?? children[0])!.namespace,
      base: (main ?? service)?.manifest.metadata.labels[LABEL_INSTANCE] ?? mcp?.name ?? '',
      objectName: (main ?? mcp)?.name ?? '',
      dependsOn: names.slice(0, i),
      order: children[0]?.order ?? i,
      children,
    }
    if (service) w.serviceName = service.name
    if (mcp) w.mcpServerName = mcp.name
    if (transport) w.transport = transport
    return w
  })
  const after = workloads.length
  const workflow = s.workflow
    ? [{ component: 'workflow' as const, kind: s.workflow.kind, namespace: s.workflow.metadata.namespace, name: s.workflow.metadata.name, order: after, manifest: s.workflow, digest: s.workflow.metadata.annotations?.['purko.io/manifest-digest'] ?? '' }]
    : []
  const tests = s.tests.map((e) => childOf(s, e, after + 1))
  return { revision: s.revision, workloads, children: [...workloads.flatMap((w) => w.children), ...workflow, ...tests] }
}

/** Every object a revision recorded (workload children, child Workflow, test Jobs and their Secrets), in apply order. */
export function snapshotInventory(s: RevisionSnapshot): InventoryEntry[] {
  return inventoryOf(snapshotObjects(s))
}

export interface RollbackInput {
  uid: string
  /** Snapshot of the target revision R. */
  target: RevisionSnapshot
  /** Snapshots of the revisions the children may carry now (the failed revision, the previous current one). */
  from: RevisionSnapshot[]
  live: LiveObjects
  /** Readiness of R's workloads (digests of R), e.g. `readinessFromLive(snapshotObjects(target), ...)`. */
  readiness: Readonly<Record<string, WorkloadReadyState | undefined>>
}

/** spec §7.9: the next wave of a rollback to R (writes of R, then the prune of what R does not have). */
export function planRollback(input: RollbackInput): DeployPlan {
  const desired = snapshotObjects(input.target)
  const previous = input.from.filter((s) => s.revision !== input.target.revision).flatMap(snapshotInventory)
  return planDeploy({ uid: input.uid, desired, live: input.live, readiness: input.readiness, previous, completedJobs: input.target.completedJobs })
}

/**
 * Snapshot revisions to delete: everything but the newest `limit` revisions, `currentRevision`
 * and `lastGoodRevision` (ascending).
 */
export function snapshotsToDelete(existing: readonly number[], limit: number, currentRevision: number, lastGoodRevision: number): number[] {
  const sorted = [...new Set(existing)].sort((a, b) => b - a)
  const keep = new Set(sorted.slice(0, Math.max(1, limit)))
  keep.add(currentRevision)
  keep.add(lastGoodRevision)
  return sorted.filter((r) => !keep.has(r)).sort((a, b) => a - b)
}

/** At most `max` (20) revision entries, the newest by revision number, oldest first. */
export function trimRevisionEntries<T extends { revision: number }>(entries: readonly T[], max = 20): T[] {
  return [...entries].sort((a, b) => a.revision - b.revision).slice(-max)
}

export type RollbackTarget = { ok: true; revision: number } | { ok: false; reason: 'RollbackIgnored'; message: string }

/**
 * spec §7.2 `purko.io/rollback`: the value must be a revision that once reached `Active` (its entry
 * is `Active` or `Superseded`, or it is `lastGoodRevision`) and whose snapshot still exists.
 */
export function checkRollbackTarget(value: string, revisions: readonly { revision: number; state: string }[], snapshots: readonly number[], lastGoodRevision: number): RollbackTarget {
  const ignored = (message: string): RollbackTarget => ({ ok: false, reason: 'RollbackIgnored', message })
  if (!/^[1-9][0-9]*$/.test(value.trim())) return ignored(`purko.io/rollback "${value}" is not a revision number`)
  const revision = Number(value.trim())
  const entry = revisions.find((r) => r.revision === revision)
  const wasActive = revision === lastGoodRevision || entry?.state === 'Active' || entry?.state === 'Superseded'
  if (!wasActive) return ignored(`revision ${revision} never reached Active`)
  if (!snapshots.includes(revision)) return ignored(`the snapshot of revision ${revision} no longer exists`)
  return { ok: true, revision }
}

/** `UpToDate=False` message after an automatic rollback: `revision <N> (generation <G>) failed: <reason>; running revision <R>`. */
export function rolledBackMessage(failedRevision: number, generation: number, reason: string, runningRevision: number): string {
  return `revision ${failedRevision} (generation ${generation}) failed: ${reason}; running revision ${runningRevision}`
}
