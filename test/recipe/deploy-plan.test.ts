// spec §7.11 deploy order, apply and prune; §5.2 never adopt (NameConflict) and Job
// immutability; a fast-check property over random desired and live sets.
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { inventoryOf, planDeploy, readinessFromLive, type LiveObject } from '../../shared/recipe/plan/deploy-plan.js'
import { applied, foreign, keyOf, liveWith, NOW, RECIPE, ready, revisionOf } from './deploy-plan-fixtures.js'

const UID = RECIPE.uid
const writesOf = (p: ReturnType<typeof planDeploy>) => p.writes.map((w) => w.message)

describe('apply order (spec §7.11)', () => {
  const rev = revisionOf(['db', 'web', 'tools', 'agent'], 1)

  it.each([
    ['nothing Ready: independent workloads start, dependents wait', {}, [
      'created Service sandbox-recipes/recipes-demo-shop-db-ea96027d',
      'created StatefulSet sandbox-recipes/recipes-demo-shop-db-ea96027d',
      'created DaemonSet sandbox-recipes/recipes-demo-shop-agent-47d32dc0',
    ], { web: 'Waiting', tools: 'Waiting' }],
    ['db Ready: web next, copied Secret, Service, Deployment', ready('db'), [
      'created Service sandbox-recipes/recipes-demo-shop-db-ea96027d',
      'created StatefulSet sandbox-recipes/recipes-demo-shop-db-ea96027d',
      'created Secret sandbox-recipes/recipes-demo-shop-web-0f1506de-env',
      'created Service sandbox-recipes/recipes-demo-shop-web-0f1506de',
      'created Deployment sandbox-recipes/recipes-demo-shop-web-0f1506de',
      'created DaemonSet sandbox-recipes/recipes-demo-shop-agent-47d32dc0',
    ], { web: 'Progressing', tools: 'Waiting' }],
    ['web Ready: the http MCP workload without its MCPServer until it is Ready', ready('db', 'web'), [
      'created Service sandbox-recipes/recipes-demo-shop-db-ea96027d',
      'created StatefulSet sandbox-recipes/recipes-demo-shop-db-ea96027d',
      'created Secret sandbox-recipes/recipes-demo-shop-web-0f1506de-env',
      'created Service sandbox-recipes/recipes-demo-shop-web-0f1506de',
      'created Deployment sandbox-recipes/recipes-demo-shop-web-0f1506de',
      'created Service mcp-server/recipes-demo-shop-tools-fa0caeae',
      'created Deployment mcp-server/recipes-demo-shop-tools-fa0caeae',
      'created DaemonSet sandbox-recipes/recipes-demo-shop-agent-47d32dc0',
    ], { tools: 'Progressing' }],
  ] as const)('%s', (_label, readiness, expected, phases) => {
    const plan = planDeploy({ uid: UID, desired: rev, live: new Map(), readiness })
    expect(writesOf(plan)).toEqual(expected)
    for (const [w, phase] of Object.entries(phases)) expect(plan.workloads.find((x) => x.name === w)?.phase).toBe(phase)
    expect(plan.done).toBe(false)
  })

  it('a waiting workload names what it waits for', () => {
    const plan = planDeploy({ uid: UID, desired: rev, live: new Map(), readiness: {} })
    expect(plan.workloads.find((w) => w.name === 'web')).toEqual({ name: 'web', phase: 'Waiting', waitingFor: ['db'], message: 'waiting for "db" to be ready' })
  })

  it('the MCPServer of an http workload is written once the workload object is Ready (spec §5.9)', () => {
    const live = liveWith(rev.workloads.filter((w) => w.name !== 'tools').flatMap((w) => w.children), rev.workloads.find((w) => w.name === 'tools')!.children.filter((c) => !c.afterReady))
    const readiness = { ...ready('db', 'web', 'agent'), tools: { ready: false, mainReady: true } }
    expect(writesOf(planDeploy({ uid: UID, desired: rev, live, readiness }))).toEqual(['created MCPServer mcp-server/recipes-demo-shop-tools-fa0caeae'])
    expect(writesOf(planDeploy({ uid: UID, desired: rev, live, readiness: { ...readiness, tools: { ready: false, mainReady: false } } }))).toEqual([])
  })

  it('identical digests are not written; a changed digest is an update; everything Ready and written is done', () => {
    const live = liveWith(rev.children.filter((c) => c.component !== 'test'))
    const all = ready('db', 'web', 'tools', 'agent')
    const same = planDeploy({ uid: UID, desired: rev, live, readiness: all })
    expect(same).toMatchObject({ writes: [], prune: [], allReady: true, done: true })
    const rev2 = revisionOf(['db', 'web', 'tools', 'agent'], 2, { web: '2' })
    const next = planDeploy({ uid: UID, desired: rev2, live, readiness: ready('db', 'tools', 'agent') })
    expect(writesOf(next)).toEqual(['updated Deployment sandbox-recipes/recipes-demo-shop-web-0f1506de'])
    expect(next.done).toBe(false)
  })

  it('an own object that is terminating is waited for, then re-created', () => {
    const db = rev.workloads[0]!.children
    const live = liveWith(db)
    const sts = keyOf(db[1]!)
    live.set(sts, { ...live.get(sts)!, metadata: { ...live.get(sts)!.metadata, deletionTimestamp: NOW } })
    const plan = planDeploy({ uid: UID, desired: revisionOf(['db'], 2), live, readiness: {} })
    expect(plan.writes).toEqual([])
    expect(plan.waitingForDeletion).toEqual([sts])
  })
})

