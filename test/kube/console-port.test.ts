// The console's port methods through the real adapter (client-node), on the embedded API server:
// self reviews, who-am-I (also when impersonating), a Workflow watch narrowed by a field selector,
// a followed pod log; and what kubeAs puts on the wire, seen by a recording server on 127.0.0.1.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { AddressInfo } from 'node:net'
import { ApiextensionsV1Api, CoreV1Api, CustomObjectsApi, KubeConfig, loadYaml, type V1CustomResourceDefinition } from '@kubernetes/client-node'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { startApiServer, type ApiServer } from '../../local/apiserver/index.js'
import { ForbiddenError } from '../../shared/core/errors.js'
import { KubeClient, kubeAs } from '../../shared/kube/client.js'
import type { Workflow } from '../../shared/schemas/workflow.js'

const NS = 'console-port'
const WORKFLOWS = { group: 'purko.io', version: 'v1alpha1', namespace: NS, plural: 'workflows' }

async function withCrds(api: ApiServer): Promise<void> {
  const ext = api.kubeConfigObject().makeApiClient(ApiextensionsV1Api)
  const dir = join(import.meta.dirname, '../../crds')
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.purko.io.yaml'))) {
    await ext.createCustomResourceDefinition({ body: loadYaml<V1CustomResourceDefinition>(readFileSync(join(dir, file), 'utf8')) })
  }
  await api.kubeConfigObject().makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: NS } } })
}

const aWorkflow = (name: string) => ({
  apiVersion: 'purko.io/v1alpha1', kind: 'Workflow', metadata: { name }, spec: { steps: [{ name: 'a', agentRef: { name: 'x' } }] },
})

