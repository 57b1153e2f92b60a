// Issue 27 (items 3 and 8) on a real kube-apiserver: the shipped ValidatingAdmissionPolicies
// kinetic-agents, kinetic-workflows and kinetic-mcpservers (knative/admission/) judge real users
// (ServiceAccount tokens, so RBAC applies as to anyone). An author may put into pods only the
// Secrets, ConfigMaps, volume, identity and image they could use themselves; deciding a step or a
// promotion by annotation needs run-control's `approve` verb; hostNetwork needs its own grant.
// References already there are not checked again, so edits of other fields (and Kinetic's own
// writes) pass.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { beforeAll, expect, it } from 'vitest'
import { KubeHttp, type KubeObject, type KubeResponse } from '../../local/knative/kube-http.js'
import { eventually } from '../support/eventually.js'
import { parseDocuments, ROOT } from '../knative/manifests.js'
import { describeCluster, useControlPlane } from './tier.js'

const NS = 'purko-admission'
const API = `/apis/purko.io/v1alpha1/namespaces/${NS}`
const user = (name: string) => `system:serviceaccount:${NS}:${name}`
const shipped = (file: string) => parseDocuments(readFileSync(join(ROOT, 'knative', 'admission', file), 'utf8'), file) as KubeObject[]
const POLICIES = ['kinetic-agents', 'kinetic-workflows', 'kinetic-mcpservers']

type Json = Record<string, any>
const agent = (name: string, spec: Json = {}, annotations?: Record<string, string>): Json => ({
  apiVersion: 'purko.io/v1alpha1', kind: 'Agent',
  metadata: { name, namespace: NS, ...(annotations ? { annotations } : {}) },
  spec: { model: { provider: 'anthropic', name: 'claude' }, ...spec },
})
const workflow = (name: string, spec: Json = {}, annotations?: Record<string, string>): Json => ({
  apiVersion: 'purko.io/v1alpha1', kind: 'Workflow',
  metadata: { name, namespace: NS, ...(annotations ? { annotations } : {}) },
  spec: { steps: [{ name: 'publish', agentRef: { name: 'writer' } }], ...spec },
})
const mcpServer = (name: string, spec: Json = {}): Json => ({
  apiVersion: 'purko.io/v1alpha1', kind: 'MCPServer', metadata: { name, namespace: NS }, spec: { image: 'example/mcp:1', ...spec },
})
const envSecret = (...names: string[]) => names.map((n, i) => ({ name: `S${i}`, valueFrom: { secretKeyRef: { name: n, key: 'value' } } }))

const messageOf = (res: KubeResponse) => String((res.body as { message?: unknown } | undefined)?.message ?? res.text)
const denied = (plural: string, name: string, policy: string, message: string) =>
  `${plural}.purko.io "${name}" is forbidden: ValidatingAdmissionPolicy '${policy}' with binding '${policy}' denied request: ${message}`
const agentDenied = (name: string, message: string) => denied('agents', name, 'kinetic-agents', message)

