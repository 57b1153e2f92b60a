import type { ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import http from 'node:http'
import https from 'node:https'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { KubeConfig } from '@kubernetes/client-node'
import { KubeHttp } from '../local/knative/kube-http.js'
import type { KubeBinary } from './kube-assets.js'
import { makePki, tokenKubeConfig, type NodeServing } from './pki.js'
import { ControlPlaneError, freePorts, sleep, spawnDetached, spawnWithLifeline, stopProcessesUsing, terminate } from './processes.js'

/**
 * A test control plane: etcd, kube-apiserver and optionally kube-controller-manager and
 * kube-scheduler on 127.0.0.1, started and checked for readiness here; their certificates are
 * made by pki.ts and their processes started and stopped by processes.ts.
 */

/** The processes a control plane may start. */
export type ControlPlaneBinary = KubeBinary | 'kube-scheduler'

/** Options of one test control plane. */
export interface ControlPlaneOptions {
  /** Folder holding etcd, kube-apiserver and kube-controller-manager. */
  binDir: string
  /** Also start kube-controller-manager (Jobs -> Pods, garbage collection, namespace deletion). */
  controllerManager?: boolean
  /** How long each component may take to become ready. Default 60 s. */
  readyTimeoutMs?: number
  /** Extra kube-apiserver flags. */
  apiServerArgs?: string[]
  /** The API server's port; default a free one. */
  apiServerPort?: number
  /** Record every request (Metadata level) in an audit log, read back with auditEvents(). */
  auditLog?: boolean
  /**
   * Serve a real node (npm run cluster): listen on this non-loopback address and advertise it,
   * so the `kubernetes` Service has an endpoint pods reach; sign a client certificate the API
   * server shows kubelets (logs, exec); issue static tokens for the node's components.
   */
  node?: NodeServing
  /** Use this folder (created when missing) instead of a fresh temp folder. */
  dir?: string
  /**
   * Let the processes outlive this one (npm run cluster): no lifeline, and stop() is replaced by
   * stopping every process whose command line names the folder (stopProcessesUsing).
   */
  detached?: boolean
  /** Also start kube-scheduler (a real node places pods; the test tier binds them itself). */
  scheduler?: boolean
}

/** One audit record of a request: who did what to which resource, and the answer. */
export interface AuditEvent {
  stage: string
  verb: string
  user: { username: string; groups?: string[] }
  objectRef?: { resource?: string; subresource?: string; apiGroup?: string; namespace?: string; name?: string }
  responseStatus?: { code?: number }
  requestURI: string
}

/** A running etcd + kube-apiserver (+ kube-controller-manager) on 127.0.0.1. */
export interface ControlPlane {
  /** `https://127.0.0.1:<port>` */
  server: string
  /** PEM of the CA that signed the API server's serving certificate. */
  caPem: string
  /** Temp folder with certificates, etcd data, logs and kubeconfigs; removed by stop(). */
  dir: string
  /** kubeconfig file of a `system:masters` identity. */
  adminKubeconfigPath: string
  adminKubeConfig(): KubeConfig
  /** A REST client as the admin. */
  admin: KubeHttp
  /** Milliseconds from the first spawn to every component ready. */
  startMs: number
  /**
   * A kubeconfig whose identity is the ServiceAccount (created when missing), with a token
   * from the TokenRequest API: RBAC applies to it exactly as to a pod of that account.
   */
  serviceAccountKubeconfig(namespace: string, name: string): Promise<{ path: string; kubeConfig: KubeConfig; token: string }>
  /** The completed requests recorded so far (empty unless started with auditLog). */
  auditEvents(): AuditEvent[]
  /** The last lines of a component's log. */
  logTail(component: ControlPlaneBinary, lines?: number): string
  /** Stops exactly the processes this control plane started and removes its folder. */
  stop(): Promise<void>
  /** Paths of the shared PKI: CA certificate and key (a node signs its kubelet's serving certificate with them). */
  pki: { caCert: string; caKey: string }
  /** A kubeconfig file per identity of `node.identities`, by name. */
  identityKubeconfigs: Record<string, string>
}

const SERVICE_CIDR = '10.0.0.0/24'

/**
 * Starts a control plane in a fresh temp folder on free 127.0.0.1 ports and resolves once
 * `/readyz` says ok (and, with the controller manager, once it has created the default
 * ServiceAccount). Every process is tied to this one by a lifeline: if this process dies, they
 * stop too. On any failure everything started so far is stopped before the error is thrown.
 */
export async function startControlPlane(opts: ControlPlaneOptions): Promise<ControlPlane> {
  // A free port picked here can be taken by another test's server before ours binds it; that
  // start fails with "address already in use" and is worth one more try on new ports.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(opts)
    } catch (err) {
      const collided = err instanceof ControlPlaneError && /address already in use/.test(err.message)
      if (!collided || opts.apiServerPort !== undefined || attempt >= 3) throw err
    }
  }
}

