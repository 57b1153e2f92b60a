import type { V1ConfigMap } from '@kubernetes/client-node'
import type { Agent } from '../schemas/agent.js'

/**
 * What a warm function instance remembers between events, so a step of a busy run does not
 * re-read what it read a moment ago. Two kinds of memory, with different rules:
 *
 * - **Last known copies** (Agents, a run's output shards). Never trusted on their own: a copy is
 *   used only where this reconcile writes the same object guarded by the copy's resourceVersion,
 *   so a successful write proves the copy was current; a lost write discards it and the
 *   reconcile starts again from fresh reads.
 * - **Configuration** (the LLMProviders a namespace sees, the MCP registry): read at most once per
 *   `configTtlMs`. An edit reaches steps that start after that long at the latest.
 *
 * Bounded, so a long-lived instance that sees thousands of runs keeps a fixed footprint.
 */
export interface EngineMemo {
  agents: BoundedMap<string, Agent>
  /** Key `namespace/workflow`: the shards of one run as this instance last wrote or listed them. */
  outputs: BoundedMap<string, RunShards>
  config: BoundedMap<string, { at: number; value: unknown }>
  configTtlMs: number
}

/** The output shards of one run, as last seen. */
export interface RunShards {
  uid: string
  runId: string
  shards: V1ConfigMap[]
}

/** How long a read of configuration serves later events of the same instance. */
export const CONFIG_TTL_MS = 10_000

/** Entries kept per kind; the oldest goes first. */
const MAX_ENTRIES = 2_000

/** A Map that forgets its oldest entry once it holds `max`. */
export class BoundedMap<K, V> {
  private readonly entries = new Map<K, V>()
  constructor(private readonly max = MAX_ENTRIES) {}

  get(key: K): V | undefined {
    return this.entries.get(key)
  }

  set(key: K, value: V): void {
    this.entries.delete(key)
    this.entries.set(key, value)
    if (this.entries.size > this.max) this.entries.delete(this.entries.keys().next().value as K)
  }

  delete(key: K): void {
    this.entries.delete(key)
  }

  get size(): number {
    return this.entries.size
  }
}

export function createEngineMemo(configTtlMs = CONFIG_TTL_MS): EngineMemo {
  return { agents: new BoundedMap(), outputs: new BoundedMap(), config: new BoundedMap(), configTtlMs }
}

/**
 * `read()` once per `memo.configTtlMs` for `key` (every time without a memo). A failed read is
 * not remembered, so the next event tries again.
 */
export async function rememberedConfig<T>(memo: EngineMemo | undefined, key: string, now: Date, read: () => Promise<T>): Promise<T> {
  if (!memo) return read()
  const hit = memo.config.get(key)
  if (hit && now.getTime() - hit.at < memo.configTtlMs && now.getTime() >= hit.at) return hit.value as T
  const value = await read()
  memo.config.set(key, { at: now.getTime(), value })
  return value
}

/** Memo key of the providers visible from a namespace. */
export const providersKey = (namespace: string): string => `llmproviders/${namespace}`

/** Memo key of the registry ConfigMap. */
export const registryKey = (namespace: string, name: string): string => `configmap/${namespace}/${name}`
