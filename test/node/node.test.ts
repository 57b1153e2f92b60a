// The node tier: a real one-node Kubernetes (npm run cluster's startNode: the control plane built
// from the Go module registry, kubelet with Debian's containerd and runc, CNI bridge networking,
// kube-proxy in iptables mode, CoreDNS) runs Kinetic's own image, built with npm run image into
// the node's local registry. Needs root and the Debian packages; skipped with one line otherwise
// (KINETIC_REQUIRE_NODE=1, set by CI, makes that a failure).
import { execFile } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { processesUsing } from '../../cluster/processes.js'
import { KUBE_VERSIONS } from '../../cluster/versions.mjs'
import { NODE_NAME, startNode, stopNode, type RunningNode } from '../../cluster/node/index.js'
import { linkExists, mountsUnder, netnsNames, nodeChains } from '../../cluster/node/host.js'
import { POD_NETWORK } from '../../cluster/node/containerd.js'
import { REPO_ROOT } from '../../local/jobs/step-process.js'
import type { KubeObject } from '../../local/knative/kube-http.js'
import { startLocalPlane, type LocalPlane } from '../../local/plane.js'
import { freePort } from '../../local/free-port.js'
import { eventually } from '../support/eventually.js'
import { serviceEnv } from '../image/entry-points.js'
import { grantNamespace } from '../cluster/namespace-grants.js'
import { describeNode, nodeBinDir } from './tier.js'
import { lockNode } from '../support/node-lock.js'

const run = promisify(execFile)

function cniCacheEntries(): string[] {
  return existsSync('/var/lib/cni/results') ? readdirSync('/var/lib/cni/results').sort() : []
}
const NS = 'node-tier'

