// WorkflowRecipe benchmark.
// (a) The pure pipeline per example of reference/recipes/examples: renderRecipe, buildManifests
//     and snapshot (revision 1), median and p95 over BENCH_RECIPE_RUNS runs after a warm-up.
// (b) reconcileRecipe on the embedded API server (local/apiserver with crds/, the real KubeClient
//     over HTTP, the workload controller emulation of local/workloads giving Deployments ready
//     pods) for recipes of 1 / 10 / 32 Deployments (32: the CRD's maxItems of spec.workloads) with a port each (so a Service each), every
//     one but w0 depending on w0: a fresh recipe driven to Active (reconciles,
//     API calls, time), then a child event on the Active recipe that changes nothing (one
//     reconcile: API calls and time, median and p95 of several).
// Run: node --import tsx bench/recipes.ts   (BENCH_RECIPE_RUNS=200, BENCH_RECIPE_SIZES=1,10,32)
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { ApiextensionsV1Api, loadYaml, type V1CustomResourceDefinition } from '@kubernetes/client-node'
import { parseAllDocuments } from 'yaml'
import { startApiServer } from '../local/apiserver/index.js'
import { startWorkloadControllers } from '../local/workloads/controllers.js'
import { reconcileRecipe, type RecipeDeps } from '../shared/recipe/controller.js'
import { KubeClient } from '../shared/kube/client.js'
import { recipeConfig } from '../shared/recipe/plan/config.js'
import { buildManifests } from '../shared/recipe/plan/manifests.js'
import { renderRecipe } from '../shared/recipe/plan/render.js'
import { snapshot } from '../shared/recipe/plan/snapshot.js'
import { WorkflowRecipeSchema, type WorkflowRecipe } from '../shared/schemas/workflowrecipe.js'
import { countingKube } from '../test/support/counting-kube.js'
import { testDeps } from '../test/support/engine-deps.js'
import { referenceDir } from '../test/support/reference.js'

const RUNS = Number(process.env.BENCH_RECIPE_RUNS ?? 200)
const SIZES = (process.env.BENCH_RECIPE_SIZES ?? '1,10,32').split(',').map(Number)
const STEADY_RUNS = 20
const config = recipeConfig({})

const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? 0
}
const us = (ms: number) => `${(ms * 1000).toFixed(0).padStart(6)} µs`
const fmtCalls = (calls: Map<string, number>, per = 1) =>
  [...calls].sort().map(([k, v]) => `${k} ${Number.isInteger(v / per) ? v / per : (v / per).toFixed(1)}`).join(', ') || 'none'
const total = (calls: Map<string, number>) => [...calls.values()].reduce((a, b) => a + b, 0)

// ---------------------------------------------------------------------------------------------
// (a) render cost

console.log(`(a) render pipeline, ${RUNS} runs each after ${Math.min(RUNS, 20)} warm-up: median / p95`)
const examplesDir = join(referenceDir(), 'recipes', 'examples')
for (const file of readdirSync(examplesDir).filter((f) => f.endsWith('.yaml')).sort()) {
  const docs = parseAllDocuments(readFileSync(join(examplesDir, file), 'utf8')).map((d) => d.toJS() as { kind?: string } | null)
  for (const doc of docs.filter((d) => d?.kind === 'WorkflowRecipe')) {
    const recipe = WorkflowRecipeSchema.parse(doc)
    const label = `${file} ${recipe.metadata.name}`.padEnd(44)
    const first = renderRecipe(recipe, config)
    if (!first.ok) {
      console.log(`  ${label} does not render: ${first.errors.map((e) => e.message).join('; ')}`)
      continue
    }
    const times = { render: [] as number[], build: [] as number[], snapshot: [] as number[], all: [] as number[] }
    let objects = 0
    let bytes = 0
    for (let i = 0; i < RUNS + Math.min(RUNS, 20); i++) {
      const t0 = performance.now()
      const rendered = renderRecipe(recipe, config)
      const t1 = performance.now()
      if (!rendered.ok) throw new Error(`${file}: render failed on run ${i}`)
      const built = buildManifests(recipe, rendered, config, 1)
      const t2 = performance.now()
      const snap = snapshot(recipe, rendered, config, 1)
      const t3 = performance.now()
      if (i < Math.min(RUNS, 20)) continue
      times.render.push(t1 - t0)
      times.build.push(t2 - t1)
      times.snapshot.push(t3 - t2)
      times.all.push(t3 - t0)
      objects = built.children.length
      bytes = snap.ok ? Object.values(snap.configMap.data).reduce((a, v) => a + v.length, 0) : 0
    }
    const cell = (xs: number[]) => `${us(quantile(xs, 0.5))} / ${us(quantile(xs, 0.95))}`
    console.log(`  ${label} render ${cell(times.render)}  build ${cell(times.build)}  snapshot ${cell(times.snapshot)}  total ${cell(times.all)}  (${objects} objects, snapshot ${(bytes / 1024).toFixed(1)} KiB)`)
  }
}

