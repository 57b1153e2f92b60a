import type { RuntimeConfig } from '../config.js'
import { ConflictError } from '../core/errors.js'
import type { Kube, KubeVerbs } from '../kube/port.js'
import type { Logger } from '../log.js'
import { kubernetesEventFor, type ObjectRef } from '../core/kube-events.js'
import { currentTraceparent } from '../telemetry/work.js'
import { kineticEventsFor, type CloudEventNaming, type KineticEvents } from './kinetic-events.js'
import type { EngineMemo } from './memo.js'
import { UNCHANGED, type ControllerPlan, type Transition } from '../core/plan.js'

/** The port verbs the shell itself calls (announce records Events). */
export const ENGINE_VERBS = ['createEvent'] as const satisfies readonly (keyof Kube)[]
export type EngineKube = KubeVerbs<typeof ENGINE_VERBS>

/**
 * What every controller function needs: the API, a logger, a clock, config and an event sink.
 * `K` is the part of the port the caller may use (a Pick of Kube); what the shell drives holds
 * at least the shell's own verbs (EngineKube).
 */
export interface EngineDeps<K = Kube> {
  kube: K
  log: Logger
  now: () => Date
  config: RuntimeConfig
  events: KineticEvents
  /** What a warm instance remembers between events (shared/engine/memo.ts); none: every read is fresh. */
  memo?: EngineMemo
}

/**
 * One controller, as the shell drives it. The shell fixes the order of work and the error
 * contract; a controller supplies only its reads, its pure planner and its writes.
 */
export interface Controller<O extends { metadata: ObjectRef['metadata'] }, Facts, Plan extends ControllerPlan, K extends EngineKube = Kube> {
  /** Kind of the parent object, e.g. `Workflow`; names its Events and CloudEvents. */
  kind: string
  /**
   * Plan → children rounds in one reconcile (default 1). After a round's children are written,
   * `nextPass` says what the planner sees now and the shell plans again, until `nextPass` or the
   * planner answers UNCHANGED or the rounds are spent; the parent is written once, after the last.
   */
  passes?: number
  /** Whole reconciles tried again, from a fresh read, when a write loses a race (default 0: the 409 reaches the Broker). */
  conflictRetries?: number
  /** Fresh read of the parent; null when it is gone. */
  read(deps: EngineDeps<K>, namespace: string, name: string): Promise<O | null>
  /** Everything else the planner needs; UNCHANGED when the trigger alone shows nothing to do. */
  gather(deps: EngineDeps<K>, object: O): Promise<Facts | typeof UNCHANGED>
  /** The pure planner: no I/O, `now` as an ISO string. */
  plan(object: O, facts: Facts, now: string): Plan | typeof UNCHANGED
  /**
   * Children first, with deterministic names so a redelivery finds what a crash left behind.
   * Returns the plan with whatever the children taught the parent write (e.g. where outputs went).
   */
  writeChildren(deps: EngineDeps<K>, object: O, facts: Facts, plan: Plan): Promise<Plan>
  /**
   * With `passes`: after a round's children, the object and facts the next round plans on (what
   * the writes taught); UNCHANGED when they changed nothing the planner would see.
   */
  nextPass?(deps: EngineDeps<K>, object: O, facts: Facts, plan: Plan): Promise<{ object: O; facts: Facts } | typeof UNCHANGED>
  /**
   * The parent last: metadata/spec then status, each guarded by the resourceVersion planned on.
   * After several rounds it gets the last round's plan carrying every round's transitions.
   */
  writeParent(deps: EngineDeps<K>, object: O, plan: Plan): Promise<void>
  /**
   * Work on other objects that must follow this object's committed (and announced) write, e.g.
   * a finished run starting the runs queued behind it. It runs last, so what it does cannot undo
   * or hide this object's write: a failure here never loses the write's announcement, and what
   * it announces of other objects comes after. Work that must come before this object's own
   * writes stays in writeChildren (a concurrency `replace` ends the runs it supersedes there, so
   * their Jobs are gone before the new run's start).
   */
  afterParent?(deps: EngineDeps<K>, object: O, plan: Plan): Promise<void>
  /** Seed of Event names and CloudEvent ids, so a redelivered event repeats them (e.g. the run id). */
  eventSeed(object: O, plan: Plan): string
  /** The trace the published CloudEvents carry (`traceparent`); default: the handled event's. */
  traceparent?(object: O, plan: Plan): string | undefined
  /** How this kind's CloudEvents are named, when its catalogue fixes more than the defaults. */
  cloudEvents?(object: O, plan: Plan): CloudEventNaming
}