describeNode('a real node (npm run cluster): Kinetic\'s image as Pods and Jobs on kubelet, containerd, CNI, kube-proxy and CoreDNS', () => {
  const work = mkdtempSync(join(tmpdir(), 'kinetic-node-tier-'))
  const dir = join(work, 'node')
  const netnsBefore = netnsNames()
  const forwardingBefore = readFileSync('/proc/sys/net/ipv4/ip_forward', 'utf8')
  const cniCacheBefore = cniCacheEntries()
  let node: RunningNode
  let image: string
  let unlock: (() => void) | undefined
  const kubectl = async (...args: string[]) =>
    (await run(join(nodeBinDir(), 'kubectl'), ['--kubeconfig', node.kubeconfig, ...args], { maxBuffer: 16 * 1024 * 1024 })).stdout

  beforeAll(async () => {
    unlock = await lockNode()
    const [apiServerPort, registryPort] = [await freePort(), await freePort()]
    node = await startNode({ dir, binDir: nodeBinDir(), apiServerPort, registryPort, log: (line) => console.log(`node: ${line}`) })
    const t = node.timings
    console.log(`node: control plane ${(t.controlPlaneMs / 1000).toFixed(1)} s, Node Ready ${(t.nodeReadyMs / 1000).toFixed(1)} s, cluster DNS ${(t.dnsReadyMs / 1000).toFixed(1)} s`)
    // The documented way: npm run build, npm run image:base and npm run image, to the node's registry.
    const dist = join(work, 'dist')
    await run(process.execPath, [join(REPO_ROOT, 'scripts', 'build.mjs'), '--outdir', dist], { cwd: REPO_ROOT, maxBuffer: 16 * 1024 * 1024 })
    const base = (await run(process.execPath, [join(REPO_ROOT, 'scripts', 'build-base-image.mjs'), '--to', `${node.registry}/kinetic-base:20`, '--insecure'], { cwd: REPO_ROOT })).stdout.trim()
    image = (await run(process.execPath, [join(REPO_ROOT, 'scripts', 'build-image.mjs'), '--base', base, '--to', `${node.registry}/kinetic:dev`, '--dist', dist, '--insecure'], { cwd: REPO_ROOT })).stdout.trim()
    expect(image).toMatch(new RegExp(`^${node.registry.replace(/\./g, '\\.')}/kinetic@sha256:[0-9a-f]{64}$`))
    await kubectl('create', 'namespace', NS)
  }, 1_800_000)

  afterAll(async () => {
    try {
      await stopNode(dir)
    } finally {
      unlock?.()
    }
    rmSync(work, { recursive: true, force: true })
  }, 120_000)

  it('registers a Ready node whose kubelet, built from the registry, runs containerd', async () => {
    const n = JSON.parse(await kubectl('get', 'node', NODE_NAME, '-o', 'json')) as { status: { nodeInfo: Record<string, string>; addresses: Array<{ type: string; address: string }> } }
    expect(n.status.nodeInfo.kubeletVersion).toBe(KUBE_VERSIONS.kubernetes)
    expect(n.status.nodeInfo.containerRuntimeVersion).toMatch(/^containerd:\/\//)
    expect(n.status.addresses).toContainEqual({ type: 'InternalIP', address: node.address })
    expect(await kubectl('version', '-o', 'json')).toContain(`"gitVersion": "${KUBE_VERSIONS.kubernetes}"`)
  })

  it('runs a function of Kinetic\'s image as a Pod that another Pod reaches by its Service name over cluster DNS; kubectl logs and exec work', async () => {
    const env = { ...serviceEnv(REPO_ROOT, 'dead-letter'), PORT: '8080', LOG_LEVEL: 'info' }
    const fn: KubeObject = {
      apiVersion: 'v1', kind: 'Pod',
      metadata: { name: 'dead-letter', namespace: NS, labels: { app: 'dead-letter' } },
      spec: {
        securityContext: { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } },
        containers: [{
          name: 'fn', image, command: ['node', 'dist/functions/dead-letter/main.js'],
          env: Object.entries(env).map(([name, value]) => ({ name, value })),
          ports: [{ containerPort: 8080 }],
          readinessProbe: { httpGet: { path: '/health/readiness', port: 8080 }, periodSeconds: 1 },
          securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
        }],
      },
    }
    const service: KubeObject = {
      apiVersion: 'v1', kind: 'Service', metadata: { name: 'dead-letter', namespace: NS },
      spec: { selector: { app: 'dead-letter' }, ports: [{ port: 80, targetPort: 8080 }] },
    }
    await node.admin.apply(fn, NS)
    await node.admin.apply(service, NS)
    await kubectl('wait', '-n', NS, '--for=condition=Ready', 'pod/dead-letter', '--timeout=180s')

    // A second Pod, as a Job: it resolves the Service's name with CoreDNS and goes through kube-proxy.
    // A Ready pod reaches the Service's EndpointSlice, then kube-proxy's rules, a moment later
    // (until then the Service rejects connections): wait for the endpoint, and let the probe retry.
    await eventually('a ready endpoint behind the dead-letter Service', async () => {
      const slices = await node.admin.get<{ items: Array<{ endpoints?: Array<{ conditions?: { ready?: boolean } }> }> }>(`/apis/discovery.k8s.io/v1/namespaces/${NS}/endpointslices?labelSelector=kubernetes.io%2Fservice-name%3Ddead-letter`)
      return slices?.items.some((s) => s.endpoints?.some((e) => e.conditions?.ready)) === true
    }, 60_000)
    const probe = `const url = 'http://dead-letter.${NS}.svc.cluster.local/health/readiness'
      const attempt = (left) => fetch(url).then((r) => console.log('readiness answered ' + r.status), (e) => {
        if (left > 0) return new Promise((r) => setTimeout(r, 1000)).then(() => attempt(left - 1))
        console.log('failed ' + e.cause?.code); process.exit(1)
      })
      attempt(20)`
    await node.admin.apply({
      apiVersion: 'batch/v1', kind: 'Job', metadata: { name: 'reach-by-name', namespace: NS },
      spec: {
        backoffLimit: 0,
        template: { spec: { restartPolicy: 'Never', containers: [{ name: 'probe', image, command: ['node', '-e', probe] }] } },
      },
    }, NS)
    const finished = await eventually('Job reach-by-name to finish', async () => {
      const job = await node.admin.get<{ status?: { conditions?: Array<{ type: string; status: string }> } }>(`/apis/batch/v1/namespaces/${NS}/jobs/reach-by-name`)
      return job?.status?.conditions?.find((c) => ['Complete', 'Failed'].includes(c.type) && c.status === 'True')?.type
    }, 300_000, 1000)
    const probeLog = await kubectl('logs', '-n', NS, 'job/reach-by-name')
    expect({ finished, probeLog }).toEqual({ finished: 'Complete', probeLog: 'readiness answered 204\n' })

    // The function's own log, through the API server from the kubelet.
    expect(await kubectl('logs', '-n', NS, 'dead-letter')).toMatch(/listening|ready|"level"/i)
    // exec runs in the container: the image's non-root user, the pod's hostname.
    const who = await kubectl('exec', '-n', NS, 'dead-letter', '--', 'node', '-e', 'console.log(process.getuid() + " " + require("os").hostname())')
    expect(who.trim()).toBe('65532 dead-letter')
  }, 420_000)

  it('runs a Workflow whose step Job runs the executor from the image; step-job-finished reads its OUTPUT line through pods/log', async () => {
    let plane: LocalPlane | undefined
    try {
      plane = await startLocalPlane({
        root: REPO_ROOT,
        cluster: { kubeConfig: node.kubeConfig, kubeconfigPath: node.kubeconfig },
        jobs: 'cluster',
        logDir: join(work, 'logs'),
        identityDir: join(work, 'identities'),
        pingIntervalMs: 2000,
      })
      const ns = `${NS}-run`
      await node.admin.apply({
        apiVersion: 'v1', kind: 'Namespace',
        metadata: { name: ns, labels: { 'pod-security.kubernetes.io/enforce': 'restricted' } },
      })
      // Opted in as docs/guide/security.md says: the functions' grants there.
      await grantNamespace(node.admin, ns)
      await eventually('the default ServiceAccount', () => node.admin.get(`/api/v1/namespaces/${ns}/serviceaccounts/default`).then((sa) => sa ?? undefined), 60_000)
      await node.admin.apply({
        apiVersion: 'purko.io/v1alpha1', kind: 'Agent', metadata: { name: 'writer', namespace: ns },
        spec: { model: { provider: 'offline', name: 'scripted' }, runtime: { image } },
      }, ns)
      await node.admin.apply({
        apiVersion: 'purko.io/v1alpha1', kind: 'Workflow', metadata: { name: 'on-a-node', namespace: ns },
        spec: {
          steps: [
            { name: 'draft', agentRef: { name: 'writer' }, input: { task: 'Draft a line about nodes.' } },
            { name: 'review', agentRef: { name: 'writer' }, dependsOn: ['draft'], input: { task: 'Review: ${steps.draft.output.response}' } },
          ],
        },
      }, ns)
      const done = await eventually('the Workflow to finish', async () => {
        const wf = await node.admin.get<{ status?: { phase?: string } }>(`/apis/purko.io/v1alpha1/namespaces/${ns}/workflows/on-a-node`)
        return ['Succeeded', 'Failed'].includes(wf?.status?.phase ?? '') ? wf : undefined
      }, 300_000, 1000)
      expect(done?.status?.phase).toBe('Succeeded')
      const outputs = await node.admin.get<{ data?: Record<string, string> }>(`/api/v1/namespaces/${ns}/configmaps/on-a-node-outputs`)
      const draft = JSON.parse(outputs?.data?.draft ?? '{}') as { response?: string }
      const review = JSON.parse(outputs?.data?.review ?? '{}') as { response?: string }
      expect(draft.response).toContain('Draft a line about nodes.')
      // The second step's prompt carried the first step's output: it flowed through the ConfigMap.
      expect(review.response).toContain(draft.response)
      // The steps ran as real Pods of the image on this node.
      const pods = JSON.parse(await kubectl('get', 'pods', '-n', ns, '-l', 'purko.io/workflow=on-a-node', '-o', 'json')) as { items: Array<{ spec: { nodeName: string }; status: { containerStatuses: Array<{ imageID: string }> } }> }
      expect(pods.items.length).toBeGreaterThanOrEqual(2)
      for (const pod of pods.items) {
        expect(pod.spec.nodeName).toBe(NODE_NAME)
        expect(pod.status.containerStatuses[0]?.imageID).toContain(image.split('@')[1] as string)
      }
    } finally {
      await plane?.stop()
    }
  }, 600_000)

  it('a second node refuses to start beside this one, and stopping its folder leaves this node\'s network in place', async () => {
    const other = join(work, 'other-node')
    const [apiServerPort, registryPort] = [await freePort(), await freePort()]
    await expect(startNode({ dir: other, binDir: nodeBinDir(), apiServerPort, registryPort })).rejects.toThrow(/another node's network is in place/)
    // What a test's afterAll does after a start that failed: nothing of the running node goes.
    await stopNode(other)
    expect(linkExists(POD_NETWORK.bridge)).toBe(true)
    expect(nodeChains().length).toBeGreaterThan(0)
    const answer = await kubectl('get', '--raw', '/readyz')
    expect(answer.trim()).toBe('ok')
  }, 120_000)

  it('npm run cluster -- --stop leaves no process, mount, network namespace, bridge or iptables chain behind', async () => {
    const removed = await stopNode(dir)
    expect(removed.join(', ')).toMatch(/processes/)
    expect(processesUsing(dir)).toEqual([])
    expect(nodeChains()).toEqual([])
    expect(linkExists(POD_NETWORK.bridge)).toBe(false)
    expect(netnsNames().filter((n) => !netnsBefore.includes(n))).toEqual([])
    expect(mountsUnder(dir)).toEqual([])
    expect(cniCacheEntries()).toEqual(cniCacheBefore)
    expect(existsSync(dir)).toBe(false)
    // The kernel setting it turned on for pod traffic is back as it was.
    expect(readFileSync('/proc/sys/net/ipv4/ip_forward', 'utf8')).toBe(forwardingBefore)
  }, 120_000)
})
