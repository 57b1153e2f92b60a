// spec §12 on a real kube-apiserver (v1.34): the shipped ValidatingAdmissionPolicy
// kinetic-workflowrecipes (knative/admission/recipes.yaml) with the shipped ClusterRoles
// kinetic-recipe-author and kinetic-recipe-approver (spec §15), judged for real users (ServiceAccount
// tokens, so RBAC applies as to anyone): Secret references need get on the Secret, approvals need
// the `approve` verb, purko.io/approved-by must be the requesting user, and metadata-only changes
// never trigger the rules.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { beforeAll, expect, it } from 'vitest'
import { KubeHttp, type KubeObject, type KubeResponse } from '../../local/knative/kube-http.js'
import { eventually } from '../support/eventually.js'
import { parseDocuments, ROOT } from '../knative/manifests.js'
import { describeCluster, useControlPlane } from './tier.js'

const NS = 'recipe-admission'
const RECIPES = `/apis/purko.io/v1alpha1/namespaces/${NS}/workflowrecipes`
const POLICY = 'kinetic-workflowrecipes'
const user = (name: string) => `system:serviceaccount:${NS}:${name}`
const shipped = (file: string) => parseDocuments(readFileSync(join(ROOT, 'knative', 'admission', file), 'utf8'), file) as KubeObject[]

type Json = Record<string, any>
/** A one-Deployment recipe; `workload` is merged over the Deployment. */
function recipe(name: string, workload: Json = {}, spec: Json = {}, annotations?: Record<string, string>): Json {
  return {
    apiVersion: 'purko.io/v1alpha1', kind: 'WorkflowRecipe',
    metadata: { name, namespace: NS, ...(annotations ? { annotations } : {}) },
    spec: { workloads: [{ name: 'web', kind: 'Deployment', image: 'nginx:1.27', ...workload }], ...spec },
  }
}
const envSecret = (...names: string[]) => ({ envSecret: names.map((secretName, i) => ({ name: `V${i}`, secretName, key: 'value' })) })
const aTest = (...names: string[]) => ({ tests: [{ name: 'smoke', image: 'busybox:1.36', ...envSecret(...names) }] })
const bearer = (secretName: string) => ({ transport: 'stdio', mcp: { auth: 'bearer', tokenSecret: { secretName, key: 'token' } } })

const secretsMessage = (who: string) => `${user(who)} may not get every Secret that envSecret or mcp.tokenSecret names in namespace ${NS}`
const decisionMessage = (who: string, name: string) => `user ${user(who)} may not approve or reject WorkflowRecipe ${name}`
const approverMessage = (who: string) => `purko.io/approved-by must be the requesting user (${user(who)})`
/** The API server's refusal of recipe `name`, carrying the policy's message. */
const denied = (name: string, message: string) => `workflowrecipes.purko.io "${name}" is forbidden: ValidatingAdmissionPolicy '${POLICY}' with binding '${POLICY}' denied request: ${message}`

const messageOf = (res: KubeResponse) => String((res.body as { message?: unknown } | undefined)?.message ?? res.text)