// ---------------------------------------------------------------------------------------------
// (b) reconcile cost on the embedded API server

console.log('\n(b) reconcileRecipe on the embedded API server (KubeClient over HTTP, crds/ installed, emulated workload controllers); API calls counted at the Kube port')
const api = await startApiServer()
const kc = api.kubeConfigObject()
const ext = kc.makeApiClient(ApiextensionsV1Api)
const crds = join(import.meta.dirname, '..', 'crds')
for (const file of readdirSync(crds).filter((f) => f.endsWith('.purko.io.yaml'))) {
  await ext.createCustomResourceDefinition({ body: loadYaml<V1CustomResourceDefinition>(readFileSync(join(crds, file), 'utf8')) })
}
const admin = new KubeClient(kc)
const NS = 'bench-recipes'
for (const name of [NS, 'mcp-server', 'sandbox-recipes']) {
  await fetch(`${api.url}/api/v1/namespaces`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } }) })
}
// CRDs are served once established; wait for the recipe resource.
for (let i = 0; i < 100 && !(await admin.listAllRecipes().then(() => true, () => false)); i++) await new Promise((r) => setTimeout(r, 50))
const controllers = startWorkloadControllers({ store: api.store, cronIntervalMs: 0 })
const m = countingKube(admin)
const deps: RecipeDeps = { ...testDeps(m.kube), now: () => new Date(), recipes: config }

const recipeOf = (name: string, n: number): WorkflowRecipe => WorkflowRecipeSchema.parse({
  apiVersion: 'purko.io/v1alpha1', kind: 'WorkflowRecipe', metadata: { name, namespace: NS },
  spec: {
    workloads: Array.from({ length: n }, (_, i) => ({
      name: `w${i}`, kind: 'Deployment', image: 'nginx:1.27', ports: [{ name: 'http', port: 80 }],
      // w0 first (a database, say), every other one after it: two waves by spec §7.11.
      ...(i > 0 ? { dependsOn: ['w0'] } : {}),
    })),
  },
})

for (const n of SIZES) {
  const name = `r${n}`
  await fetch(`${api.url}/apis/purko.io/v1alpha1/namespaces/${NS}/workflowrecipes`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(recipeOf(name, n)) })
  m.reset()
  let reconciles = 0
  let reconcileMs = 0
  const t0 = performance.now()
  let phase = ''
  for (let i = 0; i < 3 * n + 20; i++) {
    await controllers.settle()
    const s = performance.now()
    const out = await reconcileRecipe(deps, NS, name)
    reconcileMs += performance.now() - s
    reconciles++
    phase = out.phase ?? ''
    if (out.result !== 'applied') break
  }
  const wall = performance.now() - t0
  const toActive = new Map(m.calls)
  if (phase !== 'Active') throw new Error(`recipe ${name} ended ${phase}, not Active`)
  console.log(`  ${String(n).padStart(3)} Deployment${n === 1 ? ' ' : 's'}  fresh -> Active        ${String(reconciles).padStart(3)} reconciles  ${String(total(toActive)).padStart(5)} API calls  ${wall.toFixed(0).padStart(6)} ms wall (${reconcileMs.toFixed(0)} ms in reconcile)  (${fmtCalls(toActive)})`)

  // A child event on the Active recipe: recipe-child-changed reconciles the owner, which changes nothing.
  const times: number[] = []
  let calls = 0
  let writes = 0
  for (let i = 0; i < STEADY_RUNS; i++) {
    m.reset()
    const s = performance.now()
    const out = await reconcileRecipe(deps, NS, name)
    times.push(performance.now() - s)
    calls = total(m.calls)
    writes += out.writes
    if (out.result !== 'unchanged') throw new Error(`steady reconcile of ${name} was ${out.result}`)
  }
  console.log(`  ${String(n).padStart(3)} Deployment${n === 1 ? ' ' : 's'}  child event, Active    ${String(calls).padStart(5)} API calls  ${quantile(times, 0.5).toFixed(1).padStart(6)} ms median  ${quantile(times, 0.95).toFixed(1).padStart(6)} ms p95  ${writes} writes in ${STEADY_RUNS}  (${fmtCalls(m.calls)})`)
}
controllers.stop()
await api.close()
