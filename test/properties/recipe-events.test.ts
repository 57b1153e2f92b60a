import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { recipeNeedsResync, reconcileRecipe, type RecipeDeps } from '../../shared/recipe/controller.js'
import { ConflictError, RefusedError, TransientError } from '../../shared/core/errors.js'
import type { ChildKind, ChildObject, Kube } from '../../shared/kube/port.js'
import { recipeConfig } from '../../shared/recipe/plan/config.js'
import { ANNOTATION_MANIFEST_DIGEST, LABEL_COMPONENT, LABEL_RECIPE, LABEL_RECIPE_NAMESPACE, LABEL_REVISION } from '../../shared/recipe/plan/labels.js'
import { WorkflowRecipeSchema, type WorkflowRecipe, type WorkflowRecipeStatus } from '../../shared/schemas/workflowrecipe.js'
import { EmbeddedKube } from '../support/embedded-kube.js'
import { testDeps } from '../support/engine-deps.js'
import { propertyRuns } from '../support/property-runs.js'

/**
 * The system under test is reconcileRecipe over the embedded API server, in a world with workload
 * controllers that make Deployments and StatefulSets ready and complete Jobs one object at a
 * time, in any order, and a clock. A scenario is a random sequence of recipe events (a
 * reconcile), duplicated and dropped events, controller steps, clock advances, resync ticks,
 * reconciles that crash on one API call and someone deleting a workload object, with a user's
 * spec change (or a change and its undo) or retry annotation somewhere in it. After it, resync ticks with the controllers running must bring every scenario to what
 * the orderly run (each user action followed by settling) reaches; along the way no status
 * history holds a transition spec §7.3 does not have, and no child of a revision is written
 * before that revision's snapshot ConfigMap exists (spec §7.9).
 */

const NS = 'team-a'
const NAME = 'shop'
const START = '2026-03-01T10:00:00Z'

// ---------------------------------------------------------------------------------------------
// spec §7.3 as data: which phase may follow which, and with which reasons.

const PHASES = ['Candidate', 'PendingApproval', 'Approved', 'Pending', 'Deploying', 'Testing', 'Active', 'Degraded', 'RollingBack', 'Failed', 'Rejected', 'Deprecated', 'RollbackFailed'] as const
const DEPLOY_FAILURES = ['ReadinessTimeout', 'JobFailed', 'ApplyFailed', 'WorkflowFailed']
const RULES: Array<{ t: string; from: readonly string[]; to: string[]; reasons: string[] }> = [
  { t: 'T1', from: [''], to: ['Candidate'], reasons: ['Created'] },
  { t: 'T2', from: PHASES.filter((p) => p !== 'Deprecated'), to: ['Candidate'], reasons: ['NewGeneration'] },
  { t: 'T3', from: ['Candidate'], to: ['Failed'], reasons: ['SpecInvalid', 'RevisionTooLarge'] },
  { t: 'T4', from: ['Candidate'], to: ['Rejected'], reasons: ['PolicyViolation'] },
  { t: 'T5', from: ['Candidate'], to: ['Active', 'Degraded'], reasons: ['NoEffectiveChange'] },
  { t: 'T6', from: ['Candidate'], to: ['PendingApproval'], reasons: ['ApprovalRequired'] },
  { t: 'T7', from: ['Candidate'], to: ['Approved'], reasons: ['AutoApproved', 'Approved'] },
  { t: 'T8', from: ['PendingApproval'], to: ['Approved'], reasons: ['Approved'] },
  { t: 'T9/T10', from: ['PendingApproval'], to: ['Rejected'], reasons: ['ApprovalRejected', 'ApprovalExpired'] },
  { t: 'T11', from: ['Approved'], to: ['Pending'], reasons: ['WaitingForPrerequisites'] },
  { t: 'T12', from: ['Pending'], to: ['Deploying'], reasons: ['PrerequisitesMet'] },
  { t: 'T13', from: ['Pending'], to: ['Failed'], reasons: ['PrerequisitesTimeout'] },
  { t: 'T14', from: ['Deploying'], to: ['Testing'], reasons: ['Testing', 'NoTests'] },
  { t: 'T15', from: ['Deploying'], to: ['RollingBack'], reasons: ['AutomaticRollback'] },
  { t: 'T16', from: ['Deploying'], to: ['Failed'], reasons: DEPLOY_FAILURES },
  { t: 'T17', from: ['Testing'], to: ['Active'], reasons: ['RevisionActive'] },
  { t: 'T18', from: ['Testing'], to: ['RollingBack', 'Failed'], reasons: ['AutomaticRollback', 'TestFailed', 'TestTimeout'] },
  { t: 'T19', from: ['Active'], to: ['Degraded'], reasons: ['WorkloadNotReady', 'ChildMissing'] },
  { t: 'T20', from: ['Degraded'], to: ['Active'], reasons: ['Recovered'] },
  { t: 'T21', from: ['RollingBack'], to: ['Active'], reasons: ['RolledBack', 'ManualRollback'] },
  { t: 'T22', from: ['RollingBack'], to: ['RollbackFailed'], reasons: ['RollbackTimeout', 'RollbackApplyFailed'] },
  { t: 'T23', from: ['Active', 'Degraded', 'Failed', 'RollbackFailed'], to: ['RollingBack'], reasons: ['ManualRollback'] },
  { t: 'T24', from: ['Failed', 'RollbackFailed', 'Rejected'], to: ['Candidate'], reasons: ['RetryRequested'] },
  { t: 'T25', from: ['Rejected', 'PendingApproval'], to: ['Candidate'], reasons: ['PolicyChanged'] },
  { t: 'T26', from: PHASES.filter((p) => p !== 'Deprecated'), to: ['Deprecated'], reasons: ['Deprecated'] },
  { t: 'T27', from: ['Deprecated'], to: ['Candidate'], reasons: ['Undeprecated'] },
]

