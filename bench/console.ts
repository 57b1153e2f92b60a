// The console's figures: first page (process spawn to the first /workflows answer, as a cold
// start would see it) and a warm request; bytes shipped per page (HTML + CSS + JS, raw and
// gzip); live-update latency from a status write (kube.patchWorkflowStatus) to the browser's
// DOM change, in headless Chromium when there is one. Prints figures, asserts nothing.
// Run: node --import tsx bench/console.ts
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { gzipSync } from 'node:zlib'
import { startApiServer } from '../local/apiserver/index.js'
import { freePort } from '../local/free-port.js'
import { KubeHttp, type KubeObject } from '../local/knative/kube-http.js'
import { KubeClient } from '../shared/kube/client.js'
import type { WorkflowStatus } from '../shared/schemas/workflow.js'
import { findChromium, launchChromium } from '../test/browser/chromium.js'
import { median, percentile } from './stats.js'

const ROOT = fileURLToPath(new URL('../', import.meta.url))
const NS = 'ai-agents'
const RUN = 'bench-run'
const COLD_RUNS = 5
const WARM_REQUESTS = 50
const WRITES = 20

const ms = (x: number) => `${x.toFixed(1)} ms`
const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`

const api = await startApiServer()
const scratch = mkdtempSync(join(tmpdir(), 'kinetic-bench-console-'))
const kubeconfig = join(scratch, 'kubeconfig')
writeFileSync(kubeconfig, api.kubeconfig(), { mode: 0o600 })
const http = new KubeHttp(api.kubeConfigObject())
for (const file of readdirSync(join(ROOT, 'crds')).filter((f) => f.endsWith('.purko.io.yaml'))) {
  const { parse } = await import('yaml')
  await http.apply(parse(readFileSync(join(ROOT, 'crds', file), 'utf8')) as KubeObject)
}
await new Promise((r) => setTimeout(r, 300))
http.forgetDiscovery()
await http.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } })
const steps = ['plan', 'research', 'draft', 'review', 'publish']
await http.apply({
  apiVersion: 'purko.io/v1alpha1', kind: 'Workflow', metadata: { name: RUN, namespace: NS },
  spec: { parameters: { release: 'v1' }, steps: steps.map((name, i) => ({ name, type: 'notification', ...(i > 0 ? { dependsOn: [steps[i - 1]] } : {}) })) },
} as KubeObject)
const kube = new KubeClient(api.kubeConfigObject())
const statusWith = (phase: 'Running' | 'Succeeded'): WorkflowStatus => ({
  phase: 'Running', startTime: new Date().toISOString(),
  stepStatuses: [{ name: 'plan', phase: 'Succeeded' }, { name: 'research', phase }],
} as WorkflowStatus)
await kube.patchWorkflowStatus(NS, RUN, (await kube.getWorkflow(NS, RUN))?.metadata.resourceVersion ?? '', statusWith('Running'))

const DEV = ['--import', 'tsx', join(ROOT, 'scripts', 'run-function.ts'), 'console']

async function startConsole(args: string[] = DEV): Promise<{ child: ChildProcess; url: string; firstMs: number }> {
  const port = await freePort()
  const url = `http://127.0.0.1:${port}`
  const t0 = performance.now()
  const child = spawn(process.execPath, args, {
    cwd: ROOT, stdio: 'ignore',
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', KUBECONFIG: kubeconfig, KINETIC_CONSOLE_AUTH: 'local', KINETIC_CONSOLE_ACTIONS: 'true', KINETIC_CONSOLE_SECURE_COOKIES: 'false', LOG_LEVEL: 'warn' },
  })
  for (;;) {
    try {
      const res = await fetch(`${url}/workflows`)
      await res.arrayBuffer()
      if (res.status === 200) return { child, url, firstMs: performance.now() - t0 }
    } catch {
      // not listening yet
    }
    if (child.exitCode !== null) throw new Error(`The console exited (${child.exitCode}) before its first page`)
    await new Promise((r) => setTimeout(r, 5))
  }
}

const stopConsole = (child: ChildProcess) => new Promise<void>((r) => { child.once('exit', () => r()); child.kill('SIGTERM') })

