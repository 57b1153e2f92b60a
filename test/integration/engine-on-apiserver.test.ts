import { readdirSync, readFileSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { serve, type ServerType } from '@hono/node-server'
import {
  ApiextensionsV1Api, BatchV1Api, CoreV1Api, CustomObjectsApi, loadYaml, type V1CustomResourceDefinition, type V1Job,
} from '@kubernetes/client-node'
import { CloudEvent, HTTP } from 'cloudevents'
import { http, HttpResponse } from 'msw'
import { setupServer } from 'msw/node'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApp as resyncTick } from '../../functions/resync-tick/index.js'
import { createApp as stepJobFinished } from '../../functions/step-job-finished/index.js'
import { createApp as workflowChanged } from '../../functions/workflow-changed/index.js'
import { readRuntimeConfig } from '../../shared/config.js'
import { noKineticEvents } from '../../shared/engine/kinetic-events.js'
import { KubeClient } from '../../shared/kube/client.js'
import { silentLogger } from '../../shared/log.js'
import { startApiServer, type ApiServer } from '../../local/apiserver/index.js'

/**
 * The functions over real HTTP, with the real client-node adapter, against the embedded API
 * server with Kinetic's generated CRDs installed: the same path a cluster takes, minus Knative.
 */

const NS = 'ai-agents'
let api: ApiServer
let core: CoreV1Api
let batch: BatchV1Api
let custom: CustomObjectsApi
const servers: ServerType[] = []
const mock = setupServer()

async function listen(app: { fetch: (req: Request) => Response | Promise<Response> }): Promise<string> {
  return new Promise((resolve) => {
    const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info: AddressInfo) => resolve(`http://127.0.0.1:${info.port}`))
    servers.push(server)
  })
}

/**
 * Posts an event as its Trigger delivers it: a ping from the PingSource `from`, or an object of
 * kind `from` from the one ApiServerSource, with Knative's `kind` extension.
 */
async function post(url: string, type: string, data: unknown, from: string): Promise<number> {
  const attributes = type === 'dev.knative.sources.ping' ? { kineticsource: from } : { kineticsource: 'resources', kind: from }
  const message = HTTP.binary(new CloudEvent({ type, source: api.url, subject: '/apis/test', datacontenttype: 'application/json', data: data as object, ...attributes }))
  const res = await fetch(url, { method: 'POST', headers: message.headers as Record<string, string>, body: message.body as string })
  return res.status
}

const deps = () => ({
  kube: new KubeClient(api.kubeConfigObject()),
  log: silentLogger,
  now: () => new Date(),
  config: readRuntimeConfig({}),
  events: noKineticEvents,
})

async function workflow(name: string): Promise<Record<string, any>> {
  return custom.getNamespacedCustomObject({ group: 'purko.io', version: 'v1alpha1', namespace: NS, plural: 'workflows', name })
}

/** Plays the Job controller and kubelet: a pod with the log, then the Job's Complete condition. */
async function complete(job: V1Job, log: string): Promise<V1Job> {
  const name = job.metadata!.name!
  const pod = `${name}-pod`
  await core.createNamespacedPod({ namespace: NS, body: { metadata: { name: pod, labels: { 'job-name': name } }, spec: { nodeName: 'node-1', containers: [{ name: 'step-executor', image: 'x' }] } } })
  api.store.appendPodLog(NS, pod, log)
  const now = new Date()
  return batch.replaceNamespacedJobStatus({
    namespace: NS, name,
    body: { ...job, status: { succeeded: 1, startTime: now, completionTime: now, conditions: [{ type: 'Complete', status: 'True', lastTransitionTime: now }] } },
  })
}

beforeAll(async () => {
  api = await startApiServer()
  const kc = api.kubeConfigObject()
  core = kc.makeApiClient(CoreV1Api)
  batch = kc.makeApiClient(BatchV1Api)
  custom = kc.makeApiClient(CustomObjectsApi)
  const ext = kc.makeApiClient(ApiextensionsV1Api)
  const dir = join(import.meta.dirname, '../../crds')
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.purko.io.yaml'))) {
    await ext.createCustomResourceDefinition({ body: loadYaml<V1CustomResourceDefinition>(readFileSync(join(dir, file), 'utf8')) })
  }
  await custom.createNamespacedCustomObject({
    group: 'purko.io', version: 'v1alpha1', namespace: NS, plural: 'agents',
    body: { apiVersion: 'purko.io/v1alpha1', kind: 'Agent', metadata: { name: 'writer' }, spec: { model: { provider: 'offline', name: 'scripted' } } },
  })
  mock.listen({ onUnhandledRequest: 'bypass' })
})

