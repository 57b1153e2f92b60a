import type { V1ConfigMap } from '@kubernetes/client-node'
import { describe, expect, it } from 'vitest'
import {
  OUTPUT_SHARD_BUDGET, outputShardName, outputShardSelector, planOutputWrites, readOutputs, type OutputWrite,
} from '../../shared/workflow/plan/outputs.js'
import { aWorkflow, WF_UID } from '../fixtures/workflows.js'

const RUN = 'run-new'
const OLD = 'run-old'
const wf = aWorkflow()

function aShard(index: number, runId: string, data: Record<string, string>, resourceVersion = '7'): V1ConfigMap {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: outputShardName('wf', index),
      namespace: 'ai-agents',
      resourceVersion,
      labels: { 'purko.io/workflow': 'wf', 'kinetic.dev/outputs': 'true', 'kinetic.dev/run-id': runId },
    },
    data,
  }
}

/** An output of about `kib` KiB. */
const bigOutput = (kib: number) => JSON.stringify({ text: 'x'.repeat(kib * 1024) })
/** Bytes of keys and values a shard stores (what counts against etcd's object limit). */
const byteSize = (cm: V1ConfigMap) => Object.entries(cm.data ?? {})
  .reduce((n, [k, v]) => n + new TextEncoder().encode(k).length + new TextEncoder().encode(v).length, 0)

describe('outputShardName', () => {
  it.each([[0, 'wf-outputs'], [1, 'wf-outputs-2'], [2, 'wf-outputs-3'], [11, 'wf-outputs-12']])('names shard %i %s', (index, name) => {
    expect(outputShardName('wf', index)).toBe(name)
  })

  it('selects shards by workflow and outputs labels', () => {
    expect(outputShardSelector('wf')).toEqual({ 'purko.io/workflow': 'wf', 'kinetic.dev/outputs': 'true' })
  })

  it('selects the shards it writes even for a Workflow name longer than a label value', () => {
    const long = aWorkflow({ name: `nightly-${'report-'.repeat(12)}run` })
    const [shard] = planOutputWrites(long, RUN, [], [{ step: 's1', json: '{}' }]).configMaps
    const selector = outputShardSelector(long.metadata.name!)
    expect(selector['purko.io/workflow']!.length).toBeLessThanOrEqual(63)
    expect(shard!.metadata?.labels).toMatchObject(selector)
  })
})

