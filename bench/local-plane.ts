// Local plane benchmark: wall time from the one command (`npm run demo`) to the bundled example
// Workflow's Succeeded, over several fresh runs. Each run starts everything from nothing: the
// embedded API server, the CRDs, one process per function, the Job runner and the step processes.
// Run: node --import tsx bench/local-plane.ts   (BENCH_DEMO_RUNS=3; each run may take 120 s at most)
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const ROOT = fileURLToPath(new URL('../', import.meta.url))
const RUNS = Number(process.env.BENCH_DEMO_RUNS ?? 3)

interface DemoRun {
  /** Spawn until exit, as the user waits for it. */
  wallSeconds: number
  /** `Kinetic demo: starting...` until the first example object was applied (plane ready). */
  readySeconds: number
  /** What the command prints in `Demo Succeeded in N s.` */
  reportedSeconds: number
  events: string
}

function demo(): Promise<DemoRun> {
  return new Promise((resolve, reject) => {
    const started = performance.now()
    // The command a user types; npm's own start-up is part of what they wait for.
    const child = spawn('npm', ['run', '-s', 'demo'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    child.stdout.on('data', (c: Buffer) => { out += c.toString() })
    child.stderr.on('data', (c: Buffer) => { out += c.toString() })
    child.once('error', reject)
    child.once('exit', (code) => {
      const wallSeconds = (performance.now() - started) / 1000
      const reported = /^Demo Succeeded in ([\d.]+) s\.$/m.exec(out)
      const ready = /^\s*([\d.]+)s apply /m.exec(out)
      const events = /^Events: .*$/m.exec(out)
      if (code !== 0 || !reported || !ready || !events) {
        reject(new Error(`npm run demo exited ${code}; last output:\n${out.split('\n').slice(-15).join('\n')}`))
        return
      }
      resolve({ wallSeconds, readySeconds: Number(ready[1]), reportedSeconds: Number(reported[1]), events: events[0] })
    })
  })
}

const runs: DemoRun[] = []
// Sequential: parallel runs would compete for the same cores and skew each other.
for (let i = 0; i < RUNS; i++) runs.push(await demo())

const stats = (values: number[]) => {
  const s = [...values].sort((a, b) => a - b)
  return [s[Math.floor((s.length - 1) / 2)]!, s[0]!, s[s.length - 1]!].map((v) => v.toFixed(1))
}
console.log(`npm run demo to the example Workflow's Succeeded, ${RUNS} fresh runs (Node ${process.version})`)
const rows = [
  ['whole command, spawn to exit (wall)', ...stats(runs.map((r) => r.wallSeconds))],
  ['as reported ("Demo Succeeded in N s")', ...stats(runs.map((r) => r.reportedSeconds))],
  ['  of which plane start-up (to first apply)', ...stats(runs.map((r) => r.readySeconds))],
]
const head = ['seconds', 'median', 'min', 'max']
const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)))
const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')
console.log(line(head))
console.log(widths.map((w) => '-'.repeat(w)).join('-|-'))
for (const r of rows) console.log(line(r))
console.log(`Last run: ${runs[runs.length - 1]!.events}`)
