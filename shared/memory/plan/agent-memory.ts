import type { V1ConfigMap } from '@kubernetes/client-node'
import type { Agent } from '../../schemas/agent.js'
import { LABEL_AGENT } from '../../schemas/labels.js'
import { labelValue } from '../../workflow/plan/job-builder.js'
import { memoryBehavior } from './memory-env.js'

/** The summary an Agent's memory ConfigMap keeps: its last 8 KiB, as purko keeps it. */
export const MEMORY_SUMMARY_MAX_BYTES = 8192
/** Annotation listing the updates already appended (`<run>/<step>`), so a redelivery never appends twice. */
export const ANNOTATION_MEMORY_UPDATES = 'kinetic.dev/memory-updates'
const REMEMBERED_UPDATES = 32
const ENTRY_SEPARATOR = '\n---\n'

/** Pure: purko's `<agent>-memory` ConfigMap name. */
export const memoryConfigMapName = (agentName: string): string => `${agentName}-memory`

/**
 * Pure: what a finished step adds to its Agent's memory, or null. The executor's
 * `_memory_update` (without a leading `[<workflow>/<step>] `), or for persistent memory an
 * automatic `Task: <step> | Result: <response>` when the update is empty. Nothing for `off`.
 */
export function memoryUpdateFrom(agent: Agent, outputJson: string, workflow: string, step: string): string | null {
  const behavior = memoryBehavior(agent)
  if (behavior === 'off') return null
  let output: Record<string, unknown>
  try {
    output = JSON.parse(outputJson) as Record<string, unknown>
  } catch {
    return null
  }
  if (!('_memory_update' in output)) return null
  const raw = typeof output._memory_update === 'string' ? output._memory_update : ''
  const update = raw.startsWith(`[${workflow}/${step}] `) ? raw.slice(workflow.length + step.length + 4) : raw
  if (update.trim() !== '') return update
  if (behavior !== 'persistent') return null
  const response = ['response', 'result', 'output'].map((k) => output[k]).find((v) => v !== undefined && v !== '' && v !== null)
  const text = typeof response === 'string' ? response : response === undefined ? '' : JSON.stringify(response)
  return `Task: ${truncateUtf8(step, 200)} | Result: ${truncateUtf8(text, 500)}`
}

/**
 * Pure: the memory ConfigMap after appending `update` (create when `existing` is null), or null
 * when `updateId` was appended already. Keeps the last MEMORY_SUMMARY_MAX_BYTES of the summary.
 */
export function appendMemory(existing: V1ConfigMap | null, agentName: string, namespace: string, update: string, updateId: string): V1ConfigMap | null {
  const applied = (existing?.metadata?.annotations?.[ANNOTATION_MEMORY_UPDATES] ?? '').split(',').filter((id) => id !== '')
  if (applied.includes(updateId)) return null
  const previous = existing?.data?.summary ?? ''
  const summary = keepLastUtf8(previous === '' ? update : `${previous}${ENTRY_SEPARATOR}${update}`, MEMORY_SUMMARY_MAX_BYTES)
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      ...(existing?.metadata ?? {}),
      name: memoryConfigMapName(agentName),
      namespace,
      labels: { ...(existing?.metadata?.labels ?? {}), [LABEL_AGENT]: labelValue(agentName), 'purko.io/memory-type': 'summary' },
      annotations: {
        ...(existing?.metadata?.annotations ?? {}),
        [ANNOTATION_MEMORY_UPDATES]: [...applied, updateId].slice(-REMEMBERED_UPDATES).join(','),
      },
    },
    data: { ...(existing?.data ?? {}), summary },
  }
}

/** Pure: the recalled block for a persistent Agent: the newest part of its summary within its token budget (4 characters a token). */
export function recallFrom(agent: Agent, configMap: V1ConfigMap | null): string {
  const summary = configMap?.data?.summary ?? ''
  const budget = (agent.spec.memory?.maxContextTokens ?? 2048) * 4
  return summary.length <= budget ? summary : summary.slice(summary.length - budget)
}

/** Pure: `text` cut to at most `max` UTF-8 bytes without splitting a character. */
export function truncateUtf8(text: string, max: number): string {
  const bytes = new TextEncoder().encode(text)
  if (bytes.length <= max) return text
  return new TextDecoder().decode(bytes.slice(0, max)).replace(/\uFFFD+$/, '')
}

function keepLastUtf8(text: string, max: number): string {
  const bytes = new TextEncoder().encode(text)
  if (bytes.length <= max) return text
  return new TextDecoder().decode(bytes.slice(bytes.length - max)).replace(/^\uFFFD+/, '')
}