async function startOnce(opts: ControlPlaneOptions): Promise<ControlPlane> {
  const t0 = Date.now()
  const timeoutMs = opts.readyTimeoutMs ?? 60_000
  const dir = opts.dir ?? mkdtempSync(join(tmpdir(), 'kinetic-cluster-'))
  mkdirSync(dir, { recursive: true })
  const procs: Array<{ name: ControlPlaneBinary; child: ChildProcess }> = []
  const logFile = (name: ControlPlaneBinary) => join(dir, 'logs', `${name}.log`)
  const logTail = (name: ControlPlaneBinary, lines = 25) => {
    try {
      return readFileSync(logFile(name), 'utf8').trimEnd().split('\n').slice(-lines).join('\n')
    } catch {
      return '(no log)'
    }
  }
  let stopped = false
  const stop = async () => {
    if (stopped) return
    stopped = true
    for (const p of [...procs].reverse()) await terminate(p.child)
    await stopProcessesUsing(dir)
    rmSync(dir, { recursive: true, force: true })
  }

  try {
    for (const b of ['etcd', 'kube-apiserver', ...(opts.controllerManager ? ['kube-controller-manager'] : []), ...(opts.scheduler ? ['kube-scheduler'] : [])]) {
      if (!existsSync(join(opts.binDir, b))) throw new ControlPlaneError(`${b} is missing from ${opts.binDir}`)
    }
    mkdirSync(join(dir, 'logs'))
    mkdirSync(join(dir, 'pki'))
    const pki = makePki(join(dir, 'pki'), opts.node)
    const [etcdPort, etcdPeerPort, freeApiPort, kcmPort, schedulerPort] = await freePorts(5)
    const apiPort = opts.apiServerPort ?? freeApiPort
    const address = opts.node?.address ?? '127.0.0.1'
    const server = `https://${address}:${apiPort}`

    const launch = (name: ControlPlaneBinary, args: string[]) => {
      const child = opts.detached ? spawnDetached(join(opts.binDir, name), args, logFile(name)) : spawnWithLifeline(join(opts.binDir, name), args, logFile(name))
      procs.push({ name, child })
      return child
    }
    const waitFor = async (name: ControlPlaneBinary, what: string, check: () => Promise<boolean>) => {
      const child = procs.find((p) => p.name === name)?.child
      const deadline = Date.now() + timeoutMs
      for (;;) {
        if (child && (child.exitCode !== null || child.signalCode !== null)) {
          throw new ControlPlaneError(`${name} exited (${child.exitCode ?? child.signalCode}) before ${what}; last lines of ${logFile(name)}:\n${logTail(name)}`)
        }
        if (await check().catch(() => false)) return
        if (Date.now() > deadline) throw new ControlPlaneError(`${name} was not ready within ${timeoutMs / 1000} s (${what}); last lines of ${logFile(name)}:\n${logTail(name)}`)
        await sleep(250)
      }
    }

    // A name of its own: a free port picked here can be taken by another test's server before
    // etcd binds it, so readiness asks for this member by name, not just for any healthy etcd.
    const etcdName = `kinetic-${randomBytes(6).toString('hex')}`
    launch('etcd', [
      `--name=${etcdName}`, `--data-dir=${join(dir, 'etcd')}`,
      `--listen-client-urls=http://127.0.0.1:${etcdPort}`, `--advertise-client-urls=http://127.0.0.1:${etcdPort}`,
      `--listen-peer-urls=http://127.0.0.1:${etcdPeerPort}`, `--initial-advertise-peer-urls=http://127.0.0.1:${etcdPeerPort}`,
      `--initial-cluster=${etcdName}=http://127.0.0.1:${etcdPeerPort}`, '--initial-cluster-state=new',
      '--unsafe-no-fsync', '--logger=zap', '--log-outputs=stderr',
    ])
    await waitFor('etcd', `member ${etcdName} at http://127.0.0.1:${etcdPort}`, async () => {
      const members = await httpRequest('POST', `http://127.0.0.1:${etcdPort}/v3/cluster/member/list`, { body: '{}' })
      return members.status === 200 && (JSON.parse(members.body) as { members?: Array<{ name?: string }> }).members?.some((m) => m.name === etcdName) === true &&
        (await httpRequest('GET', `http://127.0.0.1:${etcdPort}/health`)).status === 200
    })

    launch('kube-apiserver', [
      `--etcd-servers=http://127.0.0.1:${etcdPort}`,
      `--bind-address=${address}`, `--secure-port=${apiPort}`, `--advertise-address=${address}`,
      // Loopback cannot go into the kubernetes Endpoints; without a node nothing needs them.
      ...(opts.node ? ['--allow-privileged=true', `--kubelet-client-certificate=${pki.kubeletClientCert}`, `--kubelet-client-key=${pki.kubeletClientKey}`] : ['--endpoint-reconciler-type=none']),
      `--tls-cert-file=${pki.servingCert}`, `--tls-private-key-file=${pki.servingKey}`,
      `--client-ca-file=${pki.caCert}`, `--token-auth-file=${pki.tokens}`,
      '--authorization-mode=Node,RBAC',
      '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
      `--service-account-key-file=${pki.saPublic}`, `--service-account-signing-key-file=${pki.saPrivate}`,
      `--service-cluster-ip-range=${SERVICE_CIDR}`,
      '--kubelet-preferred-address-types=InternalIP',
      `--cert-dir=${join(dir, 'pki')}`,
      ...(opts.auditLog ? auditArgs(dir) : []),
      '--v=1',
      ...(opts.apiServerArgs ?? []),
    ])
    const adminKubeConfig = () => tokenKubeConfig(server, pki.caPem, 'admin', pki.adminToken)
    const adminKubeconfigPath = join(dir, 'admin.kubeconfig')
    writeFileSync(adminKubeconfigPath, adminKubeConfig().exportConfig(), { mode: 0o600 })
    const admin = new KubeHttp(adminKubeConfig())
    await waitFor('kube-apiserver', `${server}/readyz`, async () => {
      // Only this API server accepts this admin token, so another one on the port never passes.
      const res = await httpRequest('GET', `${server}/readyz`, { ca: pki.caPem, token: pki.adminToken })
      return res.status === 200 && res.body.trim() === 'ok'
    })

    if (opts.controllerManager) {
      launch('kube-controller-manager', [
        `--kubeconfig=${adminKubeconfigPath}`, `--authentication-kubeconfig=${adminKubeconfigPath}`, `--authorization-kubeconfig=${adminKubeconfigPath}`,
        '--bind-address=127.0.0.1', `--secure-port=${kcmPort}`,
        '--use-service-account-credentials=true', '--controllers=*',
        `--root-ca-file=${pki.caCert}`, `--service-account-private-key-file=${pki.saPrivate}`,
        `--service-cluster-ip-range=${SERVICE_CIDR}`,
        `--flex-volume-plugin-dir=${join(dir, 'flexvolume')}`,
        '--leader-elect=false', '--v=1',
      ])
      // The serviceaccount controller runs once it has made the default namespace's account.
      await waitFor('kube-controller-manager', 'ServiceAccount default/default', async () =>
        (await admin.get('/api/v1/namespaces/default/serviceaccounts/default')) !== null)
    }
    if (opts.scheduler) {
      launch('kube-scheduler', [
        `--kubeconfig=${adminKubeconfigPath}`, `--authentication-kubeconfig=${adminKubeconfigPath}`, `--authorization-kubeconfig=${adminKubeconfigPath}`,
        '--bind-address=127.0.0.1', `--secure-port=${schedulerPort}`, '--leader-elect=false', '--v=1',
      ])
      await waitFor('kube-scheduler', `https://127.0.0.1:${schedulerPort}/healthz`, async () =>
        (await httpRequest('GET', `https://127.0.0.1:${schedulerPort}/healthz`, { insecure: true })).status === 200)
    }
    const identityKubeconfigs: Record<string, string> = {}
    for (const [name, identity] of Object.entries(opts.node?.identities ?? {})) {
      const path = join(dir, `${name}.kubeconfig`)
      writeFileSync(path, tokenKubeConfig(server, pki.caPem, identity.user, pki.identityTokens[name] as string).exportConfig(), { mode: 0o600 })
      identityKubeconfigs[name] = path
    }

    const serviceAccountKubeconfig = async (namespace: string, name: string) => {
      if (!(await admin.get(`/api/v1/namespaces/${namespace}`))) {
        await admin.request('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } })
      }
      if (!(await admin.get(`/api/v1/namespaces/${namespace}/serviceaccounts/${name}`))) {
        await admin.request('POST', `/api/v1/namespaces/${namespace}/serviceaccounts`, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name } })
      }
      const req = await admin.request<{ status: { token: string } }>('POST', `/api/v1/namespaces/${namespace}/serviceaccounts/${name}/token`, {
        apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 3600 },
      })
      const kubeConfig = tokenKubeConfig(server, pki.caPem, `${namespace}-${name}`, req.status.token)
      const path = join(dir, `sa-${namespace}-${name}.kubeconfig`)
      writeFileSync(path, kubeConfig.exportConfig(), { mode: 0o600 })
      return { path, kubeConfig, token: req.status.token }
    }

    return {
      server, caPem: pki.caPem, dir, adminKubeconfigPath, adminKubeConfig, admin,
      startMs: Date.now() - t0, serviceAccountKubeconfig, logTail, stop,
      pki: { caCert: pki.caCert, caKey: join(dir, 'pki', 'ca.key') }, identityKubeconfigs,
      auditEvents: () => readAudit(join(dir, 'audit.log')),
    }
  } catch (err) {
    await stop()
    throw err
  }
}