describe('the console port on the embedded API server', () => {
  let api: ApiServer
  let kube: KubeClient
  let custom: CustomObjectsApi
  let core: CoreV1Api

  beforeAll(async () => {
    api = await startApiServer()
    await withCrds(api)
    kube = new KubeClient(api.kubeConfigObject())
    custom = api.kubeConfigObject().makeApiClient(CustomObjectsApi)
    core = api.kubeConfigObject().makeApiClient(CoreV1Api)
  })
  afterAll(async () => { await api.close() })

  it('answers every self access review yes for the local admin, in the order asked', async () => {
    expect(await kube.reviewSelfAccess([
      { verb: 'approve', group: 'purko.io', resource: 'workflows', namespace: NS, name: 'wf' },
      { verb: 'get', group: '', resource: 'pods', subresource: 'log', namespace: NS },
    ])).toEqual([true, true])
  })

  it('names the local admin, and when impersonating, the impersonated person with each group on its own', async () => {
    expect(await kube.whoAmI()).toEqual({ username: 'kinetic-local-admin', groups: ['system:masters', 'system:authenticated'] })
    const alice = kubeAs(api.kubeConfigObject(), { kind: 'impersonate', user: 'alice', groups: ['team-a', 'ops, oncall'], uid: 'u-1' })
    expect(await alice.whoAmI()).toEqual({ username: 'alice', uid: 'u-1', groups: ['team-a', 'ops, oncall', 'system:authenticated'] })
    // Everything else is served as usual: the embedded server has nothing to authorize.
    await custom.createNamespacedCustomObject({ ...WORKFLOWS, body: aWorkflow('as-alice') })
    expect((await alice.getWorkflow(NS, 'as-alice'))?.metadata.name).toBe('as-alice')
  })

  it('discovery lists the review resources (create only), so kubectl auth can-i (with --list) and whoami find them', async () => {
    const groups = await (await fetch(`${api.url}/apis`)).json() as { groups: Array<{ name: string }> }
    expect(groups.groups.map((g) => g.name)).toEqual(expect.arrayContaining(['authorization.k8s.io', 'authentication.k8s.io']))
    const authz = await (await fetch(`${api.url}/apis/authorization.k8s.io/v1`)).json() as { resources: Array<{ name: string; verbs: string[]; namespaced: boolean }> }
    expect(authz.resources).toEqual([
      expect.objectContaining({ name: 'selfsubjectaccessreviews', verbs: ['create'], namespaced: false }),
      expect.objectContaining({ name: 'selfsubjectrulesreviews', verbs: ['create'], namespaced: false }),
    ])
    expect((await fetch(`${api.url}/apis/authentication.k8s.io/v1/selfsubjectreviews`)).status).toBe(405)
    const empty = await fetch(`${api.url}/apis/authorization.k8s.io/v1/selfsubjectaccessreviews`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"spec":{}}' })
    // As kube-apiserver v1.34 answers a review that names no attributes (test/local/apiserver/fidelity.test.ts pins the body).
    expect(empty.status).toBe(422)
  })

  it('lists the MCPServers of one namespace only', async () => {
    await custom.createNamespacedCustomObject({ ...WORKFLOWS, plural: 'mcpservers', body: { apiVersion: 'purko.io/v1alpha1', kind: 'MCPServer', metadata: { name: 'tools' }, spec: { image: 'kinetic' } } })
    await custom.createNamespacedCustomObject({ ...WORKFLOWS, namespace: 'ai-agents', plural: 'mcpservers', body: { apiVersion: 'purko.io/v1alpha1', kind: 'MCPServer', metadata: { name: 'other' }, spec: { image: 'kinetic' } } })
    expect((await kube.listMCPServers(NS)).map((m) => m.metadata.name)).toEqual(['tools'])
  })

  it('watches one Workflow from the version shown: a status write arrives parsed, other Workflows do not, a delete arrives as null', async () => {
    const created = await custom.createNamespacedCustomObject({ ...WORKFLOWS, body: aWorkflow('watched') }) as Workflow
    await custom.createNamespacedCustomObject({ ...WORKFLOWS, body: aWorkflow('neighbour') })
    const seen: Array<Workflow | null> = []
    const handle = await kube.watchWorkflow(NS, 'watched', String(created.metadata.resourceVersion), (wf) => seen.push(wf))
    await kube.patchWorkflowStatus(NS, 'watched', String(created.metadata.resourceVersion), { phase: 'Running' } as never)
    await vi.waitFor(() => expect(seen.map((wf) => wf?.status?.phase)).toEqual(['Running']))
    // Parsed with the Workflow schema, as getWorkflow reads it.
    expect(seen[0]?.spec.steps.map((s) => s.name)).toEqual(['a'])
    await custom.deleteNamespacedCustomObject({ ...WORKFLOWS, name: 'watched' })
    await vi.waitFor(() => expect(seen.at(-1)).toBeNull())
    expect(seen.every((wf) => wf === null || wf.metadata.name === 'watched')).toBe(true)
    handle.stop()
    await expect(handle.done).resolves.toBeUndefined()
  })

  it('follows a running pod\'s log from its last lines, gets what is written next, and ends when the pod finishes', async () => {
    await core.createNamespacedPod({ namespace: NS, body: { metadata: { name: 'step-pod' }, spec: { containers: [{ name: 'step', image: 'kinetic' }] } } })
    await core.replaceNamespacedPodStatus({ namespace: NS, name: 'step-pod', body: { metadata: { name: 'step-pod' }, status: { phase: 'Running' } } })
    api.store.appendPodLog(NS, 'step-pod', 'one\ntwo\nthree\n')
    let text = ''
    const handle = await kube.followPodLog(NS, 'step-pod', { tailLines: 1 }, (chunk) => { text += chunk })
    await vi.waitFor(() => expect(text).toBe('three\n'))
    api.store.appendPodLog(NS, 'step-pod', 'four\n')
    await vi.waitFor(() => expect(text).toBe('three\nfour\n'))
    await core.replaceNamespacedPodStatus({ namespace: NS, name: 'step-pod', body: { metadata: { name: 'step-pod' }, status: { phase: 'Succeeded' } } })
    await handle.done
  })

  it('stops following a log at once when asked, and caps it at limitBytes', async () => {
    await core.createNamespacedPod({ namespace: NS, body: { metadata: { name: 'chatty' }, spec: { containers: [{ name: 'step', image: 'kinetic' }] } } })
    await core.replaceNamespacedPodStatus({ namespace: NS, name: 'chatty', body: { metadata: { name: 'chatty' }, status: { phase: 'Running' } } })
    api.store.appendPodLog(NS, 'chatty', 'abcdefghij')
    let text = ''
    const capped = await kube.followPodLog(NS, 'chatty', { limitBytes: 4 }, (chunk) => { text += chunk })
    await capped.done
    expect(text).toBe('abcd')
    const followed = await kube.followPodLog(NS, 'chatty', {}, () => {})
    followed.stop()
    await expect(followed.done).resolves.toBeUndefined()
  })

  it('refuses to follow the log of a pod that does not exist', async () => {
    await expect(kube.followPodLog(NS, 'missing', {}, () => {})).rejects.toThrow(/follow log of pod console-port\/missing/)
  })
})

