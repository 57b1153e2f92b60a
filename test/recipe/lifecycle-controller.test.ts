import { describe, expect, it } from 'vitest'
import { reconcileRecipe, type RecipeDeps } from '../../shared/recipe/controller.js'
import { ConflictError } from '../../shared/core/errors.js'
import { recipeConfig } from '../../shared/recipe/plan/config.js'
import { WorkflowRecipeSchema, type WorkflowRecipe } from '../../shared/schemas/workflowrecipe.js'
import { EmbeddedKube } from '../support/embedded-kube.js'
import { recordingEvents } from '../fixtures/autonomy.js'
import { testDeps } from '../support/engine-deps.js'

const NS = 'team-a'

function setup(now = '2026-03-01T10:00:00Z') {
  const kube = new EmbeddedKube()
  for (const name of [NS, 'sandbox-recipes', 'mcp-server']) kube.namespaces.set(name, { metadata: { name, labels: { 'kubernetes.io/metadata.name': name } } })
  const events = recordingEvents()
  const clock = { now: new Date(now) }
  const deps: RecipeDeps = { ...testDeps(kube, { now: clock.now }), events, recipes: recipeConfig({}), now: () => clock.now }
  return { kube, deps, events, clock }
}

function recipe(spec: unknown, name = 'shop'): WorkflowRecipe {
  return WorkflowRecipeSchema.parse({ apiVersion: 'purko.io/v1alpha1', kind: 'WorkflowRecipe', metadata: { name, namespace: NS }, spec })
}

/** Plays the workload controllers: Deployments and StatefulSets get every replica, Jobs complete. */
function controllers(kube: EmbeddedKube, opts: { failJobs?: boolean } = {}): void {
  for (const d of kube.children('Deployment')) {
    const replicas = (d.spec as { replicas?: number }).replicas ?? 1
    const status = { observedGeneration: d.metadata?.generation ?? 1, replicas, updatedReplicas: replicas, availableReplicas: replicas, readyReplicas: replicas }
    if (JSON.stringify(d.status) !== JSON.stringify(status)) kube.setChildStatus('Deployment', d.metadata!.namespace!, d.metadata!.name!, status)
  }
  for (const s of kube.children('StatefulSet')) {
    const replicas = (s.spec as { replicas?: number }).replicas ?? 1
    const status = { observedGeneration: s.metadata?.generation ?? 1, replicas, readyReplicas: replicas, updatedReplicas: replicas, currentRevision: 'r1', updateRevision: 'r1' }
    if (JSON.stringify(s.status) !== JSON.stringify(status)) kube.setChildStatus('StatefulSet', s.metadata!.namespace!, s.metadata!.name!, status)
  }
  for (const j of kube.children('Job')) {
    if (Object.keys(j.status ?? {}).length > 0) continue // the API server starts a Job with an empty status
    const type = opts.failJobs ? 'Failed' : 'Complete'
    kube.setChildStatus('Job', j.metadata!.namespace!, j.metadata!.name!, { startTime: '2026-03-01T10:00:01Z', conditions: [{ type, status: 'True', reason: opts.failJobs ? 'BackoffLimitExceeded' : 'Completed', message: 'done' }] })
  }
}

async function settle(kube: EmbeddedKube, deps: RecipeDeps, name = 'shop', opts: { failJobs?: boolean } = {}): Promise<WorkflowRecipe> {
  for (let i = 0; i < 30; i++) {
    controllers(kube, opts)
    if ((await reconcileRecipe(deps, NS, name)).result !== 'applied') break
  }
  return kube.recipe(NS, name)!
}

const webDb = {
  workloads: [
    { name: 'db', kind: 'StatefulSet', image: 'postgres:16', ports: [{ name: 'pg', port: 5432 }] },
    { name: 'web', kind: 'Deployment', image: 'nginx:1.27', dependsOn: ['db'], ports: [{ name: 'http', port: 80 }] },
  ],
  tests: [{ name: 'smoke', image: 'curlimages/curl:8.10.1', command: ['curl', '-f', 'http://web'] }],
}

