import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { parseAllDocuments } from 'yaml'
import { ObjectStore } from '../../../local/apiserver/object-store.js'
import type { TypeRef } from '../../../local/apiserver/store/store-types.js'
import type { KubeObject } from '../../../local/apiserver/index.js'
import { startWorkloadControllers, type WorkloadControllerOptions, type WorkloadControllers } from '../../../local/workloads/controllers.js'
import { readinessOf, type ObservedObject, type ReadinessKind } from '../../../shared/recipe/plan/readiness.js'
import { ANNOTATION_MANIFEST_DIGEST } from '../../../shared/recipe/plan/labels.js'

const NS = 'default'
const DEPLOYMENT: TypeRef = { apiVersion: 'apps/v1', kind: 'Deployment' }
const REPLICASET: TypeRef = { apiVersion: 'apps/v1', kind: 'ReplicaSet' }
const STATEFULSET: TypeRef = { apiVersion: 'apps/v1', kind: 'StatefulSet' }
const DAEMONSET: TypeRef = { apiVersion: 'apps/v1', kind: 'DaemonSet' }
const CRONJOB: TypeRef = { apiVersion: 'batch/v1', kind: 'CronJob' }
const JOB: TypeRef = { apiVersion: 'batch/v1', kind: 'Job' }
const POD: TypeRef = { apiVersion: 'v1', kind: 'Pod' }
const PVC: TypeRef = { apiVersion: 'v1', kind: 'PersistentVolumeClaim' }
const NOW = new Date().toISOString()

let store: ObjectStore
let controllers: WorkloadControllers | undefined
afterEach(() => { controllers?.stop(); controllers = undefined })

function start(opts: Partial<WorkloadControllerOptions> = {}) {
  store = new ObjectStore()
  controllers = startWorkloadControllers({ store, cronIntervalMs: 0, ...opts })
  return controllers
}
const settle = () => (controllers as WorkloadControllers).settle()
const get = (type: TypeRef, name: string, namespace = NS) => store.get(type, namespace, name) as KubeObject
const list = (type: TypeRef, namespace = NS) => store.list(type, { namespace }).items
const ready = (kind: ReadinessKind, type: TypeRef, name: string, namespace = NS) => readinessOf(kind, get(type, name, namespace) as ObservedObject, NOW)
const status = (o: KubeObject) => (o.status ?? {}) as Record<string, any>
const ownedBy = (items: KubeObject[], owner: KubeObject) => items.filter((o) => o.metadata.ownerReferences?.some((r) => r.uid === owner.metadata.uid && r.controller))

const template = (labels: Record<string, string>, image = 'nginx:1.27') => ({
  metadata: { labels },
  spec: { containers: [{ name: 'main', image }] },
})
const deployment = (name: string, replicas?: number, image?: string) => ({
  apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name, namespace: NS },
  spec: { ...(replicas !== undefined ? { replicas } : {}), selector: { matchLabels: { app: name } }, strategy: { type: 'RollingUpdate' }, template: template({ app: name }, image) },
})
const statefulSet = (name: string, replicas: number, extra: Record<string, unknown> = {}, image?: string) => ({
  apiVersion: 'apps/v1', kind: 'StatefulSet', metadata: { name, namespace: NS },
  spec: {
    replicas, serviceName: name, selector: { matchLabels: { app: name } }, podManagementPolicy: 'OrderedReady',
    persistentVolumeClaimRetentionPolicy: { whenDeleted: 'Retain', whenScaled: 'Retain' },
    volumeClaimTemplates: [{ metadata: { name: 'data' }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } }],
    template: template({ app: name }, image), ...extra,
  },
})
const scale = (type: TypeRef, name: string, replicas: number) => {
  const o = get(type, name)
  store.update({ ...o, spec: { ...(o.spec as object), replicas } })
}
const setImage = (type: TypeRef, name: string, image: string) => {
  const o = get(type, name) as KubeObject & { spec: { template: { spec: { containers: Array<{ image: string }> } } } }
  o.spec.template.spec.containers[0]!.image = image
  store.update(o)
}

