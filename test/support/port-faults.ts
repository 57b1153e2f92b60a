import type { Kube } from '../../shared/kube/port.js'

/** A test double's count of port calls and the faults a test injects into them, one per call. */
export class PortFaults {
  /** Port calls made (failed ones included). */
  calls = 0
  private readonly faults = new Map<keyof Kube, Error[]>()

  /** Makes the next call of `method` throw `error` (queue several by calling again). */
  failNext(method: keyof Kube, error: Error): this {
    this.faults.set(method, [...(this.faults.get(method) ?? []), error])
    return this
  }

  /** Counts a port call and throws the fault injected for it, if any. */
  enter(method: keyof Kube): void {
    this.calls++
    const queue = this.faults.get(method)
    const fault = queue?.shift()
    if (queue && queue.length === 0) this.faults.delete(method)
    if (fault) throw fault
  }
}
