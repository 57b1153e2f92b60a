// The recipe verbs of the Kube port, through the real client-node adapter against the embedded
// API server with Kinetic's CRDs, and the same behaviour of EmbeddedKube where the engine tests rely
// on it: server-side apply of children (plain JSON back, refusals with the server's words),
// uid-guarded deletes, and recipe/policy reads and guarded writes.
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { ApiextensionsV1Api, CustomObjectsApi, loadYaml, type V1CustomResourceDefinition } from '@kubernetes/client-node'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ConflictError, RefusedError } from '../../shared/core/errors.js'
import { KubeClient } from '../../shared/kube/client.js'
import type { ChildObject, Kube } from '../../shared/kube/port.js'
import type { WorkflowRecipe } from '../../shared/schemas/workflowrecipe.js'
import { startApiServer, type ApiServer } from '../../local/apiserver/index.js'
import { EmbeddedKube } from '../support/embedded-kube.js'

const NS = 'recipes-port'
const RFC3339 = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/
const LABELS = { 'purko.io/recipe': 'shop', 'purko.io/recipe-namespace': NS }

const deployment = (image: string, extra: Record<string, string> = {}): ChildObject => ({
  apiVersion: 'apps/v1', kind: 'Deployment',
  metadata: { name: 'shop-web', namespace: NS, labels: { ...LABELS, ...extra } },
  spec: {
    replicas: 1,
    selector: { matchLabels: { app: 'shop-web' } },
    template: { metadata: { labels: { app: 'shop-web' } }, spec: { containers: [{ name: 'web', image }] } },
  },
})
const statefulSet = (): ChildObject => ({
  apiVersion: 'apps/v1', kind: 'StatefulSet',
  metadata: { name: 'shop-db', namespace: NS, labels: LABELS },
  spec: {
    serviceName: 'shop-db', selector: { matchLabels: { app: 'shop-db' } },
    template: { metadata: { labels: { app: 'shop-db' } }, spec: { containers: [{ name: 'db', image: 'postgres:16' }] } },
  },
})
const mcpServer = (category: string): ChildObject => ({
  apiVersion: 'purko.io/v1alpha1', kind: 'MCPServer',
  metadata: { name: 'shop-tools', namespace: NS, labels: LABELS },
  spec: { image: 'tools:1', category },
})
const secret = (value: string): ChildObject => ({
  apiVersion: 'v1', kind: 'Secret', metadata: { name: 'shop-env', namespace: NS, labels: LABELS }, type: 'Opaque', data: { KEY: Buffer.from(value).toString('base64') },
})
const recipeBody = (name: string) => ({
  apiVersion: 'purko.io/v1alpha1', kind: 'WorkflowRecipe',
  metadata: { name, namespace: NS }, spec: { workloads: [{ name: 'web', kind: 'Deployment', image: 'nginx:1.27' }] },
})
const policyBody = (name: string) => ({
  apiVersion: 'purko.io/v1alpha1', kind: 'WorkflowRecipePolicy', metadata: { name }, spec: { mode: 'Audit', images: { requireDigest: true } },
})

