import { Watch, type V1ConfigMap } from '@kubernetes/client-node'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { KubeObject, WatchEvent } from '../../../local/apiserver/index.js'
import { collect, startCluster, widgetCrd, type TestCluster } from './fixtures.js'

interface Seen {
  type: string
  name: string | undefined
  object: Record<string, unknown>
}

let c: TestCluster
beforeAll(async () => {
  c = await startCluster({ historySize: 20 })
})
afterAll(() => c.server.close())

const cm = (name: string, labels: Record<string, string> = {}): V1ConfigMap => ({ metadata: { name, labels }, data: { v: '1' } })

async function watchUntil(path: string, query: Record<string, string | number | boolean | undefined>, enough: (seen: Seen[]) => boolean): Promise<Seen[]> {
  const seen: Seen[] = []
  const sink = collect(seen, enough)
  const controller = await new Watch(c.kc).watch(
    path,
    query,
    (type, object: Record<string, unknown>) => sink.push({ type, name: (object.metadata as { name?: string } | undefined)?.name, object }),
    () => {},
  )
  try {
    return await sink.settled
  } finally {
    controller.abort()
  }
}

describe('watch', () => {
  it('resumes after a resourceVersion and replays exactly what happened since', async () => {
    const ns = 'watch-resume'
    const a = await c.core.createNamespacedConfigMap({ namespace: ns, body: cm('a') })
    await c.core.createNamespacedConfigMap({ namespace: ns, body: cm('b') })
    await c.core.replaceNamespacedConfigMap({ namespace: ns, name: 'a', body: { ...a, data: { v: '2' } } })
    await c.core.deleteNamespacedConfigMap({ namespace: ns, name: 'b' })
    const seen = await watchUntil(`/api/v1/namespaces/${ns}/configmaps`, { resourceVersion: a.metadata?.resourceVersion }, (s) => s.length >= 3)
    expect(seen.map((e) => `${e.type} ${e.name}`)).toEqual(['ADDED b', 'MODIFIED a', 'DELETED b'])
  })

  it('starts with ADDED events for existing objects and then streams changes', async () => {
    const ns = 'watch-live'
    await c.core.createNamespacedConfigMap({ namespace: ns, body: cm('first') })
    const seen: Seen[] = []
    const sink = collect(seen, (s) => s.length >= 2)
    const controller = await new Watch(c.kc).watch(`/api/v1/namespaces/${ns}/configmaps`, {}, (type, object: V1ConfigMap) => {
      sink.push({ type, name: object.metadata?.name, object: object as Record<string, unknown> })
      if (object.metadata?.name === 'first') void c.core.createNamespacedConfigMap({ namespace: ns, body: cm('second') })
    }, () => {})
    const events = await sink.settled
    controller.abort()
    expect(events.map((e) => `${e.type} ${e.name}`)).toEqual(['ADDED first', 'ADDED second'])
  })

  it('answers a resourceVersion older than the retained history with an ERROR event carrying 410 Expired', async () => {
    const ns = 'watch-gone'
    const first = await c.core.createNamespacedConfigMap({ namespace: ns, body: cm('old') })
    for (let i = 0; i < 25; i++) await c.core.createNamespacedConfigMap({ namespace: ns, body: cm(`filler-${i}`) })
    const seen = await watchUntil(`/api/v1/namespaces/${ns}/configmaps`, { resourceVersion: first.metadata?.resourceVersion }, (s) => s.length >= 1)
    expect(seen[0]?.type).toBe('ERROR')
    expect(seen[0]?.object).toMatchObject({ kind: 'Status', code: 410, reason: 'Expired' })
    expect(String(seen[0]?.object.message)).toMatch(/^too old resource version: \d+ \(\d+\)$/)
  })

  it('turns label-selector transitions into ADDED and DELETED events', async () => {
    const ns = 'watch-labels'
    const start = await c.core.listNamespacedConfigMap({ namespace: ns })
    const x = await c.core.createNamespacedConfigMap({ namespace: ns, body: cm('x', { app: 'no' }) })
    const y = await c.core.replaceNamespacedConfigMap({ namespace: ns, name: 'x', body: { ...x, metadata: { ...x.metadata, labels: { app: 'yes' } } } })
    const z = await c.core.replaceNamespacedConfigMap({ namespace: ns, name: 'x', body: { ...y, data: { v: '9' } } })
    const last = await c.core.replaceNamespacedConfigMap({ namespace: ns, name: 'x', body: { ...z, metadata: { ...z.metadata, labels: { app: 'no' } } } })
    const seen = await watchUntil(
      `/api/v1/namespaces/${ns}/configmaps`,
      { resourceVersion: start.metadata?.resourceVersion, labelSelector: 'app=yes' },
      (s) => s.length >= 3,
    )
    expect(seen.map((e) => e.type)).toEqual(['ADDED', 'MODIFIED', 'DELETED'])
    // As the real watch cache does: the object as it last matched, at the resourceVersion of the change.
    expect((seen[2]?.object.metadata as { labels?: unknown; resourceVersion?: string })).toMatchObject({ labels: { app: 'yes' }, resourceVersion: last.metadata?.resourceVersion })
  })

  it('sends a BOOKMARK marking the end of the initial events when asked', async () => {
    const ns = 'watch-bookmark'
    await c.core.createNamespacedConfigMap({ namespace: ns, body: cm('one') })
    const seen = await watchUntil(
      `/api/v1/namespaces/${ns}/configmaps`,
      { sendInitialEvents: true, allowWatchBookmarks: true, resourceVersionMatch: 'NotOlderThan' },
      (s) => s.some((e) => e.type === 'BOOKMARK'),
    )
    expect(seen.map((e) => e.type)).toEqual(['ADDED', 'BOOKMARK'])
    expect(seen[1]?.object).toMatchObject({ kind: 'ConfigMap', metadata: { annotations: { 'k8s.io/initial-events-end': 'true' } } })
  })

  it('ends the stream after timeoutSeconds', async () => {
    const ended = await new Promise<unknown>((resolve) => {
      void new Watch(c.kc).watch('/api/v1/namespaces/watch-timeout/configmaps', { timeoutSeconds: 1 }, () => {}, resolve)
    })
    expect(ended).toBeNull()
  })

  it('delivers events to in-process watchers in order, as copies', async () => {
    const ns = 'watch-store'
    const events: WatchEvent[] = []
    const sink = collect(events, (e) => e.length >= 3)
    const handle = c.server.store.watch({ apiVersion: 'v1', kind: 'ConfigMap' }, { namespace: ns }, (e) => {
      ;(e.object as KubeObject).metadata.name = 'mutated by the watcher'
      sink.push(e)
    })
    const ref = { apiVersion: 'v1', kind: 'ConfigMap' }
    c.server.store.create({ ...ref, metadata: { name: 'in-proc', namespace: ns }, data: { v: '1' } })
    c.server.store.patch(ref, ns, 'in-proc', { data: { v: '2' } }, { type: 'merge' })
    c.server.store.delete(ref, ns, 'in-proc')
    await sink.settled
    handle.stop()
    expect(events.map((e) => e.type)).toEqual(['ADDED', 'MODIFIED', 'DELETED'])
    expect(c.server.store.list(ref, { namespace: ns }).items).toEqual([])
    expect(events[1]?.object).toMatchObject({ data: { v: '2' } })
  })

  it('answers 410 for a custom resource watched from before its CRD was served, as the real watch cache does', async () => {
    const before = (await c.core.listNamespacedConfigMap({ namespace: 'default' })).metadata?.resourceVersion as string
    await c.ext.createCustomResourceDefinition({ body: widgetCrd() })
    const seen = await watchUntil('/apis/example.dev/v1/namespaces/default/widgets', { resourceVersion: before }, (s) => s.length >= 1)
    expect(seen[0]?.type).toBe('ERROR')
    expect(seen[0]?.object).toMatchObject({ code: 410, reason: 'Expired', message: `too old resource version: ${before} (${Number(before) + 1})` })
  })

  it('throws 410 synchronously for an in-process watch from an expired resourceVersion', () => {
    expect(() => c.server.store.watch({ apiVersion: 'v1', kind: 'ConfigMap' }, { resourceVersion: '1' }, () => {})).toThrow(
      expect.objectContaining({ code: 410, reason: 'Expired' }),
    )
  })
})
