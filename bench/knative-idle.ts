// Idle footprint on a real Knative cluster: what Kinetic keeps running when nothing happens.
// Every --every seconds it lists the pods of kinetic-system and reads the kubelet's resource
// metrics (through the API server's node proxy, so it works on any cluster the kubeconfig
// reaches); at the end it prints, per kind of pod (a function's Knative Service or a source's
// receive adapter), the pod-seconds seen, the CPU-seconds used and the mean working set, and the
// PingSource deliveries and function starts in the window. With --audit (the API server's audit
// log of `npm run cluster -- --audit`), also the API requests Kinetic's identities made in it.
// Run: node --import tsx bench/knative-idle.ts --kubeconfig <file> [--minutes 60] [--every 10] [--audit <audit.log>]
import { readFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { KubeConfig } from '@kubernetes/client-node'
import { KubeHttp } from '../local/knative/kube-http.js'
import { printTable } from './stats.js'

const NS = 'kinetic-system'

interface PodItem {
  metadata: { name: string; labels?: Record<string, string> }
  spec: { nodeName?: string }
  status: { phase?: string; containerStatuses?: Array<{ restartCount: number }> }
}

/** What a pod of kinetic-system is: `function <ksvc>`, `adapter <source>` or `other <name>`. */
export function podOwner(pod: PodItem): string {
  const l = pod.metadata.labels ?? {}
  if (l['serving.knative.dev/service']) return `function ${l['serving.knative.dev/service']}`
  if (l['eventing.knative.dev/sourceName']) return `adapter ${l['eventing.knative.dev/sourceName']}`
  return `other ${pod.metadata.name}`
}

/** `container_cpu_usage_seconds_total` and `container_memory_working_set_bytes` of `ns`, per pod/container. */
export function parseResourceMetrics(text: string, ns: string): Map<string, { cpu?: number; memory?: number }> {
  const out = new Map<string, { cpu?: number; memory?: number }>()
  for (const line of text.split('\n')) {
    const m = /^(container_cpu_usage_seconds_total|container_memory_working_set_bytes)\{([^}]*)\} ([0-9.eE+-]+)/.exec(line)
    if (!m) continue
    const labels = Object.fromEntries([...(m[2] as string).matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]))
    if (labels.namespace !== ns) continue
    const key = `${labels.pod}/${labels.container}`
    const entry = out.get(key) ?? {}
    if (m[1] === 'container_cpu_usage_seconds_total') entry.cpu = Number(m[3])
    else entry.memory = Number(m[3])
    out.set(key, entry)
  }
  return out
}

/** One audit log line, as much of it as the count needs. */
interface AuditLine { stage?: string; verb?: string; user?: { username?: string }; stageTimestamp?: string }

/**
 * Pure: the requests of kinetic-system's ServiceAccounts (the functions and the receive adapter)
 * that completed in [from, to), per identity and verb, from the audit log's JSON lines.
 */
export function kineticApiCalls(lines: string[], from: number, to: number): Map<string, Map<string, number>> {
  const prefix = `system:serviceaccount:${NS}:`
  const out = new Map<string, Map<string, number>>()
  for (const line of lines) {
    if (!line.includes(prefix)) continue
    let e: AuditLine
    try {
      e = JSON.parse(line) as AuditLine
    } catch {
      continue
    }
    const user = e.user?.username ?? ''
    const at = Date.parse(e.stageTimestamp ?? '')
    if (e.stage !== 'ResponseComplete' || !user.startsWith(prefix) || !(at >= from && at < to)) continue
    const verbs = out.get(user.slice(prefix.length)) ?? new Map<string, number>()
    verbs.set(e.verb ?? '?', (verbs.get(e.verb ?? '?') ?? 0) + 1)
    out.set(user.slice(prefix.length), verbs)
  }
  return out
}

