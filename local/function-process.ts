import { spawn, type ChildProcess } from 'node:child_process'
import type { WriteStream } from 'node:fs'
import { join } from 'node:path'
import { PID_HEADER } from '../shared/http/app.js'
import type { Logger } from '../shared/log.js'
import { freePort } from './free-port.js'

/**
 * One function process of the local plane (plane.ts starts them): `scripts/run-function.ts
 * <name>`, the same entry point as the image, started again on another port when its port was
 * taken before it listened, ready once it answers its readiness probe, and stopped with SIGTERM
 * (SIGKILL after 3 s).
 */

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

/** What starting function processes needs of the plane. */
export interface FunctionProcesses {
  /** The repository root holding scripts/run-function.ts. */
  root: string
  log: Logger
  /** The processes by Service name; a restarted process replaces the one before. */
  children: Map<string, ChildProcess>
  /** Whether the plane is stopping, when a process exiting is expected. */
  stopping(): boolean
  /** How long the function may take to become ready. */
  readinessTimeoutMs: number
}

/**
 * Starts the process of `fn` (Service `service`) with `env` on `chosenPort`, its output
 * appended to `out`; resolves once it is ready, after up to three starts when another process
 * takes the port first (then `fn.url` names the port it got).
 */
export async function runFunctionProcess(fn: LocalFunction, service: string, env: Record<string, string>, out: WriteStream, chosenPort: number, processes: FunctionProcesses): Promise<void> {
  let port = chosenPort
  // The port was free when chosen, but another process may take it before the function
  // listens (many planes start side by side in tests): then it starts again on another.
  for (let attempt = 1; ; attempt++) {
    const child = spawn(process.execPath, ['--import', 'tsx', join(processes.root, 'scripts', 'run-function.ts'), service], {
      cwd: processes.root, env: { ...env, PORT: String(port) }, stdio: ['ignore', 'pipe', 'pipe'],
    })
    processes.children.set(service, child)
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
      if (!processes.stopping() && !portTaken) processes.log.error({ service, code, signal, logFile: fn.logFile }, 'Function process exited; events for it will fail until the plane restarts')
    })
    try {
      await waitReady(fn, child, processes.readinessTimeoutMs)
      release()
      break
    } catch (err) {
      await new Promise<void>((exited) => (child.exitCode !== null || child.signalCode !== null ? exited() : child.once('exit', () => exited())))
      if (!portTaken || attempt >= 3) {
        portTaken = false
        release()
        throw err
      }
      processes.log.info({ service: fn.name, port }, 'Port was taken before the function listened; starting it on another')
      port = await freePort()
      fn.url = `http://127.0.0.1:${port}`
      if (fn.mcp) fn.mcp = { ...fn.mcp, url: `${fn.url}/mcp` }
    }
  }
  processes.log.info({ service: fn.name, url: fn.url, pid: fn.pid }, 'Function ready')
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
    await new Promise((wake) => setTimeout(wake, 100))
  }
  throw new Error(`Function ${fn.name} was not ready within ${timeoutMs} ms; see ${fn.logFile}`)
}

/** Stops a function process: SIGTERM, then SIGKILL after 3 s. */
export function terminate(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve()
  return new Promise((resolve) => {
    const killLater = setTimeout(() => child.kill('SIGKILL'), 3000)
    child.once('exit', () => { clearTimeout(killLater); resolve() })
    child.kill('SIGTERM')
  })
}
