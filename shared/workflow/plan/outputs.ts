import type { V1ConfigMap } from '@kubernetes/client-node'
import type { Workflow } from '../../schemas/workflow.js'
import { API_VERSION, LABEL_OUTPUTS, LABEL_RUN_ID, LABEL_WORKFLOW } from '../../schemas/labels.js'
import { labelValue } from './job-builder.js'

/**
 * Bytes of step output one ConfigMap may hold. etcd refuses objects over ~1.5 MiB; staying far
 * below keeps every write Kinetic makes small, and a 10,000-step run simply uses more shards.
 */
export const OUTPUT_SHARD_BUDGET = 768 * 1024

/** One step output to store, as compact JSON text. */
export interface OutputWrite {
  step: string
  json: string
}

/** Pure: the name of outputs shard `index`; shard 0 keeps purko's `<workflow>-outputs`. */
export function outputShardName(workflowName: string, index: number): string {
  return index === 0 ? `${workflowName}-outputs` : `${workflowName}-outputs-${index + 1}`
}

/** Pure: the label selector that finds a Workflow's output shards. */
export function outputShardSelector(workflowName: string): Record<string, string> {
  return { [LABEL_WORKFLOW]: labelValue(workflowName), [LABEL_OUTPUTS]: 'true' }
}

/** Pure: step → output JSON text of the given run, gathered from every shard of that run. */
export function readOutputs(shards: readonly V1ConfigMap[], runId: string): Map<string, string> {
  const outputs = new Map<string, string>()
  for (const shard of sortShards(shards)) {
    if (shard.metadata?.labels?.[LABEL_RUN_ID] !== runId) continue
    for (const [step, json] of Object.entries(shard.data ?? {})) outputs.set(step, json)
  }
  return outputs
}

/**
 * Pure: the ConfigMaps to create (no resourceVersion) or replace (with one) so that every write
 * is stored exactly once. Shards left by an earlier run are taken over and emptied, so a rerun
 * never sees stale outputs. Also returns the shard each step landed in.
 */
export function planOutputWrites(
  workflow: Workflow,
  runId: string,
  shards: readonly V1ConfigMap[],
  writes: readonly OutputWrite[],
): { configMaps: V1ConfigMap[]; placement: Map<string, string> } {
  const name = workflow.metadata.name ?? ''
  const byIndex = new Map<number, { base: V1ConfigMap | undefined; data: Record<string, string>; size: number; dirty: boolean }>()
  for (const shard of shards) {
    const index = shardIndex(name, shard.metadata?.name ?? '')
    if (index === null) continue
    const current = shard.metadata?.labels?.[LABEL_RUN_ID] === runId
    const data = current ? { ...(shard.data ?? {}) } : {}
    byIndex.set(index, { base: shard, data, size: dataSize(data), dirty: !current })
  }
  const placement = new Map<string, string>()
  for (const write of writes) {
    const existing = [...byIndex.entries()].find(([, s]) => s.data[write.step] !== undefined)
    if (existing && existing[1].data[write.step] === write.json) {
      placement.set(write.step, outputShardName(name, existing[0]))
      continue
    }
    if (existing) {
      const shard = existing[1]
      shard.size -= entrySize(write.step, shard.data[write.step]!)
      delete shard.data[write.step]
      shard.dirty = true
    }
    const need = entrySize(write.step, write.json)
    let index = 0
    for (;; index++) {
      const shard = byIndex.get(index)
      if (!shard) {
        byIndex.set(index, { base: undefined, data: {}, size: 0, dirty: true })
        break
      }
      if (shard.size + need <= OUTPUT_SHARD_BUDGET || shard.size === 0) break
    }
    const shard = byIndex.get(index)!
    shard.data[write.step] = write.json
    shard.size += need
    shard.dirty = true
    placement.set(write.step, outputShardName(name, index))
  }
  const configMaps: V1ConfigMap[] = []
  for (const [index, shard] of [...byIndex.entries()].sort((a, b) => a[0] - b[0])) {
    if (!shard.dirty) continue
    configMaps.push(shardManifest(workflow, runId, index, shard.data, shard.base?.metadata?.resourceVersion))
  }
  return { configMaps, placement }
}

function shardManifest(
  workflow: Workflow,
  runId: string,
  index: number,
  data: Record<string, string>,
  resourceVersion: string | undefined,
): V1ConfigMap {
  const name = workflow.metadata.name ?? ''
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: outputShardName(name, index),
      namespace: workflow.metadata.namespace,
      labels: { [LABEL_WORKFLOW]: labelValue(name), [LABEL_OUTPUTS]: 'true', [LABEL_RUN_ID]: runId },
      ownerReferences: [{
        apiVersion: API_VERSION,
        kind: 'Workflow',
        name,
        uid: workflow.metadata.uid ?? '',
        controller: true,
        blockOwnerDeletion: true,
      }],
      ...(resourceVersion ? { resourceVersion } : {}),
    },
    data,
  }
}

function sortShards(shards: readonly V1ConfigMap[]): V1ConfigMap[] {
  return [...shards].sort((a, b) => (a.metadata?.name ?? '').localeCompare(b.metadata?.name ?? '', 'en', { numeric: true }))
}

function shardIndex(workflowName: string, configMapName: string): number | null {
  if (configMapName === `${workflowName}-outputs`) return 0
  const match = /^(\d+)$/.exec(configMapName.slice(`${workflowName}-outputs-`.length))
  if (!configMapName.startsWith(`${workflowName}-outputs-`) || !match) return null
  const n = Number.parseInt(match[1]!, 10)
  return n >= 2 ? n - 1 : null
}

function dataSize(data: Record<string, string>): number {
  let size = 0
  for (const [k, v] of Object.entries(data)) size += entrySize(k, v)
  return size
}

function entrySize(key: string, value: string): number {
  // JSON framing of one entry in the stored object: quotes, colon, comma and escapes.
  return key.length + new TextEncoder().encode(value).length + 8
}
