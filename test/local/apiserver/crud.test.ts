import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { failure, startCluster, type TestCluster } from './fixtures.js'

let c: TestCluster
beforeAll(async () => {
  c = await startCluster()
})
afterAll(() => c.server.close())

const cm = (name: string, labels: Record<string, string> = {}, namespace = 'default') => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace, labels },
  data: { k: name },
})

describe('CRUD through client-node', () => {
  it('creates an object with uid, creationTimestamp and a string resourceVersion, and no generation for a ConfigMap', async () => {
    const created = await c.core.createNamespacedConfigMap({ namespace: 'default', body: cm('crud-a') })
    expect(created.metadata?.uid).toMatch(/^[0-9a-f-]{36}$/)
    expect(created.metadata?.creationTimestamp).toBeInstanceOf(Date)
    // Like the real server: only kinds with a tracked spec (Jobs, Deployments, custom resources, ...) carry a generation.
    expect(created.metadata?.generation).toBeUndefined()
    expect(created.metadata?.resourceVersion).toMatch(/^\d+$/)
    const read = await c.core.readNamespacedConfigMap({ namespace: 'default', name: 'crud-a' })
    expect(read.data).toEqual({ k: 'crud-a' })
  })

  it('answers 404 NotFound with the real message for a missing object', async () => {
    const { code, status } = await failure(c.core.readNamespacedConfigMap({ namespace: 'default', name: 'missing' }))
    expect(code).toBe(404)
    expect(status).toMatchObject({ kind: 'Status', status: 'Failure', reason: 'NotFound', message: 'configmaps "missing" not found' })
  })

  it('answers 409 AlreadyExists when the name is taken', async () => {
    await c.core.createNamespacedConfigMap({ namespace: 'default', body: cm('crud-dup') })
    const { code, status } = await failure(c.core.createNamespacedConfigMap({ namespace: 'default', body: cm('crud-dup') }))
    expect(code).toBe(409)
    expect(status.reason).toBe('AlreadyExists')
    expect(status.message).toBe('configmaps "crud-dup" already exists')
  })

  it('answers 409 Conflict for an update carrying a stale resourceVersion', async () => {
    const first = await c.core.createNamespacedConfigMap({ namespace: 'default', body: cm('crud-stale') })
    await c.core.replaceNamespacedConfigMap({ namespace: 'default', name: 'crud-stale', body: { ...first, data: { k: 'v2' } } })
    const { code, status } = await failure(
      c.core.replaceNamespacedConfigMap({ namespace: 'default', name: 'crud-stale', body: { ...first, data: { k: 'v3' } } }),
    )
    expect(code).toBe(409)
    expect(status.reason).toBe('Conflict')
    expect(status.message).toBe(
      'Operation cannot be fulfilled on configmaps "crud-stale": the object has been modified; please apply your changes to the latest version and try again',
    )
  })

  it('does not bump resourceVersion for an update that changes nothing', async () => {
    const first = await c.core.createNamespacedConfigMap({ namespace: 'default', body: cm('crud-noop') })
    const again = await c.core.replaceNamespacedConfigMap({ namespace: 'default', name: 'crud-noop', body: first })
    expect(again.metadata?.resourceVersion).toBe(first.metadata?.resourceVersion)
  })

  it('names objects from generateName', async () => {
    const created = await c.core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { generateName: 'gen-' }, data: {} } })
    expect(created.metadata?.name).toMatch(/^gen-[a-z0-9]{5}$/)
  })

  it('rejects an invalid name with 422 and a field cause', async () => {
    const { code, status } = await failure(c.core.createNamespacedConfigMap({ namespace: 'default', body: cm('Not_Valid') }))
    expect(code).toBe(422)
    expect(status.reason).toBe('Invalid')
    expect(status.details?.causes?.[0]).toMatchObject({ field: 'metadata.name', reason: 'FieldValueInvalid' })
    expect(status.message).toMatch(/^ConfigMap "Not_Valid" is invalid: metadata.name: Invalid value: "Not_Valid": a lowercase RFC 1123 subdomain/)
  })

  it('creates namespaces on first use', async () => {
    await c.core.createNamespacedConfigMap({ namespace: 'team-new', body: cm('x', {}, 'team-new') })
    const ns = await c.core.readNamespace({ name: 'team-new' })
    expect(ns.status?.phase).toBe('Active')
  })

  it('starts with the namespaces Kinetic uses', async () => {
    const names = (await c.core.listNamespace()).items.map((n) => n.metadata?.name)
    expect(names).toEqual(expect.arrayContaining(['default', 'kube-system', 'ai-agents', 'purko-system']))
  })

  it('deletes objects', async () => {
    await c.core.createNamespacedConfigMap({ namespace: 'default', body: cm('crud-del') })
    await c.core.deleteNamespacedConfigMap({ namespace: 'default', name: 'crud-del' })
    expect((await failure(c.core.readNamespacedConfigMap({ namespace: 'default', name: 'crud-del' }))).code).toBe(404)
  })
})

