import type { V1ConfigMap } from '@kubernetes/client-node'
import { armTickAlarmIfSooner, type ReconcileFrom } from '../ticks/alarm.js'
import { ConflictError, RefusedError, TransientError } from '../core/errors.js'
import type { ChildKind, ChildObject } from '../kube/port.js'
import { recipeCloudEvents } from './plan/cloud-events.js'
import { isOwnedBy, objectKey, planDeploy, readinessFromLive, type DeployPlan, type InventoryEntry, type PlannedWrite } from './plan/deploy-plan.js'
import { canonicalJson } from './plan/digest.js'
import { planDrift, type DriftPlan } from './plan/drift.js'
import type { LifecycleFacts, PolicyFacts, RenderFacts, WorkloadFact } from './plan/lifecycle-facts.js'
import { selectorLabels } from './plan/labels.js'
import { FINALIZER } from './plan/lifecycle/annotations.js'
import { planLifecycle } from './plan/lifecycle/plan.js'
import type { LifecyclePlan, RecipeTransition } from './plan/lifecycle/plan-types.js'
import { observedRevision } from './plan/lifecycle/revisions.js'
import { buildManifests } from './plan/manifests.js'
import type { RecipeChild, TestObjects } from './plan/objects.js'
import { podWaitingDetail } from '../kube/pod-waiting.js'
import { prerequisiteProblems, readinessFacts, testsFacts, workflowFacts, type RevisionObjects } from './plan/observe.js'
import { evaluatePolicies, type NamespaceLabels, type PolicyOutcome } from './plan/policy.js'
import { isTemplate, renderRecipe } from './plan/render.js'
import type { RenderOk } from './plan/rendered.js'
import { snapshotInventory, snapshotObjects, type RevisionSnapshot } from './plan/rollback.js'
import { withSecretData } from './plan/secrets.js'
import { snapshot, withCompletedJob } from './plan/snapshot.js'
import { withDetails } from './plan/status-details.js'
import { kubernetesEventFor } from '../core/kube-events.js'
import type { WorkflowRecipe, WorkflowRecipeStatus } from '../schemas/workflowrecipe.js'
import { retryingConflicts } from '../engine/controller.js'
import type { RecipeDeps } from './deps.js'
import { RecipeReads, storedSnapshotOf, type ChildRef } from './reads.js'
import { deleteRecipe } from './deletion.js'
import { remove, type RecipeWork } from './work.js'
import { recordRecipeSpans } from '../telemetry/recipe-progress.js'

export type { RecipeDeps } from './deps.js'

/** What one reconcile did, for logs, tests and benchmarks. */
export interface RecipeOutcome {
  result: 'gone' | 'unchanged' | 'applied'
  phase?: string
  /** Writes to the API server (children, snapshots, the recipe). */
  writes: number
  /** Reads made to plan. */
  reads: number
}

/** Whole reconciles tried when another writer wins a race. */
const TRIES = 4
/** Plan → act rounds in one reconcile: a fresh recipe goes Candidate…Deploying, applies, then sees what it applied. */
const MAX_PASSES = 4

const IN_FLIGHT = new Set(['Candidate', 'Approved', 'Pending', 'Deploying', 'Testing', 'RollingBack'])
const SETTLED = new Set(['Active', 'Degraded'])

/**
 * An event about this recipe needs a reconcile: no status yet, a new generation, a deadline
 * passed, a revision in flight, or a deletion. Echoes of our own status writes are none of these.
 */
export function recipeIsDue(recipe: WorkflowRecipe, now: string): boolean {
  const st = recipe.status
  if (recipe.metadata.deletionTimestamp) return true
  if (!st?.phase) return true
  if ((recipe.metadata.generation ?? 0) > (st.observedGeneration ?? 0)) return true
  if (st.nextCheckAt && Date.parse(st.nextCheckAt) <= Date.parse(now)) return true
  return IN_FLIGHT.has(st.phase) && !isTemplate(recipe)
}

/**
 * The resync tick's share (spec §7.10, §7.8, §7.4): everything due, plus settled recipes (drift and
 * readiness are re-checked every tick) and recipes whose outcome a policy change may alter.
 */
