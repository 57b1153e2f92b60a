// Cold start to first handled CloudEvent: spawn a server process, POST one binary CloudEvent
// until it answers, and report the median of several runs per server next to a bare node:http
// server measured in the same run. Each function gets an event it handles to the end (202);
// the functions talk to a stub API server that counts their calls.
// Run: node --import tsx bench/cold-start.ts
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer as createHttpServer, request, type Server } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { CloudEvent, HTTP } from 'cloudevents'
import { freePort } from '../local/free-port.js'
import { median } from './stats.js'

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

function encode(event: CloudEvent<unknown>): EncodedEvent {
  const message = HTTP.binary(event)
  return { headers: message.headers as Record<string, string>, body: message.body as string }
}

/**
 * A Job update as the jobs ApiServerSource would send it, for a Job without the
 * purko.io/workflow label: a function answers it without calling the Kubernetes API.
 */
export function unrelatedJobEvent(): EncodedEvent {
  const job = {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name: 'nightly-backup', namespace: 'ai-agents', uid: '00000000-0000-4000-8000-000000000001', resourceVersion: '1', labels: { app: 'backup' } },
    spec: { template: { spec: { restartPolicy: 'Never', containers: [{ name: 'backup', image: 'backup' }] } } },
    status: { succeeded: 1, conditions: [{ type: 'Complete', status: 'True' }] },
  }
  return encode(new CloudEvent({
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
}

/** A Workflow update during deletion, as the workflows source sends it: nothing left to do. */
export function deletingWorkflowEvent(): EncodedEvent {
  const workflow = {
    apiVersion: 'purko.io/v1alpha1',
    kind: 'Workflow',
    metadata: {
      name: 'research', namespace: 'ai-agents', uid: '00000000-0000-4000-8000-000000000002', generation: 1, resourceVersion: '7',
      deletionTimestamp: '2026-01-01T00:00:00Z', finalizers: ['example.com/hold'],
    },
    spec: { steps: [{ name: 'plan', agentRef: { name: 'planner' } }] },
  }
  return encode(new CloudEvent({
    type: 'dev.knative.apiserver.resource.update',
    source: 'https://10.96.0.1:443',
    subject: '/apis/purko.io/v1alpha1/namespaces/ai-agents/workflows/research',
    datacontenttype: 'application/json',
    data: workflow,
    kind: 'Workflow',
    apiversion: 'purko.io/v1alpha1',
    name: 'research',
    namespace: 'ai-agents',
    kineticsource: 'workflows',
  }))
}

/** A resync tick exactly as knative/sources/resync.yaml sends it. */
export function resyncTickEvent(): EncodedEvent {
  return encode(new CloudEvent({
    type: 'dev.knative.sources.ping',
    source: '/apis/v1/namespaces/kinetic-system/pingsources/resync',
    datacontenttype: 'application/json',
    data: { reason: 'resync' },
    kineticsource: 'resync',
  }))
}

/** The event each server is probed with, and what it costs the function in API calls. */
const PROBES: Record<string, { describe: string; event: () => EncodedEvent }> = {
  'workflow-changed': { describe: 'Workflow update while deleting', event: deletingWorkflowEvent },
  'step-job-finished': { describe: 'update of a Job Kinetic does not own', event: unrelatedJobEvent },
  'resync-tick': { describe: 'resync tick, no Workflows to list', event: resyncTickEvent },
  'dead-letter': { describe: 'dead-lettered Job update', event: unrelatedJobEvent },
}

/** A stand-in API server: every list is empty, everything else is 404; it counts requests. */
export async function startStubApiServer(): Promise<{ url: string; requests: () => number; close: () => Promise<void> }> {
  let count = 0
  const server: Server = createHttpServer((req, res) => {
    count++
    req.resume()
    const path = (req.url ?? '').split('?')[0] ?? ''
    // After /api/v1 or /apis/<group>/<version>, a collection is `<plural>` or `namespaces/<ns>/<plural>`.
    const rest = path.split('/').slice(path.startsWith('/api/') ? 3 : 4)
    const isList = req.method === 'GET' && (rest.length === 1 || (rest.length === 3 && rest[0] === 'namespaces'))
    res.setHeader('content-type', 'application/json')
    if (isList) {
      res.end(JSON.stringify({ apiVersion: 'v1', kind: 'List', metadata: { resourceVersion: '1' }, items: [] }))
    } else {
      res.statusCode = 404
      res.end(JSON.stringify({ apiVersion: 'v1', kind: 'Status', status: 'Failure', reason: 'NotFound', code: 404 }))
    }
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  const port = typeof address === 'object' && address ? address.port : 0
  return {
    url: `http://127.0.0.1:${port}`,
    requests: () => count,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  }
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

function writeKubeconfig(dir: string, server: string): string {
  const path = join(dir, 'kubeconfig')
  writeFileSync(path, [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '- name: unreachable',
    `  cluster: { server: "${server}", insecure-skip-tls-verify: true }`,
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
  const api = await startStubApiServer()
  try {
    const env = { KUBECONFIG: writeKubeconfig(dir, api.url), LOG_LEVEL: 'info' }
    const servers: Array<ServerUnderTest & { probe: string; event: EncodedEvent }> = [
      { name: 'bare node:http', script: join(ROOT, 'bench', 'bare-server.mjs'), env, probe: 'any POST', event: unrelatedJobEvent() },
    ]
    for (const name of FUNCTIONS) {
      const script = join(ROOT, 'dist', 'functions', name, 'main.js')
      const probe = PROBES[name]!
      if (existsSync(script)) servers.push({ name, script, env, probe: probe.describe, event: probe.event() })
      else console.log(`skipped ${name}: dist/functions/${name}/main.js was not built (no functions/${name}/main.ts yet)`)
    }

    const results = new Map<string, Array<ColdStart & { apiCalls: number }>>(servers.map((s) => [s.name, []]))
    // Interleaved rounds, so a slow moment of the machine hits every server alike.
    for (let run = 0; run < RUNS; run++) {
      for (const server of servers) {
        const before = api.requests()
        const result = await timeToFirstAnswer(server, server.event)
        results.get(server.name)!.push({ ...result, apiCalls: api.requests() - before })
      }
    }

    const bare = median(results.get('bare node:http')!.map((r) => r.ms))
    const rows = servers.map((s) => {
      const runs = results.get(s.name)!
      const ms = median(runs.map((r) => r.ms))
      return {
        server: s.name,
        probe: s.probe,
        'median ms': Math.round(ms),
        'vs bare': `${(ms / bare).toFixed(2)}x`,
        status: [...new Set(runs.map((r) => r.status))].join('/'),
        'API calls': [...new Set(runs.map((r) => r.apiCalls))].join('/'),
      }
    })
    console.log(`\nCold start: spawn to first answer of a binary CloudEvent POST (median of ${RUNS}, Node ${process.versions.node})`)
    console.table(rows)
    const not202 = rows.filter((r) => r.status !== '202')
    if (not202.length > 0) console.log(`not a 202 answer (the time is still to the first answer): ${not202.map((r) => `${r.server} ${r.status}`).join(', ')}`)
  } finally {
    await api.close()
    rmSync(dir, { recursive: true, force: true })
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((err: unknown) => {
    console.error(err)
    process.exitCode = 1
  })
}
