import { noteApiCall } from '../telemetry/work.js'
import type { Kube } from './port.js'

/**
 * A Kube whose real adapter is loaded on the first call. The Kubernetes client is most of a
 * function's start-up cost, and many events (our own status writes coming back, Jobs that are
 * not ours) are answered without touching the API, so a cold start skips loading it for them.
 */
export function lazyKube(load: () => Promise<Kube>): Kube {
  let loading: Promise<Kube> | undefined
  const real = () => (loading ??= load())
  return new Proxy({} as Kube, {
    get(_, method: string | symbol) {
      if (typeof method !== 'string' || method === 'then') return undefined
      return async (...args: unknown[]) => {
        noteApiCall()
        const kube = await real()
        return (kube[method as keyof Kube] as (...a: unknown[]) => Promise<unknown>).apply(kube, args)
      }
    },
  })
}