export function recipeNeedsResync(recipe: WorkflowRecipe, now: string): boolean {
  if (recipeIsDue(recipe, now)) return true
  const phase = recipe.status?.phase ?? ''
  return SETTLED.has(phase) || phase === 'PendingApproval' || phase === 'Rejected'
}

/**
 * Pure: when the recipes tick should next look at this recipe: now when it is due (in flight,
 * deleting, a new generation, a passed deadline), else its next deadline; undefined at rest
 * (settled recipes are re-checked by the hourly heartbeat and by their children's events).
 */
export function recipeAlarmDue(recipe: WorkflowRecipe, now: string): string | undefined {
  if (recipeIsDue(recipe, now)) return now
  return recipe.status?.nextCheckAt
}

/** Pure: the due time a status write adds (in flight: now; else its deadline), for the recipes alarm. */
function statusAlarmDue(recipe: WorkflowRecipe, status: WorkflowRecipeStatus, now: string): string | undefined {
  if (status.phase && IN_FLIGHT.has(status.phase) && !isTemplate(recipe)) return now
  return status.nextCheckAt
}

/**
 * Reads a WorkflowRecipe fresh and moves it along its lifecycle (spec §7): render, policies,
 * prerequisites, readiness, tests and drift become facts; the pure planner decides; children are
 * written (finalizer and snapshot first), status last, guarded by resourceVersion. A lost race
 * re-plans from fresh state a few times, then reaches the Broker as a 409.
 */
export async function reconcileRecipe(deps: RecipeDeps, namespace: string, name: string, options: ReconcileFrom = {}): Promise<RecipeOutcome> {
  return retryingConflicts(TRIES, () => reconcileOnce(deps, namespace, name, options.tick !== true))
}

async function reconcileOnce(deps: RecipeDeps, namespace: string, name: string, arms: boolean): Promise<RecipeOutcome> {
  const recipe = await deps.kube.getRecipe(namespace, name)
  if (!recipe) return { result: 'gone', writes: 0, reads: 1 }
  const reads = new RecipeReads(deps.kube, namespace)
  const uid = recipe.metadata.uid ?? ''
  const work: RecipeWork = {
    deps, recipe, namespace, name, uid,
    resourceVersion: recipe.metadata.resourceVersion ?? '',
    reads, snapshots: new Map(), transitions: [], writes: 0, builds: new Map(),
    now: deps.now().toISOString(),
  }
  if (recipe.metadata.deletionTimestamp) {
    if (!(recipe.metadata.finalizers ?? []).includes(FINALIZER)) return { result: 'unchanged', writes: 0, reads: 1 }
    work.snapshots = (await reads.snapshots(uid)).byRevision
    await deleteRecipe(work)
    await announce(work)
    return outcome(work, recipe.status?.phase)
  }
  const template = isTemplate(recipe)
  // A snapshot of a revision status never recorded is a crash's leftover, possibly of an older generation: not a fact.
  if (!template) {
    const { byRevision, damaged } = await reads.snapshots(uid)
    // Never guessed at: a damaged snapshot is no revision to deploy, roll back to or prune from.
    for (const message of damaged) deps.log.warn({ namespace, name }, message)
    work.snapshots = new Map([...byRevision].filter(([n]) => n <= (recipe.status?.revision ?? 0)))
  }

  const rendered = renderRecipe(recipe, deps.recipes)
  const render = renderFactsOf(work, rendered)
  const policy = await policyFactsOf(work, rendered)

  let status: WorkflowRecipeStatus = recipe.status ?? {}
  const failures = new Map<string, string>()
  let warned = false
  for (let pass = 0; pass < MAX_PASSES; pass++) {
    const current: WorkflowRecipe = { ...work.recipe, status }
    const gathered = await gather(work, current, rendered, render, policy.facts, failures)
    const plan = planLifecycle(current, gathered.facts, work.now)
    work.transitions.push(...plan.transitions)
    status = withDetails(plan.status, gathered.objects, work.reads.liveObjects(), gathered.facts.tests)
    if (!warned && policy.outcome && policy.outcome.warnings.length > 0 && plan.transitions.some((t) => t.kind === 'revision.created')) {
      warned = true
      for (const v of policy.outcome.warnings) note(work, 'PolicyWarning', `${v.policy}: ${v.rule}: ${v.message}`, 'Warning')
    }
    const acted = await act(work, { ...current, status }, plan, rendered, gathered, failures)
    if (!acted) break
  }

  if (canonicalJson(status) !== canonicalJson(recipe.status ?? {})) {
    try {
      await deps.kube.replaceRecipeStatus(namespace, name, work.resourceVersion, status)
    } catch (err) {
      // Another reconcile won the race and re-plans the phase; the writes this one made are
      // real all the same, so they are still told (the retry finds them done and says nothing).
      if (err instanceof ConflictError) await announce({ ...work, transitions: work.transitions.filter(isWorldChange) })
      throw err
    }
    work.writes++
    recordRecipeSpans(recipe, status, work.now)
    // A revision now in flight, or a deadline sooner than the one before: the recipes alarm fires by then.
    if (arms) await armTickAlarmIfSooner(deps, 'recipes-resync', recipe.status ? statusAlarmDue(recipe, recipe.status, work.now) : undefined, statusAlarmDue(recipe, status, work.now))
  }
  await announce({ ...work, recipe: { ...recipe, status } })
  return outcome(work, status.phase)
}

