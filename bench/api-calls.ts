// API calls per event, by purpose: the real step-job-finished and workflow-changed functions
// in-process with their real dependencies (the Kubernetes client; a warm instance's memo, as
// deployed) against the embedded API server, which counts every request it handles. The bench
// plays the Job controller and the kubelet: a finished step gets a pod whose termination message
// (and log) holds the step's OUTPUT line, then its Job turns Complete and the Job update is
// delivered. Each row prints the calls next to the fewest the event's meaning needs.
// Run: node --import tsx bench/api-calls.ts
import { cpus, loadavg } from 'node:os'
import type { Hono } from 'hono'
import { createApp as stepJobFinished } from '../functions/step-job-finished/index.js'
import { createApp as workflowChanged } from '../functions/workflow-changed/index.js'
import type { KubeObject } from '../local/apiserver/index.js'
import { agentServiceAccountName } from '../shared/agent/plan/names.js'
import { readRuntimeConfig } from '../shared/config.js'
import type { EngineDeps } from '../shared/engine/controller.js'
import { noKineticEvents } from '../shared/engine/kinetic-events.js'
import { createEngineMemo } from '../shared/engine/memo.js'
import { KubeClient } from '../shared/kube/client.js'
import { silentLogger } from '../shared/log.js'
import type { Agent } from '../shared/schemas/agent.js'
import { deliver, RESOURCE_ADD, RESOURCE_UPDATE } from '../test/support/deliver.js'
import { installCrds, startCountedApiServer, type CountedApiServer } from './support/counted-apiserver.js'
import { printTable } from './stats.js'

const NS = 'ai-agents'
const WF = '/apis/purko.io/v1alpha1/namespaces/ai-agents/workflows'

/** One measured row: what happened, the calls by purpose, and the fewest its meaning needs. */
interface Row { event: string; calls: Map<string, number>; events: number; minimum: number; why: string }

type Step = { name: string; agentRef: { name: string }; dependsOn?: string[]; inputFrom?: Array<{ step: string; outputKey: string }> }

async function agent(api: CountedApiServer, name: string): Promise<void> {
  const created = await api.call('POST', `/apis/purko.io/v1alpha1/namespaces/${NS}/agents`, {
    apiVersion: 'purko.io/v1alpha1', kind: 'Agent', metadata: { name }, spec: { model: { provider: 'offline', name: 'scripted' } },
  })
  // What agent-changed leaves behind: the ServiceAccount exists and the status names it.
  const account = agentServiceAccountName(created as unknown as Agent)
  await api.call('POST', `/api/v1/namespaces/${NS}/serviceaccounts`, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: account } })
  await api.call('PUT', `/apis/purko.io/v1alpha1/namespaces/${NS}/agents/${name}/status`, { ...created, status: { serviceAccountName: account } })
}

/** As the Job controller and kubelet: the step's pod ran and left `line`; the Job completed. */
async function finish(api: CountedApiServer, jobName: string, line: string): Promise<KubeObject> {
  const pod = `${jobName}-x7k2q`
  await api.call('POST', `/api/v1/namespaces/${NS}/pods`, {
    apiVersion: 'v1', kind: 'Pod', metadata: { name: pod, labels: { 'job-name': jobName } },
    spec: { restartPolicy: 'Never', containers: [{ name: 'step-executor', image: 'kinetic-executor' }] },
  })
  const terminated = { exitCode: 0, reason: 'Completed', ...(Buffer.byteLength(line) <= 4096 ? { message: line } : {}) }
  await api.call('PATCH', `/api/v1/namespaces/${NS}/pods/${pod}/status`, { status: { phase: 'Succeeded', containerStatuses: [{ name: 'step-executor', state: { terminated } }] } })
  api.server.store.appendPodLog(NS, pod, `${line}\n`)
  const job = await api.call('GET', `/apis/batch/v1/namespaces/${NS}/jobs/${jobName}`)
  const now = new Date().toISOString()
  return api.call('PUT', `/apis/batch/v1/namespaces/${NS}/jobs/${jobName}/status`, {
    ...job, status: { succeeded: 1, startTime: now, completionTime: now, conditions: [{ type: 'Complete', status: 'True', lastTransitionTime: now }] },
  })
}

