import type { V1ConfigMap } from '@kubernetes/client-node'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { createApp } from '../../functions/memoryprovider-changed/index.js'
import { MEMORY_PROVIDER_TYPES, MemoryProviderSchema, type MemoryProvider } from '../../shared/schemas/memoryprovider.js'
import { EmbeddedKube } from '../support/embedded-kube.js'
import { deliver, PING, RESOURCE_ADD, RESOURCE_UPDATE } from '../support/deliver.js'
import { testDeps } from '../support/engine-deps.js'

const NS = 'purko-system'
const NOW = new Date('2026-01-01T00:00:00Z')

function aMemoryProvider(name: string, spec: Record<string, unknown>): MemoryProvider {
  return MemoryProviderSchema.parse({ metadata: { name, namespace: NS, uid: `uid-${name}`, generation: 1, resourceVersion: '1' }, spec })
}
function kubeWith(providers: MemoryProvider[], memories: Array<[string, string]> = []): EmbeddedKube {
  const kube = new EmbeddedKube()
  for (const p of providers) kube.memoryProviders.set(`${p.metadata.namespace}/${p.metadata.name}`, structuredClone(p))
  for (const [ns, name] of memories) {
    kube.configMaps.set(`${ns}/${name}`, { metadata: { name, namespace: ns, labels: { 'purko.io/agent': name, 'purko.io/memory-type': 'summary' } }, data: { summary: 'x' } } as V1ConfigMap)
  }
  // An unrelated ConfigMap is not an entry.
  kube.configMaps.set('team/outputs', { metadata: { name: 'outputs', namespace: 'team', labels: { 'purko.io/workflow': 'wf' } } })
  return kube
}
const stored = (kube: EmbeddedKube, name: string) => structuredClone(kube.memoryProviders.get(`${NS}/${name}`)!)

describe('memoryprovider-changed (purko\'s MemoryProvider controller tests as golden cases)', () => {
  it('TestMemoryProviderStatusWritten: builtin is healthy with the memory ConfigMaps of every namespace as its entries', async () => {
    const memories = Array.from({ length: 7 }, (_, i): [string, string] => [i % 2 ? 'team-a' : 'ai-agents', `agent-${i}-memory`])
    const kube = kubeWith([aMemoryProvider('builtin', { type: 'builtin', default: true })], memories)
    expect((await deliver(createApp(testDeps(kube, { now: NOW })), RESOURCE_ADD, stored(kube, 'builtin'))).status).toBe(202)
    expect(stored(kube, 'builtin').status).toEqual({ healthy: true, entryCount: 7, lastError: '', lastChecked: NOW.toISOString(), observedGeneration: 1 })
    expect(kube.events.map((e) => [e.type, e.reason])).toEqual([['Normal', 'MemoryProviderHealthy']])
  })

  it('TestMemoryProviderBuiltinUnhealthy: a store that cannot be read is unhealthy with its error, lastChecked set', async () => {
    const kube = kubeWith([aMemoryProvider('builtin', { type: 'builtin' })]).failNext('listAllConfigMaps', new Error('db locked'))
    await deliver(createApp(testDeps(kube, { now: NOW })), RESOURCE_ADD, stored(kube, 'builtin'))
    expect(stored(kube, 'builtin').status).toMatchObject({ healthy: false, lastError: 'db locked', lastChecked: NOW.toISOString() })
  })

  it('TestMemoryProviderReservedTypeUnhealthy: redis is unhealthy with purko\'s text', async () => {
    const kube = kubeWith([aMemoryProvider('redis-future', { type: 'redis' })])
    await deliver(createApp(testDeps(kube, { now: NOW })), RESOURCE_ADD, stored(kube, 'redis-future'))
    expect(stored(kube, 'redis-future').status).toMatchObject({ healthy: false, lastError: 'provider type not implemented (only builtin ships in Spec 34)', lastChecked: NOW.toISOString() })
  })

  it('drops the echo of its own write without an API call; the 5-minute recheck refreshes with one count for all providers', async () => {
    const kube = kubeWith([aMemoryProvider('a', { type: 'builtin' }), aMemoryProvider('b', { type: 'builtin' })], [['ai-agents', 'm1']])
    const clock = { now: NOW }
    const app = createApp(testDeps(kube, clock))
    await deliver(app, RESOURCE_ADD, stored(kube, 'a'))
    const calls = kube.calls
    expect((await deliver(app, RESOURCE_UPDATE, stored(kube, 'a'))).status).toBe(202)
    expect(kube.calls).toBe(calls)

    kube.configMaps.set('team/m2', { metadata: { name: 'm2', namespace: 'team', labels: { 'purko.io/memory-type': 'summary' } } })
    clock.now = new Date(NOW.getTime() + 5 * 60_000)
    kube.writes.length = 0
    kube.calls = 0
    expect((await deliver(app, PING, {})).status).toBe(202)
    expect(kube.writes).toEqual(['status MemoryProvider/a', 'status MemoryProvider/b'])
    expect(stored(kube, 'a').status?.entryCount).toBe(2)
    expect(stored(kube, 'b').status?.entryCount).toBe(2)
    // One LIST of providers, one count, two status writes, one Event (b's first check).
    expect(kube.calls).toBe(1 + 1 + 2 + 1)
  })

  it('never crashes on any spec: every type and any config answer 202 with a boolean health and a reason when unhealthy', async () => {
    await fc.assert(fc.asyncProperty(
      fc.constantFrom(...MEMORY_PROVIDER_TYPES),
      fc.dictionary(fc.string({ maxLength: 8 }), fc.string({ maxLength: 8 }), { maxKeys: 3 }),
      fc.option(fc.record({ maxEntriesPerScope: fc.integer(), maxAgeDays: fc.integer() }), { nil: undefined }),
      async (type, config, retention) => {
        const kube = kubeWith([aMemoryProvider('p', { type, config, ...(retention ? { retention } : {}) })])
        expect((await deliver(createApp(testDeps(kube, { now: NOW })), RESOURCE_ADD, stored(kube, 'p'))).status).toBe(202)
        const status = stored(kube, 'p').status!
        expect(typeof status.healthy).toBe('boolean')
        if (!status.healthy) expect(status.lastError).not.toBe('')
      },
    ), { numRuns: 30 })
  })
})
