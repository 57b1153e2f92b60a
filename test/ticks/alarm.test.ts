import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { createApp as workflowChanged } from '../../functions/workflow-changed/index.js'
import { createApp as resyncTick } from '../../functions/resync-tick/index.js'
import { createApp as mcpserverChanged } from '../../functions/mcpserver-changed/index.js'
import { alarmSchedule, armAlarm, EVERY_MINUTE, nextAlarmFire, settleAlarm } from '../../shared/ticks/alarm-plan.js'
import { armTickAlarm, readAlarm, settleTickAlarm } from '../../shared/ticks/alarm.js'
import { ForbiddenError } from '../../shared/core/errors.js'
import { EmbeddedKube } from '../support/embedded-kube.js'
import { deliver, PING, RESOURCE_ADD } from '../support/deliver.js'
import { testDeps } from '../support/engine-deps.js'
import { agentOf, workflowOf } from '../support/objects.js'
import { propertyRuns } from '../support/property-runs.js'

const NOW = '2026-01-01T10:00:20Z'

describe('alarm plan (pure)', () => {
  it('fires every minute for work due within two minutes, else once at the due minute', () => {
    expect(alarmSchedule(NOW, NOW)).toBe(EVERY_MINUTE)
    expect(alarmSchedule('2026-01-01T10:02:00Z', NOW)).toBe(EVERY_MINUTE)
    // 10:30:10 rounds up to 10:31, in UTC, on that day of that month.
    expect(alarmSchedule('2026-01-01T10:30:10Z', NOW)).toBe('31 10 1 1 *')
    expect(nextAlarmFire('31 10 1 1 *', NOW)).toBe(Date.parse('2026-01-01T10:31:00Z'))
  })

  it('treats a one-shot alarm whose minute has passed as firing never (it would fire a year later)', () => {
    expect(nextAlarmFire('59 9 1 1 *', NOW)).toBeUndefined()
  })

  it('deletes the alarm when nothing is due, and leaves an alarm that already says the right thing', () => {
    expect(settleAlarm({ schedule: EVERY_MINUTE, resourceVersion: '7' }, undefined, NOW)).toEqual({ kind: 'delete', resourceVersion: '7' })
    expect(settleAlarm({ schedule: EVERY_MINUTE, resourceVersion: '7' }, NOW, NOW)).toEqual({ kind: 'none' })
    expect(settleAlarm(null, undefined, NOW)).toEqual({ kind: 'none' })
  })

  it('arming always writes, and never postpones an alarm that fires sooner', () => {
    expect(armAlarm({ schedule: EVERY_MINUTE, resourceVersion: '7' }, '2026-01-01T12:00:00Z', NOW))
      .toEqual({ kind: 'reschedule', schedule: EVERY_MINUTE, resourceVersion: '7' })
    expect(armAlarm({ schedule: '0 12 1 1 *', resourceVersion: '7' }, NOW, NOW))
      .toEqual({ kind: 'reschedule', schedule: EVERY_MINUTE, resourceVersion: '7' })
  })
})

describe('alarms on the functions', () => {
  const alarm = (kube: EmbeddedKube, tick: string) => kube.child('PingSource', 'kinetic-system', `${tick}-alarm`) as { spec?: Record<string, unknown> } | undefined

  it('a started run arms resync every minute; the tick removes the alarm once no run is unfinished', async () => {
    const kube = new EmbeddedKube({ workflows: [workflowOf('wf', [{ name: 'a' }])], agents: [agentOf('helper')] })
    await deliver(workflowChanged(testDeps(kube)), RESOURCE_ADD, kube.workflow('team', 'wf'))
    const armed = alarm(kube, 'resync')
    expect(armed?.spec).toMatchObject({ schedule: EVERY_MINUTE, ceOverrides: { extensions: { kineticsource: 'resync' } } })
    expect(armed?.spec?.sink).toEqual({ ref: { apiVersion: 'eventing.knative.dev/v1', kind: 'Broker', name: 'default', namespace: 'kinetic-system' } })

    await deliver(resyncTick(testDeps(kube)), PING, {})
    expect(alarm(kube, 'resync')).toBeDefined() // the step is still running

    const runId = kube.workflow('team', 'wf').status!.runId!
    kube.finishJob(`wf-a-${runId}`, 'Succeeded', 'OUTPUT:{}') // its event is lost: the alarm's tick finds it
    await deliver(resyncTick(testDeps(kube)), PING, {})
    expect(kube.workflow('team', 'wf').status?.phase).toBe('Succeeded')
    await deliver(resyncTick(testDeps(kube)), PING, {})
    expect(alarm(kube, 'resync')).toBeUndefined()
  })

  it('an arm between the tick\'s read and its settle survives (the tick\'s guarded delete loses)', async () => {
    const kube = new EmbeddedKube({})
    const deps = testDeps(kube)
    await armTickAlarm(deps, 'resync', NOW)
    const before = await readAlarm(deps, 'resync') // the tick reads, then lists: no unfinished run yet
    await armTickAlarm(deps, 'resync', deps.now().toISOString()) // a run starts meanwhile
    await settleTickAlarm(deps, 'resync', before, undefined)
    expect(alarm(kube, 'resync')?.spec?.schedule).toBe(EVERY_MINUTE)
  })

  it('without an arm in between, the same settle deletes the alarm', async () => {
    const kube = new EmbeddedKube({})
    const deps = testDeps(kube)
    await armTickAlarm(deps, 'resync', NOW)
    await settleTickAlarm(deps, 'resync', await readAlarm(deps, 'resync'), undefined)
    expect(alarm(kube, 'resync')).toBeUndefined()
  })

  it('the MCP servers tick sets its alarm at the earliest check it listed, not every minute', async () => {
    const clock = { now: new Date('2026-01-01T10:00:00Z') }
    const kube = new EmbeddedKube({})
    kube.mcpServers.set('team/search', {
      apiVersion: 'purko.io/v1alpha1', kind: 'MCPServer',
      metadata: { name: 'search', namespace: 'team', generation: 1, resourceVersion: '1', finalizers: ['purko.io/mcpserver-finalizer'] },
      spec: { image: 'search:1', managed: false, url: 'http://search.team:8000/mcp', transport: 'http' },
      status: { phase: 'Ready', observedGeneration: 1, nextCheckAt: '2026-01-01T10:29:30Z' },
    } as never)
    await deliver(mcpserverChanged({ ...testDeps(kube, clock) } as never), PING, {})
    expect(alarm(kube, 'mcpservers-resync')?.spec?.schedule).toBe('30 10 1 1 *')
  })
})

