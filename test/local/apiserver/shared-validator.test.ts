import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { aWidget, failure, startCluster, widgetCrd, widgets, type TestCluster } from './fixtures.js'

let c: TestCluster
beforeAll(async () => {
  c = await startCluster()
  await c.ext.createCustomResourceDefinition({ body: widgetCrd() })
})
afterAll(() => c.server.close())

describe('the shared CRD validator serving the API server', () => {
  it('defaults and prunes what it stores', async () => {
    const w = (await c.custom.createNamespacedCustomObject({ ...widgets, namespace: 'default', body: aWidget('d', { size: 1, bogus: 1, parts: [{ name: 'p' }] }) })) as { spec: unknown }
    expect(w.spec).toEqual({ size: 1, color: 'red', parts: [{ name: 'p', count: 1 }] })
  })

  it('answers 422 with field causes for schema and CEL failures', async () => {
    const missing = await failure(c.custom.createNamespacedCustomObject({ ...widgets, namespace: 'default', body: aWidget('m', { color: 'red' }) }))
    expect(missing.code).toBe(422)
    expect(missing.status.details?.causes?.[0]).toMatchObject({ field: 'spec.size', reason: 'FieldValueRequired' })
    const cel = await failure(c.custom.createNamespacedCustomObject({ ...widgets, namespace: 'default', body: aWidget('big', { size: 11 }) }))
    expect(cel.code).toBe(422)
    expect(cel.status.message).toContain('only blue widgets may be larger than 10')
  })
})
