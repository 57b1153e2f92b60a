// The delivery scenario of test/knative/delivery-cases.ts through real Knative: a Broker in its own
// namespace, the scenario's Triggers subscribed to the event recorder in a Pod (the released
// image has node), the events posted to the real broker-ingress one after the other. What real
// Knative did is the reference: it must equal OBSERVED_ON_KNATIVE, and the emulated Broker, run
// here on the same scenario, must do the same.
import { expect, it } from 'vitest'
import { waitFor } from '../../../cluster/knative/install.js'
import { eventually } from '../../support/eventually.js'
import { APISERVER_TRIGGER, EVENT_BODY, EVENTS, NS, PING_SOURCE, PLAN, PROBE_OBJECT, RECORDER_SCRIPT, apiserverVerb, eventHeaders, runEmulated, summarise, triggerObjects, type Attempt } from '../delivery-cases.js'
import { OBSERVED_ON_KNATIVE } from '../delivery-observed.js'
import type { KineticTier } from './kinetic.js'
import { adapterGeneration, adapterRolled } from './adapter.js'
import { post, releasedImage, serveNodeScript } from './cluster-ip.js'

interface Condition { type: string; status: string; reason?: string; message?: string }

/** Registers the test; `tier()` is called once it runs (after Kinetic's install test, for its image). */
export function deliveryOnKnative(tier: () => KineticTier): void {
  it('delivers as the emulation does: filters of every dialect, retries per status, dead letters, replies and attributes, judged by real Knative', async () => {
    const { admin } = tier()
    const generation = await adapterGeneration(admin)
    const recorder = await serveNodeScript(admin, {
      namespace: NS, name: 'recorder', image: await releasedImage(admin), script: RECORDER_SCRIPT,
      env: [{ name: 'PLAN', value: JSON.stringify(PLAN) }], readyPath: '/log',
    })
    await admin.apply({ apiVersion: 'eventing.knative.dev/v1', kind: 'Broker', metadata: { name: 'default', namespace: NS } }, NS)
    for (const t of triggerObjects()) await admin.apply(t as never, NS)
    await admin.apply(APISERVER_TRIGGER as never, 'kinetic-system')
    await admin.apply(PING_SOURCE as never, NS)
    const notReady = async (paths: string[]) => {
      const gaps: string[] = []
      for (const path of paths) {
        const list = await admin.get<{ items: Array<{ metadata: { name: string }; status?: { conditions?: Condition[] } }> }>(path)
        for (const o of list?.items ?? []) {
          const ready = o.status?.conditions?.find((c) => c.type === 'Ready')
          if (ready?.status !== 'True') gaps.push(`${path.split('/').pop()}/${o.metadata.name}: ${ready ? `${ready.reason ?? ''}: ${ready.message ?? ''}` : 'no Ready condition yet'}`)
        }
      }
      return gaps.length === 0 ? undefined : gaps.join('; ')
    }
    await waitFor(`the Broker, every Trigger and the PingSource of ${NS} Ready`, 300_000, () => notReady([
      `/apis/eventing.knative.dev/v1/namespaces/${NS}/brokers`, `/apis/eventing.knative.dev/v1/namespaces/${NS}/triggers`,
      `/apis/sources.knative.dev/v1/namespaces/${NS}/pingsources`,
    ]))
    await waitFor(`Trigger ${APISERVER_TRIGGER.metadata.name} Ready`, 300_000, async () =>
      (await notReady(['/apis/eventing.knative.dev/v1/namespaces/kinetic-system/triggers']))?.split('; ').filter((g) => g.includes(APISERVER_TRIGGER.metadata.name)).join('; ') || undefined)

    // A new namespace restarts the ApiServerSource's adapter (Knative writes the namespace list into
    // it) and a restarted adapter sends nothing for objects that already exist: the probe object
    // is made once the new adapter pod alone is Ready.
    await adapterRolled(admin, generation)
    await admin.apply(PROBE_OBJECT, NS)
    const seen = (path: string) => async () => ((await recorder.get('/log')) as Attempt[]).some((a) => a.path === path)
    if (!(await eventually('the ApiServerSource\'s event for the probe object', seen('/apiserver'), 30_000, 1000).catch(() => false))) {
      // The add came before the adapter watched: an update makes one.
      await admin.apply({ ...PROBE_OBJECT, metadata: { ...PROBE_OBJECT.metadata, annotations: { 'kinetic.dev/probe': 'again' } } }, NS)
      await eventually('the ApiServerSource\'s event for the probe object (after an update)', seen('/apiserver'), 60_000, 1000)
    }
    await eventually('a PingSource event', seen('/ping'), 90_000, 1000)

    const ingressIp = (await admin.get<{ spec: { clusterIP: string } }>('/api/v1/namespaces/knative-eventing/services/broker-ingress'))!.spec.clusterIP
    const ingress: Record<string, number> = {}
    for (const e of EVENTS) ingress[e.id] = await post(ingressIp, `/${NS}/default`, eventHeaders(e), EVENT_BODY)
    // The ingress may answer before every delivery ended: wait until the log has been still for 5 s.
    let last = -1
    let stillSince = Date.now()
    const log = await eventually('the recorder\'s log to settle', async () => {
      const now = (await recorder.get('/log')) as Attempt[]
      if (now.length !== last) { last = now.length; stillSince = Date.now(); return undefined }
      return Date.now() - stillSince >= 5000 ? now : undefined
    }, 180_000, 500)
    const real = summarise(log, ingress)
    console.log(`knative: delivery scenario on real Knative: ${JSON.stringify(real)}`)
    // Kinetic's Trigger list and the node stay as they were for the tests after this one.
    await admin.send('DELETE', `/apis/sources.knative.dev/v1/namespaces/${NS}/pingsources/${PING_SOURCE.metadata.name}`)
    await admin.send('DELETE', `/apis/eventing.knative.dev/v1/namespaces/kinetic-system/triggers/${APISERVER_TRIGGER.metadata.name}`)
    expect(real).toEqual(OBSERVED_ON_KNATIVE)
    expect(await runEmulated(apiserverVerb(real))).toEqual(real)
  }, 900_000)
}