describe('never adopt (spec §5.2, §7.4 NameConflict)', () => {
  it('an object without the recipe UID, or with another one, blocks every write and delete', () => {
    const rev = revisionOf(['db', 'web'], 1)
    const svc = rev.workloads[1]!.children[1]!
    const sts = rev.workloads[0]!.children[1]!
    const live = new Map<string, LiveObject>([[keyOf(svc), foreign(svc)], [keyOf(sts), foreign(sts, 'another-uid')]])
    const previous = inventoryOf(revisionOf(['db', 'agent'], 0))
    live.set('DaemonSet sandbox-recipes/recipes-demo-shop-agent-47d32dc0', applied(revisionOf(['agent'], 0).children[0]!))
    const plan = planDeploy({ uid: UID, desired: rev, live, readiness: ready('db', 'web'), previous })
    expect(plan.conflicts.map((c) => c.message)).toEqual([
      'StatefulSet sandbox-recipes/recipes-demo-shop-db-ea96027d already exists and is not managed by this recipe',
      'Service sandbox-recipes/recipes-demo-shop-web-0f1506de already exists and is not managed by this recipe',
    ])
    expect(plan.prerequisite).toEqual({
      reason: 'NameConflict',
      message: 'StatefulSet sandbox-recipes/recipes-demo-shop-db-ea96027d already exists and is not managed by this recipe; Service sandbox-recipes/recipes-demo-shop-web-0f1506de already exists and is not managed by this recipe',
    })
    expect(plan).toMatchObject({ writes: [], prune: [], done: false })
  })
})

describe('Jobs (spec §5.2 content-hashed names)', () => {
  it('a live Job of the same name is never updated; a changed Job is a new object and the old one is pruned once Ready', () => {
    const rev1 = revisionOf(['batch'], 1)
    const rev2 = revisionOf(['batch'], 2, { batch: '2' })
    const job1 = rev1.children[0]!
    const job2 = rev2.children[0]!
    expect(job2.name).not.toBe(job1.name)
    const live = liveWith([job1])
    live.set(keyOf(job1), { ...live.get(keyOf(job1))!, metadata: { ...live.get(keyOf(job1))!.metadata, annotations: { 'purko.io/manifest-digest': 'something-else' } } })
    expect(planDeploy({ uid: UID, desired: rev1, live, readiness: ready('batch') }).writes).toEqual([])
    const previous = inventoryOf(rev1)
    const first = planDeploy({ uid: UID, desired: rev2, live, readiness: {}, previous })
    expect(writesOf(first)).toEqual([`created Job sandbox-recipes/${job2.name}`])
    expect(first.prune).toEqual([])
    expect(first.pruneBlockedBy).toBe('waiting for workload "batch" to be ready')
    live.set(keyOf(job2), applied(job2))
    const second = planDeploy({ uid: UID, desired: rev2, live, readiness: ready('batch'), previous })
    expect(second.prune).toEqual([{ kind: 'Job', namespace: 'sandbox-recipes', name: job1.name, key: keyOf(job1), workload: 'batch', propagationPolicy: 'Foreground' }])
  })

  it('a completed Job workload removed by its TTL is not run again and counts as Ready', () => {
    const rev = revisionOf(['batch', 'web'], 3)
    const job = rev.children[0]!
    const readiness = readinessFromLive(rev, new Map(), NOW, [job.name])
    expect(readiness.batch).toMatchObject({ ready: true })
    const plan = planDeploy({ uid: UID, desired: rev, live: new Map(), readiness, completedJobs: [job.name] })
    expect(plan.writes.map((w) => w.child.kind)).toEqual(['Secret', 'Service', 'Deployment'])
  })
})