function forbidden(from: string, to: string, reason: string): boolean {
  return !RULES.some((r) => r.from.includes(from) && r.to.includes(to) && r.reasons.includes(reason))
}

/** Every history step a status write recorded that spec §7.3 has no row for, or that does not follow on from the previous one. */
function badTransitions(status: WorkflowRecipeStatus): string[] {
  const history = status.history ?? []
  return history.flatMap((h, i) => {
    const from = h.from ?? ''
    const out: string[] = []
    if (forbidden(from, h.to, h.reason ?? '')) out.push(`${from || '—'} → ${h.to} (${h.reason})`)
    if (i > 0 && history[i - 1]!.to !== from) out.push(`${history[i - 1]!.to} then ${from || '—'} → ${h.to}`)
    return out
  })
}

// ---------------------------------------------------------------------------------------------
// The world

/** EmbeddedKube that remembers every recipe status written and every child written before its snapshot. */
class WatchedKube extends EmbeddedKube {
  readonly statuses: WorkflowRecipeStatus[] = []
  readonly beforeSnapshot: string[] = []

  /** An admission rule: the message of a 422 for the manifests it refuses. */
  refuse: ((manifest: ChildObject) => string | undefined) | undefined

  override async applyChild(manifest: ChildObject): Promise<ChildObject> {
    const labels = manifest.metadata?.labels ?? {}
    const snapshot = `${labels[LABEL_RECIPE_NAMESPACE]}/${labels[LABEL_RECIPE]}-rev-${labels[LABEL_REVISION]}`
    if (!this.configMaps.has(snapshot)) this.beforeSnapshot.push(`${manifest.kind}/${manifest.metadata?.name} before ConfigMap ${snapshot}`)
    const refused = this.refuse?.(manifest)
    if (refused !== undefined) throw new RefusedError(refused, 422)
    return super.applyChild(manifest)
  }

  override async replaceRecipeStatus(namespace: string, name: string, resourceVersion: string, status: WorkflowRecipeStatus): Promise<WorkflowRecipe> {
    const written = await super.replaceRecipeStatus(namespace, name, resourceVersion, status)
    this.statuses.push(structuredClone(status))
    return written
  }
}

const WORKLOAD_KINDS: ChildKind[] = ['StatefulSet', 'Deployment', 'Job']