describe('alarms where PingSources cannot be made', () => {
  it('a tick whose function may not read its alarm (no alarm Role) still does its work', async () => {
    const kube = new EmbeddedKube({ workflows: [workflowOf('wf', [{ name: 'a' }])], agents: [agentOf('helper')] })
    kube.failNext('getChild', new ForbiddenError('pingsources.sources.knative.dev "resync-alarm" is forbidden'))
    expect((await deliver(resyncTick(testDeps(kube)), PING, {})).status).toBe(202)
    expect(kube.workflow('team', 'wf').status?.phase).toBe('Running') // its lost add made up for
  })

  it('a run still starts on a cluster that serves no PingSources; the hourly heartbeat is then its safety net', async () => {
    const kube = new EmbeddedKube({ workflows: [workflowOf('wf', [{ name: 'a' }])], agents: [agentOf('helper')] })
    kube.refuseApply('PingSource', 'kinetic-system', 'resync-alarm', 404, 'the server could not find the requested resource')
    const res = await deliver(workflowChanged(testDeps(kube)), RESOURCE_ADD, kube.workflow('team', 'wf'))
    expect(res.status).toBe(202)
    expect(kube.workflow('team', 'wf').status?.phase).toBe('Running')
    expect(kube.child('PingSource', 'kinetic-system', 'resync-alarm')).toBeUndefined()
  })
})

describe('alarms under any interleaving (property)', () => {
  /**
   * Work items start (state write, then arm) and finish while a tick runs its three steps (read
   * the alarm, list, settle) at any point between them. Whatever the order, once everyone is done,
   * unfinished work has an alarm that fires every minute, and with no work left a final tick
   * removes the alarm.
   */
  it('work that is due always keeps an alarm that fires, and the alarm goes once no work is left', async () => {
    await fc.assert(fc.asyncProperty(
      fc.array(fc.constantFrom('start', 'finish', 'tick'), { minLength: 1, maxLength: 8 }),
      fc.array(fc.nat(), { minLength: 40, maxLength: 40 }),
      async (actors, choices) => {
        const kube = new EmbeddedKube({})
        const deps = testDeps(kube)
        const work = new Set<number>()
        let next = 0
        // Each actor is a list of steps; the scheduler picks which actor moves next.
        const programs = actors.map((kind): Array<() => Promise<void>> => {
          if (kind === 'start') {
            const id = next++
            return [async () => { work.add(id) }, () => armTickAlarm(deps, 'resync', deps.now().toISOString())]
          }
          if (kind === 'finish') return [async () => { work.delete([...work][0] ?? -1) }]
          let before: Awaited<ReturnType<typeof readAlarm>> = null
          let listed = 0
          return [
            async () => { before = await readAlarm(deps, 'resync') },
            async () => { listed = work.size },
            () => settleTickAlarm(deps, 'resync', before, listed > 0 ? deps.now().toISOString() : undefined),
          ]
        })
        let c = 0
        while (programs.some((p) => p.length > 0)) {
          const ready = programs.filter((p) => p.length > 0)
          const program = ready[(choices[c++ % choices.length] ?? 0) % ready.length]!
          await program.shift()!()
        }
        const alarm = kube.child('PingSource', 'kinetic-system', 'resync-alarm') as { spec?: { schedule?: string } } | undefined
        if (work.size > 0) expect(alarm?.spec?.schedule).toBe(EVERY_MINUTE)
        // A finished piece of work may leave the alarm until the next tick, which removes it.
        await settleTickAlarm(deps, 'resync', await readAlarm(deps, 'resync'), work.size > 0 ? deps.now().toISOString() : undefined)
        expect(kube.child('PingSource', 'kinetic-system', 'resync-alarm') !== undefined).toBe(work.size > 0)
      },
    ), { numRuns: propertyRuns(1000) })
  })
})
