// shared/kube/verb-grants.ts, checked on the wire: every port verb of the real client, called
// against a recording server on 127.0.0.1, sends exactly the requests its VERB_GRANTS row
// says (each request read as RBAC reads it: the HTTP method and the path's resource).
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { KubeConfig } from '@kubernetes/client-node'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { KubeClient } from '../../shared/kube/client.js'
import { CHILD_RESOURCES } from '../../shared/kube/client/children.js'
import type { ChildKind, Kube } from '../../shared/kube/port.js'
import { VERB_GRANTS } from '../../shared/kube/verb-grants.js'

const NS = 'wire'
const meta = { name: 'x', namespace: NS, resourceVersion: '1' }
const anObject = { metadata: meta } as never

/** One call of each port verb, with arguments enough to send its requests. */
const CALLS: { [M in keyof Kube]: (k: Kube) => Promise<unknown> } = {
  getWorkflow: (k) => k.getWorkflow(NS, 'x'),
  listWorkflows: (k) => k.listWorkflows(),
  listWorkflowsIn: (k) => k.listWorkflowsIn(NS, { a: 'b' }),
  createWorkflow: (k) => k.createWorkflow({ apiVersion: 'purko.io/v1alpha1', kind: 'Workflow', metadata: meta, spec: { steps: [] } } as never),
  deleteWorkflow: (k) => k.deleteWorkflow(NS, 'x'),
  patchWorkflowMetadata: (k) => k.patchWorkflowMetadata(NS, 'x', '1', { annotations: { a: null } }),
  patchWorkflow: (k) => k.patchWorkflow(NS, 'x', '1', { parameters: { a: 'b' } }),
  patchWorkflowStatus: (k) => k.patchWorkflowStatus(NS, 'x', '1', {}),
  watchWorkflow: async (k) => (await k.watchWorkflow(NS, 'x', '1', () => {})).stop(),
  listAgents: (k) => k.listAgents(NS),
  getAgent: (k) => k.getAgent(NS, 'x'),
  listAllAgents: (k) => k.listAllAgents(),
  patchAgent: (k) => k.patchAgent(NS, 'x', '1', { metadata: { annotations: { a: null } } }),
  replaceAgentStatus: (k) => k.replaceAgentStatus(NS, 'x', '1', {}),
  listAutonomyPolicies: (k) => k.listAutonomyPolicies(NS),
  replaceAutonomyPolicyStatus: (k) => k.replaceAutonomyPolicyStatus(NS, 'x', '1', {}),
  listLLMProviders: (k) => k.listLLMProviders(NS),
  getLLMProvider: (k) => k.getLLMProvider(NS, 'x'),
  listAllLLMProviders: (k) => k.listAllLLMProviders(),
  replaceLLMProviderStatus: (k) => k.replaceLLMProviderStatus(NS, 'x', '1', {}),
  getMemoryProvider: (k) => k.getMemoryProvider(NS, 'x'),
  listAllMemoryProviders: (k) => k.listAllMemoryProviders(),
  replaceMemoryProviderStatus: (k) => k.replaceMemoryProviderStatus(NS, 'x', '1', {}),
  getMCPServer: (k) => k.getMCPServer(NS, 'x'),
  listMCPServers: (k) => k.listMCPServers(NS),
  listAllMCPServers: (k) => k.listAllMCPServers(),
  patchMCPServerMetadata: (k) => k.patchMCPServerMetadata(NS, 'x', '1', { finalizers: [] }),
  replaceMCPServerStatus: (k) => k.replaceMCPServerStatus(NS, 'x', '1', {}),
  getRecipe: (k) => k.getRecipe(NS, 'x'),
  listAllRecipes: (k) => k.listAllRecipes(),
  listRecipes: (k) => k.listRecipes({ namespace: NS }),
  createRecipe: (k) => k.createRecipe({ metadata: meta } as never),
  replaceRecipe: (k) => k.replaceRecipe({ metadata: meta } as never),
  deleteRecipe: (k) => k.deleteRecipe(NS, 'x'),
  patchRecipeMetadata: (k) => k.patchRecipeMetadata(NS, 'x', '1', { finalizers: [] }),
  replaceRecipeStatus: (k) => k.replaceRecipeStatus(NS, 'x', '1', {}),
  listRecipePolicies: (k) => k.listRecipePolicies(),
  getRecipePolicy: (k) => k.getRecipePolicy('x'),
  replaceRecipePolicyStatus: (k) => k.replaceRecipePolicyStatus('x', '1', {}),
  // The generic child verbs: called once per kind in the test below.
  getChild: (k) => k.getChild('Secret', NS, 'x'),
  listChildren: (k) => k.listChildren('Secret', NS, { a: 'b' }),
  applyChild: (k) => k.applyChild({ kind: 'Secret', metadata: meta }),
  createChild: (k) => k.createChild({ kind: 'Secret', metadata: meta }),
  patchChild: (k) => k.patchChild('Secret', NS, 'x', '1', {}),
  deleteChild: (k) => k.deleteChild('Secret', NS, 'x', { propagationPolicy: 'Background' }),
  getDeployment: (k) => k.getDeployment(NS, 'x'),
  createDeployment: (k) => k.createDeployment(anObject),
  replaceDeployment: (k) => k.replaceDeployment(anObject),
  getService: (k) => k.getService(NS, 'x'),
  createService: (k) => k.createService(anObject),
  replaceService: (k) => k.replaceService(anObject),
  listPods: (k) => k.listPods(NS, { a: 'b' }),
  followPodLog: async (k) => (await k.followPodLog(NS, 'x', {}, () => {})).stop(),
  getNamespace: (k) => k.getNamespace('x'),
  listNamespaces: (k) => k.listNamespaces({ a: 'b' }),
  getServiceAccount: (k) => k.getServiceAccount(NS, 'x'),
  createServiceAccount: (k) => k.createServiceAccount(anObject),
  replaceServiceAccount: (k) => k.replaceServiceAccount(anObject),
  deleteServiceAccount: (k) => k.deleteServiceAccount(NS, 'x'),
  getRole: (k) => k.getRole(NS, 'x'),
  createRole: (k) => k.createRole(anObject),
  replaceRole: (k) => k.replaceRole(anObject),
  getRoleBinding: (k) => k.getRoleBinding(NS, 'x'),
  createRoleBinding: (k) => k.createRoleBinding(anObject),
  replaceRoleBinding: (k) => k.replaceRoleBinding(anObject),
  listJobs: (k) => k.listJobs(NS, { a: 'b' }),
  listJobsLabelled: (k) => k.listJobsLabelled(NS, 'a'),
  createJob: (k) => k.createJob(anObject),
  deleteJob: (k) => k.deleteJob(NS, 'x'),
  readJobLog: (k) => k.readJobLog(NS, 'x'),
  readStepReport: (k) => k.readStepReport(NS, 'x', 'output'),
  getConfigMap: (k) => k.getConfigMap(NS, 'x'),
  listConfigMaps: (k) => k.listConfigMaps(NS, { a: 'b' }),
  listAllConfigMaps: (k) => k.listAllConfigMaps({ a: 'b' }),
  createConfigMap: (k) => k.createConfigMap(anObject),
  replaceConfigMap: (k) => k.replaceConfigMap(anObject),
  deleteConfigMap: (k) => k.deleteConfigMap(NS, 'x'),
  getSecret: (k) => k.getSecret(NS, 'x'),
  createSecret: (k) => k.createSecret(anObject),
  replaceSecret: (k) => k.replaceSecret(anObject),
  createEvent: (k) => k.createEvent(anObject),
  listEvents: (k) => k.listEvents(NS, { kind: 'Workflow', name: 'x' }),
  reviewToken: (k) => k.reviewToken('t'),
  reviewAccess: (k) => k.reviewAccess({ username: 'u' }, { verb: 'get', group: '', resource: 'pods' }),
  reviewSelfAccess: (k) => k.reviewSelfAccess([{ verb: 'get', group: '', resource: 'pods' }]),
  whoAmI: (k) => k.whoAmI(),
}

