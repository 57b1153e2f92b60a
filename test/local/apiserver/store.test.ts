import { describe, expect, it } from 'vitest'
import { ApiError, ObjectStore, type KubeObject } from '../../../local/apiserver/index.js'

const JOB = { apiVersion: 'batch/v1', kind: 'Job' }
const POD = { apiVersion: 'v1', kind: 'Pod' }

const aJob = (name: string): KubeObject => ({
  ...JOB,
  metadata: { name, namespace: 'ai-agents' },
  spec: { template: { spec: { restartPolicy: 'Never', containers: [{ name: 'step-executor', image: 'executor' }] } } },
})

function caught(f: () => unknown): ApiError {
  try {
    f()
  } catch (err) {
    if (err instanceof ApiError) return err
    throw err
  }
  throw new Error('expected an ApiError')
}

describe('ObjectStore (in-process access)', () => {
  it('runs a Job the way the Job runner will: pod with ownerReference, log, status writes, cascade on delete', () => {
    const store = new ObjectStore()
    const job = store.create(aJob('wf-step-g1'))
    const pod = store.create({
      ...POD,
      metadata: {
        name: 'wf-step-g1-abcde',
        namespace: 'ai-agents',
        labels: (job.spec as { template: { metadata: { labels: Record<string, string> } } }).template.metadata.labels,
        ownerReferences: [{ apiVersion: 'batch/v1', kind: 'Job', name: 'wf-step-g1', uid: job.metadata.uid as string, controller: true }],
      },
      spec: { containers: [{ name: 'step-executor', image: 'executor' }] },
    })
    store.appendPodLog('ai-agents', pod.metadata.name as string, 'OUTPUT:{"answer":42}\n')
    store.patch(POD, 'ai-agents', 'wf-step-g1-abcde', { status: { phase: 'Succeeded' } }, { type: 'merge', subresource: 'status' })
    const done = store.patch(JOB, 'ai-agents', 'wf-step-g1', { status: { succeeded: 1, conditions: [{ type: 'Complete', status: 'True' }] } }, { type: 'merge', subresource: 'status' })
    expect(done.status).toMatchObject({ succeeded: 1 })
    expect(done.metadata.generation).toBe(1)

    const pods = store.list(POD, { namespace: 'ai-agents', labelSelector: 'job-name=wf-step-g1' })
    expect(pods.items.map((p) => p.metadata.name)).toEqual(['wf-step-g1-abcde'])
    expect(store.podLog('ai-agents', 'wf-step-g1-abcde')).toBe('OUTPUT:{"answer":42}\n')

    store.delete(JOB, 'ai-agents', 'wf-step-g1', { propagationPolicy: 'Background' })
    expect(store.get(POD, 'ai-agents', 'wf-step-g1-abcde')).toBeUndefined()
    expect(caught(() => store.podLog('ai-agents', 'wf-step-g1-abcde')).code).toBe(404)
  })

  it('returns copies, so callers cannot change stored objects by mutating results', () => {
    const store = new ObjectStore()
    const created = store.create(aJob('copy'))
    created.metadata.labels = { changed: 'yes' }
    expect(store.get(JOB, 'ai-agents', 'copy')?.metadata.labels).not.toHaveProperty('changed')
  })

  it('throws ApiError with the Status the HTTP API would answer', () => {
    const store = new ObjectStore()
    store.create(aJob('dup'))
    const err = caught(() => store.create(aJob('dup')))
    expect(err.toStatus()).toMatchObject({ kind: 'Status', code: 409, reason: 'AlreadyExists', message: 'jobs.batch "dup" already exists' })
    expect(caught(() => store.get({ apiVersion: 'example.dev/v1', kind: 'Nothing' }, 'default', 'x')).code).toBe(404)
  })

  it('ends a log follower when the pod finishes', async () => {
    const store = new ObjectStore()
    store.create({ ...POD, metadata: { name: 'p', namespace: 'default' }, spec: { containers: [{ name: 'c', image: 'i' }] } })
    const chunks: (string | null)[] = []
    const ended = new Promise<void>((resolve) => {
      store.followPodLog('default', 'p', (chunk) => {
        chunks.push(chunk)
        if (chunk === null) resolve()
      })
    })
    store.appendPodLog('default', 'p', 'one\n')
    store.patch(POD, 'default', 'p', { status: { phase: 'Failed' } }, { type: 'merge', subresource: 'status' })
    await ended
    expect(chunks).toEqual(['one\n', null])
  })

  it('starts a watch from now when given the current resourceVersion', async () => {
    const store = new ObjectStore()
    store.create(aJob('before'))
    const seen: string[] = []
    const got = new Promise<void>((resolve) => {
      const handle = store.watch(JOB, { resourceVersion: store.resourceVersion }, (e) => {
        seen.push(`${e.type} ${e.object.metadata.name}`)
        handle.stop()
        resolve()
      })
    })
    store.create(aJob('after'))
    await got
    expect(seen).toEqual(['ADDED after'])
  })
})