const output = (n: number, pad = 0) => `OUTPUT:${JSON.stringify({ response: `step ${n} done${' '.repeat(pad)}`, n, _metrics: { tokens_in: 120, tokens_out: 80, cost_usd: 0.002 } })}`

function deps(api: CountedApiServer, memo: boolean): EngineDeps {
  return {
    kube: new KubeClient(api.server.kubeConfigObject()),
    log: silentLogger,
    now: () => new Date(),
    config: readRuntimeConfig({}),
    events: noKineticEvents,
    ...(memo ? { memo: createEngineMemo() } : {}),
  }
}

/** Step Jobs of a run, by step name. */
async function jobsOf(api: CountedApiServer, workflow: string): Promise<Map<string, KubeObject>> {
  const list = await api.call('GET', `/apis/batch/v1/namespaces/${NS}/jobs?labelSelector=${encodeURIComponent(`purko.io/workflow=${workflow}`)}`) as unknown as { items: KubeObject[] }
  return new Map(list.items.map((j) => [String(j.metadata.labels?.['purko.io/step']), j]))
}

/** Delivers `event` to `app` with counting on; the counts add up in `into`. */
async function counted(api: CountedApiServer, into: Map<string, number>, app: Hono, type: string, data: unknown): Promise<void> {
  api.counts.clear()
  api.counting.on = true
  const res = await deliver(app, type, data)
  await api.settle()
  if (res.status !== 202) throw new Error(`answered ${res.status}: ${await res.text()}`)
  for (const [k, v] of api.counts) into.set(k, (into.get(k) ?? 0) + v)
}

async function workflow(api: CountedApiServer, name: string, steps: Step[], spec: Record<string, unknown> = {}): Promise<KubeObject> {
  return api.call('POST', WF, { apiVersion: 'purko.io/v1alpha1', kind: 'Workflow', metadata: { name }, spec: { steps, ...spec } })
}

const chainSteps = (n: number, agentOf: (i: number) => string): Step[] => Array.from({ length: n }, (_, i) => ({
  name: `s${i}`, agentRef: { name: agentOf(i) }, ...(i > 0 ? { dependsOn: [`s${i - 1}`], inputFrom: [{ step: `s${i - 1}`, outputKey: 'n' }] } : {}),
}))

/**
 * A chain run through one step-job-finished instance: the first event's calls (the instance has
 * seen nothing yet) and the mean of the later ones, each finished step starting the next.
 */
async function chain(api: CountedApiServer, name: string, agentOf: (i: number) => string, memo: boolean, pad = 0): Promise<{ first: Map<string, number>; later: Map<string, number>; laterEvents: number; last: Map<string, number> }> {
  const steps = 12
  await workflow(api, name, chainSteps(steps, agentOf))
  await deliver(workflowChanged(deps(api, false)), RESOURCE_ADD, await api.call('GET', `${WF}/${name}`))
  const app = stepJobFinished(deps(api, memo))
  const first = new Map<string, number>()
  const later = new Map<string, number>()
  const last = new Map<string, number>()
  for (let i = 0; i < steps; i++) {
    const job = (await jobsOf(api, name)).get(`s${i}`)!
    const done = await finish(api, String(job.metadata.name), output(i, pad))
    await counted(api, i === 0 ? first : i === steps - 1 ? last : later, app, RESOURCE_UPDATE, done)
  }
  return { first, later, laterEvents: steps - 2, last }
}

/** A root step, then `width` steps that depend on it (parallelism `width`). */
async function fanOut(api: CountedApiServer, width: number): Promise<{ root: Map<string, number>; branch: Map<string, number>; duplicate: Map<string, number> }> {
  const steps: Step[] = [{ name: 'root', agentRef: { name: 'helper' } }, ...Array.from({ length: width }, (_, i) => ({ name: `b${i}`, agentRef: { name: 'helper' }, dependsOn: ['root'] }))]
  await workflow(api, 'fan', steps, { parallelism: width })
  await deliver(workflowChanged(deps(api, false)), RESOURCE_ADD, await api.call('GET', `${WF}/fan`))
  const app = stepJobFinished(deps(api, true))
  const root = new Map<string, number>()
  const rootJob = await finish(api, String((await jobsOf(api, 'fan')).get('root')!.metadata.name), output(0))
  await counted(api, root, app, RESOURCE_UPDATE, rootJob)
  const branch = new Map<string, number>()
  const done = await finish(api, String((await jobsOf(api, 'fan')).get('b0')!.metadata.name), output(1))
  await counted(api, branch, app, RESOURCE_UPDATE, done)
  const duplicate = new Map<string, number>()
  await counted(api, duplicate, app, RESOURCE_UPDATE, done)
  return { root, branch, duplicate }
}

