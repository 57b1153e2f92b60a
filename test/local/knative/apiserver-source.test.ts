import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { startApiServer, type ApiServer } from '../../../local/apiserver/index.js'
import { startApiServerSource, type RunningSource } from '../../../local/knative/apiserver-source.js'
import type { KEvent } from '../../../local/knative/cloud-event.js'
import { KubeHttp } from '../../../local/knative/kube-http.js'
import type { ApiServerSourceSpec, Manifest } from '../../../local/knative/manifests.js'
import { silentLogger } from '../../../shared/log.js'

let api: ApiServer
let kube: KubeHttp
let running: RunningSource[] = []

beforeEach(async () => {
  api = await startApiServer()
  kube = new KubeHttp(api.kubeConfigObject())
})
afterEach(async () => {
  for (const s of running) await s.stop()
  running = []
  await api.close()
})

function aSource(spec: Partial<ApiServerSourceSpec>, namespace = 'ai-agents'): Manifest<ApiServerSourceSpec> {
  return {
    apiVersion: 'sources.knative.dev/v1', kind: 'ApiServerSource', file: 's.yaml', raw: {},
    metadata: { name: 'src', namespace },
    spec: { mode: 'Resource', resources: [], ceOverrides: { extensions: { kineticsource: 'test' } }, ...spec },
  }
}

async function start(source: Manifest<ApiServerSourceSpec>): Promise<KEvent[]> {
  const events: KEvent[] = []
  const s = startApiServerSource(source, kube, async (e) => { events.push(e); return 202 }, silentLogger)
  running.push(s)
  await s.ready
  return events
}

async function until<T>(what: string, get: () => T | undefined): Promise<T> {
  for (let i = 0; i < 1500; i++) {
    const v = get()
    if (v !== undefined) return v
    await new Promise((r) => setTimeout(r, 10))
  }
  throw new Error(`Timed out waiting for ${what}`)
}

const aJob = (name: string, labels: Record<string, string> = {}) => ({
  apiVersion: 'batch/v1', kind: 'Job', metadata: { name, namespace: 'ai-agents', labels },
  spec: { template: { spec: { restartPolicy: 'Never', containers: [{ name: 'step-executor', image: 'x' }] } } },
})

describe('ApiServerSource emulation', () => {
  it('emits Knative-shaped add events, and none for objects that existed at start', async () => {
    await kube.request('POST', '/api/v1/namespaces/ai-agents/configmaps', { metadata: { name: 'before' }, data: {} })
    const events = await start(aSource({ resources: [{ apiVersion: 'v1', kind: 'ConfigMap' }] }))

    await kube.request('POST', '/api/v1/namespaces/ai-agents/configmaps', { metadata: { name: 'after' }, data: { a: '1' } })
    const ev = await until('the add event', () => events[0])

    expect(events.map((e) => e.extensions.name)).toEqual(['after'])
    expect(ev).toMatchObject({
      specversion: '1.0',
      type: 'dev.knative.apiserver.resource.add',
      source: api.url,
      subject: '/apis/v1/namespaces/ai-agents/configmaps/after',
      datacontenttype: 'application/json',
      extensions: { kind: 'ConfigMap', apiversion: 'v1', name: 'after', namespace: 'ai-agents', kineticsource: 'test' },
    })
    expect(ev.id).toMatch(/^[0-9a-f-]{36}$/)
    expect((ev.data as { data: unknown }).data).toEqual({ a: '1' })
  })

  it('turns every change, status writes included, into an update and a deletion into a delete', async () => {
    const events = await start(aSource({ resources: [{ apiVersion: 'batch/v1', kind: 'Job' }] }))
    await kube.request('POST', '/apis/batch/v1/namespaces/ai-agents/jobs', aJob('j1'))
    await kube.mergePatch('/apis/batch/v1/namespaces/ai-agents/jobs/j1/status', { status: { active: 1 } })
    await kube.request('DELETE', '/apis/batch/v1/namespaces/ai-agents/jobs/j1')
    await until('three events', () => (events.length >= 3 ? true : undefined))

    expect(events.map((e) => e.type)).toEqual([
      'dev.knative.apiserver.resource.add',
      'dev.knative.apiserver.resource.update',
      'dev.knative.apiserver.resource.delete',
    ])
    expect(events[1]?.subject).toBe('/apis/batch/v1/namespaces/ai-agents/jobs/j1')
    expect(events[1]?.extensions.apiversion).toBe('batch/v1')
    expect((events[1]?.data as { status: { active: number } }).status.active).toBe(1)
    expect(new Set(events.map((e) => e.id)).size).toBe(3)
  })

  it('applies the resource label selector on the server', async () => {
    const events = await start(aSource({
      resources: [{ apiVersion: 'batch/v1', kind: 'Job', selector: { matchExpressions: [{ key: 'purko.io/workflow', operator: 'Exists' }] } }],
    }))
    await kube.request('POST', '/apis/batch/v1/namespaces/ai-agents/jobs', aJob('unrelated'))
    await kube.request('POST', '/apis/batch/v1/namespaces/ai-agents/jobs', aJob('step', { 'purko.io/workflow': 'wf' }))
    await until('the step Job event', () => events.find((e) => e.extensions.name === 'step'))
    expect(events.map((e) => e.extensions.name)).toEqual(['step'])
  })

  it('watches only its own namespace without a namespaceSelector, and all with {}', async () => {
    const own = await start(aSource({ resources: [{ apiVersion: 'v1', kind: 'ConfigMap' }] }, 'default'))
    const all = await start(aSource({ resources: [{ apiVersion: 'v1', kind: 'ConfigMap' }], namespaceSelector: {} }, 'default'))
    await kube.request('POST', '/api/v1/namespaces/ai-agents/configmaps', { metadata: { name: 'elsewhere' } })
    await kube.request('POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: 'here' } })
    await until('both events on the cluster-wide source', () => (all.length >= 2 ? true : undefined))
    await until('the own-namespace event', () => own[0])
    expect(own.map((e) => e.extensions.name)).toEqual(['here'])
    expect(all.map((e) => e.extensions.name).sort()).toEqual(['elsewhere', 'here'])
  })

  it('sends an ObjectReference in Reference mode', async () => {
    const events = await start(aSource({ mode: 'Reference', resources: [{ apiVersion: 'v1', kind: 'ConfigMap' }] }))
    await kube.request('POST', '/api/v1/namespaces/ai-agents/configmaps', { metadata: { name: 'r' } })
    const ev = await until('the ref event', () => events[0])
    expect(ev.type).toBe('dev.knative.apiserver.ref.add')
    expect(ev.data).toEqual({ kind: 'ConfigMap', namespace: 'ai-agents', name: 'r', apiVersion: 'v1' })
  })
})
