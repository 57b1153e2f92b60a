// Autonomy-tick benchmark: one 5-minute evaluation of 10 / 1,000 / 10,000 opted-in Agents (100
// per namespace, one policy each), idle (nothing changed since the last tick) and with 10% of
// the agents due a promotion. Two planes, both the real adapter over HTTP to the embedded API
// server in this process (JSON, schema validation, status subresource), both counting API calls
// by method: EmbeddedKube (the tests' double: seeded through the server's store, one kept-alive
// connection pool) and a server seeded over HTTP with the client's own connection handling.
// Run: node --import tsx bench/autonomy-tick.ts   (BENCH_AUTONOMY_SIZES=10,1000,10000; BENCH_AUTONOMY_HTTP_MAX=10000)
import { readdirSync, readFileSync } from 'node:fs'
import { parseAllDocuments } from 'yaml'
import { tick } from '../functions/autonomy-tick/index.js'
import { startApiServer, type KubeObject } from '../local/apiserver/index.js'
import { KubeClient } from '../shared/kube/client.js'
import type { Kube } from '../shared/kube/port.js'
import { autonomousAgent, metricsOf, policyOf } from '../test/fixtures/autonomy.js'
import { countingKube } from '../test/support/counting-kube.js'
import { EmbeddedKube } from '../test/support/embedded-kube.js'
import { testDeps } from '../test/support/engine-deps.js'

const SIZES = (process.env.BENCH_AUTONOMY_SIZES ?? '10,1000,10000').split(',').map(Number)
const HTTP_MAX = Number(process.env.BENCH_AUTONOMY_HTTP_MAX ?? 10_000)
const PER_NAMESPACE = 100
const POLICY = { shuHaRi: { progressionCriteria: { shuToHa: { minimumActionsCompleted: 50, minimumDaysInLevel: 7 } } } }

const namespaceOf = (i: number) => `team-${Math.floor(i / PER_NAMESPACE)}`
const agentAt = (i: number) => autonomousAgent(`agent-${i}`, { namespace: namespaceOf(i), metrics: metricsOf(10) })

interface Figures { ms: number; cpuMs: number; calls: Record<string, number>; applied: number }

async function measureTick(m: ReturnType<typeof countingKube>, clock: { now: Date }): Promise<Figures> {
  m.reset()
  const deps = testDeps(m.kube, clock)
  const start = process.hrtime.bigint()
  const cpu = process.cpuUsage()
  const summary = await tick(deps)
  const used = process.cpuUsage(cpu)
  const ms = Number(process.hrtime.bigint() - start) / 1e6
  return { ms, cpuMs: (used.user + used.system) / 1000, calls: Object.fromEntries([...m.calls].sort()), applied: summary.applied }
}

const fmtCalls = (calls: Record<string, number>) => Object.entries(calls).map(([k, v]) => `${k} ${v}`).join(', ')
const row = (n: number, what: string, f: Figures) =>
  `${String(n).padStart(6)}  ${what.padEnd(17)} ${f.ms.toFixed(1).padStart(8)} ms wall ${f.cpuMs.toFixed(0).padStart(6)} ms CPU ${(f.ms / n * 1000).toFixed(0).padStart(5)} us/agent  applied ${String(f.applied).padStart(5)}  calls: ${fmtCalls(f.calls)}`

/** Raises the metrics of every tenth agent past shu -> ha (as the workflow engine would have). */
async function dueForPromotion(kube: Kube, n: number): Promise<void> {
  for (let i = 0; i < n; i += 10) {
    const agent = (await kube.getAgent(namespaceOf(i), `agent-${i}`))!
    await kube.replaceAgentStatus(namespaceOf(i), `agent-${i}`, agent.metadata.resourceVersion!, { ...agent.status, metrics: metricsOf(60) })
  }
}

async function scenario(n: number, kube: Kube): Promise<string[]> {
  const clock = { now: new Date('2026-03-01T00:00:00Z') }
  const m = countingKube(kube)
  const first = await measureTick(m, clock) // settles every agent's status (first evaluation)
  const idle = await measureTick(m, clock)
  await dueForPromotion(kube, n)
  const promoting = await measureTick(m, clock)
  const idleAgain = await measureTick(m, clock)
  if (Object.keys(idle.calls).length !== 2 || idleAgain.applied !== 0 || promoting.applied !== Math.ceil(n / 10)) {
    throw new Error(`unexpected tick: idle ${fmtCalls(idle.calls)}, promoted ${promoting.applied}, after ${idleAgain.applied}`)
  }
  return [row(n, 'first evaluation', first), row(n, 'idle', idle), row(n, '10% promoted', promoting)]
}

async function embeddedKubePlane(n: number): Promise<string[]> {
  const kube = new EmbeddedKube({ identities: false })
  for (let ns = 0; ns * PER_NAMESPACE < n; ns++) {
    kube.namespaces.set(`team-${ns}`, { metadata: { name: `team-${ns}` } })
    kube.putPolicy(policyOf('default', `team-${ns}`, POLICY))
  }
  for (let i = 0; i < n; i++) kube.putAgent(agentAt(i), { identity: false })
  return scenario(n, kube)
}

async function httpPlane(n: number): Promise<string[]> {
  const server = await startApiServer()
  try {
    const post = async (path: string, body: unknown, method = 'POST') => {
      const res = await fetch(`${server.url}${path}`, { method, body: JSON.stringify(body), headers: { 'content-type': 'application/json' } })
      if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${(await res.text()).slice(0, 200)}`)
      return (await res.json()) as KubeObject
    }
    const crdDir = new URL('../crds/', import.meta.url)
    for (const file of readdirSync(crdDir).filter((f) => f.endsWith('.yaml'))) {
      for (const doc of parseAllDocuments(readFileSync(new URL(file, crdDir), 'utf8'))) {
        const obj = doc.toJSON() as KubeObject | null
        if (obj?.kind === 'CustomResourceDefinition') await post('/apis/apiextensions.k8s.io/v1/customresourcedefinitions', obj)
      }
    }
    while ((await fetch(`${server.url}/apis/purko.io/v1alpha1`)).status !== 200) await new Promise((r) => setTimeout(r, 20))
    for (let ns = 0; ns * PER_NAMESPACE < n; ns++) {
      await post('/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: `team-${ns}` } })
      await post(`/apis/purko.io/v1alpha1/namespaces/team-${ns}/agentautonomypolicies`, policyOf('default', `team-${ns}`, POLICY))
    }
    const base = `/apis/purko.io/v1alpha1/namespaces`
    for (let i = 0; i < n; i += 50) {
      await Promise.all(Array.from({ length: Math.min(50, n - i) }, async (_, j) => {
        const { status, ...agent } = agentAt(i + j)
        const created = await post(`${base}/${namespaceOf(i + j)}/agents`, agent)
        await post(`${base}/${namespaceOf(i + j)}/agents/agent-${i + j}/status`, { ...created, status }, 'PUT')
      }))
    }
    return await scenario(n, new KubeClient(server.kubeConfigObject()))
  } finally {
    await server.close()
  }
}

console.log(`autonomy tick: ${PER_NAMESPACE} agents per namespace, one policy each; idle = nothing changed since the last tick`)
console.log('\nEmbeddedKube, seeded through the store, kept-alive connections (CPU includes the server, same process):')
for (const n of SIZES) for (const line of await embeddedKubePlane(n)) console.log(line)
console.log('\nembedded API server over HTTP, the real adapter (CPU includes the server, same process):')
for (const n of SIZES.filter((s) => s <= HTTP_MAX)) for (const line of await httpPlane(n)) console.log(line)
