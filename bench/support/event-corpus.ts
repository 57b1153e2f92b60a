// Real CloudEvents for bench/memory.ts: runs a small workload through the embedded local plane
// (examples/local, chains of steps, a provider of each kind, an MCPServer, fast-forwarded
// PingSources) and keeps every event each function was delivered, so a replay sends a function
// exactly what its Trigger gave it: stale, duplicated and our own status writes coming back.
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { parseAllDocuments } from 'yaml'
import type { KEvent } from '../../local/knative/cloud-event.js'
import type { KubeObject } from '../../local/knative/kube-http.js'
import { startLocalPlane, type LocalPlane } from '../../local/plane.js'

export const NS = 'ai-agents'

/** The plane the events were recorded on (its API server keeps the objects), and the events by function. */
export interface EventCorpus {
  plane: LocalPlane
  events: Map<string, KEvent[]>
}

function yamlObjects(dir: string): KubeObject[] {
  const out: KubeObject[] = []
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) out.push(...yamlObjects(path))
    else if (name.endsWith('.yaml')) {
      for (const doc of parseAllDocuments(readFileSync(path, 'utf8'))) {
        const v = doc.toJSON() as unknown
        if (v && typeof v === 'object' && !Array.isArray(v)) out.push(v as KubeObject)
      }
    }
  }
  return out
}

/** A chain of `steps` steps on the example planner Agent (the executor's offline provider answers). */
export function chainWorkflow(name: string, steps: number, namespace = NS): KubeObject {
  return {
    apiVersion: 'purko.io/v1alpha1', kind: 'Workflow', metadata: { name, namespace },
    spec: {
      steps: Array.from({ length: steps }, (_, i) => ({
        name: `s${i}`, agentRef: { name: 'planner' }, input: { task: `step ${i}` }, ...(i > 0 ? { dependsOn: [`s${i - 1}`] } : {}),
      })),
    },
  }
}

// One object of each kind the provider and MCP functions watch. The LLMProvider's endpoint is a
// closed local port, so its probe fails at once instead of reaching the network.
const EXTRA_OBJECTS: KubeObject[] = [
  { apiVersion: 'purko.io/v1alpha1', kind: 'LLMProvider', metadata: { name: 'local-ollama', namespace: NS }, spec: { type: 'ollama', model: 'llama3', endpoint: 'http://127.0.0.1:9' } },
  { apiVersion: 'purko.io/v1alpha1', kind: 'MemoryProvider', metadata: { name: 'builtin', namespace: NS }, spec: { type: 'builtin' } },
  { apiVersion: 'purko.io/v1alpha1', kind: 'MCPServer', metadata: { name: 'tools', namespace: NS }, spec: { image: 'example.com/tools:1' } },
]

type Phased = KubeObject & { status?: { phase?: string } }

/**
 * Starts the plane, applies the workload and records deliveries until every chain has finished
 * and each PingSource ticked a few times. The plane keeps running; the caller stops it.
 */
export async function recordEventCorpus(opts: { root: string; scratch: string; chains: number; steps: number; timeoutMs?: number }): Promise<EventCorpus> {
  const plane = await startLocalPlane({
    root: opts.root,
    kubeconfigPath: join(opts.scratch, 'kubeconfig'),
    logDir: join(opts.scratch, 'plane-logs'),
    pingIntervalMs: 5_000,
    jobConcurrency: 4,
  })
  const byUrl = new Map([...plane.functions.values()].map((f) => [f.url, f.name]))
  const events = new Map<string, KEvent[]>()
  plane.knative.onDelivery((d) => {
    const fn = byUrl.get(d.subscriber.replace(/\/$/, '')) ?? d.subscriber
    const list = events.get(fn) ?? []
    list.push(d.event)
    events.set(fn, list)
  })
  try {
    for (const obj of [...yamlObjects(join(opts.root, 'examples', 'local')), ...EXTRA_OBJECTS]) await plane.kube.apply(obj)
    const chains = Array.from({ length: opts.chains }, (_, i) => `memory-chain-${i}`)
    for (const name of chains) await plane.kube.apply(chainWorkflow(name, opts.steps))
    const deadline = Date.now() + (opts.timeoutMs ?? 300_000)
    for (;;) {
      const phases = await Promise.all(chains.map(async (n) => (await plane.kube.get<Phased>(`/apis/purko.io/v1alpha1/namespaces/${NS}/workflows/${n}`))?.status?.phase))
      const pings = ['resync-tick', 'autonomy-tick'].map((f) => events.get(f)?.length ?? 0)
      if (phases.every((p) => p === 'Succeeded' || p === 'Failed') && pings.every((n) => n >= 2)) break
      if (Date.now() > deadline) throw new Error(`the recording workload did not finish: ${phases.join(', ')}`)
      await new Promise((r) => setTimeout(r, 500))
    }
    // Nothing more is delivered or run: the replay alone talks to the API server from here on.
    await plane.knative.stop()
    await plane.jobs?.stop()
    plane.workloads?.stop()
    for (const fn of plane.functions.values()) if (fn.pid) process.kill(fn.pid, 'SIGTERM')
    return { plane, events }
  } catch (err) {
    await plane.stop()
    throw err
  }
}
