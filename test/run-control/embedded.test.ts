// run-control on the embedded API server, with the workflow engine (workflow-changed) in the same
// process: an approval through run-control starts the gated step's Job, a denial ends the step
// with the user's name and reason. The embedded server has no TokenReview, so run-control runs
// with auth none there, as the local plane starts it: the user is `anonymous`.
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { ApiextensionsV1Api, BatchV1Api, CoreV1Api, CustomObjectsApi, loadYaml, type V1CustomResourceDefinition } from '@kubernetes/client-node'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApp as runControl } from '../../functions/run-control/index.js'
import { createApp as workflowChanged } from '../../functions/workflow-changed/index.js'
import { startApiServer, type ApiServer } from '../../local/apiserver/index.js'
import { KubeClient } from '../../shared/kube/client.js'
import { silentLogger } from '../../shared/log.js'
import { runControlConfig } from '../../shared/run-control/config.js'
import { callerAuthEnv } from '../../local/function-env.js'
import type { Workflow } from '../../shared/schemas/workflow.js'
import { deliver, RESOURCE_ADD, RESOURCE_UPDATE } from '../support/deliver.js'
import { testDeps } from '../support/engine-deps.js'
import { loadManifests } from '../knative/manifests.js'

const NS = 'team'
const WORKFLOWS = { group: 'purko.io', version: 'v1alpha1', namespace: NS, plural: 'workflows' }

