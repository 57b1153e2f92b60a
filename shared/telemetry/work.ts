import { AsyncLocalStorage } from 'node:async_hooks'

/** What one handled CloudEvent did, for its span: the runs and steps it advanced, the API calls it made. */
export interface Work {
  advanced: Array<{ runId: string; jobName?: string }>
  apiCalls: number
  /** The handled event's valid traceparent, continued by the events this work emits. */
  traceparent?: string
}

const current = new AsyncLocalStorage<Work>()

/** Runs `fn` with a fresh record of its work. */
export function withWork<T>(work: Work, fn: () => T): T {
  return current.run(work, fn)
}

/** Notes that the current work advanced a run (and, when known, the step attempt `jobName`). */
export function noteAdvanced(runId: string, jobName?: string): void {
  const work = current.getStore()
  if (!work || work.advanced.length >= 32) return
  if (work.advanced.some((a) => a.runId === runId && a.jobName === jobName)) return
  work.advanced.push(jobName === undefined ? { runId } : { runId, jobName })
}

/** Counts one Kubernetes API call of the current work. */
export function noteApiCall(): void {
  const work = current.getStore()
  if (work) work.apiCalls += 1
}

/** The traceparent of the event the current work handles, if it carried a valid one. */
export function currentTraceparent(): string | undefined {
  return current.getStore()?.traceparent
}
