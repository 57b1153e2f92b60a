/**
 * The reads of a recipe reconcile turned into facts (spec §7): the render and policies of the
 * latest generation once per reconcile, then what each planning pass sees; and which objects a
 * revision has (its snapshot, or the fresh build of the revision being deployed).
 */
import { TransientError } from '../core/errors.js'
import { podWaitingDetail } from '../kube/pod-waiting.js'
import type { WorkflowRecipe, WorkflowRecipeStatus } from '../schemas/workflowrecipe.js'
import { isOwnedBy, objectKey, type InventoryEntry } from './plan/deploy-plan.js'
import { selectorLabels } from './plan/labels.js'
import type { LifecycleFacts, PolicyFacts, RenderFacts, WorkloadFact } from './plan/lifecycle-facts.js'
import { observedRevision } from './plan/lifecycle/revisions.js'
import { buildManifests } from './plan/manifests.js'
import type { RecipeChild, TestObjects } from './plan/objects.js'
import { prerequisiteProblems, readinessFacts, testsFacts, childWorkflowFacts, type RevisionObjects } from './plan/observe.js'
import { evaluatePolicies, type NamespaceLabels, type PolicyOutcome } from './plan/policy.js'
import type { PassFacts } from './plan/recipe-plan.js'
import { isTemplate, renderRecipe } from './plan/render.js'
import type { RenderOk } from './plan/rendered.js'
import { snapshotInventory, snapshotObjects, type RevisionSnapshot } from './plan/rollback.js'
import { resolvedOf, snapshot } from './plan/snapshot.js'
import type { ChildRef } from './reads.js'
import type { RecipeWork } from './work.js'

/** What a reconcile learns once: the latest generation's render and its policy outcome. */
export interface StartFacts {
  rendered: ReturnType<typeof renderRecipe>
  render: RenderFacts
  policy: PolicyFacts
  policyWarnings: PolicyOutcome['warnings']
}

/** Renders the latest generation and evaluates the policies on it (spec §1 steps 1-6, §10). */
export async function startFacts(work: RecipeWork): Promise<StartFacts> {
  const rendered = renderRecipe(work.recipe, work.deps.recipes)
  const render = renderFactsOf(work, rendered)
  const policy = await policyFactsOf(work, rendered)
  return { rendered, render, policy: policy.facts, policyWarnings: policy.outcome?.warnings ?? [] }
}

/** spec §1 steps 1-6 of the latest generation as the planner's facts; keeps the digest and the built objects. */
function renderFactsOf(work: RecipeWork, rendered: ReturnType<typeof renderRecipe>): RenderFacts {
  const { recipe } = work
  if (!rendered.ok) return { ok: false, errors: rendered.errors }
  const snap = snapshot(recipe, rendered, work.deps.recipes, 1)
  if (!snap.ok) return { ok: false, errors: [snap.error] }
  work.renderDigest = snap.digest
  work.latest = snap.objects
  work.builds.set(1, snap.objects)
  return {
    ok: true,
    digest: snap.digest,
    resolved: resolvedOf(recipe, rendered),
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
export function objectsOf(work: RecipeWork, st: WorkflowRecipeStatus, revision: number, rendered: ReturnType<typeof renderRecipe>): RevisionObjects | undefined {
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

export function fromSnapshot(s: RevisionSnapshot): RevisionObjects {
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

export function refsOf(children: readonly RecipeChild[]): ChildRef[] {
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
export function previousInventory(work: RecipeWork, st: WorkflowRecipeStatus, revision: number): InventoryEntry[] {
  if (st.phase !== 'Deploying' && st.phase !== 'RollingBack') return []
  return [...work.snapshots.keys()].filter((n) => n !== revision).sort((a, b) => b - a).flatMap((n) => snapshotInventory(work.snapshots.get(n)!.snapshot))
}

/**
 * What one planning pass is told (spec §7.4 prerequisites, the observed revision's readiness, its
 * workflow and tests), read through the reconcile's reads, so a later pass reads only what the
 * writes before it changed.
 */
export async function passFacts(
  work: RecipeWork, recipe: WorkflowRecipe, start: StartFacts, failures: ReadonlyMap<string, string>, policyWarned: boolean,
): Promise<PassFacts> {
  const st = recipe.status ?? {}
  const { reads, uid, now } = work
  const { rendered } = start
  const facts: LifecycleFacts = { render: start.render, policy: start.policy, prerequisites: [], snapshots: [...work.snapshots.keys()].sort((a, b) => a - b) }
  const out: PassFacts = { lifecycle: facts, live: new Map(), completedJobs: [], policyWarnings: start.policyWarnings, policyWarned }
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
  out.live = live
  const completedJobs = work.snapshots.get(revision)?.snapshot.completedJobs ?? []
  out.completedJobs = completedJobs
  const ready = readinessFacts(objects, live, now, { uid, previous, completedJobs, applyFailures: failures, rows: st.workloads })
  facts.readiness = ready.facts
  await addPodDetails(work, objects, ready.facts.workloads)

  if (objects.workflow) facts.workflow = childWorkflowFacts(revision, live.get(objectKey('Workflow', objects.workflow.namespace, objects.workflow.name)))
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