function outcome(work: RecipeWork, phase: string | undefined): RecipeOutcome {
  return { result: work.writes > 0 || work.transitions.length > 0 ? 'applied' : 'unchanged', writes: work.writes, reads: work.reads.calls.reads + 1, ...(phase ? { phase } : {}) }
}

/** Transitions that report a write to a child (not a phase the next attempt re-plans). */
function isWorldChange(t: RecipeTransition): boolean {
  return t.kind.startsWith('workload.') || t.kind === 'drift.corrected'
}

function note(work: RecipeWork, reason: string, message: string, type: 'Normal' | 'Warning' = 'Normal', extra: Partial<RecipeTransition> = {}): void {
  work.transitions.push({ kind: 'event', type, reason, message, record: true, ...extra })
}

// ---------------------------------------------------------------------------------------------
// Facts

/** spec §1 steps 1-6 of the latest generation as the planner's facts; keeps the digest and the built objects. */
function renderFactsOf(work: RecipeWork, rendered: ReturnType<typeof renderRecipe>): RenderFacts {
  const { recipe } = work
  if (!rendered.ok) return { ok: false, errors: rendered.errors }
  const snap = snapshot(recipe, rendered, work.deps.recipes, 1)
  if (!snap.ok) return { ok: false, errors: [snap.error] }
  work.renderDigest = snap.digest
  work.latest = snap.objects
  work.builds.set(1, snap.objects)
  const order = new Set(rendered.order)
  return {
    ok: true,
    digest: snap.digest,
    resolved: {
      profile: rendered.profile,
      inputs: rendered.inputs,
      computed: rendered.computed,
      included: (recipe.spec.workloads ?? []).map((w) => w.name).filter((n) => order.has(n)),
      excluded: [...rendered.excluded],
      order: [...rendered.order],
    },
    ...(rendered.missingInputs && rendered.missingInputs.length > 0 ? { missingInputs: rendered.missingInputs } : {}),
  }
}

const NO_POLICY: PolicyOutcome = {
  evaluated: [], violations: [], totalViolations: 0, compliant: true, rejected: false, reason: 'Compliant', message: '', warnings: [],
  approval: { required: false, requiredBy: [] },
}

/** spec §10 for the latest generation; Unknown (`unavailable`) when the policies cannot be listed. */
async function policyFactsOf(work: RecipeWork, rendered: ReturnType<typeof renderRecipe>): Promise<{ facts: PolicyFacts; outcome?: PolicyOutcome }> {
  if (!rendered.ok) return { facts: NO_POLICY }
  try {
    const policies = await work.deps.kube.listRecipePolicies()
    work.reads.calls.reads++
    const namespaces = new Set([work.namespace, ...rendered.workloads.map((w) => w.namespace), ...rendered.tests.map((t) => t.namespace)])
    const labels: Record<string, Record<string, string> | undefined> = {}
    for (const ns of namespaces) labels[ns] = (await work.reads.namespace(ns))?.labels
    const outcome = evaluatePolicies(work.recipe, rendered, undefined, policies, labels as NamespaceLabels)
    return { facts: outcome, outcome }
  } catch (err) {
    if (err instanceof TransientError) {
      work.deps.log.warn({ err: err.message }, 'WorkflowRecipePolicies could not be listed; PolicyCompliant is Unknown')
      return { facts: 'unavailable' }
    }
    throw err
  }
}

