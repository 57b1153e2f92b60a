import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { TERMINATION_MESSAGE_LIMIT } from '../../executor/termination-message.js'
import type { Logger } from '../../shared/log.js'
import { KubeHttpError, type KubeHttp, type KubeObject } from '../knative/kube-http.js'
import { resolveContainerEnv, type EnvFromSource, type EnvSources, type EnvVar } from './container-env.js'
import { configErrorStatus, creatingStatus, exitCodeOf, runningStatus, terminatedStatus, type PodPlacement } from './pod-status.js'
import type { LocalCommand } from './job-command.js'
import { spawnStep, type StepProcess } from './step-process.js'

/** The parts of a pod spec a local container needs. */
export type PodSpec = {
  containers?: Array<{ name: string; image?: string; env?: EnvVar[]; envFrom?: EnvFromSource[] }>
  serviceAccountName?: string
  nodeName?: string
  [k: string]: unknown
}

/** How one run of a pod's container ended. */
export type PodOutcome =
  | { outcome: 'Succeeded' | 'Failed'; detail: string }
  /** Killed or abandoned before it ended on its own; no terminal status was written. */
  | { outcome: 'Stopped' }

/** Options of one pod run. */
export interface PodRunOptions {
  kube: KubeHttp
  /** The process to run, or why none can (the pod then fails with `ImageNotRunnableLocally`). */
  command: LocalCommand
  /** Receives stdout and stderr, interleaved as they arrive: the pod log. */
  onLog: (text: string) => void
  placement: PodPlacement
  nodeName: string
  log: Logger
  /** A required Secret/ConfigMap that is missing: fail the pod (local runner) or keep it Pending and retry (kubelet). */
  configError: 'fail' | 'wait'
  /** True once the caller no longer wants status written for this pod (its Job ended, the runner stops). */
  abandoned: () => boolean
  /** Called after the Running status was written, before the container exits. */
  onRunning?: () => Promise<void>
  /** Status before the container starts; default `creatingStatus`. Null writes none. */
  pendingStatus?: Record<string, unknown> | null
}

/** A pod's container being run locally. */
export interface PodRun {
  done: Promise<PodOutcome>
  /** SIGTERM, then SIGKILL after the grace period; a pod still waiting for its env stops waiting. */
  kill(graceMs?: number): void
  /** True while the process runs. */
  running(): boolean
}

const CONFIG_RETRY_MS = 2000

/**
 * Runs a pod's first container the way a kubelet does, as a local process: resolves its
 * environment (Secrets and ConfigMaps read through `kube`), writes the pod status through
 * `pods/<name>/status` (Pending, Running, then Succeeded/Failed with the container's exit
 * code), and hands the output to `onLog`. Status writes that fail are logged, never thrown.
 */
