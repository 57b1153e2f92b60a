// The shell's options: plan → children passes with one parent write, conflict retries from a
// fresh read, the work on other objects after the announced write, and CloudEvents a kind names
// itself (types, data, ids) or does not publish.
import { createHash } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { ConflictError } from '../../shared/core/errors.js'
import { UNCHANGED, type ControllerPlan, type Transition } from '../../shared/core/plan.js'
import { announce, reconcile, type Controller } from '../../shared/engine/controller.js'
import { ANNOTATION_CLOUDEVENT_ID, ANNOTATION_CLOUDEVENT_TYPE } from '../../shared/schemas/labels.js'
import { EmbeddedKube } from '../support/embedded-kube.js'
import { recordingEvents } from '../fixtures/autonomy.js'
import { testDeps } from '../support/engine-deps.js'

interface Thing { metadata: { namespace: string; name: string; uid: string; resourceVersion: string } }
interface Count { round: number }
interface Plan extends ControllerPlan { round: number }

const thing: Thing = { metadata: { namespace: 'ns', name: 'thing', uid: 'u1', resourceVersion: '7' } }
const told = (message: string, extra: Partial<Transition> = {}): Transition => ({ kind: 'stepped', type: 'Normal', reason: 'Stepped', message, record: true, ...extra })

/** A controller that needs `rounds` plan → children rounds to settle, and records what the shell asked of it. */
function counting(rounds: number, options: Partial<Controller<Thing, Count, Plan>> = {}) {
  const calls: string[] = []
  const parents: Plan[] = []
  const controller: Controller<Thing, Count, Plan> = {
    kind: 'Thing',
    read: async () => (calls.push('read'), thing),
    gather: async () => ({ round: 1 }),
    plan: (_, facts) => (calls.push(`plan ${facts.round}`), { round: facts.round, transitions: [told(`planned ${facts.round}`)] }),
    writeChildren: async (_, __, ___, plan) => (calls.push(`children ${plan.round}`), { ...plan, transitions: [...plan.transitions, told(`wrote ${plan.round}`)] }),
    nextPass: async (_, object, facts) => (facts.round >= rounds ? UNCHANGED : { object, facts: { round: facts.round + 1 } }),
    writeParent: async (_, __, plan) => void (calls.push(`parent ${plan.round}`), parents.push(plan)),
    eventSeed: () => 'seed',
    ...options,
  }
  return { controller, calls, parents }
}

describe('reconcile with passes', () => {
  it('plans again after each round of children until nothing changed, then writes the parent once with every round\'s transitions', async () => {
    const kube = new EmbeddedKube()
    const { controller, calls, parents } = counting(3, { passes: 5 })
    const done = await reconcile(controller, testDeps(kube), 'ns', 'thing')
    expect(calls).toEqual(['read', 'plan 1', 'children 1', 'plan 2', 'children 2', 'plan 3', 'children 3', 'parent 3'])
    expect(parents).toHaveLength(1)
    expect(parents[0]!.transitions.map((t) => t.message)).toEqual(['planned 1', 'wrote 1', 'planned 2', 'wrote 2', 'planned 3', 'wrote 3'])
    expect(done).toMatchObject({ result: 'applied', plan: { round: 3 } })
    expect(kube.events.map((e) => e.message)).toEqual(['planned 1', 'wrote 1', 'planned 2', 'wrote 2', 'planned 3', 'wrote 3'])
  })

  it('stops at the pass budget, and without one makes a single round', async () => {
    const budget = counting(10, { passes: 2 })
    await reconcile(budget.controller, testDeps(new EmbeddedKube()), 'ns', 'thing')
    expect(budget.calls).toEqual(['read', 'plan 1', 'children 1', 'plan 2', 'children 2', 'parent 2'])
    const single = counting(10)
    await reconcile(single.controller, testDeps(new EmbeddedKube()), 'ns', 'thing')
    expect(single.calls).toEqual(['read', 'plan 1', 'children 1', 'parent 1'])
  })

  it('keeps the last round\'s plan when the planner has nothing more to do', async () => {
    const { controller, calls, parents } = counting(5, { passes: 5 })
    const plan = controller.plan
    controller.plan = (o, facts, now) => (facts.round === 3 ? UNCHANGED : plan(o, facts, now))
    await reconcile(controller, testDeps(new EmbeddedKube()), 'ns', 'thing')
    expect(calls).toEqual(['read', 'plan 1', 'children 1', 'plan 2', 'children 2', 'parent 2'])
    expect(parents[0]!.transitions).toHaveLength(4)
  })
})

