import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { startApiServer, type ApiServer } from '../../../local/apiserver/index.js'
import { startKnativeEmulation, type KnativeEmulation } from '../../../local/knative/emulation.js'
import { KubeHttp, type KubeObject } from '../../../local/knative/kube-http.js'
import { ensurePingSourceKind } from '../../../local/knative/pingsource-crd.js'
import { pingManifest } from '../../../local/knative/runtime-pings.js'
import { pino } from 'pino'
import { silentLogger } from '../../../shared/log.js'
import { captureLog, startSubscriber, type Received } from './subscriber.js'

const manifests = `
apiVersion: eventing.knative.dev/v1
kind: Broker
metadata: { name: default, namespace: ks }
---
apiVersion: sources.knative.dev/v1
kind: PingSource
metadata: { name: tick, namespace: ks }
spec:
  schedule: "0 0 1 1 *"
  data: from-knative
  ceOverrides: { extensions: { kineticsource: resync } }
  sink: { ref: { apiVersion: eventing.knative.dev/v1, kind: Broker, name: default } }
---
apiVersion: eventing.knative.dev/v1
kind: Trigger
metadata: { name: on-ping, namespace: ks }
spec:
  broker: default
  filter: { attributes: { type: dev.knative.sources.ping } }
  subscriber: { ref: { apiVersion: serving.knative.dev/v1, kind: Service, name: sched } }
`

const PATH = (ns: string) => `/apis/sources.knative.dev/v1/namespaces/${ns}/pingsources`
const YEARLY = '0 0 1 1 *'
const EVERY_SECOND = '* * * * * *'

let api: ApiServer
let kube: KubeHttp
let subscriber: Awaited<ReturnType<typeof startSubscriber>>
const closers: Array<() => Promise<void>> = []

beforeEach(async () => {
  api = await startApiServer()
  kube = new KubeHttp(api.kubeConfigObject())
  subscriber = await startSubscriber(() => ({ status: 202 }))
})
afterEach(async () => {
  while (closers.length > 0) await closers.pop()?.()
  await subscriber.close()
  await api.close()
})

async function emulate(log = silentLogger, opts: { pingIntervalMs?: number } = {}): Promise<KnativeEmulation> {
  await ensurePingSourceKind(kube, silentLogger)
  const dir = mkdtempSync(join(tmpdir(), 'kinetic-runtime-pings-'))
  writeFileSync(join(dir, 'all.yaml'), manifests)
  const emulation = await startKnativeEmulation({
    manifests: dir, kubeConfig: api.kubeConfigObject(), log,
    serviceUrl: (name) => (name === 'sched' ? subscriber.url.replace(/\/$/, '') : undefined),
    ...opts,
  })
  closers.push(() => emulation.stop())
  await emulation.ready
  return emulation
}

function aPingSource(name: string, spec: Record<string, unknown>, namespace = 'team'): KubeObject {
  return { apiVersion: 'sources.knative.dev/v1', kind: 'PingSource', metadata: { name, namespace }, spec }
}

