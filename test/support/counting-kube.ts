import type { Kube } from '../../shared/kube/port.js'

/** The Kube port as given, with a count of calls per method (`reset` starts a new count). */
export function countingKube(kube: Kube): { kube: Kube; calls: Map<string, number>; reset(): void } {
  const calls = new Map<string, number>()
  const proxy = new Proxy(kube, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver)
      if (typeof value !== 'function' || typeof prop !== 'string') return value
      return (...args: unknown[]) => {
        calls.set(prop, (calls.get(prop) ?? 0) + 1)
        return (value as (...a: unknown[]) => unknown).apply(target, args)
      }
    },
  })
  return { kube: proxy, calls, reset: () => calls.clear() }
}
