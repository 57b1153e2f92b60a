/**
 * The recipe controller's child writes (spec §7.9, §7.11, §7.8): the finalizer and a revision's
 * snapshot before any of its children, then the lifecycle action: a deploy or rollback wave
 * planned by the deploy planner on the live state, test Jobs, or keeping the current revision
 * (completed Jobs, copied Secrets, drift corrections). Every write is counted and remembered in
 * the reconcile's reads; what it tells goes to `work.transitions`.
 */
import type { V1ConfigMap } from '@kubernetes/client-node'
import { RefusedError } from '../core/errors.js'
import type { ChildKind, ChildObject } from '../kube/port.js'
import type { WorkflowRecipe } from '../schemas/workflowrecipe.js'
import { isOwnedBy, planDeploy, readinessFromLive, type DeployPlan, type InventoryEntry, type PlannedWrite } from './plan/deploy-plan.js'
import { canonicalJson } from './plan/digest.js'
import { FINALIZER } from './plan/lifecycle/annotations.js'
import type { RecipeChild } from './plan/objects.js'
import type { RevisionObjects } from './plan/observe.js'
import type { PassPlan } from './plan/recipe-plan.js'
import type { renderRecipe } from './plan/render.js'
import type { RenderOk } from './plan/rendered.js'
import { withSecretData } from './plan/secrets.js'
import { snapshot, withCompletedJob } from './plan/snapshot.js'
import { fromSnapshot, objectsOf, previousInventory, refsOf } from './gather.js'
import { storedSnapshotOf } from './reads.js'
import { remove, type RecipeWork } from './work.js'

/**
 * Carries out one lifecycle plan: finalizer, snapshot, abandonment, then the action. Returns
 * whether the world changed in a way the planner should see before status is written.
 */
export async function act(
  work: RecipeWork, recipe: WorkflowRecipe, pass: PassPlan, rendered: ReturnType<typeof renderRecipe>, failures: Map<string, string>,
): Promise<boolean> {
  const plan = pass.lifecycle
  const { kube } = work.deps
  let changed = false
  if (plan.addFinalizer && !(work.recipe.metadata.finalizers ?? []).includes(FINALIZER)) {
    // Before any child, so a deletion always finds the children to delete (spec §11).
    const patched = await kube.patchRecipeMetadata(work.namespace, work.name, work.resourceVersion, { finalizers: [...(work.recipe.metadata.finalizers ?? []), FINALIZER] })
    work.resourceVersion = patched.metadata.resourceVersion ?? work.resourceVersion
    work.recipe = { ...work.recipe, metadata: { ...work.recipe.metadata, finalizers: patched.metadata.finalizers ?? [FINALIZER] } }
    work.writes++
  }
  if (plan.writeSnapshot !== undefined && rendered.ok && !work.snapshots.has(plan.writeSnapshot)) {
    await writeSnapshot(work, rendered, plan.writeSnapshot)
    changed = true
  }
  if (plan.abandon !== undefined) await abandon(work, plan.abandon)
  for (const n of plan.pruneSnapshots) {
    const stored = work.snapshots.get(n)
    if (!stored) continue
    await kube.deleteConfigMap(work.namespace, stored.configMapName)
    work.snapshots.delete(n)
    work.writes++
  }
  const st = recipe.status ?? {}
  switch (plan.action.type) {
    case 'deploy':
    case 'rollback': {
      const { action } = plan
      const revision = action.type === 'deploy' ? action.revision : action.to
      // What the failed revision could not apply says nothing about a rollback target's objects.
      if (action.type === 'rollback') failures.clear()
      const objects = objectsOf(work, st, revision, rendered)
      if (!objects) return changed
      const previous = previousInventory(work, st, revision)
      // The child Workflow runs once a deployed revision is Ready, never after a rollback.
      changed = (await rollOut(work, objects, previous, failures, { workflow: action.type === 'deploy' })) || changed
      return changed
    }
    case 'test': {
      const objects = objectsOf(work, st, plan.action.revision, rendered)
      if (!objects) return changed
      // A workload lost or changed while its tests run is put back first (tests judge N as declared).
      changed = (await rollOut(work, objects, [], failures, { workflow: false })) || changed
      if (!objects.tests) return changed
      for (const t of objects.tests) {
        await work.reads.load(refsOf(t.children))
        for (const c of t.children) {
          if (work.reads.get(c.kind, c.namespace, c.name)) continue
          await apply(work, c, 'created')
          changed = true
        }
      }
      return changed
    }
    case 'maintain': {
      const objects = objectsOf(work, st, plan.action.revision, rendered)
      if (objects) {
        await recordCompletedJobs(work, plan.action.revision, objects)
        await refreshSecretCopies(work, objects)
      }
      for (const item of pass.drift?.correct ?? []) {
        try {
          await apply(work, item.child, undefined)
        } catch (err) {
          if (!(err instanceof RefusedError)) throw err
          work.transitions.push({ kind: 'event', type: 'Warning', reason: 'DriftDetected', message: `${item.key} could not be restored: ${err.message}`, record: true, publish: false })
          continue
        }
        work.transitions.push({ kind: 'drift.corrected', type: 'Normal', reason: 'DriftCorrected', message: item.message, record: true, data: { object: `${item.namespace}/${item.name}`, paths: item.paths } })
      }
      work.transitions.push(...pass.driftDetected)
      return false
    }
    default:
      return changed
  }
}