// Metadata level: verb, user and object of every request, no bodies (which may hold Secrets).
function auditArgs(dir: string): string[] {
  const policy = join(dir, 'audit-policy.yaml')
  writeFileSync(policy, 'apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n  - level: Metadata\n')
  return [`--audit-policy-file=${policy}`, `--audit-log-path=${join(dir, 'audit.log')}`, '--audit-log-format=json', '--audit-log-mode=blocking']
}

function readAudit(file: string): AuditEvent[] {
  if (!existsSync(file)) return []
  return readFileSync(file, 'utf8').split('\n').filter((l) => l.length > 0)
    .map((l) => JSON.parse(l) as AuditEvent)
    .filter((e) => e.stage === 'ResponseComplete')
}

function httpRequest(method: string, url: string, opts: { ca?: string; token?: string; body?: string; insecure?: boolean } = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const u = new URL(url)
    const mod = u.protocol === 'https:' ? https : http
    const req = mod.request(u, {
      method, timeout: 2000,
      ...(opts.ca ? { ca: opts.ca } : {}),
      ...(opts.insecure ? { rejectUnauthorized: false } : {}),
      headers: opts.token ? { Authorization: `Bearer ${opts.token}` } : {},
    }, (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (c: string) => { body += c })
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }))
    })
    req.on('timeout', () => req.destroy(new Error('timeout')))
    req.on('error', reject)
    req.end(opts.body)
  })
}
