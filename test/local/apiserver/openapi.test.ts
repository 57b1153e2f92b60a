import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parseAllDocuments } from 'yaml'
import type { KubeObject } from '../../../local/apiserver/index.js'
import { startCluster, type TestCluster } from './fixtures.js'

// What `kubectl explain` reads: the OpenAPI documents of the embedded server, built from each
// CRD's structural schema. The cluster tier compares them with kube-apiserver's field by field
// (test/cluster/openapi-differential.test.ts); these tests pin what a user of the embedded
// server relies on without a cluster.

let c: TestCluster
const ROOT = join(import.meta.dirname, '../../..')

beforeAll(async () => {
  c = await startCluster()
  for (const file of ['agents.purko.io.yaml', 'workflowrecipes.purko.io.yaml']) {
    for (const doc of parseAllDocuments(readFileSync(join(ROOT, 'crds', file), 'utf8'))) c.server.store.create(doc.toJSON() as KubeObject)
  }
})
afterAll(() => c.server.close())

type Schema = { description?: string; type?: string; properties?: Record<string, Schema>; required?: string[]; allOf?: { $ref: string }[]; $ref?: string; [k: string]: unknown }
const get = async (path: string, accept = 'application/json') => {
  const res = await fetch(`${c.server.url}${path}`, { headers: { Accept: accept } })
  return { status: res.status, type: res.headers.get('content-type'), bytes: Buffer.from(await res.arrayBuffer()) }
}
/** Where a schema declares a default (walking properties, items and additionalProperties). */
function defaultsIn(s: Schema, at = ''): string[] {
  const here = 'default' in s ? [at] : []
  const props = Object.entries(s.properties ?? {}).flatMap(([k, v]) => defaultsIn(v, `${at}.${k}`))
  const items = s.items && typeof s.items === 'object' ? defaultsIn(s.items as Schema, `${at}[]`) : []
  const extra = s.additionalProperties && typeof s.additionalProperties === 'object' ? defaultsIn(s.additionalProperties as Schema, `${at}{}`) : []
  return [...here, ...props, ...items, ...extra]
}
const json = async (path: string) => JSON.parse((await get(path)).bytes.toString('utf8')) as Record<string, any>

describe('OpenAPI v3 for custom resources', () => {
  it('lists the CRD group-version in /openapi/v3 under a hash of its content, which changes with the CRD', async () => {
    const before = (await json('/openapi/v3')).paths['apis/purko.io/v1alpha1'].serverRelativeURL as string
    expect(before).toMatch(/^\/openapi\/v3\/apis\/purko\.io\/v1alpha1\?hash=[0-9A-F]{128}$/)
    expect((await json('/openapi/v3')).paths['apis/purko.io/v1alpha1'].serverRelativeURL).toBe(before)
    const crd = c.server.store.get({ apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition' }, '', 'agents.purko.io') as KubeObject & { spec: any }
    crd.spec.versions[0].schema.openAPIV3Schema.properties.spec.description = 'Changed.'
    c.server.store.update(crd)
    const after = (await json('/openapi/v3')).paths['apis/purko.io/v1alpha1'].serverRelativeURL as string
    expect(after).not.toBe(before)
    expect((await json(after)).components.schemas['io.purko.v1alpha1.Agent'].properties.spec.description).toBe('Changed.')
  })

  it('publishes each kind from its CRD schema, descriptions included, with ObjectMeta, TypeMeta and its group-version-kind', async () => {
    const doc = await json('/openapi/v3/apis/purko.io/v1alpha1')
    const agent = doc.components.schemas['io.purko.v1alpha1.Agent'] as Schema
    expect(agent['x-kubernetes-group-version-kind']).toEqual([{ group: 'purko.io', kind: 'Agent', version: 'v1alpha1' }])
    expect(agent.description).toBe('Agent represents an autonomous AI agent managed within a Kubernetes cluster.')
    const model = agent.properties?.spec?.properties?.model as Schema
    expect(model.required).toEqual(['provider', 'name'])
    expect(model.properties?.name).toEqual({ description: 'The model name.', type: 'string', maxLength: 253 })
    expect(agent.properties?.metadata).toEqual({ description: expect.stringMatching(/^Standard object's metadata\./), allOf: [{ $ref: '#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta' }] })
    expect(agent.properties?.apiVersion?.description).toMatch(/^APIVersion defines the versioned schema/)
    expect(doc.components.schemas['io.purko.v1alpha1.AgentList'].properties.items.items).toEqual({ $ref: '#/components/schemas/io.purko.v1alpha1.Agent' })
    expect(Object.keys(doc.components.schemas['io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta'].properties)).toContain('ownerReferences')
  })

  it('unfolds x-kubernetes-int-or-string into anyOf integer or string', async () => {
    const doc = await json('/openapi/v3/apis/purko.io/v1alpha1')
    const replicas = doc.components.schemas['io.purko.v1alpha1.WorkflowRecipe'].properties.spec.properties.workloads.items.properties.replicas as Schema
    expect(replicas.anyOf).toEqual([{ type: 'integer' }, { type: 'string' }])
    expect(replicas['x-kubernetes-int-or-string']).toBe(true)
  })
})

describe('OpenAPI v2', () => {
  it('serves JSON with each kind as v2 clients read it: no defaults, a root keeping unknown fields left open', async () => {
    const doc = await json('/openapi/v2')
    expect(doc.swagger).toBe('2.0')
    // Agent keeps unknown fields at its root: older kubectl would refuse any field beside the declared ones.
    expect(doc.definitions['io.purko.v1alpha1.Agent']).toEqual({ type: 'object', 'x-kubernetes-group-version-kind': [{ group: 'purko.io', kind: 'Agent', version: 'v1alpha1' }] })
    const recipe = doc.definitions['io.purko.v1alpha1.WorkflowRecipe'] as Schema
    expect(recipe.properties?.metadata).toEqual({ description: expect.any(String), $ref: '#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta' })
    expect(defaultsIn(recipe)).toEqual([])
    expect(defaultsIn((await json('/openapi/v3/apis/purko.io/v1alpha1')).components.schemas['io.purko.v1alpha1.WorkflowRecipe'])).toContain('.spec.deletionPolicy')
    expect(recipe.properties?.spec?.properties?.workloads?.items).toBeDefined()
  })

  it('serves the protobuf form client-go asks for', async () => {
    const res = await get('/openapi/v2', 'application/com.github.proto-openapi.spec.v2@v1.0+protobuf')
    expect(res.status).toBe(200)
    expect(res.type).toBe('application/com.github.proto-openapi.spec.v2.v1.0+protobuf')
    // Document.swagger (field 1) first, then the definitions hold the kinds' model names.
    expect([...res.bytes.subarray(0, 5)]).toEqual([0x0a, 3, ...Buffer.from('2.0')])
    expect(res.bytes.includes(Buffer.from('io.purko.v1alpha1.WorkflowRecipe'))).toBe(true)
    expect(res.bytes.includes(Buffer.from('Desired replicas: an integer 0..1000'))).toBe(true)
  })
})
