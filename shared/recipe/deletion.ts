import type { ChildKind, ChildObject } from '../kube/port.js'
import { mcpNamespaceOf, sandboxNamespaceOf } from './plan/config.js'
import { planDeletion } from './plan/deletion.js'
import { KINETIC_KINDS, objectKey, type LiveObject } from './plan/deploy-plan.js'
import { LABEL_RECIPE_UID } from './plan/labels.js'
import { FINALIZER } from './plan/lifecycle/annotations.js'
import { planLifecycle } from './plan/lifecycle/plan.js'
import { canonicalJson } from './plan/digest.js'
import type { WorkflowRecipeStatus } from '../schemas/workflowrecipe.js'
import { remove, type RecipeWork } from './work.js'

/**
 * spec §11: a recipe being deleted. The inventory comes from the snapshots of the current, last good
 * and in-flight revisions plus the objects labelled with the recipe's UID in the target
 * namespaces (nothing is rendered); waves are deleted one at a time, each waiting for 404, and
 * the finalizer goes last. `purko.io/orphan` or `deletionPolicy: Orphan` removes it at once.
 */
export async function deleteRecipe(work: RecipeWork): Promise<void> {
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

  const plan = planDeletion({
    uid,
    ...(recipe.metadata.annotations ? { annotations: recipe.metadata.annotations } : {}),
    ...(recipe.spec.deletionPolicy ? { deletionPolicy: recipe.spec.deletionPolicy } : {}),
    snapshots, labelled: labelled as LiveObject[], live,
    ...(st.deletion?.remaining ? { previousRemaining: st.deletion.remaining } : {}),
  })
  const release = async () => {
    const finalizers = (recipe.metadata.finalizers ?? []).filter((f) => f !== FINALIZER)
    await deps.kube.patchRecipeMetadata(work.namespace, work.name, work.resourceVersion, { finalizers })
    work.writes++
  }
  if (plan.action === 'orphan') {
    await release()
    work.transitions.push({ kind: 'event', type: 'Normal', reason: plan.event.reason, message: plan.event.message, record: true })
    return
  }
  for (const e of plan.deleted) {
    const object = `${e.namespace}/${e.name}`
    work.transitions.push({
      kind: 'workload.deleted', type: 'Normal', reason: 'WorkloadDeleted', message: `${objectKey(e.kind, e.namespace, e.name)} is gone`, record: true,
      cloudEventType: 'dev.kinetic.recipe.workload.deleted', data: { workload: e.workload ?? e.test ?? '', kind: e.kind, object },
    })
  }
  for (const d of plan.deletes) await remove(work, d)
  if (plan.removeFinalizer) {
    await release()
    work.transitions.push({ kind: 'deleted', type: 'Normal', reason: 'Deleted', message: 'every child is gone; the recipe is deleted', record: false, cloudEventType: 'dev.kinetic.recipe.deleted' })
    return
  }
  // Ready=False reason Deleting, and what is left and what blocks it.
  const lifecycle = planLifecycle(recipe, { render: { ok: false, errors: [] }, policy: 'unavailable', prerequisites: [], snapshots: [] }, work.now)
  const status: WorkflowRecipeStatus = { ...lifecycle.status, deletion: { remaining: plan.remaining, ...(plan.blockedBy ? { blockedBy: plan.blockedBy } : {}) } }
  status.conditions = (status.conditions ?? []).map((c) => (c.type === 'Ready' ? { ...c, message: plan.ready.message } : c))
  if (canonicalJson(status) !== canonicalJson(st)) {
    await deps.kube.replaceRecipeStatus(work.namespace, work.name, work.resourceVersion, status)
    work.writes++
  }
}
