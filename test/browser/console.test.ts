import { mkdirSync, mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parseAllDocuments } from 'yaml'
import type { KubeObject } from '../../local/knative/kube-http.js'
import { startLocalPlane, type LocalPlane } from '../../local/plane.js'
import { findChromium, launchChromium, REQUIRE_BROWSER } from './chromium.js'

/**
 * The console in a real browser (headless Chromium driven by playwright-core) against the
 * embedded plane: a person opens the run list, watches a run's DAG change live, approves the
 * waiting step and sees the run finish, by mouse and by keyboard, on a desktop and a phone.
 */
const ROOT = join(import.meta.dirname, '../..')
const NS = 'ai-agents'
const RUN = 'console-approval'
const RUN_PATH = `/apis/purko.io/v1alpha1/namespaces/${NS}/workflows/${RUN}`
const ARTIFACTS = join(ROOT, 'test-artifacts')
const SCREENSHOT = join(ARTIFACTS, 'console-dag.png')

const lookup = findChromium()
if (!lookup.available) {
  if (REQUIRE_BROWSER) throw new Error(`KINETIC_REQUIRE_BROWSER=1 but the browser tests cannot run: ${lookup.reason}`)
  console.warn(`Browser tests skipped: ${lookup.reason}`)
}
const describeBrowser = lookup.available ? describe : describe.skip

// plan -> check -> publish, where publish's Agent needs a person's approval; publish also
// names plan, an edge that skips check's layer and must be drawn around its box.
const RUN_MANIFEST = {
  apiVersion: 'purko.io/v1alpha1',
  kind: 'Workflow',
  metadata: { name: RUN, namespace: NS },
  spec: {
    description: 'Plan, check and publish, with a person approving the publish.',
    parameters: { release: 'v2.0.0' },
    steps: [
      { name: 'plan', agentRef: { name: 'planner' }, input: { task: 'Plan ${parameters.release}.' } },
      { name: 'check', agentRef: { name: 'planner' }, dependsOn: ['plan'], input: { task: 'Check the plan.' } },
      { name: 'publish', agentRef: { name: 'publisher' }, dependsOn: ['check', 'plan'], input: { task: 'Publish ${parameters.release}.' } },
    ],
  },
}

let plane: LocalPlane
let browser: Browser
let context: BrowserContext
let page: Page
let consoleUrl: string
const problems: string[] = []
let navigations = 0
/** Navigations once the run page was open: from there to Succeeded it must stay the same. */
let runPageNavigations = -1

/**
 * In the page: the first DAG node drawn in `phase`, its painted colours (text, background,
 * SVG fill and stroke) and the colours `--phase-<phase>` and `--phase-<phase>-bg` resolve to.
 */
function paintOf(phase: string): { step: string | null; paint: string[]; declared: { text: string; background: string } } | null {
  const el = document.querySelector(`.dag [data-step].phase-${phase}`)
  if (!el) return null
  const resolve = (property: string) => {
    const probe = document.createElement('span')
    probe.style.color = `var(${property})`
    document.body.append(probe)
    const colour = getComputedStyle(probe).color
    probe.remove()
    return colour
  }
  const paint = (e: Element) => {
    const s = getComputedStyle(e)
    return [s.color, s.backgroundColor, s.fill, s.stroke]
  }
  // An SVG node paints with its shapes; an HTML node with itself.
  const shapes = [el, ...el.querySelectorAll('rect, circle, path, text')]
  return { step: el.getAttribute('data-step'), paint: [...new Set(shapes.flatMap(paint))], declared: { text: resolve(`--phase-${phase}`), background: resolve(`--phase-${phase}-bg`) } }
}

/** Where the DAG starts on the run page, from the document's top. */
const dagTop = () => page.locator('.dag').evaluate((el) => el.getBoundingClientRect().top + window.scrollY)
let dagTopAtOpen = -1

/** A DAG node of the run page by step name. */
const node = (step: string) => page.locator(`.dag g.node[data-step="${step}"]`)

function agents(): KubeObject[] {
  const docs = ['00-namespace.yaml', '10-agents.yaml'].flatMap((f) => parseAllDocuments(readFileSync(join(ROOT, 'examples', 'local', f), 'utf8')))
  return docs.map((d) => d.toJSON() as KubeObject).filter((o) => o && typeof o === 'object')
}

async function waitForIdentities(): Promise<void> {
  const deadline = Date.now() + 60_000
  for (const name of ['planner', 'publisher']) {
    for (;;) {
      const agent = (await plane.kube.get(`/apis/purko.io/v1alpha1/namespaces/${NS}/agents/${name}`)) as { status?: { serviceAccountName?: string } } | null
      if (agent?.status?.serviceAccountName) break
      if (Date.now() > deadline) throw new Error(`Agent ${name} got no ServiceAccount`)
      await new Promise((r) => setTimeout(r, 100))
    }
  }
}

