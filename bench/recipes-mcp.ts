// recipes-mcp benchmark: the recipes MCP server (functions/recipes-mcp, bundled by npm run build
// into a scratch folder) as its own process against the embedded API server (crds/ installed,
// one template and BENCH_RECIPES_MCP_RECIPES instances in ai-agents), auth `none` as on the local
// plane, called with the SDK's Streamable HTTP client:
//   cold: spawn the process -> first tools/call answered (connect = initialize + initialized,
//         retried until the port answers, then list-recipes), median of several spawns;
//   warm: median / p95 of N sequential calls of list-recipes and of get-recipe-status;
//   throughput: calls/s of one process with 1, 4 and 16 concurrent clients (each its own
//         client, alternating list-recipes and get-recipe-status, for a fixed time).
// The API server runs in this process, so it shares the CPU with the client side.
// Run: node --import tsx bench/recipes-mcp.ts   (BENCH_RECIPES_MCP_RUNS=7, _CALLS=200, _SECONDS=3)
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { ApiextensionsV1Api, loadYaml, type V1CustomResourceDefinition } from '@kubernetes/client-node'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { startApiServer } from '../local/apiserver/index.js'
import { timeToFirstAnswer, unrelatedJobEvent } from './cold-start.js'
import { median, percentile } from './stats.js'
import { freePort } from '../local/free-port.js'

const ROOT = fileURLToPath(new URL('../', import.meta.url))
const RUNS = Number(process.env.BENCH_RECIPES_MCP_RUNS ?? 7)
const CALLS = Number(process.env.BENCH_RECIPES_MCP_CALLS ?? 200)
const SECONDS = Number(process.env.BENCH_RECIPES_MCP_SECONDS ?? 3)
const RECIPES = Number(process.env.BENCH_RECIPES_MCP_RECIPES ?? 20)
const CONCURRENCY = [1, 4, 16]
const NS = 'ai-agents'

const LIST = { name: 'list-recipes', arguments: { namespace: NS } }
const STATUS = { name: 'get-recipe-status', arguments: { namespace: NS, name: 'web-0' } }

const ms = (v: number) => Number(v.toFixed(2))

/** A recipe as an author would apply it: one web Deployment; `template` marks it a template. */
function recipe(name: string, template: boolean): Record<string, unknown> {
  return {
    apiVersion: 'purko.io/v1alpha1',
    kind: 'WorkflowRecipe',
    metadata: { name, namespace: NS, ...(template ? { annotations: { 'purko.io/template': 'true' } } : {}) },
    spec: {
      description: `bench recipe ${name}`,
      inputs: [{ name: 'greeting', type: 'string', default: 'Hello' }],
      workloads: [{
        name: 'web', kind: 'Deployment', image: 'nginxinc/nginx-unprivileged:1.27-alpine',
        env: [{ name: 'GREETING', value: '{{inputs.greeting}}' }], ports: [{ name: 'http', port: 80, targetPort: 8080 }],
      }],
    },
  }
}

async function connect(url: string): Promise<Client> {
  const client = new Client({ name: 'bench-recipes-mcp', version: '1.0.0' })
  await client.connect(new StreamableHTTPClientTransport(new URL(url)))
  return client
}

async function call(client: Client, req: { name: string; arguments: Record<string, unknown> }): Promise<void> {
  const result = await client.callTool(req)
  if (result.isError || result.structuredContent === undefined) throw new Error(`${req.name} answered ${JSON.stringify(result).slice(0, 300)}`)
}


