// Behaviour the embedded API server took over from kube-apiserver v1.34, found by the
// differential test (test/cluster/differential.test.ts), pinned here so it holds without a
// cluster: field ownership and server-side apply conflicts, decoding of unknown fields, CRD
// schema checks, how values are printed in field errors, and Secrets' stringData.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startApiServer, type ApiServer } from '../../../local/apiserver/index.js'

let server: ApiServer
beforeAll(async () => {
  server = await startApiServer()
  await call('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', crd('gizmos', {
    type: 'object',
    properties: {
      spec: {
        type: 'object',
        properties: {
          size: { type: 'integer' },
          parts: { type: 'array', 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['name'], items: { type: 'object', required: ['name'], properties: { name: { type: 'string' }, count: { type: 'integer' } } } },
        },
      },
    },
  }))
})
afterAll(() => server.close())

type Obj = Record<string, any>
async function call(method: string, path: string, body?: unknown, contentType = 'application/json', agent = 'fidelity-test/1.0'): Promise<{ code: number; body: Obj; warnings: string | null }> {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: { 'Content-Type': contentType, 'User-Agent': agent },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  })
  return { code: res.status, body: (await res.json()) as Obj, warnings: res.headers.get('warning') }
}
function crd(plural: string, schema: Obj): Obj {
  return {
    apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: `${plural}.fidelity.dev` },
    spec: { group: 'fidelity.dev', scope: 'Namespaced', names: { plural, kind: 'Gizmo' }, versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: schema } }] },
  }
}
const gizmos = '/apis/fidelity.dev/v1/namespaces/default/gizmos'
const apply = (manager: string, spec: Obj, extra = '') =>
  call('PATCH', `${gizmos}/g?fieldManager=${manager}${extra}`, { apiVersion: 'fidelity.dev/v1', kind: 'Gizmo', metadata: { name: 'g' }, spec }, 'application/apply-patch+yaml')