/** One step of the workload controllers on one object: its status as the real controller would write it. */
function controllerStep(kube: EmbeddedKube, object: ChildObject, done: boolean): boolean {
  const kind = object.kind as ChildKind
  const { namespace, name, generation } = object.metadata as { namespace: string; name: string; generation?: number }
  const replicas = (object.spec as { replicas?: number }).replicas ?? 1
  const ready = done ? replicas : 0
  let status: unknown
  if (kind === 'Deployment') status = { observedGeneration: generation ?? 1, replicas, updatedReplicas: ready, availableReplicas: ready, readyReplicas: ready }
  else if (kind === 'StatefulSet') status = { observedGeneration: generation ?? 1, replicas, readyReplicas: ready, updatedReplicas: ready, currentRevision: `r${generation}`, updateRevision: `r${generation}` }
  else {
    if ((object.status as { conditions?: unknown[] } | undefined)?.conditions) return false
    status = done ? { startTime: START, conditions: [{ type: 'Complete', status: 'True', reason: 'Completed', message: 'done' }] } : { startTime: START, active: 1 }
  }
  if (JSON.stringify(object.status) === JSON.stringify(status)) return false
  kube.setChildStatus(kind, namespace, name, status)
  return true
}

function workloadObjects(kube: EmbeddedKube): ChildObject[] {
  return WORKLOAD_KINDS.flatMap((k) => kube.children(k))
    .sort((a, b) => `${a.kind}/${a.metadata?.name}`.localeCompare(`${b.kind}/${b.metadata?.name}`))
}

/** Every controller finishes everything it has. */
function controllersRun(kube: EmbeddedKube): boolean {
  let changed = false
  for (const o of workloadObjects(kube)) changed = controllerStep(kube, o, true) || changed
  return changed
}

const spec = (webImage: string, dbImage = 'postgres:16') => ({
  // Deadlines far beyond any clock the scenarios advance: a timeout is not what this tests.
  progressDeadlineSeconds: 7200,
  workloads: [
    { name: 'db', kind: 'StatefulSet', image: dbImage, ports: [{ name: 'pg', port: 5432 }], readinessTimeoutSeconds: 7200 },
    { name: 'web', kind: 'Deployment', image: webImage, dependsOn: ['db'], ports: [{ name: 'http', port: 80 }], readinessTimeoutSeconds: 7200 },
  ],
  tests: [{ name: 'smoke', image: 'curlimages/curl:8.10.1', command: ['curl', '-f', 'http://web'], timeoutSeconds: 3600 }],
})

function recipeOf(s: unknown, annotations?: Record<string, string>): WorkflowRecipe {
  return WorkflowRecipeSchema.parse({ apiVersion: 'purko.io/v1alpha1', kind: 'WorkflowRecipe', metadata: { name: NAME, namespace: NS, ...(annotations ? { annotations } : {}) }, spec: s })
}

interface World { kube: WatchedKube; deps: RecipeDeps; clock: { now: Date } }

function world(): World {
  const kube = new WatchedKube()
  for (const name of [NS, 'sandbox-recipes', 'mcp-server']) kube.namespaces.set(name, { metadata: { name, labels: { 'kubernetes.io/metadata.name': name } } })
  const clock = { now: new Date(START) }
  return { kube, clock, deps: { ...testDeps(kube, clock), recipes: recipeConfig({}), now: () => clock.now } }
}

/** A delivery: the Broker redelivers a failed one later, so a throw here is an event lost for now. */
async function event(w: World): Promise<void> {
  try {
    await reconcileRecipe(w.deps, NS, NAME)
  } catch (err) {
    if (!(err instanceof TransientError || err instanceof ConflictError)) throw err
  }
}

/** The resync tick's recipe share: one LIST, every recipe that needs it reconciled. */
async function tick(w: World): Promise<boolean> {
  let applied = false
  for (const r of await w.kube.listAllRecipes()) {
    if (!recipeNeedsResync(r, w.clock.now.toISOString())) continue
    try {
      applied = (await reconcileRecipe(w.deps, r.metadata.namespace ?? NS, r.metadata.name ?? NAME)).result === 'applied' || applied
    } catch (err) {
      if (!(err instanceof TransientError || err instanceof ConflictError)) throw err
      applied = true
    }
  }
  return applied
}