export function runPodContainer(pod: KubeObject, opts: PodRunOptions): PodRun {
  const ns = String(pod.metadata?.namespace ?? 'default')
  const name = String(pod.metadata?.name ?? '')
  const spec = (pod.spec ?? {}) as PodSpec
  const container = spec.containers?.[0]
  const path = `/api/v1/namespaces/${ns}/pods/${encodeURIComponent(name)}/status`
  const iso = () => new Date().toISOString()
  let proc: StepProcess | undefined
  let killed = false
  let wake: (() => void) | undefined

  const patch = async (status: Record<string, unknown>) => {
    if (opts.abandoned()) return
    try {
      await opts.kube.mergePatch(path, { status })
    } catch (err) {
      const gone = err instanceof KubeHttpError && err.status === 404
      opts.log[gone ? 'debug' : 'warn']({ namespace: ns, name, err: String(err) }, 'Could not update pod status')
    }
  }

  const run = async (): Promise<PodOutcome> => {
    if (!container) {
      const detail = 'the pod template has no container'
      await patch({ phase: 'Failed', reason: 'Invalid', message: detail })
      return { outcome: 'Failed', detail }
    }
    if ((spec.containers?.length ?? 0) > 1) opts.log.warn({ namespace: ns, name }, 'Only the first container runs locally')
    const command = opts.command
    if ('unavailable' in command) {
      const error = { reason: 'ImageNotRunnableLocally', message: command.unavailable }
      opts.onLog(`${error.message}\n`)
      await patch(configErrorStatus(container, error, true, iso()))
      opts.log.warn({ namespace: ns, name, reason: error.reason }, error.message)
      return { outcome: 'Failed', detail: `${error.reason}: ${error.message}` }
    }
    if (opts.pendingStatus !== null) await patch(opts.pendingStatus ?? creatingStatus(container, opts.placement, iso()))
    const sources = envSources(opts.kube, ns)
    const fields = {
      name, namespace: ns, uid: String(pod.metadata?.uid ?? ''),
      labels: pod.metadata?.labels ?? {}, annotations: pod.metadata?.annotations ?? {},
      nodeName: opts.nodeName, serviceAccountName: spec.serviceAccountName ?? 'default',
    }
    let resolved = await resolveContainerEnv(container, sources, fields)
    let reported = ''
    while ('error' in resolved) {
      const { error } = resolved
      if (opts.configError === 'fail') {
        await patch(configErrorStatus(container, error, true, iso()))
        opts.log.warn({ namespace: ns, name, reason: error.reason, message: error.message }, 'Step container cannot start')
        return { outcome: 'Failed', detail: `${error.reason}: ${error.message}` }
      }
      if (reported !== error.message) {
        reported = error.message
        await patch(configErrorStatus(container, error, false, iso()))
        opts.log.warn({ namespace: ns, name, reason: error.reason, message: error.message }, 'Step container cannot start yet; retrying')
      }
      await new Promise<void>((r) => {
        const t = setTimeout(r, CONFIG_RETRY_MS)
        wake = () => { clearTimeout(t); r() }
      })
      wake = undefined
      if (killed || opts.abandoned()) return { outcome: 'Stopped' }
      resolved = await resolveContainerEnv(container, sources, fields)
    }
    if (killed || opts.abandoned()) return { outcome: 'Stopped' }
    const startedAt = iso()
    const message = terminationMessageFile()
    try {
      proc = spawnStep(command, { ...resolved.env, HOSTNAME: name, KINETIC_TERMINATION_MESSAGE_PATH: message.path }, opts.onLog)
      await patch(runningStatus(container, opts.placement, startedAt))
      if (opts.onRunning && !opts.abandoned()) await opts.onRunning()
      const { code, signal } = await proc.exited
      proc = undefined
      if (opts.abandoned()) return { outcome: 'Stopped' }
      const exitCode = exitCodeOf(code, signal)
      await patch(terminatedStatus(container, exitCode, startedAt, iso(), message.read()))
      return { outcome: exitCode === 0 ? 'Succeeded' : 'Failed', detail: `exit code ${exitCode}` }
    } finally {
      message.remove()
    }
  }

  return {
    done: run(),
    kill(graceMs) {
      killed = true
      wake?.()
      proc?.kill(graceMs)
    },
    running: () => proc !== undefined,
  }
}

/**
 * The file a kubelet would mount at the container's terminationMessagePath: a process on this host
 * cannot see a mount, so it gets the file's path in KINETIC_TERMINATION_MESSAGE_PATH instead.
 */
function terminationMessageFile(): { path: string; read(): string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'kinetic-termination-'))
  const path = join(dir, 'termination-log')
  writeFileSync(path, '')
  return {
    path,
    read: () => {
      try {
        return readFileSync(path).subarray(0, TERMINATION_MESSAGE_LIMIT).toString('utf8')
      } catch {
        return ''
      }
    },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  }
}

/** Secrets and ConfigMaps of one namespace as the container env resolver reads them. */
export function envSources(kube: KubeHttp, namespace: string): EnvSources {
  return {
    secret: async (n) => decodeData(await kube.get(`/api/v1/namespaces/${namespace}/secrets/${encodeURIComponent(n)}`), true),
    configMap: async (n) => decodeData(await kube.get(`/api/v1/namespaces/${namespace}/configmaps/${encodeURIComponent(n)}`), false),
  }
}

function decodeData(obj: KubeObject | null, base64: boolean): Record<string, string> | null {
  if (obj === null) return null
  const out: Record<string, string> = {}
  for (const [k, v] of Object.entries((obj.data ?? {}) as Record<string, string>)) out[k] = base64 ? Buffer.from(v, 'base64').toString('utf8') : v
  // A Secret's stringData is folded into data by a real API server; accept it if it was kept.
  for (const [k, v] of Object.entries((obj.stringData ?? {}) as Record<string, string>)) out[k] = v
  return out
}
