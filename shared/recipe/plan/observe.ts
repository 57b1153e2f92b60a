/**
 * From what a shell read to the facts the lifecycle planner is told (lifecycle-facts.ts). Pure:
 * the shell passes the live objects it fetched (by {@link objectKey}), the source Secrets,
 * Namespaces and Agents; nothing here reads the clock but through `now`.
 */
import type { WorkflowRecipe } from '../../schemas/workflowrecipe.js'
import { isOwnedBy, liveObject, objectKey, planDeploy, readinessFromLive, type DeployPlan, type InventoryEntry, type LiveObject, type LiveObjects } from './deploy-plan.js'
import { ANNOTATION_MANIFEST_DIGEST } from './labels.js'
import type { PrerequisiteProblem, ReadinessFacts, TestFact, TestsFacts, ChildWorkflowFacts, WorkloadFact } from './lifecycle-facts.js'
import type { RecipeChild, RecipeObjects, TestObjects } from './objects.js'

/** The objects of one revision the shell works with (a snapshot rebuilt, or a fresh build). */
export type RevisionObjects = Pick<RecipeObjects, 'revision' | 'workloads' | 'children'> & { tests?: TestObjects[]; workflow?: RecipeChild }

type Status = NonNullable<WorkflowRecipe['status']>

interface Condition { type?: string; status?: string; reason?: string; message?: string }

function conditions(o: LiveObject | undefined): Condition[] {
  const status = o?.status as { conditions?: Condition[] } | undefined
  return status?.conditions ?? []
}

function trueCondition(o: LiveObject | undefined, type: string): Condition | undefined {
  return conditions(o).find((c) => c.type === type && c.status === 'True')
}

/** Keys of every object the planners may look at for these revisions (desired and previous). */
export function keysOf(objects: readonly RevisionObjects[], previous: readonly InventoryEntry[] = []): string[] {
  const keys = new Set<string>()
  for (const o of objects) for (const c of [...o.children, ...(o.tests ?? []).flatMap((t) => t.children), ...(o.workflow ? [o.workflow] : [])]) keys.add(objectKey(c.kind, c.namespace, c.name))
  for (const e of previous) keys.add(objectKey(e.kind, e.namespace, e.name))
  return [...keys]
}

/**
 * Readiness facts of revision `objects.revision` (spec §6), with the deploy plan they came from
 * (its `done` says whether pruning finished). `applyFailures` are the workloads the API server
 * refused in this reconcile (`ApplyFailed`, message copied).
 */
export function readinessFacts(
  objects: RevisionObjects, live: LiveObjects, now: string, options: {
    uid: string
    previous?: InventoryEntry[]
    completedJobs?: readonly string[]
    applyFailures?: ReadonlyMap<string, string>
    /** Last reported rows, for `firstAppliedAt` (the time a row left `Waiting`). */
    rows?: Status['workloads']
  },
): { facts: ReadinessFacts; plan: DeployPlan } {
  const readiness = readinessFromLive(objects, live, now, options.completedJobs)
  const plan = planDeploy({
    uid: options.uid, desired: objects, live, readiness,
    ...(options.previous ? { previous: options.previous } : {}),
    ...(options.completedJobs ? { completedJobs: options.completedJobs } : {}),
  })
  const rows = new Map((options.rows ?? []).map((r) => [r.name, r]))
  const workloads: WorkloadFact[] = [...objects.workloads].sort((a, b) => a.order - b.order).map((w) => {
    const main = w.children.find((c) => c.component === 'workload') ?? w.children.find((c) => c.kind === 'MCPServer')
    const found = main ? liveObject(live, objectKey(main.kind, main.namespace, main.name)) : undefined
    const state = readiness[w.name]
    const completedJob = w.kind === 'Job' && !found && (options.completedJobs ?? []).includes(w.objectName)
    const fact: WorkloadFact = {
      name: w.name, kind: w.kind as WorkloadFact['kind'], namespace: w.namespace, objectName: w.objectName,
      ready: state?.ready ?? false,
      missing: !found && !completedJob,
    }
    const refused = options.applyFailures?.get(w.name)
    if (refused !== undefined) fact.failed = { reason: 'ApplyFailed', message: refused }
    else if (state?.failed) fact.failed = { reason: state.failed.reason as 'JobFailed', message: state.failed.message }
    if (state?.message) fact.message = state.message
    const status = found?.status as { replicas?: number; readyReplicas?: number } | undefined
    const desiredReplicas = (main?.manifest.spec as { replicas?: number } | undefined)?.replicas
    if (desiredReplicas !== undefined) fact.replicas = desiredReplicas
    if (status?.readyReplicas !== undefined) fact.readyReplicas = status.readyReplicas
    const row = rows.get(w.name)
    if (row?.since && (row.phase === 'Progressing' || row.phase === 'NotReady' || row.phase === 'Ready')) fact.firstAppliedAt = row.since
    else if (found && typeof found.metadata?.creationTimestamp === 'string') fact.firstAppliedAt = found.metadata.creationTimestamp
    return fact
  })
  const applied = objects.children.some((c) => {
    const o = liveObject(live, objectKey(c.kind, c.namespace, c.name))
    return o !== undefined && isOwnedBy(o, options.uid) && o.metadata?.annotations?.[ANNOTATION_MANIFEST_DIGEST] === c.digest
  })
  return { facts: { revision: objects.revision, applied, workloads, pruned: plan.pruneRemaining.length === 0 && plan.prune.length === 0 }, plan }
}