async function until<T>(what: string, get: () => T | undefined | false, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const v = get()
    if (v !== undefined && v !== false) return v
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

const from = (ns: string, name: string) => (r: Received) => r.headers['ce-source'] === `/apis/v1/namespaces/${ns}/pingsources/${name}`
const ticksOf = (ns: string, name: string) => subscriber.received.filter(from(ns, name))
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

describe('the embedded API server serves PingSources', () => {
  it('installs the local plane\'s own PingSource kind once, namespaced with a status subresource, and leaves a served one alone', async () => {
    expect(await ensurePingSourceKind(kube, silentLogger)).toBe('installed')
    expect(await ensurePingSourceKind(kube, silentLogger)).toBe('served')
    const group = await kube.request<{ resources: Array<{ name: string; kind: string; namespaced: boolean }> }>('GET', '/apis/sources.knative.dev/v1')
    expect(group.resources.map((r) => [r.name, r.kind, r.namespaced])).toEqual(expect.arrayContaining([['pingsources', 'PingSource', true], ['pingsources/status', 'PingSource', true]]))

    const created = await kube.request('POST', PATH('team'), aPingSource('nightly', { schedule: '0 3 * * *', timezone: 'Europe/Berlin', contentType: 'application/json', data: '{"a":1}', sink: { uri: 'http://example.test/x' }, ceOverrides: { extensions: { kineticsource: 'schedule' } } }))
    expect(created.spec).toEqual({ schedule: '0 3 * * *', timezone: 'Europe/Berlin', contentType: 'application/json', data: '{"a":1}', sink: { uri: 'http://example.test/x' }, ceOverrides: { extensions: { kineticsource: 'schedule' } } })
    // Status goes through its own subresource: a write to the object does not change it.
    const withStatus = await kube.request('PUT', `${PATH('team')}/nightly/status`, { ...created, status: { sinkUri: 'http://example.test/x' } })
    expect(withStatus.status).toEqual({ sinkUri: 'http://example.test/x' })
  })
})

describe('PingSources created at run time', () => {
  it('ticks at the sink on its schedule once created, ticks on the new schedule after an update, and stops when deleted', async () => {
    const emulation = await emulate()
    const sink = emulation.brokerUrl('ks', 'default')
    await kube.request('POST', PATH('team'), aPingSource('nightly', { schedule: YEARLY, contentType: 'application/json', data: '{"v":1}', sink: { uri: sink }, ceOverrides: { extensions: { kineticsource: 'schedule' } } }))
    await until('the emulation to see the PingSource', () => emulation.runtimePingSources().includes('team/nightly'))

    // A yearly schedule does not tick now; a fired tick shows the event it sends.
    expect(await emulation.firePing('team/nightly')).toBe(202)
    expect(ticksOf('team', 'nightly')).toHaveLength(1)
    expect(ticksOf('team', 'nightly')[0]).toMatchObject({ body: '{"v":1}', headers: { 'ce-type': 'dev.knative.sources.ping', 'content-type': 'application/json', 'ce-kineticsource': 'schedule' } })

    // Update: every second, new data. Ticks come by themselves, with the new spec.
    const live = await kube.request('GET', `${PATH('team')}/nightly`)
    await kube.request('PUT', `${PATH('team')}/nightly`, { ...live, spec: { ...(live.spec as object), schedule: EVERY_SECOND, data: '{"v":2}' } })
    await until('two ticks on the new schedule', () => ticksOf('team', 'nightly').filter((r) => r.body === '{"v":2}').length >= 2)

    // Delete: ticks stop (a tick already on its way may still land).
    await kube.request('DELETE', `${PATH('team')}/nightly`)
    await until('the emulation to drop the PingSource', () => !emulation.runtimePingSources().includes('team/nightly'))
    await sleep(300)
    const after = ticksOf('team', 'nightly').length
    await sleep(2200)
    expect(ticksOf('team', 'nightly')).toHaveLength(after)
    await expect(emulation.firePing('team/nightly')).rejects.toThrow(/No PingSource named team\/nightly/)
  })

  it('runs PingSources that existed before the emulation started, and finds them by name alone when only one namespace has it', async () => {
    await ensurePingSourceKind(kube, silentLogger)
    await kube.request('POST', PATH('early'), aPingSource('before', { schedule: YEARLY, data: 'early', sink: { ref: { apiVersion: 'eventing.knative.dev/v1', kind: 'Broker', name: 'default', namespace: 'ks' } } }, 'early'))
    const emulation = await emulate()
    expect(emulation.runtimePingSources()).toEqual(['early/before'])
    expect(await emulation.firePing('before')).toBe(202)
    expect(ticksOf('early', 'before').map((r) => r.body)).toEqual(['early'])

    // The same name in a second namespace: the bare name is ambiguous.
    await kube.request('POST', PATH('late'), aPingSource('before', { schedule: YEARLY, data: 'late', sink: { ref: { kind: 'Broker', name: 'default', namespace: 'ks' } } }, 'late'))
    await until('the second PingSource', () => emulation.runtimePingSources().includes('late/before'))
    await expect(emulation.firePing('before')).rejects.toThrow(/several namespaces \(early, late\)/)
    expect(await emulation.firePing('late/before')).toBe(202)
    expect(ticksOf('late', 'before').map((r) => r.body)).toEqual(['late'])
  })

  it('delivers to a Broker named by the in-cluster broker-ingress URL (a function\'s KINETIC_EVENT_SINK) through the local Broker', async () => {
    const emulation = await emulate()
    await kube.request('POST', PATH('team'), aPingSource('incluster', { schedule: YEARLY, data: 'x', sink: { uri: 'http://broker-ingress.knative-eventing.svc.cluster.local/ks/default' } }))
    await until('the PingSource', () => emulation.runtimePingSources().includes('team/incluster'))
    expect(await emulation.firePing('team/incluster')).toBe(202)
    expect(ticksOf('team', 'incluster')).toHaveLength(1)
  })

  it('leaves a PingSource of knative/ to the YAML: an object of the same name on the API server does not tick a second time', async () => {
    const emulation = await emulate()
    await kube.request('POST', PATH('ks'), aPingSource('tick', { schedule: EVERY_SECOND, data: 'api-copy', sink: { ref: { kind: 'Broker', name: 'default' } } }, 'ks'))
    await kube.request('POST', PATH('team'), aPingSource('marker', { schedule: YEARLY, sink: { ref: { kind: 'Broker', name: 'default', namespace: 'ks' } } }))
    // Events are handled in order: once the later object is seen, the earlier one was judged.
    await until('the marker PingSource', () => emulation.runtimePingSources().includes('team/marker'))
    expect(emulation.runtimePingSources()).toEqual(['team/marker'])
    expect(await emulation.firePing('tick')).toBe(202)
    expect(ticksOf('ks', 'tick').map((r) => r.body)).toEqual(['from-knative'])
  })

  it('logs a PingSource whose schedule or time zone it refuses, keeps watching, and runs it once its spec is fixed', async () => {
    const logs = captureLog()
    const emulation = await emulate(pino({ level: 'info' }, logs))
    const sink = { ref: { kind: 'Broker', name: 'default', namespace: 'ks' } }
    await kube.request('POST', PATH('team'), aPingSource('every', { schedule: '@every 1m', sink }))
    await kube.request('POST', PATH('team'), aPingSource('mars', { schedule: YEARLY, timezone: 'Mars/Olympus', sink }))
    await kube.request('POST', PATH('team'), aPingSource('fine', { schedule: YEARLY, data: 'fine', sink }))
    await until('the valid PingSource after the refused ones', () => emulation.runtimePingSources().includes('team/fine'))

    const refused = logs.lines.filter((l) => String(l.msg).startsWith('PingSource refused'))
    expect(refused.map((l) => l.pingSource)).toEqual(['team/every', 'team/mars'])
    expect(String(refused[0]?.err)).toMatch(/@every/)
    await expect(emulation.firePing('team/every')).rejects.toThrow(/does not tick: .*@every/)
    expect(await emulation.firePing('team/fine')).toBe(202)

    const live = await kube.request('GET', `${PATH('team')}/mars`)
    await kube.request('PUT', `${PATH('team')}/mars`, { ...live, spec: { ...(live.spec as object), timezone: 'Europe/Berlin', data: 'fixed' } })
    // Once the new spec is seen, a fired tick carries it.
    const deadline = Date.now() + 15_000
    for (;;) {
      const status = await emulation.firePing('team/mars').catch(() => 0)
      if (status === 202) break
      if (Date.now() > deadline) throw new Error('The fixed PingSource never ticked')
      await sleep(20)
    }
    await until('the fixed tick', () => ticksOf('team', 'mars').some((r) => r.body === 'fixed'))
  })

  it('fast-forwards runtime PingSources too: from the start, and when the interval changes while running', async () => {
    const emulation = await emulate(silentLogger, { pingIntervalMs: 50 })
    const sink = { ref: { kind: 'Broker', name: 'default', namespace: 'ks' } }
    await kube.request('POST', PATH('team'), aPingSource('fast', { schedule: YEARLY, data: 'fast', sink }))
    await until('three fast-forwarded ticks', () => ticksOf('team', 'fast').length >= 3)

    emulation.setPingInterval(undefined)
    await sleep(300)
    const held = ticksOf('team', 'fast').length
    await sleep(500)
    expect(ticksOf('team', 'fast')).toHaveLength(held)

    emulation.setPingInterval(50)
    await until('ticks again', () => ticksOf('team', 'fast').length >= held + 2)
  })

  it('reads a PingSource object as the emulation runs it: namespace, name and spec', () => {
    const m = pingManifest({ apiVersion: 'sources.knative.dev/v1', kind: 'PingSource', metadata: { name: 'n', namespace: 'ns', uid: 'u' }, spec: { schedule: '* * * * *' }, status: { x: 1 } })
    expect(m).toMatchObject({ kind: 'PingSource', metadata: { name: 'n', namespace: 'ns' }, spec: { schedule: '* * * * *' } })
  })
})
