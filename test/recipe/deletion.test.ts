// spec §11 deletion: orphan escape hatch, the inventory from snapshots plus labelled objects,
// waves in reverse dependency order waiting for real absence, the blocker named in status, and
// nothing of another owner touched.
import { describe, expect, it } from 'vitest'
import { planDeletion } from '../../shared/recipe/plan/deletion.js'
import type { LiveObject } from '../../shared/recipe/plan/deploy-plan.js'
import { snapshotObjects } from '../../shared/recipe/plan/rollback.js'
import { applied, foreign, keyOf, liveWith, NOW, RECIPE, snapshotOf } from './deploy-plan-fixtures.js'

const UID = RECIPE.uid
const snap = snapshotOf(['db', 'web', 'tools'], 2, {}, true)
const objects = snapshotObjects(snap)

function run(live: Map<string, LiveObject>, extra: Partial<Parameters<typeof planDeletion>[0]> = {}) {
  const plan = planDeletion({ uid: UID, snapshots: [snap], live, ...extra })
  if (plan.action !== 'delete') throw new Error('expected a delete plan')
  return plan
}

describe('orphan (spec §11.1)', () => {
  it.each([
    ['the purko.io/orphan annotation', { annotations: { 'purko.io/orphan': 'true' } }, 'purko.io/orphan: "true"'],
    ['deletionPolicy: Orphan', { deletionPolicy: 'Orphan' as const }, 'deletionPolicy: Orphan'],
  ])('%s removes the finalizer at once', (_label, extra, why) => {
    expect(planDeletion({ uid: UID, snapshots: [snap], live: liveWith(objects.children), ...extra })).toEqual({
      action: 'orphan', removeFinalizer: true,
      event: { reason: 'Orphaned', message: `finalizer removed without deleting children (${why}); they keep their labels (purko.io/recipe-uid=${UID})` },
    })
  })
})

describe('waves (spec §11.3)', () => {
  it('tests and Workflow, MCPServers, workloads last-first, Services and Secrets; each after the previous one is gone; then the finalizer', () => {
    const live = liveWith(objects.children)
    const steps: string[][] = []
    const waves: (string | undefined)[] = []
    for (let i = 0; i < 10; i++) {
      const plan = run(live)
      if (plan.removeFinalizer) break
      steps.push(plan.deletes.map((d) => `${d.key} ${d.propagationPolicy}`))
      waves.push(plan.wave)
      for (const d of plan.deletes) live.delete(d.key)
    }
    const testJob = objects.children.find((c) => c.component === 'test')!
    expect(waves).toEqual(['tests', 'mcpservers', 'workloads', 'workloads', 'workloads', 'services'])
    expect(steps).toEqual([
      [`Job sandbox-recipes/${testJob.name} Foreground`],
      ['MCPServer mcp-server/recipes-demo-shop-tools-fa0caeae Foreground'],
      ['Deployment mcp-server/recipes-demo-shop-tools-fa0caeae Foreground'],
      ['Deployment sandbox-recipes/recipes-demo-shop-web-0f1506de Foreground'],
      ['StatefulSet sandbox-recipes/recipes-demo-shop-db-ea96027d Foreground'],
      [
        'Service mcp-server/recipes-demo-shop-tools-fa0caeae Background',
        'Service sandbox-recipes/recipes-demo-shop-web-0f1506de Background',
        'Secret sandbox-recipes/recipes-demo-shop-web-0f1506de-env Background',
        'Service sandbox-recipes/recipes-demo-shop-db-ea96027d Background',
      ],
    ])
    expect(run(live)).toMatchObject({ deletes: [], remaining: [], removeFinalizer: true })
  })

  it('waits for real absence: a terminating object is named as the blocker, with its finalizers, and not deleted again', () => {
    const live = liveWith(objects.workloads.flatMap((w) => w.children))
    live.delete('MCPServer mcp-server/recipes-demo-shop-tools-fa0caeae')
    live.delete('Deployment mcp-server/recipes-demo-shop-tools-fa0caeae')
    const web = 'Deployment sandbox-recipes/recipes-demo-shop-web-0f1506de'
    live.set(web, { ...live.get(web)!, metadata: { ...live.get(web)!.metadata, deletionTimestamp: NOW, finalizers: ['foregroundDeletion', 'example.com/hold'] } })
    const plan = run(live)
    expect(plan.deletes).toEqual([])
    expect(plan.blockedBy).toBe('Deployment sandbox-recipes/recipes-demo-shop-web-0f1506de is terminating (finalizers: foregroundDeletion, example.com/hold)')
    expect(plan.remaining).toEqual([
      web, 'StatefulSet sandbox-recipes/recipes-demo-shop-db-ea96027d',
      'Service mcp-server/recipes-demo-shop-tools-fa0caeae', 'Service sandbox-recipes/recipes-demo-shop-web-0f1506de', 'Secret sandbox-recipes/recipes-demo-shop-web-0f1506de-env', 'Service sandbox-recipes/recipes-demo-shop-db-ea96027d',
    ])
    expect(plan.ready).toEqual({ status: 'False', reason: 'Deleting', message: `deleting 6 children: ${plan.blockedBy}` })
  })

  it('reports what is gone since the last reconcile (WorkloadDeleted)', () => {
    const live = liveWith(objects.workloads.flatMap((w) => w.children))
    const before = run(live).remaining
    live.delete('MCPServer mcp-server/recipes-demo-shop-tools-fa0caeae')
    expect(run(live, { previousRemaining: before }).deleted).toEqual([{ kind: 'MCPServer', namespace: 'mcp-server', name: 'recipes-demo-shop-tools-fa0caeae', component: 'mcpserver', workload: 'tools', order: 2 }])
  })
})

