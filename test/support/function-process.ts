// One function as its own process, the way the local plane and Knative run it
// (scripts/run-function.ts on $PORT), for tests that must see the real entry point.
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { freePort } from '../../local/free-port.js'
import { ROOT } from '../knative/manifests.js'

export interface FunctionProcess {
  /** http://127.0.0.1:<port> */
  url: string
  child: ChildProcess
  /** Everything it printed so far (stdout and stderr). */
  output: () => string
  /** SIGTERM, and wait until it exited. */
  stop: () => Promise<void>
}

/** Starts functions/<name>/main.ts on a free 127.0.0.1 port with `env` and waits for its readiness probe (30 s). */
export async function startFunctionProcess(name: string, env: Record<string, string>): Promise<FunctionProcess> {
  if (!existsSync(join(ROOT, 'functions', name, 'main.ts'))) throw new Error(`functions/${name}/main.ts is missing`)
  const port = await freePort()
  // The test runner's loader options must not reach the child, which loads tsx itself.
  const { NODE_OPTIONS: _n, ...inherited } = process.env
  const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'scripts', 'run-function.ts'), name], {
    cwd: ROOT, env: { ...inherited, LOG_LEVEL: 'info', ...env, PORT: String(port), HOST: '127.0.0.1' }, stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  child.stdout?.on('data', (b: Buffer) => { output += b.toString() })
  child.stderr?.on('data', (b: Buffer) => { output += b.toString() })
  const url = `http://127.0.0.1:${port}`
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM')
    await new Promise((resolve) => (child.exitCode !== null || child.signalCode !== null ? resolve(null) : child.once('exit', resolve)))
  }
  const deadline = Date.now() + 30_000
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${name} exited with ${child.exitCode}: ${output}`)
    const res = await fetch(`${url}/health/readiness`).catch(() => null)
    if (res?.ok) break
    if (Date.now() > deadline) {
      await stop()
      throw new Error(`${name} was not ready within 30 s: ${output}`)
    }
    await new Promise((r) => setTimeout(r, 100))
  }
  return { url, child, output: () => output, stop }
}
