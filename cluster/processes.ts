import { spawn, type ChildProcess } from 'node:child_process'
import { openSync, readdirSync, readFileSync } from 'node:fs'
import { createServer } from 'node:net'

/**
 * The processes of a test control plane or node (control-plane.ts starts them): tied to this
 * process by a lifeline or detached to outlive it, found again by the folder their command
 * lines name, and stopped; the free ports they listen on.
 */

/** A component that did not come up, with its log's tail in the message. */
export class ControlPlaneError extends Error {
  override name = 'ControlPlaneError'
}

/** Pids of live processes whose command line names the folder (what stop() must leave none of). */
export function processesUsing(dir: string): number[] {
  const out: number[] = []
  // The asking process and its parents (`npm run cluster -- --stop --dir <dir>`, its shell) name
  // the folder too: stop must never end its own caller.
  const askers = ancestorsOfSelf()
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const cmd = readFileSync(`/proc/${entry}/cmdline`, 'utf8')
      if (cmd.includes(dir) && !askers.has(Number(entry))) out.push(Number(entry))
    } catch {
      // gone meanwhile
    }
  }
  return out
}

/** This process and every parent up to init, from /proc/<pid>/stat (field 4 is the parent pid). */
function ancestorsOfSelf(): Set<number> {
  const pids = new Set<number>()
  for (let pid = process.pid; pid > 1 && !pids.has(pid);) {
    pids.add(pid)
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
      pid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
    } catch {
      break
    }
  }
  return pids
}

// The binary runs under a small shell that holds this process's pipe: when this process dies
// (a crashed or killed test worker), the pipe closes and the shell stops the binary.
const LIFELINE = [
  'exec 3<&0',
  '"$@" </dev/null 3<&- & pid=$!',
  'stop() { kill -TERM $pid 2>/dev/null; for i in $(seq 100); do kill -0 $pid 2>/dev/null || return 0; sleep 0.1; done; kill -KILL $pid 2>/dev/null; }',
  '( cat <&3 >/dev/null; stop ) &',
  'trap "stop; wait $pid; exit 143" TERM',
  'wait $pid',
].join('\n')

// A process that outlives this one (npm run cluster): its own session, output to its log.
export function spawnDetached(bin: string, args: string[], log: string): ChildProcess {
  const out = openSync(log, 'a')
  const child = spawn(bin, args, { stdio: ['ignore', out, out], detached: true })
  child.on('error', () => undefined)
  child.unref()
  return child
}

/**
 * Stops every live process whose command line names `dir` (SIGTERM, then SIGKILL after
 * `graceMs`): what a control plane or node started there, and nothing else.
 */
export async function stopProcessesUsing(dir: string, graceMs = 15_000): Promise<void> {
  for (const pid of processesUsing(dir)) signal(pid, 'SIGTERM')
  const deadline = Date.now() + graceMs
  while (processesUsing(dir).length > 0 && Date.now() < deadline) await sleep(100)
  for (const pid of processesUsing(dir)) signal(pid, 'SIGKILL')
  const killed = Date.now() + 5_000
  while (processesUsing(dir).length > 0 && Date.now() < killed) await sleep(50)
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig)
  } catch {
    // gone meanwhile
  }
}

/** Starts `bin` under the lifeline, its output appended to `log`. */
export function spawnWithLifeline(bin: string, args: string[], log: string): ChildProcess {
  const out = openSync(log, 'a')
  const child = spawn('bash', ['-c', LIFELINE, 'lifeline', bin, ...args], { stdio: ['pipe', out, out] })
  child.on('error', () => undefined)
  return child
}

/** Stops a lifeline-held process: SIGTERM (its stdin closed), SIGKILL after 15 s. */
export async function terminate(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise<void>((done) => child.once('exit', () => done()))
  child.stdin?.end()
  child.kill('SIGTERM')
  const killer = setTimeout(() => child.kill('SIGKILL'), 15_000)
  await exited
  clearTimeout(killer)
}

/** `n` distinct ports free on 127.0.0.1 when asked. */
export async function freePorts(n: number): Promise<number[]> {
  const servers = await Promise.all(Array.from({ length: n }, () => new Promise<ReturnType<typeof createServer>>((resolve, reject) => {
    const srv = createServer()
    srv.once('error', reject)
    srv.listen(0, '127.0.0.1', () => resolve(srv))
  })))
  const ports = servers.map((s) => {
    const a = s.address()
    return typeof a === 'object' && a ? a.port : 0
  })
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))))
  return ports
}

/** Resolves after `ms`. */
export const sleep = (ms: number) => new Promise((wake) => setTimeout(wake, ms))