describe('Deployments', () => {
  it('get a ReplicaSet and ready pods named, labelled and owned like the real controller\'s, and the status spec §6 calls Ready', async () => {
    start()
    store.create(deployment('web', 2))
    await settle()
    const d = get(DEPLOYMENT, 'web')
    expect(ready('Deployment', DEPLOYMENT, 'web')).toMatchObject({ ready: true, message: '2/2 replicas available', replicas: 2, readyReplicas: 2 })
    expect(status(d)).toMatchObject({ observedGeneration: 1, replicas: 2, updatedReplicas: 2, readyReplicas: 2, availableReplicas: 2 })
    expect(status(d).unavailableReplicas).toBeUndefined()
    expect(status(d).conditions.map((c: any) => [c.type, c.status, c.reason])).toEqual([
      ['Available', 'True', 'MinimumReplicasAvailable'], ['Progressing', 'True', 'NewReplicaSetAvailable'],
    ])
    const [rs, ...others] = list(REPLICASET)
    expect(others).toHaveLength(0)
    const hash = rs!.metadata.labels?.['pod-template-hash'] as string
    expect(hash).toMatch(/^[bcdfghjklmnpqrstvwxz2456789]{1,10}$/)
    expect(rs!.metadata.name).toBe(`web-${hash}`)
    expect(rs!.metadata.ownerReferences).toEqual([{ apiVersion: 'apps/v1', kind: 'Deployment', name: 'web', uid: d.metadata.uid, controller: true, blockOwnerDeletion: true }])
    expect(rs!.metadata.annotations?.['deployment.kubernetes.io/revision']).toBe('1')
    expect(d.metadata.annotations?.['deployment.kubernetes.io/revision']).toBe('1')
    expect(status(rs!)).toMatchObject({ replicas: 2, readyReplicas: 2, availableReplicas: 2, fullyLabeledReplicas: 2, observedGeneration: 1 })
    const pods = list(POD)
    expect(pods).toHaveLength(2)
    for (const p of pods) {
      expect(p.metadata.name).toMatch(new RegExp(`^web-${hash}-[bcdfghjklmnpqrstvwxz2456789]{5}$`))
      expect(p.metadata.labels).toEqual({ app: 'web', 'pod-template-hash': hash })
      expect(p.metadata.ownerReferences?.[0]).toMatchObject({ kind: 'ReplicaSet', name: rs!.metadata.name, uid: rs!.metadata.uid, controller: true })
      expect(status(p)).toMatchObject({ phase: 'Running', containerStatuses: [{ name: 'main', ready: true, state: { running: {} } }] })
      expect(status(p).conditions.find((c: any) => c.type === 'Ready').status).toBe('True')
    }
  })

  it('without replicas run one pod (the API server default)', async () => {
    start()
    store.create(deployment('one'))
    await settle()
    expect(list(POD)).toHaveLength(1)
    expect(ready('Deployment', DEPLOYMENT, 'one').ready).toBe(true)
  })

  it('scale up and down, each new generation observed', async () => {
    start()
    store.create(deployment('web', 2))
    await settle()
    scale(DEPLOYMENT, 'web', 4)
    expect(ready('Deployment', DEPLOYMENT, 'web')).toMatchObject({ ready: false, message: 'waiting for the controller to observe generation 2' })
    await settle()
    expect(list(POD)).toHaveLength(4)
    expect(status(get(DEPLOYMENT, 'web'))).toMatchObject({ observedGeneration: 2, replicas: 4, availableReplicas: 4 })
    expect(ready('Deployment', DEPLOYMENT, 'web').ready).toBe(true)
    scale(DEPLOYMENT, 'web', 1)
    await settle()
    expect(list(POD)).toHaveLength(1)
    expect(ready('Deployment', DEPLOYMENT, 'web')).toMatchObject({ ready: true, message: '1/1 replicas available' })
    scale(DEPLOYMENT, 'web', 0)
    await settle()
    expect(list(POD)).toHaveLength(0)
    expect(status(get(DEPLOYMENT, 'web'))).toEqual({ observedGeneration: 4, conditions: expect.any(Array) })
    expect(ready('Deployment', DEPLOYMENT, 'web').ready).toBe(true)
  })

  it('roll a changed template out to a new ReplicaSet and scale the old one to 0, revision 2', async () => {
    start()
    store.create(deployment('web', 2))
    await settle()
    const first = list(REPLICASET)[0] as KubeObject
    setImage(DEPLOYMENT, 'web', 'nginx:1.28')
    await settle()
    const sets = list(REPLICASET)
    expect(sets).toHaveLength(2)
    const second = sets.find((rs) => rs.metadata.uid !== first.metadata.uid) as KubeObject
    expect((get(REPLICASET, String(first.metadata.name)).spec as any).replicas).toBe(0)
    expect(second.metadata.annotations?.['deployment.kubernetes.io/revision']).toBe('2')
    expect(get(DEPLOYMENT, 'web').metadata.annotations?.['deployment.kubernetes.io/revision']).toBe('2')
    const pods = list(POD)
    expect(pods).toHaveLength(2)
    expect(pods.every((p) => p.metadata.labels?.['pod-template-hash'] === second.metadata.labels?.['pod-template-hash'])).toBe(true)
    expect(pods.every((p) => (p.spec as any).containers[0].image === 'nginx:1.28')).toBe(true)
    expect(ready('Deployment', DEPLOYMENT, 'web')).toMatchObject({ ready: true })
    expect(status(get(DEPLOYMENT, 'web')).conditions.find((c: any) => c.type === 'Progressing').message).toBe(`ReplicaSet "${second.metadata.name}" has successfully progressed.`)
  })

  it('are not Ready while their pods do not start, with the controller\'s Available=False', async () => {
    start({ startPods: false })
    store.create(deployment('web', 2))
    await settle()
    expect(list(POD).map((p) => status(p).phase)).toEqual(['Pending', 'Pending'])
    expect(ready('Deployment', DEPLOYMENT, 'web')).toMatchObject({ ready: false, message: '0/2 replicas available' })
    const s = status(get(DEPLOYMENT, 'web'))
    expect(s).toMatchObject({ replicas: 2, updatedReplicas: 2, unavailableReplicas: 2 })
    expect(s.conditions.map((c: any) => [c.type, c.status, c.reason])).toEqual([
      ['Available', 'False', 'MinimumReplicasUnavailable'], ['Progressing', 'True', 'ReplicaSetUpdated'],
    ])
  })

  it('replace a deleted pod, and their deletion cascades to ReplicaSets and pods', async () => {
    start()
    store.create(deployment('web', 2))
    store.create(deployment('other', 1))
    await settle()
    const web = get(DEPLOYMENT, 'web')
    const rs = ownedBy(list(REPLICASET), web)[0] as KubeObject
    const victim = ownedBy(list(POD), rs)[0] as KubeObject
    store.delete(POD, NS, String(victim.metadata.name))
    await settle()
    const pods = ownedBy(list(POD), rs)
    expect(pods).toHaveLength(2)
    expect(pods.map((p) => p.metadata.name)).not.toContain(victim.metadata.name)
    store.delete(DEPLOYMENT, NS, 'web', { propagationPolicy: 'Background' })
    await settle()
    expect(list(REPLICASET).map((r) => r.metadata.name)).toEqual([expect.stringMatching(/^other-/)])
    expect(list(POD).map((p) => p.metadata.name)).toEqual([expect.stringMatching(/^other-/)])
  })
})