/** What one reconcile did. */
export interface Reconciled<Plan> {
  result: 'gone' | 'unchanged' | 'applied'
  plan?: Plan
}

/**
 * The one shell around every planner: fresh read, gather, pure plan, children (and, with
 * `passes`, plan again on what they taught), parent, then tell people, then the work on other
 * objects that follows the write (`afterParent`). A lost race surfaces as
 * ConflictError: with `conflictRetries` the whole reconcile is tried again from a fresh read, then
 * the 409 reaches the Broker, which redelivers; announcing is best effort and never a reason to
 * redeliver.
 */
export async function reconcile<O extends { metadata: ObjectRef['metadata'] }, Facts, Plan extends ControllerPlan, K extends EngineKube>(
  controller: Controller<O, Facts, Plan, K>, deps: EngineDeps<K>, namespace: string, name: string,
): Promise<Reconciled<Plan>> {
  return retryingConflicts((controller.conflictRetries ?? 0) + 1, () => reconcileOnce(controller, deps, namespace, name))
}

async function reconcileOnce<O extends { metadata: ObjectRef['metadata'] }, Facts, Plan extends ControllerPlan, K extends EngineKube>(
  controller: Controller<O, Facts, Plan, K>, deps: EngineDeps<K>, namespace: string, name: string,
): Promise<Reconciled<Plan>> {
  const object = await controller.read(deps, namespace, name)
  if (!object) return { result: 'gone' }
  const gathered = await controller.gather(deps, object)
  if (gathered === UNCHANGED) return { result: 'unchanged' }
  let facts = gathered as Facts
  const now = deps.now().toISOString()
  let planned = controller.plan(object, facts, now)
  if (planned === UNCHANGED) return { result: 'unchanged' }
  let current = object
  let plan = await controller.writeChildren(deps, current, facts, planned)
  const told = [...plan.transitions]
  for (let pass = 2; pass <= (controller.passes ?? 1) && controller.nextPass; pass++) {
    const next = await controller.nextPass(deps, current, facts, plan)
    if (next === UNCHANGED) break
    planned = controller.plan(next.object, next.facts, now)
    if (planned === UNCHANGED) break
    ;({ object: current, facts } = next)
    plan = await controller.writeChildren(deps, current, facts, planned)
    told.push(...plan.transitions)
  }
  if (told.length !== plan.transitions.length) plan = { ...plan, transitions: told }
  await controller.writeParent(deps, current, plan)
  await announce(
    deps, controller.kind, current, controller.eventSeed(current, plan), plan.transitions,
    controller.traceparent?.(current, plan), controller.cloudEvents?.(current, plan),
  )
  await controller.afterParent?.(deps, current, plan)
  return { result: 'applied', plan }
}

/** Logs, records and publishes transitions; failures are logged, never thrown. */
export async function announce(
  deps: EngineDeps<EngineKube>, kind: string, object: { metadata: ObjectRef['metadata'] }, seed: string, transitions: readonly Transition[],
  traceparent: string | undefined = currentTraceparent(), naming?: CloudEventNaming,
): Promise<void> {
  if (transitions.length === 0) return
  const ref: ObjectRef = { kind, metadata: object.metadata }
  const now = deps.now().toISOString()
  // The same type and id the published CloudEvents carry (the source does not enter either).
  const cloudEvents = kineticEventsFor('/kinetic', ref, seed, transitions, traceparent, naming)
  let published = 0
  for (const t of transitions) {
    deps.log.info({ kind, namespace: object.metadata.namespace, name: object.metadata.name, reason: t.reason, ...(t.fieldPath ? { fieldPath: t.fieldPath } : {}) }, t.message)
    const ce = t.publish === false ? undefined : cloudEvents[published++]
    if (!t.record) continue
    try {
      await deps.kube.createEvent(kubernetesEventFor(ref, seed, t, now, ce ? { type: ce.type, id: ce.id } : undefined))
    } catch (err) {
      deps.log.warn({ err: (err as Error).message, reason: t.reason }, `Could not record Event for ${kind} ${object.metadata.namespace}/${object.metadata.name}`)
    }
  }
  await deps.events.publish(ref, seed, transitions, traceparent, naming)
}

/**
 * Runs `work` again after a lost optimistic-concurrency race, with growing jitter so racing
 * writers stop colliding, at most `tries` times; the last ConflictError reaches the caller
 * (and as a 409, the Broker, which redelivers).
 */
export async function retryingConflicts<T>(tries: number, work: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work()
    } catch (err) {
      if (!(err instanceof ConflictError) || attempt >= tries) throw err
      await new Promise((resolve) => setTimeout(resolve, 10 + Math.floor(Math.random() * 20 * attempt)))
    }
  }
}
