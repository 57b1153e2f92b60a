// The run page and its live stream served over HTTP on 127.0.0.1, read through the real Kube
// adapter from the embedded API server: the page's resourceVersion starts the stream, a status
// write arrives as a patch, a page older than the server's watch history still follows the run.
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { ApiextensionsV1Api, CoreV1Api, CustomObjectsApi, loadYaml, type V1CustomResourceDefinition } from '@kubernetes/client-node'
import { afterEach, describe, expect, it } from 'vitest'
import { startApiServer, type ApiServer } from '../../../local/apiserver/index.js'
import type { Person } from '../../../shared/console/context.js'
import { runEventsResponse } from '../../../shared/console/run/live.js'
import { runPage } from '../../../shared/console/run/run-page.js'
import { KubeClient } from '../../../shared/kube/client.js'
import type { Workflow } from '../../../shared/schemas/workflow.js'
import { eventually } from '../../support/eventually.js'
import { configOf } from '../pages/support.js'
import { SseReader } from './sse-reader.js'

const NS = 'console-live'
const WORKFLOWS = { group: 'purko.io', version: 'v1alpha1', namespace: NS, plural: 'workflows' }
const ADMIN: Person = { mode: 'local', name: 'kinetic-local-admin', groups: ['system:masters'], credential: { kind: 'own' } }

const aWorkflow = (name: string) => ({
  apiVersion: 'purko.io/v1alpha1', kind: 'Workflow', metadata: { name },
  spec: { steps: [{ name: 'build', agentRef: { name: 'a1' } }, { name: 'ship', agentRef: { name: 'a1' }, dependsOn: ['build'] }] },
})

async function started(opts: { historySize?: number } = {}): Promise<{ api: ApiServer; kube: KubeClient; custom: CustomObjectsApi }> {
  const api = await startApiServer(opts)
  const ext = api.kubeConfigObject().makeApiClient(ApiextensionsV1Api)
  const dir = join(import.meta.dirname, '../../../crds')
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.purko.io.yaml'))) {
    await ext.createCustomResourceDefinition({ body: loadYaml<V1CustomResourceDefinition>(readFileSync(join(dir, file), 'utf8')) })
  }
  await api.kubeConfigObject().makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: NS } } })
  return { api, kube: new KubeClient(api.kubeConfigObject()), custom: api.kubeConfigObject().makeApiClient(CustomObjectsApi) }
}

/** A console-like server: the run page at /page, its stream at /live?rv=. */
async function serve(kube: KubeClient, backoffMs: (failures: number) => number = () => 20): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1')
    const request = { person: ADMIN, kube, now: new Date(), config: configOf({ auth: 'local' }), url, assetUrl: (n: string) => `/assets/x/${n}` }
    const abort = new AbortController()
    res.on('close', () => abort.abort())
    void (async () => {
      if (url.pathname === '/page') {
        const page = await runPage(request, NS, 'wf')
        res.writeHead(page.status, { 'content-type': 'text/html' }).end(page.body.html)
        return
      }
      const response = await runEventsResponse(request, NS, 'wf', url.searchParams.get('rv') ?? '', abort.signal, { backoffMs })
      res.writeHead(response.status, Object.fromEntries(response.headers))
      res.flushHeaders()
      for await (const chunk of response.body!) res.write(chunk)
      res.end()
    })()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server }
}

const cleanups: (() => Promise<void> | void)[] = []
afterEach(async () => { for (const c of cleanups.splice(0).reverse()) await c() })

async function open(url: string): Promise<SseReader> {
  const abort = new AbortController()
  cleanups.push(() => abort.abort())
  const response = await fetch(url, { signal: abort.signal })
  expect(response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8')
  return new SseReader(response)
}

describe('the live run page on the embedded API server', () => {
  it('streams from the version the page showed: a status write arrives as a patch, a delete as gone', async () => {
    const { api, kube, custom } = await started()
    cleanups.push(() => api.close())
    await custom.createNamespacedCustomObject({ ...WORKFLOWS, body: aWorkflow('wf') })
    const { url, server } = await serve(kube)
    cleanups.push(() => new Promise<void>((r) => server.close(() => r())))

    const page = await (await fetch(`${url}/page`)).text()
    const rv = /data-rv="(\d+)"/.exec(page)![1]!
    const reader = await open(`${url}/live?rv=${rv}`)
    await kube.patchWorkflowStatus(NS, 'wf', rv, { phase: 'Running', stepStatuses: [{ name: 'build', phase: 'Running', startTime: new Date().toISOString() }] } as Workflow['status'] & object)
    await eventually('the patch', () => reader.named('run').length > 0, 10_000, 20)
    const patch = reader.json<{ phase: string; steps: Record<string, string[]> }>('run')[0]!
    expect(patch.phase).toBe('Running')
    expect(patch.steps.build!.slice(0, 2)).toEqual(['Running', 'Running'])

    await custom.deleteNamespacedCustomObject({ ...WORKFLOWS, name: 'wf' })
    await eventually('gone', () => reader.named('gone').length === 1, 10_000, 20)
    await eventually('the end of the stream', () => reader.ended, 10_000, 20)
  })

  it('follows a page whose version the server no longer keeps, without a 410 Gone over and over', async () => {
    const { api, kube, custom } = await started({ historySize: 2 })
    cleanups.push(() => api.close())
    const created = await custom.createNamespacedCustomObject({ ...WORKFLOWS, body: aWorkflow('wf') }) as Workflow
    // Enough writes after it that the server no longer keeps the version the page showed.
    for (let i = 0; i < 4; i++) await custom.createNamespacedCustomObject({ ...WORKFLOWS, body: aWorkflow(`other-${i}`) })
    // A second failure in a row would wait a minute: the stream must not fail again after the re-read.
    const { url, server } = await serve(kube, (failures) => (failures > 1 ? 60_000 : 20))
    cleanups.push(() => new Promise<void>((r) => server.close(() => r())))
    const reader = await open(`${url}/live?rv=${created.metadata.resourceVersion}`)
    await new Promise((r) => setTimeout(r, 300))
    const wf = await kube.getWorkflow(NS, 'wf')
    await kube.patchWorkflowStatus(NS, 'wf', wf!.metadata.resourceVersion!, { phase: 'Running', stepStatuses: [{ name: 'build', phase: 'Failed', error: 'exit 1' }] } as Workflow['status'] & object)
    await eventually('the change on the new watch', () => reader.named('run').length > 0, 10_000, 20)
    expect(reader.json<{ steps: Record<string, string[]> }>('run').at(-1)!.steps.build![0]).toBe('Failed')
    expect(reader.named('error')).toEqual([])
  })
})
