// npm run build: bundles each function's entry point, the executor and the stdio MCP bridge into one ESM file each,
// so a cold start loads one tree-shaken file instead of resolving thousands of modules.
import { existsSync, readdirSync, rmSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { build } from 'esbuild'
import { tsImport } from 'tsx/esm/api'
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
// Only the trees this script writes, so stale bundles of removed functions do not linger.
const trees = options.only === undefined ? ['functions', 'executor', 'mcp-bridge'] : [`functions/${options.only}`]
for (const tree of trees) rmSync(join(outdir, tree), { recursive: true, force: true })
if (entries.length > 0) {
  // One build per entry point: a layout shared across entry points would make each Service
  // load code it never runs, and per-file output is what knative/services/*.yaml name.
  const results = await Promise.all(entries.map((entry) => build({
    entryPoints: [entry],
    outdir,
    bundle: true,
    // Code reached only through a dynamic import() goes to a chunk of its own, next to the
    // entry point, so a cold start does not even parse it until it is first needed.
    splitting: true,
    chunkNames: `${dirname(entry.out)}/chunks/[name]-[hash]`,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    minify: true,
    // Error classes name themselves from the constructor (FunctionError); logs must keep them.
    keepNames: true,
    // A separate .map next to each bundle, linked so `node --enable-source-maps` finds it.
    sourcemap: 'linked',
    banner: { js: REQUIRE_BANNER },
    metafile: true,
    logLevel: 'warning',
    ...(entry.out === CONSOLE_ENTRY ? { define: consoleAssets } : {}),
  })))
  for (const [i, result] of results.entries()) {
    const outputs = Object.entries(result.metafile.outputs).filter(([file]) => file.endsWith('.js'))
    for (const [file, info] of outputs) {
      const shown = relative(root, resolve(file))
      console.log(`built ${shown.startsWith('..') ? resolve(file) : shown} (${(info.bytes / 1024).toFixed(0)} KiB) from ${relative(root, entries[i].in)}`)
    }
  }
}
