import { describe, expect, it } from 'vitest'
import type { Agent } from '../../shared/schemas/agent.js'
import { memoryBehavior, memoryEnv, memoryType, usesLegacyVectorVolume } from '../../shared/memory/plan/memory-env.js'

type Memory = NonNullable<Agent['spec']['memory']>

function anAgent(memory?: Memory): Agent {
  return {
    apiVersion: 'purko.io/v1alpha1',
    kind: 'Agent',
    metadata: { name: 'a', namespace: 'ns1' },
    spec: {
      model: { provider: 'anthropic', name: 'claude-sonnet-4-6' },
      replicas: 1, maxConcurrency: 10, timeout: '5m',
      ...(memory ? { memory } : {}),
    },
  }
}

const envMap = (agent: Agent, recalled?: string) =>
  Object.fromEntries(memoryEnv(agent, recalled).map((e) => [e.name, e.value]))

describe('memoryBehavior (SPEC 8.9 cases 50-55)', () => {
  it.each<[string, Memory | undefined, string]>([
    ['nil', undefined, 'session'],
    ['empty', {}, 'session'],
    ['off', { behavior: 'off' }, 'off'],
    ['persistent', { behavior: 'persistent' }, 'persistent'],
    ['legacy vector', { type: 'vector' }, ''],
    ['legacy summary', { type: 'summary' }, ''],
  ])('%s memory gives %j', (_, memory, behavior) => {
    expect(memoryBehavior(anAgent(memory))).toBe(behavior)
  })

  it('lets behavior win over the legacy type', () => {
    expect(memoryBehavior(anAgent({ type: 'vector', behavior: 'persistent' }))).toBe('persistent')
    expect(memoryType(anAgent({ type: 'vector', behavior: 'persistent' }))).toBe('summary')
  })
})

describe('memoryEnv (SPEC 8.9 cases 75-81)', () => {
  it.each<[string, Memory | undefined, string | undefined, Record<string, string>]>([
    ['unset', undefined, undefined, { MEMORY_TYPE: 'buffer' }],
    ['session', { behavior: 'session' }, undefined, { MEMORY_TYPE: 'buffer', MEMORY_BEHAVIOR: 'session' }],
    ['off', { behavior: 'off' }, undefined, { MEMORY_TYPE: 'none', MEMORY_BEHAVIOR: 'off' }],
    ['persistent', { behavior: 'persistent' }, 'recalled block',
      { MEMORY_TYPE: 'summary', MEMORY_BEHAVIOR: 'persistent', AGENT_MEMORY: 'recalled block' }],
    ['persistent with empty recall', { behavior: 'persistent' }, '',
      { MEMORY_TYPE: 'summary', MEMORY_BEHAVIOR: 'persistent', AGENT_MEMORY: '' }],
    ['legacy vector', { type: 'vector' }, undefined, { MEMORY_TYPE: 'vector' }],
    ['legacy summary', { type: 'summary' }, undefined, { MEMORY_TYPE: 'summary', MEMORY_CM_NAME: 'a-memory' }],
  ])('%s', (_, memory, recalled, expected) => {
    expect(envMap(anAgent(memory), recalled)).toEqual(expected)
  })

  it('sets AGENT_MEMORY (empty) for persistent memory even when nothing was recalled', () => {
    expect(envMap(anAgent({ behavior: 'persistent' }))).toHaveProperty('AGENT_MEMORY', '')
  })

  it('passes maxContextTokens and keeps purko\'s order of variables', () => {
    const env = memoryEnv(anAgent({ behavior: 'persistent', maxContextTokens: 4096 }), 'r')
    expect(env).toEqual([
      { name: 'MEMORY_TYPE', value: 'summary' },
      { name: 'MEMORY_BEHAVIOR', value: 'persistent' },
      { name: 'AGENT_MEMORY', value: 'r' },
      { name: 'MAX_CONTEXT_TOKENS', value: '4096' },
    ])
  })
})

describe('usesLegacyVectorVolume', () => {
  it.each<[string, Memory | undefined, boolean]>([
    ['legacy vector with storage', { type: 'vector', persistentStorage: { enabled: true } }, true],
    ['legacy vector without storage', { type: 'vector' }, false],
    ['storage disabled', { type: 'vector', persistentStorage: { enabled: false } }, false],
    ['behavior overrides the vector path', { type: 'vector', behavior: 'persistent', persistentStorage: { enabled: true } }, false],
    ['no memory', undefined, false],
  ])('%s: %s', (_, memory, expected) => {
    expect(usesLegacyVectorVolume(anAgent(memory))).toBe(expected)
  })
})
