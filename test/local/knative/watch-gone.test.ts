import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { KubeConfig } from '@kubernetes/client-node'
import { afterEach, expect, it } from 'vitest'
import { startApiServerSource } from '../../../local/knative/apiserver-source.js'
import type { KEvent } from '../../../local/knative/cloud-event.js'
import { KubeHttp } from '../../../local/knative/kube-http.js'
import { silentLogger } from '../../../shared/log.js'

const closers: Array<() => Promise<void>> = []
afterEach(async () => { while (closers.length > 0) await closers.pop()?.() })

const cm = (name: string, rv: string) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'ns', resourceVersion: rv } })

/**
 * A scripted API server: the first watch expires at once (410 Gone, as after compaction);
 * the second list shows an object that changed in the gap, and the second watch delivers a
 * later change.
 */
async function scriptedApiServer() {
  const requests: string[] = []
  let lists = 0
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x')
    requests.push(`${url.pathname}?${url.searchParams.toString()}`)
    res.setHeader('content-type', 'application/json')
    if (url.searchParams.get('watch') !== '1') {
      lists += 1
      res.end(JSON.stringify({ kind: 'ConfigMapList', metadata: { resourceVersion: lists === 1 ? '5' : '9' }, items: lists === 1 ? [] : [cm('changed-in-gap', '8')] }))
      return
    }
    if (url.searchParams.get('resourceVersion') === '5') {
      res.end(`${JSON.stringify({ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version' } })}\n`)
      return
    }
    res.write(`${JSON.stringify({ type: 'MODIFIED', object: cm('after-relist', '10') })}\n`)
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const { port } = server.address() as AddressInfo
  closers.push(() => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()) }))
  const kc = new KubeConfig()
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: `http://127.0.0.1:${port}`, skipTLSVerify: true }],
    users: [{ name: 'u' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  })
  return { kube: new KubeHttp(kc), requests }
}

it('re-lists after 410 Gone and resumes from the new resourceVersion, losing the changes in the gap like Knative', async () => {
  const { kube, requests } = await scriptedApiServer()
  const events: KEvent[] = []
  let got!: () => void
  const first = new Promise<void>((r) => { got = r })
  const source = startApiServerSource({
    apiVersion: 'sources.knative.dev/v1', kind: 'ApiServerSource', file: 's.yaml', raw: {},
    metadata: { name: 's', namespace: 'ns' },
    spec: { mode: 'Resource', resources: [{ apiVersion: 'v1', kind: 'ConfigMap' }] },
  }, kube, async (e) => { events.push(e); got(); return 202 }, silentLogger)
  closers.push(() => source.stop())

  await first

  expect(events.map((e) => [e.type, e.extensions.name])).toEqual([['dev.knative.apiserver.resource.update', 'after-relist']])
  const watches = requests.filter((r) => r.includes('watch=1'))
  expect(watches[0]).toContain('resourceVersion=5')
  expect(watches[1]).toContain('resourceVersion=9')
  expect(requests.filter((r) => !r.includes('watch=1'))).toHaveLength(2)
})