/** Ticks with the controllers running until a whole tick changes nothing. */
async function settle(w: World): Promise<void> {
  for (let i = 0; i < 40; i++) {
    w.clock.now = new Date(w.clock.now.getTime() + 1000)
    const moved = controllersRun(w.kube)
    const applied = await tick(w)
    if (!moved && !applied) return
  }
  throw new Error(`no fixed point after 40 ticks: ${JSON.stringify(w.kube.recipe(NS, NAME)?.status?.history?.map((h) => `${h.to}:${h.reason}`))}`)
}

// ---------------------------------------------------------------------------------------------
// Scenarios

type UserAction =
  | { kind: 'none' }
  | { kind: 'image' }
  /** A change and its undo: the final spec is the first one again. */
  | { kind: 'flip'; gap: number }
  | { kind: 'retry' }

type Op =
  | { kind: 'event' }
  | { kind: 'duplicate' }
  | { kind: 'drop' }
  | { kind: 'controller'; pick: number; done: boolean }
  | { kind: 'clock'; seconds: number }
  | { kind: 'tick' }
  | { kind: 'crash'; method: keyof Kube }
  /** Someone deletes a workload object (drift: re-created, and Active passes through Degraded). */
  | { kind: 'delete'; pick: number }

const CRASHABLE: Array<keyof Kube> = ['replaceRecipeStatus', 'applyChild', 'createConfigMap', 'patchRecipeMetadata', 'getChild', 'listConfigMaps', 'replaceConfigMap', 'deleteChild']

const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 6, arbitrary: fc.constant<Op>({ kind: 'event' }) },
  { weight: 2, arbitrary: fc.constant<Op>({ kind: 'duplicate' }) },
  { weight: 2, arbitrary: fc.constant<Op>({ kind: 'drop' }) },
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('controller' as const), pick: fc.nat(7), done: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('clock' as const), seconds: fc.integer({ min: 1, max: 120 }) }) },
  { weight: 2, arbitrary: fc.constant<Op>({ kind: 'tick' }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('crash' as const), method: fc.constantFrom(...CRASHABLE) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('delete' as const), pick: fc.nat(7) }) },
)

const userAction: fc.Arbitrary<UserAction> = fc.oneof(
  fc.constant<UserAction>({ kind: 'none' }),
  fc.constant<UserAction>({ kind: 'image' }),
  fc.record({ kind: fc.constant('flip' as const), gap: fc.integer({ min: 0, max: 15 }) }),
  fc.constant<UserAction>({ kind: 'retry' }),
)

interface Scenario { ops: Op[]; action: UserAction; at: number }

const scenario: fc.Arbitrary<Scenario> = fc.record({
  ops: fc.array(op, { minLength: 1, maxLength: 40 }),
  action: userAction,
  at: fc.nat(40),
})

/** The user's edits at step `i` of the sequence (a spec change is a new generation; the retry an annotation). */
function userEdits(s: Scenario, i: number): Array<() => WorkflowRecipe> {
  const at = Math.min(s.at, s.ops.length)
  const edits: Array<() => WorkflowRecipe> = []
  const { action } = s
  if (action.kind === 'image' && i === at) edits.push(() => recipeOf(spec('nginx:1.28')))
  if (action.kind === 'flip' && i === at) edits.push(() => recipeOf(spec('nginx:1.28')))
  if (action.kind === 'flip' && i === Math.min(at + action.gap, s.ops.length)) edits.push(() => recipeOf(spec('nginx:1.27')))
  if (action.kind === 'retry' && i === at) edits.push(() => recipeOf(spec('nginx:1.27'), { 'purko.io/retry': 'once' }))
  return edits
}

