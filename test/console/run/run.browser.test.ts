// The run page's own script in headless Chromium, served by the console app on 127.0.0.1 over
// EmbeddedKube (the real client and the embedded API server): a step opens in the panel (and as a plain page), its log follows as the pod writes,
// stops when the container ends, and the follow toggle keeps the log where the person scrolled.
import type { AddressInfo } from 'node:net'
import { serve, type ServerType } from '@hono/node-server'
import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApp } from '../../../functions/console/index.js'
import { silentLogger } from '../../../shared/log.js'
import { currentRunId } from '../../../shared/workflow/plan/run-status.js'
import { LABEL_STEP, LABEL_WORKFLOW } from '../../../shared/schemas/labels.js'
import { findChromium, launchChromium, REQUIRE_BROWSER } from '../../browser/chromium.js'
import { aStep, aWorkflow, NAMESPACE } from '../../fixtures/workflows.js'
import { configOf } from '../pages/support.js'
import { EmbeddedKube } from '../../support/embedded-kube.js'

const lookup = findChromium()
if (!lookup.available && REQUIRE_BROWSER) throw new Error(`KINETIC_REQUIRE_BROWSER=1 but Chromium is missing: ${lookup.reason}`)
const describeBrowser = lookup.available ? describe : describe.skip

const POD = 'wf-build-1-x'

function theRun() {
  const wf = aWorkflow({ spec: { steps: [aStep('build'), aStep('ship', { dependsOn: ['build'] })] } })
  wf.status = { phase: 'Running', runId: currentRunId(wf), startTime: new Date().toISOString(), stepStatuses: [{ name: 'build', phase: 'Running', jobName: 'wf-build-1', startTime: new Date().toISOString() }] }
  return wf
}

