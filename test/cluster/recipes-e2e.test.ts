import { baseName, testJobName } from '../../shared/recipe/plan/names.js'
import { join } from 'node:path'
import { afterAll, beforeAll, expect, it } from 'vitest'
import type { StepCommand } from '../../local/jobs/step-process.js'
import { listAndWatch, type KubeObject } from '../../local/knative/kube-http.js'
import { readRuntimeConfig } from '../../shared/config.js'
import { noKineticEvents } from '../../shared/engine/kinetic-events.js'
import { reconcileRecipe, type RecipeDeps } from '../../shared/recipe/controller.js'
import { KubeClient } from '../../shared/kube/client.js'
import { silentLogger } from '../../shared/log.js'
import { recipeConfig } from '../../shared/recipe/plan/config.js'
import { loadManifests, ROOT } from '../knative/manifests.js'
import { eventually } from '../support/eventually.js'
import { startNodeAgent, type NodeAgent } from './node-agent.js'
import { describeCluster, useControlPlane } from './tier.js'
import { installCrds, readCrds } from '../../local/crds.js'

/**
 * WorkflowRecipes on a real kube-apiserver and kube-controller-manager, reconciled by
 * reconcileRecipe as the workflowrecipe-changed ServiceAccount with the shipped RBAC (the
 * ClusterRole kinetic-recipes, the Role kinetic-recipe-workloads of knative/platform/), under
 * OwnerReferencesPermissionEnforcement. The real Deployment, StatefulSet and Job controllers
 * roll the children out, the test node agent runs their pods as local processes (workloads stay
 * up and are Ready; a test passes unless the web image it checks is broken), and the real
 * garbage collector carries out foreground deletion. There is no Knative here: a loop stands in
 * for the events and resync ticks that would call the function.
 */

const NS = 'recipes-e2e'
const SANDBOX = 'sandbox-recipes'
const RECIPES = `/apis/purko.io/v1alpha1/namespaces/${NS}/workflowrecipes`
type Condition = { type: string; status: string; reason?: string; message?: string }
type RecipeObject = KubeObject & {
  spec: Record<string, any>
  status?: Record<string, any> & { phase?: string; reason?: string; message?: string; conditions?: Condition[]; history?: Array<{ to: string; reason?: string }> }
}
type Workload = KubeObject & { spec: Record<string, any>; status?: Record<string, any> }
const API = { deployments: '/apis/apps/v1', statefulsets: '/apis/apps/v1', jobs: '/apis/batch/v1', services: '/api/v1' } as const
type Change = { kind: string; name: string; type: string; rv: number; ready: number; deleting: boolean; finalizers: string[] }

/** What the test node runs: workloads stay up; the smoke test fails against a broken web image. */
function podCommand(pod: KubeObject): StepCommand {
  const labels = pod.metadata?.labels ?? {}
  if (labels['purko.io/test'] !== undefined) {
    const env = (pod.spec as { containers: Array<{ env?: Array<{ name: string; value?: string }> }> }).containers[0]?.env ?? []
    const image = env.find((e) => e.name === 'WEB_IMAGE')?.value ?? ''
    const script = image.includes('broken')
      ? 'console.log("GET http://web/healthz"); console.log("curl: (22) The requested URL returned error: 502"); process.exit(22)'
      : 'console.log("GET http://web/healthz"); console.log("200 OK")'
    return { command: process.execPath, args: ['-e', script], cwd: process.cwd() }
  }
  return { command: process.execPath, args: ['-e', 'setInterval(() => {}, 1 << 30)'], cwd: process.cwd() }
}

const aRecipe = (name: string, spec: Record<string, unknown>): KubeObject => ({ apiVersion: 'purko.io/v1alpha1', kind: 'WorkflowRecipe', metadata: { name, namespace: NS }, spec })