describe('reconcile with conflict retries', () => {
  it('tries the whole reconcile again from a fresh read, then lets the last 409 through', async () => {
    const lost = () => Promise.reject(new ConflictError('the object has been modified'))
    const { controller, calls } = counting(1, { conflictRetries: 2, writeParent: lost })
    await expect(reconcile(controller, testDeps(new EmbeddedKube()), 'ns', 'thing')).rejects.toBeInstanceOf(ConflictError)
    expect(calls.filter((c) => c === 'read')).toHaveLength(3)
    const once = counting(1, { writeParent: lost })
    await expect(reconcile(once.controller, testDeps(new EmbeddedKube()), 'ns', 'thing')).rejects.toBeInstanceOf(ConflictError)
    expect(once.calls.filter((c) => c === 'read')).toHaveLength(1)
  })

  it('succeeds on a later try', async () => {
    let tries = 0
    const { controller, parents } = counting(1, { conflictRetries: 3 })
    const write = controller.writeParent
    controller.writeParent = async (d, o, p) => (++tries < 3 ? Promise.reject(new ConflictError('lost')) : write(d, o, p))
    expect((await reconcile(controller, testDeps(new EmbeddedKube()), 'ns', 'thing')).result).toBe('applied')
    expect(tries).toBe(3)
    expect(parents).toHaveLength(1)
  })
})

describe('reconcile with afterParent', () => {
  it('does the work on other objects last, once the parent is written and announced, and only when something was applied', async () => {
    const kube = new EmbeddedKube()
    const seen: string[] = []
    const afterParent = async (_: unknown, __: Thing, plan: Plan) => void seen.push(`after round ${plan.round}, ${kube.events.length} Events told`)
    const { controller, calls } = counting(1, { afterParent })
    await reconcile(controller, testDeps(kube), 'ns', 'thing')
    expect(calls).toEqual(['read', 'plan 1', 'children 1', 'parent 1'])
    expect(seen).toEqual(['after round 1, 2 Events told'])

    const idle = counting(1, { afterParent, plan: () => UNCHANGED })
    expect((await reconcile(idle.controller, testDeps(new EmbeddedKube()), 'ns', 'thing')).result).toBe('unchanged')
    expect(seen).toHaveLength(1)
  })

  it('keeps the parent write and its Events when the work that follows fails', async () => {
    const kube = new EmbeddedKube()
    const { controller, parents } = counting(1, { afterParent: () => Promise.reject(new Error('the queue could not be listed')) })
    await expect(reconcile(controller, testDeps(kube), 'ns', 'thing')).rejects.toThrow('the queue could not be listed')
    expect(parents).toHaveLength(1)
    expect(kube.events.map((e) => e.message)).toEqual(['planned 1', 'wrote 1'])
  })
})

describe('announce', () => {
  const transitions = [told('on the record'), told('only an Event', { kind: 'event', publish: false }), told('not recorded', { kind: 'quiet', record: false, data: { extra: 1 } })]

  it('names CloudEvents by the kind by default, and annotates each recorded Event with its CloudEvent', async () => {
    const kube = new EmbeddedKube()
    const events = recordingEvents()
    await announce({ ...testDeps(kube), events }, 'Thing', thing, 'seed', transitions.slice(0, 1))
    const [ce] = events.published
    expect(ce).toMatchObject({ type: 'dev.kinetic.thing.stepped', data: { namespace: 'ns', thing: 'thing', reason: 'Stepped', message: 'on the record' } })
    expect(ce!.id).toBe(createHash('sha256').update('seed|stepped|Stepped||on the record').digest('hex').slice(0, 32))
    expect(kube.events[0]!.metadata?.annotations).toEqual({ [ANNOTATION_CLOUDEVENT_TYPE]: ce!.type, [ANNOTATION_CLOUDEVENT_ID]: ce!.id })
  })

  it('with a naming: its name in types and data, its data in every event, ids scoped; publish: false is an Event only', async () => {
    const kube = new EmbeddedKube()
    const events = recordingEvents()
    const naming = { name: 'gadget', data: { generation: 2, revision: 5 }, idScope: 'u1|5' }
    await announce({ ...testDeps(kube), events }, 'Thing', thing, 'seed', transitions, undefined, naming)
    expect(events.published.map((e) => e.type)).toEqual(['dev.kinetic.gadget.stepped', 'dev.kinetic.gadget.quiet'])
    expect(events.published[1]!.data).toEqual({ namespace: 'ns', gadget: 'thing', reason: 'Stepped', message: 'not recorded', generation: 2, revision: 5, extra: 1 })
    expect(events.published[0]!.id).toBe(createHash('sha256').update('u1|5|dev.kinetic.gadget.stepped|seed|Stepped||on the record').digest('hex').slice(0, 32))
    expect(kube.events.map((e) => [e.message, e.metadata?.annotations?.[ANNOTATION_CLOUDEVENT_TYPE]])).toEqual([
      ['on the record', 'dev.kinetic.gadget.stepped'],
      ['only an Event', undefined],
    ])
  })
})
