import { spawn, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { createWriteStream, existsSync, mkdirSync, writeFileSync, type WriteStream } from 'node:fs'
import { dirname, join } from 'node:path'
import type { KubeConfig } from '@kubernetes/client-node'
import { silentLogger, type Logger } from '../shared/log.js'
import { startApiServer, type ApiServer } from './apiserver/index.js'
import { serviceAccountIdentities, type Identities } from './identities.js'
import { startJobRunner, type JobRunner } from './jobs/runner.js'
import { REPO_ROOT } from './jobs/step-process.js'
import { startKnativeEmulation, type KnativeEmulation } from './knative/emulation.js'
import { KubeHttp, type KubeObject } from './knative/kube-http.js'
import { loadKnativeManifests, type Manifest } from './knative/manifests.js'
import { ensurePingSourceKind } from './knative/pingsource-crd.js'
import { startWorkloadControllers, type WorkloadControllers } from './workloads/controllers.js'
import { freePort } from './free-port.js'
import { installCrds, readCrds } from './crds.js'
import { PID_HEADER } from '../shared/http/app.js'

/** An existing cluster to run against instead of the embedded API server. */
export interface ClusterTarget {
  /**
   * The identity that installs crds/ and the RBAC objects of knative/ and issues the
   * ServiceAccount tokens (it needs rights to create CRDs, ClusterRoles and bindings).
   */
  kubeConfig: KubeConfig
  /** The file it came from, for messages and kubectl hints. */
  kubeconfigPath?: string
}

/** Who runs the pods of step Jobs. */
export type JobsMode =
  /** The local Job runner (embedded API server only: it serves the pod logs itself). */
  | 'local'
  /** The cluster's Job controller and nodes (or, in the cluster test tier, the test node agent). */
  | 'cluster'

/** Options of the local control plane. */
export interface LocalPlaneOptions {
  /** Repository root holding crds/, knative/ and functions/. Default: this checkout. */
  root?: string
  /**
   * Where the API server is: unset starts the embedded one; a cluster target runs the
   * functions and the Knative emulation locally against that cluster, each function as its
   * own ServiceAccount (its Service's `serviceAccountName`) and each ApiServerSource as its
   * own, with tokens from the TokenRequest API.
   */
  cluster?: ClusterTarget
  /** Who runs step Jobs' pods. Default 'local' on the embedded API server, 'cluster' with `cluster`. */
  jobs?: JobsMode
  /** CRDs to install. Default `<root>/crds`. */
  crdsDir?: string
  /** Embedded API server port on 127.0.0.1; 0 (default) picks a free one. */
  port?: number
  log?: Logger
  /** Where the embedded API server's kubeconfig is written. Default `<root>/.kinetic/kubeconfig`. */
  kubeconfigPath?: string
  /** With `cluster`: where the ServiceAccount kubeconfigs and tokens go (removed on stop). Default `<root>/.kinetic/identities/<pid>`. */
  identityDir?: string
  /** Image of step Jobs (the functions' KINETIC_EXECUTOR_IMAGE); default the Services' own. */
  executorImage?: string
  /** Folder for each function's stdout/stderr (`<name>.log`). Default `<root>/.kinetic/logs`. */
  logDir?: string
  /** Fast-forward every PingSource to this interval (demo, tests). Default: their schedules. */
  pingIntervalMs?: number
  /** Step processes at once. Default 4. */
  jobConcurrency?: number
  /** Divides Job TTLs and pod-failure backoff. Default 1. */
  jobTimeScale?: number
  /** Extra environment for every function process. */
  functionEnv?: Record<string, string>
  /** How long each function may take to become ready. Default 60 s. */
  readinessTimeoutMs?: number
  /**
   * Run the workload controller emulation (local/workloads/: Deployments, ReplicaSets,
   * StatefulSets, DaemonSets, CronJobs and their pods) on the embedded API server. Default
   * true; ignored with `cluster`, whose controller manager does this.
   */
  workloads?: boolean
}

/** A function process serving one Knative Service. */
export interface LocalFunction {
  name: string
  url: string
  pid: number | undefined
  logFile: string
  /** The kubeconfig the process uses. */
  kubeconfigPath: string
  /** `system:serviceaccount:<ns>:<sa>` with `cluster`; undefined on the embedded API server (its admin). */
  identity?: string
  /** An MCP server function (recipes-mcp): its endpoint and how it checks callers here. */
  mcp?: { url: string; auth: string }
}

/** The running plane. */
export interface LocalPlane {
  /** The embedded API server; undefined with `cluster`. */
  apiServer?: ApiServer
  /** URL of the API server in use. */
  server: string
  /** The installing identity (the embedded server's admin, or the cluster target's). */
  kubeConfig: KubeConfig
  /** Its kubeconfig file; '' when a cluster target came without one. */
  kubeconfigPath: string
  kube: KubeHttp
  knative: KnativeEmulation
  /** The local Job runner; undefined when the cluster runs the pods. */
  jobs?: JobRunner
  /** The workload controller emulation; undefined with `cluster` or `workloads: false`. */
  workloads?: WorkloadControllers
  functions: Map<string, LocalFunction>
  /** Stops everything it started, child processes included. */
  stop(): Promise<void>
}

/**
 * Starts the plane: the API server (embedded, or the cluster target's) with crds/ and the
 * supporting objects of knative/ installed, every Knative Service of knative/ as a local
 * function process (`scripts/run-function.ts <name>`, the same entry point as the image) with
 * `PORT` and `KUBECONFIG`, the Knative emulation from knative/, when `jobs` is 'local' the Job
 * runner, and on the embedded API server the workload controller emulation (local/workloads/).
 * Resolves once the functions answer their readiness probe and the sources watch.
 */
export async function startLocalPlane(opts: LocalPlaneOptions = {}): Promise<LocalPlane> {
  const root = opts.root ?? REPO_ROOT
  const log = opts.log ?? silentLogger
  const logDir = opts.logDir ?? join(root, '.kinetic', 'logs')
  const children = new Map<string, ChildProcess>()
  const streams: WriteStream[] = []
  let stopping = false
  const cleanups: Array<() => Promise<void>> = []
  // Last resort if the parent dies without calling stop(): no function process outlives it.
  const killAll = () => { for (const c of children.values()) if (c.exitCode === null) c.kill('SIGKILL') }
  process.once('exit', killAll)

  const stop = async () => {
    if (stopping) return
    stopping = true
    for (const fn of cleanups.reverse()) {
      try {
        await fn()
      } catch (err) {
        log.warn({ err: String(err) }, 'Error while stopping the local plane')
      }
    }
    process.removeListener('exit', killAll)
  }

  try {
    const jobsMode = opts.jobs ?? (opts.cluster ? 'cluster' : 'local')
    if (opts.cluster && jobsMode === 'local') throw new Error("jobs: 'local' needs the embedded API server (the Job runner serves pod logs through it)")
    let apiServer: ApiServer | undefined
    let kubeConfig: KubeConfig
    let kubeconfigPath: string
    if (opts.cluster) {
      kubeConfig = opts.cluster.kubeConfig
      kubeconfigPath = opts.cluster.kubeconfigPath ?? ''
    } else {
      const embedded = await startApiServer({ port: opts.port ?? 0, log })
      apiServer = embedded
      cleanups.push(() => embedded.close())
      kubeconfigPath = opts.kubeconfigPath ?? join(root, '.kinetic', 'kubeconfig')
      mkdirSync(dirname(kubeconfigPath), { recursive: true })
      writeFileSync(kubeconfigPath, embedded.kubeconfig(), { mode: 0o600 })
      kubeConfig = embedded.kubeConfigObject()
    }
    const kube = new KubeHttp(kubeConfig)

    const crdsDir = opts.crdsDir ?? join(root, 'crds')
    const crds = readCrds(crdsDir)
    if (crds.length === 0) throw new Error(`No CustomResourceDefinitions found in ${crdsDir} (run npm run generate:crds)`)
    await installCrds(kube, crds, log)
    // Templates' schedules are PingSources made at run time; an API server without Knative gets our own kind.
    await ensurePingSourceKind(kube, log)

    const manifests = loadKnativeManifests(join(root, 'knative'))
    await applySupportingObjects(kube, manifests.others, log, opts.cluster !== undefined)
    let identities: Identities | undefined
    if (opts.cluster) {
      const issued = serviceAccountIdentities(kube, kubeConfig, opts.identityDir ?? join(root, '.kinetic', 'identities', String(process.pid)), log)
      identities = issued
      cleanups.push(async () => issued.close())
    }
    const sourceIdentities = new Map<string, KubeConfig>()
    if (identities) {
      for (const src of manifests.apiServerSources) {
        const sa = src.spec.serviceAccountName ?? 'default'
        sourceIdentities.set(src.metadata.name, (await identities.get(src.metadata.namespace, sa)).kubeConfig())
      }
    }

    mkdirSync(logDir, { recursive: true })
    const functions = new Map<string, LocalFunction>()
    const planned: Array<{ svc: Manifest; port: number }> = []
    for (const svc of manifests.services) {
      const name = svc.metadata.name
      if (!existsSync(join(root, 'functions', name, 'main.ts'))) {
        log.error({ service: name }, 'Knative Service has no functions/<name>/main.ts; events for it will fail locally')
        continue
      }
      // A probe's port is free again once closed, so the OS may offer it twice: take each once.
      let port = await freePort()
      while (planned.some((p) => p.port === port)) port = await freePort()
      planned.push({ svc, port })
      const fn: LocalFunction = { name, url: `http://127.0.0.1:${port}`, pid: undefined, logFile: join(logDir, `${name}.log`), kubeconfigPath }
      if (identities) {
        const spec = svc.spec as { template?: { spec?: { serviceAccountName?: string } } }
        const id = await identities.get(svc.metadata.namespace, spec.template?.spec?.serviceAccountName ?? 'default')
        fn.kubeconfigPath = id.kubeconfigPath
        fn.identity = id.username
      }
      functions.set(name, fn)
    }

    // Cleanups run in reverse: the emulation stops sending first, then the functions stop.
    cleanups.push(async () => {
      await Promise.all([...children.values()].map((c) => terminate(c)))
      for (const s of streams) s.end()
    })
    const knative = await startKnativeEmulation({
      manifests,
      kubeConfig,
      sourceKubeConfig: (src) => sourceIdentities.get(src.metadata.name),
      serviceUrl: (name) => functions.get(name)?.url,
      log,
      // Ticks wait until the functions answer, or the first ones would only fail.
      schedulePings: false,
      ...(opts.pingIntervalMs !== undefined ? { pingIntervalMs: opts.pingIntervalMs } : {}),
    })
    cleanups.push(() => knative.stop())

    const broker = manifests.brokers[0]
    const sink = broker ? knative.brokerUrl(broker.metadata.namespace, broker.metadata.name) : undefined
    // The console is told run-control's URL, final only once run-control listens (its port may change).
    const ready = new Map(planned.map(({ svc }) => [svc.metadata.name, deferred()]))
    const startFunction = async (svc: Manifest, fn: LocalFunction, chosen: number): Promise<void> => {
      let port = chosen
      const runControl = fn.name === 'console' ? functions.get('run-control') : undefined
      if (runControl) await ready.get(runControl.name)?.promise
      const out = createWriteStream(fn.logFile, { flags: 'a' })
      streams.push(out)
      const fromService = serviceEnv(svc, (ns, name) => knative.brokerUrl(ns, name))
      const callerAuth = callerAuthEnv(fromService, opts.cluster !== undefined)
      const env: Record<string, string> = {
        ...stringEnv(process.env),
        ...fromService,
        ...callerAuth,
        ...(opts.executorImage ? { KINETIC_EXECUTOR_IMAGE: opts.executorImage } : {}),
        ...(fn.name === 'console' ? localConsoleEnv(runControl?.url, opts.cluster ? { sessionKey: randomBytes(32).toString('base64') } : undefined) : {}),
        ...(opts.functionEnv ?? {}),
        KUBECONFIG: fn.kubeconfigPath,
        K_SERVICE: svc.metadata.name,
        ...(sink ? { K_SINK: sink } : {}),
      }
      if (env[CALLER_AUTH] !== undefined) fn.mcp = { url: `${fn.url}/mcp`, auth: env[CALLER_AUTH] }
      for (const variable of Object.keys(callerAuth)) {
        log.info({ service: fn.name }, `The embedded API server has no TokenReview: ${fn.name} runs with ${variable}=none and allows every call as anonymous`)
      }
      // The port was free when chosen, but another process may take it before the function
      // listens (many planes start side by side in tests): then it starts again on another.
      for (let attempt = 1; ; attempt++) {
        const child = spawn(process.execPath, ['--import', 'tsx', join(root, 'scripts', 'run-function.ts'), svc.metadata.name], {
          cwd: root, env: { ...env, PORT: String(port) }, stdio: ['ignore', 'pipe', 'pipe'],
        })
        children.set(svc.metadata.name, child)
        fn.pid = child.pid
        // stderr is held back until the function is ready, so a start that lost its port leaves
        // no crash trace in the function's log (the retry says what happened instead).
        let portTaken = false
        let held: Buffer[] | null = []
        child.stderr?.on('data', (chunk: Buffer) => {
          if (held === null) return void out.write(chunk)
          held.push(chunk)
          if (Buffer.concat(held).includes('EADDRINUSE')) portTaken = true
        })
        const release = () => {
          if (held !== null && !portTaken) for (const chunk of held) out.write(chunk)
          held = null
        }
        child.stdout?.pipe(out, { end: false })
        child.on('exit', (code, signal) => {
          if (!stopping && !portTaken) log.error({ service: svc.metadata.name, code, signal, logFile: fn.logFile }, 'Function process exited; events for it will fail until the plane restarts')
        })
        try {
          await waitReady(fn, child, opts.readinessTimeoutMs ?? 60_000)
          release()
          break
        } catch (err) {
          await new Promise<void>((r) => (child.exitCode !== null || child.signalCode !== null ? r() : child.once('exit', () => r())))
          if (!portTaken || attempt >= 3) {
            portTaken = false
            release()
            throw err
          }
          log.info({ service: fn.name, port }, 'Port was taken before the function listened; starting it on another')
          port = await freePort()
          fn.url = `http://127.0.0.1:${port}`
          if (fn.mcp) fn.mcp = { ...fn.mcp, url: `${fn.url}/mcp` }
        }
      }
      log.info({ service: fn.name, url: fn.url, pid: fn.pid }, 'Function ready')
    }
    await Promise.all(planned.map(async ({ svc, port: chosen }) => {
      const fn = functions.get(svc.metadata.name) as LocalFunction
      const readiness = ready.get(fn.name) as Deferred
      try {
        await startFunction(svc, fn, chosen)
        readiness.resolve()
      } catch (err) {
        readiness.reject(err)
        throw err
      }
    }))

    let jobs: JobRunner | undefined
    if (jobsMode === 'local' && apiServer) {
      const store = apiServer.store
      const runner = startJobRunner({
        kubeConfig,
        appendPodLog: (ns, pod, text) => store.appendPodLog(ns, pod, text),
        log: log.child({ component: 'job-runner' }),
        ...(opts.jobConcurrency !== undefined ? { concurrency: opts.jobConcurrency } : {}),
        ...(opts.jobTimeScale !== undefined ? { timeScale: opts.jobTimeScale } : {}),
      })
      jobs = runner
      // Cleanups run in reverse: the runner stops just before the API server (index 0) closes.
      cleanups.splice(1, 0, () => runner.stop())
      await runner.ready
    }
    let workloads: WorkloadControllers | undefined
    if (apiServer && opts.workloads !== false) {
      const controllers = startWorkloadControllers({ store: apiServer.store, log: log.child({ component: 'workload-controllers' }) })
      workloads = controllers
      // Like the runner: stopped just before the API server closes.
      cleanups.splice(1, 0, async () => controllers.stop())
    }
    await knative.ready
    if (apiServer) await registerLocalMcpServers(kube, manifests.others, functions, log)
    knative.startSchedules()
    return { ...(apiServer ? { apiServer } : {}), server: kube.server, kubeConfig, kubeconfigPath, kube, knative, ...(jobs ? { jobs } : {}), ...(workloads ? { workloads } : {}), functions, stop }
  } catch (err) {
    await stop()
    throw err
  }
}

// What the plane installs from knative/ besides the Knative objects it emulates.
const SUPPORTING_KINDS = new Set(['Namespace', 'ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding'])

// Namespaces, ServiceAccounts and RBAC from knative/: on the embedded server so kubectl shows
// what a cluster would have, on a cluster because the functions run as those ServiceAccounts
// (there a failure is an error: a function without its RBAC cannot work).
async function applySupportingObjects(kube: KubeHttp, others: Manifest[], log: Logger, strict: boolean): Promise<void> {
  const wanted = others.filter((o) => SUPPORTING_KINDS.has(o.kind))
  // On the embedded server an MCPServer registering one of our functions is installed once that
  // function runs (registerLocalMcpServers), without the ServiceAccount token Secret it names on a
  // cluster (the embedded server has no token controller to fill one).
  const later = (o: Manifest) => !strict && (o.kind === 'MCPServer' || (o.kind === 'Secret' && o.raw.type === 'kubernetes.io/service-account-token'))
  for (const o of others) if (!SUPPORTING_KINDS.has(o.kind) && !later(o)) log.warn({ kind: o.kind, name: o.metadata.name, file: o.file }, 'Not installing an object of knative/ the local plane does not handle')
  const ordered = [...wanted].sort((a, b) => Number(b.kind === 'Namespace') - Number(a.kind === 'Namespace'))
  const namespaces = new Set(wanted.filter((o) => o.kind !== 'Namespace' && !o.kind.startsWith('Cluster')).map((o) => o.metadata.namespace))
  for (const ns of namespaces) {
    if (!ordered.some((o) => o.kind === 'Namespace' && o.metadata.name === ns)) {
      const raw = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } }
      ordered.unshift({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns, namespace: '' }, spec: {}, file: '', raw })
    }
  }
  for (const m of ordered) {
    const obj = { ...m.raw } as KubeObject
    // Cluster-scoped: the namespace filled in by the loader does not apply.
    if (m.kind === 'Namespace' || m.kind.startsWith('Cluster')) {
      const { namespace: _ns, ...meta } = (obj.metadata ?? {}) as Record<string, unknown>
      obj.metadata = meta as KubeObject['metadata']
    }
    try {
      await kube.apply(obj)
    } catch (err) {
      if (strict) throw new Error(`Could not apply ${m.kind} ${m.metadata.name} from knative/${m.file}: ${err instanceof Error ? err.message : String(err)}`)
      const unsupported = err instanceof Error && /does not serve/.test(err.message)
      log[unsupported ? 'debug' : 'warn']({ kind: m.kind, name: m.metadata.name, err: String(err) }, 'Could not apply an object from knative/')
    }
  }
  log.info({ objects: ordered.map((m) => `${m.kind}/${m.metadata.name}`) }, 'Installed the supporting objects of knative/')
}

