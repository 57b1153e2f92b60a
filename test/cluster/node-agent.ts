import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import https from 'node:https'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { KubeConfig } from '@kubernetes/client-node'
import { runPodContainer, type PodRun, type PodSpec } from '../../local/jobs/pod-process.js'
import { executorCommand, type StepCommand } from '../../local/jobs/step-process.js'
import { KubeHttp, KubeHttpError, listAndWatch, type KubeObject } from '../../local/knative/kube-http.js'
import { silentLogger, type Logger } from '../../shared/log.js'
import { KUBE_VERSIONS } from '../../cluster/versions.mjs'

// The test node reports the version of the control plane it registers with.
const KUBELET_VERSION = KUBE_VERSIONS.kubernetes

/** Options of the test node agent. */
export interface NodeAgentOptions {
  /** An identity that may register Nodes, bind pods and write pod status (the admin). */
  kubeConfig: KubeConfig
  /** The Node's name. Default `kinetic-test-node`. */
  name?: string
  /** Pods run at once; the agent binds a Pending pod only when a slot is free. Default 4. */
  concurrency?: number
  /** What a pod runs; default the project's executor, as the local Job runner does. */
  command?: (pod: KubeObject) => StepCommand
  log?: Logger
}

/** A running node agent. */
export interface NodeAgent {
  name: string
  /** The HTTPS port that serves `/containerLogs/...` (the Node's kubelet port). */
  port: number
  /** Pods this agent bound, ran, and finished (by namespace/name). */
  stats(): { bound: number; started: number; finished: number; deleted: number }
  /** Kills every container, stops heartbeats and watches, deletes the Node. */
  stop(): Promise<void>
}

interface PodEntry {
  ns: string
  name: string
  uid: string
  run?: PodRun
  /** stdout and stderr as they arrived, with arrival times (for `timestamps=true`). */
  log: Array<{ at: string; text: string }>
  container: string
  ended: boolean
  deleting: boolean
  followers: Set<() => void>
}

const LEASE_NS = 'kube-node-lease'
const HEARTBEAT_MS = 10_000

/**
 * Plays the kubelet (and, by binding, the scheduler) of one Node for a test control plane
 * that has neither: registers a Ready Node at 127.0.0.1 whose kubelet port is this agent's
 * HTTPS server, renews its Lease, binds Pending pods to itself as slots free up, runs each
 * pod's first container as a local process exactly as the local Job runner does (the
 * environment resolved with its Secrets and ConfigMaps; the project's executor), writes pod
 * status as a kubelet would, finishes deleted pods (kill, final status, delete with grace 0),
 * and serves `/containerLogs/<ns>/<pod>/<container>` so the API server's `pods/log` works.
 * Job status is left to the real Job controller.
 */