describeCluster('the Agent, Workflow and MCPServer admission policies on a real kube-apiserver', () => {
  // The controller manager runs the policies' type checking (status.typeChecking).
  const cp = useControlPlane({ controllerManager: true })
  const as: Record<string, KubeHttp> = {}
  const path = (kind: string) => `${API}/${kind}`
  const dry = (who: string, kind: string, obj: Json) => as[who]!.send('POST', `${path(kind)}?dryRun=All`, obj)
  const patch = (who: string, kind: string, name: string, body: Json) => as[who]!.send('PATCH', `${path(kind)}/${name}`, body, 'application/merge-patch+json')
  const seed = async (kind: string, obj: Json) => {
    const res = await cp.current.admin.send('POST', path(kind), obj)
    expect(res.status, res.text).toBe(201)
  }

  beforeAll(async () => {
    const admin = cp.current.admin
    for (const plural of ['agents', 'workflows', 'mcpservers']) {
      const crd = parseDocuments(readFileSync(join(ROOT, 'crds', `${plural}.purko.io.yaml`), 'utf8'), 'crd')[0]!
      await admin.request('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', crd)
      await eventually(`the ${plural} CRD is Established`, async () =>
        ((await admin.get(`/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${plural}.purko.io`))?.status as { conditions?: Json[] } | undefined)
          ?.conditions?.some((c) => c.type === 'Established' && c.status === 'True'))
    }
    admin.forgetDiscovery()
    await admin.request('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } })
    for (const obj of [...shipped('agents.yaml'), ...shipped('workflows.yaml'), ...shipped('mcpservers.yaml')]) {
      await admin.request('POST', `${await admin.pathFor(obj.apiVersion!, obj.kind!)}?fieldValidation=Strict`, obj)
    }
    const rbac = '/apis/rbac.authorization.k8s.io/v1'
    const role = (name: string, rules: Json[]) => admin.request('POST', `${rbac}/namespaces/${NS}/roles`, { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name }, rules })
    await role('author', [{ apiGroups: ['purko.io'], resources: ['agents', 'workflows', 'mcpservers'], verbs: ['get', 'create', 'update', 'patch'] }])
    await role('everything', [
      { apiGroups: [''], resources: ['secrets', 'configmaps', 'persistentvolumeclaims'], verbs: ['get'] },
      { apiGroups: [''], resources: ['pods'], verbs: ['create'] },
    ])
    await role('named', [
      { apiGroups: [''], resources: ['secrets'], resourceNames: ['db', 'token'], verbs: ['get'] },
      { apiGroups: [''], resources: ['configmaps'], resourceNames: ['cfg'], verbs: ['get'] },
      { apiGroups: [''], resources: ['persistentvolumeclaims'], resourceNames: ['memory'], verbs: ['get'] },
      { apiGroups: [''], resources: ['serviceaccounts'], resourceNames: ['deployer'], verbs: ['impersonate'] },
    ])
    await role('approver', [{ apiGroups: ['purko.io'], resources: ['agents', 'workflows'], verbs: ['get', 'patch', 'approve'] }])
    const bind = (who: string, kind: 'Role' | 'ClusterRole', name: string) =>
      admin.request('POST', `${rbac}/namespaces/${NS}/rolebindings`, {
        apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: `${who}-${name}` },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind, name }, subjects: [{ kind: 'ServiceAccount', name: who, namespace: NS }],
      })
    // author: may write the kinds, use nothing; reader: and use everything of the namespace;
    // named: and use some things by name; approver: may patch and decide; hostnet: author + host network.
    const grants: Record<string, Array<['Role' | 'ClusterRole', string]>> = {
      author: [['Role', 'author']],
      reader: [['Role', 'author'], ['Role', 'everything']],
      named: [['Role', 'author'], ['Role', 'named']],
      approver: [['Role', 'approver']],
      hostnet: [['Role', 'author'], ['ClusterRole', 'kinetic-mcpserver-host-network']],
    }
    for (const [who, roles] of Object.entries(grants)) {
      as[who] = new KubeHttp((await cp.current.serviceAccountKubeconfig(NS, who)).kubeConfig)
      for (const [kind, name] of roles) await bind(who, kind, name)
    }
    await eventually('the policies refuse a Secret reference of a user who may not read it', async () =>
      (await dry('author', 'agents', agent('probe', { model: { provider: 'a', name: 'b', credentialsSecretRef: { name: 'db' } } }))).status === 403
      && (await dry('author', 'mcpservers', mcpServer('probe', { auth: 'bearer', secretRef: 'db' }))).status === 403
      && (await dry('author', 'workflows', workflow('probe', {}, { 'purko.io/approve-publish': 'true' }))).status === 403, 30_000, 250)
  }, 120_000)

  it.each(POLICIES)('%s is type-checked against the CRD schema with no warnings', async (name) => {
    const status = await eventually(`${name} has been type-checked`, async () => {
      const vap = await cp.current.admin.get(`/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies/${name}`)
      const s = vap?.status as { observedGeneration?: number; typeChecking?: { expressionWarnings?: Json[] } } | undefined
      return s?.observedGeneration === (vap?.metadata as { generation?: number }).generation ? s : undefined
    })
    expect(JSON.stringify(status.typeChecking?.expressionWarnings ?? [], null, 1)).toBe('[]')
  })

  const model = (secret: string) => ({ model: { provider: 'anthropic', name: 'claude', credentialsSecretRef: { name: secret, key: 'api-key' } } })
  const vectorMemory = (claim?: string) => ({ memory: { type: 'vector', persistentStorage: { enabled: true, ...(claim ? { volumeClaimRef: claim } : {}) } } })

  it.each<[string, Json, string]>([
    ['model.credentialsSecretRef', model('hidden'), `${user('author')} may not get Secret hidden in namespace ${NS}, which the Agent names`],
    ['runtime.env[].valueFrom.secretKeyRef', { runtime: { env: envSecret('hidden') } }, `${user('author')} may not get Secret hidden in namespace ${NS}, which the Agent names`],
    ['tools[].credentialsSecretRef', { tools: [{ name: 'gh', type: 'api', credentialsSecretRef: { name: 'hidden' } }] }, `${user('author')} may not get Secret hidden in namespace ${NS}, which the Agent names`],
    ['runtime.env[].valueFrom.configMapKeyRef', { runtime: { env: [{ name: 'C', valueFrom: { configMapKeyRef: { name: 'other', key: 'k' } } }] } }, `${user('author')} may not get ConfigMap other in namespace ${NS}, which the Agent names`],
    ['tools[].config.configMapName', { tools: [{ name: 'kb', type: 'function', config: { configMapName: 'other' } }] }, `${user('author')} may not get ConfigMap other in namespace ${NS}, which the Agent names`],
    ['the vector memory volume (volumeClaimRef)', vectorMemory('shared-data'), `${user('author')} may not get PersistentVolumeClaim shared-data in namespace ${NS}, which the Agent mounts as its memory`],
    ['the vector memory volume (its default claim)', vectorMemory(), `${user('author')} may not get PersistentVolumeClaim x-memory in namespace ${NS}, which the Agent mounts as its memory`],
    ['runtime.serviceAccountName', { runtime: { serviceAccountName: 'deployer' } }, `${user('author')} may not use ServiceAccount deployer in namespace ${NS} (create pods there, or impersonate it)`],
    ['runtime.image', { runtime: { image: 'example/exfiltrate:1' } }, `${user('author')} may not create pods in namespace ${NS}, so may not choose runtime.image (the image runs with the Secrets of its steps)`],
  ])('an Agent author who may not use what %s names is refused, with a message naming it', async (_, spec, message) => {
    const res = await dry('author', 'agents', agent('x', spec))
    expect(res.status).toBe(403)
    expect(messageOf(res)).toBe(agentDenied('x', message))
  })

  it('an author who may use everything of the namespace may name all of it in one Agent (within the cost budget)', async () => {
    const spec = {
      ...model('db'), ...vectorMemory(),
      runtime: {
        image: 'example/executor:2', serviceAccountName: 'deployer',
        env: [...envSecret('a', 'b', 'c', 'd', 'e', 'f'), { name: 'C', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'k' } } }],
      },
      tools: [{ name: 'gh', type: 'api', credentialsSecretRef: { name: 'token' }, config: { configMapName: 'other' } }],
    }
    const res = await dry('reader', 'agents', agent('x', spec))
    expect(res.status, res.text).toBe(201)
  })

  it('an author whose access is by name may name exactly those (repeats are checked once), and is refused for any other', async () => {
    const ok = {
      ...model('db'), ...vectorMemory('memory'),
      runtime: { serviceAccountName: 'deployer', env: [...envSecret('db', 'token', 'db', 'token', 'db'), { name: 'C', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'k' } } }] },
      tools: [{ name: 'kb', type: 'function', credentialsSecretRef: { name: 'token' }, config: { configMapName: 'cfg' } }],
    }
    const res = await dry('named', 'agents', agent('x', ok))
    expect(res.status, res.text).toBe(201)
    const other = await dry('named', 'agents', agent('x', { ...model('db'), runtime: { env: envSecret('token', 'hidden') } }))
    expect(other.status).toBe(403)
    expect(messageOf(other)).toBe(agentDenied('x', `${user('named')} may not get Secret hidden in namespace ${NS}, which the Agent names`))
    const many = await dry('named', 'agents', agent('x', { runtime: { env: envSecret('db', 's2', 's3', 's4', 's5') } }))
    expect(messageOf(many)).toBe(agentDenied('x', `${user('named')} may not get every Secret of namespace ${NS}, and the Agent names more than 4 new Secrets to check one by one`))
  })

  it('on update only newly named references are checked: edits of other fields (as Kinetic\'s own writes) pass', async () => {
    await seed('agents', agent('shared', { ...model('hidden'), runtime: { image: 'example/executor:2', serviceAccountName: 'deployer', env: envSecret('hidden') } }))
    expect((await patch('author', 'agents', 'shared', { spec: { autonomyLevel: 'supervised', systemPrompt: 'Be brief.' } })).status).toBe(200)
    expect((await patch('author', 'agents', 'shared', { metadata: { labels: { team: 'web' } } })).status).toBe(200)
    const added = await patch('author', 'agents', 'shared', { spec: { tools: [{ name: 'gh', type: 'api', credentialsSecretRef: { name: 'db' } }] } })
    expect(added.status).toBe(403)
    expect(messageOf(added)).toBe(agentDenied('shared', `${user('author')} may not get Secret db in namespace ${NS}, which the Agent names`))
    const image = await patch('author', 'agents', 'shared', { spec: { runtime: { image: 'example/other:1' } } })
    expect(image.status).toBe(403)
  })

  it('purko.io/approve-promotion needs the approve verb: patch rights alone are refused', async () => {
    await seed('agents', agent('promoted'))
    const refused = await patch('author', 'agents', 'promoted', { metadata: { annotations: { 'purko.io/approve-promotion': 'ha' } } })
    expect(refused.status).toBe(403)
    expect(messageOf(refused)).toBe(agentDenied('promoted', `user ${user('author')} may not approve promotions of Agent promoted (purko.io/approve-promotion needs the approve verb on agents.purko.io)`))
    expect((await patch('approver', 'agents', 'promoted', { metadata: { annotations: { 'purko.io/approve-promotion': 'ha' } } })).status).toBe(200)
    // Removing it (the autonomy engine consuming it) is no approval.
    expect((await patch('author', 'agents', 'promoted', { metadata: { annotations: { 'purko.io/approve-promotion': null } } })).status).toBe(200)
  })

  it.each(['purko.io/approve-publish', 'purko.io/deny-publish', 'kinetic.dev/decision-publish'])('setting %s on a Workflow needs the approve verb; removing it does not', async (annotation) => {
    const name = `wf-${annotation.split('/')[1]}`
    await seed('workflows', workflow(name))
    const refused = await patch('author', 'workflows', name, { metadata: { annotations: { [annotation]: 'true' } } })
    expect(refused.status).toBe(403)
    expect(messageOf(refused)).toBe(denied('workflows', name, 'kinetic-workflows', `user ${user('author')} may not approve or deny steps of Workflow ${name} (${annotation} needs the approve verb on workflows.purko.io)`))
    expect((await patch('approver', 'workflows', name, { metadata: { annotations: { [annotation]: 'true' } } })).status).toBe(200)
    // Unchanged it is no decision; other edits pass; removing it (a rerun) passes.
    expect((await patch('author', 'workflows', name, { metadata: { labels: { seen: 'yes' } }, spec: { description: 'edited' } })).status).toBe(200)
    expect((await patch('author', 'workflows', name, { metadata: { annotations: { [annotation]: null } } })).status).toBe(200)
  })

  it('a Workflow cannot arrive already approved, and its webhook secret must be one its author may get', async () => {
    const approved = await dry('author', 'workflows', workflow('pre', {}, { 'purko.io/approve-publish': 'true' }))
    expect(approved.status).toBe(403)
    const hook = { trigger: { webhook: { secret: { name: 'hidden' } } } }
    const refused = await dry('author', 'workflows', workflow('hook', hook))
    expect(refused.status).toBe(403)
    expect(messageOf(refused)).toBe(denied('workflows', 'hook', 'kinetic-workflows', `${user('author')} may not get Secret hidden in namespace ${NS}, which spec.trigger.webhook.secret names`))
    expect((await dry('reader', 'workflows', workflow('hook', hook))).status).toBe(201)
    expect((await dry('author', 'workflows', workflow('plain'))).status).toBe(201)
  })

  it('an MCPServer\'s bearer secretRef and env Secrets must be ones its author may get', async () => {
    for (const spec of [{ auth: 'bearer', secretRef: 'hidden' }, { env: envSecret('hidden') }]) {
      const refused = await dry('author', 'mcpservers', mcpServer('m', spec))
      expect(refused.status).toBe(403)
      expect(messageOf(refused)).toBe(denied('mcpservers', 'm', 'kinetic-mcpservers', `${user('author')} may not get Secret hidden in namespace ${NS}, which the MCPServer names`))
      expect((await dry('reader', 'mcpservers', mcpServer('m', spec))).status).toBe(201)
    }
    expect((await dry('named', 'mcpservers', mcpServer('m', { auth: 'bearer', secretRef: 'token', env: envSecret('db', 'db') }))).status).toBe(201)
  })

  it('hostNetwork needs use on mcpservers/hostnetwork; a server already on it may still be edited', async () => {
    const refused = await dry('author', 'mcpservers', mcpServer('net', { hostNetwork: true }))
    expect(refused.status).toBe(403)
    expect(messageOf(refused)).toBe(denied('mcpservers', 'net', 'kinetic-mcpservers', `user ${user('author')} may not run MCPServer net on the node network (spec.hostNetwork needs use on mcpservers/hostnetwork)`))
    expect((await dry('hostnet', 'mcpservers', mcpServer('net', { hostNetwork: true }))).status).toBe(201)
    await seed('mcpservers', mcpServer('on-host', { hostNetwork: true }))
    expect((await patch('author', 'mcpservers', 'on-host', { spec: { replicas: 2 } })).status).toBe(200)
    await seed('mcpservers', mcpServer('off-host'))
    expect((await patch('author', 'mcpservers', 'off-host', { spec: { hostNetwork: true } })).status).toBe(403)
  })
})