function edit(w: World, make: () => WorkflowRecipe): void {
  const next = make()
  const live = w.kube.recipe(NS, NAME)!
  // As kubectl apply: the user's spec and annotations, everything the controller wrote kept.
  w.kube.putRecipe({ ...live, metadata: { ...live.metadata, annotations: { ...(live.metadata.annotations ?? {}), ...(next.metadata.annotations ?? {}) } }, spec: next.spec })
}

async function play(w: World, o: Op): Promise<void> {
  switch (o.kind) {
    case 'event': return event(w)
    case 'duplicate': await event(w); return event(w)
    case 'drop': return
    case 'controller': {
      const objects = workloadObjects(w.kube)
      if (objects.length > 0) controllerStep(w.kube, objects[o.pick % objects.length]!, o.done)
      return
    }
    case 'clock': w.clock.now = new Date(w.clock.now.getTime() + o.seconds * 1000); return
    case 'tick': await tick(w); return
    case 'crash':
      w.kube.failNext(o.method, new TransientError(`${o.method}: etcd timeout`))
      await event(w)
      return
    case 'delete': {
      const objects = workloadObjects(w.kube).filter((c) => c.metadata?.labels?.[LABEL_COMPONENT] !== 'test')
      const doomed = objects[o.pick % Math.max(1, objects.length)]
      // Straight from the store: a pending fault is meant for the controller, not for this user.
      if (doomed) w.kube.childObjects.delete(`${doomed.kind}/${doomed.metadata!.namespace}/${doomed.metadata!.name}`)
      return
    }
  }
}

/** The chaotic run: the sequence with the user's edits at their places, then resync ticks with the controllers running. */
async function chaotic(s: Scenario, first: WorkflowRecipe, setup?: (w: World) => void | Promise<void>): Promise<World> {
  const w = world()
  await setup?.(w)
  w.kube.putRecipe(first)
  for (let i = 0; i <= s.ops.length; i++) {
    for (const e of userEdits(s, i)) edit(w, e)
    if (i < s.ops.length) await play(w, s.ops[i]!)
  }
  await settle(w)
  return w
}

/** The orderly run: every user edit follows a settled recipe. */
async function orderly(s: Scenario, first: WorkflowRecipe): Promise<World> {
  const w = world()
  w.kube.putRecipe(first)
  await settle(w)
  for (let i = 0; i <= s.ops.length; i++) {
    for (const e of userEdits(s, i)) {
      edit(w, e)
      await settle(w)
    }
  }
  return w
}

/**
 * What a user sees of the workloads: kind, place, name and manifest digest. Test Jobs are named
 * by revision (spec §5.2), and which revision numbers a scenario used depends on when the spec changed.
 */
function childSet(kube: EmbeddedKube): string[] {
  return [...kube.childObjects.values()]
    .filter((c) => !c.metadata?.deletionTimestamp && c.metadata?.labels?.[LABEL_COMPONENT] !== 'test')
    .map((c) => `${c.kind}/${c.metadata?.namespace}/${c.metadata?.name}@${c.metadata?.annotations?.[ANNOTATION_MANIFEST_DIGEST] ?? ''}`)
    .sort()
}

function expectLawful(w: World): void {
  expect(w.kube.beforeSnapshot).toEqual([])
  expect([...new Set(w.kube.statuses.flatMap(badTransitions))]).toEqual([])
}

const condition = (r: WorkflowRecipe | undefined, type: string) => r?.status?.conditions?.find((c) => c.type === type)

