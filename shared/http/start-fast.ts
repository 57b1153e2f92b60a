// The entry point every function's dist/functions/<name>/main.js is built from (scripts/build.mjs).
// Node 20 has no code cache for ES modules, so the function itself is bundled as one CommonJS
// script (bundle.cjs) and compiled here through vm.Script with the V8 code cache the build wrote
// beside it (bundle.cjs.cache): V8 then skips parsing and compiling what the cache holds.
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { basename, dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Script } from 'node:vm'

/** What became of the code cache: the log line and the build's training run report it. */
export type CodeCacheState = 'accepted' | 'rejected' | 'missing'

/** Set by the build (scripts/code-cache.mjs) to run the bundle once and write its cache here. */
export const TRAIN_ENV = 'KINETIC_CODE_CACHE_TRAIN'

/** The module.exports of a bundle: `warm` loads what the function imports lazily (see scripts/build.mjs). */
interface BundleExports {
  warm?: () => Promise<unknown>
}

/**
 * Compiles and runs `bundle` as Node runs a CommonJS file, with `<bundle>.cache` as V8 code
 * cache when it is there. V8 refuses a cache made by another V8 version or with other flags,
 * or one that is damaged; the script is then compiled from source (slower, same behaviour).
 */
export function startBundle(bundle: string): { state: CodeCacheState; exports: BundleExports; script: Script } {
  const cacheFile = `${bundle}.cache`
  const source = readFileSync(bundle, 'utf8')
  const cachedData = existsSync(cacheFile) ? readFileSync(cacheFile) : undefined
  // The same wrapper Node puts around a CommonJS file, so the bundle sees require and __dirname.
  const script = new Script(`(function (exports, require, module, __filename, __dirname) {${source}\n})`, {
    filename: bundle,
    ...(cachedData ? { cachedData } : {}),
  })
  const state: CodeCacheState = cachedData === undefined ? 'missing' : script.cachedDataRejected ? 'rejected' : 'accepted'
  if (state !== 'accepted') logCodeCache(bundle, state)
  const commonJsModule = { exports: {} as BundleExports }
  const wrapper = script.runInThisContext() as (...args: unknown[]) => void
  wrapper.call(commonJsModule.exports, commonJsModule.exports, createRequire(bundle), commonJsModule, bundle, dirname(bundle))
  if (state === 'accepted') logCodeCache(bundle, state)
  return { state, exports: commonJsModule.exports, script }
}

// A pino-shaped line, written before the function's own logger exists (or without it).
function logCodeCache(bundle: string, state: CodeCacheState): void {
  if ((process.env.LOG_LEVEL ?? 'info') === 'silent') return
  const level = state === 'accepted' ? 'info' : 'warn'
  const fn = basename(dirname(bundle))
  process.stdout.write(`${JSON.stringify({ level, time: new Date().toISOString(), function: fn, codeCache: state, msg: 'Code cache' })}\n`)
}

/**
 * The build's training run: start the function, load what it imports lazily, then write the
 * code cache of everything V8 compiled so far, and exit.
 */
async function train(bundle: string, out: string): Promise<void> {
  const { exports, script } = startBundle(bundle)
  await exports.warm?.()
  writeFileSync(out, script.createCachedData())
  process.exit(0)
}

/** main.js of a function: `startFunction(import.meta.url)` runs the bundle next to it. */
export function startFunction(mainUrl: string): void {
  const bundle = join(dirname(fileURLToPath(mainUrl)), 'bundle.cjs')
  const out = process.env[TRAIN_ENV]
  if (out) {
    train(bundle, out).catch((error: unknown) => {
      process.stderr.write(`code cache training failed: ${String(error)}\n`)
      process.exit(1)
    })
    return
  }
  startBundle(bundle)
}