describeBrowser('the run page script in a browser', () => {
  let kube: EmbeddedKube
  let server: ServerType
  let url: string
  let browser: Browser
  let page: Page
  const problems: string[] = []

  beforeAll(async () => {
    kube = new EmbeddedKube({ workflows: [theRun()] })
    kube.jobs.set(`${NAMESPACE}/wf-build-1`, { metadata: { name: 'wf-build-1', namespace: NAMESPACE, labels: { [LABEL_WORKFLOW]: 'wf', [LABEL_STEP]: 'build' } } })
    runningPod('compiling\n')
    const app = createApp({ config: configOf({ auth: 'local', secureCookies: false }), log: silentLogger, now: () => new Date(), kubeFor: () => kube })
    await new Promise<void>((resolve) => { server = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, () => resolve()) })
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    browser = await launchChromium((lookup as { path: string }).path)
    page = await browser.newPage()
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`))
    page.on('response', (r) => { if (r.status() >= 400) problems.push(`${r.status()} ${new URL(r.url()).pathname}`) })
  }, 60_000)

  /** The build step's pod, new and running, its log so far `log` (a pod's log only grows: a fresh log is a new pod). */
  function runningPod(log: string): void {
    kube.pods.delete(`${NAMESPACE}/${POD}`)
    kube.pods.set(`${NAMESPACE}/${POD}`, {
      metadata: { name: POD, namespace: NAMESPACE, labels: { 'job-name': 'wf-build-1' } },
      spec: { nodeName: 'node', containers: [{ name: 'step-executor', image: 'executor' }] },
      status: { phase: 'Running' },
    })
    kube.appendPodLog(NAMESPACE, POD, log)
  }

  afterAll(async () => {
    await browser?.close()
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()))
  })

  it('opens a step in the panel from the DAG, and follows its log as the pod writes it', async () => {
    await page.goto(`${url}/workflows/${NAMESPACE}/wf`)
    await page.click('a.node-link[data-step="build"]')
    const panel = page.locator('#step-panel')
    await panel.locator('h1', { hasText: 'build' }).waitFor()
    expect(page.url()).toBe(`${url}/workflows/${NAMESPACE}/wf`)
    await expect.poll(() => panel.locator('[data-log-status]').textContent()).toBe('Following the log.')
    // The stream says `reset` before the API server's first chunk of the log arrives: wait for it.
    await expect.poll(() => panel.locator('pre.log').textContent()).toBe('compiling\n')
    kube.appendPodLog(NAMESPACE, POD, 'linking\nte')
    kube.appendPodLog(NAMESPACE, POD, 'sting\n')
    await expect.poll(() => panel.locator('pre.log').textContent()).toBe('compiling\nlinking\ntesting\n')
    kube.endPodLog(NAMESPACE, POD)
    await expect.poll(() => panel.locator('[data-log-status]').textContent()).toBe(`Pod ${POD}: the container ended.`)
    // The run's live stream keeps the open step's heading current too.
    const done = theRun()
    done.status!.stepStatuses = [{ name: 'build', phase: 'Succeeded', jobName: 'wf-build-1' }]
    kube.putWorkflow(done)
    await expect.poll(() => panel.locator('h1 .badge').textContent()).toBe('Succeeded')
    await expect.poll(() => page.locator('g.node[data-step="build"] .node-phase').textContent()).toBe('Succeeded')
    await panel.locator('button.panel-close').click()
    expect(await panel.isHidden()).toBe(true)
  })

  it('redraws a large run\'s group bars and counts live, without moving a node', async () => {
    const steps = [aStep('start'), ...Array.from({ length: 199 }, (_, i) => aStep(`w${i}`, { dependsOn: ['start'] }))]
    const big = aWorkflow({ name: 'big', spec: { steps } })
    big.status = { phase: 'Running', runId: currentRunId(big), stepStatuses: [{ name: 'start', phase: 'Succeeded' }] }
    kube.putWorkflow(big)
    await page.goto(`${url}/workflows/${NAMESPACE}/big`)
    const counts = page.locator('g.node.group[data-group="1"] .group-counts')
    expect(await counts.textContent()).toBe('199 Pending')
    const box = await page.locator('g.node.group[data-group="1"]').boundingBox()
    const after = structuredClone(big)
    after.status!.stepStatuses = [{ name: 'start', phase: 'Succeeded' }, ...Array.from({ length: 50 }, (_, i) => ({ name: `w${i}`, phase: 'Running' as const }))]
    kube.putWorkflow(after)
    await expect.poll(() => counts.textContent()).toBe('50 Running, 149 Pending')
    expect(await page.locator('g.node.group[data-group="1"] rect.bar').count()).toBe(2)
    expect(await page.locator('g.node.group[data-group="1"]').boundingBox()).toEqual(box)
  })

  it('keeps the log where the person scrolled when follow is off', async () => {
    runningPod(Array.from({ length: 150 }, (_, i) => `line ${i}\n`).join(''))
    await page.goto(`${url}/workflows/${NAMESPACE}/wf/steps/build`)
    const log = page.locator('pre.log')
    await expect.poll(() => page.locator('[data-log-status]').textContent()).toBe('Following the log.')
    await page.locator('[data-log-follow]').uncheck()
    await log.evaluate((el) => { el.scrollTop = 0 })
    kube.appendPodLog(NAMESPACE, POD, 'later\n')
    await expect.poll(() => log.evaluate((el) => el.textContent?.endsWith('later\n'))).toBe(true)
    expect(await log.evaluate((el) => el.scrollTop)).toBe(0)
    await page.locator('[data-log-follow]').check()
    kube.appendPodLog(NAMESPACE, POD, 'last\n')
    await expect.poll(() => log.evaluate((el) => el.scrollTop + el.clientHeight >= el.scrollHeight - 2)).toBe(true)
    kube.endPodLog(NAMESPACE, POD)
    expect(problems).toEqual([])
  })

  it('reconnects to the log after an outage and shows each line once', async () => {
    runningPod('one\ntwo\n')
    await page.goto(`${url}/workflows/${NAMESPACE}/wf/steps/build`)
    const log = page.locator('pre.log')
    const status = page.locator('[data-log-status]')
    await expect.poll(() => log.textContent()).toBe('one\ntwo\n')
    // Marks the lines shown: a stream that started over would replace them rather than add to them.
    await log.evaluate((el) => { (window as unknown as { shown: Node | null }).shown = el.firstChild })
    // The API server drops the log stream; the pod writes on meanwhile.
    kube.endPodLog(NAMESPACE, POD, new Error('connection reset'))
    await expect.poll(() => status.textContent()).toBe('Reconnecting to the log\u2026')
    kube.appendPodLog(NAMESPACE, POD, 'three\n')
    await expect.poll(() => log.textContent(), { timeout: 15_000 }).toBe('one\ntwo\nthree\n')
    expect(await status.textContent()).toBe('Following the log.')
    expect(await log.evaluate((el) => el.firstChild === (window as unknown as { shown: Node | null }).shown)).toBe(true)
    kube.appendPodLog(NAMESPACE, POD, 'four\n')
    await expect.poll(() => log.textContent()).toBe('one\ntwo\nthree\nfour\n')
    kube.endPodLog(NAMESPACE, POD)
    await expect.poll(() => status.textContent()).toBe(`Pod ${POD}: the container ended.`)
    expect(problems).toEqual([])
  }, 30_000)
})