describe('StatefulSets', () => {
  it('get ordinal pods and Bound claims from volumeClaimTemplates, and the status spec §6 calls Ready', async () => {
    start()
    store.create(statefulSet('db', 3))
    await settle()
    const sts = get(STATEFULSET, 'db')
    expect(ready('StatefulSet', STATEFULSET, 'db')).toMatchObject({ ready: true, message: '3/3 replicas ready' })
    const s = status(sts)
    expect(s).toMatchObject({ observedGeneration: 1, replicas: 3, readyReplicas: 3, currentReplicas: 3, updatedReplicas: 3, availableReplicas: 3, collisionCount: 0 })
    expect(s.currentRevision).toMatch(/^db-[bcdfghjklmnpqrstvwxz2456789]+$/)
    expect(s.updateRevision).toBe(s.currentRevision)
    expect(list(POD).map((p) => p.metadata.name).sort()).toEqual(['db-0', 'db-1', 'db-2'])
    const pod = get(POD, 'db-1')
    expect(pod.metadata.labels).toEqual({ app: 'db', 'apps.kubernetes.io/pod-index': '1', 'controller-revision-hash': s.currentRevision, 'statefulset.kubernetes.io/pod-name': 'db-1' })
    expect(pod.metadata.ownerReferences?.[0]).toMatchObject({ kind: 'StatefulSet', name: 'db', uid: sts.metadata.uid, controller: true })
    expect((pod.spec as any)).toMatchObject({ hostname: 'db-1', subdomain: 'db', volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'data-db-1' } }] })
    const claims = list(PVC)
    expect(claims.map((c) => c.metadata.name).sort()).toEqual(['data-db-0', 'data-db-1', 'data-db-2'])
    for (const c of claims) {
      expect(status(c)).toEqual({ phase: 'Bound', accessModes: ['ReadWriteOnce'], capacity: { storage: '1Gi' } })
      expect(c.metadata.labels).toEqual({ app: 'db' })
      expect((c.spec as any).volumeName).toBe(`pvc-${c.metadata.uid}`)
      expect(c.metadata.ownerReferences).toBeUndefined()
    }
  })

  it('create ordinals one at a time under OrderedReady: only db-0 while it is not ready', async () => {
    start({ startPods: false })
    store.create(statefulSet('db', 3))
    await settle()
    expect(list(POD).map((p) => p.metadata.name)).toEqual(['db-0'])
    expect(ready('StatefulSet', STATEFULSET, 'db')).toMatchObject({ ready: false, message: '0/3 replicas ready' })
    expect(status(get(STATEFULSET, 'db'))).toMatchObject({ replicas: 1, availableReplicas: 0 })
  })

  it('scale down from the highest ordinal keeping the claims (whenScaled: Retain), and back up', async () => {
    start()
    store.create(statefulSet('db', 3))
    await settle()
    scale(STATEFULSET, 'db', 1)
    await settle()
    expect(list(POD).map((p) => p.metadata.name)).toEqual(['db-0'])
    expect(list(PVC)).toHaveLength(3)
    expect(ready('StatefulSet', STATEFULSET, 'db')).toMatchObject({ ready: true, message: '1/1 replicas ready' })
    scale(STATEFULSET, 'db', 2)
    await settle()
    expect(list(POD).map((p) => p.metadata.name).sort()).toEqual(['db-0', 'db-1'])
    expect(ready('StatefulSet', STATEFULSET, 'db').ready).toBe(true)
  })

  it('roll a changed template from the highest ordinal until currentRevision == updateRevision', async () => {
    start()
    store.create(statefulSet('db', 2))
    await settle()
    const before = status(get(STATEFULSET, 'db')).currentRevision
    setImage(STATEFULSET, 'db', 'postgres:17')
    await settle()
    const s = status(get(STATEFULSET, 'db'))
    expect(s.updateRevision).not.toBe(before)
    expect(s.currentRevision).toBe(s.updateRevision)
    expect(list(POD).map((p) => p.metadata.labels?.['controller-revision-hash'])).toEqual([s.updateRevision, s.updateRevision])
    expect(ready('StatefulSet', STATEFULSET, 'db').ready).toBe(true)
  })

  it('cascade their deletion to pods; claims stay under whenDeleted: Retain and go under Delete', async () => {
    start()
    store.create(statefulSet('keep', 1))
    store.create(statefulSet('drop', 2, { persistentVolumeClaimRetentionPolicy: { whenDeleted: 'Delete', whenScaled: 'Retain' } }))
    await settle()
    store.delete(STATEFULSET, NS, 'keep')
    store.delete(STATEFULSET, NS, 'drop')
    await settle()
    expect(list(POD)).toEqual([])
    expect(list(PVC).map((c) => c.metadata.name)).toEqual(['data-keep-0'])
  })
})