describe('KubeClient recipe verbs on the embedded API server', () => {
  let api: ApiServer
  let kube: KubeClient
  let custom: CustomObjectsApi

  beforeAll(async () => {
    api = await startApiServer()
    const kc = api.kubeConfigObject()
    kube = new KubeClient(kc)
    custom = kc.makeApiClient(CustomObjectsApi)
    const ext = kc.makeApiClient(ApiextensionsV1Api)
    const dir = join(import.meta.dirname, '../../crds')
    for (const file of readdirSync(dir).filter((f) => f.endsWith('.purko.io.yaml'))) {
      await ext.createCustomResourceDefinition({ body: loadYaml<V1CustomResourceDefinition>(readFileSync(join(dir, file), 'utf8')) })
    }
  })

  afterAll(async () => {
    await api?.close()
  })

  it('applies a Deployment: creates it, then updates it in place (same uid, generation up), as kinetic, with string timestamps', async () => {
    const created = await kube.applyChild(deployment('nginx:1.27'))
    expect(created.metadata?.uid).toEqual(expect.any(String))
    expect(created.metadata?.generation).toBe(1)
    expect(created.metadata?.creationTimestamp).toMatch(RFC3339)
    expect(created.kind).toBe('Deployment')
    const managers = (created.metadata?.managedFields as Array<{ manager: string; operation: string; time: unknown }>)
    expect(managers).toContainEqual(expect.objectContaining({ manager: 'kinetic', operation: 'Apply' }))
    expect(managers.every((m) => typeof m.time === 'string')).toBe(true)

    const updated = await kube.applyChild(deployment('nginx:1.28'))
    expect(updated.metadata?.uid).toBe(created.metadata?.uid)
    expect(updated.metadata?.generation).toBe(2)
    expect((updated.spec as any).template.spec.containers[0].image).toBe('nginx:1.28')

    const read = await kube.getChild('Deployment', NS, 'shop-web')
    expect(read).toMatchObject({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { uid: created.metadata?.uid, resourceVersion: updated.metadata?.resourceVersion } })
    expect(read?.metadata?.creationTimestamp).toMatch(RFC3339)
  })

  it('re-applies an unchanged manifest without a new resourceVersion', async () => {
    const first = await kube.applyChild(statefulSet())
    const again = await kube.applyChild(statefulSet())
    expect(again.metadata?.resourceVersion).toBe(first.metadata?.resourceVersion)
    expect(again.metadata?.generation).toBe(1)
  })

  it('applies core and purko children too (Secret under /api/v1, MCPServer under purko.io), and lists them by label with kind set', async () => {
    const s1 = await kube.applyChild(secret('one'))
    const s2 = await kube.applyChild(secret('two'))
    expect(s2.metadata?.uid).toBe(s1.metadata?.uid)
    expect(s2.data).toEqual({ KEY: Buffer.from('two').toString('base64') })

    const m1 = await kube.applyChild(mcpServer('tools'))
    const m2 = await kube.applyChild(mcpServer('shop'))
    expect(m2.metadata).toMatchObject({ uid: m1.metadata?.uid, generation: 2 })
    expect(m2.spec).toMatchObject({ image: 'tools:1', category: 'shop' })

    const secrets = await kube.listChildren('Secret', NS, LABELS)
    expect(secrets.map((s) => [s.apiVersion, s.kind, s.metadata?.name])).toEqual([['v1', 'Secret', 'shop-env']])
    const servers = await kube.listChildren('MCPServer', NS, { 'purko.io/recipe': 'shop' })
    expect(servers.map((s) => s.metadata?.name)).toEqual(['shop-tools'])
    expect(await kube.listChildren('Deployment', NS, { 'purko.io/recipe': 'other' })).toEqual([])
    expect(await kube.getChild('Service', NS, 'absent')).toBeNull()
  })

  it('refuses an invalid child for good: RefusedError with the API server\'s own message and code', async () => {
    const bad = { ...deployment('nginx:1.27'), metadata: { name: 'Shop_Web', namespace: NS } }
    const err = await kube.applyChild(bad).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(RefusedError)
    expect((err as RefusedError).code).toBe(422)
    expect((err as RefusedError).message).toMatch(/^Deployment\.apps "Shop_Web" is invalid: metadata\.name/)

    const invalidSpec = { ...mcpServer('tools'), metadata: { name: 'shop-bad', namespace: NS }, spec: { category: 'x' } }
    const crdErr = await kube.applyChild(invalidSpec).catch((e: unknown) => e)
    expect(crdErr).toBeInstanceOf(RefusedError)
    expect((crdErr as RefusedError).code).toBe(422)
    expect((crdErr as RefusedError).message).toContain('MCPServer.purko.io "shop-bad" is invalid')
    expect(await kube.getChild('MCPServer', NS, 'shop-bad')).toBeNull()
  })

  it('deletes by uid only the object meant: a stale uid leaves the new same-named object alone; gone is not an error', async () => {
    const manifest = { ...deployment('nginx:1.27'), metadata: { name: 'shop-worker', namespace: NS, labels: LABELS } }
    const old = await kube.applyChild(manifest)
    await kube.deleteChild('Deployment', NS, 'shop-worker', { propagationPolicy: 'Background', uid: old.metadata?.uid })
    expect(await kube.getChild('Deployment', NS, 'shop-worker')).toBeNull()

    const replacement = await kube.applyChild(manifest)
    expect(replacement.metadata?.uid).not.toBe(old.metadata?.uid)
    await kube.deleteChild('Deployment', NS, 'shop-worker', { propagationPolicy: 'Foreground', uid: old.metadata?.uid })
    expect((await kube.getChild('Deployment', NS, 'shop-worker'))?.metadata?.uid).toBe(replacement.metadata?.uid)

    await kube.deleteChild('Deployment', NS, 'shop-worker', { propagationPolicy: 'Background' })
    expect(await kube.getChild('Deployment', NS, 'shop-worker')).toBeNull()
    await kube.deleteChild('Deployment', NS, 'shop-worker', { propagationPolicy: 'Background' })
    await kube.deleteChild('Secret', NS, 'never-was', { propagationPolicy: 'Background', uid: 'nope' })
  })

  it('deletes a ConfigMap, and a missing one is not an error', async () => {
    await kube.createConfigMap({ metadata: { name: 'shop-rev-1', namespace: NS }, data: { a: '1' } })
    await kube.deleteConfigMap(NS, 'shop-rev-1')
    expect(await kube.getConfigMap(NS, 'shop-rev-1')).toBeNull()
    await kube.deleteConfigMap(NS, 'shop-rev-1')
  })

  it('reads, lists, patches and writes the status of recipes, with 409 on a stale resourceVersion', async () => {
    await custom.createNamespacedCustomObject({ group: 'purko.io', version: 'v1alpha1', namespace: NS, plural: 'workflowrecipes', body: recipeBody('shop') })
    expect(await kube.getRecipe(NS, 'absent')).toBeNull()
    const recipe = (await kube.getRecipe(NS, 'shop'))!
    expect(recipe.spec.workloads?.[0]?.name).toBe('web')
    expect((await kube.listAllRecipes()).map((r) => r.metadata.name)).toEqual(['shop'])

    const patched = await kube.patchRecipeMetadata(NS, 'shop', recipe.metadata.resourceVersion!, {
      finalizers: ['purko.io/recipe-finalizer'], annotations: { 'purko.io/observed': 'x' },
    })
    expect(patched.metadata).toMatchObject({ finalizers: ['purko.io/recipe-finalizer'], annotations: { 'purko.io/observed': 'x' } })
    const unannotated = await kube.patchRecipeMetadata(NS, 'shop', patched.metadata.resourceVersion!, { annotations: { 'purko.io/observed': null } })
    expect(unannotated.metadata.annotations?.['purko.io/observed']).toBeUndefined()
    await expect(kube.patchRecipeMetadata(NS, 'shop', recipe.metadata.resourceVersion!, { finalizers: [] })).rejects.toBeInstanceOf(ConflictError)

    const withStatus = await kube.replaceRecipeStatus(NS, 'shop', unannotated.metadata.resourceVersion!, {
      phase: 'Candidate', observedGeneration: 1, phaseTransitionTime: '2026-03-01T10:00:00Z',
    })
    expect(withStatus.status).toMatchObject({ phase: 'Candidate', observedGeneration: 1 })
    expect((await kube.getRecipe(NS, 'shop'))?.status?.phase).toBe('Candidate')
    await expect(kube.replaceRecipeStatus(NS, 'shop', unannotated.metadata.resourceVersion!, { phase: 'Active' })).rejects.toBeInstanceOf(ConflictError)

    // Deleted with our finalizer, it stays until the finalizer goes; then it is gone.
    await custom.deleteNamespacedCustomObject({ group: 'purko.io', version: 'v1alpha1', namespace: NS, plural: 'workflowrecipes', name: 'shop' })
    const deleting = (await kube.getRecipe(NS, 'shop'))!
    expect(deleting.metadata.deletionTimestamp).toMatch(RFC3339)
    await kube.patchRecipeMetadata(NS, 'shop', deleting.metadata.resourceVersion!, { finalizers: [] })
    expect(await kube.getRecipe(NS, 'shop')).toBeNull()
  })

  it('reads and lists cluster-scoped recipe policies and replaces their status, with 409 on a stale resourceVersion', async () => {
    await custom.createClusterCustomObject({ group: 'purko.io', version: 'v1alpha1', plural: 'workflowrecipepolicies', body: policyBody('baseline') })
    expect(await kube.getRecipePolicy('absent')).toBeNull()
    const policy = (await kube.getRecipePolicy('baseline'))!
    expect(policy.spec).toMatchObject({ mode: 'Audit', images: { requireDigest: true } })
    expect((await kube.listRecipePolicies()).map((p) => p.metadata.name)).toEqual(['baseline'])

    const written = await kube.replaceRecipePolicyStatus('baseline', policy.metadata.resourceVersion!, {
      observedGeneration: 1, totalViolations: 1, violations: [{ namespace: NS, recipe: 'shop', rule: 'images.requireDigest', message: 'nginx:1.27 has no digest' }],
      lastEvaluationTime: '2026-03-01T10:00:00Z',
    })
    expect(written.status).toMatchObject({ totalViolations: 1, lastEvaluationTime: '2026-03-01T10:00:00Z' })
    await expect(kube.replaceRecipePolicyStatus('baseline', policy.metadata.resourceVersion!, { totalViolations: 0 })).rejects.toBeInstanceOf(ConflictError)
  })
})

