import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { ApiextensionsV1Api, CustomObjectsApi, loadYaml, type V1CustomResourceDefinition } from '@kubernetes/client-node'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApp as scheduleFired } from '../../functions/schedule-fired/index.js'
import { createApp as templateChanged } from '../../functions/workflow-template-changed/index.js'
import { readRuntimeConfig } from '../../shared/config.js'
import type { EngineDeps } from '../../shared/engine/controller.js'
import { noKineticEvents } from '../../shared/engine/kinetic-events.js'
import { KubeClient } from '../../shared/kube/client.js'
import { silentLogger } from '../../shared/log.js'
import { parseSchedule } from '../../shared/template/plan/cron.js'
import { runName, scheduleSuffix } from '../../shared/template/run-builder.js'
import { startApiServer, type ApiServer } from '../../local/apiserver/index.js'
import { PINGSOURCE_CRD } from '../../local/knative/pingsource-crd.js'
import { deliver, PING, RESOURCE_ADD, RESOURCE_UPDATE } from '../support/deliver.js'

/**
 * The template functions with the real client-node adapter against the embedded API server with
 * Kinetic's CRDs and the local plane's PingSource kind: what the CRD schema accepts in a
 * template's status, the PingSource through server-side apply, runs created and pruned for real.
 */
const NS = 'default'
const SINK = 'http://broker-ingress.knative-eventing.svc.cluster.local/kinetic-system/default'
let api: ApiServer
let custom: CustomObjectsApi
const clock = { now: new Date() }

const deps = (): EngineDeps => ({
  kube: new KubeClient(api.kubeConfigObject()), log: silentLogger, now: () => clock.now,
  config: { ...readRuntimeConfig({}), eventSink: SINK }, events: noKineticEvents,
})
const wf = (name: string) => custom.getNamespacedCustomObject({ group: 'purko.io', version: 'v1alpha1', namespace: NS, plural: 'workflows', name }) as Promise<Record<string, any>>
const workflows = async () => ((await custom.listNamespacedCustomObject({ group: 'purko.io', version: 'v1alpha1', namespace: NS, plural: 'workflows' })) as { items: Record<string, any>[] }).items
const pingSource = (name: string) => custom.getNamespacedCustomObject({ group: 'sources.knative.dev', version: 'v1', namespace: NS, plural: 'pingsources', name })
  .then((o) => o as Record<string, any>, () => null)

beforeAll(async () => {
  api = await startApiServer()
  const kc = api.kubeConfigObject()
  custom = kc.makeApiClient(CustomObjectsApi)
  const ext = kc.makeApiClient(ApiextensionsV1Api)
  const dir = join(import.meta.dirname, '../../crds')
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.purko.io.yaml'))) {
    await ext.createCustomResourceDefinition({ body: loadYaml<V1CustomResourceDefinition>(readFileSync(join(dir, file), 'utf8')) })
  }
  // Through loadYaml, as the purko CRDs: the client maps raw keys (x-kubernetes-*) to its model names.
  await ext.createCustomResourceDefinition({ body: loadYaml<V1CustomResourceDefinition>(JSON.stringify(PINGSOURCE_CRD)) })
  // Server-side apply of a new kind works once the API server has built its schema: probe it.
  const kube = new KubeClient(kc)
  const probe = { apiVersion: 'sources.knative.dev/v1', kind: 'PingSource', metadata: { name: 'probe', namespace: NS }, spec: { schedule: '* * * * *' } }
  for (let i = 0; i < 200; i++) {
    if (await kube.applyChild(probe).then(() => true, () => false)) break
    await new Promise((r) => setTimeout(r, 50))
  }
  await kube.deleteChild('PingSource', NS, 'probe', { propagationPolicy: 'Background' })
})

afterAll(async () => {
  await api?.close()
})

