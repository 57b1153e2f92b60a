import { spawn, spawnSync } from 'node:child_process'
import { readFile, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { assetsFrom, bundleAssetFiles, loadAssets } from '../../shared/console/assets.js'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..')
const CSS_PATH = join(ROOT, 'shared', 'console', 'assets', 'console.css')

// WCAG 2.x relative luminance and contrast ratio.
function luminance(hex: string): number {
  const [r, g, b] = [1, 3, 5].map((i) => Number.parseInt(hex.slice(i, i + 2), 16) / 255).map((c) => (c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4))
  return 0.2126 * r! + 0.7152 * g! + 0.0722 * b!
}
function contrast(a: string, b: string): number {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x)
  return (hi! + 0.05) / (lo! + 0.05)
}
/** The custom properties of each :root block: the light scheme first, then the dark one. */
function schemes(css: string): Record<string, string>[] {
  return [...css.matchAll(/:root\s*\{([^}]*)\}/g)].map((m) => Object.fromEntries([...m[1]!.matchAll(/--([\w-]+):\s*(#[0-9a-fA-F]{6})\s*;/g)].map((d) => [d[1]!, d[2]!.toLowerCase()])))
}

const PHASES = ['Pending', 'Running', 'Succeeded', 'Failed', 'Skipped', 'Waiting', 'Cancelled', 'Unknown']

describe('console.css', () => {
  it('defines every colour in a light and a dark scheme, with AA contrast for every pair it uses', async () => {
    const css = await readFile(CSS_PATH, 'utf8')
    const [light, dark] = schemes(css)
    expect(light).toBeDefined()
    expect(dark).toBeDefined()
    expect(css).toMatch(/@media \(prefers-color-scheme: dark\)\s*\{\s*:root/)
    expect(Object.keys(dark!).sort()).toEqual(Object.keys(light!).sort())
    const textPairs: [string, string][] = [
      ['fg', 'bg'], ['fg', 'surface'], ['muted', 'bg'], ['muted', 'surface'], ['link', 'bg'], ['link', 'surface'],
      ['banner', 'banner-bg'], ['danger', 'danger-bg'], ['button', 'button-bg'],
      ...PHASES.map((p): [string, string] => [`phase-${p}`, `phase-${p}-bg`]),
    ]
    const failures: string[] = []
    for (const [name, scheme] of [['light', light!], ['dark', dark!]] as const) {
      for (const [fg, bg] of textPairs) {
        const ratio = contrast(scheme[fg]!, scheme[bg]!)
        if (!(ratio >= 4.5)) failures.push(`${name}: --${fg} on --${bg} is ${ratio.toFixed(2)}:1`)
      }
      // The focus ring is not text: 3:1 against the page (WCAG 1.4.11).
      const ring = contrast(scheme.focus!, scheme.bg!)
      if (!(ring >= 3)) failures.push(`${name}: --focus on --bg is ${ring.toFixed(2)}:1`)
    }
    expect(failures).toEqual([])
  })

  it('has a class and a glyph for every phase, a visible focus ring, reduced motion and tabular relative times', async () => {
    const css = await readFile(CSS_PATH, 'utf8')
    for (const phase of PHASES) {
      expect(css).toContain(`.phase-${phase} { color: var(--phase-${phase}); background: var(--phase-${phase}-bg); }`)
      expect(css).toMatch(new RegExp(`\\.phase-${phase}::before \\{ content: `))
    }
    expect(css).toContain(':focus-visible { outline: 3px solid var(--focus)')
    expect(css).toContain('@media (prefers-reduced-motion: reduce)')
    expect(css).toMatch(/time\.rel \{[^}]*font-variant-numeric: tabular-nums/)
    expect(css).toMatch(/\.table-scroll \{[^}]*overflow-x: auto/)
    expect(css).toMatch(/nav ul \{[^}]*flex-wrap: wrap/)
  })
})

describe('the console assets', () => {
  it('serve each file at a content-hashed URL with its type, and nothing at a wrong hash', () => {
    const assets = assetsFrom([{ name: 'a.css', type: 'text/css; charset=utf-8', text: 'body{}' }, { name: 'b.js', type: 'text/javascript; charset=utf-8', text: 'x()' }])
    const url = assets.url('a.css')
    expect(url).toMatch(/^\/assets\/[0-9a-f]{16}\/a\.css$/)
    expect(new TextDecoder().decode(assets.get(url)!.body)).toBe('body{}')
    expect(assets.get(url)!.type).toBe('text/css; charset=utf-8')
    // The console's router hands over the path after /assets/.
    expect(assets.get(url.slice('/assets/'.length))).toEqual(assets.get(url))
    expect(assets.get('/assets/0000000000000000/a.css')).toBeUndefined()
    expect(assets.url('missing.css')).toBe('')
    const changed = assetsFrom([{ name: 'a.css', type: 'text/css; charset=utf-8', text: 'body{color:red}' }])
    expect(changed.url('a.css')).not.toBe(url)
  })

  it('bundle every client script for the browser and read every stylesheet under tsx', async () => {
    const assets = await loadAssets()
    const common = assets.get(assets.url('common.js'))
    expect(common?.type).toBe('text/javascript; charset=utf-8')
    const js = new TextDecoder().decode(common!.body)
    expect(js).toContain('X-Kinetic-Console')
    expect(js).toContain('kinetic:action')
    expect(js).not.toMatch(/^\s*import\s/m)
    const css = new TextDecoder().decode(assets.get(assets.url('console.css'))!.body)
    expect(css).toBe(await readFile(CSS_PATH, 'utf8'))
  })
})

describe('the built console', () => {
  const dirs: string[] = []
  afterAll(async () => { await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))) })

  it('serves the same asset bytes from its bundle, with no esbuild to be found', async () => {
    const outdir = await mkdtemp(join(tmpdir(), 'kinetic-console-build-'))
    dirs.push(outdir)
    const build = spawnSync(process.execPath, [join(ROOT, 'scripts', 'build.mjs'), '--outdir', outdir, '--only', 'console'], { cwd: ROOT, encoding: 'utf8' })
    expect(build.status, build.stderr).toBe(0)
    const bundle = await readFile(join(outdir, 'functions', 'console', 'main.js'), 'utf8')
    expect(bundle).not.toContain('__KINETIC_CONSOLE_ASSETS__')

    // Outside the repository no node_modules is reachable, so a bundled console that needed esbuild would fail here.
    const child = spawn(process.execPath, [join(outdir, 'functions', 'console', 'main.js')], {
      cwd: outdir,
      env: { PATH: process.env.PATH ?? '', PORT: '0', HOST: '127.0.0.1', KINETIC_CONSOLE_AUTH: 'local' },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    try {
      const port = await new Promise<number>((resolve, reject) => {
        let out = ''
        child.stdout.on('data', (chunk: Buffer) => {
          out += chunk.toString()
          const m = /"port":(\d+)/.exec(out)
          if (m) resolve(Number(m[1]))
        })
        child.stderr.on('data', (chunk: Buffer) => { out += chunk.toString() })
        child.on('exit', (code) => reject(new Error(`the built console exited (${code}): ${out}`)))
      })
      const page = await (await fetch(`http://127.0.0.1:${port}/no-such-page`)).text()
      const expected = await bundleAssetFiles()
      for (const file of expected.filter((f) => f.name === 'console.css' || f.name === 'common.js')) {
        const url = new RegExp(`"(/assets/[0-9a-f]{16}/${file.name.replace('.', '\\.')})"`).exec(page)?.[1]
        expect(url, `${file.name} is linked from the page`).toBeDefined()
        const response = await fetch(`http://127.0.0.1:${port}${url}`)
        expect(response.status).toBe(200)
        expect(response.headers.get('content-type')).toBe(file.type)
        expect(new Uint8Array(await response.arrayBuffer())).toEqual(new TextEncoder().encode(file.text))
      }
    } finally {
      child.kill('SIGTERM')
    }
  }, 180_000)
})