/**
 * Revision N's objects: its snapshot once written; before that, only for the revision just
 * allocated for this generation, a fresh build (the snapshot will record exactly that).
 * Any other revision without a snapshot has no objects: nothing is ever re-rendered for it.
 */
function objectsOf(work: RecipeWork, st: WorkflowRecipeStatus, revision: number, rendered: ReturnType<typeof renderRecipe>): RevisionObjects | undefined {
  const stored = work.snapshots.get(revision)
  const entry = st.revisions?.find((e) => e.revision === revision)
  const fresh = rendered.ok && revision > 0 && revision === st.revision && entry?.state === 'InProgress' && entry.generation === work.recipe.metadata.generation
  // The revision being deployed for this generation: the fresh build is what its snapshot
  // recorded (same digest) and keeps the real dependency graph, so independent workloads go in
  // parallel (spec §7.11); a snapshot alone only knows the order (rollbacks follow it strictly).
  if (fresh && (!stored || stored.snapshot.digest === work.renderDigest)) {
    let built = work.builds.get(revision)
    if (!built) work.builds.set(revision, (built = buildManifests(work.recipe, rendered, work.deps.recipes, revision)))
    return built
  }
  return stored ? fromSnapshot(stored.snapshot) : undefined
}

function fromSnapshot(s: RevisionSnapshot): RevisionObjects {
  const objects = snapshotObjects(s)
  const workflow = objects.children.find((c) => c.kind === 'Workflow')
  const tests = new Map<string, RecipeChild[]>()
  for (const c of objects.children) {
    if (c.test === undefined) continue
    tests.set(c.test, [...(tests.get(c.test) ?? []), c])
  }
  const testObjects: TestObjects[] = [...tests.entries()].map(([name, children]) => {
    const job = children.find((c) => c.kind === 'Job')
    return { name, namespace: job?.namespace ?? children[0]!.namespace, jobName: job?.name ?? '', children }
  })
  return { ...objects, tests: testObjects, ...(workflow ? { workflow } : {}) }
}

function refsOf(children: readonly RecipeChild[]): ChildRef[] {
  return children.map((c) => ({ kind: c.kind, namespace: c.namespace, name: c.name }))
}

/**
 * What a deploy or rollback of `revision` prunes from (spec §7.11, §7.9): every other revision whose
 * snapshot is kept. Not only `currentRevision`, which becomes N with N's first write, so the
 * revision N replaces would be forgotten half-way; and an abandoned revision's leftovers go too.
 * Names are mostly stable across revisions, so this adds few reads; nothing is deleted that N
 * declares, that is not of a kind Kinetic creates, or that lacks this recipe's UID. Settled
 * phases prune nothing.
 */
function previousInventory(work: RecipeWork, st: WorkflowRecipeStatus, revision: number): InventoryEntry[] {
  if (st.phase !== 'Deploying' && st.phase !== 'RollingBack') return []
  return [...work.snapshots.keys()].filter((n) => n !== revision).sort((a, b) => b - a).flatMap((n) => snapshotInventory(work.snapshots.get(n)!.snapshot))
}

/** What one planning pass was told, and what it needs to act on it. */
interface Gathered {
  facts: LifecycleFacts
  drift?: DriftPlan
  /** The observed revision's objects (status details are read from their live state). */
  objects?: RevisionObjects
}

