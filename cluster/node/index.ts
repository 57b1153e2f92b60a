// A one-node Kubernetes on this machine, the way kind makes one for Docker users: the control
// plane built from the Go module registry, containerd and runc from Debian, CNI bridge networking,
// kube-proxy and cluster DNS, images from a local registry. Its processes outlive the command that
// starts them; stopNode() removes exactly what startNode() made.
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import type { KubeConfig } from '@kubernetes/client-node'
import type { KubeHttp } from '../../local/knative/kube-http.js'
import { startControlPlane } from '../control-plane.js'
import { processesUsing, stopProcessesUsing } from '../processes.js'
import { POD_NETWORK, removeAllContainers, startContainerd } from './containerd.js'
import { clusterDnsObjects } from './dns.js'
import {
  NodeError, applySysctls, assertPortsFree, defaultRouteAddress, deleteLink, linkExists, netnsNames,
  nodeChains, nodePrerequisiteGap, removeNewNetns, removeNodeChains, restoreSysctls, unmountUnder,
} from './host.js'
import { buildPause, pushBinaryImage, startRegistry } from './images.js'
import { startKubelet, startKubeProxy } from './kubelet.js'

export { NodeError, nodePrerequisiteGap } from './host.js'

export interface NodeOptions {
  /** The node's folder: configs, logs, state, container storage. Removed by stopNode(). */
  dir: string
  /** Folder with the binaries of `npm run cluster:build`. */
  binDir: string
  apiServerPort?: number
  registryPort?: number
  kubeletPort?: number
  /** Record every request's metadata in `<dir>/control-plane/audit.log` (JSON lines; for measuring API calls). */
  auditLog?: boolean
  /** Progress lines. */
  log?: (line: string) => void
}

export interface RunningNode {
  dir: string
  nodeName: string
  /** The node's InternalIP; the API server listens here. */
  address: string
  server: string
  /** An admin kubeconfig (`system:masters`), as a file and loaded. */
  kubeconfig: string
  kubeConfig: KubeConfig
  admin: KubeHttp
  /** `127.0.0.1:<port>`: push images here, reference them by digest in pods. */
  registry: string
  /** Milliseconds from the start to: control plane ready, node Ready, cluster DNS ready. */
  timings: { controlPlaneMs: number; nodeReadyMs: number; dnsReadyMs: number }
}

/** What stopNode() must undo, written before anything is started. */
interface NodeState {
  sysctls: Record<string, string>
  netnsBefore: string[]
  cniCacheBefore: string[]
  cniCacheExisted: boolean
}

export const NODE_NAME = 'kinetic-node'
const CNI_CACHE = '/var/lib/cni/results'

