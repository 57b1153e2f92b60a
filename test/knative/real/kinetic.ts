// Kinetic on the real Knative of the tier, installed the way README's "Install on a Knative
// cluster" says: npm run image:base and npm run image into the node's registry, npm run release,
// kubectl apply -f install.yaml, the platform step. Then the bundled example runs on real Pods
// with its approval granted through the CLI, the functions scale to zero and come back, and lost,
// duplicated and stale events converge. Registered inside the tier's describe (knative.test.ts),
// after Knative itself is checked, on the same node.
import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { expect, it } from 'vitest'
import { waitFor } from '../../../cluster/knative/install.js'
import type { KubeHttp, KubeObject } from '../../../local/knative/kube-http.js'
import { REPO_ROOT } from '../../../local/jobs/step-process.js'
import { eventually } from '../../support/eventually.js'
import { post } from './cluster-ip.js'

const run = promisify(execFile)
const SYSTEM = 'kinetic-system'
const NS = 'ai-agents'
const PURKO = '/apis/purko.io/v1alpha1'

/** What the tier gives these tests once its node and Knative run. */
export interface KineticTier {
  admin: KubeHttp
  kubeconfig: string
  /** 127.0.0.1:<port>, the node's registry. */
  registry: string
  kubectl: string
  work: string
}

interface Condition { type: string; status: string; reason?: string; message?: string }
interface Listed { metadata: { name: string; namespace?: string; labels?: Record<string, string> }; status?: { conditions?: Condition[] } }
interface StepStatus { name: string; phase: string; error?: string; jobName?: string }
interface Workflow { status?: { phase?: string; runId?: string; stepStatuses?: StepStatus[] } }

/** The Knative kinds install.yaml makes in kinetic-system, as README's check lists them. */
const KNATIVE_KINDS = [
  ['serving.knative.dev/v1', 'services'], ['eventing.knative.dev/v1', 'brokers'], ['eventing.knative.dev/v1', 'triggers'],
  ['sources.knative.dev/v1', 'apiserversources'], ['sources.knative.dev/v1', 'pingsources'],
] as const

/** `<kind>/<name>: <reason>: <message>` of every object of kinetic-system that is not Ready, or [] when all are. */
export async function notReady(admin: KubeHttp): Promise<string[]> {
  const out: string[] = []
  for (const [apiVersion, plural] of KNATIVE_KINDS) {
    const list = await admin.get<{ items: Listed[] }>(`/apis/${apiVersion}/namespaces/${SYSTEM}/${plural}`)
    for (const o of list?.items ?? []) {
      const ready = o.status?.conditions?.find((c) => c.type === 'Ready')
      if (ready?.status !== 'True') out.push(`${plural}/${o.metadata.name}: ${ready ? `${ready.reason ?? ''}: ${ready.message ?? ''}` : 'no Ready condition yet'}`)
    }
  }
  return out
}