export async function startNodeAgent(opts: NodeAgentOptions): Promise<NodeAgent> {
  const name = opts.name ?? 'kinetic-test-node'
  const log = opts.log ?? silentLogger
  const kube = new KubeHttp(opts.kubeConfig)
  const concurrency = opts.concurrency ?? 4
  const command = opts.command ?? (() => executorCommand())
  const controller = new AbortController()
  const pods = new Map<string, PodEntry>()
  const queue: KubeObject[] = []
  const queued = new Set<string>()
  const counters = { bound: 0, started: 0, finished: 0, deleted: 0 }
  let stopped = false
  let binding = false

  const certDir = mkdtempSync(join(tmpdir(), 'kinetic-node-'))
  const { cert, key } = selfSignedCert(certDir)
  const server = https.createServer({ cert, key }, (req, res) => serveLogs(req, res, pods))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as AddressInfo).port

  const running = () => [...pods.values()].filter((p) => !p.ended).length
  const keyOf = (pod: KubeObject) => `${pod.metadata?.namespace}/${pod.metadata?.name}`
  const phaseOf = (pod: KubeObject) => (pod.status as { phase?: string } | undefined)?.phase

  const bindSome = async () => {
    if (binding) return
    binding = true
    try {
      while (!stopped && queue.length > 0 && running() < concurrency) {
        const pod = queue.shift() as KubeObject
        queued.delete(keyOf(pod))
        const ns = String(pod.metadata?.namespace)
        const podName = String(pod.metadata?.name)
        try {
          await kube.request('POST', `/api/v1/namespaces/${ns}/pods/${encodeURIComponent(podName)}/binding`, {
            apiVersion: 'v1', kind: 'Binding', metadata: { name: podName, uid: pod.metadata?.uid }, target: { apiVersion: 'v1', kind: 'Node', name },
          })
          counters.bound += 1
          // The watch brings the bound pod back; start it from here so the slot is taken now.
          start({ ...pod, spec: { ...(pod.spec as object), nodeName: name } })
        } catch (err) {
          // Deleted meanwhile (404), or bound by someone else (409): nothing to run.
          if (!(err instanceof KubeHttpError && (err.status === 404 || err.status === 409))) {
            log.warn({ namespace: ns, name: podName, err: String(err) }, 'Could not bind pod')
          }
        }
      }
    } finally {
      binding = false
    }
  }

  const start = (pod: KubeObject) => {
    const key = keyOf(pod)
    if (pods.has(key) || stopped) return
    const spec = (pod.spec ?? {}) as PodSpec
    const entry: PodEntry = {
      ns: String(pod.metadata?.namespace), name: String(pod.metadata?.name), uid: String(pod.metadata?.uid),
      log: [], container: spec.containers?.[0]?.name ?? '', ended: false, deleting: false, followers: new Set(),
    }
    pods.set(key, entry)
    counters.started += 1
    const notify = () => { for (const f of entry.followers) f() }
    entry.run = runPodContainer(pod, {
      kube, command: command(pod), nodeName: name, placement: { ip: '127.0.0.1' }, log,
      onLog: (text) => { entry.log.push({ at: new Date().toISOString(), text }); notify() },
      configError: 'wait',
      abandoned: () => stopped,
    })
    void entry.run.done.then(() => {
      entry.ended = true
      counters.finished += 1
      notify()
      void bindSome()
    })
  }

  // A deleted pod on this node: stop its container, report it, then let the API server drop it.
  const finishDeleted = async (pod: KubeObject) => {
    const entry = pods.get(keyOf(pod))
    if (entry?.deleting) return
    if (entry) {
      entry.deleting = true
      const grace = Number(pod.metadata?.deletionGracePeriodSeconds ?? 30)
      entry.run?.kill(Math.min(grace, 2) * 1000)
      await entry.run?.done
    }
    try {
      await kube.request('DELETE', `/api/v1/namespaces/${pod.metadata?.namespace}/pods/${encodeURIComponent(String(pod.metadata?.name))}`, {
        apiVersion: 'v1', kind: 'DeleteOptions', gracePeriodSeconds: 0, preconditions: { uid: pod.metadata?.uid },
      })
    } catch (err) {
      if (!(err instanceof KubeHttpError && (err.status === 404 || err.status === 409))) log.warn({ pod: keyOf(pod), err: String(err) }, 'Could not delete pod')
    }
  }

  const observe = (pod: KubeObject) => {
    const spec = (pod.spec ?? {}) as PodSpec & { schedulerName?: string }
    const key = keyOf(pod)
    const terminal = phaseOf(pod) === 'Succeeded' || phaseOf(pod) === 'Failed'
    if (pod.metadata?.deletionTimestamp) {
      if (spec.nodeName === name) void finishDeleted(pod)
      return
    }
    if (!spec.nodeName) {
      if (!terminal && !queued.has(key) && (spec.schedulerName ?? 'default-scheduler') === 'default-scheduler') {
        queued.add(key)
        queue.push(pod)
        void bindSome()
      }
      return
    }
    if (spec.nodeName === name && !terminal) start(pod)
  }

  const forget = (pod: KubeObject) => {
    const key = keyOf(pod)
    const entry = pods.get(key)
    if (entry && entry.uid === pod.metadata?.uid) {
      entry.run?.kill(500)
      pods.delete(key)
      counters.deleted += 1
      void bindSome()
    }
    if (queued.delete(key)) queue.splice(queue.findIndex((p) => keyOf(p) === key), 1)
  }

  // Register the Node first: pods/log needs its address and kubelet port.
  await registerNode(kube, name, port, concurrency)
  await renewLease(kube, name)
  const heartbeat = setInterval(() => {
    void renewLease(kube, name).catch((err: unknown) => log.warn({ err: String(err) }, 'Could not renew the node Lease'))
  }, HEARTBEAT_MS)

  let markSynced!: () => void
  const synced = new Promise<void>((r) => { markSynced = r })
  const loop = listAndWatch(kube, '/api/v1/pods', '', {
    onList(items) {
      for (const item of items) observe(item)
    },
    onEvent(ev) {
      if (ev.type === 'DELETED') forget(ev.object)
      else observe(ev.object)
    },
    synced: markSynced,
    onError: (err) => log.warn({ err: String(err) }, 'Pod watch failed; retrying'),
  }, controller.signal)
  await synced

  return {
    name,
    port,
    stats: () => ({ ...counters }),
    async stop() {
      if (stopped) return
      stopped = true
      clearInterval(heartbeat)
      controller.abort()
      const exits: Promise<unknown>[] = []
      for (const entry of pods.values()) {
        if (!entry.run) continue
        entry.run.kill(500)
        exits.push(entry.run.done)
      }
      await Promise.all([loop, ...exits])
      server.closeAllConnections()
      await new Promise<void>((r) => server.close(() => r()))
      await kube.request('DELETE', `/api/v1/nodes/${name}`).catch(() => undefined)
      rmSync(certDir, { recursive: true, force: true })
    },
  }
}

