import { makeInformer, type V1ConfigMap } from '@kubernetes/client-node'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { collect, startCluster, type TestCluster } from './fixtures.js'

let c: TestCluster
beforeAll(async () => {
  c = await startCluster()
})
afterAll(() => c.server.close())

describe('client-node informer', () => {
  it('lists, then follows adds, updates and deletes through the watch', async () => {
    const ns = 'informed'
    await c.core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'existing' } } })
    const informer = makeInformer<V1ConfigMap>(c.kc, `/api/v1/namespaces/${ns}/configmaps`, () => c.core.listNamespacedConfigMap({ namespace: ns }))
    const seen: string[] = []
    const sink = collect(seen, (s) => s.includes('delete fresh'))
    for (const verb of ['add', 'update', 'delete'] as const) informer.on(verb, (obj) => sink.push(`${verb} ${obj.metadata?.name}`))
    informer.on('add', (obj) => {
      if (obj.metadata?.name === 'existing') void c.core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'fresh' } } })
      if (obj.metadata?.name === 'fresh') void c.core.patchNamespacedConfigMap({ namespace: ns, name: 'fresh', body: [{ op: 'add', path: '/data', value: { a: 'b' } }] })
    })
    informer.on('update', (obj) => {
      if (obj.metadata?.name === 'fresh') void c.core.deleteNamespacedConfigMap({ namespace: ns, name: 'fresh' })
    })
    await informer.start()
    await sink.settled
    await informer.stop()
    expect(seen).toEqual(['add existing', 'add fresh', 'update fresh', 'delete fresh'])
    expect(informer.list().map((o) => o.metadata?.name)).toEqual(['existing'])
  })
})