/** The child Workflow's roll-up (spec §5.10) for the lifecycle. */
export function childWorkflowFacts(revision: number, workflow: LiveObject | undefined): ChildWorkflowFacts | undefined {
  if (!workflow) return undefined
  const status = workflow.status as { phase?: string; message?: string } | undefined
  const phase = status?.phase
  const mapped: ChildWorkflowFacts['phase'] = phase === 'Succeeded' || phase === 'CompletedWithErrors' || phase === 'Failed' || phase === 'Pending' ? phase
    : phase === 'Cancelled' ? 'Failed' : phase === undefined ? 'Pending' : 'Running'
  return { revision, phase: mapped, ...(status?.message ? { message: status.message } : {}) }
}

function lastLines(log: string | null | undefined, n: number): string {
  if (!log) return ''
  return log.split('\n').filter((l) => l.trim() !== '').slice(-n).join('\n')
}

/** One test Job's state (spec §2.9); a failed test's message ends with the last 5 lines of its log. */
export function testFact(test: TestObjects, job: LiveObject | undefined, log?: string | null): TestFact {
  const fact: TestFact = { name: test.name, jobName: test.jobName, phase: 'Pending' }
  if (!job) return fact
  const status = job.status as { startTime?: string; completionTime?: string; active?: number } | undefined
  if (status?.startTime) fact.startTime = String(status.startTime)
  if (status?.completionTime) fact.completionTime = String(status.completionTime)
  const complete = trueCondition(job, 'Complete')
  const failed = trueCondition(job, 'Failed')
  if (complete) fact.phase = 'Succeeded'
  else if (failed) {
    fact.phase = 'Failed'
    if (failed.reason) fact.failedReason = failed.reason
    const lines = lastLines(log, 5)
    const base = failed.message ?? failed.reason ?? 'the test Job failed'
    fact.message = lines ? `${base}; last log lines:\n${lines}` : base
  } else fact.phase = 'Running'
  return fact
}

export function testsFacts(revision: number, tests: readonly TestObjects[], jobs: LiveObjects, logs: ReadonlyMap<string, string | null> = new Map()): TestsFacts {
  return {
    revision,
    results: tests.map((t) => testFact(t, liveObject(jobs, objectKey('Job', t.namespace, t.jobName)), logs.get(t.jobName))),
  }
}

/** What a shell read for spec §7.4. */
export interface PrerequisiteReads {
  recipeNamespace: string
  /** Target namespaces: present (with `terminating`) or absent. */
  namespaces: ReadonlyMap<string, { terminating: boolean } | null>
  /** Source Secrets of the recipe namespace by name: their keys, or null when absent. */
  secrets: ReadonlyMap<string, readonly string[] | null>
  /** Agents of the steps by name: present or not. */
  agents: ReadonlyMap<string, boolean>
  /** Foreign objects under desired names (deploy-plan conflicts). */
  conflicts: readonly { message: string }[]
}

/** Every failing prerequisite (spec §7.4), in the table's order. */
export function prerequisiteProblems(objects: RevisionObjects | undefined, reads: PrerequisiteReads): PrerequisiteProblem[] {
  const out: PrerequisiteProblem[] = []
  for (const [ns, found] of [...reads.namespaces.entries()].sort((a, b) => a[0].localeCompare(b[0]))) {
    if (!found || found.terminating) out.push({ reason: 'NamespaceMissing', message: `namespace "${ns}" does not exist` })
  }
  const sources = new Map<string, { key: string; optional: boolean }[]>()
  for (const c of [...(objects?.children ?? []), ...(objects?.tests ?? []).flatMap((t) => t.children)]) {
    for (const s of c.secretCopy?.sources ?? []) {
      const list = sources.get(s.name) ?? []
      list.push({ key: s.key, optional: s.optional })
      sources.set(s.name, list)
    }
  }
  const keyProblems: PrerequisiteProblem[] = []
  const seenKey = new Set<string>()
  for (const [name, keys] of sources) {
    const present = reads.secrets.get(name)
    if (present === null || present === undefined) {
      out.push({ reason: 'SecretMissing', message: `Secret "${name}" not found in namespace "${reads.recipeNamespace}"` })
      continue
    }
    for (const k of keys) {
      if (k.optional || present.includes(k.key) || seenKey.has(`${name}/${k.key}`)) continue
      seenKey.add(`${name}/${k.key}`)
      keyProblems.push({ reason: 'SecretKeyMissing', message: `Secret "${name}" has no key "${k.key}"` })
    }
  }
  out.push(...keyProblems)
  for (const [agent, present] of reads.agents) {
    if (!present) out.push({ reason: 'AgentMissing', message: `Agent "${agent}" not found in namespace "${reads.recipeNamespace}"` })
  }
  for (const c of reads.conflicts) out.push({ reason: 'NameConflict', message: c.message })
  return out
}