/** The variable by which the recipes MCP server checks its callers with TokenReview and SubjectAccessReview. */
export const CALLER_AUTH = 'KINETIC_RECIPES_MCP_AUTH'
/** Every function's variable for checking callers with TokenReview and SubjectAccessReview (recipes-mcp, run-control). */
export const CALLER_AUTH_VARIABLES: readonly string[] = [CALLER_AUTH, 'KINETIC_RUN_CONTROL_AUTH']

/**
 * Pure: the embedded API server serves neither TokenReview nor SubjectAccessReview, so there a
 * function that checks its callers with them runs with auth `none` (every call allowed, logged
 * as anonymous). Against a cluster it keeps its Service's setting (`kubernetes`).
 */
export function callerAuthEnv(serviceEnv: Record<string, string>, onCluster: boolean): Record<string, string> {
  if (onCluster) return {}
  return Object.fromEntries(CALLER_AUTH_VARIABLES.filter((v) => serviceEnv[v] !== undefined).map((v) => [v, 'none']))
}

/**
 * Pure: the console on the local plane, actions on, cookies without Secure (plain HTTP on
 * 127.0.0.1), actions sent to the local run-control. On the embedded API server the plane's
 * admin is the person (no sign-in); against a cluster people sign in with their own bearer token
 * (the console's ServiceAccount may read nothing), sealed with `sessionKey` (base64, 32 bytes).
 */