describe('list selectors', () => {
  beforeAll(async () => {
    const ns = 'selectors'
    await c.core.createNamespacedConfigMap({ namespace: ns, body: cm('s-red', { color: 'red', tier: 'web' }, ns) })
    await c.core.createNamespacedConfigMap({ namespace: ns, body: cm('s-blue', { color: 'blue', tier: 'db' }, ns) })
    await c.core.createNamespacedConfigMap({ namespace: ns, body: cm('s-plain', {}, ns) })
    await c.core.createNamespacedConfigMap({ namespace: 'selectors-2', body: cm('s-green', { color: 'green' }, 'selectors-2') })
  })

  const names = async (labelSelector?: string, fieldSelector?: string) =>
    (await c.core.listNamespacedConfigMap({ namespace: 'selectors', labelSelector, fieldSelector })).items.map((i) => i.metadata?.name)

  it.each([
    ['color=red', ['s-red']],
    ['color==red', ['s-red']],
    ['color!=red', ['s-blue', 's-plain']],
    ['color in (red,blue)', ['s-blue', 's-red']],
    ['color notin (red)', ['s-blue', 's-plain']],
    ['color', ['s-blue', 's-red']],
    ['!color', ['s-plain']],
    ['color in (red,blue),tier=db', ['s-blue']],
  ])('filters by the label selector %s', async (selector, expected) => {
    expect(await names(selector)).toEqual(expected)
  })

  it('filters by metadata.name and metadata.namespace field selectors', async () => {
    expect(await names(undefined, 'metadata.name=s-blue')).toEqual(['s-blue'])
    expect(await names(undefined, 'metadata.namespace=selectors,metadata.name!=s-blue')).toEqual(['s-plain', 's-red'])
  })

  it('lists across all namespaces', async () => {
    const all = await c.core.listConfigMapForAllNamespaces({ labelSelector: 'color' })
    expect(all.items.map((i) => `${i.metadata?.namespace}/${i.metadata?.name}`)).toEqual(['selectors-2/s-green', 'selectors/s-blue', 'selectors/s-red'])
  })

  it('pages with limit and continue', async () => {
    const first = await c.core.listNamespacedConfigMap({ namespace: 'selectors', limit: 2 })
    expect(first.items).toHaveLength(2)
    expect(first.metadata?._continue).toBeTruthy()
    const rest = await c.core.listNamespacedConfigMap({ namespace: 'selectors', limit: 2, _continue: first.metadata?._continue })
    expect(rest.items.map((i) => i.metadata?.name)).toEqual(['s-red'])
    expect(rest.metadata?._continue).toBeFalsy()
  })

  it('deletes a collection by label selector', async () => {
    const ns = 'collection'
    await c.core.createNamespacedConfigMap({ namespace: ns, body: cm('gone-1', { batch: 'x' }, ns) })
    await c.core.createNamespacedConfigMap({ namespace: ns, body: cm('gone-2', { batch: 'x' }, ns) })
    await c.core.createNamespacedConfigMap({ namespace: ns, body: cm('stays', { batch: 'y' }, ns) })
    await c.core.deleteCollectionNamespacedConfigMap({ namespace: ns, labelSelector: 'batch=x' })
    expect((await c.core.listNamespacedConfigMap({ namespace: ns })).items.map((i) => i.metadata?.name)).toEqual(['stays'])
  })

  it('rejects a malformed selector with 400', async () => {
    const { code, status } = await failure(c.core.listNamespacedConfigMap({ namespace: 'selectors', labelSelector: 'a in (b' }))
    expect(code).toBe(400)
    expect(status.reason).toBe('BadRequest')
  })

  it.each([
    ['app=a b', "found 'b', expected: ',' or 'end of string'"],
    ['app in t1', "unable to parse requirement: found 't1' expected: '('"],
    ['-bad=x', 'unable to parse requirement: <nil>: Invalid value: "-bad": name part must consist of alphanumeric characters, \'-\', \'_\' or \'.\', and must start and end with an alphanumeric character (e.g. \'MyName\',  or \'my.name\',  or \'123-abc\', regex used for validation is \'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]\')'],
  ])('refuses the label selector %j with the real server\'s words', async (labelSelector, message) => {
    const { code, status } = await failure(c.core.listNamespacedConfigMap({ namespace: 'selectors', labelSelector }))
    expect(code).toBe(400)
    expect(status.message).toBe(message)
  })

  it('selects with the gt and lt operators', async () => {
    await c.core.createNamespacedConfigMap({ namespace: 'numbers', body: cm('n7', { n: '7' }, 'numbers') })
    await c.core.createNamespacedConfigMap({ namespace: 'numbers', body: cm('n3', { n: '3' }, 'numbers') })
    const list = async (labelSelector: string) => (await c.core.listNamespacedConfigMap({ namespace: 'numbers', labelSelector })).items.map((i) => i.metadata?.name)
    expect(await list('n>5')).toEqual(['n7'])
    expect(await list('n<5')).toEqual(['n3'])
  })

  it.each([
    ['a ConfigMap', () => c.core.listNamespacedConfigMap({ namespace: 'selectors', fieldSelector: 'data.k=x' }), '"data.k" is not a known field selector: only "metadata.name", "metadata.namespace"'],
    ['a Pod', () => c.core.listNamespacedPod({ namespace: 'selectors', fieldSelector: 'spec.bogus=x' }), 'field label not supported: spec.bogus'],
    ['a Job', () => c.batch.listNamespacedJob({ namespace: 'selectors', fieldSelector: 'spec.bogus=x' }), 'field label "spec.bogus" not supported for Job'],
  ])('refuses a field selector %s does not support, as the real server words it', async (_, call, message) => {
    const { code, status } = await failure(call())
    expect(code).toBe(400)
    expect(status.message).toBe(message)
  })

  it('filters pods by status.phase', async () => {
    await c.core.createNamespacedPod({ namespace: 'selectors', body: { metadata: { name: 'p1' }, spec: { containers: [{ name: 'c', image: 'i' }] } } })
    await c.core.createNamespacedPod({ namespace: 'selectors', body: { metadata: { name: 'p2' }, spec: { containers: [{ name: 'c', image: 'i' }] } } })
    await c.core.patchNamespacedPodStatus({ namespace: 'selectors', name: 'p2', body: [{ op: 'replace', path: '/status/phase', value: 'Running' }] })
    const running = await c.core.listNamespacedPod({ namespace: 'selectors', fieldSelector: 'status.phase=Running' })
    expect(running.items.map((p) => p.metadata?.name)).toEqual(['p2'])
  })
})
