import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { KubeConfig } from '@kubernetes/client-node'
import { HTTP, CloudEvent } from 'cloudevents'
import { afterEach, expect, it } from 'vitest'
import { startKnativeEmulation, type KnativeEmulation } from '../../../local/knative/emulation.js'
import { silentLogger } from '../../../shared/log.js'
import { startSubscriber } from './subscriber.js'

const closers: Array<() => Promise<void>> = []
afterEach(async () => { while (closers.length > 0) await closers.pop()?.() })

// No ApiServerSource here, so the API server named by the KubeConfig is never called.
function unusedKubeConfig(): KubeConfig {
  const kc = new KubeConfig()
  kc.loadFromOptions({ clusters: [{ name: 'c', server: 'http://127.0.0.1:9' }], users: [{ name: 'u' }], contexts: [{ name: 'x', cluster: 'c', user: 'u' }], currentContext: 'x' })
  return kc
}

async function emulate(yaml: string, services: Record<string, string>): Promise<KnativeEmulation> {
  const dir = mkdtempSync(join(tmpdir(), 'kinetic-emulation-'))
  writeFileSync(join(dir, 'all.yaml'), yaml)
  const emulation = await startKnativeEmulation({ manifests: dir, kubeConfig: unusedKubeConfig(), serviceUrl: (name) => services[name], log: silentLogger, schedulePings: false })
  closers.push(() => emulation.stop())
  return emulation
}

const manifests = `
apiVersion: eventing.knative.dev/v1
kind: Broker
metadata: { name: default, namespace: ks }
---
apiVersion: sources.knative.dev/v1
kind: PingSource
metadata: { name: tick, namespace: ks }
spec:
  schedule: "*/5 * * * *"
  data: hello
  ceOverrides: { extensions: { kineticsource: resync } }
  sink: { ref: { apiVersion: eventing.knative.dev/v1, kind: Broker, name: default } }
---
apiVersion: eventing.knative.dev/v1
kind: Trigger
metadata: { name: on-tick, namespace: ks }
spec:
  broker: default
  filter: { attributes: { type: dev.knative.sources.ping, kineticsource: resync } }
  subscriber: { ref: { apiVersion: serving.knative.dev/v1, kind: Service, name: ticker } }
---
apiVersion: eventing.knative.dev/v1
kind: Trigger
metadata: { name: on-custom, namespace: ks }
spec:
  broker: default
  filters: [{ prefix: { type: dev.example. } }]
  subscriber: { ref: { apiVersion: serving.knative.dev/v1, kind: Service, name: custom }, uri: /events }
`

it('routes a fired PingSource tick through the Broker to the Trigger subscriber from the YAML', async () => {
  const ticker = await startSubscriber(() => ({ status: 204 }))
  closers.push(ticker.close)
  const emulation = await emulate(manifests, { ticker: ticker.url.replace(/\/$/, '') })

  expect(await emulation.firePing('tick')).toBe(202)

  expect(ticker.received).toHaveLength(1)
  expect(ticker.received[0]?.headers['ce-source']).toBe('/apis/v1/namespaces/ks/pingsources/tick')
  expect(ticker.received[0]?.body).toBe('hello')
  expect(emulation.stats().delivered).toBe(1)
  await expect(emulation.firePing('nope')).rejects.toThrow(/No PingSource named nope/)
})

it('accepts CloudEvents over HTTP at the Broker URL (K_SINK) and joins a subscriber uri to the Service URL', async () => {
  const custom = await startSubscriber(() => ({ status: 202 }))
  closers.push(custom.close)
  const emulation = await emulate(manifests, { custom: custom.url.replace(/\/$/, '') })
  const msg = HTTP.structured(new CloudEvent({ type: 'dev.example.thing', source: '/test', id: 'x1', data: { a: 1 } }))

  const res = await fetch(emulation.brokerUrl('ks', 'default'), { method: 'POST', headers: msg.headers as Record<string, string>, body: msg.body as string })

  expect(res.status).toBe(202)
  expect(custom.received[0]?.path).toBe('/events')
  expect(custom.received[0]?.headers['ce-id']).toBe('x1')
  expect(JSON.parse(custom.received[0]?.body ?? '')).toEqual({ a: 1 })
  const unknown = await fetch(emulation.brokerUrl('ks', 'other'), { method: 'POST', headers: msg.headers as Record<string, string>, body: msg.body as string })
  expect(unknown.status).toBe(404)
  const invalid = await fetch(emulation.brokerUrl('ks', 'default'), { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })
  expect(invalid.status).toBe(400)
})
