import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { KubeObject } from '../../local/knative/kube-http.js'
import type { DeliveryFault } from '../../local/knative/broker.js'
import { syncCredentialCopies } from '../../shared/llm/sync-credential-copies.js'
import { KubeClient } from '../../shared/kube/client.js'
import { stepJobManifest, stepTimeoutSeconds } from '../../shared/workflow/plan/job-builder.js'
import { kubernetesEventFor } from '../../shared/core/kube-events.js'
import { buildStepInput } from '../../shared/workflow/plan/step-input.js'
import { AgentSchema } from '../../shared/schemas/agent.js'
import { LLMProviderSchema } from '../../shared/schemas/llmprovider.js'
import { WorkflowSchema } from '../../shared/schemas/workflow.js'
import { rbacUsage, type RbacUsage } from './rbac-usage.js'
import { eventually } from '../support/eventually.js'
import { describeCluster, useControlPlane } from './tier.js'
import { startClusterWorkflowPlane, testAgents, type ClusterWorkflowPlane } from './workflow-plane.js'

/**
 * The workflow functions end to end on the real kube-apiserver and kube-controller-manager:
 * each function runs as its own ServiceAccount (dev mode's code path: `npm start --
 * --kubeconfig`), fed by the Knative emulation; the real Job controller makes the pods and
 * sets Job status; the test node agent runs the pods and serves their logs to `pods/log`.
 * Every test namespace enforces the restricted Pod Security Standard.
 */

type Condition = { type: string; status: string; reason?: string; lastTransitionTime?: string }
type Step = { name: string; phase?: string; error?: string; jobName?: string; retryCount?: number; compensationJobName?: string; completionTime?: string }
type Wf = KubeObject & { status?: { phase?: string; message?: string; runId?: string; completedSteps?: number; failedSteps?: number; stepStatuses?: Step[]; stepPhases?: string; conditions?: Condition[] } }
type Job = KubeObject & {
  spec: { template: { spec: { containers: Array<{ env?: Array<{ name: string; value?: string }> }> } } }
  status?: { conditions?: Condition[]; succeeded?: number; failed?: number }
}
type Pod = KubeObject & { spec: { nodeName?: string }; status: { phase: string } }

const TERMINAL = ['Succeeded', 'Failed', 'Cancelled', 'CompletedWithErrors']
const FAULTY = 'e2e-faults'
// Each scenario waits for its own run; the first absorbs the start of all of them on a loaded machine.
const SCENARIO_TIMEOUT = 150_000

const agentStep = (name: string, agent: string, extra: Record<string, unknown> = {}) => ({ name, agentRef: { name: agent }, input: { task: `do ${name}` }, ...extra })
const workflow = (namespace: string, name: string, spec: Record<string, unknown>) => ({ apiVersion: 'purko.io/v1alpha1', kind: 'Workflow', metadata: { name, namespace }, spec })

