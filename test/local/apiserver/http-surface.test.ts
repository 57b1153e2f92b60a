import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startCluster, type TestCluster } from './fixtures.js'

let c: TestCluster
beforeAll(async () => {
  c = await startCluster()
})
afterAll(() => c.server.close())

const TABLE = 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json'
const get = async (path: string, accept = 'application/json') => {
  const res = await fetch(`${c.server.url}${path}`, { headers: { Accept: accept } })
  return { code: res.status, body: (await res.json()) as Record<string, unknown> }
}

describe('discovery and server documents', () => {
  it('lists the core resources with verbs, short names and subresources', async () => {
    const { body } = await get('/api/v1')
    const byName = new Map((body.resources as { name: string; verbs: string[]; shortNames?: string[]; namespaced: boolean }[]).map((r) => [r.name, r]))
    expect(byName.get('configmaps')).toMatchObject({ namespaced: true, shortNames: ['cm'], verbs: expect.arrayContaining(['create', 'get', 'list', 'watch', 'patch', 'update', 'delete']) })
    expect(byName.get('namespaces')?.namespaced).toBe(false)
    expect(byName.get('pods/log')?.verbs).toEqual(['get'])
    expect(byName.get('pods/status')?.verbs).toEqual(['get', 'patch', 'update'])
  })

  it('lists the built-in groups with their preferred versions', async () => {
    const { body } = await get('/apis')
    const names = (body.groups as { name: string }[]).map((g) => g.name)
    expect(names).toEqual(expect.arrayContaining(['apps', 'batch', 'rbac.authorization.k8s.io', 'apiextensions.k8s.io']))
    expect((await get('/apis/batch')).body).toMatchObject({ kind: 'APIGroup', preferredVersion: { groupVersion: 'batch/v1' } })
  })

  it('reports a server version', async () => {
    expect((await get('/version')).body).toMatchObject({ major: '1', gitVersion: expect.stringMatching(/^v1\./) })
  })

  it('publishes OpenAPI v3 documents that declare fieldValidation on each PATCH', async () => {
    const index = (await get('/openapi/v3')).body as { paths: Record<string, { serverRelativeURL: string }> }
    const batch = index.paths['apis/batch/v1']?.serverRelativeURL as string
    const doc = (await get(batch)).body as { paths: Record<string, { patch?: { 'x-kubernetes-group-version-kind': object; parameters: { name: string }[] } }> }
    const jobPatch = Object.values(doc.paths).find((p) => (p.patch?.['x-kubernetes-group-version-kind'] as { kind?: string } | undefined)?.kind === 'Job')?.patch
    expect(jobPatch?.parameters.map((p) => p.name)).toContain('fieldValidation')
  })
})

describe('errors', () => {
  it('answers an unknown resource with a 404 Status', async () => {
    const { code, body } = await get('/apis/nope.dev/v1/namespaces/default/things')
    expect(code).toBe(404)
    expect(body).toMatchObject({ kind: 'Status', reason: 'NotFound' })
  })

  it('answers 405 for a verb the path does not support', async () => {
    const res = await fetch(`${c.server.url}/api/v1/namespaces/default/configmaps`, { method: 'PUT', body: '{}' })
    expect(res.status).toBe(405)
    expect(await res.json()).toMatchObject({ kind: 'Status', reason: 'MethodNotAllowed' })
  })

  it('answers 400 for a body that is not JSON', async () => {
    const res = await fetch(`${c.server.url}/api/v1/namespaces/default/configmaps`, { method: 'POST', body: '{nope', headers: { 'Content-Type': 'application/json' } })
    expect(res.status).toBe(400)
    expect(await res.json()).toMatchObject({ kind: 'Status', reason: 'BadRequest' })
  })
})

describe('Table responses for built-in kinds', () => {
  it('shows Job status, completions and age', async () => {
    await c.batch.createNamespacedJob({ namespace: 'default', body: { metadata: { name: 'tj' }, spec: { template: { spec: { restartPolicy: 'Never', containers: [{ name: 'c', image: 'i' }] } } } } })
    await c.batch.patchNamespacedJobStatus({
      namespace: 'default',
      name: 'tj',
      body: [{ op: 'add', path: '/status', value: { succeeded: 1, conditions: [{ type: 'Complete', status: 'True' }] } }],
    })
    const { body } = await get('/apis/batch/v1/namespaces/default/jobs', TABLE)
    // The real server's columns, the wide ones (priority 1) included.
    expect((body.columnDefinitions as { name: string; priority: number }[]).map((d) => `${d.name}${d.priority ? '*' : ''}`))
      .toEqual(['Name', 'Status', 'Completions', 'Duration', 'Age', 'Containers*', 'Images*', 'Selector*'])
    const cells = (body.rows as { cells: unknown[] }[])[0]?.cells ?? []
    expect(cells.slice(0, 3)).toEqual(['tj', 'Complete', '1/1'])
    expect(cells.slice(5, 7)).toEqual(['c', 'i'])
    expect(cells[7]).toMatch(/^batch\.kubernetes\.io\/controller-uid=[0-9a-f-]{36}$/)
  })

  it('shows pod readiness and phase for a single object', async () => {
    await c.core.createNamespacedPod({ namespace: 'default', body: { metadata: { name: 'tp' }, spec: { containers: [{ name: 'c', image: 'i' }] } } })
    const { body } = await get('/api/v1/namespaces/default/pods/tp', TABLE)
    expect((body.rows as { cells: unknown[] }[])[0]?.cells.slice(0, 4)).toEqual(['tp', '0/1', 'Pending', '0'])
  })
})