describe('reconcileRecipe on EmbeddedKube', () => {
  it('takes a fresh recipe through Candidate, Approved, Pending, Deploying, Testing to Active', async () => {
    const { kube, deps } = setup()
    kube.putRecipe(recipe(webDb))
    const r = await settle(kube, deps)
    expect(r.status?.history?.map((h) => h.to)).toEqual(['Candidate', 'Approved', 'Pending', 'Deploying', 'Testing', 'Active'])
    expect(r.status?.phase).toBe('Active')
    expect(r.status?.currentRevision).toBe(1)
    expect(r.metadata.finalizers).toContain('purko.io/recipe-finalizer')
    expect(r.status?.readyWorkloads).toBe('2/2')
    expect(r.status?.workloads?.map((w) => [w.name, w.kind, w.phase, w.serviceName, w.url])).toEqual([
      ['db', 'StatefulSet', 'Ready', 'team-a-shop-db-d306e21e', 'http://team-a-shop-db-d306e21e.sandbox-recipes.svc:5432'],
      ['web', 'Deployment', 'Ready', 'team-a-shop-web-5101637e', 'http://team-a-shop-web-5101637e.sandbox-recipes.svc:80'],
    ])
    expect(r.status?.tests).toEqual([{ name: 'smoke', jobName: 'team-a-shop-test-smoke-58485c92-r1', phase: 'Succeeded', startTime: '2026-03-01T10:00:01Z' }])
    expect(r.status?.conditions?.filter((c) => c.status !== 'True').map((c) => c.type)).toEqual([])
  })

  it('rolls a bad change back automatically from the snapshot of the last good revision', async () => {
    const { kube, deps } = setup()
    kube.putRecipe(recipe(webDb))
    await settle(kube, deps)
    const good = kube.child('Deployment', 'sandbox-recipes', 'team-a-shop-web-5101637e')!
    const changed = recipe({ ...webDb, workloads: [webDb.workloads[0], { ...webDb.workloads[1], image: 'nginx:1.28' }] })
    kube.putRecipe({ ...changed, metadata: { ...kube.recipe(NS, 'shop')!.metadata }, status: kube.recipe(NS, 'shop')!.status })
    // The new revision's smoke test fails.
    const r = await settle(kube, deps, 'shop', { failJobs: true })
    expect(r.status?.phase).toBe('Active')
    expect(r.status?.reason).toBe('RolledBack')
    expect(r.status?.currentRevision).toBe(1)
    expect(r.status?.lastGoodRevision).toBe(1)
    expect(r.status?.revisions?.map((e) => [e.revision, e.state, e.reason ?? ''])).toEqual([[1, 'Active', ''], [2, 'Failed', 'TestFailed']])
    const upToDate = r.status?.conditions?.find((c) => c.type === 'UpToDate')
    expect(upToDate).toMatchObject({ status: 'False', reason: 'RolledBack' })
    expect(upToDate?.message).toMatch(/^revision 2 \(generation 2\) failed: TestFailed; running revision 1$/)
    const web = kube.child('Deployment', 'sandbox-recipes', 'team-a-shop-web-5101637e')!
    expect(web.metadata?.annotations?.['purko.io/manifest-digest']).toBe(good.metadata?.annotations?.['purko.io/manifest-digest'])
    expect(JSON.stringify(web.spec)).toContain('nginx:1.27')
    expect(r.status?.history?.map((h) => h.to).slice(-5)).toEqual(['Pending', 'Deploying', 'Testing', 'RollingBack', 'Active'])
  })

  it('fails the revision with ApplyFailed and the API server\'s words when a child is refused', async () => {
    const { kube, deps } = setup()
    kube.refuseApply('Deployment', 'sandbox-recipes', 'team-a-shop-web-5101637e', 422, 'Deployment.apps "team-a-shop-web-5101637e" is invalid: spec.template.spec.containers[0].image: Required value')
    kube.putRecipe(recipe(webDb))
    const r = await settle(kube, deps)
    expect(r.status?.phase).toBe('Failed')
    expect(r.status?.reason).toBe('ApplyFailed')
    expect(r.status?.message).toContain('spec.template.spec.containers[0].image: Required value')
    expect(kube.events.some((e) => e.reason === 'ApplyFailed' && e.type === 'Warning')).toBe(true)
    // The StatefulSet it depends on was applied; nothing after the refused workload was.
    expect(kube.children('StatefulSet')).toHaveLength(1)
    expect(kube.children('Job')).toHaveLength(0)
  })

  it('deletes children in reverse dependency order, waits for each wave, then releases the finalizer', async () => {
    const { kube, deps } = setup()
    kube.putRecipe(recipe(webDb))
    await settle(kube, deps)
    kube.putChild({ ...kube.child('Deployment', 'sandbox-recipes', 'team-a-shop-web-5101637e')!, metadata: { ...kube.child('Deployment', 'sandbox-recipes', 'team-a-shop-web-5101637e')!.metadata, finalizers: ['example.com/hold'] } })
    kube.markRecipeDeleted(NS, 'shop', '2026-03-01T11:00:00Z')
    // Wave (a) the test Job, then (c) the last workload in order: web, which its finalizer holds.
    for (let i = 0; i < 3; i++) await reconcileRecipe(deps, NS, 'shop')
    const r = kube.recipe(NS, 'shop')!
    expect(r.status?.deletion?.blockedBy).toBe('Deployment sandbox-recipes/team-a-shop-web-5101637e is terminating (finalizers: example.com/hold)')
    expect(kube.child('StatefulSet', 'sandbox-recipes', 'team-a-shop-db-d306e21e')).toBeDefined()
    expect(r.status?.conditions?.find((c) => c.type === 'Ready')).toMatchObject({ status: 'False', reason: 'Deleting' })
    kube.releaseChild('Deployment', 'sandbox-recipes', 'team-a-shop-web-5101637e')
    for (let i = 0; i < 10 && kube.recipe(NS, 'shop'); i++) await reconcileRecipe(deps, NS, 'shop')
    expect(kube.recipe(NS, 'shop')).toBeUndefined()
    for (const kind of ['Deployment', 'StatefulSet', 'Service', 'Job', 'Secret'] as const) expect(kube.children(kind)).toEqual([])
  })

  it('never adopts a foreign object under a child\'s name: Pending with NameConflict, the object untouched', async () => {
    const { kube, deps } = setup()
    const foreign = kube.putChild({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'team-a-shop-web-5101637e', namespace: 'sandbox-recipes', labels: { app: 'theirs' } }, spec: { ports: [{ port: 1 }] } })
    kube.putRecipe(recipe(webDb))
    const r = await settle(kube, deps)
    expect(r.status?.phase).toBe('Pending')
    expect(r.status?.conditions?.find((c) => c.type === 'PrerequisitesMet')).toMatchObject({
      status: 'False', reason: 'NameConflict', message: 'Service sandbox-recipes/team-a-shop-web-5101637e already exists and is not managed by this recipe',
    })
    expect(kube.child('Service', 'sandbox-recipes', 'team-a-shop-web-5101637e')).toEqual(foreign)
    expect(kube.children('Deployment')).toEqual([])
  })

  it('restores a hand-edited child and re-creates a deleted one, leaving a Degraded trace', async () => {
    const { kube, deps } = setup()
    kube.putRecipe(recipe(webDb))
    await settle(kube, deps)
    const web = kube.child('Deployment', 'sandbox-recipes', 'team-a-shop-web-5101637e')!
    const spec = JSON.parse(JSON.stringify(web.spec)) as { template: { spec: { containers: { image: string }[] } } }
    spec.template.spec.containers[0]!.image = 'evil:latest'
    kube.putChild({ ...web, spec })
    controllers(kube) // the Deployment controller observes each new generation (the edit, then the correction)
    await reconcileRecipe(deps, NS, 'shop')
    expect(JSON.stringify(kube.child('Deployment', 'sandbox-recipes', 'team-a-shop-web-5101637e')!.spec)).toContain('nginx:1.27')
    expect(kube.events.some((e) => e.reason === 'DriftCorrected')).toBe(true)
    controllers(kube)

    await kube.deleteChild('StatefulSet', 'sandbox-recipes', 'team-a-shop-db-d306e21e', { propagationPolicy: 'Foreground' })
    await reconcileRecipe(deps, NS, 'shop')
    expect(kube.child('StatefulSet', 'sandbox-recipes', 'team-a-shop-db-d306e21e')).toBeDefined()
    expect(kube.recipe(NS, 'shop')!.status?.phase).toBe('Degraded')
    const r = await settle(kube, deps)
    expect(r.status?.phase).toBe('Active')
    expect(r.status?.history?.map((h) => `${h.to}:${h.reason}`).slice(-2)).toEqual(['Degraded:ChildMissing', 'Active:Recovered'])
  })

  it('with driftPolicy Warn, tells DriftDetected once when a hand edit is first found, and leaves the edit', async () => {
    const { kube, deps } = setup()
    kube.putRecipe(recipe({ ...webDb, driftPolicy: 'Warn' }))
    await settle(kube, deps)
    const web = kube.child('Deployment', 'sandbox-recipes', 'team-a-shop-web-5101637e')!
    const spec = JSON.parse(JSON.stringify(web.spec)) as { template: { spec: { containers: { image: string }[] } } }
    spec.template.spec.containers[0]!.image = 'edited:by-hand'
    kube.putChild({ ...web, spec })
    controllers(kube)
    await reconcileRecipe(deps, NS, 'shop')
    const detected = () => kube.events.filter((e) => e.reason === 'DriftDetected')
    expect(detected()).toHaveLength(1)
    expect(detected()[0]).toMatchObject({ type: 'Warning' })
    expect(detected()[0]!.message).toContain('team-a-shop-web-5101637e')
    expect(kube.recipe(NS, 'shop')!.status?.conditions?.find((c) => c.type === 'Drifted')).toMatchObject({ status: 'True', reason: 'DriftDetected' })
    expect(JSON.stringify(kube.child('Deployment', 'sandbox-recipes', 'team-a-shop-web-5101637e')!.spec)).toContain('edited:by-hand')

    await reconcileRecipe(deps, NS, 'shop')
    expect(detected()).toHaveLength(1)
  })

  it('waits for an approval bound to the generation, ignores any other value, then deploys', async () => {
    const { kube, deps } = setup()
    kube.putRecipe(recipe({ ...webDb, requireApproval: true }))
    let r = await settle(kube, deps)
    expect(r.status?.phase).toBe('PendingApproval')
    expect(r.status?.message).toBe('Waiting for approval of generation 1 (required by recipe): kubectl annotate -n team-a workflowrecipe/shop purko.io/approve=1')
    expect(kube.children('Deployment')).toEqual([])
    kube.putRecipe({ ...r, metadata: { ...r.metadata, annotations: { 'purko.io/approve': 'true' } } })
    r = await settle(kube, deps)
    expect(r.status?.phase).toBe('PendingApproval')
    expect(kube.events.some((e) => e.reason === 'ApprovalIgnored')).toBe(true)
    kube.putRecipe({ ...r, metadata: { ...r.metadata, annotations: { 'purko.io/approve': '1', 'purko.io/approved-by': 'alice' } } })
    r = await settle(kube, deps)
    expect(r.status?.phase).toBe('Active')
    expect(r.status?.approval).toMatchObject({ state: 'Approved', approvedBy: 'alice', generation: 1 })
  })

  it('reports an invalid spec with the message of spec §8.2 and deploys nothing', async () => {
    const { kube, deps } = setup()
    kube.putRecipe(recipe({ workloads: [{ name: 'web', kind: 'Deployment', image: '{{ inputs.nope }}' }] }))
    const r = await settle(kube, deps)
    expect(r.status?.phase).toBe('Failed')
    expect(r.status?.reason).toBe('SpecInvalid')
    expect(r.status?.conditions?.find((c) => c.type === 'SpecValid')?.status).toBe('False')
    expect(kube.events.some((e) => e.reason === 'SpecInvalid' && e.type === 'Warning')).toBe(true)
    expect(kube.children('Deployment')).toEqual([])
    expect([...kube.configMaps.values()]).toEqual([])
  })

  it('copies envSecret keys into the target namespace and waits while the source Secret is missing', async () => {
    const { kube, deps } = setup()
    const spec = { workloads: [{ name: 'web', kind: 'Deployment', image: 'nginx:1.27', envSecret: [{ name: 'DB_PASSWORD', secretName: 'db', key: 'password' }] }] }
    kube.putRecipe(recipe(spec))
    let r = await settle(kube, deps)
    expect(r.status?.phase).toBe('Pending')
    expect(r.status?.conditions?.find((c) => c.type === 'PrerequisitesMet')).toMatchObject({ reason: 'SecretMissing', message: 'Secret "db" not found in namespace "team-a"' })
    await kube.createSecret({ metadata: { name: 'db', namespace: NS }, data: { password: Buffer.from('s3cret').toString('base64') } })
    r = await settle(kube, deps)
    expect(r.status?.phase).toBe('Active')
    // The recipe's copies (the source Secret is a Secret too).
    const copiesOf = () => kube.children('Secret').filter((c) => c.metadata?.labels?.['purko.io/recipe'] === 'shop')
    const copies = copiesOf()
    expect(copies).toHaveLength(1)
    expect(copies[0]!.metadata?.namespace).toBe('sandbox-recipes')
    expect(copies[0]!.data).toEqual({ DB_PASSWORD: Buffer.from('s3cret').toString('base64') })
    // A rotated source reaches the copy at the next reconcile (a child event or the resync tick).
    const source = (await kube.getSecret(NS, 'db'))!
    await kube.replaceSecret({ ...source, data: { password: Buffer.from('rotated').toString('base64') } })
    await reconcileRecipe(deps, NS, 'shop')
    expect(copiesOf()[0]!.data).toEqual({ DB_PASSWORD: Buffer.from('rotated').toString('base64') })
    expect(kube.recipe(NS, 'shop')!.status?.phase).toBe('Active')
  })

  it('keeps a template in Candidate with no finalizer and no children', async () => {
    const { kube, deps } = setup()
    const t = recipe({ inputs: [{ name: 'image', type: 'string', required: true }], workloads: [{ name: 'web', kind: 'Deployment', image: '{{ inputs.image }}' }] })
    kube.putRecipe({ ...t, metadata: { ...t.metadata, annotations: { 'purko.io/template': 'true' } } })
    const r = await settle(kube, deps)
    expect(r.status?.phase).toBe('Candidate')
    expect(r.status?.reason).toBe('Template')
    expect(r.status?.message).toBe('Template: requires values for: image')
    expect(r.metadata.finalizers ?? []).toEqual([])
    expect(kube.childObjects.size).toBe(0)
  })

  it('publishes dev.kinetic.recipe.* CloudEvents with the spec\'s subject and data, and a redelivery changes nothing', async () => {
    const { kube, deps, events } = setup()
    kube.putRecipe(recipe(webDb))
    await settle(kube, deps)
    const types = new Set(events.published.map((e) => e.type))
    expect([...types].sort()).toEqual(['dev.kinetic.recipe.phase.changed', 'dev.kinetic.recipe.revision.created', 'dev.kinetic.recipe.test.finished', 'dev.kinetic.recipe.workload.applied'])
    const active = events.published.find((e) => e.type === 'dev.kinetic.recipe.phase.changed' && (e.data as { to?: string }).to === 'Active')!
    expect(active.subject).toBe('/apis/purko.io/v1alpha1/namespaces/team-a/workflowrecipes/shop')
    expect(active.data).toMatchObject({ namespace: 'team-a', recipe: 'shop', generation: 1, revision: 1, from: 'Testing', to: 'Active', reason: 'RevisionActive' })
    expect(active.id).toMatch(/^[0-9a-f]{32}$/)
    expect(new Set(events.published.map((e) => e.id)).size).toBe(events.published.length)
    const before = { published: events.published.length, writes: kube.writes.length }
    expect((await reconcileRecipe(deps, NS, 'shop')).result).toBe('unchanged')
    expect({ published: events.published.length, writes: kube.writes.length }).toEqual(before)
  })

  it('records each phase change as a Kubernetes Event naming the CloudEvent published for it; an Event-only reason names none', async () => {
    const { kube, deps, events } = setup()
    kube.putRecipe(recipe(webDb))
    await settle(kube, deps)
    const active = events.published.find((e) => e.type === 'dev.kinetic.recipe.phase.changed' && (e.data as { to?: string }).to === 'Active')!
    const recorded = kube.events.find((e) => e.reason === 'RevisionActive')!
    expect(recorded.metadata?.annotations).toEqual({ 'kinetic.dev/cloudevent-type': 'dev.kinetic.recipe.phase.changed', 'kinetic.dev/cloudevent-id': active.id })
    // Orphaning is a Kubernetes Event and no CloudEvent (spec §13 has none for it).
    const settled = kube.recipe(NS, 'shop')!
    kube.putRecipe({ ...settled, metadata: { ...settled.metadata, annotations: { 'purko.io/orphan': 'true' } } })
    kube.markRecipeDeleted(NS, 'shop', '2026-03-01T11:00:00Z')
    const published = events.published.length
    await reconcileRecipe(deps, NS, 'shop')
    const orphaned = kube.events.find((e) => e.reason === 'Orphaned')
    expect(orphaned?.message).toMatch(/^finalizer removed without deleting children/)
    expect(orphaned?.metadata?.annotations).toBeUndefined()
    expect(events.published.length).toBe(published)
  })

  it('says why a workload is not Ready: the first waiting container of its pods', async () => {
    const { kube, deps } = setup()
    kube.putRecipe(recipe({ workloads: [{ name: 'web', kind: 'Deployment', image: 'nginx:1.27' }] }))
    for (let i = 0; i < 5; i++) await reconcileRecipe(deps, NS, 'shop')
    kube.pods.set('sandbox-recipes/team-a-shop-web-5101637e-5d8f-x1', {
      metadata: { name: 'team-a-shop-web-5101637e-5d8f-x1', namespace: 'sandbox-recipes', labels: { 'app.kubernetes.io/instance': 'team-a-shop-web-5101637e' } },
      status: { containerStatuses: [{ name: 'web', image: 'nginx:1.27', imageID: '', ready: false, restartCount: 0, state: { waiting: { reason: 'CreateContainerConfigError', message: 'secret "db" not found' } } }] },
    })
    await reconcileRecipe(deps, NS, 'shop')
    const row = kube.recipe(NS, 'shop')!.status?.workloads?.[0]
    expect(row?.phase).toBe('Progressing')
    expect(row?.message).toMatch(/^pod team-a-shop-web-5101637e-5d8f-x1 container web: CreateContainerConfigError: secret "db" not found/)
  })

  it('applies independent workloads in the same wave once what they depend on is Ready', async () => {
    const { kube, deps } = setup()
    kube.putRecipe(recipe({ workloads: [
      { name: 'db', kind: 'Deployment', image: 'postgres:16' },
      { name: 'api', kind: 'Deployment', image: 'nginx:1.27', dependsOn: ['db'] },
      { name: 'web', kind: 'Deployment', image: 'nginx:1.27', dependsOn: ['db'] },
    ] }))
    await reconcileRecipe(deps, NS, 'shop')
    expect(kube.children('Deployment').map((d) => d.metadata?.name)).toEqual(['team-a-shop-db-d306e21e'])
    controllers(kube)
    await reconcileRecipe(deps, NS, 'shop')
    expect(kube.children('Deployment').map((d) => d.metadata?.name).sort()).toEqual(['team-a-shop-api-284ef9ca', 'team-a-shop-db-d306e21e', 'team-a-shop-web-5101637e'])
  })

  it('still tells of the children it wrote when another reconcile wins the status write', async () => {
    const { kube, deps, events } = setup()
    kube.putRecipe(recipe({ workloads: [{ name: 'web', kind: 'Deployment', image: 'nginx:1.27' }] }))
    // Every try of this reconcile loses the race; the Broker would redeliver.
    for (let i = 0; i < 4; i++) kube.failNext('replaceRecipeStatus', new ConflictError('the object has been modified'))
    await expect(reconcileRecipe(deps, NS, 'shop')).rejects.toBeInstanceOf(ConflictError)
    expect(kube.children('Deployment')).toHaveLength(1)
    expect(kube.events.filter((e) => e.reason === 'WorkloadApplied').map((e) => e.message)).toContain('created Deployment sandbox-recipes/team-a-shop-web-5101637e')
    expect(events.published.filter((e) => e.type === 'dev.kinetic.recipe.phase.changed')).toEqual([])
    // The redelivery finds the Deployment applied: it plans the phases and writes nothing twice.
    await reconcileRecipe(deps, NS, 'shop')
    expect(kube.recipe(NS, 'shop')!.status?.phase).toBe('Deploying')
    expect(kube.events.filter((e) => e.reason === 'WorkloadApplied')).toHaveLength(1)
  })

  it('puts back a workload deleted while its tests run, then activates', async () => {
    const { kube, deps } = setup()
    kube.putRecipe(recipe(webDb))
    for (let i = 0; i < 10 && kube.recipe(NS, 'shop')?.status?.phase !== 'Testing'; i++) {
      // Deployments and StatefulSets become ready; test Jobs are left running.
      for (const j of kube.children('Job')) kube.setChildStatus('Job', j.metadata!.namespace!, j.metadata!.name!, { startTime: '2026-03-01T10:00:01Z', active: 1 })
      controllers(kube)
      await reconcileRecipe(deps, NS, 'shop')
    }
    expect(kube.recipe(NS, 'shop')!.status?.phase).toBe('Testing')
    await kube.deleteChild('Deployment', 'sandbox-recipes', 'team-a-shop-web-5101637e', { propagationPolicy: 'Foreground' })
    await reconcileRecipe(deps, NS, 'shop')
    expect(kube.child('Deployment', 'sandbox-recipes', 'team-a-shop-web-5101637e')).toBeDefined()
    const r = await settle(kube, deps)
    expect(r.status?.phase).toBe('Active')
  })

  it('prunes what the next revision no longer declares: a removed workload, its Service and the old test Job', async () => {
    const { kube, deps } = setup()
    kube.putRecipe(recipe(webDb))
    await settle(kube, deps)
    const r1 = kube.recipe(NS, 'shop')!
    kube.putRecipe({ ...r1, spec: recipe({ ...webDb, workloads: [{ ...webDb.workloads[1], dependsOn: [] }] }).spec })
    const r = await settle(kube, deps)
    expect(r.status?.phase).toBe('Active')
    expect(r.status?.currentRevision).toBe(2)
    expect(kube.children('StatefulSet')).toEqual([])
    expect(kube.children('Service').map((s) => s.metadata?.name)).toEqual(['team-a-shop-web-5101637e'])
    expect(kube.children('Job').map((j) => j.metadata?.name)).toEqual(['team-a-shop-test-smoke-58485c92-r2'])
    expect(kube.events.filter((e) => e.reason === 'WorkloadDeleted').map((e) => e.message).sort()).toEqual([
      'deleted Job sandbox-recipes/team-a-shop-test-smoke-58485c92-r1',
      'deleted Service sandbox-recipes/team-a-shop-db-d306e21e',
      'deleted StatefulSet sandbox-recipes/team-a-shop-db-d306e21e',
    ])
  })
})
