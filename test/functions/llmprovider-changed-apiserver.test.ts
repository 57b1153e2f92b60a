import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { ApiextensionsV1Api, CoreV1Api, CustomObjectsApi, loadYaml, type V1CustomResourceDefinition } from '@kubernetes/client-node'
import { http, HttpResponse } from 'msw'
import { setupServer } from 'msw/node'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApp } from '../../functions/llmprovider-changed/index.js'
import { startApiServer, type ApiServer } from '../../local/apiserver/index.js'
import { readRuntimeConfig } from '../../shared/config.js'
import { noKineticEvents } from '../../shared/engine/kinetic-events.js'
import { KubeClient } from '../../shared/kube/client.js'
import { silentLogger } from '../../shared/log.js'
import { deliver, PING, RESOURCE_ADD } from '../support/deliver.js'

/**
 * llmprovider-changed through the real client-node adapter against the embedded API server with
 * Kinetic's generated CRDs: the status it writes passes the CRD's schema (bounded model list)
 * and fills purko's printer columns; the provider APIs are msw.
 */

const NS = 'purko-system'
const KEY = 'sk-embedded-0123456789'
let api: ApiServer
let custom: CustomObjectsApi
const mock = setupServer()
const many = Array.from({ length: 150 }, (_, i) => `model-${i}`)

beforeAll(async () => {
  api = await startApiServer()
  const kc = api.kubeConfigObject()
  custom = kc.makeApiClient(CustomObjectsApi)
  const ext = kc.makeApiClient(ApiextensionsV1Api)
  const dir = join(import.meta.dirname, '../../crds')
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.purko.io.yaml'))) {
    await ext.createCustomResourceDefinition({ body: loadYaml<V1CustomResourceDefinition>(readFileSync(join(dir, file), 'utf8')) })
  }
  await kc.makeApiClient(CoreV1Api).createNamespacedSecret({ namespace: NS, body: { metadata: { name: 'gw-key' }, stringData: { 'api-key': KEY } } })
  mock.use(http.get('https://gateway.example/v1/models', ({ request }) => request.headers.get('authorization') === `Bearer ${KEY}`
    ? HttpResponse.json({ data: many.map((id) => ({ id })) })
    : new HttpResponse(null, { status: 401 })))
  mock.listen({ onUnhandledRequest: 'bypass' })
})

afterAll(async () => {
  mock.close()
  await api.close()
})

const get = (name: string) => custom.getNamespacedCustomObject({ group: 'purko.io', version: 'v1alpha1', namespace: NS, plural: 'llmproviders', name }) as Promise<Record<string, any>>

describe('llmprovider-changed on the embedded API server', () => {
  it('writes a status the CRD accepts: 150 models counted, 100 names kept, and kubectl\'s Phase and Models columns filled', async () => {
    await custom.createNamespacedCustomObject({
      group: 'purko.io', version: 'v1alpha1', namespace: NS, plural: 'llmproviders',
      body: { apiVersion: 'purko.io/v1alpha1', kind: 'LLMProvider', metadata: { name: 'gateway' }, spec: { type: 'custom', endpoint: 'https://gateway.example/v1', model: 'model-120', credentials: { secretRef: 'gw-key' } } },
    })
    const deps = { kube: new KubeClient(api.kubeConfigObject()), log: silentLogger, now: () => new Date(), config: readRuntimeConfig({}), events: noKineticEvents }
    const app = createApp(deps)
    expect((await deliver(app, RESOURCE_ADD, await get('gateway'))).status).toBe(202)

    const stored = await get('gateway')
    expect(stored.status).toMatchObject({ phase: 'Ready', availableModels: 150, observedGeneration: 1, consecutiveFailures: 0 })
    expect(stored.status.discoveredModels).toHaveLength(100)
    const table = await fetch(`${api.url}/apis/purko.io/v1alpha1/namespaces/${NS}/llmproviders`, { headers: { accept: 'application/json;as=Table;v=v1;g=meta.k8s.io' } })
    const { columnDefinitions, rows } = await table.json() as { columnDefinitions: Array<{ name: string }>; rows: Array<{ cells: unknown[] }> }
    const cell = (name: string) => rows[0]!.cells[columnDefinitions.findIndex((c) => c.name === name)]
    expect([cell('Phase'), cell('Models')]).toEqual(['Ready', 150])

    // The probe round right after: nothing is due, nothing is written.
    const rv = stored.metadata.resourceVersion
    expect((await deliver(app, PING, {})).status).toBe(202)
    expect((await get('gateway')).metadata.resourceVersion).toBe(rv)
  })
})
