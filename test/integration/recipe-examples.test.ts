// spec §8.1 on the embedded API server with the generated CRDs: every example of
// reference/recipes/examples applies unchanged, and every invalid recipe or policy the CRD must
// refuse is refused with the spec's message (spec §2, §8.1, §10.1).
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { KubernetesObject } from '@kubernetes/client-node'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startApiServer, type ApiServer } from '../../local/apiserver/index.js'
import { parse, parseAllDocuments } from 'yaml'
import { referenceDir } from '../support/reference.js'
import { carries, INVALID, INVALID_POLICIES, recipe, SCHEMA_REFUSALS } from '../crds/recipe-fixtures.js'

let api: ApiServer

const root = join(referenceDir(), 'recipes', 'examples')
const documents = readdirSync(root).filter((f) => f.endsWith('.yaml')).sort()
  .flatMap((file) => parseAllDocuments(readFileSync(join(root, file), 'utf8')).map((d) => d.toJS() as KubernetesObject).filter(Boolean).map((doc) => ({ file, doc })))

interface Answer { status: number; body: { message?: string; details?: { causes?: { field?: string; message?: string }[] } } & Record<string, unknown> }

async function send(method: string, path: string, body?: unknown): Promise<Answer> {
  const res = await fetch(`${api.url}${path}`, {
    method, headers: { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body),
  })
  return { status: res.status, body: await res.json() as Answer['body'] }
}

function collection(doc: KubernetesObject): string {
  const ns = doc.metadata?.namespace
  switch (doc.kind) {
    case 'Namespace': return '/api/v1/namespaces'
    case 'Secret': return `/api/v1/namespaces/${ns}/secrets`
    case 'WorkflowRecipe': return `/apis/purko.io/v1alpha1/namespaces/${ns ?? 'recipes-demo'}/workflowrecipes`
    case 'WorkflowRecipePolicy': return '/apis/purko.io/v1alpha1/workflowrecipepolicies'
    default: throw new Error(`no collection for ${doc.kind}`)
  }
}

beforeAll(async () => {
  api = await startApiServer()
  const dir = join(import.meta.dirname, '../../crds')
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.purko.io.yaml'))) {
    const res = await send('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', parse(readFileSync(join(dir, file), 'utf8')))
    expect(res.status, JSON.stringify(res.body)).toBe(201)
  }
  for (const name of ['recipes-demo', 'mcp-server', 'sandbox-recipes']) await send('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name } })
})

afterAll(async () => {
  await api.close()
})