describe('DaemonSets', () => {
  const daemonSet = (name: string, nodeSelector?: Record<string, string>) => ({
    apiVersion: 'apps/v1', kind: 'DaemonSet', metadata: { name, namespace: NS },
    spec: {
      selector: { matchLabels: { app: name } }, updateStrategy: { type: 'RollingUpdate' },
      template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'agent', image: 'otel:1' }], ...(nodeSelector ? { nodeSelector } : {}) } },
    },
  })

  it('run one pod on the local node by default, with the status spec §6 calls Ready', async () => {
    start()
    store.create(daemonSet('agent'))
    await settle()
    expect(status(get(DAEMONSET, 'agent'))).toEqual({
      currentNumberScheduled: 1, desiredNumberScheduled: 1, numberMisscheduled: 0, numberReady: 1, observedGeneration: 1, updatedNumberScheduled: 1, numberAvailable: 1,
    })
    expect(ready('DaemonSet', DAEMONSET, 'agent')).toMatchObject({ ready: true, message: '1/1 pods ready' })
    const [pod] = list(POD)
    expect(pod!.metadata.name).toMatch(/^agent-[bcdfghjklmnpqrstvwxz2456789]{5}$/)
    expect(pod!.metadata.labels).toMatchObject({ app: 'agent', 'pod-template-generation': '1', 'controller-revision-hash': expect.any(String) })
    expect((pod!.spec as any).nodeName).toBe('kinetic-local')
  })

  it('run one pod per matching node, replace pods on a template change, and cascade on deletion', async () => {
    start({ nodes: [{ name: 'n1', labels: { gpu: 'yes' } }, { name: 'n2', labels: { gpu: 'yes' } }, { name: 'n3' }] })
    store.create(daemonSet('agent', { gpu: 'yes' }))
    await settle()
    expect(list(POD).map((p) => (p.spec as any).nodeName).sort()).toEqual(['n1', 'n2'])
    expect(status(get(DAEMONSET, 'agent'))).toMatchObject({ desiredNumberScheduled: 2, numberReady: 2 })
    setImage(DAEMONSET, 'agent', 'otel:2')
    await settle()
    expect(status(get(DAEMONSET, 'agent'))).toMatchObject({ observedGeneration: 2, desiredNumberScheduled: 2, updatedNumberScheduled: 2, numberReady: 2 })
    expect(list(POD).map((p) => [(p.spec as any).containers[0].image, p.metadata.labels?.['pod-template-generation']])).toEqual([['otel:2', '2'], ['otel:2', '2']])
    expect(ready('DaemonSet', DAEMONSET, 'agent').ready).toBe(true)
    store.delete(DAEMONSET, NS, 'agent')
    await settle()
    expect(list(POD)).toEqual([])
  })

  it('with no matching node are not Ready (no node is scheduled)', async () => {
    start()
    store.create(daemonSet('agent', { gpu: 'yes' }))
    await settle()
    expect(list(POD)).toEqual([])
    expect(ready('DaemonSet', DAEMONSET, 'agent')).toMatchObject({ ready: false, message: 'no node is scheduled to run a pod' })
  })
})