export function localConsoleEnv(runControlUrl: string | undefined, cluster?: { sessionKey: string }): Record<string, string> {
  return {
    KINETIC_CONSOLE_AUTH: cluster ? 'token' : 'local',
    ...(cluster ? { KINETIC_CONSOLE_SESSION_KEY: cluster.sessionKey } : {}),
    KINETIC_CONSOLE_ACTIONS: 'true',
    KINETIC_CONSOLE_SECURE_COOKIES: 'false',
    ...(runControlUrl ? { KINETIC_RUN_CONTROL_URL: runControlUrl } : {}),
  }
}

interface Deferred { promise: Promise<void>; resolve(): void; reject(err: unknown): void }

function deferred(): Deferred {
  let resolve!: () => void
  let reject!: (err: unknown) => void
  const promise = new Promise<void>((res, rej) => { resolve = res; reject = rej })
  // Whoever waits sees the failure; nobody waiting is no unhandled rejection.
  promise.catch(() => {})
  return { promise, resolve, reject }
}

/** `http://<service>.<namespace>.svc.cluster.local[:port]/<path>` -> the Service, or null. */
function clusterLocalService(url: string): { name: string; namespace: string; path: string } | null {
  const m = /^http:\/\/([a-z0-9-]+)\.([a-z0-9-]+)\.svc\.cluster\.local(?::\d+)?(\/.*)?$/.exec(url)
  return m ? { name: m[1] as string, namespace: m[2] as string, path: m[3] ?? '' } : null
}