describe('run-control with the workflow engine on the embedded API server', () => {
  let api: ApiServer
  let kube: KubeClient
  let custom: CustomObjectsApi
  let batch: BatchV1Api
  let control: ReturnType<typeof runControl>
  let engine: ReturnType<typeof workflowChanged>

  beforeAll(async () => {
    api = await startApiServer()
    const kc = api.kubeConfigObject()
    custom = kc.makeApiClient(CustomObjectsApi)
    batch = kc.makeApiClient(BatchV1Api)
    const core = kc.makeApiClient(CoreV1Api)
    const ext = kc.makeApiClient(ApiextensionsV1Api)
    const dir = join(import.meta.dirname, '../../crds')
    for (const file of readdirSync(dir).filter((f) => f.endsWith('.purko.io.yaml'))) {
      await ext.createCustomResourceDefinition({ body: loadYaml<V1CustomResourceDefinition>(readFileSync(join(dir, file), 'utf8')) })
    }
    await core.createNamespace({ body: { metadata: { name: NS } } }).catch(() => undefined)
    // The gate: an agent whose steps wait for a human, with the identity agent-changed would have made.
    await core.createNamespacedServiceAccount({ namespace: NS, body: { metadata: { name: 'agent-gatekeeper-sa' } } })
    await custom.createNamespacedCustomObject({ group: 'purko.io', version: 'v1alpha1', namespace: NS, plural: 'agents', body: {
      apiVersion: 'purko.io/v1alpha1', kind: 'Agent', metadata: { name: 'gatekeeper' },
      spec: { model: { provider: 'offline', name: 'scripted' }, guardrails: { humanApprovalRequired: true } },
    } })
    kube = new KubeClient(kc)
    // The Service's own setting, as the local plane turns it into auth none here.
    const service = loadManifests().find((m) => m.kind === 'Service' && m.name === 'run-control')!
    const env = Object.fromEntries((service.doc.spec.template.spec.containers[0].env as Array<{ name: string; value: string }>).map((e) => [e.name, e.value]))
    control = runControl({ kube, log: silentLogger, now: () => new Date(), config: runControlConfig({ ...env, ...callerAuthEnv(env, false) }) })
    engine = workflowChanged(testDeps(kube, { now: new Date() }))
  })

  afterAll(async () => {
    await api?.close()
  })

  const read = async (name: string) => kube.getWorkflow(NS, name) as Promise<Workflow>
  const jobsOf = async (name: string) => (await batch.listNamespacedJob({ namespace: NS, labelSelector: `purko.io/workflow=${name}` })).items.map((j) => j.metadata?.name)
  const create = async (name: string) => {
    await custom.createNamespacedCustomObject({ ...WORKFLOWS, body: {
      apiVersion: 'purko.io/v1alpha1', kind: 'Workflow', metadata: { name },
      spec: { steps: [{ name: 'ship', agentRef: { name: 'gatekeeper' }, input: { task: 'ship it' } }] },
    } })
    expect((await deliver(engine, RESOURCE_ADD, await read(name))).status).toBe(202)
    const wf = await read(name)
    expect(wf.status?.stepStatuses?.[0]).toMatchObject({ name: 'ship', phase: 'Pending', error: expect.stringContaining('Waiting for human approval') })
    expect(await jobsOf(name)).toEqual([])
  }
  const post = (path: string, body?: unknown) => control.request(path, {
    method: 'POST', headers: { 'content-type': 'application/json' }, ...(body ? { body: JSON.stringify(body) } : {}),
  })

  it('an approval through run-control starts the gated step\'s Job', async () => {
    await create('release')
    const res = await post(`/api/approve/${NS}/release/ship`, { reason: 'go' })
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ status: 'approved', workflow: 'release', step: 'ship', namespace: NS, user: 'anonymous' })
    const approved = await read('release')
    expect(approved.metadata.annotations?.['purko.io/approve-ship']).toBe('true')
    expect(JSON.parse(approved.metadata.annotations?.['kinetic.dev/decision-ship'] ?? '{}')).toMatchObject({ verdict: 'approved', user: 'anonymous', reason: 'go' })
    // The annotation write is what the ApiServerSource sends on.
    expect((await deliver(engine, RESOURCE_UPDATE, approved)).status).toBe(202)
    expect(await jobsOf('release')).toHaveLength(1)
    expect((await read('release')).status?.stepStatuses?.[0]?.phase).toBe('Running')
    const events = await kube.listEvents(NS, { kind: 'Workflow', name: 'release' })
    expect(events.map((e) => e.message)).toContain('anonymous approved step ship: go')
    // A second decision once the step runs is refused.
    expect((await post(`/api/deny/${NS}/release/ship`)).status).toBe(409)
  })

  it('a denial through run-control fails the step with "Denied by <user>: <reason>" and ends the run (failFast)', async () => {
    await create('hotfix')
    expect((await post(`/api/deny/${NS}/hotfix/ship`, { reason: 'change freeze' })).status).toBe(200)
    expect((await deliver(engine, RESOURCE_UPDATE, await read('hotfix'))).status).toBe(202)
    const wf = await read('hotfix')
    expect(wf.status?.stepStatuses?.[0]).toMatchObject({ name: 'ship', phase: 'Failed', error: 'Denied by anonymous: change freeze' })
    expect(wf.status?.phase).toBe('Failed')
    expect(await jobsOf('hotfix')).toEqual([])
    // Cancelling a finished run is refused; a rerun starts it again, waiting for a fresh decision.
    expect((await post(`/api/cancel/${NS}/hotfix`)).status).toBe(409)
    expect((await post(`/api/rerun/${NS}/hotfix`)).status).toBe(200)
    const rerun = await read('hotfix')
    expect(Object.keys(rerun.metadata.annotations ?? {}).filter((k) => k.includes('ship'))).toEqual([])
    expect((await deliver(engine, RESOURCE_UPDATE, rerun)).status).toBe(202)
    const again = await read('hotfix')
    expect(again.status?.runId).not.toBe(wf.status?.runId)
    expect(again.status?.stepStatuses?.[0]).toMatchObject({ phase: 'Pending', error: expect.stringContaining('Waiting for human approval') })
  })

  it("the console's local admin, named by Impersonate-User, is who the decision, the Event and the engine's message name", async () => {
    await create('canary')
    const res = await control.request(`/api/deny/${NS}/canary/ship`, {
      method: 'POST', headers: { 'content-type': 'application/json', 'impersonate-user': 'kinetic-local-admin', 'impersonate-group': 'system:masters' },
      body: JSON.stringify({ reason: 'not today' }),
    })
    expect(await res.json()).toMatchObject({ status: 'denied', user: 'kinetic-local-admin' })
    expect(JSON.parse((await read('canary')).metadata.annotations?.['kinetic.dev/decision-ship'] ?? '{}')).toMatchObject({ verdict: 'denied', user: 'kinetic-local-admin' })
    expect((await kube.listEvents(NS, { kind: 'Workflow', name: 'canary' })).map((e) => e.message)).toContain('kinetic-local-admin denied step ship: not today')
    expect((await deliver(engine, RESOURCE_UPDATE, await read('canary'))).status).toBe(202)
    expect((await read('canary')).status?.stepStatuses?.[0]).toMatchObject({ phase: 'Failed', error: 'Denied by kinetic-local-admin: not today' })
  })

  it('a manual run of a template is created and accepted by the CRD', async () => {
    await custom.createNamespacedCustomObject({ ...WORKFLOWS, body: {
      apiVersion: 'purko.io/v1alpha1', kind: 'Workflow', metadata: { name: 'nightly', annotations: { 'purko.io/template': 'true' } },
      spec: { parameters: { env: 'dev' }, steps: [{ name: 'ship', agentRef: { name: 'gatekeeper' } }] },
    } })
    const res = await post(`/api/run/${NS}/nightly`, { parameters: { env: 'prod' } })
    expect(res.status).toBe(201)
    const { run } = await res.json() as { run: string }
    const created = await read(run)
    expect(created.spec.parameters).toEqual({ env: 'prod' })
    expect(created.metadata.annotations).toMatchObject({ 'purko.io/trigger-type': 'manual', 'purko.io/trigger-source': 'anonymous', 'purko.io/workflow-template': 'nightly' })
  })
})