// As the image runs it: the built bundle (assets pre-bundled, the Kubernetes client a lazy chunk).
const outdir = join(scratch, 'dist')
const built = spawnSync(process.execPath, [join(ROOT, 'scripts', 'build.mjs'), '--outdir', outdir, '--only', 'console'], { cwd: ROOT, encoding: 'utf8' })
if (built.status !== 0) throw new Error(`npm run build failed: ${built.stderr}`)
for (const [what, args] of [['built bundle (the image)', [join(outdir, 'functions', 'console', 'main.js')]], ['tsx (npm start; assets bundled by esbuild at start)', DEV]] as const) {
  const cold: number[] = []
  for (let i = 0; i < COLD_RUNS; i++) {
    const { child, firstMs } = await startConsole([...args])
    cold.push(firstMs)
    await stopConsole(child)
  }
  print(`first page, ${what}: process spawn -> first 200 of /workflows: median ${ms(median(cold))} of ${COLD_RUNS} (min ${ms(Math.min(...cold))}, max ${ms(Math.max(...cold))})`)
}

const { child, url } = await startConsole()
const warm: number[] = []
for (let i = 0; i < WARM_REQUESTS; i++) {
  const t0 = performance.now()
  await (await fetch(`${url}/workflows`)).arrayBuffer()
  warm.push(performance.now() - t0)
}
print(`warm /workflows: median ${ms(median(warm))}, p95 ${ms(percentile(warm, 95))} over ${WARM_REQUESTS} requests`)

print('bytes shipped per page (HTML + linked CSS + JS; each asset counted on every page that links it):')
const pages = ['/workflows', `/workflows/${NS}/${RUN}`, `/workflows/${NS}/${RUN}/steps/plan`, '/agents', '/mcpservers', '/providers', '/recipes']
for (const path of pages) {
  const res = await fetch(`${url}${path}`)
  const htmlBytes = Buffer.from(await res.arrayBuffer())
  const text = htmlBytes.toString('utf8')
  const assets = [...text.matchAll(/<(?:link[^>]*href|script[^>]*src)="(\/assets\/[^"]+)"/g)].map((m) => m[1] as string)
  let raw = htmlBytes.length
  let gzip = gzipSync(htmlBytes).length
  const parts = [`html ${kb(htmlBytes.length)}`]
  for (const asset of [...new Set(assets)]) {
    const body = Buffer.from(await (await fetch(`${url}${asset}`)).arrayBuffer())
    raw += body.length
    gzip += gzipSync(body).length
    parts.push(`${asset.split('/').pop()} ${kb(body.length)}`)
  }
  print(`  ${path.padEnd(44)} ${String(res.status)}  raw ${kb(raw).padStart(9)}  gzip ${kb(gzip).padStart(9)}  (${parts.join(', ')})`)
}

const chromium = findChromium()
if (!chromium.available) {
  print(`live-update latency: not measured (${chromium.reason})`)
} else {
  const browser = await launchChromium(chromium.path)
  const page = await browser.newPage()
  await page.goto(`${url}/workflows/${NS}/${RUN}`)
  await page.waitForSelector('.dag [data-step="research"].phase-Running')
  // Let the live stream connect before the first write.
  await new Promise((r) => setTimeout(r, 1000))
  const latencies: number[] = []
  for (let i = 0; i < WRITES; i++) {
    const next = i % 2 === 0 ? 'Succeeded' : 'Running'
    // A string, not a function: tsx's transform would wrap a function in helpers the page lacks.
    const changed = page.evaluate(`new Promise((resolve) => {
      const selector = '.dag [data-step="research"].phase-${next}'
      if (document.querySelector(selector)) return resolve()
      const observer = new MutationObserver(() => { if (document.querySelector(selector)) { observer.disconnect(); resolve() } })
      observer.observe(document.body, { subtree: true, attributes: true, childList: true })
    })`)
    await new Promise((r) => setTimeout(r, 20))
    const wf = await kube.getWorkflow(NS, RUN)
    const t0 = performance.now()
    await kube.patchWorkflowStatus(NS, RUN, wf?.metadata.resourceVersion ?? '', statusWith(next))
    await changed
    latencies.push(performance.now() - t0)
  }
  print(`live-update latency: status write -> DOM class change in Chromium: median ${ms(median(latencies))}, p95 ${ms(percentile(latencies, 95))} over ${WRITES} writes`)
  await browser.close()
}

await stopConsole(child)
await api.close()

function print(line: string): void {
  process.stdout.write(`${line}\n`)
}
