// Cold start to first handled CloudEvent: spawn a server process, POST one binary CloudEvent
// until it answers, and report the median of several runs per server next to a bare node:http
// server measured in the same run. Run: node --import tsx bench/cold-start.ts
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { request } from 'node:http'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { CloudEvent, HTTP } from 'cloudevents'

const ROOT = fileURLToPath(new URL('../', import.meta.url))
const RUNS = 7
const FUNCTIONS = ['workflow-changed', 'step-job-finished', 'resync-tick', 'dead-letter']

/** What to start: a Node script and the environment it gets on top of $PORT. */
export interface ServerUnderTest {
  name: string
  script: string
  env: Record<string, string>
}

/** One HTTP request, already encoded. */
export interface EncodedEvent {
  headers: Record<string, string>
  body: string
}

/** One cold start: the first HTTP status the fresh process answered, and how long that took. */
export interface ColdStart {
  status: number
  ms: number
}

/**
 * A Job update as the jobs ApiServerSource would send it, for a Job without the
 * purko.io/workflow label: every function can answer it without calling the Kubernetes API.
 */
export function unrelatedJobEvent(): EncodedEvent {
  const job = {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name: 'nightly-backup', namespace: 'ai-agents', uid: '00000000-0000-4000-8000-000000000001', resourceVersion: '1', labels: { app: 'backup' } },
    spec: { template: { spec: { restartPolicy: 'Never', containers: [{ name: 'backup', image: 'backup' }] } } },
    status: { succeeded: 1, conditions: [{ type: 'Complete', status: 'True' }] },
  }
  const message = HTTP.binary(new CloudEvent({
    type: 'dev.knative.apiserver.resource.update',
    source: 'https://10.96.0.1:443',
    subject: '/apis/batch/v1/namespaces/ai-agents/jobs/nightly-backup',
    datacontenttype: 'application/json',
    data: job,
    kind: 'Job',
    apiversion: 'batch/v1',
    name: 'nightly-backup',
    namespace: 'ai-agents',
    kineticsource: 'jobs',
  }))
  return { headers: message.headers as Record<string, string>, body: message.body as string }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer()
    probe.once('error', reject)
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address()
      probe.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))))
    })
  })
}

function post(port: number, event: EncodedEvent): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method: 'POST', path: '/', headers: event.headers, agent: false }, (res) => {
      res.resume()
      res.once('end', () => resolve(res.statusCode ?? 0))
    })
    req.once('error', reject)
    req.end(event.body)
  })
}

/**
 * Spawns `server`, POSTs `event` every few milliseconds until the process answers, then stops it.
 * Rejects if the process exits first or does not answer within `timeoutMs`.
 */
export async function timeToFirstAnswer(server: ServerUnderTest, event: EncodedEvent, timeoutMs = 15_000): Promise<ColdStart> {
  const port = await freePort()
  const env: Record<string, string | undefined> = { ...process.env, ...server.env, PORT: String(port) }
  // The bench itself runs under a TypeScript loader; the servers under test must not.
  delete env.NODE_OPTIONS
  const started = performance.now()
  const child = spawn(process.execPath, [server.script], { env, stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
  let exited: string | undefined
  const exit = new Promise<void>((resolve) => child.once('exit', (code, signal) => {
    exited = `exited with ${signal ?? code}`
    resolve()
  }))
  try {
    while (performance.now() - started < timeoutMs) {
      if (exited) throw new Error(`${server.name} ${exited} before answering: ${stderr.trim().slice(-500)}`)
      try {
        const status = await post(port, event)
        return { status, ms: performance.now() - started }
      } catch {
        await new Promise((resolve) => setTimeout(resolve, 2))
      }
    }
    throw new Error(`${server.name} did not answer within ${timeoutMs} ms`)
  } finally {
    if (!exited) child.kill('SIGKILL')
    await exit
  }
}

/** The middle value; for an even count, the mean of the two middle values. */
export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

function writeDummyKubeconfig(dir: string): string {
  // Start-up must find a kubeconfig; nothing answers on port 1, and the probe event needs no call.
  const path = join(dir, 'kubeconfig')
  writeFileSync(path, [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '- name: unreachable',
    '  cluster: { server: "http://127.0.0.1:1", insecure-skip-tls-verify: true }',
    'users:',
    '- name: bench',
    '  user: { token: bench }',
    'contexts:',
    '- name: bench',
    '  context: { cluster: unreachable, user: bench, namespace: ai-agents }',
    'current-context: bench',
    '',
  ].join('\n'))
  return path
}

async function main(): Promise<void> {
  const build = spawnSync('npm', ['run', '-s', 'build'], { cwd: ROOT, stdio: 'inherit' })
  if (build.status !== 0) throw new Error('npm run build failed')

  const dir = mkdtempSync(join(tmpdir(), 'kinetic-cold-start-'))
  try {
    const env = { KUBECONFIG: writeDummyKubeconfig(dir), LOG_LEVEL: 'info' }
    const servers: ServerUnderTest[] = [{ name: 'bare node:http', script: join(ROOT, 'bench', 'bare-server.mjs'), env }]
    for (const name of FUNCTIONS) {
      const script = join(ROOT, 'dist', 'functions', name, 'main.js')
      if (existsSync(script)) servers.push({ name, script, env })
      else console.log(`skipped ${name}: dist/functions/${name}/main.js was not built (no functions/${name}/main.ts yet)`)
    }

    const event = unrelatedJobEvent()
    const results = new Map<string, ColdStart[]>(servers.map((s) => [s.name, []]))
    // Interleaved rounds, so a slow moment of the machine hits every server alike.
    for (let run = 0; run < RUNS; run++) {
      for (const server of servers) results.get(server.name)!.push(await timeToFirstAnswer(server, event))
    }

    const bare = median(results.get('bare node:http')!.map((r) => r.ms))
    const rows = servers.map((s) => {
      const runs = results.get(s.name)!
      const ms = median(runs.map((r) => r.ms))
      const statuses = [...new Set(runs.map((r) => r.status))].join('/')
      return { server: s.name, 'median ms': Math.round(ms), 'vs bare': `${(ms / bare).toFixed(2)}x`, status: statuses }
    })
    console.log(`\nCold start to first answer of a binary CloudEvent POST (median of ${RUNS}, Node ${process.versions.node})`)
    console.table(rows)
    const not202 = rows.filter((r) => r.status !== '202')
    if (not202.length > 0) console.log(`not a 202 answer (the time is still to the first answer): ${not202.map((r) => `${r.server} ${r.status}`).join(', ')}`)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((err: unknown) => {
    console.error(err)
    process.exitCode = 1
  })
}
