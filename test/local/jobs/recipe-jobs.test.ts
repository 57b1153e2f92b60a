// The local Job runner and a WorkflowRecipe's Jobs: no image is pulled locally, so a recipe Job
// runs only when its command is node (host Node.js, the container's env and args); any other
// fails its pod with ImageNotRunnableLocally, said in the pod log. Step Jobs run the executor.
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { startApiServer, type ApiServer } from '../../../local/apiserver/index.js'
import { localJobCommand } from '../../../local/jobs/job-command.js'
import { executorCommand } from '../../../local/jobs/step-process.js'
import { startJobRunner, type JobRunner } from '../../../local/jobs/runner.js'
import { KubeHttp, type KubeObject } from '../../../local/knative/kube-http.js'
import { silentLogger } from '../../../shared/log.js'

const NS = 'sandbox-recipes'
let api: ApiServer
let kube: KubeHttp
let runner: JobRunner

beforeEach(async () => {
  api = await startApiServer()
  kube = new KubeHttp(api.kubeConfigObject())
  runner = startJobRunner({ kubeConfig: api.kubeConfigObject(), appendPodLog: (ns, pod, text) => api.store.appendPodLog(ns, pod, text), log: silentLogger })
  await runner.ready
})
afterEach(async () => {
  await runner.stop()
  await api.close()
})

const recipeJob = (name: string, container: Record<string, unknown>) => ({
  apiVersion: 'batch/v1', kind: 'Job',
  metadata: { name, namespace: NS, labels: { 'purko.io/recipe': 'shop', 'purko.io/recipe-namespace': 'ai-agents' } },
  spec: { backoffLimit: 0, template: { spec: { restartPolicy: 'Never', containers: [{ name: 'smoke', ...container }] } } },
})

async function settled(name: string): Promise<{ job: KubeObject; pod: KubeObject; log: string }> {
  const deadline = Date.now() + 30_000
  for (;;) {
    const job = await kube.get(`/apis/batch/v1/namespaces/${NS}/jobs/${name}`)
    const conditions = ((job?.status ?? {}) as { conditions?: Array<{ type: string; status: string }> }).conditions ?? []
    if (job && conditions.some((c) => (c.type === 'Complete' || c.type === 'Failed') && c.status === 'True')) {
      const pods = await kube.request<{ items: KubeObject[] }>('GET', `/api/v1/namespaces/${NS}/pods?labelSelector=${encodeURIComponent(`job-name=${name}`)}`)
      const pod = pods.items[0] as KubeObject
      return { job, pod, log: await kube.text(`/api/v1/namespaces/${NS}/pods/${pod.metadata?.name}/log`) }
    }
    if (Date.now() > deadline) throw new Error(`Job ${name} did not finish: ${JSON.stringify(job?.status)}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

describe('recipe Jobs on the local Job runner', () => {
  it('runs a node command as host Node.js with the container env and args, and completes the Job', async () => {
    await kube.request('POST', `/api/v1/namespaces`, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } })
    await kube.request('POST', `/apis/batch/v1/namespaces/${NS}/jobs`, recipeJob('ok', {
      image: 'node:22-alpine', command: ['node', '-e'], args: ['console.log(`reached ${process.env.WEB_URL}`)'], env: [{ name: 'WEB_URL', value: 'http://web.sandbox-recipes.svc:80' }],
    }))
    const { job, log } = await settled('ok')
    expect((job.status as { succeeded?: number }).succeeded).toBe(1)
    expect(log).toContain('reached http://web.sandbox-recipes.svc:80')
  })

  it('fails a Job whose image it cannot run, saying so in the pod status and log', async () => {
    await kube.request('POST', `/api/v1/namespaces`, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } })
    await kube.request('POST', `/apis/batch/v1/namespaces/${NS}/jobs`, recipeJob('curl', { image: 'curlimages/curl:8.10.1', command: ['curl'], args: ['-f', 'http://web'] }))
    const { job, pod, log } = await settled('curl')
    expect((job.status as { conditions: Array<{ type: string; status: string }> }).conditions).toContainEqual(expect.objectContaining({ type: 'Failed', status: 'True' }))
    expect(pod.status).toMatchObject({ phase: 'Failed', reason: 'ImageNotRunnableLocally' })
    expect(log).toContain('The local plane runs no container images')
    expect(log).toContain('curlimages/curl:8.10.1')
  })
})

describe('localJobCommand', () => {
  it('runs the executor for a step Job whatever its image', () => {
    const step = { apiVersion: 'batch/v1', kind: 'Job', metadata: { name: 's', labels: { 'purko.io/workflow': 'wf' } }, spec: { template: { spec: { containers: [{ name: 'step-executor', image: 'any:1', command: ['curl'] }] } } } }
    expect(localJobCommand(step)).toEqual(executorCommand())
  })
})
