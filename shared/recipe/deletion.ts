/**
 * spec §11: the reads and writes of a recipe being deleted; the deletion planner in between is
 * pure (plan/deletion.ts, composed in plan/recipe-plan.ts). The inventory comes from the
 * snapshots of the current, last good and in-flight revisions plus the objects labelled with the
 * recipe's UID in the target namespaces (nothing is rendered); waves are deleted one at a time,
 * each waiting for 404, and the finalizer goes last. `purko.io/orphan` or `deletionPolicy: Orphan`
 * removes it at once.
 */
import type { ChildKind, ChildObject } from '../kube/port.js'
import { mcpNamespaceOf, sandboxNamespaceOf } from './plan/config.js'
import { KINETIC_KINDS, objectKey, type LiveObject } from './plan/deploy-plan.js'
import { canonicalJson } from './plan/digest.js'
import { LABEL_RECIPE_UID } from './plan/labels.js'
import { FINALIZER } from './plan/lifecycle/annotations.js'
import type { DeletionFacts, DeletionStep } from './plan/recipe-plan.js'
import type { WorkflowRecipeStatus } from '../schemas/workflowrecipe.js'
import { remove, type RecipeWork } from './work.js'

/** What the deletion planner needs: the kept snapshots and what carries the recipe's UID where children can be. */
export async function deletionFacts(work: RecipeWork): Promise<DeletionFacts> {
  const { recipe, deps, uid } = work
  const st: WorkflowRecipeStatus = recipe.status ?? {}
  const keep = new Set([st.currentRevision ?? 0, st.lastGoodRevision ?? 0, st.revision ?? 0])
  const snapshots = [...work.snapshots.values()].map((s) => s.snapshot).filter((s) => keep.has(s.revision))

  // Where children can be: today's placement, and wherever a snapshot put them.
  const targets = new Set([mcpNamespaceOf(deps.recipes, work.namespace), sandboxNamespaceOf(deps.recipes, work.namespace)])
  for (const s of snapshots) {
    for (const e of [...s.manifests, ...s.tests]) targets.add(String(e.object.kind === 'SecretCopy' ? e.object.namespace : (e.object as { metadata: { namespace: string } }).metadata.namespace))
  }
  targets.delete(work.namespace)
  const labelled: ChildObject[] = []
  const byUid = { [LABEL_RECIPE_UID]: uid }
  const list = async (kind: ChildKind, ns: string) => {
    work.reads.calls.reads++
    labelled.push(...(await deps.kube.listChildren(kind, ns, byUid)).map((o) => ({ kind, ...o })))
  }
  for (const ns of targets) {
    if ((await work.reads.namespace(ns)) === null) continue
    for (const kind of KINETIC_KINDS.filter((k) => k !== 'Workflow')) await list(kind, ns)
  }
  await list('Workflow', work.namespace)
  const live = new Map<string, LiveObject>()
  for (const o of labelled) {
    const key = objectKey(o.kind ?? '', o.metadata?.namespace ?? '', o.metadata?.name ?? '')
    live.set(key, o as LiveObject)
    work.reads.remember(o.kind ?? '', o.metadata?.namespace ?? '', o.metadata?.name ?? '', o)
  }
  return {
    uid,
    ...(recipe.metadata.annotations ? { annotations: recipe.metadata.annotations } : {}),
    ...(recipe.spec.deletionPolicy ? { deletionPolicy: recipe.spec.deletionPolicy } : {}),
    snapshots, labelled: labelled as LiveObject[], live,
    ...(st.deletion?.remaining ? { previousRemaining: st.deletion.remaining } : {}),
  }
}

/** The deletes of this step's wave (each an own child, by uid). */
export async function deleteWave(work: RecipeWork, step: DeletionStep): Promise<void> {
  if (step.deletion.action === 'delete') for (const d of step.deletion.deletes) await remove(work, d)
}

/** The recipe's part: the finalizer released once nothing is left (or at once when orphaning), else the status. */
export async function writeDeletionParent(work: RecipeWork, step: DeletionStep): Promise<void> {
  const { recipe, deps } = work
  if (step.deletion.removeFinalizer) {
    const finalizers = (recipe.metadata.finalizers ?? []).filter((f) => f !== FINALIZER)
    await deps.kube.patchRecipeMetadata(work.namespace, work.name, work.resourceVersion, { finalizers })
    work.writes++
    return
  }
  if (step.status && canonicalJson(step.status) !== canonicalJson(recipe.status ?? {})) {
    await deps.kube.replaceRecipeStatus(work.namespace, work.name, work.resourceVersion, step.status)
    work.writes++
  }
}