describe('prune (spec §7.11)', () => {
  const prev = revisionOf(['db', 'web', 'tools', 'agent'], 1)
  const next = revisionOf(['db', 'agent'], 2)
  const previous = inventoryOf(prev)

  it('waits until every workload of N is Ready, then deletes in reverse order of the previous revision, one workload at a time', () => {
    const live = liveWith(prev.children)
    expect(planDeploy({ uid: UID, desired: next, live, readiness: ready('db'), previous })).toMatchObject({
      prune: [], pruneBlockedBy: 'waiting for workload "agent" to be ready', done: false,
    })
    const first = planDeploy({ uid: UID, desired: next, live, readiness: ready('db', 'agent'), previous })
    expect(first.prune.map((d) => `${d.key} ${d.propagationPolicy}`)).toEqual([
      'MCPServer mcp-server/recipes-demo-shop-tools-fa0caeae Foreground',
      'Deployment mcp-server/recipes-demo-shop-tools-fa0caeae Foreground',
      'Service mcp-server/recipes-demo-shop-tools-fa0caeae Background',
    ])
    expect(first.pruneRemaining).toEqual([
      'MCPServer mcp-server/recipes-demo-shop-tools-fa0caeae', 'Deployment mcp-server/recipes-demo-shop-tools-fa0caeae', 'Service mcp-server/recipes-demo-shop-tools-fa0caeae',
      'Deployment sandbox-recipes/recipes-demo-shop-web-0f1506de', 'Service sandbox-recipes/recipes-demo-shop-web-0f1506de', 'Secret sandbox-recipes/recipes-demo-shop-web-0f1506de-env',
    ])
    for (const c of prev.workloads[2]!.children) live.delete(keyOf(c))
    const second = planDeploy({ uid: UID, desired: next, live, readiness: ready('db', 'agent'), previous })
    expect(second.prune.map((d) => d.key)).toEqual([
      'Deployment sandbox-recipes/recipes-demo-shop-web-0f1506de', 'Service sandbox-recipes/recipes-demo-shop-web-0f1506de', 'Secret sandbox-recipes/recipes-demo-shop-web-0f1506de-env',
    ])
    for (const c of prev.workloads[1]!.children) live.delete(keyOf(c))
    expect(planDeploy({ uid: UID, desired: next, live, readiness: ready('db', 'agent'), previous })).toMatchObject({ prune: [], pruneRemaining: [], done: true })
  })

  it('names a terminating object as the blocker and does not delete it again', () => {
    const live = liveWith(next.children, prev.workloads[1]!.children)
    const web = 'Deployment sandbox-recipes/recipes-demo-shop-web-0f1506de'
    live.set(web, { ...live.get(web)!, metadata: { ...live.get(web)!.metadata, deletionTimestamp: NOW, finalizers: ['example.com/hold'] } })
    const plan = planDeploy({ uid: UID, desired: next, live, readiness: ready('db', 'agent'), previous })
    expect(plan.prune.map((d) => d.key)).toEqual(['Service sandbox-recipes/recipes-demo-shop-web-0f1506de', 'Secret sandbox-recipes/recipes-demo-shop-web-0f1506de-env'])
    expect(plan.pruneBlockedBy).toBe('Deployment sandbox-recipes/recipes-demo-shop-web-0f1506de is terminating (finalizers: example.com/hold)')
  })

  it('never touches an object of another owner, a kind Kinetic does not create, or a name outside the inventory', () => {
    const live = liveWith(next.children)
    const web = prev.workloads[1]!.children
    live.set(keyOf(web[2]!), foreign(web[2]!))
    live.set(keyOf(web[1]!), foreign(web[1]!, 'another-uid'))
    live.set('Deployment sandbox-recipes/recipes-demo-shop-stranger', applied(revisionOf(['web'], 0).children[2]!, { metadata: { name: 'recipes-demo-shop-stranger', namespace: 'sandbox-recipes', labels: { 'purko.io/recipe-uid': UID } } }))
    const pvc = { kind: 'PersistentVolumeClaim', namespace: 'sandbox-recipes', name: 'data-recipes-demo-shop-db-0', component: 'workload' as const, order: 0 }
    live.set('PersistentVolumeClaim sandbox-recipes/data-recipes-demo-shop-db-0', { metadata: { labels: { 'purko.io/recipe-uid': UID } } })
    const plan = planDeploy({ uid: UID, desired: next, live, readiness: ready('db', 'agent'), previous: [...previous, pvc] })
    expect(plan.prune.map((d) => d.key)).toEqual([])
    expect(plan.done).toBe(true)
  })

  it('keeps what N has: an unchanged child is not pruned even when its workload moved in the order', () => {
    const live = liveWith(prev.children)
    const plan = planDeploy({ uid: UID, desired: revisionOf(['agent', 'db', 'web', 'tools'], 2), live, readiness: ready('db', 'web', 'tools', 'agent'), previous })
    expect(plan).toMatchObject({ writes: [], prune: [], done: true })
  })
})