/** One pod over the window: samples seen, CPU-seconds used (a restarted container's counter starts again at 0), memory. */
interface Seen { owner: string; samples: number; cpuLast: Map<string, number>; cpu: number; restarts: number; memory: number[] }

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { kubeconfig: { type: 'string' }, minutes: { type: 'string', default: '60' }, every: { type: 'string', default: '10' }, audit: { type: 'string' } } })
  if (!values.kubeconfig) throw new Error('--kubeconfig <file> is required')
  const kc = new KubeConfig()
  kc.loadFromFile(values.kubeconfig)
  const kube = new KubeHttp(kc)
  const minutes = Number(values.minutes)
  const every = Number(values.every)
  const pods = new Map<string, Seen>()
  const t0 = Date.now()
  let samples = 0
  while (Date.now() - t0 < minutes * 60_000) {
    const list = await kube.get<{ items: PodItem[] }>(`/api/v1/namespaces/${NS}/pods`)
    const running = (list?.items ?? []).filter((p) => p.status.phase === 'Running')
    // A container that keeps crashing is not idling: say so instead of measuring it.
    const crashing = running.filter((p) => (p.status.containerStatuses ?? []).some((c) => c.restartCount > 0))
    if (crashing.length > 0) process.stderr.write(`\nrestarting: ${crashing.map((p) => p.metadata.name).join(', ')}\n`)
    const nodes = new Set(running.map((p) => p.spec.nodeName).filter((n): n is string => !!n))
    const metrics = new Map<string, { cpu?: number; memory?: number }>()
    for (const n of nodes) {
      const { text } = await kube.send('GET', `/api/v1/nodes/${n}/proxy/metrics/resource`)
      for (const [k, v] of parseResourceMetrics(text, NS)) metrics.set(k, v)
    }
    for (const p of running) {
      const seen: Seen = pods.get(p.metadata.name) ?? { owner: podOwner(p), samples: 0, cpuLast: new Map(), cpu: 0, restarts: 0, memory: [] }
      seen.samples++
      let memory = 0
      for (const [k, v] of metrics) {
        if (!k.startsWith(`${p.metadata.name}/`)) continue
        if (v.cpu !== undefined) {
          const last = seen.cpuLast.get(k)
          if (last !== undefined) seen.cpu += v.cpu >= last ? v.cpu - last : v.cpu
          seen.cpuLast.set(k, v.cpu)
        }
        memory += v.memory ?? 0
      }
      seen.memory.push(memory)
      pods.set(p.metadata.name, seen)
    }
    samples++
    const elapsed = (Date.now() - t0) / 1000
    process.stderr.write(`\r${elapsed.toFixed(0)} s: ${running.length} pods running in ${NS}   `)
    await new Promise((r) => setTimeout(r, every * 1000))
  }
  process.stderr.write('\n')
  const byOwner = new Map<string, { pods: number; podSeconds: number; cpu: number; memory: number[] }>()
  for (const seen of pods.values()) {
    const row = byOwner.get(seen.owner) ?? { pods: 0, podSeconds: 0, cpu: 0, memory: [] }
    row.pods++
    row.podSeconds += seen.samples * every
    row.cpu += seen.cpu
    row.memory.push(...seen.memory)
    byOwner.set(seen.owner, row)
  }
  const hours = (Date.now() - t0) / 3_600_000
  const rows = [...byOwner.entries()].sort((a, b) => b[1].podSeconds - a[1].podSeconds).map(([owner, r]) => [
    owner, String(r.pods), (r.podSeconds / hours).toFixed(0), (r.cpu / hours).toFixed(1),
    (r.memory.reduce((a, b) => a + b, 0) / Math.max(1, r.memory.length) / 2 ** 20).toFixed(1),
  ])
  const total = [...byOwner.values()]
  rows.push(['total', String(total.reduce((a, r) => a + r.pods, 0)), (total.reduce((a, r) => a + r.podSeconds, 0) / hours).toFixed(0),
    (total.reduce((a, r) => a + r.cpu, 0) / hours).toFixed(1), ''])
  printTable(`Kinetic idle in ${NS}: ${(hours * 60).toFixed(1)} min, ${samples} samples every ${every} s (pod-seconds and CPU-seconds scaled to one hour; CPU counts only while a pod was seen)`, ['pod of', 'pods seen', 'pod-s/h', 'CPU-s/h', 'working set MiB (mean)'], rows)
  if (values.audit) {
    const calls = kineticApiCalls(readFileSync(values.audit, 'utf8').split('\n'), t0, Date.now())
    const apiRows = [...calls.entries()].map(([who, verbs]) => {
      const n = [...verbs.values()].reduce((a, b) => a + b, 0)
      return [who, String(n), (n / hours).toFixed(1), [...verbs.entries()].sort().map(([v, c]) => `${v} ${c}`).join(', ')]
    }).sort((a, b) => Number(b[1]) - Number(a[1]))
    const all = [...calls.values()].flatMap((v) => [...v.values()]).reduce((a, b) => a + b, 0)
    apiRows.push(['total', String(all), (all / hours).toFixed(1), ''])
    printTable(`API requests by ${NS}'s identities in the same window (the API server's audit log; a watch counts when it ends)`, ['identity', 'requests', 'per hour', 'verbs'], apiRows)
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : err)
    process.exit(1)
  })
}