describe('inventory (spec §11.2)', () => {
  it('adds own objects found by label (a crash before the snapshot write), never a foreign one, never a ConfigMap or PVC', () => {
    const extra = objects.children.find((c) => c.kind === 'Deployment' && c.workload === 'web')!
    const orphanDeployment = applied(extra, { metadata: { ...extra.manifest.metadata, name: 'recipes-demo-shop-new' } })
    const theirs = { kind: 'Deployment', metadata: { name: 'recipes-demo-shop-theirs', namespace: 'sandbox-recipes', labels: { 'purko.io/recipe-uid': 'other' } } }
    const cm = { kind: 'ConfigMap', metadata: { name: 'shop-rev-2', namespace: 'recipes-demo', labels: { 'purko.io/recipe-uid': UID } } }
    const pvc = { kind: 'PersistentVolumeClaim', metadata: { name: 'data-recipes-demo-shop-db-0', namespace: 'sandbox-recipes', labels: { 'purko.io/recipe-uid': UID } } }
    const live = new Map<string, LiveObject>([['Deployment sandbox-recipes/recipes-demo-shop-new', orphanDeployment], ['Deployment sandbox-recipes/recipes-demo-shop-theirs', theirs as LiveObject], ['ConfigMap recipes-demo/shop-rev-2', cm], ['PersistentVolumeClaim sandbox-recipes/data-recipes-demo-shop-db-0', pvc]])
    const plan = run(live, { labelled: [orphanDeployment, theirs as LiveObject, cm, pvc] })
    expect(plan.remaining).toEqual(['Deployment sandbox-recipes/recipes-demo-shop-new'])
    expect(plan.deletes.map((d) => d.key)).toEqual(['Deployment sandbox-recipes/recipes-demo-shop-new'])
  })

  it('an object under an inventory name that another owner holds is never deleted and does not block', () => {
    const live = liveWith(objects.workloads.flatMap((w) => w.children))
    for (const c of objects.children) if (c.workload !== 'db') live.delete(keyOf(c))
    const sts = objects.workloads[0]!.children[1]!
    live.set(keyOf(sts), foreign(sts))
    const plan = run(live)
    expect(plan.deletes.map((d) => d.key)).toEqual(['Service sandbox-recipes/recipes-demo-shop-db-ea96027d'])
    live.delete('Service sandbox-recipes/recipes-demo-shop-db-ea96027d')
    expect(run(live).removeFinalizer).toBe(true)
  })

  it('unions the current, last good and in-flight snapshots', () => {
    const older = snapshotOf(['db', 'cron'], 1)
    const live = liveWith(snapshotObjects(older).children)
    const plan = run(live, { snapshots: [snap, older] })
    expect(plan.remaining).toEqual(['CronJob sandbox-recipes/recipes-demo-shop-cron-052a6e50', 'StatefulSet sandbox-recipes/recipes-demo-shop-db-ea96027d', 'Service sandbox-recipes/recipes-demo-shop-db-ea96027d'])
    expect(plan.deletes.map((d) => d.key)).toEqual(['CronJob sandbox-recipes/recipes-demo-shop-cron-052a6e50'])
  })
})
