import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { loadYaml, PatchStrategy, setHeaderOptions, type V1CustomResourceDefinition } from '@kubernetes/client-node'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { aWidget, failure, startCluster, widgetCrd, widgets, type TestCluster } from './fixtures.js'
import { referenceDir } from '../../support/reference.js'

let c: TestCluster
beforeAll(async () => {
  c = await startCluster()
  await c.ext.createCustomResourceDefinition({ body: widgetCrd() })
})
afterAll(() => c.server.close())

const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch)
type Obj = { metadata: { name?: string }; spec: Record<string, unknown> }

describe('CustomResourceDefinitions', () => {
  it('serve their kind at once, in discovery and over REST, and report Established', async () => {
    const discovery = (await (await fetch(`${c.server.url}/apis/example.dev/v1`)).json()) as { resources: { name: string; kind: string; shortNames?: string[] }[] }
    expect(discovery.resources.map((r) => r.name)).toEqual(['widgets', 'widgets/status'])
    expect(discovery.resources[0]).toMatchObject({ kind: 'Widget', shortNames: ['wd'] })
    // In kube-apiserver's order for custom resources, which `kubectl api-resources -o wide` prints.
    expect((discovery.resources[0] as { verbs?: string[] }).verbs).toEqual(['delete', 'deletecollection', 'get', 'list', 'patch', 'create', 'update', 'watch'])
    const groups = (await (await fetch(`${c.server.url}/apis`)).json()) as { groups: { name: string }[] }
    expect(groups.groups.map((g) => g.name)).toContain('example.dev')
    const crd = await c.ext.readCustomResourceDefinition({ name: 'widgets.example.dev' })
    expect(crd.status?.conditions?.find((x) => x.type === 'Established')?.status).toBe('True')
  })

  it('applies schema defaults, including inside list items', async () => {
    const w = (await c.custom.createNamespacedCustomObject({ ...widgets, namespace: 'default', body: aWidget('defaults', { size: 1, parts: [{ name: 'p' }] }) })) as Obj
    expect(w.spec).toEqual({ size: 1, color: 'red', parts: [{ name: 'p', count: 1 }] })
  })

  it('keeps the generation when an update only removes what defaulting puts back', async () => {
    await c.custom.createNamespacedCustomObject({ ...widgets, namespace: 'default', body: aWidget('same-gen', { size: 1 }) })
    const w = (await c.custom.patchNamespacedCustomObject({ ...widgets, namespace: 'default', name: 'same-gen', body: { spec: { color: null } } }, merge)) as Obj & { metadata: { generation?: number } }
    expect(w.spec.color).toBe('red')
    expect(w.metadata.generation).toBe(1)
  })

  it('prunes unknown fields but keeps those under x-kubernetes-preserve-unknown-fields', async () => {
    const w = (await c.custom.createNamespacedCustomObject({
      ...widgets,
      namespace: 'default',
      body: aWidget('pruned', { size: 1, bogus: true, extra: { anything: { goes: 1 } } }),
    })) as Obj
    expect(w.spec).toEqual({ size: 1, color: 'red', extra: { anything: { goes: 1 } } })
  })

  it('rejects a missing required field with 422 and the real message', async () => {
    const { code, status } = await failure(c.custom.createNamespacedCustomObject({ ...widgets, namespace: 'default', body: aWidget('nosize', { color: 'red' }) }))
    expect(code).toBe(422)
    expect(status).toMatchObject({ kind: 'Status', status: 'Failure', reason: 'Invalid' })
    expect(status.message).toBe(
      'Widget.example.dev "nosize" is invalid: [spec.size: Required value, <nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation]',
    )
    expect(status.details).toMatchObject({ name: 'nosize', group: 'example.dev', kind: 'Widget' })
    expect(status.details?.causes?.[0]).toEqual({ field: 'spec.size', reason: 'FieldValueRequired', message: 'Required value' })
  })

  it('lists every failure as a field cause', async () => {
    const { status } = await failure(c.custom.createNamespacedCustomObject({
      ...widgets,
      namespace: 'default',
      body: aWidget('many', { size: 0, color: 'pink', parts: [{ name: 'a' }, { name: 'a' }, { count: 2 }] }),
    }))
    expect(status.details?.causes).toEqual([
      { field: 'spec.size', reason: 'FieldValueInvalid', message: 'Invalid value: 0: spec.size in body should be greater than or equal to 1' },
      { field: 'spec.color', reason: 'FieldValueNotSupported', message: 'Unsupported value: "pink": supported values: "red", "green", "blue"' },
      { field: 'spec.parts[2].name', reason: 'FieldValueRequired', message: 'Required value' },
      { field: 'spec.parts[1]', reason: 'FieldValueDuplicate', message: 'Duplicate value: {"name":"a"}' },
      expect.objectContaining({ field: '<nil>', message: expect.stringContaining('some validation rules were not checked') }),
    ])
    expect(status.message).toMatch(/^Widget\.example\.dev "many" is invalid: \[spec\.size: Invalid value: 0: .*, spec\.color: Unsupported value: "pink": .*\]$/)
  })

  it('enforces x-kubernetes-validations CEL rules with their message and fieldPath', async () => {
    const { code, status } = await failure(c.custom.createNamespacedCustomObject({ ...widgets, namespace: 'default', body: aWidget('huge', { size: 11, color: 'red' }) }))
    expect(code).toBe(422)
    expect(status.details?.causes).toEqual([{ field: 'spec.size', reason: 'FieldValueInvalid', message: 'Invalid value: "object": only blue widgets may be larger than 10' }])
    expect(status.message).toBe('Widget.example.dev "huge" is invalid: spec.size: Invalid value: "object": only blue widgets may be larger than 10')
    await expect(c.custom.createNamespacedCustomObject({ ...widgets, namespace: 'default', body: aWidget('huge', { size: 11, color: 'blue' }) })).resolves.toBeTruthy()
  })

  it('evaluates transition rules against oldSelf on update only', async () => {
    await c.custom.createNamespacedCustomObject({ ...widgets, namespace: 'default', body: aWidget('moded', { size: 1, mode: 'fast' }) })
    const { code, status } = await failure(c.custom.patchNamespacedCustomObject({ ...widgets, namespace: 'default', name: 'moded', body: { spec: { mode: 'slow' } } }, merge))
    expect(code).toBe(422)
    expect(status.details?.causes?.[0]).toMatchObject({ field: 'spec.mode', message: 'Invalid value: "string": mode is immutable' })
  })

  it('turns pruned unknown fields into a 400 under fieldValidation=Strict and a Warning header otherwise', async () => {
    const post = (name: string, fieldValidation: string) =>
      fetch(`${c.server.url}/apis/example.dev/v1/namespaces/default/widgets?fieldValidation=${fieldValidation}`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify(aWidget(name, { size: 1, sise: 2 })),
      })
    const strict = await post('strict', 'Strict')
    expect(strict.status).toBe(400)
    expect(((await strict.json()) as { message: string }).message).toBe(
      'Widget in version "v1" cannot be handled as a Widget: strict decoding error: unknown field "spec.sise"',
    )
    const warned = await post('warned', 'Warn')
    expect(warned.status).toBe(201)
    expect(warned.headers.get('warning')).toBe('299 - "unknown field \\"spec.sise\\""')
  })

  it('rejects a type mismatch', async () => {
    const { status } = await failure(c.custom.createNamespacedCustomObject({ ...widgets, namespace: 'default', body: aWidget('typed', { size: 'big' }) }))
    expect(status.details?.causes?.[0]).toMatchObject({ field: 'spec.size', reason: 'FieldValueTypeInvalid', message: 'Invalid value: "string": spec.size in body must be of type integer: "string"' })
  })

  it('refuses a CRD whose CEL rule does not compile', async () => {
    const bad = widgetCrd()
    bad.metadata = { name: 'gadgets.example.dev' }
    bad.spec.names = { plural: 'gadgets', kind: 'Gadget' }
    const schema = bad.spec.versions[0]?.schema?.openAPIV3Schema
    if (!schema?.properties?.spec) throw new Error('fixture changed')
    schema.properties.spec.x_kubernetes_validations = [{ rule: 'self.size >' }]
    const { code, status } = await failure(c.ext.createCustomResourceDefinition({ body: bad }))
    expect(code).toBe(422)
    expect(status.details?.causes?.[0]?.field).toBe('spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule')
    expect((await failure(c.custom.listNamespacedCustomObject({ group: 'example.dev', version: 'v1', plural: 'gadgets', namespace: 'default' }))).code).toBe(404)
  })

  it('answers kubectl-style Table requests with the CRD printer columns', async () => {
    await c.custom.createNamespacedCustomObject({ ...widgets, namespace: 'tables', body: aWidget('t1', { size: 3 }, 'tables') })
    await c.custom.patchNamespacedCustomObjectStatus(
      { ...widgets, namespace: 'tables', name: 't1', body: { status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] } } },
      merge,
    )
    const res = await fetch(`${c.server.url}/apis/example.dev/v1/namespaces/tables/widgets`, {
      headers: { Accept: 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json' },
    })
    const table = (await res.json()) as { kind: string; columnDefinitions: { name: string }[]; rows: { cells: unknown[]; object: { kind: string; metadata: { name: string } } }[] }
    expect(table.kind).toBe('Table')
    expect(table.columnDefinitions.map((d) => d.name)).toEqual(['Name', 'Phase', 'Size', 'Ready'])
    expect(table.rows[0]?.cells).toEqual(['t1', 'Running', 3, 'True'])
    expect(table.rows[0]?.object).toMatchObject({ kind: 'PartialObjectMetadata', metadata: { name: 't1' } })
  })

  it('removes the kind and its objects when the CRD is deleted', async () => {
    const temp: V1CustomResourceDefinition = widgetCrd()
    temp.metadata = { name: 'sprockets.example.dev' }
    temp.spec.names = { plural: 'sprockets', kind: 'Sprocket' }
    await c.ext.createCustomResourceDefinition({ body: temp })
    const sprockets = { group: 'example.dev', version: 'v1', plural: 'sprockets' }
    await c.custom.createNamespacedCustomObject({ ...sprockets, namespace: 'default', body: { apiVersion: 'example.dev/v1', kind: 'Sprocket', metadata: { name: 's' }, spec: { size: 1 } } })
    await c.ext.deleteCustomResourceDefinition({ name: 'sprockets.example.dev' })
    expect((await failure(c.custom.listNamespacedCustomObject({ ...sprockets, namespace: 'default' }))).code).toBe(404)
    expect(c.server.store.registry.byKey('sprockets.example.dev')).toBeUndefined()
  })
})

