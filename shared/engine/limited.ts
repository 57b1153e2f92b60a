import { ConflictError } from '../core/errors.js'
import type { Logger } from '../log.js'

/**
 * Runs `work` over every item with at most `limit` in flight, in order of the list. A rejection
 * of one item is the caller's to catch inside `work`; the pool itself never stops early.
 */
export async function forEachLimited<T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0
  const lane = async (): Promise<void> => {
    while (next < items.length) await work(items[next++]!)
  }
  await Promise.all(Array.from({ length: Math.max(0, Math.min(limit, items.length)) }, lane))
}

/** An object a tick reconciles, as listed. */
interface Listed {
  metadata: { namespace?: string; name?: string }
}

/** No item starts once `ms` have passed since the sweep began (the tick must end within its Service timeout). */
export interface StartBudget {
  now: () => Date
  ms: number
}

/**
 * A tick's sweep: reconciles every listed object with at most `limit` in flight. One object's
 * trouble must not starve the others, so a failure is logged (a lost race at info level) and
 * counted, and the next tick tries it again. `reconcileOne` answers whether it wrote anything.
 * With a budget, items not started in time are counted as `deferred` (the next tick has them).
 */
export async function sweep<T extends Listed>(
  items: readonly T[], limit: number, log: Logger, failure: string, reconcileOne: (item: T) => Promise<boolean>, budget?: StartBudget,
): Promise<{ applied: number; failed: number; deferred: number }> {
  let applied = 0
  let failed = 0
  let deferred = 0
  const started = budget?.now().getTime() ?? 0
  await forEachLimited(items, limit, async (item) => {
    if (budget && budget.now().getTime() - started > budget.ms) {
      deferred++
      return
    }
    try {
      if (await reconcileOne(item)) applied++
    } catch (err) {
      failed++
      const { namespace, name } = item.metadata
      log[err instanceof ConflictError ? 'info' : 'warn']({ namespace, name, err: (err as Error).message }, `${failure} ${namespace}/${name}`)
    }
  })
  return { applied, failed, deferred }
}