describeBrowser('the console in a browser, on the embedded plane', () => {
  beforeAll(async () => {
    const scratch = mkdtempSync(join(tmpdir(), 'kinetic-browser-'))
    plane = await startLocalPlane({ root: ROOT, kubeconfigPath: join(scratch, 'kubeconfig'), logDir: join(scratch, 'logs'), pingIntervalMs: 5000 })
    const fn = plane.functions.get('console')
    if (!fn) throw new Error('The local plane started no console function')
    consoleUrl = fn.url
    for (const obj of agents()) await plane.kube.apply(obj)
    await waitForIdentities()

    browser = await launchChromium((lookup as { path: string }).path)
    context = await browser.newContext({ viewport: { width: 1280, height: 900 } })
    page = await context.newPage()
    // The browser asks for /favicon.ico on its own; the console has no icon, and nobody sees its 404.
    const favicon = (url: string) => url !== '' && new URL(url).pathname === '/favicon.ico'
    page.on('console', (m) => { if (m.type() === 'error' && !favicon(m.location().url)) problems.push(`console error: ${m.text()} (${m.location().url})`) })
    page.on('pageerror', (err) => problems.push(`page error: ${err.message}`))
    // A live stream the test itself ends by leaving the page is not a failure a person sees.
    page.on('requestfailed', (r) => {
      const aborted = r.failure()?.errorText === 'net::ERR_ABORTED' && new URL(r.url()).pathname.startsWith('/live/')
      if (!aborted) problems.push(`request failed: ${r.method()} ${r.url()} ${r.failure()?.errorText ?? ''}`)
    })
    page.on('response', (r) => { if (r.status() >= 400 && !favicon(r.url())) problems.push(`HTTP ${r.status()}: ${r.request().method()} ${r.url()}`) })
    page.on('framenavigated', (f) => { if (f === page.mainFrame()) navigations++ })
  }, 240_000)

  afterAll(async () => {
    await browser?.close()
    await plane?.stop()
  }, 60_000)

  it('lists the run on /workflows and opens it from there', async () => {
    const atStart = navigations
    await plane.kube.apply(RUN_MANIFEST as unknown as KubeObject)
    await page.goto(`${consoleUrl}/workflows`)
    expect(await page.title()).toMatch(/Workflows/)
    const link = page.locator(`main a[href="/workflows/${NS}/${RUN}"]`).first()
    await link.waitFor({ timeout: 20_000 })
    await link.click()
    await page.waitForURL(`${consoleUrl}/workflows/${NS}/${RUN}`)
    await expect.poll(() => node('plan').count()).toBe(1)
    expect(await page.locator('main h1').innerText()).toContain(RUN)
    expect(navigations).toBe(atStart + 2)
    runPageNavigations = navigations
    dagTopAtOpen = await dagTop()
  }, 60_000)

  it('draws every edge around the step boxes, as the browser paints them', async () => {
    const crossings = await page.evaluate(() => {
      const boxes = [...document.querySelectorAll('.dag g.node')].map((g) => ({ step: g.getAttribute('data-step'), r: g.querySelector('rect')!.getBoundingClientRect() }))
      const out: string[] = []
      for (const path of document.querySelectorAll<SVGPathElement>('.dag path.dag-edge')) {
        const ctm = path.getScreenCTM()!
        const length = path.getTotalLength()
        for (let i = 0; i <= 64; i++) {
          const p = new DOMPoint(path.getPointAtLength((length * i) / 64).x, path.getPointAtLength((length * i) / 64).y).matrixTransform(ctm)
          for (const { step, r } of boxes) {
            if (p.x > r.left + 1 && p.x < r.right - 1 && p.y > r.top + 1 && p.y < r.bottom - 1) out.push(`${path.dataset.from} -> ${path.dataset.to} crosses ${step}`)
          }
        }
      }
      return [...new Set(out)]
    })
    expect(await page.locator('.dag path.dag-edge').count()).toBe(3)
    expect(crossings).toEqual([])
  }, 30_000)

  it('shows each step running, succeeding and the publish waiting for approval without reloading the page', async () => {
    const before = navigations
    // Seen live: a step drawn Running, later Succeeded, with the colour its phase names.
    const running = await page.waitForFunction(paintOf, 'Running', { timeout: 60_000, polling: 'raf' })
    const seenRunning = await running.jsonValue()
    await page.waitForSelector('.dag [data-step="publish"].phase-Waiting', { timeout: 90_000 })
    await page.waitForSelector('.dag [data-step="plan"].phase-Succeeded')
    await page.waitForSelector('.dag [data-step="check"].phase-Succeeded')
    expect(navigations).toBe(before)
    expect(seenRunning?.step).toMatch(/^(plan|check)$/)

    const succeeded = await page.evaluate(paintOf, 'Succeeded')
    expect(succeeded?.paint).not.toEqual(seenRunning?.paint)
    // The colours come from the one definition in console.css.
    expect(succeeded?.paint).toContain(succeeded?.declared.text)
    expect(seenRunning?.paint).toContain(seenRunning?.declared.text)
    // Never colour alone: the phase is written out too.
    expect(await node('plan').textContent()).toMatch(/Succeeded/)
    expect(await node('publish').textContent()).toMatch(/Waiting for approval/)

    mkdirSync(ARTIFACTS, { recursive: true })
    await page.locator('.dag').screenshot({ path: SCREENSHOT })
    console.info(`Screenshot of the DAG view: ${relative(process.cwd(), SCREENSHOT)}`)
  }, 150_000)

  it('shows the approval form in place once the step waits, without reloading, and leaves the DAG where it was', async () => {
    const approve = page.getByRole('button', { name: 'Approve publish' })
    await approve.waitFor({ state: 'visible', timeout: 30_000 })
    await expect.poll(() => approve.isEnabled()).toBe(true)
    expect(await page.locator('main').innerText()).toContain('Step publish waits for approval')
    expect(await page.locator('[data-action-stale]').isHidden()).toBe(true)
    expect(await page.locator('.run-actions [data-action="decide"]').count()).toBe(1)
    // Only the actions area changed: the DAG below it is where it was when the page opened.
    expect(await dagTop()).toBe(dagTopAtOpen)
  }, 60_000)

  it('counts the run\'s duration on every second while it runs, in figures of one width', async () => {
    const duration = page.locator('[data-run-duration]')
    expect(await duration.getAttribute('data-started')).toBeTruthy()
    const first = await duration.innerText()
    await expect.poll(() => duration.innerText(), { timeout: 10_000 }).not.toBe(first)
    expect(await duration.evaluate((el) => getComputedStyle(el).fontVariantNumeric)).toBe('tabular-nums')
  }, 30_000)

  it('reaches the approve button and the DAG nodes with Tab', async () => {
    await page.locator('body').focus()
    const reached: string[] = []
    for (let i = 0; i < 80; i++) {
      await page.keyboard.press('Tab')
      reached.push(await page.evaluate(() => {
        const el = document.activeElement
        if (!el) return ''
        if (el.closest('.dag [data-step]')) return `node:${el.closest('[data-step]')?.getAttribute('data-step')}`
        return `${el.tagName.toLowerCase()}:${(el.textContent ?? '').trim()}`
      }))
    }
    expect(reached).toContain('node:plan')
    expect(reached).toContain('node:publish')
    expect(reached).toContain('button:Approve publish')
  }, 60_000)

  it('approves the waiting step with a reason and shows the run reach Succeeded', async () => {
    const before = navigations
    const form = page.locator('form[action$="/actions/approve/ai-agents/console-approval/publish"]')
    await form.locator('input[name="reason"]').fill('notes checked by hand')
    await form.getByRole('button', { name: 'Approve publish' }).click()
    await page.waitForSelector('.dag [data-step="publish"].phase-Succeeded', { timeout: 90_000 })
    await expect.poll(async () => (await page.locator('main').innerText()).includes('Succeeded'), { timeout: 30_000 }).toBe(true)
    await page.waitForSelector('[data-run-phase] .phase-Succeeded', { timeout: 30_000 })

    const wf = (await plane.kube.get(RUN_PATH)) as KubeObject
    expect(JSON.stringify(wf.metadata?.annotations ?? {})).toContain('kinetic-local-admin')
    expect(JSON.stringify(wf.metadata?.annotations ?? {})).toContain('notes checked by hand')
    // The live page shows the outcome itself: no reload after the action, nor at any point since the run page opened.
    expect(navigations).toBe(before)
    expect(navigations).toBe(runPageNavigations)
  }, 150_000)

  it('fits a 375 px wide phone: nothing but the scroll containers is wider than the screen', async () => {
    await page.setViewportSize({ width: 375, height: 800 })
    for (const path of ['/workflows', `/workflows/${NS}/${RUN}`]) {
      await page.goto(`${consoleUrl}${path}`)
      const overflow = await page.evaluate(() => {
        const width = document.documentElement.clientWidth
        const scrolls = (el: Element | null): boolean => {
          for (let e = el; e; e = e.parentElement) {
            const o = getComputedStyle(e).overflowX
            if (o === 'auto' || o === 'scroll') return true
          }
          return false
        }
        const wide = [...document.querySelectorAll('body *')].filter((el) => {
          const r = el.getBoundingClientRect()
          return r.width > 0 && (r.right > width + 1 || r.left < -1) && !scrolls(el.parentElement)
        })
        return { page: document.documentElement.scrollWidth, width, wide: wide.slice(0, 5).map((el) => `${el.tagName.toLowerCase()}.${el.className}`) }
      })
      expect(overflow.wide, path).toEqual([])
      expect(overflow.page, path).toBeLessThanOrEqual(overflow.width)
    }
  }, 60_000)

  it('had no console errors, page errors or failed requests along the way', () => {
    expect(problems).toEqual([])
  })
})