/** A running recipes-mcp process, and how long it took from spawn to its first answered tools/call. */
async function startFunction(script: string, kubeconfig: string): Promise<{ url: string; connectedMs: number; coldMs: number; stop: () => Promise<void> }> {
  const port = await freePort()
  const env: Record<string, string | undefined> = { ...process.env, PORT: String(port), HOST: '127.0.0.1', KUBECONFIG: kubeconfig, KINETIC_RECIPES_MCP_AUTH: 'none', LOG_LEVEL: 'warn' }
  // The bench runs under a TypeScript loader; the bundled function must not.
  delete env.NODE_OPTIONS
  const url = `http://127.0.0.1:${port}/mcp`
  const started = performance.now()
  const child = spawn(process.execPath, [script], { env, stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  child.stderr.on('data', (c: Buffer) => { stderr += c.toString() })
  let exited: string | undefined
  const exit = new Promise<void>((resolve) => child.once('exit', (code, signal) => { exited = `exited with ${signal ?? code}`; resolve() }))
  const stop = async () => {
    if (!exited) child.kill('SIGKILL')
    await exit
  }
  for (;;) {
    if (exited) throw new Error(`recipes-mcp ${exited} before answering: ${stderr.trim().slice(-500)}`)
    if (performance.now() - started > 15_000) {
      await stop()
      throw new Error(`recipes-mcp did not answer within 15 s: ${stderr.trim().slice(-500)}`)
    }
    let client: Client | undefined
    try {
      client = await connect(url)
    } catch {
      await new Promise((r) => setTimeout(r, 2))
      continue
    }
    const connectedMs = performance.now() - started
    await call(client, LIST)
    const coldMs = performance.now() - started
    await client.close()
    return { url, connectedMs, coldMs, stop }
  }
}

async function main(): Promise<void> {
  const scratch = mkdtempSync(join(tmpdir(), 'kinetic-bench-recipes-mcp-'))
  const outdir = join(scratch, 'dist')
  // A scratch build: the shared dist/ may be in use by others.
  const build = spawnSync(process.execPath, [join(ROOT, 'scripts', 'build.mjs'), '--outdir', outdir], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] })
  if (build.status !== 0) throw new Error('npm run build failed')
  const script = join(outdir, 'functions', 'recipes-mcp', 'main.js')
  if (!existsSync(script)) throw new Error('functions/recipes-mcp/main.ts was not built (it does not exist yet?)')

  const api = await startApiServer()
  try {
    const ext = api.kubeConfigObject().makeApiClient(ApiextensionsV1Api)
    const crds = join(ROOT, 'crds')
    for (const file of readdirSync(crds).filter((f) => f.endsWith('.purko.io.yaml'))) {
      await ext.createCustomResourceDefinition({ body: loadYaml<V1CustomResourceDefinition>(readFileSync(join(crds, file), 'utf8')) })
    }
    const collection = `${api.url}/apis/purko.io/v1alpha1/namespaces/${NS}/workflowrecipes`
    const post = (body: unknown) => fetch(collection, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
    // CRDs are served once established.
    for (let i = 0; i < 100 && (await fetch(collection)).status !== 200; i++) await new Promise((r) => setTimeout(r, 50))
    const objects = [recipe('hello-web', true), ...Array.from({ length: RECIPES }, (_, i) => recipe(`web-${i}`, false))]
    for (const o of objects) {
      const res = await post(o)
      if (res.status !== 201) throw new Error(`could not create a recipe: ${res.status} ${await res.text()}`)
    }
    const kubeconfig = join(scratch, 'kubeconfig')
    writeFileSync(kubeconfig, api.kubeconfig())

    console.log(`recipes-mcp (bundled) against the embedded API server, auth none, ${objects.length} recipes in ${NS} (1 template); Node ${process.versions.node}`)

    const cold: number[] = []
    const connected: number[] = []
    const bare: number[] = []
    // Interleaved with a bare node:http server, so a slow moment of the machine hits both alike.
    for (let i = 0; i < RUNS; i++) {
      const fn = await startFunction(script, kubeconfig)
      cold.push(fn.coldMs)
      connected.push(fn.connectedMs)
      await fn.stop()
      bare.push((await timeToFirstAnswer({ name: 'bare node:http', script: join(ROOT, 'bench', 'bare-server.mjs'), env: {} }, unrelatedJobEvent())).ms)
    }
    const stats = (v: number[]) => `median ${ms(median(v))} ms (min ${ms(Math.min(...v))}, max ${ms(Math.max(...v))})`
    console.log(`\nCold, ${RUNS} spawns each:`)
    console.log(`  spawn -> first tools/call (list-recipes) answered   ${stats(cold)}`)
    console.log(`  spawn -> initialize answered (SDK connect)          ${stats(connected)}`)
    console.log(`  bare node:http, spawn -> first answer (reference)   ${stats(bare)}`)

    const fn = await startFunction(script, kubeconfig)
    try {
      const client = await connect(fn.url)
      for (let i = 0; i < 20; i++) await call(client, i % 2 === 0 ? LIST : STATUS)
      const warm: Array<Record<string, unknown>> = []
      for (const req of [LIST, STATUS]) {
        const times: number[] = []
        for (let i = 0; i < CALLS; i++) {
          const t = performance.now()
          await call(client, req)
          times.push(performance.now() - t)
        }
        warm.push({ tool: req.name, calls: CALLS, 'median ms': ms(median(times)), 'p95 ms': ms(percentile(times, 95)), 'max ms': ms(Math.max(...times)) })
      }
      await client.close()
      console.log(`\nWarm: sequential tools/call on one process (list-recipes returns ${objects.length} items)`)
      console.table(warm)

      const rows: Array<Record<string, unknown>> = []
      for (const c of CONCURRENCY) {
        const clients = await Promise.all(Array.from({ length: c }, () => connect(fn.url)))
        const latencies: number[] = []
        const end = performance.now() + SECONDS * 1000
        const t0 = performance.now()
        await Promise.all(clients.map(async (cl, k) => {
          for (let i = k; performance.now() < end; i++) {
            const t = performance.now()
            await call(cl, i % 2 === 0 ? LIST : STATUS)
            latencies.push(performance.now() - t)
          }
        }))
        const elapsed = (performance.now() - t0) / 1000
        rows.push({ clients: c, calls: latencies.length, 'calls/s': Math.round(latencies.length / elapsed), 'median ms': ms(median(latencies)), 'p95 ms': ms(percentile(latencies, 95)) })
        await Promise.all(clients.map((cl) => cl.close()))
      }
      console.log(`\nThroughput: one process, concurrent clients alternating list-recipes and get-recipe-status for ${SECONDS} s`)
      console.table(rows)
    } finally {
      await fn.stop()
    }
  } finally {
    await api.close()
    rmSync(scratch, { recursive: true, force: true })
  }
}

main().catch((err: unknown) => {
  console.error(err)
  process.exitCode = 1
})
