/**
 * What the lifecycle planner (lifecycle/plan.ts, spec §7) is told: the facts a shell reads
 * before planning one WorkflowRecipe. Types only; every field is something the shell can read
 * or compute with the pure stage-1 functions (renderRecipe, snapshot, evaluatePolicies,
 * workloadReadiness). Annotations and the spec are read from the recipe itself, not from here.
 */
import type { PolicyOutcome } from './policy.js'
import type { SpecError } from './rendered.js'

/** `status.resolved` of a valid generation (spec §9): string values already cut to 256 characters. */
export interface ResolvedFacts {
  profile: string
  inputs: Record<string, string | number | boolean>
  computed: Record<string, string | number | boolean>
  /** Included workloads in spec order. */
  included: string[]
  excluded: string[]
  /** Included workloads in topological order (spec §7.11). */
  order: string[]
}

/**
 * The latest generation after spec §1 steps 1-6: either valid, with the revision-independent render
 * digest of the snapshot (64 hex, `renderDigest`), or the `SpecValid` errors in pipeline order
 * (a snapshot over 900 KiB is reported as a `RevisionTooLarge` error here).
 */
export type RenderFacts =
  | { ok: true; digest: string; resolved: ResolvedFacts; missingInputs?: string[] }
  | { ok: false; errors: SpecError[] }

/** spec §10 outcome for the latest generation; `'unavailable'` when policies could not be listed (PolicyCompliant Unknown). */
export type PolicyFacts = Pick<PolicyOutcome, 'evaluated' | 'violations' | 'totalViolations' | 'compliant' | 'rejected' | 'reason' | 'message' | 'approval'> | 'unavailable'

/** One failing prerequisite (spec §7.4) with the spec's reason and message, in the table's order. */
export interface PrerequisiteProblem {
  reason: 'NamespaceMissing' | 'SecretMissing' | 'SecretKeyMissing' | 'MCPServerAPIMissing' | 'AgentMissing' | 'NameConflict'
  message: string
}

/** spec §6 readiness of one included workload against the observed revision. */
export interface WorkloadFact {
  name: string
  kind: 'Deployment' | 'StatefulSet' | 'DaemonSet' | 'Job' | 'CronJob'
  namespace?: string
  objectName?: string
  ready: boolean
  /** No object of this workload exists (never applied in this revision, or deleted: ChildMissing). */
  missing?: boolean
  /** Failed for good: a Job `Failed=True` (`JobFailed`) or the API server refused a write (`ApplyFailed`). */
  failed?: { reason: 'JobFailed' | 'ApplyFailed'; message: string }
  /** Best available detail (spec §6). */
  message?: string
  replicas?: number
  readyReplicas?: number
  /** First apply of this workload in the observed revision (for `readinessTimeoutSeconds`). */
  firstAppliedAt?: string
}

/**
 * Readiness of the children against one revision: in `Deploying`/`Testing` the revision being
 * deployed, in `RollingBack` its target, otherwise `currentRevision`. Facts about another
 * revision are ignored (stale), which makes a plan safe against reordered events.
 */
export interface ReadinessFacts {
  revision: number
  /** At least one child of `revision` was written (`currentRevision` becomes `revision`, spec §7.9). */
  applied: boolean
  /** Every included workload, in `status.resolved.order` (of that revision). */
  workloads: WorkloadFact[]
  /** The previous revision's objects that `revision` does not have are gone (spec §7.11). */
  pruned: boolean
}

/** The child Workflow of the observed revision (only with steps). */
export interface ChildWorkflowFacts {
  revision: number
  phase: 'Pending' | 'Running' | 'Succeeded' | 'CompletedWithErrors' | 'Failed'
  message?: string
}

/** One test Job of the revision under test. */
export interface TestFact {
  name: string
  jobName: string
  phase: 'Pending' | 'Running' | 'Succeeded' | 'Failed'
  startTime?: string
  completionTime?: string
  /** The Job's `Failed` condition reason (`DeadlineExceeded` = a timeout) and message with the last 5 log lines. */
  failedReason?: string
  message?: string
}

export interface TestsFacts {
  revision: number
  results: TestFact[]
}

/** Drift of the current revision's children (spec §7.8), as the drift planner found it. */
export interface DriftFacts {
  detected: boolean
}

export interface LifecycleFacts {
  render: RenderFacts
  policy: PolicyFacts
  /** Failing prerequisites of the latest valid generation; `[]` when all hold. */
  prerequisites: PrerequisiteProblem[]
  readiness?: ReadinessFacts
  workflow?: ChildWorkflowFacts
  tests?: TestsFacts
  /** Revisions whose snapshot ConfigMap `<recipe>-rev-<N>` exists. */
  snapshots: number[]
  drift?: DriftFacts
}
