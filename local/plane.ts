import type { ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { createWriteStream, existsSync, mkdirSync, writeFileSync, type WriteStream } from 'node:fs'
import { dirname, join } from 'node:path'
import type { KubeConfig } from '@kubernetes/client-node'
import { silentLogger, type Logger } from '../shared/log.js'
import { startApiServer, type ApiServer } from './apiserver/index.js'
import { callerAuthEnv, CALLER_AUTH, localConsoleEnv, serviceEnv, stringEnv } from './function-env.js'
import { runFunctionProcess, terminate, type FunctionProcesses, type LocalFunction } from './function-process.js'
import { serviceAccountIdentities, type Identities } from './identities.js'
import { startJobRunner, type JobRunner } from './jobs/runner.js'
import { REPO_ROOT } from './jobs/step-process.js'
import { startKnativeEmulation, type KnativeEmulation } from './knative/emulation.js'
import { KubeHttp } from './knative/kube-http.js'
import { loadKnativeManifests, type Manifest } from './knative/manifests.js'
import { ensurePingSourceKind } from './knative/pingsource-crd.js'
import { applySupportingObjects, registerLocalMcpServers } from './supporting-objects.js'
import { startWorkloadControllers, type WorkloadControllers } from './workloads/controllers.js'
import { freePort } from './free-port.js'
import { installCrds, readCrds } from './crds.js'

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
  const processes: FunctionProcesses = { root, log, children, stopping: () => stopping, readinessTimeoutMs: opts.readinessTimeoutMs ?? 60_000 }
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
      await runFunctionProcess(fn, svc.metadata.name, env, out, chosen, processes)
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

interface Deferred { promise: Promise<void>; resolve(): void; reject(err: unknown): void }

function deferred(): Deferred {
  let resolve!: () => void
  let reject!: (err: unknown) => void
  const promise = new Promise<void>((res, rej) => { resolve = res; reject = rej })
  // Whoever waits sees the failure; nobody waiting is no unhandled rejection.
  promise.catch(() => {})
  return { promise, resolve, reject }
}