async function registerNode(kube: KubeHttp, name: string, port: number, pods: number): Promise<void> {
  const node = {
    apiVersion: 'v1', kind: 'Node',
    metadata: { name, labels: { 'kubernetes.io/hostname': name, 'kubernetes.io/os': 'linux', 'kubernetes.io/arch': process.arch === 'x64' ? 'amd64' : process.arch } },
  }
  try {
    await kube.request('POST', '/api/v1/nodes', node)
  } catch (err) {
    if (!(err instanceof KubeHttpError && err.status === 409)) throw err
  }
  const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z')
  const condition = (type: string, status: string, reason: string, message: string) => ({ type, status, reason, message, lastHeartbeatTime: now, lastTransitionTime: now })
  await kube.mergePatch(`/api/v1/nodes/${name}/status`, {
    status: {
      conditions: [
        condition('MemoryPressure', 'False', 'KubeletHasSufficientMemory', 'kubelet has sufficient memory available'),
        condition('DiskPressure', 'False', 'KubeletHasNoDiskPressure', 'kubelet has no disk pressure'),
        condition('PIDPressure', 'False', 'KubeletHasSufficientPID', 'kubelet has sufficient PID available'),
        condition('Ready', 'True', 'KubeletReady', 'kinetic test node agent is posting ready status'),
      ],
      addresses: [{ type: 'InternalIP', address: '127.0.0.1' }, { type: 'Hostname', address: name }],
      daemonEndpoints: { kubeletEndpoint: { Port: port } },
      capacity: { cpu: '2', memory: '4Gi', pods: String(pods) },
      allocatable: { cpu: '2', memory: '4Gi', pods: String(pods) },
      nodeInfo: {
        machineID: '', systemUUID: '', bootID: '', kernelVersion: '', osImage: 'kinetic test node', containerRuntimeVersion: 'local-process://1',
        kubeletVersion: KUBELET_VERSION, kubeProxyVersion: '', operatingSystem: 'linux', architecture: process.arch === 'x64' ? 'amd64' : process.arch,
      },
    },
  })
}