// Started together in beforeAll, so they run side by side on the cluster.
const SCENARIOS = [
  workflow('e2e-linear', 'linear', {
    parameters: { topic: 'tides' },
    steps: [
      agentStep('draft', 'writer', { input: { task: 'Write about ${parameters.topic}' } }),
      agentStep('review', 'writer', { dependsOn: ['draft'], input: { task: 'Review: ${steps.draft.output.response}' } }),
      agentStep('publish', 'writer', { dependsOn: ['review'], inputFrom: [{ step: 'review', outputKey: 'response' }] }),
    ],
  }),
  workflow('e2e-conditions', 'routed', {
    parallelism: 2,
    steps: [
      agentStep('route', 'writer', { input: { task: 'route', offline: { route: 'docs' } } }),
      agentStep('docs', 'writer', { dependsOn: ['route'], condition: 'steps.route.output.route == "docs"' }),
      agentStep('code', 'writer', { dependsOn: ['route'], condition: 'steps.route.output.route == "code"' }),
      agentStep('summary', 'writer', { dependsOn: ['docs', 'code'] }),
    ],
  }),
  workflow('e2e-failures', 'fail-fast', {
    failureStrategy: 'failFast', parallelism: 2,
    steps: [agentStep('bad', 'failer'), agentStep('slow', 'sleeper'), agentStep('later', 'writer', { dependsOn: ['slow'] })],
  }),
  workflow('e2e-failures', 'continue', {
    failureStrategy: 'continueOnError', parallelism: 2,
    steps: [agentStep('bad', 'failer'), agentStep('other', 'writer'), agentStep('after-bad', 'writer', { dependsOn: ['bad'] })],
  }),
  workflow('e2e-failures', 'stop', {
    failureStrategy: 'stop', parallelism: 2,
    steps: [agentStep('bad', 'failer'), agentStep('slow', 'slow'), agentStep('later', 'writer', { dependsOn: ['slow'] })],
  }),
  workflow('e2e-failures', 'rollback', {
    failureStrategy: 'rollback',
    steps: [agentStep('one', 'writer'), agentStep('two', 'writer', { dependsOn: ['one'] }), agentStep('bad', 'failer', { dependsOn: ['two'] })],
  }),
  workflow('e2e-retry', 'flaky', {
    steps: [agentStep('flaky', 'failer', { retryPolicy: { maxRetries: 2, backoffSeconds: 3 } })],
  }),
  workflow('e2e-approval', 'approved', { steps: [agentStep('prep', 'writer'), agentStep('ship', 'approver', { dependsOn: ['prep'] })] }),
  workflow('e2e-approval', 'denied', { steps: [agentStep('prep', 'writer'), agentStep('ship', 'approver', { dependsOn: ['prep'] })] }),
  workflow('e2e-cancel', 'long', { steps: [agentStep('long', 'sleeper'), agentStep('never', 'writer', { dependsOn: ['long'] })] }),
  workflow('e2e-rerun', 'twice', { steps: [agentStep('once', 'writer')] }),
  workflow('e2e-credentials', 'priced', { steps: [agentStep('ask', 'remote', { input: { task: 'Say hello' } })] }),
  workflow('e2e-timeouts', 'step-timeout', { steps: [agentStep('stuck', 'sleeper', { timeout: { timeoutSeconds: 3 } })] }),
  workflow('e2e-timeouts', 'run-timeout', { timeout: '6s', steps: [agentStep('stuck', 'sleeper')] }),
  workflow(FAULTY, 'lossy', {
    parallelism: 3,
    steps: [
      agentStep('a', 'writer'), agentStep('b', 'writer', { dependsOn: ['a'] }), agentStep('c', 'writer', { dependsOn: ['a'] }),
      agentStep('d', 'writer', { dependsOn: ['a'] }), agentStep('e', 'writer', { dependsOn: ['b', 'c', 'd'] }), agentStep('f', 'writer', { dependsOn: ['e'] }),
    ],
  }),
]

