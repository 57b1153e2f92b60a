import { spawn, type ChildProcess } from 'node:child_process'
import { createWriteStream, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync, type WriteStream } from 'node:fs'
import { createServer } from 'node:net'
import { join } from 'node:path'
import type { KubeConfig } from '@kubernetes/client-node'
import { parseAllDocuments } from 'yaml'
import { silentLogger, type Logger } from '../shared/log.js'
import { startApiServer } from './apiserver/index.js'
import { startJobRunner, type JobRunner } from './jobs/runner.js'
import { REPO_ROOT } from './jobs/step-process.js'
import { startKnativeEmulation, type KnativeEmulation } from './knative/emulation.js'
import { KubeHttp, type KubeObject } from './knative/kube-http.js'
import { loadKnativeManifests, type Manifest } from './knative/manifests.js'

/** Options of the local control plane. */
export interface LocalPlaneOptions {
  /** Repository root holding crds/, knative/ and functions/. Default: this checkout. */
  root?: string
  /** API server port on 127.0.0.1; 0 (default) picks a free one. */
  port?: number
  log?: Logger
  /** Where the kubeconfig is written. Default `<root>/.kinetic/kubeconfig`. */
  kubeconfigPath?: string
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
}

/** A function process serving one Knative Service. */
export interface LocalFunction {
  name: string
  url: string
  pid: number | undefined
  logFile: string
}

/** The running plane. */
export interface LocalPlane {
  apiServer: Awaited<ReturnType<typeof startApiServer>>
  kubeConfig: KubeConfig
  kubeconfigPath: string
  kube: KubeHttp
  knative: KnativeEmulation
  jobs: JobRunner
  functions: Map<string, LocalFunction>
  /** Stops everything it started, child processes included. */
  stop(): Promise<void>
}

/**
 * Starts the embedded default: the API server with crds/ installed, every Knative Service of
 * knative/ as a local function process (`scripts/run-function.ts <name>`, the same entry point
 * as the image) with `PORT` and `KUBECONFIG`, the Knative emulation from knative/, and the Job
 * runner. Resolves once the functions answer their readiness probe and the sources watch.
 */
export async function startLocalPlane(opts: LocalPlaneOptions = {}): Promise<LocalPlane> {
  const root = opts.root ?? REPO_ROOT
  const log = opts.log ?? silentLogger
  const kubeconfigPath = opts.kubeconfigPath ?? join(root, '.kinetic', 'kubeconfig')
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
    const apiServer = await startApiServer({ port: opts.port ?? 0, log })
    cleanups.push(() => apiServer.close())
    mkdirSync(join(kubeconfigPath, '..'), { recursive: true })
    writeFileSync(kubeconfigPath, apiServer.kubeconfig(), { mode: 0o600 })
    const kubeConfig = apiServer.kubeConfigObject()
    const kube = new KubeHttp(kubeConfig)

    await installCrds(kube, join(root, 'crds'), log)

    const manifests = loadKnativeManifests(join(root, 'knative'))
    await applySupportingObjects(kube, manifests.others, log)

    mkdirSync(logDir, { recursive: true })
    const functions = new Map<string, LocalFunction>()
    const planned: Array<{ svc: Manifest; port: number }> = []
    for (const svc of manifests.services) {
      const name = svc.metadata.name
      if (!existsSync(join(root, 'functions', name, 'main.ts'))) {
        log.error({ service: name }, 'Knative Service has no functions/<name>/main.ts; events for it will fail locally')
        continue
      }
      const port = await freePort()
      planned.push({ svc, port })
      functions.set(name, { name, url: `http://127.0.0.1:${port}`, pid: undefined, logFile: join(logDir, `${name}.log`) })
    }

    // Cleanups run in reverse: the emulation stops sending first, then the functions stop.
    cleanups.push(async () => {
      await Promise.all([...children.values()].map((c) => terminate(c)))
      for (const s of streams) s.end()
    })
    const knative = await startKnativeEmulation({
      manifests,
      kubeConfig,
      serviceUrl: (name) => functions.get(name)?.url,
      log,
      // Ticks wait until the functions answer, or the first ones would only fail.
      schedulePings: false,
      ...(opts.pingIntervalMs !== undefined ? { pingIntervalMs: opts.pingIntervalMs } : {}),
    })
    cleanups.push(() => knative.stop())

    const broker = manifests.brokers[0]
    const sink = broker ? knative.brokerUrl(broker.metadata.namespace, broker.metadata.name) : undefined
    await Promise.all(planned.map(async ({ svc, port }) => {
      const fn = functions.get(svc.metadata.name) as LocalFunction
      const out = createWriteStream(fn.logFile, { flags: 'a' })
      streams.push(out)
      const env: Record<string, string> = {
        ...stringEnv(process.env),
        ...serviceEnv(svc, (ns, name) => knative.brokerUrl(ns, name)),
        ...(opts.functionEnv ?? {}),
        PORT: String(port),
        KUBECONFIG: kubeconfigPath,
        K_SERVICE: svc.metadata.name,
        ...(sink ? { K_SINK: sink } : {}),
      }
      const child = spawn(process.execPath, ['--import', 'tsx', join(root, 'scripts', 'run-function.ts'), svc.metadata.name], {
        cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'],
      })
      children.set(svc.metadata.name, child)
      fn.pid = child.pid
      child.stdout?.pipe(out, { end: false })
      child.stderr?.pipe(out, { end: false })
      child.on('exit', (code, signal) => {
        if (!stopping) log.error({ service: svc.metadata.name, code, signal, logFile: fn.logFile }, 'Function process exited; events for it will fail until the plane restarts')
      })
      await waitReady(fn, child, opts.readinessTimeoutMs ?? 60_000)
      log.info({ service: fn.name, url: fn.url, pid: fn.pid }, 'Function ready')
    }))

    const jobs = startJobRunner({
      kubeConfig,
      appendPodLog: (ns, pod, text) => apiServer.store.appendPodLog(ns, pod, text),
      log: log.child({ component: 'job-runner' }),
      ...(opts.jobConcurrency !== undefined ? { concurrency: opts.jobConcurrency } : {}),
      ...(opts.jobTimeScale !== undefined ? { timeScale: opts.jobTimeScale } : {}),
    })
    cleanups.splice(1, 0, () => jobs.stop())
    await Promise.all([knative.ready, jobs.ready])
    knative.startSchedules()
    return { apiServer, kubeConfig, kubeconfigPath, kube, knative, jobs, functions, stop }
  } catch (err) {
    await stop()
    throw err
  }
}