describe('the CRDs Kinetic depends on', () => {
  const dirs = [join(referenceDir(), 'knative', 'crds'), join(referenceDir(), 'purko', 'crds')]
  const files = dirs.flatMap((d) => readdirSync(d).filter((f) => f.endsWith('.yaml') && !f.startsWith('kustomization')).map((f) => join(d, f)))

  it('are all accepted, and their kinds become creatable', async () => {
    for (const file of files) {
      const body = loadYaml<V1CustomResourceDefinition>(readFileSync(file, 'utf8'))
      await c.ext.createCustomResourceDefinition({ body })
    }
    const trigger = await c.custom.createNamespacedCustomObject({
      group: 'eventing.knative.dev',
      version: 'v1',
      plural: 'triggers',
      namespace: 'ai-agents',
      body: {
        apiVersion: 'eventing.knative.dev/v1',
        kind: 'Trigger',
        metadata: { name: 'workflow-changed' },
        spec: { broker: 'default', filter: { attributes: { type: 'dev.knative.apiserver.resource.update' } }, subscriber: { ref: { apiVersion: 'serving.knative.dev/v1', kind: 'Service', name: 'workflow-changed' } } },
      },
    })
    expect(trigger).toMatchObject({ spec: { broker: 'default' } })
    const table = (await (await fetch(`${c.server.url}/apis/eventing.knative.dev/v1/namespaces/ai-agents/triggers`, { headers: { Accept: 'application/json;as=Table;g=meta.k8s.io;v=v1' } })).json()) as { columnDefinitions: { name: string }[] }
    expect(table.columnDefinitions.map((d) => d.name)).toEqual(['Name', 'Broker', 'Subscriber_URI', 'Age', 'Ready', 'Reason'])
  })
})
