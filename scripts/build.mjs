// npm run build: bundles each function's entry point, the executor and the stdio MCP bridge into one ESM file each,
// so a cold start loads one tree-shaken file instead of resolving thousands of modules.
import { existsSync, readdirSync, rmSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { build } from 'esbuild'
import { tsImport } from 'tsx/esm/api'
import { BUNDLE_OPTIONS, buildFunctionBundle, buildTelemetryBundle, writeCodeCaches } from './code-cache.mjs'
import { REQUIRE_BANNER } from './script-cli.mjs'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
// --outdir lets tests and benchmarks build elsewhere without replacing the shared dist/.
// --only <function> builds that function alone (the console's asset test builds just the console).
const { values: options } = parseArgs({ options: { outdir: { type: 'string', default: join(root, 'dist') }, only: { type: 'string' } } })
const outdir = resolve(options.outdir)

/** Functions every image is expected to carry; any other folder with a main.ts is built too. */
const EXPECTED_FUNCTIONS = ['workflow-changed', 'step-job-finished', 'resync-tick', 'dead-letter']

function entryPoints() {
  const found = new Set(EXPECTED_FUNCTIONS)
  const functionsDir = join(root, 'functions')
  if (existsSync(functionsDir)) {
    for (const entry of readdirSync(functionsDir, { withFileTypes: true })) {
      if (entry.isDirectory()) found.add(entry.name)
    }
  }
  const entries = []
  for (const name of [...found].sort()) {
    const source = join(functionsDir, name, 'main.ts')
    if (existsSync(source)) entries.push({ in: source, out: `functions/${name}/main` })
    else console.log(`skipped functions/${name}: ${relative(root, source)} does not exist yet`)
  }
  const executor = join(root, 'executor', 'main.ts')
  if (existsSync(executor)) entries.push({ in: executor, out: 'executor/main' })
  else console.log('skipped executor: executor/main.ts does not exist yet')
  // The stdio MCP bridge, the sidecar of MCPServers with transport: stdio (same image).
  const bridge = join(root, 'mcp-bridge', 'main.ts')
  if (existsSync(bridge)) entries.push({ in: bridge, out: 'mcp-bridge/main' })
  else console.log('skipped mcp-bridge: mcp-bridge/main.ts does not exist yet')
  return entries
}

const entries = entryPoints().filter((entry) => options.only === undefined || entry.out === `functions/${options.only}/main`)
if (options.only !== undefined && entries.length === 0) {
  console.error(`--only ${options.only}: there is no functions/${options.only}/main.ts`)
  process.exit(2)
}

// The console serves its browser scripts and stylesheets from memory: they are bundled here, with the
// same code that bundles them under tsx (shared/console/assets.ts), and defined as a constant in the
// console's bundle only, so the image needs no esbuild at run time.
const CONSOLE_ENTRY = 'functions/console/main'
async function consoleDefine() {
  if (!entries.some((entry) => entry.out === CONSOLE_ENTRY)) return {}
  const { bundleAssetFiles } = await tsImport(join(root, 'shared', 'console', 'assets.ts'), import.meta.url)
  const files = await bundleAssetFiles(join(root, 'shared', 'console'))
  console.log(`console assets: ${files.map((f) => f.name).join(', ')}`)
  return { __KINETIC_CONSOLE_ASSETS__: JSON.stringify(files) }
}
const consoleAssets = await consoleDefine()
const buildFunction = (entry) => buildFunctionBundle({ root, outdir, entry, define: entry.out === CONSOLE_ENTRY ? consoleAssets : {} })
// Only the trees this script writes, so stale bundles of removed functions do not linger.
const trees = options.only === undefined ? ['functions', 'executor', 'mcp-bridge', 'telemetry'] : [`functions/${options.only}`]
for (const tree of trees) rmSync(join(outdir, tree), { recursive: true, force: true })
const isFunction = (entry) => entry.out.startsWith('functions/')

/** The plain layout: one ES module per entry point, its lazy parts in chunks beside it. */
const buildEsm = (entry) => build({
  ...BUNDLE_OPTIONS,
  entryPoints: [entry],
  outdir,
  // Code reached only through a dynamic import() goes to a chunk of its own, next to the
  // entry point, so a cold start does not even parse it until it is first needed.
  splitting: true,
  chunkNames: `${dirname(entry.out)}/chunks/[name]-[hash]`,
  format: 'esm',
  // A separate .map next to each bundle, linked so `node --enable-source-maps` finds it.
  sourcemap: 'linked',
  banner: { js: REQUIRE_BANNER },
  metafile: true,
  ...(entry.out === CONSOLE_ENTRY ? { define: consoleAssets } : {}),
})

function report(result, entry) {
  const outputs = Object.entries(result.metafile.outputs).filter(([file]) => file.endsWith('.js') || file.endsWith('.cjs'))
  for (const [file, info] of outputs) {
    const shown = relative(root, resolve(file))
    console.log(`built ${shown.startsWith('..') ? resolve(file) : shown} (${(info.bytes / 1024).toFixed(0)} KiB) from ${relative(root, entry.in)}`)
  }
}

if (entries.length > 0) {
  // One build per entry point: a layout shared across entry points would make each Service
  // load code it never runs, and per-file output is what knative/services/*.yaml name.
  // Functions are built as a CommonJS bundle and a small main.js that runs it with a V8 code
  // cache (scripts/code-cache.mjs); the executor and the MCP bridge stay plain ES modules.
  const results = await Promise.all(entries.map((entry) => isFunction(entry) ? buildFunction(entry) : buildEsm(entry)))
  for (const [i, result] of results.entries()) report(result, entries[i])
  // The tracing SDK the function bundles require when an OTLP endpoint is set (code-cache.mjs).
  if (entries.some(isFunction)) report(await buildTelemetryBundle({ root, outdir }), { in: join(root, 'shared', 'telemetry', 'otlp.ts') })
  const failed = await writeCodeCaches(outdir, entries.filter(isFunction).map((entry) => entry.out), (line) => console.log(line))
  // A function whose CommonJS bundle does not start (esbuild orders some mixed ESM/CommonJS
  // dependency graphs differently there) keeps the plain layout, without a code cache.
  for (const { out, error } of failed) {
    const entry = entries.find((e) => e.out === out)
    console.log(`no code cache for ${out}: ${error.message.split('\n')[0].slice(0, 300)}; built as a plain ES module instead`)
    rmSync(join(outdir, dirname(out)), { recursive: true, force: true })
    report(await buildEsm(entry), entry)
  }
}
