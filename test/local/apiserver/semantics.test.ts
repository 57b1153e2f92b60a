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

describe('deletion answers', () => {
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${c.server.url}${path}`, { method, headers: { 'Content-Type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) })
    return { code: res.status, body: (await res.json()) as Record<string, any> }
  }
  const widgetPath = (ns: string, name = '') => `/apis/example.dev/v1/namespaces/${ns}/widgets${name ? `/${name}` : ''}`

  it('answers 200 with the object, deletionTimestamp set and generation bumped, while a finalizer holds it', async () => {
    await call('POST', widgetPath('del-fin'), { ...aWidget('held', { size: 1 }, 'del-fin'), metadata: { name: 'held', finalizers: ['example.dev/hold'] } })
    const { code, body } = await call('DELETE', widgetPath('del-fin', 'held'))
    expect(code).toBe(200)
    expect(body.metadata).toMatchObject({ finalizers: ['example.dev/hold'], generation: 2, deletionGracePeriodSeconds: 0 })
    expect(body.metadata.deletionTimestamp).toBeTruthy()
  })

  it('answers 202 only for the deprecated orphanDependents=false', async () => {
    await call('POST', widgetPath('del-202'), { ...aWidget('held', { size: 1 }, 'del-202'), metadata: { name: 'held', finalizers: ['example.dev/hold'] } })
    expect((await call('DELETE', widgetPath('del-202', 'held'), { orphanDependents: false })).code).toBe(202)
  })

  it('answers a deleted custom resource with a Success Status', async () => {
    await call('POST', widgetPath('del-cr'), aWidget('gone', { size: 1 }, 'del-cr'))
    const { code, body } = await call('DELETE', widgetPath('del-cr', 'gone'))
    expect(code).toBe(200)
    expect(body).toMatchObject({ kind: 'Status', status: 'Success', details: { name: 'gone', group: 'example.dev', kind: 'widgets' } })
  })

  it('answers a Foreground delete with the owner marked by foregroundDeletion, then removes owner and dependents', async () => {
    const owner = await call('POST', widgetPath('del-fg'), aWidget('owner', { size: 1 }, 'del-fg'))
    const ref = { apiVersion: 'example.dev/v1', kind: 'Widget', name: 'owner', uid: owner.body.metadata.uid, blockOwnerDeletion: true }
    await call('POST', '/api/v1/namespaces/del-fg/configmaps', { metadata: { name: 'dep', ownerReferences: [ref] } })
    const { code, body } = await call('DELETE', widgetPath('del-fg', 'owner'), { propagationPolicy: 'Foreground' })
    expect(code).toBe(200)
    expect(body.metadata.finalizers).toEqual(['foregroundDeletion'])
    expect((await call('GET', widgetPath('del-fg', 'owner'))).code).toBe(404)
    expect((await call('GET', '/api/v1/namespaces/del-fg/configmaps/dep')).code).toBe(404)
  })

  it('keeps a Foreground owner until a dependent held by its own finalizer is gone', async () => {
    const owner = await call('POST', widgetPath('del-fg2'), aWidget('owner', { size: 1 }, 'del-fg2'))
    const ref = { apiVersion: 'example.dev/v1', kind: 'Widget', name: 'owner', uid: owner.body.metadata.uid, blockOwnerDeletion: true }
    await call('POST', '/api/v1/namespaces/del-fg2/configmaps', { metadata: { name: 'dep', ownerReferences: [ref], finalizers: ['example.dev/hold'] } })
    await call('DELETE', widgetPath('del-fg2', 'owner'), { propagationPolicy: 'Foreground' })
    expect((await call('GET', widgetPath('del-fg2', 'owner'))).body.metadata.finalizers).toEqual(['foregroundDeletion'])
    const dep = await call('GET', '/api/v1/namespaces/del-fg2/configmaps/dep')
    expect(dep.body.metadata.deletionTimestamp).toBeTruthy()
    await c.core.patchNamespacedConfigMap({ namespace: 'del-fg2', name: 'dep', body: { metadata: { finalizers: null } } }, merge)
    expect((await call('GET', widgetPath('del-fg2', 'owner'))).code).toBe(404)
  })

  it('words a failed delete precondition as the real server does', async () => {
    await call('POST', '/api/v1/namespaces/del-pre/configmaps', { metadata: { name: 'cm' } })
    const { code, body } = await call('DELETE', '/api/v1/namespaces/del-pre/configmaps/cm', { preconditions: { uid: 'nope' } })
    expect(code).toBe(409)
    expect(body.message).toMatch(/^Operation cannot be fulfilled on ConfigMap "cm": the UID in the precondition \(nope\) does not match the UID in record \(.+\)\. The object might have been deleted and then recreated$/)
    expect(body.details).toEqual({ name: 'cm', kind: 'ConfigMap' })
  })

  it('refuses an update of a custom resource without a resourceVersion', async () => {
    await call('POST', widgetPath('put-rv'), aWidget('w', { size: 1 }, 'put-rv'))
    const { code, body } = await call('PUT', widgetPath('put-rv', 'w'), aWidget('w', { size: 2 }, 'put-rv'))
    expect(code).toBe(422)
    expect(body.message).toBe('widgets.example.dev "w" is invalid: metadata.resourceVersion: Invalid value: 0: must be specified for an update')
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

  it('answers 204 at once, follow or not, for a pod no node runs and nothing wrote for, as kube-apiserver does', async () => {
    const ns = 'logs'
    await c.core.createNamespacedPod({ namespace: ns, body: { metadata: { name: 'unscheduled' }, spec: { containers: [{ name: 'c', image: 'i' }] } } })
    for (const query of ['', '?follow=true']) {
      const res = await fetch(`${c.server.url}/api/v1/namespaces/${ns}/pods/unscheduled/log${query}`, { signal: AbortSignal.timeout(5000) })
      expect(res.status).toBe(204)
      expect(await res.text()).toBe('')
    }
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