describeCluster('the spec §12 admission policy on a real kube-apiserver', () => {
  // The controller manager runs the policy's type checking (status.typeChecking).
  const cp = useControlPlane({ controllerManager: true })
  const as: Record<string, KubeHttp> = {}

  const create = (who: string, obj: Json) => as[who]!.send('POST', RECIPES, obj)
  const patch = (who: string, name: string, body: Json) => as[who]!.send('PATCH', `${RECIPES}/${name}`, body, 'application/merge-patch+json')
  const annotate = (who: string, name: string, annotations: Record<string, string | null>) => patch(who, name, { metadata: { annotations } })
  /** Creates a recipe as the admin (who may read every Secret), for the update tests. */
  const seed = async (obj: Json) => {
    const res = await cp.current.admin.send('POST', RECIPES, obj)
    expect(res.status, res.text).toBe(201)
  }

  beforeAll(async () => {
    const admin = cp.current.admin
    const crd = parseDocuments(readFileSync(join(ROOT, 'crds', 'workflowrecipes.purko.io.yaml'), 'utf8'), 'crd')[0]!
    await admin.request('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', crd)
    await eventually('the WorkflowRecipe CRD is Established', async () =>
      ((await admin.get('/apis/apiextensions.k8s.io/v1/customresourcedefinitions/workflowrecipes.purko.io'))?.status as { conditions?: Json[] } | undefined)
        ?.conditions?.some((c) => c.type === 'Established' && c.status === 'True'))
    admin.forgetDiscovery()
    await admin.request('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } })
    for (const obj of [...shipped('recipes.yaml'), ...shipped('recipe-roles.yaml')]) {
      const path = await admin.pathFor(obj.apiVersion!, obj.kind!)
      await admin.request('POST', `${path}?fieldValidation=Strict`, obj)
    }
    for (const name of ['db', 'token', 'hidden']) {
      await admin.request('POST', `/api/v1/namespaces/${NS}/secrets`, { apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace: NS }, stringData: { value: 'x', token: 'y' } })
    }
    const role = async (name: string, rule: Json) =>
      admin.request('POST', `/apis/rbac.authorization.k8s.io/v1/namespaces/${NS}/roles`, { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name }, rules: [rule] })
    await role('secrets-reader', { apiGroups: [''], resources: ['secrets'], verbs: ['get'] })
    await role('named-secrets', { apiGroups: [''], resources: ['secrets'], resourceNames: ['db', 'token'], verbs: ['get'] })
    const bind = async (who: string, kind: 'Role' | 'ClusterRole', name: string) =>
      admin.request('POST', `/apis/rbac.authorization.k8s.io/v1/namespaces/${NS}/rolebindings`, {
        apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: `${who}-${name}` },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind, name }, subjects: [{ kind: 'ServiceAccount', name: who, namespace: NS }],
      })
    // reader: author + every Secret; named: author + db and token only; blind: author, no Secret;
    // approver: approver (no Secret, no create).
    const grants: Record<string, Array<['Role' | 'ClusterRole', string]>> = {
      reader: [['ClusterRole', 'kinetic-recipe-author'], ['Role', 'secrets-reader']],
      named: [['ClusterRole', 'kinetic-recipe-author'], ['Role', 'named-secrets']],
      blind: [['ClusterRole', 'kinetic-recipe-author']],
      approver: [['ClusterRole', 'kinetic-recipe-approver']],
    }
    for (const [who, roles] of Object.entries(grants)) {
      as[who] = new KubeHttp((await cp.current.serviceAccountKubeconfig(NS, who)).kubeConfig)
      for (const [kind, name] of roles) await bind(who, kind, name)
    }
    // The admission plugin picks up a new policy and binding within a few seconds.
    await eventually('the policy refuses a Secret reference of a user who may not read it', async () =>
      (await as.blind!.send('POST', `${RECIPES}?dryRun=All`, recipe('probe', envSecret('db')))).status === 403, 30_000, 250)
  }, 120_000)

  it('is type-checked against the WorkflowRecipe CRD schema with no warnings', async () => {
    const status = await eventually('the policy has been type-checked', async () => {
      const vap = await cp.current.admin.get(`/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies/${POLICY}`)
      const s = vap?.status as { observedGeneration?: number; typeChecking?: { expressionWarnings?: Json[] } } | undefined
      return s?.observedGeneration === (vap?.metadata as { generation?: number }).generation ? s : undefined
    })
    expect(JSON.stringify(status.typeChecking?.expressionWarnings ?? [], null, 1)).toBe('[]')
  })

  it.each<[string, Json]>([
    ['workloads[].envSecret', recipe('x', envSecret('db'))],
    ['tests[].envSecret', recipe('x', {}, aTest('db'))],
    ['workloads[].mcp.tokenSecret', recipe('x', bearer('token'))],
    ['all three, with repeats', recipe('x', { ...envSecret('db', 'db', 'token'), ...bearer('token') }, aTest('db', 'hidden'))],
  ])('an author who may get every Secret of the namespace may name one in %s', async (_, obj) => {
    const res = await as.reader!.send('POST', `${RECIPES}?dryRun=All`, obj)
    expect(res.status, res.text).toBe(201)
  })

  it.each<[string, Json]>([
    ['workloads[].envSecret', recipe('x', envSecret('db'))],
    ['tests[].envSecret', recipe('x', {}, aTest('db'))],
    ['workloads[].mcp.tokenSecret', recipe('x', bearer('token'))],
  ])('an author who may not get the Secret is refused when %s names it, with the spec §12 message', async (_, obj) => {
    const res = await as.blind!.send('POST', `${RECIPES}?dryRun=All`, obj)
    expect(res.status).toBe(403)
    expect(messageOf(res)).toBe(denied('x', secretsMessage('blind')))
  })

  it('an author without Secret rights may still create a recipe that names no Secret', async () => {
    const res = await create('blind', recipe('plain'))
    expect(res.status, res.text).toBe(201)
  })

  it('an author whose Secret access is by name may name exactly those Secrets, and is refused for any other', async () => {
    expect((await create('named', recipe('by-name', { ...envSecret('db'), ...bearer('token') }))).status).toBe(201)
    const res = await as.named!.send('POST', `${RECIPES}?dryRun=All`, recipe('x', envSecret('db', 'hidden')))
    expect(res.status).toBe(403)
    expect(messageOf(res)).toBe(denied('x', secretsMessage('named')))
  })

  it('on update, a spec change is checked again, but metadata-only changes (labels, finalizers, other annotations) are not', async () => {
    await seed(recipe('shared', envSecret('hidden')))
    expect((await patch('blind', 'shared', { metadata: { labels: { team: 'web' }, finalizers: ['example.com/hold'] } })).status).toBe(200)
    expect((await annotate('blind', 'shared', { 'purko.io/retry': '1' })).status).toBe(200)
    expect((await patch('blind', 'shared', { metadata: { finalizers: null } })).status).toBe(200)
    const res = await patch('blind', 'shared', { spec: { description: 'changed' } })
    expect(res.status).toBe(403)
    expect(messageOf(res)).toBe(denied('shared', secretsMessage('blind')))
    expect((await patch('reader', 'shared', { spec: { description: 'changed' } })).status).toBe(200)
  })

  it.each(['purko.io/approve', 'purko.io/reject'])('setting %s needs the approve verb: an author is refused, an approver is allowed', async (annotation) => {
    const name = annotation === 'purko.io/approve' ? 'to-approve' : 'to-reject'
    await seed(recipe(name, {}, { requireApproval: true }))
    const refused = await annotate('blind', name, { [annotation]: '1' })
    expect(refused.status).toBe(403)
    expect(messageOf(refused)).toBe(denied(name, decisionMessage('blind', name)))
    expect((await annotate('approver', name, { [annotation]: '1', 'purko.io/approved-by': user('approver') })).status).toBe(200)
    // Unchanged, it is no decision: the author may keep editing metadata; changing its value is one.
    expect((await patch('blind', name, { metadata: { labels: { edited: 'yes' } } })).status).toBe(200)
    expect((await annotate('blind', name, { [annotation]: '2' })).status).toBe(403)
    expect((await annotate('approver', name, { [annotation]: '2' })).status).toBe(200)
  })

  it('an author cannot create a recipe that arrives already approved', async () => {
    const res = await create('reader', recipe('preapproved', {}, {}, { 'purko.io/approve': '1' }))
    expect(res.status).toBe(403)
    expect(messageOf(res)).toBe(denied('preapproved', decisionMessage('reader', 'preapproved')))
  })

  it('purko.io/approved-by must name the requesting user when it is added or changed', async () => {
    await seed(recipe('signed', {}, { requireApproval: true }))
    const forged = await annotate('approver', 'signed', { 'purko.io/approve': '1', 'purko.io/approved-by': 'someone-else' })
    expect(forged.status).toBe(403)
    expect(messageOf(forged)).toBe(denied('signed', approverMessage('approver')))
    expect((await annotate('approver', 'signed', { 'purko.io/approve': '1', 'purko.io/approved-by': user('approver') })).status).toBe(200)
    const changed = await annotate('blind', 'signed', { 'purko.io/approved-by': user('blind') })
    expect(changed.status).toBe(200)
    const stolen = await annotate('blind', 'signed', { 'purko.io/approved-by': user('approver') })
    expect(stolen.status).toBe(403)
    expect(messageOf(stolen)).toBe(denied('signed', approverMessage('blind')))
  })

  it('an author whose Secret access is by name is judged one check per reference, within the cost budget', async () => {
    const res = await as.named!.send('POST', `${RECIPES}?dryRun=All`, recipe('x', envSecret('db', 'db', 'db')))
    expect({ status: res.status, message: messageOf(res) }).toEqual({ status: 201, message: expect.any(String) })
    const four = await as.named!.send('POST', `${RECIPES}?dryRun=All`, recipe('x', { ...envSecret('db', 'db', 'token', 'token'), ...bearer('token') }, aTest('db')))
    expect({ status: four.status, message: messageOf(four) }).toEqual({ status: 201, message: expect.any(String) })
    const many = Array.from({ length: 64 }, (_, i) => (i % 2 === 0 ? 'db' : 'token'))
    const full = await as.named!.send('POST', `${RECIPES}?dryRun=All`, recipe('x', envSecret(...many)))
    expect({ status: full.status, message: messageOf(full) }).toEqual({ status: 201, message: expect.any(String) })
  })
})
