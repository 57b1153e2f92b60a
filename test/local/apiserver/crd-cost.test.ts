import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startApiServer, type ApiServer, type Status } from '../../../local/apiserver/index.js'
import { CEL_COST_CASES, celCostCrd } from '../../cluster/cel-cost-corpus.js'

let server: ApiServer
beforeAll(async () => {
  server = await startApiServer()
})
afterAll(() => server.close())

async function createCrd(body: unknown, dryRun = true): Promise<{ code: number; status: Status }> {
  const res = await fetch(`${server.url}/apis/apiextensions.k8s.io/v1/customresourcedefinitions${dryRun ? '?dryRun=All' : ''}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  })
  return { code: res.status, status: (await res.json()) as Status }
}

const line = (c: { field?: string; message?: string }) => `${c.field}: ${c.message}`

describe('the embedded API server checks the CEL cost budget of a CRD as kube-apiserver does', () => {
  it.each(CEL_COST_CASES.map((c, i) => [c.name, c, i] as const))('%s', async (_, c, i) => {
    const crd = celCostCrd(c, i)
    const { code, status } = await createCrd(crd)
    if (c.expected.length === 0) {
      expect(code).toBe(201)
      return
    }
    expect(code).toBe(422)
    expect(status.reason).toBe('Invalid')
    expect(status.details).toMatchObject({ name: crd.metadata.name, group: 'apiextensions.k8s.io', kind: 'CustomResourceDefinition' })
    const causes = status.details?.causes ?? []
    // The real server lists properties in no fixed order, so the recorded causes are compared as a set.
    expect(causes.map(line).sort()).toEqual(c.expected.map(line).sort())
    const listed = causes.map(line)
    expect(status.message).toBe(`CustomResourceDefinition.apiextensions.k8s.io "${crd.metadata.name}" is invalid: ${listed.length === 1 ? listed[0] : `[${listed.join(', ')}]`}`)
  })

  it('does not install a kind whose CRD is over budget', async () => {
    const costly = CEL_COST_CASES.findIndex((c) => c.expected.length > 0)
    const crd = celCostCrd(CEL_COST_CASES[costly]!, costly)
    expect((await createCrd(crd, false)).code).toBe(422)
    const res = await fetch(`${server.url}/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd.metadata.name}`)
    expect(res.status).toBe(404)
    expect((await fetch(`${server.url}/apis/cel-cost.kinetic.dev/v1/namespaces/default/celcosts${costly}`)).status).toBe(404)
  })

  it('refuses an update that makes an installed CRD over budget, and keeps the old schema', async () => {
    const cheap = CEL_COST_CASES.findIndex((c) => c.name.startsWith('the same Agent rules are accepted'))
    const costly = CEL_COST_CASES.findIndex((c) => c.name.startsWith('the first Agent model and memory rules are refused'))
    const crd = celCostCrd(CEL_COST_CASES[cheap]!, 900)
    expect((await createCrd(crd, false)).code).toBe(201)
    const url = `${server.url}/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd.metadata.name}`
    const live = (await (await fetch(url)).json()) as { metadata: { resourceVersion: string } }
    const update = { ...celCostCrd(CEL_COST_CASES[costly]!, 900), metadata: { name: crd.metadata.name, resourceVersion: live.metadata.resourceVersion } }
    const res = await fetch(url, { method: 'PUT', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(update) })
    expect(res.status).toBe(422)
    const status = (await res.json()) as Status
    expect(status.details?.causes?.map(line).sort()).toEqual(CEL_COST_CASES[costly]!.expected.map(line).sort())
    const kept = (await (await fetch(url)).json()) as { spec: unknown }
    // The stored spec is the created one plus the defaults the server fills (conversion, singular, listKind).
    expect(kept.spec).toMatchObject(crd.spec)
  })

  it('accepts and runs a rule written with CEL optional syntax, as kube-apiserver does', async () => {
    const i = CEL_COST_CASES.findIndex((c) => c.name === 'a rule with optional field selection is cheap')
    const crd = celCostCrd(CEL_COST_CASES[i]!, 901)
    expect((await createCrd(crd, false)).code).toBe(201)
    const create = (spec: object) => fetch(`${server.url}/apis/cel-cost.kinetic.dev/v1/namespaces/default/celcosts901`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ apiVersion: 'cel-cost.kinetic.dev/v1', kind: 'CelCost901', metadata: { generateName: 'o-' }, spec }),
    })
    expect((await create({})).status).toBe(201)
    expect((await create({ a: 'fine' })).status).toBe(201)
    expect((await create({ a: 'forbidden' })).status).toBe(422)
  })
})