async function installCrds(kube: KubeHttp, dir: string, log: Logger): Promise<void> {
  const docs = existsSync(dir) ? readYamlDir(dir).filter((d) => d.kind === 'CustomResourceDefinition') : []
  if (docs.length === 0) throw new Error(`No CustomResourceDefinitions found in ${dir} (run npm run generate:crds)`)
  for (const crd of docs) await kube.apply(crd)
  const versions = new Set<string>()
  for (const crd of docs) {
    const spec = crd.spec as { group: string; versions: Array<{ name: string; served?: boolean }> }
    for (const v of spec.versions) if (v.served !== false) versions.add(`${spec.group}/${v.name}`)
  }
  const deadline = Date.now() + 10_000
  for (const gv of versions) {
    while ((await kube.get(`/apis/${gv}`)) === null) {
      if (Date.now() > deadline) throw new Error(`CRDs of ${gv} were not served within 10 s`)
      await new Promise((r) => setTimeout(r, 50))
    }
  }
  kube.forgetDiscovery()
  log.info({ crds: docs.map((d) => d.metadata?.name) }, 'Installed CRDs')
}

// Namespaces, ServiceAccounts and RBAC from knative/, so kubectl shows what a cluster would have.
async function applySupportingObjects(kube: KubeHttp, others: Manifest[], log: Logger): Promise<void> {
  const ordered = [...others].sort((a, b) => Number(b.kind === 'Namespace') - Number(a.kind === 'Namespace'))
  const namespaces = new Set(others.map((o) => o.metadata.namespace))
  for (const ns of namespaces) {
    if (!ordered.some((o) => o.kind === 'Namespace' && o.metadata.name === ns)) {
      const raw = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } }
      ordered.unshift({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns, namespace: '' }, spec: {}, file: '', raw })
    }
  }
  for (const m of ordered) {
    const obj = { ...m.raw } as KubeObject
    // Namespaces are cluster-scoped: the namespace filled in by the loader does not apply.
    if (m.kind === 'Namespace') obj.metadata = { name: m.metadata.name, ...(m.metadata.labels ? { labels: m.metadata.labels } : {}) }
    try {
      await kube.apply(obj)
    } catch (err) {
      const unsupported = err instanceof Error && /does not serve/.test(err.message)
      log[unsupported ? 'debug' : 'warn']({ kind: m.kind, name: m.metadata.name, err: String(err) }, 'Could not apply an object from knative/')
    }
  }
}

function readYamlDir(dir: string): KubeObject[] {
  const out: KubeObject[] = []
  for (const name of readdirSync(dir).sort()) {
    if (!name.endsWith('.yaml') && !name.endsWith('.yml')) continue
    for (const doc of parseAllDocuments(readFileSync(join(dir, name), 'utf8'))) {
      const v = doc.toJSON() as unknown
      if (v && typeof v === 'object' && !Array.isArray(v)) out.push(v as KubeObject)
    }
  }
  return out
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
      if (res.ok) return
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

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer()
    srv.once('error', reject)
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address()
      const port = typeof addr === 'object' && addr ? addr.port : 0
      srv.close(() => resolve(port))
    })
  })
}