describeCluster('Kinetic end to end on a real kube-apiserver and kube-controller-manager', () => {
  // With the admission plugin OpenShift and hardened clusters run: ownerReferences that set
  // blockOwnerDeletion need update on the owner's finalizers.
  const cp = useControlPlane({ controllerManager: true, auditLog: true, apiServerArgs: ['--enable-admission-plugins=OwnerReferencesPermissionEnforcement'] })
  let w: ClusterWorkflowPlane
  const faults = { lost: 0, duplicated: 0, seen: 0 }
  // An OpenAI-compatible model on 127.0.0.1 (the node agent's pods run on this machine).
  const model = { authorizations: [] as string[], server: undefined as http.Server | undefined }

  beforeAll(async () => {
    w = await startClusterWorkflowPlane(cp.current)
    // Lose one in three and duplicate one in three of the events the workflow functions get
    // about the faulty namespace; only the resync can make up for what is lost.
    w.plane.knative.setFault(({ trigger, event }): DeliveryFault => {
      // Only the Workflow and Job events: a lost Agent event has no resync to make up for it.
      if (event.extensions.namespace !== FAULTY || (trigger !== 'workflow-changed' && trigger !== 'step-job-finished')) return 'deliver'
      faults.seen += 1
      if (faults.seen % 3 === 1) { faults.lost += 1; return 'lose' }
      if (faults.seen % 3 === 2) { faults.duplicated += 1; return 'duplicate' }
      return 'deliver'
    })
    // purko-system comes with knative/ (llmprovider-changed's Role there).
    const namespaces = [...new Set(SCENARIOS.map((s) => s.metadata.namespace)), 'e2e-fanout']
    await Promise.all(namespaces.map((ns) => w.namespace(ns)))
    model.server = http.createServer((req, res) => {
      model.authorizations.push(String(req.headers.authorization))
      req.resume()
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'application/json' })
        res.end(JSON.stringify({ choices: [{ message: { role: 'assistant', content: '{"response":"hello from the model"}' } }], usage: { prompt_tokens: 5, completion_tokens: 5 } }))
      })
    })
    await new Promise<void>((r) => model.server?.listen(0, '127.0.0.1', r))
    // The provider and its key live in the platform namespace, as purko keeps them. The
    // namespace opts in (label + RoleBinding, the documented one-liners); the copy
    // llmprovider-changed keeps there holds the key, and the pod reads it by secretKeyRef.
    await w.admin.apply({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'model-key', namespace: 'purko-system' }, stringData: { 'api-key': 'sk-e2e-secret' } })
    const llm = await w.admin.apply({
      apiVersion: 'purko.io/v1alpha1', kind: 'LLMProvider', metadata: { name: 'local-model', namespace: 'purko-system' },
      spec: { type: 'openai', endpoint: `http://127.0.0.1:${(model.server.address() as AddressInfo).port}/v1`, model: 'tiny', credentials: { secretRef: 'model-key' } },
    })
    await w.admin.mergePatch('/api/v1/namespaces/e2e-credentials', { metadata: { labels: { 'kinetic.dev/llm-credentials': 'enabled' } } })
    await w.admin.apply({
      apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: 'kinetic-llm-credentials-writer', namespace: 'e2e-credentials' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'kinetic-llm-credentials-writer' },
      subjects: [{ kind: 'ServiceAccount', name: 'llmprovider-changed', namespace: 'kinetic-system' }],
    })
    // What llmprovider-changed does on every provider change (the copy, whoever runs it first).
    const copied = await syncCredentialCopies(new KubeClient(cp.current.adminKubeConfig()), 'purko-system', [LLMProviderSchema.parse(llm)])
    expect(copied.failed).toEqual([])
    await w.admin.apply({ apiVersion: 'purko.io/v1alpha1', kind: 'Agent', metadata: { name: 'remote', namespace: 'e2e-credentials' }, spec: { model: { provider: 'local-model', name: 'tiny' } } })
    for (const s of SCENARIOS) await w.admin.apply(s)
  }, 120_000)

  afterAll(async () => {
    const warnings = w?.functionWarnings() ?? []
    const races = warnings.filter((l) => l.includes('"error":"ConflictError"')).length
    const others = warnings.filter((l) => !l.includes('"error":"ConflictError"'))
    console.log(`Functions: ${races} lost races (409, redelivered)${others.length > 0 ? `; other warnings:\n${others.join('\n')}` : ''}`)
    await w?.stop()
    model.server?.close()
  }, 60_000)

  const admin = () => w.admin
  const wfPath = (ns: string, name: string) => `/apis/purko.io/v1alpha1/namespaces/${ns}/workflows/${name}`
  const get = async (ns: string, name: string) => (await admin().get(wfPath(ns, name))) as Wf
  const until = <T>(what: string, fn: () => Promise<T | undefined | false>, ms = 90_000) => eventually(what, fn, ms, 250)
  const finished = (ns: string, name: string, ms?: number) =>
    until(`${ns}/${name} to finish`, async () => { const wf = await get(ns, name); return TERMINAL.includes(wf.status?.phase ?? '') ? wf : undefined }, ms)
  const step = (wf: Wf, name: string) => wf.status?.stepStatuses?.find((s) => s.name === name)
  const jobsOf = async (ns: string, name: string) =>
    (await admin().request<{ items: Job[] }>('GET', `/apis/batch/v1/namespaces/${ns}/jobs?labelSelector=${encodeURIComponent(`purko.io/workflow=${name}`)}`)).items
  const podsOf = async (ns: string, job: string) =>
    (await admin().request<{ items: Pod[] }>('GET', `/api/v1/namespaces/${ns}/pods?labelSelector=${encodeURIComponent(`job-name=${job}`)}`)).items
  const label = (o: KubeObject, key: string) => o.metadata?.labels?.[key]
  const cond = (job: Job, type: string) => job.status?.conditions?.find((c) => c.type === type && c.status === 'True')
  const outputs = async (ns: string, name: string) =>
    ((await admin().get(`/api/v1/namespaces/${ns}/configmaps/${name}-outputs`))?.data ?? {}) as Record<string, string>

  describe('scenarios (started together)', () => {
    it('waits for human approval without a Job, then runs the step once approved', async () => {
      const waiting = await until('ship to wait for approval', async () => {
        const wf = await get('e2e-approval', 'approved')
        return step(wf, 'ship')?.error?.startsWith('Waiting for human approval') ? wf : undefined
      })
      expect(step(waiting, 'prep')?.phase).toBe('Succeeded')
      expect((await jobsOf('e2e-approval', 'approved')).filter((j) => label(j, 'purko.io/step') === 'ship')).toEqual([])

      await admin().mergePatch(wfPath('e2e-approval', 'approved'), { metadata: { annotations: { 'purko.io/approve-ship': 'true' } } })

      const wf = await finished('e2e-approval', 'approved')
      expect(wf.status?.phase).toBe('Succeeded')
      const ship = (await jobsOf('e2e-approval', 'approved')).filter((j) => label(j, 'purko.io/step') === 'ship')
      expect(ship).toHaveLength(1)
      expect(cond(ship[0] as Job, 'Complete')).toBeTruthy()
    }, SCENARIO_TIMEOUT)

    it('ends a denied step without a Job and fails the run (failFast)', async () => {
      await until('ship to wait for approval', async () => step(await get('e2e-approval', 'denied'), 'ship')?.error?.startsWith('Waiting for human approval'))

      await admin().mergePatch(wfPath('e2e-approval', 'denied'), { metadata: { annotations: { 'purko.io/deny-ship': 'true' } } })

      const wf = await finished('e2e-approval', 'denied')
      expect(wf.status?.phase).toBe('Failed')
      expect(step(wf, 'ship')).toMatchObject({ phase: 'Failed', error: 'Denied by user' })
      expect((await jobsOf('e2e-approval', 'denied')).map((j) => label(j, 'purko.io/step'))).toEqual(['prep'])
    }, SCENARIO_TIMEOUT)

    it('cancels a running step: its Job is deleted and the pod stops on the node', async () => {
      const running = await until('the long step\'s pod to run', async () => {
        const wf = await get('e2e-cancel', 'long')
        const job = step(wf, 'long')?.jobName
        const pods = job ? await podsOf('e2e-cancel', job) : []
        return pods[0]?.status.phase === 'Running' ? { job: job as string, pod: pods[0] } : undefined
      })

      await admin().mergePatch(wfPath('e2e-cancel', 'long'), { metadata: { annotations: { 'purko.io/cancel': 'true' } } })

      const wf = await finished('e2e-cancel', 'long')
      expect(wf.status?.phase).toBe('Cancelled')
      expect(step(wf, 'long')).toMatchObject({ phase: 'Skipped', error: 'Cancelled' })
      // Never-started steps stay unstarted (as in purko).
      expect(step(wf, 'never')?.phase).toBeUndefined()
      await until('the cancelled Job to be deleted', async () => (await admin().get(`/apis/batch/v1/namespaces/e2e-cancel/jobs/${running.job}`)) === null, 30_000)
      await until('its pod to be gone', async () => (await podsOf('e2e-cancel', running.job)).length === 0, 30_000)
      expect((await jobsOf('e2e-cancel', 'long')).map((j) => label(j, 'purko.io/step'))).toEqual([])
    }, SCENARIO_TIMEOUT)

    it('runs a linear Workflow whose outputs flow through pods/log into the next steps', async () => {
      const wf = await finished('e2e-linear', 'linear')
      expect(wf.status?.phase).toBe('Succeeded')
      const out = await outputs('e2e-linear', 'linear')
      const draft = JSON.parse(out.draft ?? '{}') as { response?: string }
      const review = JSON.parse(out.review ?? '{}') as { response?: string }
      expect(draft.response).toBe('draft done: Write about tides')
      expect(review.response).toBe(`review done: Review: ${draft.response}`)
      expect(JSON.parse(out.publish ?? '{}')).toMatchObject({ step: 'publish' })

      const jobs = await jobsOf('e2e-linear', 'linear')
      expect(jobs.map((j) => label(j, 'purko.io/step')).sort()).toEqual(['draft', 'publish', 'review'])
      const publish = jobs.find((j) => label(j, 'purko.io/step') === 'publish') as Job
      expect(publish.spec.template.spec.containers[0]?.env?.find((e) => e.name === 'STEP_INPUT_REVIEW_RESPONSE')?.value).toBe(JSON.stringify(review.response))
      for (const job of jobs) {
        // Status from the real Job controller: the node agent writes only pod status.
        expect(cond(job, 'Complete')).toBeTruthy()
        expect(job.status?.succeeded).toBe(1)
        const [pod, ...more] = await podsOf('e2e-linear', String(job.metadata?.name))
        expect(more).toEqual([])
        expect(pod?.spec.nodeName).toBe(w.agent.name)
        const log = await admin().text(`/api/v1/namespaces/e2e-linear/pods/${pod?.metadata?.name}/log`)
        const line = log.split('\n').filter((l) => l.startsWith('OUTPUT:')).at(-1) as string
        expect(JSON.parse(line.slice('OUTPUT:'.length))).toEqual(JSON.parse(out[String(label(job, 'purko.io/step'))] as string))
      }
    }, SCENARIO_TIMEOUT)

    it('skips a step whose condition is false and still runs its dependents', async () => {
      const wf = await finished('e2e-conditions', 'routed')
      expect(wf.status?.phase).toBe('Succeeded')
      expect(step(wf, 'docs')?.phase).toBe('Succeeded')
      expect(step(wf, 'code')?.phase).toBe('Skipped')
      expect(step(wf, 'summary')?.phase).toBe('Succeeded')
      expect((await jobsOf('e2e-conditions', 'routed')).map((j) => label(j, 'purko.io/step')).sort()).toEqual(['docs', 'route', 'summary'])
    }, SCENARIO_TIMEOUT)

    it('failFast: fails the run at the first failure, stops the running step and skips the rest', async () => {
      const wf = await finished('e2e-failures', 'fail-fast')
      expect(wf.status?.phase).toBe('Failed')
      expect(step(wf, 'bad')?.phase).toBe('Failed')
      expect(step(wf, 'bad')?.error).toContain('the model is unavailable')
      expect(step(wf, 'slow')?.phase).toBe('Skipped')
      expect(step(wf, 'later')?.phase).toBe('Skipped')
      const slowJob = step(wf, 'slow')?.jobName as string
      await until('the stopped step\'s Job to be deleted', async () => (await admin().get(`/apis/batch/v1/namespaces/e2e-failures/jobs/${slowJob}`)) === null, 30_000)
    }, SCENARIO_TIMEOUT)

    it('continueOnError: runs everything else, dependents of the failed step included', async () => {
      const wf = await finished('e2e-failures', 'continue')
      expect(wf.status?.phase).toBe('CompletedWithErrors')
      expect(step(wf, 'bad')?.phase).toBe('Failed')
      expect(step(wf, 'other')?.phase).toBe('Succeeded')
      expect(step(wf, 'after-bad')?.phase).toBe('Succeeded')
    }, SCENARIO_TIMEOUT)

    it('stop: lets the running step finish, starts nothing new, then fails the run', async () => {
      const wf = await finished('e2e-failures', 'stop')
      expect(wf.status?.phase).toBe('Failed')
      expect(step(wf, 'bad')?.phase).toBe('Failed')
      expect(step(wf, 'slow')?.phase).toBe('Succeeded')
      // What the scenario is about: the failure came while `slow` was still running.
      expect(Date.parse(String(step(wf, 'bad')?.completionTime)), 'bad failed before slow finished').toBeLessThan(Date.parse(String(step(wf, 'slow')?.completionTime)))
      expect(step(wf, 'later')?.phase).toBe('Skipped')
      const jobs = await jobsOf('e2e-failures', 'stop')
      expect(jobs.map((j) => label(j, 'purko.io/step')).sort()).toEqual(['bad', 'slow'])
      // The run may end on the slow Job's SuccessCriteriaMet; the Job controller adds Complete a
      // moment later (seen on v1.34 under load), so wait for it rather than read it at once.
      await until('the slow Job to be Complete', async () =>
        cond((await jobsOf('e2e-failures', 'stop')).find((j) => label(j, 'purko.io/step') === 'slow') as Job, 'Complete'), 60_000)
    }, SCENARIO_TIMEOUT)

    it('rollback: compensates the succeeded steps one at a time, in reverse order', async () => {
      const wf = await finished('e2e-failures', 'rollback')
      expect(wf.status?.phase).toBe('Failed')
      expect(wf.status?.message).toBe('Rolled back 2 steps: one, two')
      expect(step(wf, 'one')?.phase).toBe('RolledBack')
      expect(step(wf, 'two')?.phase).toBe('RolledBack')
      const jobs = await jobsOf('e2e-failures', 'rollback')
      const rb = (s: string) => jobs.find((j) => label(j, 'kinetic.dev/attempt') === 'rollback' && label(j, 'purko.io/step') === s) as Job
      expect(rb('one')).toBeTruthy()
      expect(rb('two')).toBeTruthy()
      const input = rb('two').spec.template.spec.containers[0]?.env?.find((e) => e.name === 'STEP_INPUT')?.value ?? '{}'
      expect(JSON.parse(input)).toMatchObject({ action: 'rollback' })
      // One at a time, dependents first: `one` is compensated only once `two`'s compensation
      // finished (the Job controller's SuccessCriteriaMet, or Complete, whichever came first).
      const twoDone = Math.min(...['SuccessCriteriaMet', 'Complete'].map((t) => Date.parse(cond(rb('two'), t)?.lastTransitionTime ?? '') || Infinity))
      expect(Number.isFinite(twoDone)).toBe(true)
      expect(Date.parse(String(rb('one').metadata?.creationTimestamp))).toBeGreaterThanOrEqual(twoDone)
    }, SCENARIO_TIMEOUT)

    it('retries a failing step with exponential backoff, each attempt a new Job, then fails it', async () => {
      const wf = await finished('e2e-retry', 'flaky')
      expect(wf.status?.phase).toBe('Failed')
      expect(step(wf, 'flaky')).toMatchObject({ phase: 'Failed', retryCount: 2 })
      const jobs = (await jobsOf('e2e-retry', 'flaky')).sort((a, b) => Number(label(a, 'kinetic.dev/attempt')) - Number(label(b, 'kinetic.dev/attempt')))
      const runId = wf.status?.runId
      expect(jobs.map((j) => j.metadata?.name)).toEqual([`flaky-flaky-${runId}`, `flaky-flaky-${runId}-r1`, `flaky-flaky-${runId}-r2`])
      for (const j of jobs) expect(cond(j, 'Failed')?.reason).toBe('BackoffLimitExceeded')
      // Backoff 3 s, then 6 s; Kubernetes timestamps have whole seconds, hence one second of slack.
      const gap = (i: number) => (Date.parse(String(jobs[i + 1]?.metadata?.creationTimestamp)) - Date.parse(cond(jobs[i] as Job, 'Failed')?.lastTransitionTime ?? '')) / 1000
      expect(gap(0)).toBeGreaterThanOrEqual(2)
      expect(gap(1)).toBeGreaterThanOrEqual(5)
    }, SCENARIO_TIMEOUT)

    it('hands a platform LLMProvider\'s key to the pod only by secretKeyRef to the kinetic-llm-credentials copy of an opted-in namespace', async () => {
      const wf = await finished('e2e-credentials', 'priced')
      expect(wf.status?.phase).toBe('Succeeded')
      expect(JSON.parse((await outputs('e2e-credentials', 'priced')).ask ?? '{}')).toMatchObject({ response: 'hello from the model' })
      expect(model.authorizations).toContain('Bearer sk-e2e-secret')
      const copy = await admin().get('/api/v1/namespaces/e2e-credentials/secrets/kinetic-llm-credentials')
      expect(Object.keys((copy as { data?: Record<string, string> })?.data ?? {})).toEqual(['local-model'])
      expect(await admin().get('/api/v1/namespaces/e2e-credentials/secrets/priced-llm-local-model')).toBeNull()
      const [job] = await jobsOf('e2e-credentials', 'priced')
      const env = (job as Job).spec.template.spec.containers[0]?.env as Array<{ name: string; value?: string; valueFrom?: { secretKeyRef?: { name: string; key: string } } }>
      const key = env.find((e) => e.name === 'MODEL_API_KEY')
      expect(key).toEqual({ name: 'MODEL_API_KEY', valueFrom: { secretKeyRef: { name: 'kinetic-llm-credentials', key: 'local-model', optional: false } } })
      expect(JSON.stringify(env)).not.toContain('sk-e2e-secret')
    }, SCENARIO_TIMEOUT)

    it('enforces a step timeout through the Job\'s activeDeadlineSeconds: the real Job controller fails the Job (DeadlineExceeded)', async () => {
      const wf = await finished('e2e-timeouts', 'step-timeout')
      expect(wf.status?.phase).toBe('Failed')
      expect(step(wf, 'stuck')).toMatchObject({ phase: 'Failed', error: 'Step exceeded its timeout of 3s (DeadlineExceeded)' })
      const [job] = await jobsOf('e2e-timeouts', 'step-timeout')
      expect(cond(job as Job, 'Failed')?.reason).toBe('DeadlineExceeded')
      await until('the timed-out pod to be gone', async () => (await podsOf('e2e-timeouts', String(job?.metadata?.name))).length === 0, 30_000)
    }, SCENARIO_TIMEOUT)

    it('enforces the Workflow timeout: the resync fails the run and deletes the running Job', async () => {
      const wf = await finished('e2e-timeouts', 'run-timeout')
      expect(wf.status?.phase).toBe('Failed')
      expect(wf.status?.message).toMatch(/^Workflow exceeded timeout of 6s/)
      const job = step(wf, 'stuck')?.jobName as string
      await until('the running Job to be deleted', async () => (await admin().get(`/apis/batch/v1/namespaces/e2e-timeouts/jobs/${job}`)) === null, 30_000)
    }, SCENARIO_TIMEOUT)

    it('reruns a finished Workflow with a fresh run id and fresh Jobs, leaving the old run\'s Jobs alone', async () => {
      const first = await finished('e2e-rerun', 'twice')
      expect(first.status?.phase).toBe('Succeeded')
      const firstJob = step(first, 'once')?.jobName as string

      await admin().mergePatch(wfPath('e2e-rerun', 'twice'), { metadata: { annotations: { 'purko.io/rerun': 'again' } } })

      const second = await until('the rerun to finish', async () => {
        const wf = await get('e2e-rerun', 'twice')
        return wf.status?.runId !== first.status?.runId && wf.status?.phase === 'Succeeded' ? wf : undefined
      })
      const secondJob = step(second, 'once')?.jobName as string
      expect(secondJob).not.toBe(firstJob)
      const jobs = await jobsOf('e2e-rerun', 'twice')
      expect(jobs.map((j) => [j.metadata?.name, label(j, 'kinetic.dev/run-id')]).sort()).toEqual(
        [[firstJob, first.status?.runId], [secondJob, second.status?.runId]].sort(),
      )
      for (const j of jobs) expect(cond(j, 'Complete')).toBeTruthy()
    }, SCENARIO_TIMEOUT)

    it('converges with exactly one Job per step when events are lost and duplicated (the resync makes up for them)', async () => {
      const wf = await finished(FAULTY, 'lossy', 120_000)
      expect(wf.status?.phase).toBe('Succeeded')
      expect(faults.lost).toBeGreaterThan(0)
      expect(faults.duplicated).toBeGreaterThan(0)
      const jobs = await jobsOf(FAULTY, 'lossy')
      expect(jobs.map((j) => label(j, 'purko.io/step')).sort()).toEqual(['a', 'b', 'c', 'd', 'e', 'f'])
      for (const j of jobs) expect(j.status?.succeeded).toBe(1)
      expect(Object.keys(await outputs(FAULTY, 'lossy')).sort()).toEqual(['a', 'b', 'c', 'd', 'e', 'f'])
    }, SCENARIO_TIMEOUT)
  })

  describe('a 200-step fan-out', () => {
    it('runs 200 parallel steps after a root step: one Job and one output per step', async () => {
      // The resync at a cadence nearer its real minute: a tick every 2 s would re-read the logs of
      // every step whose event is still queued and race the events' status writes.
      w.plane.knative.setPingInterval(30_000)
      const leaves = Array.from({ length: 200 }, (_, i) => agentStep(`leaf-${i}`, 'echo', { dependsOn: ['root'] }))
      await admin().apply(workflow('e2e-fanout', 'wide', { parallelism: 200, steps: [agentStep('root', 'echo'), ...leaves] }))

      const wf = await finished('e2e-fanout', 'wide', 240_000)
      w.plane.knative.setPingInterval(2000)
      expect(wf.status?.phase).toBe('Succeeded')
      expect(wf.status?.completedSteps).toBe(201)
      // A step counts once the Job controller has said its success criteria are met; with
      // 200 Jobs it may still be moving a pod from uncountedTerminatedPods into `succeeded`
      // (and adding Complete) when the run ends, so its final counters are awaited, not assumed.
      const jobs = await until('the Job controller to count every fan-out pod', async () => {
        const all = await jobsOf('e2e-fanout', 'wide')
        return all.every((j) => j.status?.succeeded === 1 && cond(j, 'Complete')) ? all : undefined
      }, 60_000)
      const steps = jobs.map((j) => label(j, 'purko.io/step'))
      expect(new Set(steps).size).toBe(201)
      expect(steps).toHaveLength(201)
      for (const j of jobs) expect(j.status?.succeeded).toBe(1)
      const shards = (await admin().request<{ items: Array<{ data?: Record<string, string> }> }>('GET', `/api/v1/namespaces/e2e-fanout/configmaps?labelSelector=${encodeURIComponent('purko.io/workflow=wide')}`)).items
      expect(shards.reduce((n, cm) => n + Object.keys(cm.data ?? {}).length, 0)).toBe(201)
    }, 300_000)
  })

  describe('what the functions write, under strict field validation', () => {
    it('the step Job of every test Agent and the Kubernetes Events are accepted with fieldValidation=Strict and draw no warning (no field the server would drop, nothing against the restricted Pod Security Standard)', async () => {
      const wf = WorkflowSchema.parse(await get('e2e-linear', 'linear'))
      const runId = wf.status?.runId ?? 'run'
      const refused: string[] = []
      const dryRun = async (path: string, body: unknown, what: string) => {
        const res = await admin().send('POST', `${path}?dryRun=All&fieldValidation=Strict`, body)
        if (res.status >= 300) refused.push(`${what}: ${res.status} ${JSON.stringify(res.body).slice(0, 400)}`)
        // The namespace warns on the restricted Pod Security Standard too; a Job must not draw a warning.
        const warning = res.headers.warning
        if (warning) refused.push(`${what}: warning ${String(warning)}`)
      }
      for (const raw of testAgents('e2e-linear')) {
        const agent = AgentSchema.parse(raw)
        const step = { ...(wf.spec.steps[1] as (typeof wf.spec.steps)[number]), agentRef: { name: String(raw.metadata?.name) } }
        const input = buildStepInput(step, { outputs: { draft: { response: 'x' } }, parameters: wf.spec.parameters ?? {} })
        const job = stepJobManifest({
          workflow: wf, runId, step, attempt: 1, agent, provider: undefined, mcpServers: [], mcpVisibility: { agentNamespace: 'ai-agents', shared: [] },
          stepInput: input.stepInput, inputFromEnv: input.env, executorImage: 'kinetic', hostNetwork: false,
          traceparent: '00-0123456789abcdef0123456789abcdef-0123456789abcdef-01', activeDeadlineSeconds: stepTimeoutSeconds(step, agent),
        })
        job.metadata = { ...job.metadata, name: `strict-${raw.metadata?.name}` }
        await dryRun('/apis/batch/v1/namespaces/e2e-linear/jobs', job, `Job for Agent ${raw.metadata?.name}`)
      }
      const event = kubernetesEventFor({ kind: 'Workflow', metadata: wf.metadata }, runId, { type: 'Warning', reason: 'StepFailed', message: 'Step review failed: x', fieldPath: 'spec.steps{review}' }, new Date().toISOString())
      await dryRun('/api/v1/namespaces/e2e-linear/events', JSON.parse(JSON.stringify(event)), 'Event')
      expect(refused).toEqual([])
    })
  })

  describe('RBAC the functions used, recorded by the API server\'s audit log', () => {
    let usage: RbacUsage
    beforeAll(async () => {
      usage = await rbacUsage(cp.current, w.plane)
    }, 60_000)

    it('records requests of every workflow function\'s ServiceAccount, none of them refused', () => {
      for (const fn of ['workflow-changed', 'step-job-finished', 'resync-tick']) {
        expect(usage.used.get(`system:serviceaccount:kinetic-system:${fn}`)?.length ?? 0).toBeGreaterThan(0)
      }
      expect(usage.forbidden).toEqual([])
    })

    it('records no request the server refused as invalid or otherwise failed (only lost races and absent objects)', () => {
      expect(usage.failed).toEqual([])
    })

    it('finds each used (verb, group, resource, subresource) allowed by SubjectAccessReview against the installed RBAC', () => {
      expect(usage.notAllowed).toEqual([])
      console.log(usage.report)
    })

    it('leaves nothing at warn or above in the functions\' logs but lost races (409), which the Broker redelivers', () => {
      expect(w.functionWarnings().filter((line) => !line.includes('"error":"ConflictError"'))).toEqual([])
    })
  })
})