/**
 * The snapshot ConfigMap of revision N, before any child of N (spec §7.9). One already there is a
 * crash's leftover: the same content is kept; another generation's (N was never recorded in
 * status, so N is ours to write) is replaced.
 */
async function writeSnapshot(work: RecipeWork, rendered: RenderOk, revision: number): Promise<void> {
  const snap = snapshot(work.recipe, rendered, work.deps.recipes, revision)
  if (!snap.ok) return
  const { kube } = work.deps
  const wanted = snap.configMap as unknown as V1ConfigMap
  if ((await kube.createConfigMap(wanted)) === 'exists') {
    const found = await kube.getConfigMap(work.namespace, snap.configMap.metadata.name)
    if (found && found.data?.digest !== snap.configMap.data.digest) {
      await kube.replaceConfigMap({ ...found, metadata: { ...found.metadata, labels: snap.configMap.metadata.labels }, data: snap.configMap.data })
    }
  }
  work.writes++
  const stored = storedSnapshotOf(snap.configMap)
  if (!('damaged' in stored)) work.snapshots.set(revision, stored)
}

/** spec §7.6: an abandoned revision's test Jobs are deleted and its child Workflow cancelled; its workloads stay. */
async function abandon(work: RecipeWork, revision: number): Promise<void> {
  const stored = work.snapshots.get(revision)
  if (!stored) return
  const objects = fromSnapshot(stored.snapshot)
  const doomed = [...(objects.tests ?? []).flatMap((t) => t.children.filter((c) => c.kind === 'Job')), ...(objects.workflow ? [objects.workflow] : [])]
  await work.reads.load(refsOf(doomed))
  for (const c of doomed) {
    const live = work.reads.get(c.kind, c.namespace, c.name)
    if (!live || !isOwnedBy(live, work.uid)) continue
    await work.deps.kube.deleteChild(c.kind as ChildKind, c.namespace, c.name, { propagationPolicy: 'Background', ...(live.metadata?.uid ? { uid: live.metadata.uid } : {}) })
    work.reads.remember(c.kind, c.namespace, c.name, null)
    work.writes++
  }
}

/**
 * One wave of spec §7.11 (or a rollback, §7.9): the planned writes in order, then the prune; the
 * child Workflow once every workload is Ready and pruning is done. A refused write fails its
 * workload (`ApplyFailed`) and stops that workload's later writes.
 */
async function rollOut(work: RecipeWork, objects: RevisionObjects, previous: InventoryEntry[], failures: Map<string, string>, options: { workflow: boolean }): Promise<boolean> {
  const { reads } = work
  await reads.load([...refsOf(objects.children), ...previous])
  const live = reads.liveObjects()
  const completedJobs = work.snapshots.get(objects.revision)?.snapshot.completedJobs ?? []
  const readiness = readinessFromLive(objects, live, work.now, completedJobs)
  const plan: DeployPlan = planDeploy({ uid: work.uid, desired: objects, live, readiness, previous, completedJobs })
  if (plan.conflicts.length > 0) return false
  let changed = false
  const refusedWorkloads = new Set<string>()
  for (const w of plan.writes) {
    const workload = w.child.workload ?? ''
    if (refusedWorkloads.has(workload) || failures.has(workload)) continue
    try {
      await apply(work, w.child, w.action, w)
      changed = true
    } catch (err) {
      if (!(err instanceof RefusedError)) throw err
      refusedWorkloads.add(workload)
      failures.set(workload, err.message)
      work.transitions.push({ kind: 'workload.failed', type: 'Warning', reason: 'ApplyFailed', message: `${w.key}: ${err.message}`, record: true, data: { workload, kind: w.child.kind, object: `${w.child.namespace}/${w.child.name}`, reason: 'ApplyFailed', message: err.message } })
      changed = true
    }
  }
  for (const d of plan.prune) {
    await remove(work, d)
    changed = true
  }
  await recordCompletedJobs(work, objects.revision, objects)
  if (options.workflow && plan.done && objects.workflow && !reads.get('Workflow', objects.workflow.namespace, objects.workflow.name)) {
    await apply(work, objects.workflow, 'created')
    changed = true
  }
  return changed
}

