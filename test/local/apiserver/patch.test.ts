import { AppsV1Api, PatchStrategy, setHeaderOptions, type V1Deployment } from '@kubernetes/client-node'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { aWidget, failure, startCluster, widgetCrd, widgets, type TestCluster } from './fixtures.js'

let c: TestCluster
let apps: AppsV1Api
beforeAll(async () => {
  c = await startCluster()
  apps = c.kc.makeApiClient(AppsV1Api)
  await c.ext.createCustomResourceDefinition({ body: widgetCrd() })
})
afterAll(() => c.server.close())

const as = (type: PatchStrategy) => setHeaderOptions('Content-Type', type)
type Obj = { metadata: { resourceVersion?: string; labels?: Record<string, string> }; spec: Record<string, unknown> }

const deployment = (name: string): V1Deployment => ({
  metadata: { name },
  spec: {
    selector: { matchLabels: { app: name } },
    template: {
      metadata: { labels: { app: name } },
      spec: {
        containers: [
          { name: 'web', image: 'web:1', env: [{ name: 'A', value: '1' }, { name: 'B', value: '2' }] },
          { name: 'sidecar', image: 'side:1' },
        ],
      },
    },
  },
})

describe('patch', () => {
  it('applies a JSON merge patch, where null deletes', async () => {
    await c.custom.createNamespacedCustomObject({ ...widgets, namespace: 'default', body: aWidget('m', { size: 2, extra: { a: 1, b: 2 } }) })
    const out = (await c.custom.patchNamespacedCustomObject({ ...widgets, namespace: 'default', name: 'm', body: { spec: { size: 3, extra: { a: null } } } }, as(PatchStrategy.MergePatch))) as Obj
    expect(out.spec).toEqual({ size: 3, color: 'red', extra: { b: 2 } })
  })

  it('applies a JSON patch (the client-node default for custom objects) and answers 422 when a test op fails', async () => {
    await c.custom.createNamespacedCustomObject({ ...widgets, namespace: 'default', body: aWidget('j', { size: 2 }) })
    const out = (await c.custom.patchNamespacedCustomObject({
      ...widgets,
      namespace: 'default',
      name: 'j',
      body: [{ op: 'test', path: '/spec/size', value: 2 }, { op: 'replace', path: '/spec/size', value: 5 }, { op: 'add', path: '/metadata/labels', value: { x: 'y' } }],
    })) as Obj
    expect(out.spec.size).toBe(5)
    expect(out.metadata.labels).toEqual({ x: 'y' })
    const { code } = await failure(c.custom.patchNamespacedCustomObject({ ...widgets, namespace: 'default', name: 'j', body: [{ op: 'test', path: '/spec/size', value: 2 }] }))
    expect(code).toBe(422)
  })

  it('treats a resourceVersion inside a patch as a precondition', async () => {
    const w = (await c.custom.createNamespacedCustomObject({ ...widgets, namespace: 'default', body: aWidget('rv', { size: 2 }) })) as Obj
    await c.custom.patchNamespacedCustomObject({ ...widgets, namespace: 'default', name: 'rv', body: { spec: { size: 3 } } }, as(PatchStrategy.MergePatch))
    const { code } = await failure(c.custom.patchNamespacedCustomObject(
      { ...widgets, namespace: 'default', name: 'rv', body: { metadata: { resourceVersion: w.metadata.resourceVersion }, spec: { size: 4 } } },
      as(PatchStrategy.MergePatch),
    ))
    expect(code).toBe(409)
  })

  it('merges keyed lists element-wise in a strategic merge patch', async () => {
    await apps.createNamespacedDeployment({ namespace: 'default', body: deployment('smp') })
    const out = await apps.patchNamespacedDeployment(
      { namespace: 'default', name: 'smp', body: { spec: { template: { spec: { containers: [{ name: 'web', env: [{ name: 'B', value: '3' }] }] } } } } },
      as(PatchStrategy.StrategicMergePatch),
    )
    const containers = out.spec?.template.spec?.containers ?? []
    expect(containers.map((x) => x.name)).toEqual(['web', 'sidecar'])
    expect(containers[0]?.image).toBe('web:1')
    expect(containers[0]?.env).toEqual([{ name: 'A', value: '1' }, { name: 'B', value: '3' }])
  })

  it('refuses a strategic merge patch on a custom resource with 415, as the real server does', async () => {
    await c.custom.createNamespacedCustomObject({ ...widgets, namespace: 'default', body: aWidget('smp-cr', { size: 2 }) })
    const { code } = await failure(c.custom.patchNamespacedCustomObject({ ...widgets, namespace: 'default', name: 'smp-cr', body: { spec: { size: 3 } } }, as(PatchStrategy.StrategicMergePatch)))
    expect(code).toBe(415)
  })

  it('creates with server-side apply and removes fields the manager stops applying', async () => {
    const applied = (await c.custom.patchNamespacedCustomObject(
      { ...widgets, namespace: 'default', name: 'ssa', body: { ...aWidget('ssa', { size: 2, mode: 'fast' }), metadata: { name: 'ssa', labels: { keep: 'me', drop: 'me' } } }, fieldManager: 'tester', force: true },
      as(PatchStrategy.ServerSideApply),
    )) as Obj
    expect(applied.spec).toEqual({ size: 2, mode: 'fast', color: 'red' })
    const reapplied = (await c.custom.patchNamespacedCustomObject(
      { ...widgets, namespace: 'default', name: 'ssa', body: { ...aWidget('ssa', { size: 4, mode: 'fast' }), metadata: { name: 'ssa', labels: { keep: 'me' } } }, fieldManager: 'tester', force: true },
      as(PatchStrategy.ServerSideApply),
    )) as Obj
    expect(reapplied.spec.size).toBe(4)
    expect(reapplied.metadata.labels).toEqual({ keep: 'me' })
  })

  it('validates the patched result against the CRD schema', async () => {
    await c.custom.createNamespacedCustomObject({ ...widgets, namespace: 'default', body: aWidget('v', { size: 2 }) })
    const { code, status } = await failure(c.custom.patchNamespacedCustomObject({ ...widgets, namespace: 'default', name: 'v', body: { spec: { color: 'pink' } } }, as(PatchStrategy.MergePatch)))
    expect(code).toBe(422)
    expect(status.details?.causes?.[0]?.field).toBe('spec.color')
  })

  it('computes but does not store a dryRun write', async () => {
    const out = (await c.custom.createNamespacedCustomObject({ ...widgets, namespace: 'default', body: aWidget('dry', { size: 2 }), dryRun: 'All' })) as Obj
    expect(out.spec.color).toBe('red')
    expect((await failure(c.custom.getNamespacedCustomObject({ ...widgets, namespace: 'default', name: 'dry' }))).code).toBe(404)
  })
})