/** db (a StatefulSet with a claim) and web (a Deployment on db), and a smoke test of web's image. */
const shop = (webImage: string) => ({
  inputs: [{ name: 'webImage', default: 'nginx:1.27' }],
  values: { webImage },
  workloads: [
    { name: 'db', kind: 'StatefulSet', image: 'postgres:16', ports: [{ name: 'pg', port: 5432 }], volumeClaimTemplates: [{ name: 'data', storage: '1Gi', mountPath: '/var/lib/postgresql/data' }] },
    { name: 'web', kind: 'Deployment', image: '{{inputs.webImage}}', dependsOn: ['db'], ports: [{ name: 'http', port: 80 }] },
  ],
  tests: [{ name: 'smoke', image: 'curlimages/curl:8.10.1', command: ['curl', '-f', 'http://web/healthz'], env: [{ name: 'WEB_IMAGE', value: '{{inputs.webImage}}' }], timeoutSeconds: 60 }],
})

describeCluster('WorkflowRecipes on a real kube-apiserver and controller manager, as the recipe functions\' ServiceAccount', () => {
  const cp = useControlPlane({ controllerManager: true, apiServerArgs: ['--enable-admission-plugins=OwnerReferencesPermissionEnforcement'] })
  let agent: NodeAgent
  let deps: RecipeDeps
  const admin = () => cp.current.admin
  const recipe = (name: string) => admin().get<RecipeObject>(`${RECIPES}/${name}`)
  const child = (kind: keyof typeof API, name: string) => admin().get<Workload>(`${API[kind]}/namespaces/${SANDBOX}/${kind}/${name}`)
  const condition = (r: RecipeObject | null, type: string) => r?.status?.conditions?.find((c) => c.type === type)
  /** `kubectl get wr <name>`: the API server's Table of the printer columns. */
  const kubectlGet = async (name: string): Promise<Record<string, unknown>> => {
    const res = await admin().send<{ columnDefinitions: Array<{ name: string }>; rows: Array<{ cells: unknown[] }> }>('GET', `${RECIPES}/${name}`, undefined, 'application/json', { Accept: 'application/json;as=Table;v=v1;g=meta.k8s.io' })
    return Object.fromEntries(res.body.columnDefinitions.map((c, i) => [c.name, res.body.rows[0]?.cells[i]]))
  }
  /** The events and ticks Knative would deliver: reconcile until `done` holds (or fail with the last status). */
  const reconcileUntil = async (name: string, what: string, done: (r: RecipeObject | null) => boolean, ms = 30_000) => {
    let last: RecipeObject | null = null
    let failure = ''
    try {
      await eventually(what, async () => {
        // A throw is a 5xx or 409 to the Broker, which redelivers: keep going, but remember it.
        await reconcileRecipe(deps, NS, name).catch((err: Error) => { failure = `${err.name}: ${err.message}` })
        last = await recipe(name)
        return done(last)
      }, ms, 250)
    } catch (err) {
      throw new Error(`${(err as Error).message}; last reconcile error: ${failure || 'none'}; last status: ${JSON.stringify((last as RecipeObject | null)?.status)}`)
    }
    return last as RecipeObject | null
  }

  /**
   * Every change of the Deployments and StatefulSets of the sandbox, in the API server's own order
   * (resourceVersions of one etcd), not a poll's.
   */
  const watchWorkloads = async () => {
    const changes: Change[] = []
    const abort = new AbortController()
    const watches = ['deployments', 'statefulsets'].map((kind) => {
      let synced!: () => void
      const ready = new Promise<void>((r) => { synced = r })
      const loop = listAndWatch(admin(), `/apis/apps/v1/namespaces/${SANDBOX}/${kind}`, '', {
        onList: () => undefined,
        onEvent: (ev) => {
          const m = ev.object.metadata ?? {}
          const ready = Number((ev.object.status as { readyReplicas?: number } | undefined)?.readyReplicas ?? 0)
          changes.push({ kind, name: String(m.name), type: ev.type, rv: Number(m.resourceVersion), ready, deleting: m.deletionTimestamp !== undefined, finalizers: (m.finalizers as string[] | undefined) ?? [] })
        },
        synced,
        onError: () => undefined,
      }, abort.signal)
      return { ready, loop }
    })
    await Promise.all(watches.map((w) => w.ready))
    return {
      async stop(): Promise<Change[]> {
        abort.abort()
        await Promise.all(watches.map((w) => w.loop))
        return changes.sort((a, b) => a.rv - b.rv)
      },
    }
  }

  beforeAll(async () => {
    const a = admin()
    await installCrds(a, readCrds(join(ROOT, 'crds')))
    // knative/ (kinetic-system) and knative/platform/ with its namespaces, as the README installs them.
    const rbac = loadManifests().filter((m) => ['Namespace', 'ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding'].includes(m.kind))
    for (const m of [...rbac].sort((x, y) => Number(y.kind === 'Namespace') - Number(x.kind === 'Namespace'))) await a.apply(m.doc)
    await a.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } })
    agent = await startNodeAgent({ kubeConfig: cp.current.adminKubeConfig(), command: podCommand, concurrency: 16 })
    const { kubeConfig } = await cp.current.serviceAccountKubeconfig('kinetic-system', 'workflowrecipe-changed')
    deps = {
      kube: new KubeClient(kubeConfig), log: silentLogger, now: () => new Date(), config: readRuntimeConfig({}), events: noKineticEvents,
      recipes: recipeConfig({}),
    }
  }, 90_000)

  afterAll(async () => {
    await agent?.stop()
  }, 30_000)

  it('(a) takes db then web through the real StatefulSet and Deployment controllers to Active, the smoke test passing', async () => {
    const watch = await watchWorkloads()
    await admin().apply(aRecipe('shop', shop('nginx:1.27')))
    const active = await reconcileUntil('shop', 'shop to be Active', (r) => r?.status?.phase === 'Active', 45_000)
    const changes = await watch.stop()
    expect(active?.status?.history?.map((h) => h.to)).toEqual(['Candidate', 'Approved', 'Pending', 'Deploying', 'Testing', 'Active'])
    expect(active?.status).toMatchObject({ currentRevision: 1, lastGoodRevision: 1, readyWorkloads: '2/2' })
    expect(condition(active, 'Ready')).toMatchObject({ status: 'True' })
    expect(condition(active, 'UpToDate')).toMatchObject({ status: 'True' })
    expect(active?.metadata?.finalizers).toEqual(['purko.io/recipe-finalizer'])
    expect(await kubectlGet('shop')).toMatchObject({ Name: 'shop', Phase: 'Active', Revision: 1, Ready: '2/2' })

    // What the controllers report, not what Kinetic wrote: every replica Ready.
    const db = await child('statefulsets', baseName(NS, 'shop', 'db'))
    const web = await child('deployments', baseName(NS, 'shop', 'web'))
    expect(db?.status).toMatchObject({ readyReplicas: 1, currentRevision: db?.status?.updateRevision })
    expect(web?.status).toMatchObject({ availableReplicas: 1, updatedReplicas: 1 })
    expect(web?.metadata?.labels).toMatchObject({ 'purko.io/recipe': 'shop', 'purko.io/recipe-namespace': NS, 'purko.io/revision': '1', 'app.kubernetes.io/managed-by': 'kinetic' })
    expect((web?.metadata?.managedFields as Array<{ manager: string; operation: string }>).filter((f) => f.operation === 'Apply').map((f) => f.manager)).toEqual(['kinetic'])
    expect(await child('services', baseName(NS, 'shop', 'db'))).not.toBeNull()
    // web (dependsOn db) was created only after the StatefulSet controller reported db Ready.
    const dbReady = changes.find((c) => c.kind === 'statefulsets' && c.ready >= 1)?.rv ?? Infinity
    const webCreated = changes.find((c) => c.kind === 'deployments' && c.type === 'ADDED')?.rv ?? -1
    expect(dbReady).toBeLessThan(webCreated)
    const smoke = await child('jobs', testJobName(NS, 'shop', 'smoke', 1))
    expect(smoke?.status?.conditions).toContainEqual(expect.objectContaining({ type: 'Complete', status: 'True' }))
    // The revision snapshot: owned by the recipe (the owner-reference check passed as the function).
    const snapshot = await admin().get(`/api/v1/namespaces/${NS}/configmaps/shop-rev-1`)
    expect(snapshot?.metadata?.ownerReferences).toEqual([expect.objectContaining({ kind: 'WorkflowRecipe', name: 'shop', uid: active?.metadata?.uid })])
  }, 60_000)

  it('(b) a broken web image fails its smoke test and rolls back to revision 1 by itself: Active, UpToDate=False RolledBack', async () => {
    // `kubectl patch wr shop --type merge -p '{"spec":{"values":{"webImage":"nginx:broken"}}}'`
    await admin().mergePatch(`${RECIPES}/shop`, { spec: { values: { webImage: 'nginx:broken' } } })
    const rolledBack = await reconcileUntil('shop', 'shop to roll back', (r) => r?.status?.phase === 'Active' && r.status.revision === 2, 45_000)
    expect(rolledBack?.status?.history?.slice(-7).map((h) => h.to)).toEqual(['Candidate', 'Approved', 'Pending', 'Deploying', 'Testing', 'RollingBack', 'Active'])
    expect(rolledBack?.status?.history?.at(-1)?.reason).toBe('RolledBack')
    expect(rolledBack?.status).toMatchObject({ currentRevision: 1, lastGoodRevision: 1, revision: 2 })
    expect(rolledBack?.status?.revisions?.find((e: { revision: number }) => e.revision === 2)).toMatchObject({ state: 'Failed', reason: 'TestFailed' })
    expect(condition(rolledBack, 'UpToDate')).toMatchObject({ status: 'False', reason: 'RolledBack' })
    expect(condition(rolledBack, 'UpToDate')?.message).toMatch(/^revision 2 \(generation 2\) failed: TestFailed; running revision 1/)
    expect(rolledBack?.status?.tests).toContainEqual(expect.objectContaining({ name: 'smoke', message: expect.stringContaining('returned error: 502') }))
    expect(await kubectlGet('shop')).toMatchObject({ Phase: 'Active', Revision: 1, Reason: 'RolledBack' })
    // Revision 1's web again, rolled out by the Deployment controller.
    await eventually('web back on nginx:1.27 and available', async () => {
      const web = await child('deployments', baseName(NS, 'shop', 'web'))
      return web?.spec.template.spec.containers[0].image === 'nginx:1.27' && web.status?.updatedReplicas === 1 && web.status?.availableReplicas === 1 && web.status?.observedGeneration === web.metadata?.generation
    }, 30_000, 200)
    // Never re-attempted on its own: another round changes nothing.
    const rv = (await recipe('shop'))?.metadata?.resourceVersion
    expect((await reconcileRecipe(deps, NS, 'shop')).result).toBe('unchanged')
    expect((await recipe('shop'))?.metadata?.resourceVersion).toBe(rv)
  }, 60_000)

  it('(c) deleting the recipe deletes web, then db, each by the garbage collector\'s foreground deletion, then the finalizer; the claim stays', async () => {
    const watch = await watchWorkloads()
    await admin().request('DELETE', `${RECIPES}/shop`)
    let deleting = null as RecipeObject | null
    await reconcileUntil('shop', 'the recipe to be gone', (r) => {
      if (r && condition(r, 'Ready')?.reason === 'Deleting') deleting = r
      return r === null
    }, 45_000)
    const changes = await watch.stop()

    // While children remain the recipe says so: Ready=False Deleting, with what is left.
    expect(condition(deleting, 'Ready')).toMatchObject({ status: 'False', reason: 'Deleting' })
    expect(deleting?.status?.deletion?.remaining?.length).toBeGreaterThan(0)
    // Waves: db's deletion starts only once web is gone (web depends on db).
    const of = (kind: string, name: string) => changes.filter((c) => c.kind === kind && c.name === name)
    const web = of('deployments', baseName(NS, 'shop', 'web'))
    const db = of('statefulsets', baseName(NS, 'shop', 'db'))
    const webGone = web.find((c) => c.type === 'DELETED')?.rv ?? Infinity
    const dbDeleting = db.find((c) => c.deleting)?.rv ?? -1
    expect(webGone).toBeLessThan(dbDeleting)
    expect(db.some((c) => c.type === 'DELETED')).toBe(true)
    // Foreground: the garbage collector held each object until what it owns was gone.
    for (const events of [web, db]) expect(events.some((c) => c.deleting && c.finalizers.includes('foregroundDeletion'))).toBe(true)
    expect((await admin().request<{ items: unknown[] }>('GET', `/apis/apps/v1/namespaces/${SANDBOX}/replicasets?labelSelector=${encodeURIComponent(`app.kubernetes.io/instance=${baseName(NS, 'shop', 'web')}`)}`)).items).toEqual([])
    expect(await child('services', baseName(NS, 'shop', 'web'))).toBeNull()
    expect(await child('services', baseName(NS, 'shop', 'db'))).toBeNull()
    // (The revision ConfigMaps go with the recipe by their ownerReference; not awaited here: the
    // garbage collector maps a CRD installed seconds ago only at its next discovery resync.)
    // The data outlives the recipe (persistentVolumeClaimRetention Retain).
    expect(await admin().get(`/api/v1/namespaces/${SANDBOX}/persistentvolumeclaims/data-${baseName(NS, 'shop', 'db')}-0`)).not.toBeNull()
  }, 60_000)

  it('(d) a foreign object under a child\'s name: PrerequisitesMet=False NameConflict, nothing written, the object untouched', async () => {
    const foreign = await admin().apply({
      apiVersion: 'v1', kind: 'Service', metadata: { name: baseName(NS, 'clash', 'web'), namespace: SANDBOX, labels: { team: 'someone-else' } },
      spec: { ports: [{ name: 'http', port: 8080 }], selector: { app: 'theirs' } },
    })
    await admin().apply(aRecipe('clash', { workloads: [{ name: 'web', kind: 'Deployment', image: 'nginx:1.27', ports: [{ name: 'http', port: 80 }] }] }))
    const blocked = await reconcileUntil('clash', 'clash to report NameConflict', (r) => condition(r, 'PrerequisitesMet')?.reason === 'NameConflict')
    expect(blocked?.status?.phase).toBe('Pending')
    expect(condition(blocked, 'PrerequisitesMet')).toMatchObject({ status: 'False', reason: 'NameConflict', message: expect.stringContaining(`${baseName(NS, 'clash', 'web')} already exists and is not managed by this recipe`) })
    expect(await kubectlGet('clash')).toMatchObject({ Phase: 'Pending' })
    // Re-checked on every event: still blocked, and nothing of it exists.
    await reconcileRecipe(deps, NS, 'clash')
    const after = await child('services', baseName(NS, 'clash', 'web'))
    expect(after?.metadata?.resourceVersion).toBe(foreign.metadata?.resourceVersion)
    expect(after?.metadata?.labels).toEqual({ team: 'someone-else' })
    expect(await child('deployments', baseName(NS, 'clash', 'web'))).toBeNull()
  })

  it('(e) a child the API server refuses: Failed, reason ApplyFailed, with the server\'s own message', async () => {
    await admin().apply(aRecipe('greedy', { workloads: [{ name: 'api', kind: 'Deployment', image: 'nginx:1.27', resources: { requests: { cpu: '2' }, limits: { cpu: '1' } } }] }))
    const failed = await reconcileUntil('greedy', 'greedy to fail', (r) => r?.status?.phase === 'Failed')
    expect(failed?.status?.reason).toBe('ApplyFailed')
    expect(failed?.status?.message).toMatch(/must be less than or equal to cpu limit/)
    expect(condition(failed, 'Ready')).toMatchObject({ status: 'False' })
    expect(await kubectlGet('greedy')).toMatchObject({ Phase: 'Failed', Reason: 'ApplyFailed' })
    expect(await child('deployments', baseName(NS, 'greedy', 'api'))).toBeNull()
  })
})