async function gather(
  work: RecipeWork, recipe: WorkflowRecipe, rendered: ReturnType<typeof renderRecipe>, render: RenderFacts, policy: PolicyFacts, failures: ReadonlyMap<string, string>,
): Promise<Gathered> {
  const st = recipe.status ?? {}
  const { reads, uid, now } = work
  const facts: LifecycleFacts = { render, policy, prerequisites: [], snapshots: [...work.snapshots.keys()].sort((a, b) => a - b) }
  const out: Gathered = { facts }
  if (isTemplate(recipe)) return out

  // Prerequisites of the latest valid generation (spec §7.4), also re-checked when settled.
  if (rendered.ok && work.latest) facts.prerequisites = await prerequisitesOf(work, rendered, work.latest)

  const revision = observedRevision(st)
  const objects = revision > 0 ? objectsOf(work, st, revision, rendered) : undefined
  if (!objects) return out
  out.objects = objects
  const previous = previousInventory(work, st, revision)
  await reads.load([...refsOf(objects.children), ...refsOf((objects.tests ?? []).flatMap((t) => t.children)), ...previous])
  const live = reads.liveObjects()
  const completedJobs = work.snapshots.get(revision)?.snapshot.completedJobs ?? []
  const ready = readinessFacts(objects, live, now, { uid, previous, completedJobs, applyFailures: failures, rows: st.workloads })
  facts.readiness = ready.facts
  await addPodDetails(work, objects, ready.facts.workloads)

  if (objects.workflow) facts.workflow = workflowFacts(revision, live.get(objectKey('Workflow', objects.workflow.namespace, objects.workflow.name)))
  if (facts.workflow === undefined) delete facts.workflow

  if (st.phase === 'Testing' && objects.tests && objects.tests.length > 0) {
    const logs = new Map<string, string | null>()
    for (const t of objects.tests) {
      const job = live.get(objectKey('Job', t.namespace, t.jobName))
      const failed = ((job?.status as { conditions?: { type?: string; status?: string }[] } | undefined)?.conditions ?? []).some((c) => c.type === 'Failed' && c.status === 'True')
      if (failed) logs.set(t.jobName, await work.deps.kube.readJobLog(t.namespace, t.jobName).catch(() => null))
    }
    facts.tests = testsFacts(revision, objects.tests, live, logs)
  }

  if (SETTLED.has(st.phase ?? '')) {
    const readiness = readinessFromLive(objects, live, now, completedJobs)
    const drift = planDrift({
      uid, children: objects.workloads.flatMap((w) => w.children), live,
      driftPolicy: recipe.spec.driftPolicy ?? 'Correct', phase: st.phase ?? '', deleting: false, completedJobs,
      mcpServerWritten: (c) => c.workload === undefined || readiness[c.workload]?.mainReady === true,
      previouslyDrifted: (st.conditions ?? []).some((c) => c.type === 'Drifted'),
    })
    facts.drift = { detected: drift.drift.length > 0 }
    out.drift = drift
  }
  return out
}

/** Pod-level detail for workloads that exist but are not Ready (a waiting container says why). */
async function addPodDetails(work: RecipeWork, objects: RevisionObjects, facts: WorkloadFact[]): Promise<void> {
  for (const f of facts) {
    if (f.ready || f.missing || f.failed || f.kind === 'Job' || f.kind === 'CronJob') continue
    const w = objects.workloads.find((x) => x.name === f.name)
    if (!w) continue
    work.reads.calls.reads++
    const detail = podWaitingDetail(await work.deps.kube.listPods(w.namespace, selectorLabels(w.base)))
    if (detail) f.message = f.message ? `${detail}; ${f.message}` : detail
  }
}

async function prerequisitesOf(work: RecipeWork, rendered: RenderOk, latest: RevisionObjects): Promise<LifecycleFacts['prerequisites']> {
  const { reads, namespace, uid } = work
  const targets = [...new Set([...latest.children, ...(latest.tests ?? []).flatMap((t) => t.children)].map((c) => c.namespace))].filter((ns) => ns !== namespace)
  const namespaces = new Map<string, { terminating: boolean } | null>()
  for (const ns of targets) namespaces.set(ns, await reads.namespace(ns))
  const secretNames = new Set([...latest.children, ...(latest.tests ?? []).flatMap((t) => t.children)].flatMap((c) => (c.secretCopy?.sources ?? []).map((s) => s.name)))
  const secrets = new Map<string, string[] | null>()
  for (const s of secretNames) {
    const found = await reads.secret(s)
    secrets.set(s, found ? Object.keys(found.data ?? {}) : null)
  }
  const agents = new Map<string, boolean>()
  for (const step of rendered.steps ?? []) agents.set(step.agent, await reads.agent(step.agent))
  // Foreign objects under our names (spec §5.2): only where the namespace exists.
  const present = latest.children.filter((c) => namespaces.get(c.namespace) !== null)
  await reads.load(refsOf(present))
  const conflicts = present.flatMap((c) => {
    const o = reads.get(c.kind, c.namespace, c.name)
    return o && !isOwnedBy(o, uid) ? [{ message: `${objectKey(c.kind, c.namespace, c.name)} already exists and is not managed by this recipe` }] : []
  })
  return prerequisiteProblems(latest, { recipeNamespace: namespace, namespaces, secrets, agents, conflicts })
}