describe('field ownership and server-side apply', () => {
  it('records the creator under its User-Agent, owning what it set (and the maps it created)', async () => {
    const { body } = await call('POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: 'owned', labels: { a: '1' } }, data: { k: 'v' } })
    expect(body.metadata.managedFields).toEqual([{
      manager: 'fidelity-test', operation: 'Update', apiVersion: 'v1', time: body.metadata.creationTimestamp, fieldsType: 'FieldsV1',
      fieldsV1: { 'f:data': { '.': {}, 'f:k': {} }, 'f:metadata': { 'f:labels': { '.': {}, 'f:a': {} } } },
    }])
  })

  it('answers 409 naming the other manager and each field, unless forced', async () => {
    expect((await apply('alice', { size: 1, parts: [{ name: 'a', count: 1 }] })).code).toBe(201)
    const refused = await apply('bob', { size: 2, parts: [{ name: 'a', count: 2 }] })
    expect(refused.code).toBe(409)
    expect(refused.body.message).toBe('Apply failed with 2 conflicts: conflicts with "alice":\n- .spec.parts[name="a"].count\n- .spec.size')
    expect(refused.body.details.causes).toContainEqual({ reason: 'FieldManagerConflict', message: 'conflict with "alice"', field: '.spec.size' })
    const forced = await apply('bob', { size: 2, parts: [{ name: 'a', count: 2 }] }, '&force=true')
    expect(forced.code).toBe(200)
    expect(forced.body.metadata.managedFields.map((m: Obj) => m.manager)).toEqual(['alice', 'bob'])
    expect(forced.body.metadata.managedFields[0].fieldsV1).toEqual({ 'f:spec': { 'f:parts': { 'k:{"name":"a"}': { '.': {}, 'f:name': {} } } } })
  })

  it('names an Update manager with its apiVersion in a conflict', async () => {
    await call('PATCH', `${gizmos}/g?fieldManager=dave`, { spec: { size: 3 } }, 'application/merge-patch+json')
    const refused = await apply('alice', { size: 4 })
    expect(refused.body.message).toBe('Apply failed with 1 conflict: conflict with "dave" using fidelity.dev/v1: .spec.size')
  })

  it('refuses an apply without a fieldManager with the real 422', async () => {
    const { code, body } = await call('PATCH', `${gizmos}/g`, { apiVersion: 'fidelity.dev/v1', kind: 'Gizmo', metadata: { name: 'g' } }, 'application/apply-patch+yaml')
    expect(code).toBe(422)
    expect(body.message).toBe('PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch')
  })
})

describe('from client-side to server-side apply (kubectl apply --server-side)', () => {
  const LAST = 'kubectl.kubernetes.io/last-applied-configuration'
  const config = (name: string, spec: Obj) => ({ apiVersion: 'fidelity.dev/v1', kind: 'Gizmo', metadata: { annotations: {}, name, namespace: 'default' }, spec })
  // What `kubectl apply` (client-side) creates: the object and its configuration in the annotation.
  const clientSideApply = (name: string, spec: Obj, lastApplied: Obj = config(name, spec)) =>
    call('POST', `${gizmos}?fieldManager=kubectl-client-side-apply`, { ...config(name, spec), metadata: { name, annotations: { [LAST]: `${JSON.stringify(lastApplied)}\n` } } })
  const applyAs = (manager: string, name: string, spec: Obj) =>
    call('PATCH', `${gizmos}/${name}?fieldManager=${manager}`, { apiVersion: 'fidelity.dev/v1', kind: 'Gizmo', metadata: { name, namespace: 'default' }, spec }, 'application/apply-patch+yaml')

  it('lets manager kubectl take over what client-side apply set, and rewrites the annotation to the applied configuration', async () => {
    expect((await clientSideApply('moving', { size: 1 })).code).toBe(201)
    const { code, body } = await applyAs('kubectl', 'moving', { size: 2 })
    expect(code).toBe(200)
    expect(body.spec.size).toBe(2)
    expect(body.metadata.annotations[LAST]).toBe('{"apiVersion":"fidelity.dev/v1","kind":"Gizmo","metadata":{"name":"moving","namespace":"default"},"spec":{"size":2}}\n')
    expect(body.metadata.managedFields.find((m: Obj) => m.manager === 'kubectl')).toMatchObject({ operation: 'Apply', fieldsV1: { 'f:spec': { 'f:size': {} } } })
  })

  it('still refuses a field whose live value is no longer the one last applied, and any other manager', async () => {
    expect((await clientSideApply('edited', { size: 3 }, config('edited', { size: 1 }))).code).toBe(201)
    const refused = await applyAs('kubectl', 'edited', { size: 2 })
    expect(refused.code).toBe(409)
    expect(refused.body.message).toBe('Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using fidelity.dev/v1: .spec.size')
    expect((await clientSideApply('other', { size: 1 })).code).toBe(201)
    expect((await applyAs('someone', 'other', { size: 2 })).code).toBe(409)
  })

  it('keeps the objects holding what an apply still sets after its manager was given a whole object (kubectl\'s managedFields rewrite)', async () => {
    expect((await clientSideApply('upgraded', { size: 1, parts: [{ name: 'a', count: 1 }] })).code).toBe(201)
    // kubectl rewrites the entries to one Apply entry owning everything, then applies again.
    const managedFields = [{
      manager: 'someone', operation: 'Apply', apiVersion: 'fidelity.dev/v1', fieldsType: 'FieldsV1',
      fieldsV1: { 'f:metadata': { 'f:annotations': { '.': {}, [`f:${LAST}`]: {} } }, 'f:spec': { '.': {}, 'f:size': {}, 'f:parts': { '.': {}, 'k:{"name":"a"}': { '.': {}, 'f:name': {}, 'f:count': {} } } } },
    }]
    expect((await call('PATCH', `${gizmos}/upgraded?fieldManager=someone`, [{ op: 'replace', path: '/metadata/managedFields', value: managedFields }], 'application/json-patch+json')).code).toBe(200)
    const { code, body } = await applyAs('someone', 'upgraded', { size: 1 })
    expect(code).toBe(200)
    expect(body.spec).toEqual({ size: 1 })
    expect(body.metadata.annotations).toBeUndefined()
    expect(body.metadata.managedFields).toEqual([expect.objectContaining({ manager: 'someone', fieldsV1: { 'f:spec': { 'f:size': {} } } })])
  })
})

describe('decoding', () => {
  it('drops unknown ObjectMeta and top-level fields of a built-in kind, with Warning headers', async () => {
    const { body, warnings } = await call('POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: 'typo', bogus: 1 }, dat: { a: 'b' } })
    expect(warnings).toBe('299 - "unknown field \\"metadata.bogus\\"", 299 - "unknown field \\"dat\\""')
    expect(body.metadata.bogus).toBeUndefined()
    expect(body.dat).toBeUndefined()
  })

  it('refuses a Strict merge patch with unknown fields as the real 422 on the field "patch"', async () => {
    const { code, body } = await call('PATCH', `${gizmos}/g?fieldValidation=Strict`, { spec: { junk: 1 } }, 'application/merge-patch+json')
    expect(code).toBe(422)
    expect(body.message).toMatch(/^ "" is invalid: patch: Invalid value: "\{.*\}": strict decoding error: unknown field "spec.junk"$/)
    expect(body.details.causes[0].field).toBe('patch')
  })

  it('refuses a custom resource without kind, as it cannot be decoded without one', async () => {
    const { code, body } = await call('POST', gizmos, { apiVersion: 'fidelity.dev/v1', metadata: { name: 'x' } })
    expect(code).toBe(400)
    expect(body.message).toBe(`the object provided is unrecognized (must be of type Gizmo): Object 'Kind' is missing in '{"apiVersion":"fidelity.dev/v1","metadata":{"name":"x"}}' ({"apiVersion":"fidelity.dev/v1 ...)`)
  })

  it('answers every failed JSON patch operation with the same 422 and empty details', async () => {
    await call('POST', gizmos, { apiVersion: 'fidelity.dev/v1', kind: 'Gizmo', metadata: { name: 'jp' } })
    const { code, body } = await call('PATCH', `${gizmos}/jp`, [{ op: 'remove', path: '/spec/nope' }], 'application/json-patch+json')
    expect(code).toBe(422)
    expect(body).toMatchObject({ reason: 'Invalid', message: 'the server rejected our request due to an error in our request', details: {} })
  })

  it('folds a Secret\'s stringData into data', async () => {
    const { body } = await call('POST', '/api/v1/namespaces/default/secrets', { metadata: { name: 's' }, stringData: { a: '1' }, data: { b: 'Mg==' } })
    expect(body.data).toEqual({ a: 'MQ==', b: 'Mg==' })
    expect(body.stringData).toBeUndefined()
  })
})

describe('CRD schemas', () => {
  it.each([
    ['a property without a type', { type: 'object', properties: { spec: { properties: {} } } }, 'spec.validation.openAPIV3Schema.properties[spec].type', 'Required value: must not be empty for specified object fields'],
    ['an array without items', { type: 'object', properties: { a: { type: 'array' } } }, 'spec.validation.openAPIV3Schema.properties[a].items', 'Required value: must be specified'],
    ['a default below its minimum', { type: 'object', properties: { a: { type: 'integer', minimum: 3, default: 1 } } }, 'spec.validation.openAPIV3Schema.properties[a].default', 'Invalid value: 1:  in body should be greater than or equal to 3'],
  ])('refuses %s before looking at anything else', async (_, schema, field, message) => {
    const { code, body } = await call('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', crd('broken', schema))
    expect(code).toBe(422)
    expect(body.details.causes).toEqual([{ reason: expect.any(String), field, message }])
  })

  it('fills conversion, singular and listKind', async () => {
    const { body } = await call('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', crd('defaulted', { type: 'object' }))
    expect(body.spec.conversion).toEqual({ strategy: 'None' })
    expect(body.spec.names).toMatchObject({ singular: 'gizmo', listKind: 'GizmoList' })
  })
})

// Each message below was recorded from kube-apiserver v1.34 for the same request.
describe('values in field errors, printed as kube-apiserver v1.34 prints them', () => {
  const CRDS = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions'

  it('prints each Go type its way: a float64 in exponent form, a string with %q, objects as HTML-escaped JSON, one byte and one item singular', async () => {
    const schema = {
      type: 'object',
      properties: {
        spec: {
          type: 'object',
          properties: {
            n: { type: 'integer', maximum: 3 },
            f: { type: 'number', maximum: 3 },
            s: { type: 'string', maxLength: 1 },
            one: { type: 'array', maxItems: 1, items: { type: 'string' } },
            p1: { type: 'object', maxProperties: 1, additionalProperties: { type: 'string' } },
            e: { type: 'object', enum: [{ a: 1 }], 'x-kubernetes-preserve-unknown-fields': true },
            en: { type: 'number', enum: [1.5] },
            set: { type: 'array', 'x-kubernetes-list-type': 'set', items: { type: 'object', 'x-kubernetes-map-type': 'atomic', 'x-kubernetes-preserve-unknown-fields': true } },
            q: { type: 'string', pattern: '^a$' },
          },
        },
      },
    }
    expect((await call('POST', CRDS, { ...crd('oddities', schema), spec: { ...crd('oddities', schema).spec, names: { plural: 'oddities', kind: 'Oddity' } } })).code).toBe(201)
    const { code, body } = await call('POST', '/apis/fidelity.dev/v1/namespaces/default/oddities', {
      apiVersion: 'fidelity.dev/v1', kind: 'Oddity', metadata: { name: 'a' },
      spec: { n: 4, f: 1234567.5, s: 'xy', one: ['a', 'b'], p1: { a: '1', b: '2' }, e: { b: '<&>' }, en: 2.5, set: [{ k: 'v', n: 1.5 }, { n: 1.5, k: 'v' }], q: 'tab\there\u0001é\u00a0<' },
    })
    expect(code).toBe(422)
    const byField = Object.fromEntries((body.details.causes as Obj[]).map((c) => [c.field, c.message]))
    expect(byField).toEqual({
      'spec.n': 'Invalid value: 4: spec.n in body should be less than or equal to 3',
      'spec.f': 'Invalid value: 1.2345675e+06: spec.f in body should be less than or equal to 3',
      'spec.en': 'Unsupported value: 2.5: supported values: "1.5"',
      'spec.s': 'Too long: may not be more than 1 byte',
      'spec.one': 'Too many: 2: must have at most 1 item',
      'spec.q': 'Invalid value: "tab\\there\\x01é\\u00a0<": spec.q in body should match \'^a$\'',
      'spec.e': 'Unsupported value: {"b":"\\u003c\\u0026\\u003e"}: supported values: "{\\"a\\":1}"',
      'spec.p1': 'Too many: 2: must have at most 1 item',
      'spec.set[1]': 'Duplicate value: {"k":"v","n":1.5}',
    })
  })

  it('shows a CEL rule that does not compile as the JSON of its ValidationRule', async () => {
    const rules = [
      { rule: 'self.a < 1 &&', message: '<m>', reason: 'FieldValueForbidden', fieldPath: '.a', optionalOldSelf: true },
      { rule: 'true', messageExpression: "'a' +" },
    ]
    const schema = { type: 'object', properties: { spec: { type: 'object', 'x-kubernetes-validations': rules, properties: { a: { type: 'integer' } } } } }
    const { code, body } = await call('POST', CRDS, crd('celrules', schema))
    expect(code).toBe(422)
    const at = 'spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations'
    const head = (field: string) => String((body.details.causes as Obj[]).find((c) => c.field === field)?.message).replace(/Syntax error: [^]*$/, 'Syntax error: ')
    expect(head(`${at}[0].rule`)).toBe('Invalid value: {"Rule":"self.a \\u003c 1 \\u0026\\u0026","Message":"\\u003cm\\u003e","MessageExpression":"","Reason":"FieldValueForbidden","FieldPath":".a","OptionalOldSelf":true}: compilation failed: ERROR: <input>:1:14: Syntax error: ')
    expect(head(`${at}[1].messageExpression`)).toBe('Invalid value: {"Rule":"true","Message":"","MessageExpression":"\'a\' +","Reason":null,"FieldPath":"","OptionalOldSelf":null}: messageExpression compilation failed: ERROR: <input>:1:6: Syntax error: ')
  })

  it('shows the items\' list type (null when unset) for a set of objects that are not atomic', async () => {
    const schema = {
      type: 'object',
      properties: { spec: { type: 'object', properties: { s: { type: 'array', 'x-kubernetes-list-type': 'set', items: { type: 'object', 'x-kubernetes-map-type': 'granular', properties: { a: { type: 'string' } } } } } } },
    }
    const { code, body } = await call('POST', CRDS, crd('sets', schema))
    expect(code).toBe(422)
    expect(body.details.causes).toEqual([{
      reason: 'FieldValueInvalid', field: 'spec.validation.openAPIV3Schema.properties[spec].properties[s].items.x-kubernetes-map-type',
      message: 'Invalid value: null: must be atomic as item of a list with x-kubernetes-list-type=set',
    }])
  })

  it('refuses a new group or plural of a CRD as immutable, showing the new value', async () => {
    const path = `${CRDS}/gizmos.fidelity.dev`
    const group = await call('PATCH', path, { spec: { group: 'q.dev' } }, 'application/merge-patch+json')
    expect(group.body.message).toBe('CustomResourceDefinition.apiextensions.k8s.io "gizmos.fidelity.dev" is invalid: spec.group: Invalid value: "q.dev": field is immutable')
    const plural = await call('PATCH', path, { spec: { names: { plural: 'gizmoz' } } }, 'application/merge-patch+json')
    expect(plural.body.message).toBe('CustomResourceDefinition.apiextensions.k8s.io "gizmos.fidelity.dev" is invalid: spec.names.plural: Invalid value: "gizmoz": field is immutable')
  })

  it('refuses a SelfSubjectAccessReview without attributes with the real 422, naming only the group', async () => {
    const { code, body } = await call('POST', '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews', { apiVersion: 'authorization.k8s.io/v1', kind: 'SelfSubjectAccessReview', spec: {} })
    expect(code).toBe(422)
    expect(body).toEqual({
      kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', reason: 'Invalid', code: 422,
      message: '.authorization.k8s.io "" is invalid: spec.resourceAttributes: Invalid value: null: exactly one of nonResourceAttributes or resourceAttributes must be specified',
      details: {
        group: 'authorization.k8s.io',
        causes: [{ reason: 'FieldValueInvalid', message: 'Invalid value: null: exactly one of nonResourceAttributes or resourceAttributes must be specified', field: 'spec.resourceAttributes' }],
      },
    })
  })
})

describe('object size', () => {
  it('stores an object that fits only without its managedFields without them', async () => {
    const data = Object.fromEntries(Array.from({ length: 30_000 }, (_, i) => [`key-${i}`, 'x'.repeat(36)]))
    const { code, body } = await call('POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: 'big' }, data })
    expect(code).toBe(201)
    expect(body.metadata.managedFields).toBeUndefined()
  })
})
