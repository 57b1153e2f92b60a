import { PatchStrategy, setHeaderOptions, type V1Job } from '@kubernetes/client-node'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { aWidget, failure, startCluster, widgetCrd, widgets, type TestCluster } from './fixtures.js'

let c: TestCluster
beforeAll(async () => {
  c = await startCluster()
  await c.ext.createCustomResourceDefinition({ body: widgetCrd() })
})
afterAll(() => c.server.close())

const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch)
type Obj = { metadata: { generation?: number; resourceVersion?: string; deletionTimestamp?: string; finalizers?: string[]; labels?: Record<string, string> }; spec?: Record<string, unknown>; status?: Record<string, unknown> }

const aJob = (name: string): V1Job => ({
  metadata: { name },
  spec: { template: { spec: { restartPolicy: 'Never', containers: [{ name: 'step-executor', image: 'executor:1' }] } } },
})

describe('generation', () => {
  it('bumps metadata.generation on spec changes only', async () => {
    const ns = 'gen'
    await c.custom.createNamespacedCustomObject({ ...widgets, namespace: ns, body: aWidget('w', { size: 2 }, ns) })
    const labelled = (await c.custom.patchNamespacedCustomObject({ ...widgets, namespace: ns, name: 'w', body: { metadata: { labels: { a: 'b' } } } }, merge)) as Obj
    expect(labelled.metadata.generation).toBe(1)
    const status = (await c.custom.patchNamespacedCustomObjectStatus({ ...widgets, namespace: ns, name: 'w', body: { status: { phase: 'Running' } } }, merge)) as Obj
    expect(status.metadata.generation).toBe(1)
    const resized = (await c.custom.patchNamespacedCustomObject({ ...widgets, namespace: ns, name: 'w', body: { spec: { size: 3 } } }, merge)) as Obj
    expect(resized.metadata.generation).toBe(2)
  })
})

describe('status subresource', () => {
  it('ignores status in writes to the main resource and everything but status in writes to /status', async () => {
    const ns = 'status'
    const created = (await c.custom.createNamespacedCustomObject({ ...widgets, namespace: ns, body: { ...aWidget('w', { size: 2 }, ns), status: { phase: 'Forged' } } })) as Obj
    expect(created.status).toBeUndefined()
    const main = (await c.custom.patchNamespacedCustomObject({ ...widgets, namespace: ns, name: 'w', body: { status: { phase: 'Sneaky' } } }, merge)) as Obj
    expect(main.status).toBeUndefined()
    const viaStatus = (await c.custom.patchNamespacedCustomObjectStatus(
      { ...widgets, namespace: ns, name: 'w', body: { spec: { size: 9 }, metadata: { labels: { x: 'y' } }, status: { phase: 'Running' } } },
      merge,
    )) as Obj
    expect(viaStatus.status).toEqual({ phase: 'Running' })
    expect(viaStatus.spec?.size).toBe(2)
    expect(viaStatus.metadata.labels).toBeUndefined()
  })

  it('guards a status write with the resourceVersion it carries', async () => {
    const ns = 'status'
    const w = (await c.custom.createNamespacedCustomObject({ ...widgets, namespace: ns, body: aWidget('guarded', { size: 2 }, ns) })) as Obj
    await c.custom.patchNamespacedCustomObject({ ...widgets, namespace: ns, name: 'guarded', body: { spec: { size: 4 } } }, merge)
    const { code, status } = await failure(c.custom.patchNamespacedCustomObjectStatus(
      { ...widgets, namespace: ns, name: 'guarded', body: { metadata: { resourceVersion: w.metadata.resourceVersion }, status: { phase: 'Done' } } },
      merge,
    ))
    expect(code).toBe(409)
    expect(status.message).toContain('widgets.example.dev "guarded": the object has been modified')
  })
})

describe('finalizers', () => {
  it('keeps a deleted object with deletionTimestamp until the last finalizer is removed', async () => {
    const ns = 'fin'
    await c.custom.createNamespacedCustomObject({ ...widgets, namespace: ns, body: { ...aWidget('f', { size: 1 }, ns), metadata: { name: 'f', finalizers: ['example.dev/a', 'example.dev/b'] } } })
    await c.custom.deleteNamespacedCustomObject({ ...widgets, namespace: ns, name: 'f' })
    const terminating = (await c.custom.getNamespacedCustomObject({ ...widgets, namespace: ns, name: 'f' })) as Obj
    expect(terminating.metadata.deletionTimestamp).toBeTruthy()

    const { code } = await failure(c.custom.patchNamespacedCustomObject({ ...widgets, namespace: ns, name: 'f', body: { metadata: { finalizers: ['example.dev/a', 'example.dev/b', 'example.dev/c'] } } }, merge))
    expect(code).toBe(422)

    await c.custom.patchNamespacedCustomObject({ ...widgets, namespace: ns, name: 'f', body: { metadata: { finalizers: ['example.dev/b'] } } }, merge)
    expect(await c.custom.getNamespacedCustomObject({ ...widgets, namespace: ns, name: 'f' })).toBeTruthy()
    await c.custom.patchNamespacedCustomObject({ ...widgets, namespace: ns, name: 'f', body: { metadata: { finalizers: null } } }, merge)
    expect((await failure(c.custom.getNamespacedCustomObject({ ...widgets, namespace: ns, name: 'f' }))).code).toBe(404)
  })
})

