/**
 * What the Job builder of the controller needs beside the manifest (job-builder.ts): the
 * outputs a step's input may read, parsed only when read, and what makes a compensation Job
 * out of a step's Job. Pure.
 */
import type { V1Job } from '@kubernetes/client-node'
import { LABEL_ATTEMPT } from '../../schemas/labels.js'
import type { OutputWrite } from './outputs.js'

/**
 * Pure: step outputs by step name, the stored ones and those `fresh` in this plan, each parsed
 * on first access: a step reads a few of them, a large run holds thousands.
 */
export function lazyOutputs(stored: ReadonlyMap<string, string>, fresh: readonly OutputWrite[]): Record<string, unknown> {
  const written = new Map(fresh.map((w) => [w.step, w.json]))
  const parsed = new Map<string, unknown>()
  const jsonOf = (step: string) => written.get(step) ?? stored.get(step)
  return new Proxy({} as Record<string, unknown>, {
    get(_, step) {
      if (typeof step !== 'string') return undefined
      if (!parsed.has(step)) {
        const json = jsonOf(step)
        parsed.set(step, json === undefined ? undefined : JSON.parse(json))
      }
      return parsed.get(step)
    },
    has: (_, step) => typeof step === 'string' && jsonOf(step) !== undefined,
    ownKeys: () => [...new Set([...stored.keys(), ...written.keys()])],
    getOwnPropertyDescriptor: (_, step) => (typeof step === 'string' && jsonOf(step) !== undefined
      ? { enumerable: true, configurable: true, value: undefined } : undefined),
  })
}

/** Pure: labels a step's Job (and its pods) as the step's compensation. */
export function markRollback(job: V1Job): void {
  if (job.metadata?.labels) job.metadata.labels[LABEL_ATTEMPT] = 'rollback'
  const template = job.spec?.template.metadata
  if (template?.labels) template.labels[LABEL_ATTEMPT] = 'rollback'
}

/** Pure: STEP_INPUT of a compensation Job (purko's shape, keys in alphabetical order). */
export function rollbackInput(step: string, originalOutput: string): string {
  return JSON.stringify({
    action: 'rollback',
    originalOutput,
    task: `Rollback step "${step}": undo the actions taken in the original execution. Original output is provided.`,
  })
}