/**
 * Pure: an unmanaged MCPServer of knative/ whose url is one of our Knative Services (the
 * recipes MCP server's registration, platform/recipes-mcp.yaml), pointed at that function's
 * local process instead. The local function checks no token (auth `none`, above), so the
 * registration needs none either: no Secret holds a ServiceAccount token on the embedded server.
 */
export function localMcpServer(m: Manifest, functionUrl: (service: string, namespace: string) => string | undefined): KubeObject | null {
  const spec = m.spec as { managed?: boolean; url?: string; auth?: string; secretRef?: string }
  if (m.kind !== 'MCPServer' || spec.managed !== false || !spec.url) return null
  const target = clusterLocalService(spec.url)
  const base = target ? functionUrl(target.name, target.namespace) : undefined
  if (!target || !base) return null
  const { secretRef: _secret, ...rest } = spec
  return { ...m.raw, spec: { ...rest, url: `${base}${target.path}`, auth: 'none' } } as KubeObject
}

// The embedded plane serves the recipes MCP server on 127.0.0.1; its registration in knative/
// names the in-cluster address, so it is installed with the local one (agents' steps run here too).
async function registerLocalMcpServers(kube: KubeHttp, others: Manifest[], functions: Map<string, LocalFunction>, log: Logger): Promise<void> {
  const urlOf = (service: string, namespace: string) => (namespace === 'kinetic-system' ? functions.get(service)?.url : undefined)
  for (const m of others) {
    const local = localMcpServer(m, urlOf)
    if (!local) continue
    try {
      await kube.apply(local)
      log.info({ mcpServer: `${m.metadata.namespace}/${m.metadata.name}`, url: (local.spec as { url: string }).url }, 'Registered a local MCP server from knative/')
    } catch (err) {
      log.warn({ mcpServer: `${m.metadata.namespace}/${m.metadata.name}`, err: String(err) }, 'Could not register a local MCP server from knative/')
    }
  }
}

