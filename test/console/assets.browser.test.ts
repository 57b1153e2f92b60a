import { spawn, spawnSync } from 'node:child_process'
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Browser } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { actionForm } from '../../shared/console/action-form.js'
import { assetsFrom, bundleAssetFiles, loadAssets } from '../../shared/console/assets.js'
import { html } from '../../shared/console/html.js'
import { filterForm } from '../../shared/console/pages/common.js'
import { renderDocument } from '../../shared/console/shell.js'
import { timeTag } from '../../shared/console/time.js'
import { findChromium, launchChromium, REQUIRE_BROWSER } from '../browser/chromium.js'
import { ALICE, configOf } from './pages/support.js'

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
    const consoleDir = join(ROOT, 'shared', 'console')
    for (const script of (await readdir(join(consoleDir, 'client'))).filter((f) => f.endsWith('.ts'))) {
      expect(assets.url(script.replace(/\.ts$/, '.js')), script).toMatch(/^\/assets\/[0-9a-f]{16}\//)
    }
    for (const style of (await readdir(join(consoleDir, 'assets'))).filter((f) => f.endsWith('.css'))) {
      expect(assets.url(style), style).toMatch(/^\/assets\/[0-9a-f]{16}\//)
    }
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

// The common client script in a real browser (headless Chromium, as test/browser does): the
// times it refreshes, the JSON it posts for an action form, the filters it applies at once.
const chromiumLookup = findChromium()
if (!chromiumLookup.available && REQUIRE_BROWSER) throw new Error(`KINETIC_REQUIRE_BROWSER=1 but the browser cannot start: ${chromiumLookup.reason}`)
const describeBrowser = chromiumLookup.available ? describe : describe.skip

describeBrowser('the common client script in a browser', () => {
  const T = new Date('2026-12-01T12:00:00.000Z')
  const posts: { headers: Record<string, string | string[] | undefined>; body: string }[] = []
  let answer = { status: 200, body: { status: 'approved', message: 'Recorded' } as Record<string, unknown> }
  let server: Server
  let base = ''
  let browser: Browser

  beforeAll(async () => {
    const assets = await loadAssets()
    const body = html`<h1>Client</h1>
<p>Started ${timeTag(new Date(T.getTime() - 2 * 60_000).toISOString(), T)}</p>
${filterForm('/workflows', [{ name: 'phase', label: 'Phase', values: ['Failed', 'Running'], chosen: '', all: 'all phases' }], '/workflows')}
${actionForm({ path: '/actions/agents/team-a/ready/approve-promotion', label: 'Approve', reason: true, parameters: { env: 'prod' }, extra: { level: 'ha' }, confirm: 'Sure?' })}`
    const document = renderDocument({ config: configOf(), person: ALICE, now: T, assetUrl: (n) => assets.url(n) }, { status: 200, title: 'Client', nav: 'workflows', body })
    server = createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://x')
      const asset = url.pathname.startsWith('/assets/') ? assets.get(url.pathname) : undefined
      if (asset) {
        res.writeHead(200, { 'content-type': asset.type })
        res.end(asset.body)
      } else if (req.method === 'POST') {
        let text = ''
        req.on('data', (c: Buffer) => { text += c.toString() })
        req.on('end', () => {
          posts.push({ headers: req.headers, body: text })
          res.writeHead(answer.status, { 'content-type': 'application/json' })
          res.end(JSON.stringify(answer.body))
        })
      } else {
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-security-policy': "default-src 'self'" })
        res.end(document)
      }
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    browser = await launchChromium((chromiumLookup as { path: string }).path)
  }, 60_000)

  afterAll(async () => {
    await browser?.close()
    await new Promise((resolve) => server?.close(resolve))
  })

  it('refreshes relative times, posts an action as JSON with the console header and announces the answer, and applies a filter at once', async () => {
    const context = await browser.newContext({ viewport: { width: 320, height: 640 } })
    const page = await context.newPage()
    const violations: string[] = []
    // Script errors and anything the strict Content-Security-Policy blocked.
    page.on('pageerror', (e) => violations.push(e.message))
    page.on('console', (m) => { if (m.type() === 'error' && /Content Security Policy/i.test(m.text())) violations.push(m.text()) })
    await page.clock.install({ time: T })
    await page.goto(base)
    const time = page.locator('time.rel')
    await expect.poll(() => time.textContent()).toBe('2 min ago')
    await page.clock.runFor(3 * 60_000)
    await expect.poll(() => time.textContent()).toBe('5 min ago')
    expect(await time.getAttribute('title')).toBe('2026-12-01 11:58:00 UTC')

    // A refusal is said in words and the page stays as it is.
    answer = { status: 409, body: { message: 'Agent team-a/ready is at ha' } }
    page.on('dialog', (d) => void d.accept())
    await page.getByLabel('Reason').fill('looks good')
    await page.getByRole('button', { name: 'Approve' }).click()
    await expect.poll(() => page.locator('.action-result').textContent()).toBe('Approve failed (409): Agent team-a/ready is at ha')
    await page.clock.runFor(1000)
    await expect.poll(() => page.locator('#announcer').textContent()).toBe('Approve failed (409): Agent team-a/ready is at ha')
    expect(posts).toHaveLength(1)
    expect(posts[0]!.headers['x-kinetic-console']).toBe('1')
    expect(posts[0]!.headers['content-type']).toBe('application/json')
    expect(JSON.parse(posts[0]!.body)).toEqual({ reason: 'looks good', parameters: { env: 'prod' }, level: 'ha' })

    // Success reloads the page unless a kinetic:action listener takes care of it.
    answer = { status: 200, body: { status: 'approved', message: 'Recorded' } }
    await page.evaluate(() => document.addEventListener('kinetic:action', (e) => { e.preventDefault(); document.body.dataset.handled = 'yes' }, { once: true }))
    await page.getByRole('button', { name: 'Approve' }).click()
    await expect.poll(() => page.locator('body').getAttribute('data-handled')).toBe('yes')
    expect(await page.locator('.action-result').textContent()).toBe('Approve: done. Recorded')
    const reloaded = page.waitForEvent('load')
    await page.getByRole('button', { name: 'Approve' }).click()
    await page.clock.runFor(1000)
    await reloaded

    // A changed filter select applies without pressing Apply.
    await page.getByLabel('Phase').selectOption('Failed')
    await page.waitForURL(`${base}/workflows?phase=Failed`)
    expect(violations).toEqual([])
    await context.close()
  }, 120_000)
})