/** Starts a node in `opts.dir`; on any failure everything started so far is stopped and the error thrown. */
export async function startNode(opts: NodeOptions): Promise<RunningNode> {
  const say = opts.log ?? (() => {})
  const t0 = Date.now()
  const dir = resolve(opts.dir)
  const gap = nodePrerequisiteGap()
  if (gap) throw new NodeError('host', gap)
  if (existsSync(join(dir, 'state.json')) || processesUsing(dir).length > 0) {
    throw new NodeError('node', `a node is already running in ${dir} (stop it with npm run cluster -- --stop)`)
  }
  const leftovers = nodeChains()
  if (leftovers.length > 0 || linkExists(POD_NETWORK.bridge)) {
    throw new NodeError('host', `another node's network is in place (${[...leftovers.slice(0, 3), ...(linkExists(POD_NETWORK.bridge) ? [POD_NETWORK.bridge] : [])].join(', ')}): stop that node first`)
  }
  for (const [name, file] of [['kube-scheduler', 'kube-scheduler'], ['kubelet', 'kubelet'], ['kube-proxy', 'kube-proxy'], ['coredns', 'coredns']]) {
    if (!existsSync(join(opts.binDir, file as string))) throw new NodeError(name as string, `${join(opts.binDir, file as string)} is missing (run npm run cluster:build)`)
  }
  const address = defaultRouteAddress()
  const apiServerPort = opts.apiServerPort ?? 6443
  const registryPort = opts.registryPort ?? 5000
  const kubeletPort = opts.kubeletPort ?? 10250
  await assertPortsFree(address, [{ port: apiServerPort, what: 'kube-apiserver' }, { port: kubeletPort, what: 'kubelet' }])
  await assertPortsFree('127.0.0.1', [{ port: registryPort, what: 'registry' }])

  mkdirSync(join(dir, 'logs'), { recursive: true })
  const log = (name: string) => join(dir, 'logs', `${name}.log`)
  const state: NodeState = { sysctls: {}, netnsBefore: netnsNames(), cniCacheBefore: cniCache(), cniCacheExisted: existsSync('/var/lib/cni') }
  writeState(dir, state)
  try {
    state.sysctls = applySysctls()
    writeState(dir, state)

    say(`registry: docker-registry on 127.0.0.1:${registryPort}`)
    await startRegistry(dir, registryPort, log('registry'))
    const pause = await pushBinaryImage(registryPort, { repository: 'kinetic/pause', tag: 'latest', path: '/pause', binary: buildPause(dir, log('pause')), user: '65535:65535' })
    const coredns = await pushBinaryImage(registryPort, { repository: 'kinetic/coredns', tag: 'latest', path: '/coredns', binary: join(opts.binDir, 'coredns'), user: '65532:65532' })
    say(`images: ${pause}, ${coredns}`)

    say('containerd: starting')
    await startContainerd({ dir, registryPort, sandboxImage: pause, log: log('containerd') })

    say('control plane: etcd, kube-apiserver, kube-controller-manager, kube-scheduler')
    const cp = await startControlPlane({
      binDir: opts.binDir,
      dir: join(dir, 'control-plane'),
      detached: true,
      controllerManager: true,
      scheduler: true,
      apiServerPort,
      ...(opts.auditLog ? { auditLog: true } : {}),
      readyTimeoutMs: 120_000,
      node: {
        address,
        identities: {
          kubelet: { user: `system:node:${NODE_NAME}`, groups: ['system:nodes'] },
          'kube-proxy': { user: 'system:kube-proxy', groups: [] },
        },
      },
    })
    const controlPlaneMs = Date.now() - t0
    say(`control plane ready at ${cp.server} (${(controlPlaneMs / 1000).toFixed(1)} s)`)

    startKubelet({
      dir, binDir: opts.binDir, nodeName: NODE_NAME, address, caCert: cp.pki.caCert, caKey: cp.pki.caKey,
      kubeconfig: cp.identityKubeconfigs.kubelet as string, port: kubeletPort, healthzPort: 10248, log: log('kubelet'),
    })
    startKubeProxy({
      dir, binDir: opts.binDir, nodeName: NODE_NAME, address, kubeconfig: cp.identityKubeconfigs['kube-proxy'] as string,
      healthzPort: 10256, metricsPort: 10249, log: log('kube-proxy'),
    })
    const admin = cp.admin
    await waitUntil('kubelet', `Node ${NODE_NAME} Ready`, 120_000, log('kubelet'), dir, 'kubelet', async () => {
      const node = await admin.get<{ status?: { conditions?: Array<{ type: string; status: string }> } }>(`/api/v1/nodes/${NODE_NAME}`)
      return node?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true
    })
    const nodeReadyMs = Date.now() - t0
    say(`node ${NODE_NAME} Ready at ${address} (${(nodeReadyMs / 1000).toFixed(1)} s)`)

    for (const obj of clusterDnsObjects(coredns)) await admin.apply(obj, 'kube-system')
    await waitUntil('coredns', 'Deployment kube-system/coredns available', 180_000, log('kubelet'), dir, 'kubelet', async () => {
      const d = await admin.get<{ status?: { readyReplicas?: number } }>('/apis/apps/v1/namespaces/kube-system/deployments/coredns')
      return (d?.status?.readyReplicas ?? 0) >= 1
    })
    const dnsReadyMs = Date.now() - t0
    say(`cluster DNS ready at 10.0.0.10 (${(dnsReadyMs / 1000).toFixed(1)} s)`)

    const kubeconfig = join(dir, 'kubeconfig')
    copyFileSync(cp.adminKubeconfigPath, kubeconfig)
    return {
      dir, nodeName: NODE_NAME, address, server: cp.server, kubeconfig, kubeConfig: cp.adminKubeConfig(), admin,
      registry: `127.0.0.1:${registryPort}`, timings: { controlPlaneMs, nodeReadyMs, dnsReadyMs },
    }
  } catch (err) {
    await stopNode(dir).catch(() => undefined)
    throw err
  }
}