/**
 * Literal env of the Service's first container; a value that points at an in-cluster
 * broker-ingress URL is rewritten to the local Broker.
 */
function serviceEnv(svc: Manifest, brokerUrl: (ns: string, name: string) => string): Record<string, string> {
  const spec = svc.spec as { template?: { spec?: { containers?: Array<{ env?: Array<{ name: string; value?: string }> }> } } }
  const out: Record<string, string> = {}
  for (const e of spec.template?.spec?.containers?.[0]?.env ?? []) {
    if (e.value === undefined) continue
    const m = /^https?:\/\/broker-ingress\.[^/]+\/([^/]+)\/([^/]+)\/?$/.exec(e.value)
    out[e.name] = m ? brokerUrl(m[1] as string, m[2] as string) : e.value
  }
  return out
}

function stringEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [k, v] of Object.entries(env)) if (v !== undefined && k !== 'NODE_OPTIONS') out[k] = v
  return out
}

async function waitReady(fn: LocalFunction, child: ChildProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`Function ${fn.name} exited before it was ready (exit ${child.exitCode ?? child.signalCode}); see ${fn.logFile}`)
    }
    try {
      const res = await fetch(`${fn.url}/health/readiness`, { signal: AbortSignal.timeout(1000) })
      // Only this child counts: another process may answer on a port this one failed to take.
      if (res.ok && res.headers.get(PID_HEADER) === String(child.pid)) return
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100))
  }
  throw new Error(`Function ${fn.name} was not ready within ${timeoutMs} ms; see ${fn.logFile}`)
}

function terminate(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve()
  return new Promise((resolve) => {
    const t = setTimeout(() => child.kill('SIGKILL'), 3000)
    child.once('exit', () => { clearTimeout(t); resolve() })
    child.kill('SIGTERM')
  })
}

