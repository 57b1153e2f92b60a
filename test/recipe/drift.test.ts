// spec §7.8 drift: only the fields Kinetic sets, tolerant of API-server defaulting, with the
// DriftCorrected / DriftDetected messages and the Drifted condition.
import { describe, expect, it } from 'vitest'
import { driftPaths, planDrift } from '../../shared/recipe/plan/drift.js'
import { applied, keyOf, liveWith, RECIPE, revisionOf } from './deploy-plan-fixtures.js'

const rev = revisionOf(['db', 'web'], 1)
const web = rev.workloads[1]!.children[2]!
const db = rev.workloads[0]!.children[1]!
type Obj = Record<string, any>

function live(c = web, edit: (o: Obj) => void = () => {}): Obj {
  const o = applied(c) as Obj
  edit(o)
  return o
}

describe('drift paths (spec §7.8)', () => {
  it.each([
    ['API-server defaults and others\' fields are not drift', (o: Obj) => {
      o.metadata.labels.extra = 'x'
      o.metadata.annotations['deployment.kubernetes.io/revision'] = '3'
      o.metadata.finalizers = ['example.com/hold']
      o.metadata.labels['purko.io/revision'] = '7'
      o.spec.progressDeadlineSeconds = 600
      o.spec.template.spec.dnsPolicy = 'ClusterFirst'
      o.spec.template.spec.containers[0].terminationMessagePath = '/dev/termination-log'
      o.spec.template.spec.containers.push({ name: 'sidecar', image: 'mesh:1' })
      o.status = { replicas: 1 }
    }, []],
    ['an autoscaler\'s replicas on a workload whose recipe leaves them open', (o: Obj) => { o.spec.replicas = 5 }, []],
    ['a changed image', (o: Obj) => { o.spec.template.spec.containers[0].image = 'evil:1' }, ['spec.template.spec.containers[0].image']],
    ['a removed env entry', (o: Obj) => { o.spec.template.spec.containers[0].env = [] }, ['spec.template.spec.containers[0].env[0]']],
    ['a changed container port', (o: Obj) => { o.spec.template.spec.containers[0].ports[0].containerPort = 9090 }, ['spec.template.spec.containers[0].ports[0].containerPort']],
    ['a weakened security context', (o: Obj) => { o.spec.template.spec.containers[0].securityContext.allowPrivilegeEscalation = true; o.spec.template.spec.containers[0].securityContext.capabilities.drop = [] }, [
      'spec.template.spec.containers[0].securityContext.allowPrivilegeEscalation',
      'spec.template.spec.containers[0].securityContext.capabilities.drop',
    ]],
    ['a changed selector and a Kinetic label', (o: Obj) => { o.spec.selector.matchLabels['app.kubernetes.io/instance'] = 'x'; delete o.metadata.labels['purko.io/recipe-uid'] }, [
      'metadata.labels["purko.io/recipe-uid"]', 'spec.selector.matchLabels["app.kubernetes.io/instance"]',
    ]],
    ['a different manifest digest', (o: Obj) => { o.metadata.annotations['purko.io/manifest-digest'] = '0000000000000000' }, ['metadata.annotations["purko.io/manifest-digest"]']],
    ['args on a container whose recipe sets none (not a field Kinetic sets)', (o: Obj) => { o.spec.template.spec.containers[0].args = ['b', 'a'] }, []],
  ] as const)('%s', (_label, edit, expected) => {
    expect(driftPaths(web.manifest, live(web, edit))).toEqual(expected)
  })

  it('omitted false values (a volume mount\'s readOnly: false) and canonicalized quantities are not drift; owned replicas are', () => {
    const r = revisionOf(['db'], 1)
    const sts = r.workloads[0]!.children[1]!
    const desired = structuredClone(sts.manifest) as Obj
    desired.spec.template.spec.containers[0].volumeMounts = [{ name: 'data', mountPath: '/data', readOnly: false }]
    desired.spec.template.spec.containers[0].resources = { requests: { cpu: '1000m', memory: '1Gi' } }
    const o = structuredClone(desired) as Obj
    o.spec.template.spec.containers[0].volumeMounts = [{ name: 'data', mountPath: '/data' }]
    o.spec.template.spec.containers[0].resources = { requests: { cpu: '1', memory: '1Gi' } }
    expect(driftPaths(desired, o)).toEqual([])
    o.spec.template.spec.containers[0].resources.requests.memory = '2Gi'
    o.spec.replicas = 3
    expect(driftPaths(desired, o)).toEqual(['spec.replicas', 'spec.template.spec.containers[0].resources.requests.memory'])
  })
})

