import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'

/** The repository root, resolved from this file so the runner works from any cwd. */
export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url))

/** What to run for a step container. */
export interface StepCommand {
  command: string
  args: string[]
  cwd: string
}

/**
 * The project's executor as a local process: `node --import tsx executor/main.ts`, or the bundle
 * `npm run build` wrote when KINETIC_LOCAL_EXECUTOR names it (dist/executor/main.js: a step then
 * starts in a fraction of the time, which matters with thousands of steps). Local mode runs this
 * whatever image the Job names, so purko-compatible Jobs run here unchanged.
 */
export function executorCommand(env: NodeJS.ProcessEnv = process.env): StepCommand {
  const built = env.KINETIC_LOCAL_EXECUTOR
  if (built) return { command: process.execPath, args: [built], cwd: REPO_ROOT }
  return { command: process.execPath, args: ['--import', 'tsx', 'executor/main.ts'], cwd: REPO_ROOT }
}

/** A running step process. */
export interface StepProcess {
  pid: number | undefined
  /** Exit code (null when killed by a signal). */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
  /** SIGTERM, then SIGKILL after a grace period, like a pod deletion. */
  kill(graceMs?: number): void
}

// A pod sees only its own environment; these few host variables let node itself run.
const HOST_ENV = ['PATH', 'HOME', 'TMPDIR', 'LANG', 'TZ', 'SYSTEMROOT']

/**
 * Starts the step with exactly the container's environment (plus PATH and friends), and
 * hands stdout and stderr chunks, interleaved as they arrive, to `onOutput`.
 */
export function spawnStep(cmd: StepCommand, env: Record<string, string>, onOutput: (text: string) => void): StepProcess {
  const childEnv: Record<string, string> = {}
  for (const k of HOST_ENV) {
    const v = process.env[k]
    if (v !== undefined) childEnv[k] = v
  }
  Object.assign(childEnv, env)
  const child = spawn(cmd.command, cmd.args, { cwd: cmd.cwd, env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] })
  child.stdout.setEncoding('utf8').on('data', onOutput)
  child.stderr.setEncoding('utf8').on('data', onOutput)
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on('error', (err) => {
      onOutput(`failed to start: ${err.message}\n`)
      resolve({ code: 127, signal: null })
    })
    child.on('close', (code, signal) => resolve({ code, signal }))
  })
  return {
    pid: child.pid,
    exited,
    kill(graceMs = 2000) {
      if (child.exitCode !== null || child.signalCode !== null) return
      child.kill('SIGTERM')
      const t = setTimeout(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL') }, graceMs)
      t.unref()
    },
  }
}
