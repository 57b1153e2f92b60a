import { afterAll, beforeAll, expect, it } from 'vitest'
import type { StepCommand } from '../../local/jobs/step-process.js'
import type { KubeObject } from '../../local/knative/kube-http.js'
import { startNodeAgent, type NodeAgent } from './node-agent.js'
import { eventually } from '../support/eventually.js'
import { describeCluster, useControlPlane } from './tier.js'

const NS = 'node-agent'

type Condition = { type: string; status: string; reason?: string }
type JobObject = KubeObject & { status?: { conditions?: Condition[]; succeeded?: number; failed?: number } }
type PodObject = KubeObject & { spec: { nodeName?: string }; status: { phase: string; containerStatuses?: Array<{ state: { terminated?: { exitCode: number } } }> } }

// Each test's Job carries its script in an annotation-free way: the pod's STEP_SCRIPT env.
const fromEnv = (pod: KubeObject): StepCommand => {
  const env = ((pod.spec as { containers: Array<{ env?: Array<{ name: string; value?: string }> }> }).containers[0]?.env ?? [])
  const script = env.find((e) => e.name === 'STEP_SCRIPT')?.value ?? 'process.exit(0)'
  return { command: process.execPath, args: ['-e', script], cwd: process.cwd() }
}

function aJob(name: string, script: string, extraEnv: unknown[] = [], spec: Record<string, unknown> = {}) {
  return {
    apiVersion: 'batch/v1', kind: 'Job', metadata: { name },
    spec: {
      backoffLimit: 0, ...spec,
      template: {
        spec: {
          restartPolicy: 'Never', automountServiceAccountToken: false,
          containers: [{ name: 'step-executor', image: 'not-pulled', env: [{ name: 'STEP_SCRIPT', value: script }, ...extraEnv] }],
        },
      },
    },
  }
}

describeCluster('the test node agent on a real control plane', () => {
  const cp = useControlPlane({ controllerManager: true })
  let agent: NodeAgent

  beforeAll(async () => {
    agent = await startNodeAgent({ kubeConfig: cp.current.adminKubeConfig(), command: fromEnv })
    await cp.current.admin.request('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } })
  }, 60_000)
  afterAll(async () => {
    await agent?.stop()
  }, 30_000)

  const admin = () => cp.current.admin
  const until = <T>(what: string, fn: () => Promise<T | undefined>, ms = 40_000) => eventually(what, fn, ms)
  const finished = (name: string) => until(`Job ${name} to finish`, async () => {
    const job = (await admin().get(`/apis/batch/v1/namespaces/${NS}/jobs/${name}`)) as JobObject
    return job.status?.conditions?.some((c) => (c.type === 'Complete' || c.type === 'Failed') && c.status === 'True') ? job : undefined
  })
  const podOf = async (job: string) =>
    (await admin().request<{ items: PodObject[] }>('GET', `/api/v1/namespaces/${NS}/pods?labelSelector=${encodeURIComponent(`job-name=${job}`)}`)).items

  it('registers a Ready Node whose kubelet port is the agent', async () => {
    const node = await admin().request<{ status: { conditions: Condition[]; daemonEndpoints: { kubeletEndpoint: { Port: number } }; addresses: Array<{ type: string; address: string }> } }>('GET', `/api/v1/nodes/${agent.name}`)
    expect(node.status.conditions.find((c) => c.type === 'Ready')?.status).toBe('True')
    expect(node.status.daemonEndpoints.kubeletEndpoint.Port).toBe(agent.port)
    expect(node.status.addresses).toContainEqual({ type: 'InternalIP', address: '127.0.0.1' })
  })

  it('binds and runs the real Job controller\'s pod; the controller completes the Job; pods/log goes through the API server', async () => {
    await admin().request('POST', `/apis/batch/v1/namespaces/${NS}/jobs`, aJob('hello', 'console.log("working"); console.log("OUTPUT:" + JSON.stringify({ from: process.env.HOSTNAME }))'))
    const job = await finished('hello')
    expect(job.status?.conditions?.find((c) => c.type === 'Complete')).toMatchObject({ status: 'True' })
    expect(job.status?.succeeded).toBe(1)
    const [pod] = await podOf('hello')
    expect(pod?.spec.nodeName).toBe(agent.name)
    expect(pod?.status.phase).toBe('Succeeded')
    expect(pod?.status.containerStatuses?.[0]?.state.terminated?.exitCode).toBe(0)
    const log = await admin().text(`/api/v1/namespaces/${NS}/pods/${pod?.metadata?.name}/log`)
    expect(log).toBe(`working\nOUTPUT:{"from":"${pod?.metadata?.name}"}\n`)
    expect(await admin().text(`/api/v1/namespaces/${NS}/pods/${pod?.metadata?.name}/log?tailLines=1`)).toBe(`OUTPUT:{"from":"${pod?.metadata?.name}"}\n`)
  })

  it('reports a failing container\'s exit code, and the Job controller fails the Job', async () => {
    await admin().request('POST', `/apis/batch/v1/namespaces/${NS}/jobs`, aJob('broken', 'console.error("no luck"); process.exit(3)'))
    const job = await finished('broken')
    expect(job.status?.conditions?.find((c) => c.type === 'Failed')).toMatchObject({ status: 'True', reason: 'BackoffLimitExceeded' })
    const [pod] = await podOf('broken')
    expect(pod?.status.phase).toBe('Failed')
    expect(pod?.status.containerStatuses?.[0]?.state.terminated?.exitCode).toBe(3)
  })

  it('resolves secretKeyRef from the API server, and keeps a pod whose Secret is missing Pending until it appears', async () => {
    const env = [{ name: 'API_KEY', valueFrom: { secretKeyRef: { name: 'later', key: 'api-key' } } }]
    await admin().request('POST', `/apis/batch/v1/namespaces/${NS}/jobs`, aJob('needs-secret', 'console.log("key=" + process.env.API_KEY)', env))
    const waiting = await until('the pod to wait for its Secret', async () => {
      const [pod] = await podOf('needs-secret')
      const state = (pod?.status as { containerStatuses?: Array<{ state: { waiting?: { reason: string; message: string } } }> } | undefined)?.containerStatuses?.[0]?.state.waiting
      return state?.reason === 'CreateContainerConfigError' ? { pod, state } : undefined
    })
    expect(waiting.pod?.status.phase).toBe('Pending')
    expect(waiting.state.message).toBe('secret "later" not found')
    await admin().request('POST', `/api/v1/namespaces/${NS}/secrets`, { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'later' }, stringData: { 'api-key': 'sk-test' } })
    expect((await finished('needs-secret')).status?.succeeded).toBe(1)
    expect(await admin().text(`/api/v1/namespaces/${NS}/pods/${waiting.pod?.metadata?.name}/log`)).toBe('key=sk-test\n')
  })

  it('stops the container of a Job that outlives activeDeadlineSeconds; the Job controller fails it with DeadlineExceeded and the pod goes away', async () => {
    await admin().request('POST', `/apis/batch/v1/namespaces/${NS}/jobs`, aJob('slow', 'setTimeout(() => {}, 120000)', [], { activeDeadlineSeconds: 2 }))
    const job = await finished('slow')
    expect(job.status?.conditions?.find((c) => c.type === 'Failed')).toMatchObject({ status: 'True', reason: 'DeadlineExceeded' })
    await until('the deadline pod to be deleted', async () => ((await podOf('slow')).length === 0 ? true : undefined))
  })
})