describe('the recipe examples', () => {
  it('include recipes of every workload kind, MCP, steps, a template and both policy modes', () => {
    const recipes = documents.filter((d) => d.doc.kind === 'WorkflowRecipe')
    const kinds = new Set(recipes.flatMap((d) => ((d.doc as { spec: { workloads?: { kind: string }[] } }).spec.workloads ?? []).map((w) => w.kind)))
    expect([...kinds].sort()).toEqual(['CronJob', 'DaemonSet', 'Deployment', 'Job', 'StatefulSet'])
    expect(documents.filter((d) => d.doc.kind === 'WorkflowRecipePolicy').map((d) => (d.doc as { spec: { mode: string } }).spec.mode).sort()).toEqual(['Audit', 'Enforce'])
    expect(recipes.length).toBeGreaterThanOrEqual(9)
  })

  it.each(documents.filter((d) => d.doc.kind !== 'Namespace').map((d) => [`${d.file}: ${d.doc.kind} ${d.doc.metadata?.name}`, d.doc] as const))(
    '%s applies unchanged', async (_, doc) => {
      const res = await send('POST', collection(doc), doc)
      expect(res.status, JSON.stringify(res.body)).toBe(201)
      if (doc.kind?.startsWith('WorkflowRecipe')) {
        // Nothing the author wrote is pruned: the stored spec contains the whole manifest spec.
        expect((res.body as { spec: unknown }).spec).toMatchObject((doc as unknown as { spec: object }).spec)
      }
    },
  )

  it('stores the defaults of spec §2.1 on a recipe that leaves them out, and the policy defaults of §10.1', async () => {
    const res = await send('POST', collection({ kind: 'WorkflowRecipe' }), recipe('defaults', {}))
    expect(res.status).toBe(201)
    expect(res.body.spec).toMatchObject({
      requireApproval: false, progressDeadlineSeconds: 600, rollback: { automatic: true }, revisionHistoryLimit: 5,
      driftPolicy: 'Correct', deletionPolicy: 'Delete',
    })
    const policy = await send('POST', collection({ kind: 'WorkflowRecipePolicy' }), { apiVersion: 'purko.io/v1alpha1', kind: 'WorkflowRecipePolicy', metadata: { name: 'defaults' }, spec: {} })
    expect(policy.status).toBe(201)
    expect(policy.body.spec).toEqual({ mode: 'Enforce', requireApproval: false, approvalTimeoutSeconds: 0, allowSteps: true })
  })

  it('answers kubectl get wr with Phase, Revision, Ready, Reason and Age, and serves policies cluster-wide', async () => {
    const crd = await send('GET', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/workflowrecipes.purko.io')
    expect((crd.body as any).spec.names.shortNames).toEqual(['wr', 'recipe'])
    expect((crd.body as any).spec.versions[0].additionalPrinterColumns.map((c: { name: string }) => c.name)).toEqual(['Phase', 'Revision', 'Ready', 'Reason', 'Age'])
    const policies = await send('GET', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/workflowrecipepolicies.purko.io')
    expect((policies.body as any).spec.scope).toBe('Cluster')
    expect((policies.body as any).spec.names.shortNames).toEqual(['wrp', 'recipepolicy'])
  })
})

describe('invalid recipes are refused at kubectl apply with the spec\'s message', () => {
  it.each(INVALID)('%s', async (_, obj, message) => {
    const res = await send('POST', collection(obj as KubernetesObject), obj)
    expect(res.status).toBe(422)
    expect(carries(res.body.details?.causes, message), JSON.stringify(res.body.details?.causes)).toBe(true)
  })

  it.each(SCHEMA_REFUSALS)('%s', async (_, obj, field) => {
    const res = await send('POST', collection(obj as KubernetesObject), obj)
    expect(res.status).toBe(422)
    expect((res.body.details?.causes ?? []).map((c) => c.field)).toContain(field)
  })

  it.each(INVALID_POLICIES)('a policy with %s', async (_, obj, message) => {
    const res = await send('POST', collection(obj as KubernetesObject), obj)
    expect(res.status).toBe(422)
    expect(carries(res.body.details?.causes, message), JSON.stringify(res.body.details?.causes)).toBe(true)
  })

  it('accepts the valid neighbours of those cases: a templated replica count, a placeholder quantity, a claim mounted through its volume', async () => {
    const ok = recipe('neighbours', {
      inputs: [{ name: 'n', type: 'integer', default: 2, minimum: 0, maximum: 5 }, { name: 'size', default: '1Gi' }],
      workloads: [
        { name: 'web', kind: 'Deployment', image: 'nginx:1.27', replicas: '{{ inputs.n }}', resources: { requests: { cpu: '100m', memory: '{{inputs.size}}' }, limits: { 'ephemeral-storage': '1.5Gi' } } },
        { name: 'db', kind: 'StatefulSet', image: 'postgres:16', volumes: [{ name: 'data', mountPath: '/data' }], volumeClaimTemplates: [{ name: 'data', storage: '{{inputs.size}}' }] },
        { name: 'mcp', kind: 'Deployment', image: 'mcp/time', transport: 'stdio', replicas: 10, mcp: { auth: 'bearer', tokenSecret: { secretName: 't', key: 'token' } } },
      ],
    })
    const res = await send('POST', collection(ok as KubernetesObject), ok)
    expect(res.status, JSON.stringify(res.body)).toBe(201)
  })
})
