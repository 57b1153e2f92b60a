// How npm run build makes a function start fast: the function as one CommonJS bundle
// (functions/<name>/bundle.cjs), a small ES module main.js that runs it through
// shared/http/start-fast.ts, and a V8 code cache (bundle.cjs.cache) written by running each
// function once with the Node that runs the build, which is the Node the image copies.
import { spawn } from 'node:child_process'
import { existsSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { build } from 'esbuild'

/** The environment variable shared/http/start-fast.ts reads (its TRAIN_ENV). */
const TRAIN_ENV = 'KINETIC_CODE_CACHE_TRAIN'

// A CommonJS bundle has no import.meta; the few modules that read import.meta.url get the bundle's own URL.
const IMPORT_META_BANNER = 'var __kineticImportMetaUrl = require("node:url").pathToFileURL(__filename).href;'

/**
 * node-fetch (the Kubernetes client's HTTP layer) takes URL from node:url and falls back to the
 * whatwg-url package only on a Node without one. Bundled, that fallback and its 250 KiB Unicode
 * table were parsed, cached and evaluated at every start; here it resolves to Node's own URL.
 */
const nodeUrlForWhatwgUrl = {
  name: 'node-url-for-whatwg-url',
  setup(build) {
    build.onResolve({ filter: /^whatwg-url$/ }, () => ({ path: 'whatwg-url', namespace: 'node-url' }))
    build.onLoad({ filter: /.*/, namespace: 'node-url' }, () => ({ contents: 'module.exports = { URL: require("node:url").URL }', loader: 'js' }))
  },
}

/** The esbuild options every bundle of the build shares (scripts/build.mjs uses them too). */
export const BUNDLE_OPTIONS = {
  bundle: true,
  platform: 'node',
  target: 'node20',
  minify: true,
  // Error classes name themselves from the constructor (FunctionError); logs must keep them.
  keepNames: true,
  logLevel: 'warning',
  plugins: [nodeUrlForWhatwgUrl],
}

// The OpenTelemetry SDK (shared/telemetry/otlp.ts) is one file of its own, <outdir>/telemetry/otlp.cjs,
// which a function's bundle requires only when tracing is on: with it off, neither the bundle nor
// its code cache carries the SDK.
const OTLP_SOURCE = join('shared', 'telemetry', 'otlp.ts')
export const OTLP_BUNDLE = 'telemetry/otlp.cjs'

/** Leaves the require of <outdir>/telemetry/otlp.cjs to run time: it is a file of its own. */
const otlpBesideTheBundle = {
  name: 'otlp-beside-the-bundle',
  setup(build) {
    build.onResolve({ filter: /telemetry\/otlp\.cjs$/ }, (args) => ({ path: args.path, external: true }))
  },
}

/** Builds <outdir>/telemetry/otlp.cjs, the SDK side of tracing that function bundles load on demand. */
export function buildTelemetryBundle({ root, outdir }) {
  return build({
    ...BUNDLE_OPTIONS,
    entryPoints: [join(root, OTLP_SOURCE)],
    outfile: join(outdir, OTLP_BUNDLE),
    format: 'cjs',
    supported: { 'dynamic-import': false },
    metafile: true,
  })
}

/** The modules the function loads with import() (its lazy parts), found by a build that writes nothing. */
async function lazyImports(source) {
  const probe = await build({ ...BUNDLE_OPTIONS, entryPoints: [source], format: 'esm', splitting: true, outdir: '/nonexistent', write: false, metafile: true, logLevel: 'silent' })
  const found = new Set()
  for (const input of Object.values(probe.metafile.inputs)) {
    for (const imported of input.imports) {
      if (imported.kind === 'dynamic-import' && !imported.external && !imported.path.endsWith(OTLP_SOURCE)) found.add(resolve(imported.path))
    }
  }
  return [...found].sort()
}

/**
 * Builds functions/<name>/bundle.cjs (the function and, as `warm`, a way to load its lazy
 * parts for the training run) and functions/<name>/main.js; resolves to the esbuild results'
 * metafile outputs merged, as one build result.
 */
export async function buildFunctionBundle({ root, outdir, entry, define }) {
  const dir = dirname(entry.out)
  const lazy = await lazyImports(entry.in)
  const bundleSource = [
    `import ${JSON.stringify(entry.in)}`,
    `export const warm = () => Promise.all([${lazy.map((path) => `import(${JSON.stringify(path)})`).join(', ')}])`,
  ].join('\n')
  const bundle = build({
    ...BUNDLE_OPTIONS,
    stdin: { contents: bundleSource, resolveDir: root, sourcefile: `${entry.out}.entry.ts`, loader: 'ts' },
    outfile: join(outdir, dir, 'bundle.cjs'),
    format: 'cjs',
    // start-fast.ts runs the bundle through vm.Script, which has no loader for import(): a
    // dependency's own import('http') (the OTLP exporter's) must become a require().
    supported: { 'dynamic-import': false },
    sourcemap: 'linked',
    banner: { js: IMPORT_META_BANNER },
    define: { ...define, 'import.meta.url': '__kineticImportMetaUrl', __KINETIC_OTLP_MODULE__: JSON.stringify(`../../${OTLP_BUNDLE}`) },
    plugins: [...BUNDLE_OPTIONS.plugins, otlpBesideTheBundle],
    metafile: true,
  })
  const main = build({
    ...BUNDLE_OPTIONS,
    stdin: {
      contents: `import { startFunction } from ${JSON.stringify(join(root, 'shared', 'http', 'start-fast.ts'))}\nstartFunction(import.meta.url)`,
      resolveDir: root,
      sourcefile: `${entry.out}.ts`,
      loader: 'ts',
    },
    outfile: join(outdir, `${entry.out}.js`),
    format: 'esm',
    sourcemap: 'linked',
    metafile: true,
  })
  const results = await Promise.all([main, bundle])
  return { metafile: { outputs: Object.assign({}, ...results.map((r) => r.metafile.outputs)) } }
}

/** Runs one function's training run (see shared/http/start-fast.ts); rejects with its stderr. */
function train(main, cacheFile) {
  const env = { ...process.env, [TRAIN_ENV]: cacheFile, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent' }
  // The cache must match the flags the Services run with, which is none: not the build's own.
  delete env.NODE_OPTIONS
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [main], { env, stdio: ['ignore', 'ignore', 'pipe'] })
    let stderr = ''
    child.stderr.on('data', (chunk) => { stderr += chunk })
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000)
    child.once('exit', (code, signal) => {
      clearTimeout(timer)
      if (code === 0 && existsSync(cacheFile)) resolve()
      else reject(new Error(`${main}: the code cache training run ended with ${signal ?? code}: ${stderr.trim().slice(-800)}`))
    })
  })
}

/**
 * Writes functions/<name>/bundle.cjs.cache for each function out path, two at a time; resolves
 * to the functions whose training run failed (their bundle does not start), with the error.
 */
export async function writeCodeCaches(outdir, outs, say) {
  const queue = [...outs]
  const failed = []
  const worker = async () => {
    for (let out = queue.shift(); out !== undefined; out = queue.shift()) {
      const cacheFile = join(outdir, dirname(out), 'bundle.cjs.cache')
      try {
        await train(join(outdir, `${out}.js`), cacheFile)
        const shown = relative(process.cwd(), cacheFile)
        say(`built ${shown.startsWith('..') ? cacheFile : shown} (${(statSync(cacheFile).size / 1024).toFixed(0)} KiB code cache, Node ${process.versions.node})`)
      } catch (error) {
        failed.push({ out, error })
      }
    }
  }
  await Promise.all([worker(), worker()])
  return failed
}