// ---------------------------------------------------------------------------------------------
// Acting on a plan

/**
 * Carries out one lifecycle plan: finalizer, snapshot, abandonment, then the action. Returns
 * whether the world changed in a way the planner should see before status is written.
 */
async function act(
  work: RecipeWork, recipe: WorkflowRecipe, plan: LifecyclePlan, rendered: ReturnType<typeof renderRecipe>, gathered: Gathered, failures: Map<string, string>,
): Promise<boolean> {
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
    case 'deploy': {
      const objects = objectsOf(work, st, plan.action.revision, rendered)
      if (!objects) return changed
      const previous = previousInventory(work, st, plan.action.revision)
      changed = (await rollOut(work, objects, previous, failures, { workflow: true })) || changed
      return changed
    }
    case 'rollback': {
      // What the failed revision could not apply says nothing about the target's objects.
      failures.clear()
      const objects = objectsOf(work, st, plan.action.to, rendered)
      if (!objects) return changed
      const previous = previousInventory(work, st, plan.action.to)
      changed = (await rollOut(work, objects, previous, failures, { workflow: false })) || changed
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
      for (const item of gathered.drift?.correct ?? []) {
        try {
          await apply(work, item.child, undefined)
        } catch (err) {
          if (!(err instanceof RefusedError)) throw err
          note(work, 'DriftDetected', `${item.key} could not be restored: ${err.message}`, 'Warning')
          continue
        }
        note(work, 'DriftCorrected', item.message, 'Normal', { kind: 'drift.corrected', cloudEventType: 'dev.kinetic.recipe.drift.corrected', data: { object: `${item.namespace}/${item.name}`, paths: item.paths } })
      }
      const wasDrifted = (st.conditions ?? []).find((c) => c.type === 'Drifted')?.status === 'True'
      if (!wasDrifted) for (const e of (gathered.drift?.events ?? []).filter((x) => x.reason === 'DriftDetected')) note(work, 'DriftDetected', e.message, 'Warning')
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
      note(work, 'ApplyFailed', `${w.key}: ${err.message}`, 'Warning', { kind: 'workload.failed', cloudEventType: 'dev.kinetic.recipe.workload.failed', data: { workload, kind: w.child.kind, object: `${w.child.namespace}/${w.child.name}`, reason: 'ApplyFailed', message: err.message } })
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
    cloudEventType: 'dev.kinetic.recipe.workload.applied', data: { workload: child.workload ?? child.test ?? '', kind: child.kind, object, action: verb },
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

// ---------------------------------------------------------------------------------------------
// Telling people

/** Kubernetes Events for recorded transitions, `dev.kinetic.recipe.*` CloudEvents for those that name one; never throws. */
async function announce(work: RecipeWork): Promise<void> {
  const { deps, recipe, transitions } = work
  if (transitions.length === 0) return
  const seed = `${work.uid}/${recipe.metadata.resourceVersion ?? ''}`
  const ref = { kind: 'WorkflowRecipe', metadata: { ...recipe.metadata, resourceVersion: work.resourceVersion } }
  for (const t of transitions) {
    deps.log.info({ kind: 'WorkflowRecipe', namespace: work.namespace, name: work.name, reason: t.reason }, t.message)
    if (!t.record) continue
    try {
      await deps.kube.createEvent(kubernetesEventFor(ref, seed, t, work.now))
    } catch (err) {
      // A terminating namespace refuses Events; deletion goes on without them (spec §11).
      deps.log.warn({ err: (err as Error).message, reason: t.reason }, `Could not record Event for WorkflowRecipe ${work.namespace}/${work.name}`)
    }
  }
  const events = recipeCloudEvents(`/kinetic/${deps.functionName ?? 'workflowrecipe-changed'}`, recipe, seed, transitions)
  if (events.length > 0 && deps.events.send) await deps.events.send(events)
}