describe('CronJobs', () => {
  const cronJob = (name: string, extra: Record<string, unknown> = {}) => ({
    apiVersion: 'batch/v1', kind: 'CronJob', metadata: { name, namespace: NS },
    spec: {
      schedule: '*/5 * * * *', concurrencyPolicy: 'Allow', ...extra,
      jobTemplate: { metadata: { labels: { app: name } }, spec: { backoffLimit: 0, template: { metadata: { labels: { app: name } }, spec: { restartPolicy: 'Never', containers: [{ name: 'run', image: 'report:1' }] } } } },
    },
  })
  /** A clock the test moves; starts at the CronJob's creation. */
  function clock() {
    let t = Date.now()
    return { now: () => new Date(t), set: (d: Date) => { t = d.getTime() } }
  }
  const nextFiveMinutes = (from: string, steps = 1) => {
    const ms = Date.parse(from)
    return new Date((Math.floor(ms / 300_000) + steps) * 300_000)
  }
  const complete = (name: string, at: string) => {
    store.patch(JOB, NS, name, { status: { succeeded: 1, completionTime: at, conditions: [{ type: 'Complete', status: 'True' }] } }, { type: 'merge', subresource: 'status' })
  }

  it('create a Job named and owned like the real controller\'s when the schedule comes, with active and lastScheduleTime', async () => {
    const c = clock()
    start({ now: c.now })
    const cj = store.create(cronJob('report'))
    const created = String(cj.metadata.creationTimestamp)
    c.set(new Date(Date.parse(created)))
    controllers!.tick()
    await settle()
    expect(list(JOB)).toEqual([])
    expect(ready('CronJob', CRONJOB, 'report')).toEqual({ ready: true, message: 'CronJob scheduled' })

    const first = nextFiveMinutes(created)
    c.set(new Date(first.getTime() + 20_000))
    controllers!.tick()
    await settle()
    const jobs = list(JOB)
    expect(jobs.map((j) => j.metadata.name)).toEqual([`report-${first.getTime() / 60_000}`])
    const job = jobs[0] as KubeObject
    expect(job.metadata.ownerReferences).toEqual([{ apiVersion: 'batch/v1', kind: 'CronJob', name: 'report', uid: cj.metadata.uid, controller: true, blockOwnerDeletion: true }])
    expect(job.metadata.annotations?.['batch.kubernetes.io/cronjob-scheduled-timestamp']).toBe(`${first.toISOString().slice(0, 19)}Z`)
    expect((job.spec as any).template.spec.containers[0].image).toBe('report:1')
    const s = status(get(CRONJOB, 'report'))
    expect(s.lastScheduleTime).toBe(`${first.toISOString().slice(0, 19)}Z`)
    expect(s.active).toEqual([{ apiVersion: 'batch/v1', kind: 'Job', name: job.metadata.name, namespace: NS, uid: job.metadata.uid, resourceVersion: expect.any(String) }])
    expect(ready('CronJob', CRONJOB, 'report')).toMatchObject({ ready: true, lastScheduleTime: s.lastScheduleTime })

    // The same minute again creates nothing; the Job finishing moves it out of active.
    controllers!.tick()
    await settle()
    expect(list(JOB)).toHaveLength(1)
    const done = `${new Date(first.getTime() + 60_000).toISOString().slice(0, 19)}Z`
    complete(String(job.metadata.name), done)
    await settle()
    const after = status(get(CRONJOB, 'report'))
    expect(after.active).toBeUndefined()
    expect(after.lastSuccessfulTime).toBe(done)
    expect(ready('CronJob', CRONJOB, 'report')).toMatchObject({ lastSuccessfulTime: done })
  })

  it('run only the latest of several missed times, keep successfulJobsHistoryLimit Jobs, and cascade deletion', async () => {
    const c = clock()
    start({ now: c.now })
    const cj = store.create(cronJob('report', { successfulJobsHistoryLimit: 1 }))
    const created = String(cj.metadata.creationTimestamp)
    c.set(new Date(nextFiveMinutes(created, 3).getTime() + 1000))
    controllers!.tick()
    await settle()
    expect(list(JOB).map((j) => j.metadata.name)).toEqual([`report-${nextFiveMinutes(created, 3).getTime() / 60_000}`])
    complete(String(list(JOB)[0]!.metadata.name), created)
    c.set(nextFiveMinutes(created, 4))
    controllers!.tick()
    await settle()
    complete(`report-${nextFiveMinutes(created, 4).getTime() / 60_000}`, created)
    await settle()
    expect(list(JOB).map((j) => j.metadata.name)).toEqual([`report-${nextFiveMinutes(created, 4).getTime() / 60_000}`])
    store.delete(CRONJOB, NS, 'report')
    await settle()
    expect(list(JOB)).toEqual([])
  })

  it('honour Forbid (no second Job while one runs), Replace (the running one goes) and suspend', async () => {
    const c = clock()
    start({ now: c.now })
    const forbid = store.create(cronJob('forbid', { concurrencyPolicy: 'Forbid' }))
    store.create(cronJob('replace', { concurrencyPolicy: 'Replace' }))
    store.create(cronJob('paused', { suspend: true }))
    const created = String(forbid.metadata.creationTimestamp)
    for (const step of [1, 2]) {
      c.set(nextFiveMinutes(created, step))
      controllers!.tick()
      await settle()
    }
    const names = list(JOB).map((j) => j.metadata.name).sort()
    expect(names).toEqual([`forbid-${nextFiveMinutes(created, 1).getTime() / 60_000}`, `replace-${nextFiveMinutes(created, 2).getTime() / 60_000}`])
    expect(status(get(CRONJOB, 'paused'))).toEqual({})
  })
})