describe('a Workflow watch ends as the API server ends it', () => {
  it('rejects done with 410 Gone when the version shown is older than the server keeps', async () => {
    const api = await startApiServer({ historySize: 2 })
    try {
      await withCrds(api)
      const custom = api.kubeConfigObject().makeApiClient(CustomObjectsApi)
      const first = await custom.createNamespacedCustomObject({ ...WORKFLOWS, body: aWorkflow('old') }) as Workflow
      for (let i = 0; i < 4; i++) await custom.createNamespacedCustomObject({ ...WORKFLOWS, body: aWorkflow(`later-${i}`) })
      const handle = await new KubeClient(api.kubeConfigObject()).watchWorkflow(NS, 'old', String(first.metadata.resourceVersion), () => {})
      const failure = await handle.done.then(() => null, (err: unknown) => err as Error & { cause?: { code?: number } })
      expect(failure?.cause?.code).toBe(410)
    } finally {
      await api.close()
    }
  })

  it('resolves done when the server closes the watch', async () => {
    const api = await startApiServer()
    try {
      await withCrds(api)
      const custom = api.kubeConfigObject().makeApiClient(CustomObjectsApi)
      const wf = await custom.createNamespacedCustomObject({ ...WORKFLOWS, body: aWorkflow('closing') }) as Workflow
      const handle = await new KubeClient(api.kubeConfigObject()).watchWorkflow(NS, 'closing', String(wf.metadata.resourceVersion), () => {})
      await api.close()
      await expect(handle.done).resolves.toBeUndefined()
    } finally {
      await api.close().catch(() => undefined)
    }
  })
})

/** A 127.0.0.1 server that records each request's header lines and answers with `answer`. */
async function recordingServer(answer: (req: IncomingMessage, res: ServerResponse) => void) {
  const requests: Array<{ url: string; lines: Array<[string, string]> }> = []
  const server: Server = createServer((req, res) => {
    const lines: Array<[string, string]> = []
    for (let i = 0; i < req.rawHeaders.length; i += 2) lines.push([req.rawHeaders[i]!.toLowerCase(), req.rawHeaders[i + 1]!])
    requests.push({ url: req.url ?? '', lines })
    answer(req, res)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return { url, requests, close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()) }) }
}

/** A base kubeconfig with its own token and an impersonation of its own (`as:`), as a kubeconfig may hold. */
function baseConfig(server: string): KubeConfig {
  const kc = new KubeConfig()
  kc.loadFromOptions({
    clusters: [{ name: 'c', server, skipTLSVerify: true }],
    users: [{ name: 'sa', token: 'console-sa-token', impersonateUser: 'someone-else' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'sa' }],
    currentContext: 'x',
  })
  return kc
}

const values = (lines: Array<[string, string]>, name: string) => lines.filter(([n]) => n === name).map(([, v]) => v)