/** One request as RBAC reads it: `<group>/<resource>[/<subresource>] <verb>`. */
function accessOf(method: string, url: string): string {
  const { pathname, searchParams } = new URL(url, 'http://x')
  const parts = pathname.split('/').filter(Boolean)
  const [group, rest] = parts[0] === 'api' ? ['', parts.slice(2)] : [parts[1]!, parts.slice(3)]
  const [resource, name, sub] = rest[0] === 'namespaces' && rest.length >= 3 ? rest.slice(2) : rest
  const verb = method === 'GET' ? (searchParams.get('watch') === 'true' ? 'watch' : name ? 'get' : 'list')
    : method === 'POST' ? 'create' : method === 'PUT' ? 'update' : method === 'PATCH' ? 'patch' : method === 'DELETE' ? 'delete' : method
  return `${group}/${resource}${sub ? `/${sub}` : ''} ${verb}`
}

describe('what each port verb sends, against its VERB_GRANTS row', () => {
  let server: Server
  let kube: Kube
  let seen: string[] = []

  beforeAll(async () => {
    server = createServer((req, res) => {
      seen.push(accessOf(req.method ?? '', req.url ?? ''))
      // Every list holds one pod on a node (so a Job's log is read); everything else is an empty success.
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ metadata: { name: 'p' }, items: [{ metadata: { name: 'p', namespace: NS }, spec: { nodeName: 'node-1', containers: [] }, status: {} }], status: {} }))
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const kc = new KubeConfig()
    kc.loadFromOptions({
      clusters: [{ name: 'c', server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, skipTLSVerify: true }],
      users: [{ name: 'u', token: 't' }], contexts: [{ name: 'x', cluster: 'c', user: 'u' }], currentContext: 'x',
    })
    kube = new KubeClient(kc)
  })
  afterAll(() => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()) }))

  const sent = async (call: () => Promise<unknown>): Promise<string[]> => {
    seen = []
    // Answers that do not parse as the kind are refused by the client: only the requests matter.
    await call().catch(() => {})
    return [...new Set(seen)].sort()
  }
  const rowOf = (grants: readonly { group: string; resource: string; verb: string }[]) => [...new Set(grants.map((g) => `${g.group}/${g.resource} ${g.verb}`))].sort()
  const CHILD_VERBS = new Set<keyof Kube>(['getChild', 'listChildren', 'applyChild', 'createChild', 'patchChild', 'deleteChild'])

  it.each((Object.keys(CALLS) as Array<keyof Kube>).filter((v) => !CHILD_VERBS.has(v)))('%s', async (verb) => {
    expect(await sent(() => CALLS[verb](kube))).toEqual(rowOf(VERB_GRANTS[verb]))
  })

  it.each(Object.keys(CHILD_RESOURCES) as ChildKind[])('the generic child verbs on a %s', async (kind) => {
    const calls: Record<string, () => Promise<unknown>> = {
      getChild: () => kube.getChild(kind, NS, 'x'),
      listChildren: () => kube.listChildren(kind, NS, { a: 'b' }),
      applyChild: () => kube.applyChild({ kind, metadata: meta }),
      createChild: () => kube.createChild({ kind, metadata: meta }),
      patchChild: () => kube.patchChild(kind, NS, 'x', '1', {}),
      deleteChild: () => kube.deleteChild(kind, NS, 'x', { propagationPolicy: 'Background' }),
    }
    for (const [verb, call] of Object.entries(calls)) {
      const row = VERB_GRANTS[verb as keyof Kube].filter((g) => g.childKind === kind)
        // A server-side apply that creates is authorized for create inside its one PATCH: not on the wire.
        .filter((g) => !(verb === 'applyChild' && g.verb === 'create'))
      expect(await sent(call), `${verb} ${kind}`).toEqual(rowOf(row))
    }
  })
})
