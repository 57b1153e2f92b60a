/**
 * The shell of alarms (shared/ticks/alarm-plan.ts says what an alarm is and decides every write):
 * read a tick's alarm, settle it after a tick round, arm it after a write that made work due.
 */
import { randomUUID } from 'node:crypto'
import { ConflictError, ForbiddenError, RefusedError } from '../core/errors.js'
import { childUses } from '../kube/child-uses.js'
import type { Kube, KubeVerbs } from '../kube/port.js'
import type { Logger } from '../log.js'
import type { RuntimeConfig } from '../config.js'
import {
  ANNOTATION_ARM_ID, ANNOTATION_ARMED_AT, armAlarm, liveAlarm, mergeAlarm, settleAlarm, alarmManifest, alarmName, type LiveAlarm, type Tick, type AlarmWrite,
} from './alarm-plan.js'

/** The port verbs of alarms, and the one child kind they pass (an alarm is a PingSource). */
export const ALARM_VERBS = ['getChild', 'createChild', 'patchChild', 'deleteChild'] as const satisfies readonly (keyof Kube)[]
export const ALARM_CHILD_USES = childUses(ALARM_VERBS, ['PingSource'])

export interface AlarmDeps {
  kube: KubeVerbs<typeof ALARM_VERBS>
  now: () => Date
  log: Logger
  config: Pick<RuntimeConfig, 'kineticNamespace'>
}

/** Who asks for a reconcile: a tick round settles its alarm after the round, so its reconciles do not arm it. */
export interface ReconcileFrom {
  tick?: boolean
}

/** Attempts of one settle or arm when the alarm keeps changing under it. */
const ATTEMPTS = 3

function alarmNamespace(deps: AlarmDeps): string {
  return deps.config.kineticNamespace ?? 'kinetic-system'
}

/**
 * The tick's alarm as it is now (read before the tick lists what it looks at). Null too when the
 * function may not read it (an install without the alarm Roles): the tick still does its work,
 * and its settle then fails the same way and is logged.
 */
export async function readAlarm(deps: AlarmDeps, tick: Tick): Promise<LiveAlarm | null> {
  try {
    return liveAlarm(await deps.kube.getChild('PingSource', alarmNamespace(deps), alarmName(tick)))
  } catch (err) {
    if (!(err instanceof ForbiddenError)) throw err
    return null
  }
}

/**
 * After a tick round: the alarm fires at `due` (every minute when due now), or is deleted when
 * nothing is due; `before` is what readAlarm gave before the round listed. An arm since then wins
 * where it fires earlier. Never throws: the heartbeat is the safety net of an alarm not settled.
 */
export async function settleTickAlarm(deps: AlarmDeps, tick: Tick, before: LiveAlarm | null, due: string | undefined): Promise<void> {
  const now = deps.now().toISOString()
  let write = settleAlarm(before, due, now)
  try {
    for (let attempt = 1; ; attempt++) {
      try {
        await apply(deps, tick, write, now)
        if (write.kind !== 'none') deps.log.info({ tick, alarm: write.kind, ...('schedule' in write ? { schedule: write.schedule } : {}), due }, 'Alarm settled')
        return
      } catch (err) {
        if (!(err instanceof ConflictError) || attempt >= ATTEMPTS) throw err
        write = mergeAlarm(await readAlarm(deps, tick), due, now)
      }
    }
  } catch (err) {
    deps.log.warn({ tick, err: err instanceof Error ? err.message : String(err) }, 'Could not settle the alarm; the heartbeat ticks instead')
  }
}

/**
 * After a write that made work due at `due`: the alarm fires by then. Always one write, so a tick
 * that read the alarm before this work existed cannot delete or postpone it. Throws when it could
 * not (the event is redelivered, and the write before it is idempotent).
 */
export async function armTickAlarm(deps: AlarmDeps, tick: Tick, due: string): Promise<void> {
  const now = deps.now().toISOString()
  for (let attempt = 1; ; attempt++) {
    try {
      const write = armAlarm(await readAlarm(deps, tick), due, now)
      await apply(deps, tick, write, now)
      deps.log.debug({ tick, due, alarm: write.kind }, 'Alarm armed')
      return
    } catch (err) {
      // No PingSources here (a cluster without Knative) or no right to them: redelivering would
      // not change that, so the work waits for the heartbeat, and the log says why.
      if (err instanceof RefusedError || err instanceof ForbiddenError) {
        deps.log.warn({ tick, due, err: err.message }, 'Could not arm the alarm; the hourly heartbeat ticks instead')
        return
      }
      if (!(err instanceof ConflictError) || attempt >= ATTEMPTS) throw err
    }
  }
}

/**
 * After a status write that moved a due time: arms the alarm when `due` is sooner than `before`
 * (or there was none). An alarm set for `before`, or the tick that found it due, covers the rest.
 */
export async function armTickAlarmIfSooner(deps: AlarmDeps, tick: Tick, before: string | undefined, due: string | undefined): Promise<void> {
  if (due !== undefined && (before === undefined || Date.parse(due) < Date.parse(before))) await armTickAlarm(deps, tick, due)
}

async function apply(deps: AlarmDeps, tick: Tick, write: AlarmWrite, now: string): Promise<void> {
  const namespace = alarmNamespace(deps)
  switch (write.kind) {
    case 'none':
      return
    case 'create':
      await deps.kube.createChild(alarmManifest(tick, namespace, write.schedule, now))
      return
    case 'reschedule':
      await deps.kube.patchChild('PingSource', namespace, alarmName(tick), write.resourceVersion, {
        metadata: { annotations: { [ANNOTATION_ARMED_AT]: now, [ANNOTATION_ARM_ID]: randomUUID() } },
        spec: { schedule: write.schedule },
      })
      return
    case 'delete':
      await deps.kube.deleteChild('PingSource', namespace, alarmName(tick), { propagationPolicy: 'Background', resourceVersion: write.resourceVersion })
  }
}