describe('kubeAs on the wire', () => {
  it('impersonation sends the base identity plus one Impersonate-Group line per group on API calls, watches and logs', async () => {
    const recorder = await recordingServer((req, res) => {
      if (req.url?.includes('watch=true')) { res.writeHead(200, { 'Content-Type': 'application/json' }); res.end(); return }
      if (req.url?.includes('/log')) {
        // A character split across two writes, as a container may flush it.
        const euro = Buffer.from('€')
        res.writeHead(200, { 'Content-Type': 'text/plain' })
        res.write(Buffer.concat([Buffer.from('cost '), euro.subarray(0, 1)]))
        setTimeout(() => res.end(euro.subarray(1)), 50)
        return
      }
      res.writeHead(201, { 'Content-Type': 'application/json' })
      res.end(JSON.stringify({ apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview', status: { userInfo: { username: 'alice' } } }))
    })
    try {
      const alice = kubeAs(baseConfig(recorder.url), { kind: 'impersonate', user: 'alice', groups: ['team-a', 'team-b'] })
      await alice.whoAmI()
      const watch = await alice.watchWorkflow(NS, 'wf', '5', () => {})
      await watch.done
      const chunks: string[] = []
      const log = await alice.followPodLog(NS, 'pod', {}, (chunk) => chunks.push(chunk))
      await log.done
      expect(chunks.join('')).toBe('cost €')
      expect(recorder.requests.map((r) => r.url.split('?')[0])).toEqual([
        '/apis/authentication.k8s.io/v1/selfsubjectreviews',
        `/apis/purko.io/v1alpha1/namespaces/${NS}/workflows`,
        `/api/v1/namespaces/${NS}/pods/pod/log`,
      ])
      for (const { lines } of recorder.requests) {
        expect(values(lines, 'authorization')).toEqual(['Bearer console-sa-token'])
        expect(values(lines, 'impersonate-user')).toEqual(['alice'])
        expect(values(lines, 'impersonate-group')).toEqual(['team-a', 'team-b'])
        expect(values(lines, 'impersonate-uid')).toEqual([])
      }
      // The watch asks for exactly that Workflow, from the version shown, with bookmarks.
      const query = new URL(recorder.requests[1]!.url, recorder.url).searchParams
      expect([query.get('fieldSelector'), query.get('resourceVersion'), query.get('allowWatchBookmarks'), query.get('watch')]).toEqual(['metadata.name=wf', '5', 'true', 'true'])
      expect(new URL(recorder.requests[2]!.url, recorder.url).searchParams.get('follow')).toBe('true')
    } finally {
      await recorder.close()
    }
  })

  it('a token credential sends that token alone, never the base\'s token or impersonation', async () => {
    const recorder = await recordingServer((_req, res) => {
      res.writeHead(201, { 'Content-Type': 'application/json' })
      res.end(JSON.stringify({ apiVersion: 'authorization.k8s.io/v1', kind: 'SelfSubjectAccessReview', status: { allowed: true } }))
    })
    try {
      const person = kubeAs(baseConfig(recorder.url), { kind: 'token', token: 'person-token' })
      expect(await person.reviewSelfAccess([{ verb: 'get', group: 'purko.io', resource: 'workflows' }, { verb: 'list', group: 'purko.io', resource: 'workflows' }])).toEqual([true, true])
      expect(recorder.requests).toHaveLength(2)
      for (const { lines } of recorder.requests) {
        expect(values(lines, 'authorization')).toEqual(['Bearer person-token'])
        expect(lines.filter(([n]) => n.startsWith('impersonate-'))).toEqual([])
      }
    } finally {
      await recorder.close()
    }
  })

  it('own rights are the base kubeconfig as it is', async () => {
    const recorder = await recordingServer((_req, res) => {
      res.writeHead(201, { 'Content-Type': 'application/json' })
      res.end(JSON.stringify({ status: { userInfo: { username: 'someone-else' } } }))
    })
    try {
      expect((await kubeAs(baseConfig(recorder.url), { kind: 'own' }).whoAmI()).username).toBe('someone-else')
      expect(values(recorder.requests[0]!.lines, 'impersonate-user')).toEqual(['someone-else'])
    } finally {
      await recorder.close()
    }
  })

  it('a 403 on opening a watch or a log is a ForbiddenError, and a denied review is no', async () => {
    const recorder = await recordingServer((req, res) => {
      if (req.method === 'POST') {
        res.writeHead(201, { 'Content-Type': 'application/json' })
        res.end(JSON.stringify({ status: { allowed: true, denied: true } }))
        return
      }
      res.writeHead(403, { 'Content-Type': 'application/json' })
      res.end(JSON.stringify({ kind: 'Status', code: 403, message: 'forbidden' }))
    })
    try {
      const kube = kubeAs(baseConfig(recorder.url), { kind: 'token', token: 't' })
      await expect(kube.watchWorkflow(NS, 'wf', '1', () => {})).rejects.toBeInstanceOf(ForbiddenError)
      await expect(kube.followPodLog(NS, 'pod', {}, () => {})).rejects.toBeInstanceOf(ForbiddenError)
      expect(await kube.reviewSelfAccess([{ verb: 'get', group: '', resource: 'pods' }])).toEqual([false])
    } finally {
      await recorder.close()
    }
  })
})
