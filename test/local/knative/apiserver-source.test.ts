import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { parse } from 'yaml'
import { startApiServer, type ApiServer } from '../../../local/apiserver/index.js'
import { startApiServerSource, type RunningSource } from '../../../local/knative/apiserver-source.js'
import type { KEvent } from '../../../local/knative/cloud-event.js'
import { KubeHttp } from '../../../local/knative/kube-http.js'
import { loadKnativeManifests, type ApiServerSourceSpec, type Manifest } from '../../../local/knative/manifests.js'
import { silentLogger } from '../../../shared/log.js'
import { ROOT } from '../../knative/manifests.js'

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

  it('sends each watch\'s events one at a time, waiting for the sink, while the watches of one source send side by side', async () => {
    // The jobs source's shards: two watches of one kind, told apart by a label.
    const shard = (value: string) => ({ apiVersion: 'batch/v1', kind: 'Job', selector: { matchLabels: { 'kinetic.dev/shard': value } } })
    const source = aSource({ resources: [shard('0'), shard('1')] })
    let inFlight = 0
    let most = 0
    const released: Array<() => void> = []
    const sent: string[] = []
    const s = startApiServerSource(source, kube, async (e) => {
      sent.push(String(e.extensions.name))
      inFlight++
      most = Math.max(most, inFlight)
      await new Promise<void>((r) => released.push(r))
      inFlight--
      return 202
    }, silentLogger)
    running.push(s)
    await s.ready
    for (const [name, value] of [['a1', '0'], ['a2', '0'], ['b1', '1']] as const) {
      await kube.request('POST', '/apis/batch/v1/namespaces/ai-agents/jobs', aJob(name, { 'kinetic.dev/shard': value }))
    }
    await until('one send per watch', () => (sent.length === 2 ? true : undefined))
    // a2 waits behind a1 on its watch; b1's watch did not wait for either.
    await new Promise((r) => setTimeout(r, 100))
    expect([...sent].sort()).toEqual(['a1', 'b1'])
    while (sent.length < 3 || inFlight > 0) {
      released.shift()?.()
      await new Promise((r) => setTimeout(r, 10))
    }
    expect(sent).toContain('a2')
    expect(most).toBe(2)
  })

  it('sends an ObjectReference in Reference mode', async () => {
    const events = await start(aSource({ mode: 'Reference', resources: [{ apiVersion: 'v1', kind: 'ConfigMap' }] }))
    await kube.request('POST', '/api/v1/namespaces/ai-agents/configmaps', { metadata: { name: 'r' } })
    const ev = await until('the ref event', () => events[0])
    expect(ev.type).toBe('dev.knative.apiserver.ref.add')
    expect(ev.data).toEqual({ kind: 'ConfigMap', namespace: 'ai-agents', name: 'r', apiVersion: 'v1' })
  })

  describe('the one ApiServerSource of knative/, as shipped', () => {
    const shipped = () => {
      const [source, ...others] = loadKnativeManifests(join(ROOT, 'knative'), 'kinetic-system').apiServerSources
      expect(others).toEqual([])
      return source!
    }
    const installCrd = (plural: string) =>
      kube.request('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', parse(readFileSync(join(ROOT, 'crds', `${plural}.purko.io.yaml`), 'utf8')))
    const installCrds = async () => {
      for (const plural of ['workflows', 'agents', 'llmproviders', 'memoryproviders', 'mcpservers', 'workflowrecipes', 'workflowrecipepolicies']) await installCrd(plural)
    }
    const labels = { 'purko.io/recipe': 'shop', 'purko.io/recipe-namespace': 'team-a' }
    const create = (collection: string, object: Record<string, unknown>) => kube.request('POST', collection, object)

    it('watches every kind a recipe makes in every namespace, sends only objects labelled purko.io/recipe (or of kinds it watches whole), and a removed label as a delete', async () => {
      await installCrds()
      for (const name of ['sandbox-recipes', 'mcp-server', 'team-a']) await create('/api/v1/namespaces', { metadata: { name } })
      // Twenty-one watches on one abort signal must not look like a listener leak to Node.
      const warnings: string[] = []
      const onWarning = (w: Error) => warnings.push(`${w.name}: ${w.message}`)
      process.on('warning', onWarning)
      const events = await start(shipped())
      const meta = (name: string, namespace: string, withLabels = true) => ({ name, namespace, ...(withLabels ? { labels } : {}) })
      const pod = { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'web', image: 'nginx' }] } }
      await create('/apis/apps/v1/namespaces/sandbox-recipes/deployments', { metadata: meta('web', 'sandbox-recipes'), spec: { selector: { matchLabels: { app: 'web' } }, template: pod } })
      await create('/apis/apps/v1/namespaces/sandbox-recipes/deployments', { metadata: meta('unrelated', 'sandbox-recipes', false), spec: { selector: { matchLabels: { app: 'web' } }, template: pod } })
      await create('/apis/apps/v1/namespaces/sandbox-recipes/statefulsets', { metadata: meta('db', 'sandbox-recipes'), spec: { serviceName: 'db', selector: { matchLabels: { app: 'web' } }, template: pod } })
      await create('/api/v1/namespaces/mcp-server/services', { metadata: meta('tools', 'mcp-server'), spec: { ports: [{ port: 80 }] } })
      await create('/apis/batch/v1/namespaces/sandbox-recipes/cronjobs', {
        metadata: meta('nightly', 'sandbox-recipes'),
        spec: { schedule: '0 3 * * *', jobTemplate: { spec: { template: { spec: { restartPolicy: 'Never', containers: [{ name: 'c', image: 'x' }] } } } } },
      })
      await create('/apis/purko.io/v1alpha1/namespaces/mcp-server/mcpservers', { apiVersion: 'purko.io/v1alpha1', kind: 'MCPServer', metadata: meta('tools', 'mcp-server'), spec: { image: 'tools:1' } })
      await create('/apis/purko.io/v1alpha1/namespaces/team-a/workflows', {
        apiVersion: 'purko.io/v1alpha1', kind: 'Workflow', metadata: meta('shop-steps', 'team-a'), spec: { steps: [{ name: 'a', agentRef: { name: 'x' } }] },
      })
      await create('/apis/apps/v1/namespaces/sandbox-recipes/daemonsets', { metadata: meta('agent', 'sandbox-recipes'), spec: { selector: { matchLabels: { app: 'web' } }, template: pod } })
      await create('/apis/batch/v1/namespaces/sandbox-recipes/jobs', {
        metadata: meta('smoke', 'sandbox-recipes'), spec: { template: { spec: { restartPolicy: 'Never', containers: [{ name: 'c', image: 'x' }] } } },
      })
      await until('eight add events', () => (events.length >= 8 ? true : undefined))
      expect(events.map((e) => `${e.type.split('.').pop()} ${e.extensions.kind} ${e.extensions.namespace}/${e.extensions.name}`).sort()).toEqual([
        'add CronJob sandbox-recipes/nightly', 'add DaemonSet sandbox-recipes/agent', 'add Deployment sandbox-recipes/web', 'add Job sandbox-recipes/smoke',
        'add MCPServer mcp-server/tools', 'add Service mcp-server/tools', 'add StatefulSet sandbox-recipes/db', 'add Workflow team-a/shop-steps',
      ])
      expect(events.every((e) => e.extensions.kineticsource === 'resources')).toBe(true)
      expect((events.find((e) => e.extensions.kind === 'Deployment')?.data as { metadata: { labels: unknown } }).metadata.labels).toEqual(labels)

      // Someone takes the label off: the filtered watch reports the object as gone.
      events.length = 0
      await kube.mergePatch('/apis/apps/v1/namespaces/sandbox-recipes/deployments/web', { metadata: { labels: { 'purko.io/recipe': null } } })
      const gone = await until('the delete event', () => events[0])
      expect([gone.type, gone.extensions.name]).toEqual(['dev.knative.apiserver.resource.delete', 'web'])
      process.off('warning', onWarning)
      expect(warnings).toEqual([])
    })

    it('watches the cluster-scoped WorkflowRecipePolicy cluster-wide', async () => {
      await installCrds()
      const events = await start(shipped())
      await create('/apis/purko.io/v1alpha1/workflowrecipepolicies', { apiVersion: 'purko.io/v1alpha1', kind: 'WorkflowRecipePolicy', metadata: { name: 'baseline' }, spec: { mode: 'Audit' } })
      const ev = await until('the add event', () => events[0])
      expect(ev).toMatchObject({
        type: 'dev.knative.apiserver.resource.add',
        subject: '/apis/purko.io/v1alpha1/namespaces//workflowrecipepolicies/baseline',
        extensions: { kind: 'WorkflowRecipePolicy', name: 'baseline', namespace: '', kineticsource: 'resources' },
      })
    })
  })
})
