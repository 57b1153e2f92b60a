import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { startApiServer, type ApiServer } from '../../../local/apiserver/index.js'
import { startJobRunner, type JobRunner } from '../../../local/jobs/runner.js'
import type { StepCommand } from '../../../local/jobs/step-process.js'
import { KubeHttp, type KubeObject } from '../../../local/knative/kube-http.js'
import { silentLogger } from '../../../shared/log.js'

const NS = 'ai-agents'
let api: ApiServer
let kube: KubeHttp
let runner: JobRunner | undefined

beforeEach(async () => {
  api = await startApiServer()
  kube = new KubeHttp(api.kubeConfigObject())
})
afterEach(async () => {
  await runner?.stop()
  runner = undefined
  await api.close()
})

/** A step that runs `script` with node instead of the executor (by the `command` option). */
const nodeScript = (script: string): StepCommand => ({ command: process.execPath, args: ['-e', script], cwd: process.cwd() })

function start(opts: { command?: (job: KubeObject) => StepCommand; timeScale?: number } = {}) {
  runner = startJobRunner({
    kubeConfig: api.kubeConfigObject(),
    appendPodLog: (ns, pod, text) => api.store.appendPodLog(ns, pod, text),
    log: silentLogger,
    ...opts,
  })
  return runner.ready
}

function aJob(name: string, spec: Record<string, unknown> = {}, env: unknown[] = []) {
  return {
    apiVersion: 'batch/v1', kind: 'Job',
    metadata: { name, namespace: NS, labels: { 'purko.io/workflow': 'wf' } },
    spec: {
      backoffLimit: 0,
      ...spec,
      template: {
        metadata: { labels: { 'purko.io/workflow': 'wf', 'purko.io/step': 'plan' } },
        spec: { restartPolicy: 'Never', containers: [{ name: 'step-executor', image: 'any-image:latest', env }] },
      },
    },
  }
}

async function createJob(job: ReturnType<typeof aJob>): Promise<KubeObject> {
  return kube.request('POST', `/apis/batch/v1/namespaces/${NS}/jobs`, job)
}

type JobStatus = { conditions?: Array<{ type: string; status: string; reason: string; message: string }>; succeeded?: number; failed?: number; active?: number; startTime?: string; completionTime?: string }

async function finished(name: string, timeoutMs = 30_000): Promise<JobStatus> {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    const job = await kube.get(`/apis/batch/v1/namespaces/${NS}/jobs/${name}`)
    const status = (job?.status ?? {}) as JobStatus
    if (status.conditions?.some((c) => (c.type === 'Complete' || c.type === 'Failed') && c.status === 'True')) return status
    await new Promise((r) => setTimeout(r, 25))
  }
  throw new Error(`Job ${name} did not finish`)
}

async function podsOf(name: string): Promise<KubeObject[]> {
  const list = await kube.request<{ items: KubeObject[] }>('GET', `/api/v1/namespaces/${NS}/pods?labelSelector=${encodeURIComponent(`job-name=${name}`)}`)
  return list.items
}

const condition = (s: JobStatus, type: string) => s.conditions?.find((c) => c.type === type)

