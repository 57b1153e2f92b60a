// One bundled function started the way its Knative Service starts it (`node
// dist/functions/<name>/main.js` with the Service's env), plus what bench/memory.ts reads of it:
// VmRSS and VmHWM from /proc, and the heap after a forced GC from bench/support/memory-probe.cjs.
import { spawn, type ChildProcess } from 'node:child_process'
import { closeSync, existsSync, openSync, readFileSync } from 'node:fs'
import { request } from 'node:http'
import { join } from 'node:path'
import type { Manifest } from '../../local/knative/manifests.js'
import { freePort } from '../../local/free-port.js'

/** The heap as the probe reads it after two forced collections, in bytes. */
export interface HeapReading {
  rss: number
  heapUsed: number
  heapTotal: number
  external: number
  arrayBuffers: number
}

export interface FunctionProcess {
  name: string
  url: string
  pid: number
  /** VmRSS and VmHWM (peak) of the process now, in bytes. */
  rss(): { rss: number; peak: number }
  /** Forces GC in the process and reads its heap. */
  heap(): Promise<HeapReading>
  /** User + system CPU seconds so far (/proc/<pid>/stat). */
  cpuSeconds(): number
  stop(): Promise<void>
}

/** The Service's literal env values (secret references left out), as the container gets them. */
export function serviceEnv(svc: Manifest): Record<string, string> {
  const spec = svc.spec as { template?: { spec?: { containers?: Array<{ env?: Array<{ name: string; value?: string }> }> } } }
  const out: Record<string, string> = {}
  for (const e of spec.template?.spec?.containers?.[0]?.env ?? []) if (e.value !== undefined) out[e.name] = e.value
  return out
}

/** The args after `node` in the Service (`[dist/functions/<name>/main.js]`). */
export function serviceArgs(svc: Manifest): string[] {
  const spec = svc.spec as { template?: { spec?: { containers?: Array<{ command?: string[]; args?: string[] }> } } }
  const c = spec.template?.spec?.containers?.[0]
  if (c?.command?.[0] !== 'node' || !c.args) throw new Error(`Service ${svc.metadata.name} does not run node <script>`)
  return c.args
}

const CLK_TCK = 100

function procStatus(pid: number, key: string): number {
  const m = new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  return m ? Number(m[1]) * 1024 : Number.NaN
}

/** utime + stime of a live process, in seconds. */
export function processCpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // Fields after the command name, which is in parentheses and may hold spaces.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return (Number(fields[11]) + Number(fields[12])) / CLK_TCK
  } catch {
    return Number.NaN
  }
}

function get(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(url, { agent: false }, (res) => { res.resume(); res.once('end', () => resolve(res.statusCode ?? 0)) })
    req.once('error', reject)
    req.end()
  })
}

/**
 * Starts the function from the repository root `root` with the Service's env, `env` on top and
 * the memory probe preloaded; resolves once /health/readiness answers 204.
 */
export async function startFunctionProcess(root: string, svc: Manifest, env: Record<string, string>, scratch: string): Promise<FunctionProcess> {
  const name = svc.metadata.name
  const port = await freePort()
  const memoryFile = join(scratch, `${name}.memory.jsonl`)
  const logFd = openSync(join(scratch, `${name}.log`), 'a')
  const fullEnv: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '/tmp',
    ...serviceEnv(svc),
    ...env,
    K_SERVICE: name,
    PORT: String(port),
    NODE_OPTIONS: `--require ${join(root, 'bench', 'support', 'memory-probe.cjs')}`,
    KINETIC_BENCH_MEMORY_FILE: memoryFile,
  }
  const child: ChildProcess = spawn(process.execPath, serviceArgs(svc), { cwd: root, env: fullEnv, stdio: ['ignore', logFd, logFd] })
  closeSync(logFd)
  const pid = child.pid as number
  const url = `http://127.0.0.1:${port}`
  const deadline = Date.now() + 30_000
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${name} exited with ${child.exitCode}; see ${join(scratch, `${name}.log`)}`)
    try {
      if ((await get(`${url}/health/readiness`)) === 204) break
    } catch { /* not listening yet */ }
    if (Date.now() > deadline) throw new Error(`${name} was not ready within 30 s`)
    await new Promise((r) => setTimeout(r, 20))
  }
  let readings = 0
  return {
    name, url, pid,
    rss: () => ({ rss: procStatus(pid, 'VmRSS'), peak: procStatus(pid, 'VmHWM') }),
    cpuSeconds: () => processCpuSeconds(pid),
    async heap() {
      readings++
      child.kill('SIGUSR2')
      const until = Date.now() + 10_000
      for (;;) {
        const lines = existsSync(memoryFile) ? readFileSync(memoryFile, 'utf8').trim().split('\n') : []
        if (lines.length >= readings) return JSON.parse(lines[readings - 1] as string) as HeapReading
        if (Date.now() > until) throw new Error(`${name} gave no heap reading (is the probe loaded?)`)
        await new Promise((r) => setTimeout(r, 10))
      }
    },
    stop: () => new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve()
      const t = setTimeout(() => child.kill('SIGKILL'), 3000)
      child.once('exit', () => { clearTimeout(t); resolve() })
      child.kill('SIGTERM')
    }),
  }
}