/** Server-side apply of one child (copied Secrets get their bytes from the source Secrets here). */
async function apply(work: RecipeWork, child: RecipeChild, action: 'created' | 'updated' | 'create' | 'update' | undefined, planned?: PlannedWrite): Promise<void> {
  let manifest = child.manifest
  if (child.secretCopy) {
    const values: Record<string, Record<string, string> | undefined> = {}
    for (const s of child.secretCopy.sources) values[s.name] = (await work.reads.secret(s.name))?.data ?? undefined
    manifest = withSecretData(manifest, child.secretCopy, values).manifest
  }
  const written = await work.deps.kube.applyChild(manifest as ChildObject)
  work.writes++
  work.reads.remember(child.kind, child.namespace, child.name, written)
  if (action === undefined) return
  const verb = action === 'create' || action === 'created' ? 'created' : 'updated'
  const object = `${child.namespace}/${child.name}`
  work.transitions.push({
    kind: 'workload.applied', type: 'Normal', reason: 'WorkloadApplied', message: planned?.message ?? `${verb} ${child.kind} ${object}`, record: true,
    data: { workload: child.workload ?? child.test ?? '', kind: child.kind, object, action: verb },
  })
}

/**
 * A copied Secret follows its source (there is no Secret source on the Broker, spec §15: the resync
 * tick and child events bring this here). Only keys that still exist are copied; a missing
 * source leaves the copy as it is (running pods keep working, `SourceSecretMissing` says why).
 */
async function refreshSecretCopies(work: RecipeWork, objects: RevisionObjects): Promise<void> {
  for (const c of objects.workloads.flatMap((w) => w.children).filter((x) => x.secretCopy)) {
    const copy = c.secretCopy!
    const values: Record<string, Record<string, string> | undefined> = {}
    for (const s of copy.sources) values[s.name] = (await work.reads.secret(s.name))?.data ?? undefined
    const { manifest, missing } = withSecretData(c.manifest, copy, values)
    if (missing.length > 0 || copy.sources.some((s) => values[s.name] === undefined)) continue
    const live = work.reads.get('Secret', c.namespace, c.name)
    if (!live || !isOwnedBy(live, work.uid)) continue
    if (canonicalJson(live.data ?? {}) === canonicalJson(manifest.data ?? {})) continue
    await apply(work, c, 'updated')
  }
}

/** Job workloads that completed are noted in the snapshot, so a Job removed by its TTL is not run again (spec §7.9). */
async function recordCompletedJobs(work: RecipeWork, revision: number, objects: RevisionObjects): Promise<void> {
  const stored = work.snapshots.get(revision)
  if (!stored) return
  let data = stored.data
  let dirty = false
  for (const w of objects.workloads.filter((x) => x.kind === 'Job')) {
    const job = work.reads.get('Job', w.namespace, w.objectName)
    const complete = ((job?.status as { conditions?: { type?: string; status?: string }[] } | undefined)?.conditions ?? []).some((c) => c.type === 'Complete' && c.status === 'True')
    if (!complete || stored.snapshot.completedJobs.includes(w.objectName)) continue
    data = { ...data, 'completed-jobs': withCompletedJob(data, w.objectName) }
    dirty = true
  }
  if (!dirty) return
  const cm = await work.deps.kube.getConfigMap(work.namespace, stored.configMapName)
  if (!cm) return
  const updated = await work.deps.kube.replaceConfigMap({ ...cm, data: { ...(cm.data ?? {}), 'completed-jobs': data['completed-jobs'] ?? '' } })
  work.writes++
  stored.data = updated.data ?? data
  stored.snapshot = { ...stored.snapshot, completedJobs: (data['completed-jobs'] ?? '').split('\n').filter((n) => n.length > 0) }
}
