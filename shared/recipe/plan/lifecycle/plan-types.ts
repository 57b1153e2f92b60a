/**
 * What the lifecycle planner hands the shell (spec §7, §13): the plan, the one action it asks for,
 * and the transitions to announce. Those spec §13 names a CloudEvent for are published as
 * `dev.kinetic.recipe.<transition kind>`; the others (`publish: false`) are Kubernetes Events only.
 */
import type { ControllerPlan, Transition } from '../../../core/plan.js'
import type { WorkflowRecipeStatus } from '../../../schemas/workflowrecipe.js'

/** What to do next; the deploy/rollback/drift planners of L2 decide how. */
export type LifecycleAction =
  | { type: 'none' }
  /** Nothing to write until a fact changes or `until` passes (PendingApproval, Pending). */
  | { type: 'wait'; until?: string }
  /** Apply revision N's children in dependency order and prune the previous revision (spec §7.11). */
  | { type: 'deploy'; revision: number }
  /** Create (or keep) the test Jobs of revision N (spec §2.9). */
  | { type: 'test'; revision: number }
  /** Re-apply the snapshot of `to` and remove what `from` has and `to` lacks (spec §7.9). */
  | { type: 'rollback'; from: number; to: number }
  /** Keep the current revision as declared: drift detection and correction (spec §7.8). */
  | { type: 'maintain'; revision: number }
  /** The recipe is being deleted: the deletion planner takes over (spec §11). */
  | { type: 'delete' }

export interface LifecyclePlan extends ControllerPlan {
  transitions: Transition[]
  /** The complete next status. */
  status: WorkflowRecipeStatus
  /** The status differs from the recipe's current one (write it). */
  changed: boolean
  action: LifecycleAction
  /** Add `purko.io/recipe-finalizer` before any child is written (never on templates, spec §11). */
  addFinalizer: boolean
  /** Write the snapshot ConfigMap of this revision before any of its children (T11, spec §7.9). */
  writeSnapshot?: number
  /** An in-flight revision was abandoned (spec §7.6): delete its test Jobs, cancel its child Workflow. */
  abandon?: number
  /** Revision snapshots beyond `revisionHistoryLimit` to delete (current, last good and in-flight kept). */
  pruneSnapshots: number[]
  /** Earliest pending deadline (also in `status.nextCheckAt`). */
  nextCheckAt?: string
}
