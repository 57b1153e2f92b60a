/**
 * The console's static files: every `client/<name>.ts` bundled for the browser as `<name>.js`,
 * every `assets/*.css` as it is, each served at `/assets/<content-hash>/<name>` so a URL can be
 * cached for ever. In development (tsx) the scripts are bundled with esbuild when the console
 * starts; `npm run build` does it ahead of time and defines `__KINETIC_CONSOLE_ASSETS__` in the
 * console's bundle, so the image needs no esbuild.
 */
import { createHash } from 'node:crypto'
import { readdir, readFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

/** One file as bundled: logical name (`common.js`), content type, text. */
export interface AssetFile {
  name: string
  type: string
  text: string
}

/** The bundled files, by URL. */
export interface ConsoleAssets {
  /** `/assets/<hash>/<name>` of a logical name; '' for a name there is no file for. */
  url(name: string): string
  /** The file a `/assets/<hash>/<name>` path names (or `<hash>/<name>`; the hash must match), else undefined. */
  get(path: string): { body: Uint8Array; type: string } | undefined
}

// Replaced by scripts/build.mjs (esbuild `define`) in the console's bundle; absent under tsx.
declare const __KINETIC_CONSOLE_ASSETS__: AssetFile[] | undefined

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
}

/** Where the sources are: this file's folder (shared/console) under tsx. */
const CONSOLE_DIR = dirname(fileURLToPath(import.meta.url))

/** Pure: the assets serving exactly these files. */
export function assetsFrom(files: readonly AssetFile[]): ConsoleAssets {
  const byName = new Map<string, string>()
  const byPath = new Map<string, { body: Uint8Array; type: string }>()
  for (const file of files) {
    const body = new TextEncoder().encode(file.text)
    const hash = createHash('sha256').update(body).digest('hex').slice(0, 16)
    const path = `/assets/${hash}/${file.name}`
    byName.set(file.name, path)
    byPath.set(`${hash}/${file.name}`, { body, type: file.type })
  }
  return {
    url: (name) => byName.get(name) ?? '',
    get: (path) => byPath.get(path.replace(/^\/?(assets\/)?/, '')),
  }
}

/**
 * Bundles the sources with esbuild (browser, es2020, minified) and reads the stylesheets.
 * esbuild is imported by a name the bundler cannot follow, so a built console never carries it.
 */
export async function bundleAssetFiles(consoleDir = CONSOLE_DIR): Promise<AssetFile[]> {
  const bundler = 'esbuild'
  let build: typeof import('esbuild').build
  try {
    ({ build } = (await import(bundler)) as typeof import('esbuild'))
  } catch (err) {
    throw new Error('The console\'s browser assets are not pre-built into this bundle and esbuild cannot be loaded to build them: build the console with npm run build, or install the dev dependencies', { cause: err })
  }
  const files: AssetFile[] = []
  const clientDir = join(consoleDir, 'client')
  const scripts = (await readdir(clientDir).catch(() => [] as string[])).filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts')).sort()
  for (const script of scripts) {
    const result = await build({
      entryPoints: [join(clientDir, script)],
      bundle: true,
      write: false,
      platform: 'browser',
      format: 'iife',
      target: 'es2020',
      minify: true,
      logLevel: 'silent',
    })
    const text = result.outputFiles.map((f) => f.text).join('')
    files.push({ name: script.replace(/\.ts$/, '.js'), type: TYPES['.js']!, text })
  }
  const assetsDir = join(consoleDir, 'assets')
  const styles = (await readdir(assetsDir).catch(() => [] as string[])).filter((f) => f.endsWith('.css')).sort()
  for (const style of styles) {
    files.push({ name: style, type: TYPES['.css']!, text: await readFile(join(assetsDir, style), 'utf8') })
  }
  return files
}

/** The console's assets: the pre-built ones when this is the built bundle, else bundled now. */
export async function loadAssets(): Promise<ConsoleAssets> {
  const prebuilt = typeof __KINETIC_CONSOLE_ASSETS__ === 'undefined' ? undefined : __KINETIC_CONSOLE_ASSETS__
  return assetsFrom(prebuilt ?? await bundleAssetFiles())
}