describe('golden recipe manifests (test/recipe/golden)', () => {
  const golden = (file: string) => parseAllDocuments(readFileSync(join(process.cwd(), 'test', 'recipe', 'golden', file), 'utf8'))
    .map((d) => d.toJSON() as KubeObject).filter((o) => o && ['Deployment', 'StatefulSet', 'DaemonSet', 'CronJob'].includes(o.kind))
  const cases: Array<[string, ReadinessKind]> = [
    ['07-webapp-with-db--shop.yaml', 'Deployment'],
    ['01-postgres-statefulset--postgres.yaml', 'StatefulSet'],
    ['06-daemonset-otel-agent--node-otel-agent.yaml', 'DaemonSet'],
    ['05-cronjob-report--nightly-report.yaml', 'CronJob'],
  ]
  it.each(cases)('%s: every %s a recipe generates is Ready for its revision by readinessOf', async (file, kind) => {
    start()
    const objects = golden(file)
    expect(objects.some((o) => o.kind === kind)).toBe(true)
    for (const o of objects) store.create(o)
    await settle()
    for (const o of objects) {
      const live = get({ apiVersion: o.apiVersion, kind: o.kind }, String(o.metadata.name), String(o.metadata.namespace))
      const digest = o.metadata.annotations?.[ANNOTATION_MANIFEST_DIGEST]
      expect(readinessOf(o.kind as ReadinessKind, live as ObservedObject, NOW, digest), `${o.kind} ${o.metadata.name}`).toMatchObject({ ready: true })
    }
  })
})