describe('planOutputWrites', () => {
  it('creates purko\'s <workflow>-outputs with the run id label and an owner reference', () => {
    const { configMaps, placement } = planOutputWrites(wf, RUN, [], [{ step: 's1', json: '{"a":1}' }])
    expect(configMaps).toHaveLength(1)
    const cm = configMaps[0]!
    expect(cm.metadata?.name).toBe('wf-outputs')
    expect(cm.metadata?.resourceVersion).toBeUndefined()
    expect(cm.metadata?.labels).toEqual({ 'purko.io/workflow': 'wf', 'kinetic.dev/outputs': 'true', 'kinetic.dev/run-id': RUN })
    expect(cm.metadata?.ownerReferences).toEqual([expect.objectContaining({ kind: 'Workflow', name: 'wf', uid: WF_UID, controller: true })])
    expect(cm.data).toEqual({ s1: '{"a":1}' })
    expect(placement.get('s1')).toBe('wf-outputs')
  })

  it('adds to the current run\'s shard and replaces it with its resourceVersion', () => {
    const { configMaps } = planOutputWrites(wf, RUN, [aShard(0, RUN, { s1: '{}' })], [{ step: 's2', json: '{"b":2}' }])
    expect(configMaps).toHaveLength(1)
    expect(configMaps[0]!.metadata?.resourceVersion).toBe('7')
    expect(configMaps[0]!.data).toEqual({ s1: '{}', s2: '{"b":2}' })
  })

  it('writes nothing when the same output is already stored (a redelivered event)', () => {
    const { configMaps, placement } = planOutputWrites(wf, RUN, [aShard(0, RUN, { s1: '{"a":1}' })], [{ step: 's1', json: '{"a":1}' }])
    expect(configMaps).toEqual([])
    expect(placement.get('s1')).toBe('wf-outputs')
  })

  it('splits outputs into shards at the 768 KiB budget', () => {
    const writes: OutputWrite[] = ['s1', 's2', 's3', 's4', 's5'].map((step) => ({ step, json: bigOutput(250) }))
    const { configMaps, placement } = planOutputWrites(wf, RUN, [], writes)
    expect(configMaps.map((c) => c.metadata?.name)).toEqual(['wf-outputs', 'wf-outputs-2'])
    expect(Object.keys(configMaps[0]!.data!)).toEqual(['s1', 's2', 's3'])
    expect(Object.keys(configMaps[1]!.data!)).toEqual(['s4', 's5'])
    for (const cm of configMaps) expect(byteSize(cm)).toBeLessThanOrEqual(OUTPUT_SHARD_BUDGET)
    expect([...placement.values()]).toEqual(['wf-outputs', 'wf-outputs', 'wf-outputs', 'wf-outputs-2', 'wf-outputs-2'])
  })

  it('fills a later shard when the first is full', () => {
    const full = aShard(0, RUN, { s1: bigOutput(700) })
    const { configMaps } = planOutputWrites(wf, RUN, [full], [{ step: 's2', json: bigOutput(100) }])
    expect(configMaps.map((c) => c.metadata?.name)).toEqual(['wf-outputs-2'])
  })

  it('uses free room in an earlier shard before a later one', () => {
    const shards = [aShard(0, RUN, { s1: bigOutput(100) }), aShard(1, RUN, { s2: bigOutput(700) })]
    const { configMaps } = planOutputWrites(wf, RUN, shards, [{ step: 's3', json: '{"c":3}' }])
    expect(configMaps.map((c) => c.metadata?.name)).toEqual(['wf-outputs'])
  })

  it('keeps a 10,000-step run\'s outputs in shards that each stay under the budget', () => {
    const writes = Array.from({ length: 10_000 }, (_, i) => ({ step: `s${i + 1}`, json: JSON.stringify({ summary: 'y'.repeat(200) }) }))
    const { configMaps } = planOutputWrites(wf, RUN, [], writes)
    expect(configMaps.length).toBeGreaterThan(1)
    for (const cm of configMaps) expect(byteSize(cm)).toBeLessThanOrEqual(OUTPUT_SHARD_BUDGET)
    expect(configMaps.reduce((n, cm) => n + Object.keys(cm.data ?? {}).length, 0)).toBe(10_000)
  })

  it('takes over every shard of an older run: replaced with only the new run\'s data and run id', () => {
    const shards = [aShard(0, OLD, { s1: '{"old":1}', s2: '{"old":2}' }, '11'), aShard(1, OLD, { s3: '{"old":3}' }, '12')]
    const { configMaps } = planOutputWrites(wf, RUN, shards, [{ step: 's1', json: '{"new":1}' }])
    expect(configMaps.map((c) => [c.metadata?.name, c.metadata?.resourceVersion, c.metadata?.labels?.['kinetic.dev/run-id'], c.data])).toEqual([
      ['wf-outputs', '11', RUN, { s1: '{"new":1}' }],
      ['wf-outputs-2', '12', RUN, {}],
    ])
  })

  it('ignores ConfigMaps that only look like shards', () => {
    const stray = { ...aShard(0, OLD, { x: '{}' }), metadata: { ...aShard(0, OLD, {}).metadata, name: 'wf-outputs-extra' } }
    const { configMaps } = planOutputWrites(wf, RUN, [stray], [{ step: 's1', json: '{}' }])
    expect(configMaps.map((c) => c.metadata?.name)).toEqual(['wf-outputs'])
  })
})

describe('readOutputs', () => {
  const shards = [
    aShard(1, RUN, { s3: '{"c":3}' }),
    aShard(0, RUN, { s1: '{"a":1}', s2: '{"b":2}' }),
    aShard(2, OLD, { s4: '{"old":4}' }),
  ]

  it('reads every output of the run from all its shards', () => {
    expect(readOutputs(shards, RUN)).toEqual(new Map([['s1', '{"a":1}'], ['s2', '{"b":2}'], ['s3', '{"c":3}']]))
  })

  it('never reads outputs of another run', () => {
    expect(readOutputs(shards, 'run-other').size).toBe(0)
    expect(readOutputs(shards, RUN).has('s4')).toBe(false)
  })
})
