import { readRuntimeConfig } from '../../shared/config.js'
import type { EngineDeps } from '../../shared/workflow/controller.js'
import { noKineticEvents } from '../../shared/engine/kinetic-events.js'
import type { Kube } from '../../shared/kube/port.js'
import { silentLogger } from '../../shared/log.js'

/** Engine dependencies for tests: the given Kube, a settable clock, no logs, no event sink. */
export function testDeps(kube: Kube, clock: { now: Date } = { now: new Date('2026-01-01T00:00:00Z') }): EngineDeps {
  return {
    kube,
    log: silentLogger,
    now: () => clock.now,
    config: readRuntimeConfig({ KINETIC_EXECUTOR_IMAGE: 'kinetic-executor:test' }),
    events: noKineticEvents,
  }
}