describe('local Job runner', () => {
  it('runs the executor as the pod, serves its OUTPUT line as the pod log and completes the Job', async () => {
    await start()
    const job = await createJob(aJob('wf-plan-r1', {}, [
      { name: 'STEP_NAME', value: 'plan' }, { name: 'WORKFLOW_NAME', value: 'wf' },
      { name: 'STEP_INPUT', value: '{"task":"outline the report"}' }, { name: 'MODEL_PROVIDER', value: 'anthropic' }, { name: 'MODEL_NAME', value: 'm' },
    ]))

    const status = await finished('wf-plan-r1')

    expect(condition(status, 'Complete')).toMatchObject({ status: 'True', reason: 'CompletionsReached' })
    expect(status).toMatchObject({ succeeded: 1, active: 0 })
    expect(Date.parse(status.completionTime ?? '')).toBeGreaterThanOrEqual(Date.parse(status.startTime ?? ''))
    const [pod, ...more] = await podsOf('wf-plan-r1')
    expect(more).toHaveLength(0)
    expect(pod?.metadata?.name).toMatch(/^wf-plan-r1-[bcdfghjklmnpqrstvwxz2456789]{5}$/)
    expect(pod?.metadata?.labels).toMatchObject({ 'job-name': 'wf-plan-r1', 'controller-uid': job.metadata?.uid, 'purko.io/step': 'plan' })
    expect(pod?.metadata?.ownerReferences?.[0]).toMatchObject({ kind: 'Job', name: 'wf-plan-r1', uid: job.metadata?.uid, controller: true })
    expect((pod?.status as { phase: string }).phase).toBe('Succeeded')
    const logText = await kube.text(`/api/v1/namespaces/${NS}/pods/${pod?.metadata?.name}/log`)
    const outputLine = logText.split('\n').find((l) => l.startsWith('OUTPUT:'))
    expect(JSON.parse(outputLine?.slice('OUTPUT:'.length) ?? '{}')).toMatchObject({ step: 'plan', workflow: 'wf' })
    // The same line as the container's termination message, as a kubelet reports the file's content.
    const terminated = (pod?.status as { containerStatuses: Array<{ state: { terminated?: { exitCode: number; message?: string } } }> }).containerStatuses[0]?.state.terminated
    expect(terminated).toMatchObject({ exitCode: 0, message: outputLine })
    // The engine takes the message (the line alone; the log has more lines around it), and when
    // the container started, which the step's span shows as pod.started.
    const { KubeClient } = await import('../../../shared/kube/client.js')
    const report = await new KubeClient(api.kubeConfigObject()).readStepReport(NS, 'wf-plan-r1', 'output')
    expect(report?.text).toBe(outputLine)
    const startedAt = (terminated as { startedAt?: string }).startedAt
    expect(startedAt).toBeDefined()
    expect(report?.startedAt).toBe(new Date(startedAt!).toISOString())
  }, 60_000)

  it('reports no termination message for a container that left none, and the engine reads the step output from the log', async () => {
    await start({ command: () => nodeScript('console.log("OUTPUT:{\\"from\\":\\"log\\"}")') })
    await createJob(aJob('wf-plain'))
    await finished('wf-plain')
    const [pod] = await podsOf('wf-plain')
    const terminated = (pod?.status as { containerStatuses: Array<{ state: { terminated?: Record<string, unknown> } }> }).containerStatuses[0]?.state.terminated
    expect(terminated).toMatchObject({ exitCode: 0 })
    expect(terminated).not.toHaveProperty('message')
    const { KubeClient } = await import('../../../shared/kube/client.js')
    expect((await new KubeClient(api.kubeConfigObject()).readStepReport(NS, 'wf-plain', 'output'))?.text).toBe('OUTPUT:{"from":"log"}\n')
  }, 60_000)

  it('fails the Job with BackoffLimitExceeded after backoffLimit + 1 failed pods', async () => {
    await start({ command: () => nodeScript('console.log("boom"); process.exit(3)'), timeScale: 1000 })
    await createJob(aJob('flaky', { backoffLimit: 1 }))

    const status = await finished('flaky')

    expect(condition(status, 'Failed')).toMatchObject({ status: 'True', reason: 'BackoffLimitExceeded' })
    expect(condition(status, 'Complete')).toBeUndefined()
    expect(status.failed).toBe(2)
    const pods = await podsOf('flaky')
    expect(pods).toHaveLength(2)
    for (const p of pods) expect((p.status as { phase: string }).phase).toBe('Failed')
    expect(await kube.text(`/api/v1/namespaces/${NS}/pods/${pods[0]?.metadata?.name}/log`)).toContain('boom')
  }, 30_000)

  it('kills a step that outlives activeDeadlineSeconds and fails the Job with DeadlineExceeded', async () => {
    await start({ command: () => nodeScript('setTimeout(() => {}, 60000)') })
    await createJob(aJob('slow', { activeDeadlineSeconds: 1 }))

    const status = await finished('slow')

    expect(condition(status, 'Failed')).toMatchObject({ reason: 'DeadlineExceeded', message: 'Job was active longer than specified deadline' })
    const [pod] = await podsOf('slow')
    expect(pod?.status).toMatchObject({ phase: 'Failed', reason: 'DeadlineExceeded' })
  }, 30_000)

  it('resolves secretKeyRef, configMapKeyRef and fieldRef into the step environment', async () => {
    await kube.request('POST', `/api/v1/namespaces/${NS}/secrets`, { metadata: { name: 'llm' }, data: { 'api-key': Buffer.from('sk-local').toString('base64') } })
    await kube.request('POST', `/api/v1/namespaces/${NS}/configmaps`, { metadata: { name: 'cfg' }, data: { region: 'eu' } })
    await start({ command: () => nodeScript('console.log("OUTPUT:" + JSON.stringify({ key: process.env.MODEL_API_KEY, region: process.env.REGION, pod: process.env.POD, opt: process.env.OPT ?? null }))') })
    await createJob(aJob('env', {}, [
      { name: 'MODEL_API_KEY', valueFrom: { secretKeyRef: { name: 'llm', key: 'api-key' } } },
      { name: 'REGION', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'region' } } },
      { name: 'POD', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
      { name: 'OPT', valueFrom: { secretKeyRef: { name: 'absent', key: 'k', optional: true } } },
    ]))

    expect(condition(await finished('env'), 'Complete')?.status).toBe('True')
    const [pod] = await podsOf('env')
    const logText = await kube.text(`/api/v1/namespaces/${NS}/pods/${pod?.metadata?.name}/log`)
    expect(JSON.parse(logText.trim().slice('OUTPUT:'.length))).toEqual({ key: 'sk-local', region: 'eu', pod: pod?.metadata?.name, opt: null })
  }, 30_000)

  it('fails the pod with CreateContainerConfigError when a required Secret is missing', async () => {
    await start({ command: () => nodeScript('console.log("OUTPUT:{}")') })
    await createJob(aJob('nosecret', {}, [{ name: 'MODEL_API_KEY', valueFrom: { secretKeyRef: { name: 'missing', key: 'api-key' } } }]))

    const status = await finished('nosecret')

    expect(condition(status, 'Failed')?.reason).toBe('BackoffLimitExceeded')
    expect(condition(status, 'Failed')?.message).toContain('CreateContainerConfigError: secret "missing" not found')
    const [pod] = await podsOf('nosecret')
    expect(pod?.status).toMatchObject({ phase: 'Failed', reason: 'CreateContainerConfigError', message: 'secret "missing" not found' })
  }, 30_000)

  it('deletes a finished Job after ttlSecondsAfterFinished', async () => {
    const list = await kube.request<{ metadata: { resourceVersion: string } }>('GET', `/apis/batch/v1/namespaces/${NS}/jobs`)
    const seen: Array<{ type: string; complete: boolean }> = []
    const watching = new AbortController()
    const deleted = kube.watch(`/apis/batch/v1/namespaces/${NS}/jobs?watch=1&resourceVersion=${list.metadata.resourceVersion}`, async (ev) => {
      const conditions = ((ev.object.status ?? {}) as JobStatus).conditions ?? []
      seen.push({ type: ev.type, complete: conditions.some((c) => c.type === 'Complete' && c.status === 'True') })
      if (ev.type === 'DELETED') watching.abort()
    }, watching.signal)
    await start({ command: () => nodeScript('console.log("OUTPUT:{}")'), timeScale: 1000 })
    await createJob(aJob('short-lived', { ttlSecondsAfterFinished: 5 }))

    await deleted

    const firstComplete = seen.findIndex((e) => e.complete)
    expect(firstComplete).toBeGreaterThan(0)
    expect(seen.at(-1)?.type).toBe('DELETED')
    expect(await kube.get(`/apis/batch/v1/namespaces/${NS}/jobs/short-lived`)).toBeNull()
  }, 30_000)

  it('starts no pod while a Job is suspended, and runs it once resumed', async () => {
    await start({ command: () => nodeScript('console.log("OUTPUT:{}")') })
    await createJob(aJob('held', { suspend: true }))
    await createJob(aJob('marker'))
    await finished('marker')
    expect(await podsOf('held')).toHaveLength(0)

    await kube.mergePatch(`/apis/batch/v1/namespaces/${NS}/jobs/held`, { spec: { suspend: false } })

    expect(condition(await finished('held'), 'Complete')?.status).toBe('True')
  }, 30_000)
})