describe('EmbeddedKube recipe verbs', () => {
  const recipe = (): WorkflowRecipe => ({
    apiVersion: 'purko.io/v1alpha1', kind: 'WorkflowRecipe',
    metadata: { name: 'shop', namespace: NS }, spec: { workloads: [{ name: 'web', kind: 'Deployment', image: 'nginx:1.27' }] },
  } as WorkflowRecipe)

  it('applies a child: creates with a uid, keeps labels another writer added, replaces the rest, keeps status, bumps generation on a spec change only', async () => {
    const kube = new EmbeddedKube()
    const port: Kube = kube
    const created = await port.applyChild({ ...deployment('nginx:1.27'), metadata: { ...deployment('nginx:1.27').metadata, annotations: { a: '1' } } })
    expect(created.metadata).toMatchObject({ uid: expect.any(String), generation: 1 })
    kube.setChildStatus('Deployment', NS, 'shop-web', { readyReplicas: 1 })
    kube.putChild({ ...kube.child('Deployment', NS, 'shop-web')!, metadata: { ...kube.child('Deployment', NS, 'shop-web')!.metadata, labels: { ...LABELS, foreign: 'yes' } } })

    const writes = kube.writes.length
    const same = await port.applyChild({ ...deployment('nginx:1.27'), metadata: { ...deployment('nginx:1.27').metadata, annotations: { a: '1' } } })
    expect(kube.writes.length).toBe(writes)
    expect(same.metadata?.generation).toBe(1)

    // A complete manifest, as Kinetic always applies (a field it stops sending is removed by the API server).
    const updated = await port.applyChild({ ...deployment('nginx:1.28', { extra: 'x' }), metadata: { ...deployment('nginx:1.28', { extra: 'x' }).metadata, annotations: { a: '1' } } })
    expect(updated.metadata).toMatchObject({ uid: created.metadata?.uid, generation: 2, labels: { ...LABELS, foreign: 'yes', extra: 'x' }, annotations: { a: '1' } })
    expect(updated.status).toEqual({ readyReplicas: 1 })
    expect(kube.children('Deployment')).toHaveLength(1)
    expect(kube.writes.at(-1)).toBe('apply Deployment/shop-web')
    expect(await port.listChildren('Deployment', NS, { extra: 'x' })).toHaveLength(1)
  })

  it('refuses an apply it was told to, and deletes only the uid meant', async () => {
    const kube = new EmbeddedKube().refuseApply('Deployment', NS, 'shop-web', 422, 'Deployment.apps "shop-web" is invalid')
    await expect(kube.applyChild(deployment('x'))).rejects.toEqual(expect.objectContaining({ name: 'RefusedError', code: 422, message: 'Deployment.apps "shop-web" is invalid' }))
    kube.allowApply('Deployment', NS, 'shop-web')
    const live = await kube.applyChild(deployment('x'))

    await kube.deleteChild('Deployment', NS, 'shop-web', { propagationPolicy: 'Background', uid: 'stale' })
    expect(kube.child('Deployment', NS, 'shop-web')).toBeDefined()
    await kube.deleteChild('Deployment', NS, 'shop-web', { propagationPolicy: 'Background', uid: live.metadata?.uid })
    expect(kube.child('Deployment', NS, 'shop-web')).toBeUndefined()
    await kube.deleteChild('Deployment', NS, 'shop-web', { propagationPolicy: 'Background' })
    expect(kube.writes.filter((w) => w.startsWith('delete'))).toEqual(['delete Deployment/shop-web'])
  })

  it('patches recipe metadata (null removes an annotation), guards by resourceVersion, and removes a deleted recipe whose last finalizer goes', async () => {
    const kube = new EmbeddedKube({ recipes: [recipe()] })
    const stored = (await kube.getRecipe(NS, 'shop'))!
    const patched = await kube.patchRecipeMetadata(NS, 'shop', stored.metadata.resourceVersion!, { finalizers: ['f'], annotations: { a: '1', b: '2' } })
    const cleared = await kube.patchRecipeMetadata(NS, 'shop', patched.metadata.resourceVersion!, { annotations: { a: null } })
    expect(cleared.metadata).toMatchObject({ finalizers: ['f'], annotations: { b: '2' } })
    await expect(kube.patchRecipeMetadata(NS, 'shop', stored.metadata.resourceVersion!, {})).rejects.toBeInstanceOf(ConflictError)
    await expect(kube.replaceRecipeStatus(NS, 'shop', stored.metadata.resourceVersion!, { phase: 'Active' })).rejects.toBeInstanceOf(ConflictError)

    const deleting = kube.markRecipeDeleted(NS, 'shop')!
    expect(deleting.metadata.deletionTimestamp).toBeDefined()
    await kube.patchRecipeMetadata(NS, 'shop', deleting.metadata.resourceVersion!, { finalizers: [] })
    expect(await kube.getRecipe(NS, 'shop')).toBeNull()
  })

  it('writes recipe policy status guarded by resourceVersion', async () => {
    const kube = new EmbeddedKube({ recipePolicies: [policyBody('baseline') as never] })
    const policy = (await kube.getRecipePolicy('baseline'))!
    const written = await kube.replaceRecipePolicyStatus('baseline', policy.metadata.resourceVersion!, { totalViolations: 0 })
    expect(written.status).toEqual({ totalViolations: 0 })
    await expect(kube.replaceRecipePolicyStatus('baseline', policy.metadata.resourceVersion!, {})).rejects.toBeInstanceOf(ConflictError)
    expect((await kube.listRecipePolicies()).map((p) => p.metadata.name)).toEqual(['baseline'])
  })
})
