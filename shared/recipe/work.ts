/**
 * One recipe reconcile's working state (the controller's gather fills it; act.ts and deletion.ts
 * write through it) and the one write both make the same way: deleting an own child.
 */
import type { ChildKind } from '../kube/port.js'
import { isOwnedBy, type PlannedDelete } from './plan/deploy-plan.js'
import type { Transition } from '../core/plan.js'
import type { RevisionObjects } from './plan/observe.js'
import type { WorkflowRecipe } from '../schemas/workflowrecipe.js'
import type { RecipeDeps } from './deps.js'
import type { RecipeKube } from './kube-verbs.js'
import type { RecipeReads, StoredSnapshot } from './reads.js'

/** One reconcile's working state: what it read, wrote and will announce. */
export interface RecipeWork {
  deps: RecipeDeps<RecipeKube>
  recipe: WorkflowRecipe
  namespace: string
  name: string
  uid: string
  /** The resourceVersion the next recipe write is guarded by. */
  resourceVersion: string
  reads: RecipeReads
  snapshots: Map<number, StoredSnapshot>
  /** What the writes of the current pass tell (the shell collects them with the plan's). */
  transitions: Transition[]
  writes: number
  now: string
  /** Digest of the latest generation's render (the snapshot `digest` it would write), when valid. */
  renderDigest?: string
  /** The latest generation's objects, built once (prerequisites look at their names and sources). */
  latest?: RevisionObjects
  /** Fresh builds of this generation by revision (revision numbers only change labels). */
  builds: Map<number, RevisionObjects>
}

/** Deletes one own child (uid precondition: a same-named newcomer is never touched). */
export async function remove(work: RecipeWork, d: PlannedDelete): Promise<void> {
  const live = work.reads.get(d.kind, d.namespace, d.name)
  if (!live || !isOwnedBy(live, work.uid)) return
  await work.deps.kube.deleteChild(d.kind as ChildKind, d.namespace, d.name, { propagationPolicy: d.propagationPolicy, ...(live.metadata?.uid ? { uid: live.metadata.uid } : {}) })
  work.writes++
  work.reads.forget(d.kind, d.namespace, d.name)
  work.transitions.push({
    kind: 'workload.deleted', type: 'Normal', reason: 'WorkloadDeleted', message: `deleted ${d.key}`, record: true,
    data: { workload: d.workload ?? '', kind: d.kind, object: `${d.namespace}/${d.name}` },
  })
}
