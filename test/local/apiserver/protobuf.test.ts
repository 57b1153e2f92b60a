import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startCluster, type TestCluster } from './fixtures.js'

let c: TestCluster
beforeAll(async () => {
  c = await startCluster()
})
afterAll(() => c.server.close())

// A minimal protobuf writer, enough to build what kubectl's `create` generators send.
const varint = (n: number): Buffer => {
  const out: number[] = []
  do {
    out.push((n & 0x7f) | (n > 0x7f ? 0x80 : 0))
    n >>>= 7
  } while (n > 0)
  return Buffer.from(out)
}
const field = (num: number, payload: Buffer | string): Buffer => {
  const bytes = typeof payload === 'string' ? Buffer.from(payload) : payload
  return Buffer.concat([varint((num << 3) | 2), varint(bytes.length), bytes])
}
const mapEntry = (num: number, key: string, value: string | Buffer) => field(num, Buffer.concat([field(1, key), field(2, value)]))
const envelope = (apiVersion: string, kind: string, raw: Buffer) =>
  Buffer.concat([Buffer.from([0x6b, 0x38, 0x73, 0x00]), field(1, Buffer.concat([field(1, apiVersion), field(2, kind)])), field(2, raw)])

const post = (path: string, body: Buffer) =>
  fetch(`${c.server.url}${path}`, { method: 'POST', body: new Uint8Array(body), headers: { 'Content-Type': 'application/vnd.kubernetes.protobuf', Accept: 'application/json' } })

describe('protobuf request bodies (kubectl create generators, auth can-i, auth whoami)', () => {
  it('creates a Secret from `kubectl create secret generic`-style protobuf', async () => {
    const meta = Buffer.concat([field(1, 'llm-key'), field(2, ''), mapEntry(11, 'team', 'a')])
    const secret = Buffer.concat([field(1, meta), mapEntry(2, 'apiKey', Buffer.from('s3cret'))])
    const res = await post('/api/v1/namespaces/default/secrets', envelope('v1', 'Secret', secret))
    expect(res.status).toBe(201)
    const stored = await c.core.readNamespacedSecret({ namespace: 'default', name: 'llm-key' })
    expect(stored.data).toEqual({ apiKey: Buffer.from('s3cret').toString('base64') })
    expect(stored.type).toBe('Opaque')
    expect(stored.metadata?.labels).toEqual({ team: 'a' })
    expect(stored.metadata?.generateName).toBeUndefined()
  })

  it('creates a RoleBinding from `kubectl create rolebinding`-style protobuf', async () => {
    const subject = Buffer.concat([field(1, 'Group'), field(2, 'rbac.authorization.k8s.io'), field(3, 'team-a')])
    const roleRef = Buffer.concat([field(1, 'rbac.authorization.k8s.io'), field(2, 'ClusterRole'), field(3, 'kinetic-run-control-team')])
    const binding = Buffer.concat([field(1, field(1, 'team-a-runs')), field(2, subject), field(3, roleRef)])
    const res = await post('/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings', envelope('rbac.authorization.k8s.io/v1', 'RoleBinding', binding))
    expect(res.status).toBe(201)
    expect(await res.json()).toMatchObject({
      metadata: { name: 'team-a-runs', namespace: 'default' },
      subjects: [{ kind: 'Group', apiGroup: 'rbac.authorization.k8s.io', name: 'team-a' }],
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'kinetic-run-control-team' },
    })
  })

  it('creates a ClusterRole with its rules from `kubectl create clusterrole`-style protobuf', async () => {
    const rule = Buffer.concat([field(1, 'get'), field(1, 'list'), field(2, 'purko.io'), field(3, 'workflows')])
    const res = await post('/apis/rbac.authorization.k8s.io/v1/clusterroles', envelope('rbac.authorization.k8s.io/v1', 'ClusterRole', Buffer.concat([field(1, field(1, 'wf-reader')), field(2, rule)])))
    expect(res.status).toBe(201)
    expect((await res.json()).rules).toEqual([{ verbs: ['get', 'list'], apiGroups: ['purko.io'], resources: ['workflows'] }])
  })

  it('answers `kubectl auth can-i`: a protobuf SelfSubjectAccessReview, resource or non-resource', async () => {
    const attrs = Buffer.concat([field(1, 'ai-agents'), field(2, 'list'), field(3, 'purko.io'), field(5, 'workflows'), field(6, ''), field(7, '')])
    const res = await post('/apis/authorization.k8s.io/v1/selfsubjectaccessreviews',
      envelope('authorization.k8s.io/v1', 'SelfSubjectAccessReview', Buffer.concat([field(1, Buffer.alloc(0)), field(2, field(1, attrs))])))
    expect(res.status).toBe(201)
    expect(await res.json()).toMatchObject({
      kind: 'SelfSubjectAccessReview',
      spec: { resourceAttributes: { namespace: 'ai-agents', verb: 'list', group: 'purko.io', resource: 'workflows' } },
      status: { allowed: true },
    })
    const nonResource = await post('/apis/authorization.k8s.io/v1/selfsubjectaccessreviews',
      envelope('authorization.k8s.io/v1', 'SelfSubjectAccessReview', field(2, field(2, Buffer.concat([field(1, '/healthz'), field(2, 'get')])))))
    expect(await nonResource.json()).toMatchObject({ spec: { nonResourceAttributes: { path: '/healthz', verb: 'get' } }, status: { allowed: true } })
  })

  it('answers `kubectl auth can-i --list`: a protobuf SelfSubjectRulesReview, with every verb on everything', async () => {
    const res = await post('/apis/authorization.k8s.io/v1/selfsubjectrulesreviews', envelope('authorization.k8s.io/v1', 'SelfSubjectRulesReview', field(2, field(1, 'ai-agents'))))
    expect(res.status).toBe(201)
    expect((await res.json()).status).toEqual({
      resourceRules: [{ verbs: ['*'], apiGroups: ['*'], resources: ['*'] }], nonResourceRules: [{ verbs: ['*'], nonResourceURLs: ['*'] }], incomplete: false,
    })
    const noNamespace = await post('/apis/authorization.k8s.io/v1/selfsubjectrulesreviews', envelope('authorization.k8s.io/v1', 'SelfSubjectRulesReview', field(2, Buffer.alloc(0))))
    expect(noNamespace.status).toBe(400)
    expect((await noNamespace.json()).message).toBe('no namespace on request')
  })

  it('answers `kubectl auth whoami`: a protobuf SelfSubjectReview', async () => {
    const res = await post('/apis/authentication.k8s.io/v1/selfsubjectreviews', envelope('authentication.k8s.io/v1', 'SelfSubjectReview', field(1, Buffer.alloc(0))))
    expect(res.status).toBe(201)
    expect(await res.json()).toMatchObject({ kind: 'SelfSubjectReview', status: { userInfo: { username: 'kinetic-local-admin', groups: ['system:masters', 'system:authenticated'] } } })
  })

  it('answers 415 for a protobuf kind it cannot decode', async () => {
    const res = await post('/apis/apps/v1/namespaces/default/deployments', envelope('apps/v1', 'Deployment', field(1, field(1, 'd'))))
    expect(res.status).toBe(415)
    expect(await res.json()).toMatchObject({ kind: 'Status', reason: 'UnsupportedMediaType' })
  })
})