describe('recipe events are hints, state is truth', () => {
  it('reaches the orderly run\'s Active phase and children whatever the events, controllers, clock and crashes did, through lawful transitions only', async () => {
    await fc.assert(fc.asyncProperty(scenario, async (s) => {
      const first = recipeOf(spec('nginx:1.27'))
      // One cluster at a time: what the orderly run reached is read before the chaotic run empties it.
      const expected = await orderly(s, first)
      const expectedPhase = expected.kube.recipe(NS, NAME)?.status?.phase
      const expectedChildren = childSet(expected.kube)
      const w = await chaotic(s, first)
      const got = w.kube.recipe(NS, NAME)
      expect(expectedPhase).toBe('Active')
      expect(got?.status?.phase).toBe('Active')
      expect(condition(got, 'Ready')?.status).toBe('True')
      expect(childSet(w.kube)).toEqual(expectedChildren)
      // The running revision's test ran to completion.
      const test = w.kube.child('Job', 'sandbox-recipes', `team-a-shop-test-smoke-58485c92-r${got?.status?.currentRevision}`)
      expect((test?.status as { conditions?: Array<{ type: string }> } | undefined)?.conditions?.map((c) => c.type)).toEqual(['Complete'])
      expectLawful(w)
      expectLawful(expected)
    }), {
      numRuns: propertyRuns(100),
      examples: [
        // Found by this property: a crash between revision 1's first writes and its status write,
        // then a spec change, deployed generation 1's leftover snapshot as generation 2.
        [{ ops: [{ kind: 'crash', method: 'replaceRecipeStatus' }], action: { kind: 'image' }, at: 1 }],
        // Found by this property: web deleted while its revision is Testing was never re-created
        // (spec §7.8 corrects drift in every state), so Testing could only end by TestTimeout.
        [{ ops: [{ kind: 'event' }, { kind: 'controller', pick: 0, done: true }, { kind: 'event' }, { kind: 'controller', pick: 0, done: true }, { kind: 'tick' }, { kind: 'delete', pick: 0 }, { kind: 'clock', seconds: 1 }], action: { kind: 'none' }, at: 0 }],
      ],
    })
  }, 120_000)

  it('a workload the API server refuses ends Failed with ApplyFailed and the server\'s message, or Active on the last good revision after an automatic rollback, whatever the order', async () => {
    const MESSAGE = 'Deployment.apps "web" is invalid: spec.template.spec.containers[0].image: Required value'
    await fc.assert(fc.asyncProperty(scenario, fc.constantFrom('db', 'web'), fc.boolean(), async (s, refused, hadGood) => {
      const ops = { ...s, action: { kind: 'none' } as const }
      const target = refused === 'db' ? { kind: 'StatefulSet' as const, name: 'team-a-shop-db-d306e21e' } : { kind: 'Deployment' as const, name: 'team-a-shop-web-5101637e' }
      let w: World
      if (!hadGood) {
        w = await chaotic(ops, recipeOf(spec('nginx:1.27')), (x) => { x.kube.refuseApply(target.kind, 'sandbox-recipes', target.name, 422, MESSAGE) })
      } else {
        // Revision 1 runs; then a change of both images whose refused workload fails revision 2.
        w = world()
        w.kube.putRecipe(recipeOf(spec('nginx:1.27')))
        await settle(w)
        expect(w.kube.recipe(NS, NAME)?.status?.phase).toBe('Active')
        // The server refuses revision 2's object, not the name: revision 1's is still admitted.
        w.kube.refuse = (m) => m.kind === target.kind && m.metadata?.name === target.name && /nginx:1\.28|postgres:16\.4/.test(JSON.stringify(m.spec)) ? MESSAGE : undefined
        edit(w, () => recipeOf(spec('nginx:1.28', 'postgres:16.4')))
        for (const o of ops.ops) await play(w, o)
        await settle(w)
      }
      const got = w.kube.recipe(NS, NAME)
      if (!hadGood) {
        expect(got?.status?.phase).toBe('Failed')
        expect(got?.status?.reason).toBe('ApplyFailed')
        expect(got?.status?.message).toContain(MESSAGE)
      } else {
        expect(got?.status).toMatchObject({ phase: 'Active', currentRevision: 1, lastGoodRevision: 1 })
        expect(condition(got, 'UpToDate')).toMatchObject({ status: 'False', reason: 'RolledBack' })
        expect(got?.status?.revisions?.find((r) => r.revision === 2)?.state).toBe('Failed')
      }
      expectLawful(w)
    }), {
      numRuns: propertyRuns(50),
      // Found by this property: the refused apply of revision 2 was held against revision 1's
      // rollback in the same reconcile (RollbackFailed instead of Active).
      examples: [[{ ops: [{ kind: 'tick' }], action: { kind: 'none' }, at: 0 }, 'web', true]],
    })
  }, 60_000)
})