describe('templates and schedules on the embedded API server', () => {
  it('a scheduled template gets its PingSource and status; a ping makes one run; a finished run is pruned; a broken zone removes the PingSource', async () => {
    await custom.createNamespacedCustomObject({
      group: 'purko.io', version: 'v1alpha1', namespace: NS, plural: 'workflows',
      body: {
        apiVersion: 'purko.io/v1alpha1', kind: 'Workflow',
        metadata: { name: 'nightly', annotations: { 'purko.io/template': 'true' } },
        spec: {
          description: 'Nightly report',
          steps: [{ name: 'collect', agentRef: { name: 'helper' } }],
          trigger: { schedule: { cron: '* * * * *', timezone: 'Europe/Paris' }, successfulRunsHistoryLimit: 0 },
        },
      },
    })
    const template = await wf('nightly')
    const created = new Date(template.metadata.creationTimestamp)
    const schedule = parseSchedule('* * * * *', 'Europe/Paris')
    if (!schedule.ok) throw new Error(schedule.message)
    const fire = schedule.schedule.nextAfter(created)!
    clock.now = new Date(fire.getTime() - 5_000)

    const first = await deliver(templateChanged(deps()), RESOURCE_ADD, template)
    expect(first.status, await first.clone().text()).toBe(202)
    const ping = await pingSource('nightly-schedule')
    expect(ping?.spec).toMatchObject({
      schedule: '* * * * *', timezone: 'Europe/Paris', contentType: 'application/json', sink: { uri: SINK },
      ceOverrides: { extensions: { kineticsource: 'schedule' } },
    })
    expect(JSON.parse(ping!.spec.data)).toEqual({ namespace: NS, name: 'nightly', uid: template.metadata.uid })
    expect(ping?.metadata.ownerReferences).toEqual([expect.objectContaining({ kind: 'Workflow', name: 'nightly', uid: template.metadata.uid, controller: true })])
    let status = (await wf('nightly')).status
    expect(status.nextRunTime).toBe(fire.toISOString().replace('.000Z', 'Z'))
    expect(status.conditions).toEqual([expect.objectContaining({ type: 'ScheduleValid', status: 'True', reason: 'Scheduled' })])

    // The ping: one run, however often it comes.
    clock.now = new Date(fire.getTime() + 300)
    const data = JSON.parse(ping!.spec.data)
    const app = scheduleFired(deps())
    for (let i = 0; i < 2; i++) {
      expect((await deliver(app, PING, data, { kineticsource: 'schedule', time: new Date(fire.getTime() + 120).toISOString() })).status).toBe(202)
    }
    const name = runName('nightly', 'sched', scheduleSuffix(fire))
    const runs = (await workflows()).filter((w) => w.metadata.name !== 'nightly')
    expect(runs.map((r) => r.metadata.name)).toEqual([name])
    expect(runs[0]!.metadata.ownerReferences).toEqual([expect.objectContaining({ name: 'nightly', uid: template.metadata.uid, controller: true, blockOwnerDeletion: false })])
    expect(runs[0]!.spec.steps[0].input).toMatchObject({ trigger: 'schedule', task: 'Nightly report' })
    status = (await wf('nightly')).status
    expect(status).toMatchObject({ lastScheduleTime: fire.toISOString().replace('.000Z', 'Z'), activeRuns: 1, recentRuns: [{ name, phase: 'Pending', trigger: 'schedule' }] })

    // The run finishes: with a history of 0 it is deleted once the template's status shows it.
    await custom.replaceNamespacedCustomObjectStatus({
      group: 'purko.io', version: 'v1alpha1', namespace: NS, plural: 'workflows', name,
      body: { ...runs[0], status: { phase: 'Succeeded', completionTime: new Date(fire.getTime() + 10_000).toISOString().replace(/\.\d+Z$/, 'Z') } },
    })
    clock.now = new Date(fire.getTime() + 11_000)
    expect((await deliver(templateChanged(deps()), RESOURCE_UPDATE, await wf(name))).status).toBe(202)
    expect((await workflows()).map((w) => w.metadata.name)).toEqual(['nightly'])
    expect((await wf('nightly')).status).toMatchObject({ activeRuns: 0 })
    expect((await wf('nightly')).status.recentRuns).toBeUndefined()
    // A late duplicate of the pruned run's ping brings nothing back.
    expect((await deliver(app, PING, data, { kineticsource: 'schedule', time: new Date(fire.getTime() + 400).toISOString() })).status).toBe(202)
    expect((await workflows()).map((w) => w.metadata.name)).toEqual(['nightly'])

    // A zone the runtime does not know: the PingSource goes, the condition says why.
    const current = await wf('nightly')
    await custom.replaceNamespacedCustomObject({
      group: 'purko.io', version: 'v1alpha1', namespace: NS, plural: 'workflows', name: 'nightly',
      body: { ...current, spec: { ...current.spec, trigger: { ...current.spec.trigger, schedule: { cron: '* * * * *', timezone: 'Europe/Nowhere' } } } },
    })
    expect((await deliver(templateChanged(deps()), RESOURCE_UPDATE, await wf('nightly'))).status).toBe(202)
    expect(await pingSource('nightly-schedule')).toBeNull()
    expect((await wf('nightly')).status.conditions).toEqual([expect.objectContaining({ type: 'ScheduleValid', status: 'False', reason: 'UnknownTimeZone' })])
  }, 60_000)
})