/** Registers the Kinetic tests; `tier()` is called once they run (after the tier's beforeAll). */
export function kineticOnKnative(tier: () => KineticTier): void {
  let image = ''
  const kubectlIn = async (cwd: string | undefined, ...args: string[]) => run(tier().kubectl, ['--kubeconfig', tier().kubeconfig, ...args], { cwd, maxBuffer: 16 * 1024 * 1024 })
  const kubectl = (...args: string[]) => kubectlIn(undefined, ...args)
  const cli = async (...args: string[]) => (await run(process.execPath, [join(REPO_ROOT, 'bin', 'kinetic.mjs'), '--kubeconfig', tier().kubeconfig, '-n', NS, ...args], { cwd: REPO_ROOT })).stdout
  const workflow = async (name: string) => (await tier().admin.get<Workflow>(`${PURKO}/namespaces/${NS}/workflows/${name}`))!
  const step = (w: Workflow, name: string) => w.status?.stepStatuses?.find((s) => s.name === name)
  const functionPods = async (service: string) =>
    (await tier().admin.get<{ items: Listed[] }>(`/api/v1/namespaces/${SYSTEM}/pods?labelSelector=serving.knative.dev%2Fservice%3D${service}`))?.items ?? []
  const phaseOf = (name: string, phase: string, ms: number) =>
    eventually(`Workflow ${NS}/${name} ${phase}`, async () => {
      const w = await workflow(name)
      if (['Failed', 'Cancelled'].includes(w.status?.phase ?? '') && w.status?.phase !== phase) throw new Error(`Workflow ${name} ended ${w.status?.phase}: ${JSON.stringify(w.status?.stepStatuses)}`)
      return w.status?.phase === phase ? w : undefined
    }, ms, 2000)

  it('installs the documented way: npm run image into the node registry, npm run release, kubectl apply -f install.yaml and the platform step; every Service, Trigger, Broker and source Ready, with one adapter pod', async () => {
    const { registry, work } = tier()
    const dist = join(work, 'dist')
    await run(process.execPath, [join(REPO_ROOT, 'scripts', 'build.mjs'), '--outdir', dist], { cwd: REPO_ROOT, maxBuffer: 16 * 1024 * 1024 })
    const base = (await run(process.execPath, [join(REPO_ROOT, 'scripts', 'build-base-image.mjs'), '--to', `${registry}/kinetic-base`, '--insecure'], { cwd: REPO_ROOT })).stdout.trim()
    image = (await run(process.execPath, [join(REPO_ROOT, 'scripts', 'build-image.mjs'), '--base', base, '--to', `${registry}/kinetic`, '--dist', dist, '--insecure'], { cwd: REPO_ROOT })).stdout.trim()
    const release = join(work, 'release')
    await run(process.execPath, [join(REPO_ROOT, 'scripts', 'release.mjs'), '--image', image, '--out', release], { cwd: REPO_ROOT, maxBuffer: 16 * 1024 * 1024 })
    // README's commands, run as written in the release folder (kubectl with the tier's kubeconfig).
    const commands = readmeInstallCommands()
    expect(commands).toEqual([
      'kubectl apply --server-side -f install.yaml', 'kubectl apply --server-side -f platform-namespaces.yaml',
      'kubectl wait --for=condition=Established crd/mcpservers.purko.io', 'kubectl apply --server-side -f platform.yaml',
      'kubectl wait --for=condition=Ready --all -n kinetic-system ksvc,broker,trigger,apiserversource,pingsource --timeout=5m',
    ])
    const t0 = Date.now()
    for (const command of commands) {
      const { stderr } = await kubectlIn(release, ...command.split(' ').slice(1))
      // No admission warning from Knative's webhooks or the API server.
      expect(stderr, command).toBe('')
    }
    await waitFor('every Knative object of kinetic-system Ready', 420_000, async () => {
      const gaps = await notReady(tier().admin)
      return gaps.length === 0 ? undefined : gaps.join('; ')
    })
    console.log(`kinetic: install.yaml applied and every Service, Trigger, Broker and source Ready in ${((Date.now() - t0) / 1000).toFixed(1)} s`)
    // Applying the same release again changes nothing: no new revision, no write Knative's defaulting would fight.
    const versions = async () => ((await tier().admin.get<{ items: Array<{ metadata: { name: string; resourceVersion: string; generation: number } }> }>(`/apis/serving.knative.dev/v1/namespaces/${SYSTEM}/services`))?.items ?? [])
      .map((o) => `${o.metadata.name}@${o.metadata.generation}/${o.metadata.resourceVersion}`).sort()
    const before = await versions()
    await kubectlIn(release, 'apply', '--server-side', '-f', 'install.yaml')
    expect(await versions()).toEqual(before)
    // The only pod Kinetic keeps running: the one ApiServerSource's receive adapter.
    const adapters = (await tier().admin.get<{ items: Listed[] }>(`/apis/apps/v1/namespaces/${SYSTEM}/deployments?labelSelector=eventing.knative.dev%2Fsource%3Dapiserver-source-controller`))?.items ?? []
    expect(adapters.map((d) => d.metadata.labels?.['eventing.knative.dev/sourceName'])).toEqual(['resources'])
  }, 900_000)

  it('runs the example Workflow on real Pods: step Jobs run the released image, outputs flow, the approval is granted with the CLI', async () => {
    await kubectl('apply', '-f', join(REPO_ROOT, 'examples', 'local', '10-agents.yaml'), '-f', join(REPO_ROOT, 'examples', 'local', '20-workflow.yaml'))
    const waiting = await eventually('publish waiting for approval', async () => {
      const w = await workflow('release-notes')
      return /approval/i.test(step(w, 'publish')?.error ?? '') ? w : undefined
    }, 300_000, 2000)
    expect(step(waiting, 'plan')?.phase).toBe('Succeeded')
    expect(step(waiting, 'deep-audit')?.phase).toBe('Skipped')
    expect(await cli('approve', 'release-notes', 'publish')).toMatch(/approved/)
    const done = await phaseOf('release-notes', 'Succeeded', 180_000)
    const jobs = (await tier().admin.get<{ items: Array<{ spec: { template: { spec: { containers: Array<{ image: string }> } } } }> }>(`/apis/batch/v1/namespaces/${NS}/jobs?labelSelector=purko.io%2Fworkflow%3Drelease-notes`))?.items ?? []
    expect(jobs.length).toBe(5)
    expect(new Set(jobs.map((j) => j.spec.template.spec.containers[0]?.image))).toEqual(new Set([image]))
    const outputs = await tier().admin.get<{ data: Record<string, string> }>(`/api/v1/namespaces/${NS}/configmaps/release-notes-outputs`)
    expect(Object.keys(outputs?.data ?? {}).sort()).toEqual(['draft-notes', 'plan', 'publish', 'research-changes', 'research-issues'])
    // draft-notes' input names plan's output: it flowed from one Job to the next through the outputs ConfigMap.
    expect(JSON.parse(outputs!.data.plan!)).toMatchObject({ response: expect.stringContaining('plan done') })
    expect(done.status?.stepStatuses?.every((s) => ['Succeeded', 'Skipped'].includes(s.phase))).toBe(true)
    // Printed, not asserted: from a step Job's completion to its dependent's Job being created
    // (the API server's timestamps, whole seconds): Job event -> Broker -> step-job-finished -> next Job.
    const byName = new Map(jobs.map((j) => [(j as unknown as { metadata: { name: string } }).metadata.name, j as unknown as { metadata: { creationTimestamp: string }; status: { completionTime?: string } }]))
    const job = (stepName: string) => byName.get(step(done, stepName)?.jobName ?? '')
    const gaps = [['plan', 'research-changes'], ['plan', 'research-issues'], ['research-changes', 'draft-notes']].map(([from, to]) =>
      (Date.parse(job(to!)!.metadata.creationTimestamp) - Date.parse(job(from!)!.status.completionTime!)) / 1000)
    console.log(`kinetic: step to step on real Knative (Job complete -> next Job created, whole seconds): ${gaps.join(', ')} s`)
  }, 600_000)

  it('scales the functions to zero, the resync alarm goes once no run is unfinished, and the next event brings them back: a rerun through the CLI succeeds', async () => {
    // No run is unfinished: the resync alarm's next tick deletes it, and resync-tick scales to zero like the rest.
    await eventually('workflow-changed, step-job-finished and resync-tick scaled to zero, and no resync alarm', async () =>
      (await functionPods('workflow-changed')).length === 0 && (await functionPods('step-job-finished')).length === 0
      && (await functionPods('resync-tick')).length === 0
      && (await tier().admin.get(`/apis/sources.knative.dev/v1/namespaces/${SYSTEM}/pingsources/resync-alarm`)) === null, 360_000, 5000)
    const before = (await workflow('release-notes')).status?.runId
    await cli('rerun', 'release-notes')
    const rerun = await eventually('the rerun waiting for approval', async () => {
      const w = await workflow('release-notes')
      return w.status?.runId !== before && /approval/i.test(step(w, 'publish')?.error ?? '') ? w : undefined
    }, 300_000, 2000)
    expect(rerun.status?.runId).not.toBe(before)
    await cli('approve', 'release-notes', 'publish')
    await phaseOf('release-notes', 'Succeeded', 180_000)
  }, 900_000)

  it('converges when the adapter restarts as a Workflow is created (a restarted adapter sends nothing for what already exists; the resync heartbeat starts it then)', async () => {
    const pods = (await tier().admin.get<{ items: Listed[] }>(`/api/v1/namespaces/${SYSTEM}/pods?labelSelector=eventing.knative.dev%2FsourceName%3Dresources`))?.items ?? []
    expect(pods).toHaveLength(1)
    await kubectl('delete', 'pod', '-n', SYSTEM, pods[0]!.metadata.name, '--wait=false')
    await tier().admin.apply(oneStep('lost-add'), NS)
    const started = await eventually('lost-add started by its own add event', async () => (await workflow('lost-add')).status?.runId, 90_000, 2000).catch(() => undefined)
    if (!started) {
      // Its add was lost and no run is unfinished, so no alarm ticks: the hourly heartbeat makes up
      // for it. Its ping is sent to the Broker now, as the resync PingSource sends it, instead of waiting.
      const ingress = await tier().admin.get<{ spec: { clusterIP: string } }>('/api/v1/namespaces/knative-eventing/services/broker-ingress')
      expect(await postEvent(ingress!.spec.clusterIP, `/${SYSTEM}/default`, {
        id: 'heartbeat-1', type: 'dev.knative.sources.ping', source: `/apis/v1/namespaces/${SYSTEM}/pingsources/resync`, kineticsource: 'resync',
      }, { reason: 'resync' })).toBe(202)
    }
    console.log(`kinetic: after the adapter restart, lost-add was started by ${started ? 'its own add event' : 'the resync heartbeat (its add was lost)'}`)
    const done = await phaseOf('lost-add', 'Succeeded', 300_000)
    expect(done.status?.stepStatuses?.map((s) => s.phase)).toEqual(['Succeeded'])
  }, 420_000)

  it('converges when the function pod is killed mid-run, and a duplicated, stale Job event sent to the Broker changes nothing', async () => {
    await tier().admin.apply(oneStep('killed'), NS)
    await eventually('a workflow-changed pod', async () => (await functionPods('workflow-changed')).length > 0 || undefined, 120_000, 500)
    await kubectl('delete', 'pod', '-n', SYSTEM, '-l', 'serving.knative.dev/service=workflow-changed', '--grace-period=0', '--force', '--wait=false')
    const done = await phaseOf('killed', 'Succeeded', 300_000)
    const jobName = done.status?.stepStatuses?.[0]?.jobName as string
    const job = await tier().admin.get<KubeObject>(`/apis/batch/v1/namespaces/${NS}/jobs/${jobName}`)
    // The same Job update twice more, as the ApiServerSource sends it, straight to the Broker's ingress.
    const ingress = await tier().admin.get<{ spec: { clusterIP: string } }>('/api/v1/namespaces/knative-eventing/services/broker-ingress')
    for (const id of ['duplicate-1', 'duplicate-1']) {
      expect(await postEvent(ingress!.spec.clusterIP, `/${SYSTEM}/default`, {
        id, type: 'dev.knative.apiserver.resource.update', source: 'https://10.0.0.1:443', kineticsource: 'resources', kind: 'Job',
        name: jobName, namespace: NS, apiversion: 'batch/v1', subject: `/apis/batch/v1/namespaces/${NS}/jobs/${jobName}`,
      }, job)).toBe(202)
    }
    await new Promise((r) => setTimeout(r, 10_000))
    const after = await workflow('killed')
    expect(after.status?.phase).toBe('Succeeded')
    expect(after.status?.runId).toBe(done.status?.runId)
    const jobs = (await tier().admin.get<{ items: unknown[] }>(`/apis/batch/v1/namespaces/${NS}/jobs?labelSelector=purko.io%2Fworkflow%3Dkilled`))?.items ?? []
    expect(jobs).toHaveLength(1)
  }, 420_000)
}

/** A one-step Workflow of the example's researcher Agent (no approval). */
export function oneStep(name: string): KubeObject {
  return {
    apiVersion: 'purko.io/v1alpha1', kind: 'Workflow', metadata: { name, namespace: NS },
    spec: { steps: [{ name: 'research', agentRef: { name: 'researcher' }, input: { task: `Research for ${name}.` } }] },
  }
}

/** POSTs a binary-mode CloudEvent to the Broker ingress at `ip`; resolves with the status. */
function postEvent(ip: string, path: string, attributes: Record<string, string>, data: unknown): Promise<number> {
  const headers: Record<string, string> = { 'content-type': 'application/json' }
  for (const [k, v] of Object.entries({ specversion: '1.0', ...attributes })) headers[`ce-${k}`] = v
  return post(ip, path, headers, JSON.stringify(data))
}

/** README's install section, read by the test so the commands it runs are the documented ones. */
export function readmeInstallCommands(): string[] {
  const readme = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8')
  const section = readme.slice(readme.indexOf('## Install on a Knative cluster'))
  const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1] ?? ''
  return block.split('\n').map((l) => l.replace(/\s+#.*$/, '').trim()).filter((l) => l.startsWith('kubectl apply') || l.startsWith('kubectl wait'))
}