describe('ownerReference cascade', () => {
  it('deletes dependents, recursively, when their owner is deleted', async () => {
    const ns = 'cascade'
    const job = await c.batch.createNamespacedJob({ namespace: ns, body: aJob('owner') })
    const owner = { apiVersion: 'batch/v1', kind: 'Job', name: 'owner', uid: job.metadata?.uid as string, controller: true }
    const pod = await c.core.createNamespacedPod({ namespace: ns, body: { metadata: { name: 'owner-pod', ownerReferences: [owner] }, spec: { containers: [{ name: 'c', image: 'i' }] } } })
    const podOwner = { apiVersion: 'v1', kind: 'Pod', name: 'owner-pod', uid: pod.metadata?.uid as string }
    await c.core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'grandchild', ownerReferences: [podOwner] } } })
    await c.core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'unrelated' } } })

    await c.batch.deleteNamespacedJob({ namespace: ns, name: 'owner', propagationPolicy: 'Foreground' })

    expect((await c.core.listNamespacedPod({ namespace: ns })).items).toEqual([])
    expect((await c.core.listNamespacedConfigMap({ namespace: ns })).items.map((i) => i.metadata?.name)).toEqual(['unrelated'])
  })

  it('keeps dependents and drops their ownerReference with propagationPolicy Orphan', async () => {
    const ns = 'orphan'
    const job = await c.batch.createNamespacedJob({ namespace: ns, body: aJob('owner') })
    const owner = { apiVersion: 'batch/v1', kind: 'Job', name: 'owner', uid: job.metadata?.uid as string }
    await c.core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'kept', ownerReferences: [owner] } } })
    await c.batch.deleteNamespacedJob({ namespace: ns, name: 'owner', propagationPolicy: 'Orphan' })
    const kept = await c.core.readNamespacedConfigMap({ namespace: ns, name: 'kept' })
    expect(kept.metadata?.ownerReferences).toBeUndefined()
  })

  it('refuses to delete the default namespace, as the real server does', async () => {
    const { code, status } = await failure(c.core.deleteNamespace({ name: 'default' }))
    expect(code).toBe(403)
    expect(status.message).toBe('namespaces "default" is forbidden: this namespace may not be deleted')
  })

  it('empties and removes a deleted namespace', async () => {
    await c.core.createNamespacedConfigMap({ namespace: 'doomed', body: { metadata: { name: 'inside' } } })
    await c.core.deleteNamespace({ name: 'doomed' })
    expect((await failure(c.core.readNamespace({ name: 'doomed' }))).code).toBe(404)
    expect((await c.core.listNamespacedConfigMap({ namespace: 'doomed' })).items).toEqual([])
  })
})

describe('Jobs', () => {
  it('gets the selector and pod-template labels the Job API adds', async () => {
    const job = await c.batch.createNamespacedJob({ namespace: 'jobs', body: aJob('labelled') })
    const uid = job.metadata?.uid as string
    expect(job.spec?.selector?.matchLabels).toEqual({ 'batch.kubernetes.io/controller-uid': uid })
    expect(job.spec?.template.metadata?.labels).toMatchObject({ 'batch.kubernetes.io/job-name': 'labelled', 'job-name': 'labelled' })
    expect(job.spec?.backoffLimit).toBe(6)
  })
})

describe('pods/log', () => {
  it('serves what the job runner appended, with tailLines', async () => {
    const ns = 'logs'
    await c.core.createNamespacedPod({ namespace: ns, body: { metadata: { name: 'step' }, spec: { containers: [{ name: 'step-executor', image: 'i' }] } } })
    c.server.store.appendPodLog(ns, 'step', 'starting\n')
    c.server.store.appendPodLog(ns, 'step', 'working\nOUTPUT:{"ok":true}\n')
    expect(await c.core.readNamespacedPodLog({ namespace: ns, name: 'step' })).toBe('starting\nworking\nOUTPUT:{"ok":true}\n')
    expect(await c.core.readNamespacedPodLog({ namespace: ns, name: 'step', tailLines: 1 })).toBe('OUTPUT:{"ok":true}\n')
    expect((await failure(c.core.readNamespacedPodLog({ namespace: ns, name: 'nope' }))).code).toBe(404)
  })
})

describe('size limit', () => {
  it('rejects objects larger than 1.5 MiB like etcd does', async () => {
    const big = 'x'.repeat(1.6 * 1024 * 1024)
    const { code, status } = await failure(c.core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'big' }, data: { big } } }))
    expect(code).toBe(413)
    expect(status.message).toBe('etcdserver: request is too large')
    expect((await failure(c.core.readNamespacedConfigMap({ namespace: 'default', name: 'big' }))).code).toBe(404)
  })

  it('rejects an update that grows an object past the limit', async () => {
    await c.core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'grows' }, data: { a: 'small' } } })
    const half = 'y'.repeat(800 * 1024)
    await c.core.patchNamespacedConfigMap({ namespace: 'default', name: 'grows', body: { data: { b: half } } }, merge)
    const { code } = await failure(c.core.patchNamespacedConfigMap({ namespace: 'default', name: 'grows', body: { data: { c: half } } }, merge))
    expect(code).toBe(413)
  })
})