afterAll(async () => {
  mock.close()
  for (const server of servers) server.close()
  await api.close()
})

describe('the workflow functions against the embedded API server', () => {
  it('runs a two-step Workflow: Job, output ConfigMap, substituted input, status and Events', async () => {
    await custom.createNamespacedCustomObject({
      group: 'purko.io', version: 'v1alpha1', namespace: NS, plural: 'workflows',
      body: {
        apiVersion: 'purko.io/v1alpha1', kind: 'Workflow', metadata: { name: 'notes' },
        spec: {
          parameters: { topic: 'tides' },
          steps: [
            { name: 'draft', agentRef: { name: 'writer' }, input: { task: 'Write about ${parameters.topic}' } },
            { name: 'polish', agentRef: { name: 'writer' }, dependsOn: ['draft'], input: { text: '${steps.draft.output.response}' } },
          ],
        },
      },
    })
    const changed = await listen(workflowChanged(deps()))
    const finished = await listen(stepJobFinished(deps()))

    // No ServiceAccount for the agent yet (agent-changed has not run): the step waits for it.
    expect(await post(changed, 'dev.knative.apiserver.resource.add', await workflow('notes'), 'Workflow')).toBe(202)
    const waiting = await workflow('notes')
    expect(waiting.status.stepStatuses[0]).toMatchObject({ name: 'draft', phase: 'Pending', error: expect.stringContaining('ServiceAccount "agent-writer-sa" in namespace "ai-agents"') })
    expect((await batch.listNamespacedJob({ namespace: NS })).items).toEqual([])
    expect((await core.listNamespacedEvent({ namespace: NS })).items.map((e) => e.reason)).toContain('AgentIdentityPending')

    // Creating an account is not a Workflow event: the resync tick re-drives the waiting step.
    await core.createNamespacedServiceAccount({ namespace: NS, body: { metadata: { name: 'agent-writer-sa' } } })
    expect(await post(await listen(resyncTick(deps())), 'dev.knative.sources.ping', {}, 'resync')).toBe(202)
    const started = await workflow('notes')
    expect(started.status.phase).toBe('Running')
    expect(started.spec.parallelism).toBe(1) // the CRD's default, applied by the API server
    const runId = started.status.runId as string
    const first = await batch.readNamespacedJob({ namespace: NS, name: `notes-draft-${runId}` })
    expect(first.spec?.template.spec?.securityContext?.runAsNonRoot).toBe(true)
    expect(first.spec?.template.spec?.serviceAccountName).toBe('agent-writer-sa')
    expect(first.metadata?.ownerReferences?.[0]).toMatchObject({ kind: 'Workflow', name: 'notes', controller: true })

    const done = await complete(first, 'thinking\nOUTPUT:{"response":"Tides \\"rise\\" twice a day"}\n')
    expect(await post(finished, 'dev.knative.apiserver.resource.update', done, 'Job')).toBe(202)

    const outputs = await core.readNamespacedConfigMap({ namespace: NS, name: 'notes-outputs' })
    expect(outputs.data).toEqual({ draft: '{"response":"Tides \\"rise\\" twice a day"}' })
    const second = await batch.readNamespacedJob({ namespace: NS, name: `notes-polish-${runId}` })
    const input = second.spec?.template.spec?.containers[0]?.env?.find((e) => e.name === 'STEP_INPUT')?.value
    expect(JSON.parse(input!)).toEqual({ text: 'Tides "rise" twice a day' })
    const progressed = await workflow('notes')
    expect(progressed.status.stepStatuses.map((s: { name: string; phase: string }) => [s.name, s.phase])).toEqual([['draft', 'Succeeded'], ['polish', 'Running']])
    const events = await core.listNamespacedEvent({ namespace: NS })
    expect(events.items.map((e) => e.reason)).toContain('RunStarted')

    // The echo of our own status write changes nothing.
    const before = (await workflow('notes')).metadata.resourceVersion
    expect(await post(changed, 'dev.knative.apiserver.resource.update', progressed, 'Workflow')).toBe(202)
    expect((await workflow('notes')).metadata.resourceVersion).toBe(before)
  })

  it('counts every step of one agent that finishes at once, through concurrent deliveries and real resourceVersion conflicts', async () => {
    await core.createNamespacedServiceAccount({ namespace: NS, body: { metadata: { name: 'agent-writer-sa' } } }).catch(() => undefined)
    const agentNow = () => custom.getNamespacedCustomObject({ group: 'purko.io', version: 'v1alpha1', namespace: NS, plural: 'agents', name: 'writer' }) as Promise<Record<string, any>>
    const previous = (await agentNow()).status?.metrics ?? {}
    const names = ['burst-a', 'burst-b', 'burst-c', 'burst-d', 'burst-e']
    const changed = await listen(workflowChanged(deps()))
    const finishedUrls = await Promise.all(names.map(() => listen(stepJobFinished(deps()))))
    const done: V1Job[] = []
    for (const name of names) {
      await custom.createNamespacedCustomObject({
        group: 'purko.io', version: 'v1alpha1', namespace: NS, plural: 'workflows',
        body: { apiVersion: 'purko.io/v1alpha1', kind: 'Workflow', metadata: { name }, spec: { steps: [{ name: 'only', agentRef: { name: 'writer' } }] } },
      })
      expect(await post(changed, 'dev.knative.apiserver.resource.add', await workflow(name), 'Workflow')).toBe(202)
      const runId = (await workflow(name)).status.runId as string
      done.push(await complete(await batch.readNamespacedJob({ namespace: NS, name: `${name}-only-${runId}` }), 'OUTPUT:{"response":"ok","_metrics":{"tokens_in":3,"tokens_out":2,"cost_usd":0.1}}\n'))
    }

    // One function instance per event, all at once, as the Broker fans out; 409s are redelivered.
    let pending = done.map((job, i) => ({ job, url: finishedUrls[i]! }))
    for (let round = 0; pending.length > 0 && round < 10; round++) {
      const answers = await Promise.all(pending.map(({ job, url }) => post(url, 'dev.knative.apiserver.resource.update', job, 'Job')))
      expect(answers.every((status) => status === 202 || status === 409)).toBe(true)
      pending = pending.filter((_, i) => answers[i] === 409)
    }
    expect(pending).toEqual([])

    for (const name of names) expect((await workflow(name)).status.phase).toBe('Succeeded')
    const metrics = (await agentNow()).status.metrics
    expect(metrics.totalInvocations - (previous.totalInvocations ?? 0)).toBe(names.length)
    expect(metrics.totalTokensUsed - (previous.totalTokensUsed ?? 0)).toBe(5 * names.length)
    expect(metrics.recordedAttempts.filter((k: string) => k.endsWith('/only/0'))).toHaveLength(names.length)
  })

  it('rejects an invalid Workflow at the API server with purko\'s message, no function involved', async () => {
    const call = custom.createNamespacedCustomObject({
      group: 'purko.io', version: 'v1alpha1', namespace: NS, plural: 'workflows',
      body: { apiVersion: 'purko.io/v1alpha1', kind: 'Workflow', metadata: { name: 'broken' }, spec: { steps: [{ name: 'lonely' }] } },
    })
    await expect(call).rejects.toMatchObject({ code: 422, body: expect.stringContaining('step \\"lonely\\" must have either agentRef.name or type') })
  })

  it('answers 503 when the API server fails, so the Broker redelivers', async () => {
    mock.use(http.get(`${api.url}/apis/purko.io/v1alpha1/namespaces/${NS}/workflows/notes`, () => new HttpResponse('etcd unavailable', { status: 503 }), { once: true }))
    const changed = await listen(workflowChanged(deps()))
    expect(await post(changed, 'dev.knative.apiserver.resource.update', { kind: 'Workflow', namespace: NS, name: 'notes', apiVersion: 'purko.io/v1alpha1' }, 'Workflow')).toBe(503)
    expect(await post(changed, 'dev.knative.apiserver.resource.update', { kind: 'Workflow', namespace: NS, name: 'notes', apiVersion: 'purko.io/v1alpha1' }, 'Workflow')).toBe(202)
  })
})