/**
 * Stops the node in `dir` and removes what it made: its processes and containers, their mounts
 * and network namespaces, the pod bridge, the KUBE-/CNI- iptables chains, the kernel settings
 * it changed, the CNI cache entries and the folder. Returns what it removed, one line each.
 */
export async function stopNode(dirIn: string): Promise<string[]> {
  const dir = resolve(dirIn)
  const done: string[] = []
  const stateFile = join(dir, 'state.json')
  const state: NodeState | undefined = existsSync(stateFile) ? JSON.parse(readFileSync(stateFile, 'utf8')) : undefined
  // The kubelet first, so nothing restarts the containers removed next.
  const kubelet = processesUsing(dir).filter((pid) => commandOf(pid).endsWith('/kubelet'))
  for (const pid of kubelet) process.kill(pid, 'SIGTERM')
  for (let i = 0; i < 100 && processesUsing(dir).some((pid) => kubelet.includes(pid)); i++) await new Promise((r) => setTimeout(r, 100))
  removeAllContainers(dir)
  const procs = processesUsing(dir).length
  await stopProcessesUsing(dir, 10_000)
  if (procs > 0) done.push(`${procs} processes`)
  // The network (iptables chains, the bridge) is the machine's, not the folder's: only a folder
  // that held a node takes it down, so stopping a test's node that never started leaves another
  // node running (npm run cluster) intact.
  const heldNode = state !== undefined || procs > 0
  const chains = heldNode ? nodeChains() : []
  if (chains.length > 0) {
    removeNodeChains()
    done.push(`${chains.length} iptables chains`)
  }
  if (state) {
    const netns = netnsNames().filter((n) => !state.netnsBefore.includes(n))
    removeNewNetns(state.netnsBefore)
    if (netns.length > 0) done.push(`${netns.length} network namespaces`)
    // The CNI library caches each attachment's result outside our folder.
    for (const f of cniCache()) if (!state.cniCacheBefore.includes(f)) rmSync(join(CNI_CACHE, f), { force: true })
    if (!state.cniCacheExisted) for (const d of [CNI_CACHE, '/var/lib/cni']) rmEmptyDir(d)
    restoreSysctls(state.sysctls)
  }
  if (heldNode && linkExists(POD_NETWORK.bridge)) {
    deleteLink(POD_NETWORK.bridge)
    done.push(`bridge ${POD_NETWORK.bridge}`)
  }
  unmountUnder(dir)
  if (existsSync(dir)) {
    rmSync(dir, { recursive: true, force: true })
    done.push(dir)
  }
  return done
}

function writeState(dir: string, state: NodeState): void {
  writeFileSync(join(dir, 'state.json'), JSON.stringify(state, null, 2))
}

function cniCache(): string[] {
  try {
    return readdirSync(CNI_CACHE)
  } catch {
    return []
  }
}

function rmEmptyDir(dir: string): void {
  try {
    if (readdirSync(dir).length === 0) rmSync(dir, { recursive: true })
  } catch {
    // not there
  }
}

function commandOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0] ?? ''
  } catch {
    return ''
  }
}

async function waitUntil(component: string, what: string, timeoutMs: number, log: string, dir: string, binary: string, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    if (await check().catch(() => false)) return
    if (!processesUsing(dir).some((pid) => commandOf(pid).endsWith(`/${binary}`))) throw new NodeError(component, `${binary} exited before ${what}`, log)
    if (Date.now() > deadline) throw new NodeError(component, `not ready within ${timeoutMs / 1000} s (${what})`, log)
    await new Promise((r) => setTimeout(r, 500))
  }
}
