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