async function firstJob(api: CountedApiServer): Promise<Map<string, number>> {
  await workflow(api, 'fresh', chainSteps(3, () => 'helper'))
  const calls = new Map<string, number>()
  await counted(api, calls, workflowChanged(deps(api, true)), RESOURCE_ADD, await api.call('GET', `${WF}/fresh`))
  return calls
}

const mean = (calls: Map<string, number>, events: number) => new Map([...calls].map(([k, v]) => [k, v / events]))
const total = (calls: Map<string, number>) => [...calls.values()].reduce((a, b) => a + b, 0)

const api = await startCountedApiServer()
const loadBefore = loadavg()
const rows: Row[] = []
try {
  await installCrds(api)
  for (const name of ['helper', 'planner', 'researcher', 'writer']) await agent(api, name)
  const warm = await chain(api, 'chain', () => 'helper', true)
  const fresh = await chain(api, 'chain-fresh-reads', () => 'helper', false)
  const three = ['planner', 'researcher', 'writer']
  const crew = await chain(api, 'crew', (i) => three[i % 3]!, true)
  const big = await chain(api, 'big-output', () => 'helper', true, 5000)
  const fan = await fanOut(api, 50)
  const start = await firstJob(api)
  const NEED = 'the run, the step\'s result, its output stored, its metrics counted, the next Job, the status'
  rows.push(
    { event: 'chain step, warm instance', calls: mean(warm.later, warm.laterEvents), events: warm.laterEvents, minimum: 6, why: NEED },
    { event: 'chain step, first event of a new instance', calls: warm.first, events: 1, minimum: 6, why: 'as above; a new instance has read nothing yet' },
    { event: 'chain step, every read fresh (no memo)', calls: mean(fresh.later, fresh.laterEvents), events: fresh.laterEvents, minimum: 6, why: NEED },
    { event: 'chain step, each step another Agent', calls: mean(crew.later, crew.laterEvents), events: crew.laterEvents, minimum: 7, why: 'as above, plus the next step\'s Agent' },
    { event: 'chain step, output over 4 KiB', calls: mean(big.later, big.laterEvents), events: big.laterEvents, minimum: 7, why: 'as above, the result from the log (no termination message)' },
    { event: 'last step of a chain (the run ends)', calls: warm.last, events: 1, minimum: 6, why: 'the run, result, output, metrics, status, the run.finished Event' },
    { event: 'fan-out root finished, 50 steps start', calls: fan.root, events: 1, minimum: 55, why: 'the run, result, output, metrics, 50 Jobs, status' },
    { event: 'one of 50 parallel steps finished', calls: fan.branch, events: 1, minimum: 5, why: 'the run, result, output, metrics, status' },
    { event: 'the same Job update delivered again', calls: fan.duplicate, events: 1, minimum: 1, why: 'the run (its status already has the result)' },
    { event: 'new Workflow (workflow-changed), first Job', calls: start, events: 1, minimum: 4, why: 'the run, its run id, the first Job, the status' },
  )
} finally {
  await api.server.close()
}

const round = (x: number) => (Number.isInteger(x) ? String(x) : x.toFixed(1))
console.log('node --import tsx bench/api-calls.ts')
console.log(`Node ${process.version}, ${cpus().length} cores, load average ${loadBefore.map((l) => l.toFixed(2)).join(' ')}; counts are deterministic, not timings.\n`)
printTable(
  'Kubernetes API calls per event, counted at the embedded API server (mean over the events of the row)',
  ['event', 'events', 'calls', 'minimum', 'minimum is'],
  rows.map((r) => [r.event, String(r.events), round(total(r.calls)), String(r.minimum), r.why]),
)
const purposes = [...new Set(rows.flatMap((r) => [...r.calls.keys()]))].sort()
printTable(
  'The same calls by purpose',
  ['event', ...purposes],
  rows.map((r) => [r.event, ...purposes.map((p) => (r.calls.has(p) ? round(r.calls.get(p)!) : ''))]),
)