// The node lifecycle controller marks a Node whose Lease is not renewed NotReady, and its pods
// are then evicted; a kubelet renews every 10 s.
async function renewLease(kube: KubeHttp, name: string): Promise<void> {
  const path = `/apis/coordination.k8s.io/v1/namespaces/${LEASE_NS}/leases/${name}`
  const renewTime = new Date().toISOString().replace('Z', '000Z')
  const existing = await kube.get(path)
  if (!existing) {
    await kube.request('POST', `/apis/coordination.k8s.io/v1/namespaces/${LEASE_NS}/leases`, {
      apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name }, spec: { holderIdentity: name, leaseDurationSeconds: 40, renewTime },
    })
    return
  }
  await kube.mergePatch(path, { spec: { renewTime } })
}

function serveLogs(req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse, pods: Map<string, PodEntry>): void {
  const url = new URL(req.url ?? '/', 'https://127.0.0.1')
  const m = /^\/containerLogs\/([^/]+)\/([^/]+)\/([^/]+)$/.exec(url.pathname)
  if (req.method !== 'GET' || !m) {
    res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found')
    return
  }
  const [, ns, podName, container] = m.map((s) => decodeURIComponent(s)) as [string, string, string, string]
  const entry = pods.get(`${ns}/${podName}`)
  if (!entry || entry.container !== container) {
    res.writeHead(404, { 'Content-Type': 'text/plain' }).end(`container "${container}" in pod "${podName}" is not known to this node`)
    return
  }
  if (!entry.run?.running() && !entry.ended && entry.log.length === 0) {
    res.writeHead(400, { 'Content-Type': 'text/plain' }).end(`container "${container}" in pod "${podName}" is waiting to start: ContainerCreating`)
    return
  }
  const q = url.searchParams
  const timestamps = q.get('timestamps') === 'true'
  const render = (from: number) => {
    let text = ''
    for (const chunk of entry.log.slice(from)) {
      text += timestamps ? chunk.text.replace(/^(?=.)/gm, `${chunk.at} `) : chunk.text
    }
    return text
  }
  let text = render(0)
  const tail = q.get('tailLines')
  if (tail !== null) {
    const lines = text.split(/(?<=\n)/)
    text = lines.slice(Math.max(0, lines.length - Number(tail))).join('')
  }
  const limit = q.get('limitBytes')
  if (limit !== null) text = Buffer.from(text).subarray(0, Number(limit)).toString('utf8')
  res.writeHead(200, { 'Content-Type': 'text/plain' })
  if (q.get('follow') !== 'true' || entry.ended) {
    res.end(text)
    return
  }
  res.write(text)
  let sent = entry.log.length
  const follow = () => {
    res.write(render(sent))
    sent = entry.log.length
    if (entry.ended) {
      entry.followers.delete(follow)
      res.end()
    }
  }
  entry.followers.add(follow)
  res.once('close', () => entry.followers.delete(follow))
}

// A self-signed serving certificate for 127.0.0.1; the API server does not verify a
// kubelet's certificate unless --kubelet-certificate-authority is set.
function selfSignedCert(dir: string): { cert: string; key: string } {
  const r = spawnSync('openssl', [
    'req', '-x509', '-new', '-nodes', '-newkey', 'rsa:2048', '-keyout', 'kubelet.key', '-out', 'kubelet.crt', '-days', '2',
    '-subj', '/CN=kinetic-test-node', '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost',
  ], { cwd: dir, encoding: 'utf8' })
  if (r.error || r.status !== 0) throw new Error(`openssl could not make the node agent's certificate: ${r.error?.message ?? r.stderr}`)
  return { cert: readFileSync(join(dir, 'kubelet.crt'), 'utf8'), key: readFileSync(join(dir, 'kubelet.key'), 'utf8') }
}
