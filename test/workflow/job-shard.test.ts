import { describe, expect, it } from 'vitest'
import { STEP_JOB_SHARDS, stepJobShard } from '../../shared/workflow/plan/job-shard.js'

describe('stepJobShard', () => {
  it('keeps a Workflow on the shard earlier releases gave it, so an upgrade moves no Job to another watch', () => {
    expect(['ai-agents/wf', 'a/b', 'team-a/nightly', 'default/x'].map((k) => stepJobShard(...(k.split('/') as [string, string])))).toEqual(['3', '0', '2', '3'])
  })

  it('spreads runs over every shard about evenly, also names that differ in one character', () => {
    const counts = new Map<string, number>()
    for (const a of 'abcdefghijklmnopqrstuvwxyz') for (const b of 'abcdefghijklmnopqrstuvwxyz') {
      const shard = stepJobShard('team', `${a}${b}`)
      counts.set(shard, (counts.get(shard) ?? 0) + 1)
    }
    expect([...counts.keys()].sort()).toEqual(Array.from({ length: STEP_JOB_SHARDS }, (_, i) => String(i)))
    const even = (26 * 26) / STEP_JOB_SHARDS
    for (const n of counts.values()) expect(Math.abs(n - even)).toBeLessThan(even * 0.2)
  })

  it('tells namespaces apart: the same name in two namespaces is two runs', () => {
    const differ = Array.from({ length: 50 }, (_, i) => stepJobShard('team-a', `run-${i}`) !== stepJobShard('team-b', `run-${i}`))
    expect(differ.filter(Boolean).length).toBeGreaterThan(20)
  })
})