describe('property: random desired and live sets', () => {
  const NAMES = ['db', 'web', 'tools', 'batch', 'cron', 'agent', 'clock']
  const subset = fc.subarray(NAMES)
  const images = fc.record(Object.fromEntries(NAMES.map((n) => [n, fc.constantFrom('1', '2')])) as Record<string, fc.Arbitrary<string>>)
  const liveState = fc.constantFrom('absent', 'own', 'stale', 'foreign', 'terminating')

  it('never writes another owner\'s object, never deletes outside the inventory, and re-planning after its writes writes nothing', () => {
    fc.assert(fc.property(subset, subset, images, images, fc.array(liveState, { minLength: 40, maxLength: 40 }), fc.dictionary(fc.constantFrom(...NAMES), fc.record({ ready: fc.boolean(), mainReady: fc.boolean() })), (now, before, img, prevImg, states, readiness) => {
      const desired = revisionOf(now, 2, img)
      const prevObjects = revisionOf(before, 1, prevImg)
      const previous = inventoryOf(prevObjects)
      const live = new Map<string, LiveObject>()
      const candidates = [...prevObjects.children, ...desired.children]
      candidates.forEach((c, i) => {
        const s = states[i % states.length]
        if (s === 'absent') return
        if (s === 'foreign') live.set(keyOf(c), foreign(c, i % 2 === 0 ? undefined : 'other'))
        else {
          const o = applied(c)
          if (s === 'stale') o.metadata!.annotations = { 'purko.io/manifest-digest': 'stale' }
          if (s === 'terminating') o.metadata!.deletionTimestamp = NOW
          live.set(keyOf(c), o)
        }
      })
      const plan = planDeploy({ uid: UID, desired, live, readiness, previous })
      const inventory = new Set(previous.map((e) => `${e.kind} ${e.namespace}/${e.name}`))
      for (const w of plan.writes) {
        const found = live.get(w.key)
        if (found) expect(found.metadata?.labels?.['purko.io/recipe-uid']).toBe(UID)
      }
      for (const d of plan.prune) {
        expect(inventory.has(d.key)).toBe(true)
        expect(live.get(d.key)?.metadata?.labels?.['purko.io/recipe-uid']).toBe(UID)
      }
      if (plan.conflicts.length > 0) expect(plan.writes.length + plan.prune.length).toBe(0)
      for (const w of plan.writes) live.set(w.key, applied(w.child))
      expect(planDeploy({ uid: UID, desired, live, readiness, previous }).writes).toEqual([])
    }), { numRuns: 150 })
  })
})