describe('planDrift (spec §7.8)', () => {
  const children = rev.workloads.flatMap((w) => w.children)
  const base = { uid: RECIPE.uid, children, driftPolicy: 'Correct' as const, phase: 'Active', deleting: false }

  it('no drift: nothing to do, no condition', () => {
    expect(planDrift({ ...base, live: liveWith(children) })).toEqual({ drift: [], correct: [], events: [], childMissing: false })
  })

  it('Correct: re-creates a missing child and restores a changed one, with DriftCorrected messages', () => {
    const m = liveWith(children)
    m.delete(keyOf(db))
    m.set(keyOf(web), live(web, (o) => { o.spec.template.spec.containers[0].image = 'evil:1' }))
    const plan = planDrift({ ...base, live: m })
    expect(plan.events).toEqual([
      { reason: 'DriftCorrected', message: 're-created StatefulSet sandbox-recipes/recipes-demo-shop-db-ea96027d' },
      { reason: 'DriftCorrected', message: 'restored Deployment sandbox-recipes/recipes-demo-shop-web-0f1506de: spec.template.spec.containers[0].image' },
    ])
    expect(plan.correct.map((d) => d.child)).toEqual([db, web])
    expect(plan.childMissing).toBe(true)
    expect(plan.condition).toMatchObject({ type: 'Drifted', status: 'False', reason: 'InSync' })
  })

  it.each([
    ['Warn', { driftPolicy: 'Warn' as const }],
    ['Deprecated', { phase: 'Deprecated' }],
    ['deletion', { deleting: true }],
  ])('%s: only reports (Drifted=True, DriftDetected)', (_label, extra) => {
    const m = liveWith(children)
    m.set(keyOf(web), live(web, (o) => { o.spec.template.spec.containers[0].image = 'evil:1' }))
    const plan = planDrift({ ...base, ...extra, live: m })
    expect(plan.correct).toEqual([])
    expect(plan.events).toEqual([{ reason: 'DriftDetected', message: 'Deployment sandbox-recipes/recipes-demo-shop-web-0f1506de differs: spec.template.spec.containers[0].image' }])
    expect(plan.condition).toEqual({ type: 'Drifted', status: 'True', reason: 'DriftDetected', message: 'Deployment sandbox-recipes/recipes-demo-shop-web-0f1506de: spec.template.spec.containers[0].image' })
  })

  it('a foreign object under a child\'s name and a terminating child are not corrected; a completed Job gone by TTL is not missing', () => {
    const m = liveWith(children)
    m.set(keyOf(web), { kind: 'Deployment', metadata: { name: web.name, namespace: web.namespace, labels: {} } })
    m.set(keyOf(db), live(db, (o) => { o.metadata.deletionTimestamp = '2026-03-01T12:00:00Z'; o.spec.replicas = 9 }))
    expect(planDrift({ ...base, live: m }).drift).toEqual([])
    const job = revisionOf(['batch'], 1).children
    expect(planDrift({ ...base, children: job, live: new Map(), completedJobs: [job[0]!.name] }).drift).toEqual([])
    expect(planDrift({ ...base, children: job, live: new Map() }).events).toEqual([{ reason: 'DriftCorrected', message: `re-created Job sandbox-recipes/${job[0]!.name}` }])
  })

  it('drift gone after being reported gives Drifted=False InSync', () => {
    expect(planDrift({ ...base, live: liveWith(children), previouslyDrifted: true }).condition).toEqual({ type: 'Drifted', status: 'False', reason: 'InSync', message: 'children match the current revision' })
  })
})
