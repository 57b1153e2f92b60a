import { afterEach, describe, expect, it } from 'vitest'
import type { Person } from '../../../shared/console/context.js'
import { logEventsResponse, runEventsResponse, type LiveOptions } from '../../../shared/console/run/live.js'
import { ForbiddenError, TransientError } from '../../../shared/core/errors.js'
import { currentRunId } from '../../../shared/workflow/plan/run-status.js'
import { LABEL_STEP, LABEL_WORKFLOW } from '../../../shared/schemas/labels.js'
import type { StepStatus, Workflow } from '../../../shared/schemas/workflow.js'
import { EmbeddedKube } from '../../support/embedded-kube.js'
import { eventually } from '../../support/eventually.js'
import { aStep, aWorkflow, NAMESPACE } from '../../fixtures/workflows.js'
import { requestFor } from '../pages/support.js'
import { SseReader } from './sse-reader.js'

const LOCAL_ADMIN: Person = { mode: 'local', name: 'kinetic-local-admin', groups: ['system:masters'], credential: { kind: 'own' } }
const FAST: LiveOptions = { backoffMs: () => 5, now: () => new Date('2026-12-01T12:00:00Z') }

function aRun(statuses: StepStatus[]): Workflow {
  const wf = aWorkflow({ spec: { steps: [aStep('build'), aStep('review', { dependsOn: ['build'] })] } })
  wf.status = { phase: 'Running', runId: currentRunId(wf), startTime: '2026-12-01T11:50:00Z', stepStatuses: statuses, totalSteps: 2, completedSteps: 0 }
  return wf
}

const aborts: AbortController[] = []
afterEach(() => { for (const a of aborts.splice(0)) a.abort() })
function signal(): AbortController {
  const a = new AbortController()
  aborts.push(a)
  return a
}

async function openRun(kube: EmbeddedKube, options: LiveOptions = FAST, person?: Person, rv?: string) {
  const abort = signal()
  const wf = kube.workflows.get(`${NAMESPACE}/wf`)
  const response = await runEventsResponse(requestFor(kube, '/live', person ? { person, config: { actions: true } } : {}), NAMESPACE, 'wf', rv ?? wf?.metadata.resourceVersion ?? '0', abort.signal, options)
  return { response, reader: new SseReader(response), abort }
}

describe('the live run stream', () => {
  it('is an uncached event stream that tells the browser how soon to reconnect', async () => {
    const { response, reader } = await openRun(new EmbeddedKube({ workflows: [aRun([])] }))
    expect(response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8')
    expect(response.headers.get('cache-control')).toContain('no-cache')
    await eventually('the retry hint', () => reader.retry === 3000, 2000, 5)
  })

  it('sends only what changed since the version the page shows, on each change', async () => {
    const kube = new EmbeddedKube({ workflows: [aRun([])] })
    const { reader } = await openRun(kube)
    await eventually('the watch', () => kube.openWatches === 1, 2000, 5)
    kube.putWorkflow(aRun([{ name: 'build', phase: 'Running', startTime: '2026-12-01T11:59:00Z' }]))
    await eventually('the first patch', () => reader.named('run').length === 1, 2000, 5)
    kube.putWorkflow(aRun([{ name: 'build', phase: 'Succeeded', startTime: '2026-12-01T11:59:00Z', completionTime: '2026-12-01T11:59:30Z' }]))
    await eventually('the second patch', () => reader.named('run').length === 2, 2000, 5)
    const [first, second] = reader.json<{ rv: string; steps: Record<string, string[]>; phase: string }>('run')
    // A running step carries its start, so the page counts its duration on; a finished one does not.
    expect(first!.steps).toEqual({ build: ['Running', 'Running', '1 min', '', '2026-12-01T11:59:00Z'] })
    expect(second!.steps).toEqual({ build: ['Succeeded', 'Succeeded', '30 s', '', ''] })
    expect(reader.named('run')[1]!.id).toBe(kube.workflows.get(`${NAMESPACE}/wf`)!.metadata.resourceVersion)
  })

  it('brings a page that is already stale up to date at once, with every step', async () => {
    const kube = new EmbeddedKube({ workflows: [aRun([])] })
    const shown = kube.workflows.get(`${NAMESPACE}/wf`)!.metadata.resourceVersion!
    kube.putWorkflow(aRun([{ name: 'build', phase: 'Running', startTime: '2026-12-01T11:59:00Z' }]))
    const { reader } = await openRun(kube, FAST, undefined, shown)
    await eventually('the patch', () => reader.named('run').length === 1, 2000, 5)
    expect(reader.json<{ steps: Record<string, string[]> }>('run')[0]!.steps).toEqual({
      build: ['Running', 'Running', '1 min', '', '2026-12-01T11:59:00Z'], review: ['Pending', 'Not started', '', 'after build', ''],
    })
    expect(reader.json<{ runningSince: string }>('run')[0]!.runningSince).toBe('2026-12-01T11:50:00Z')
  })

  it('sends no step again when only its running duration grew: the page counts it itself', async () => {
    let clock = new Date('2026-12-01T12:00:00Z')
    const kube = new EmbeddedKube({ workflows: [aRun([{ name: 'build', phase: 'Running', startTime: '2026-12-01T11:59:00Z' }])] })
    const { reader } = await openRun(kube, { ...FAST, now: () => clock })
    await eventually('the watch', () => kube.openWatches === 1, 2000, 5)
    clock = new Date('2026-12-01T12:05:00Z')
    kube.putWorkflow(aRun([{ name: 'build', phase: 'Running', startTime: '2026-12-01T11:59:00Z', message: 'still going' }]))
    await eventually('the patch', () => reader.named('run').length === 1, 2000, 5)
    expect(reader.json<{ steps: Record<string, string[]> }>('run')[0]!.steps).toEqual({})
  })

  it('says which action forms apply as the run moves', async () => {
    const kube = new EmbeddedKube({ workflows: [aRun([])] })
    const { reader } = await openRun(kube, FAST, LOCAL_ADMIN)
    await eventually('the watch', () => kube.openWatches === 1, 2000, 5)
    kube.putWorkflow(aRun([{ name: 'build', phase: 'Succeeded' }, { name: 'review', phase: 'Pending', error: 'Waiting for human approval (set annotation purko.io/approve-review=true)' }]))
    await eventually('a patch', () => reader.named('run').length === 1, 2000, 5)
    expect(reader.json('run')[0]!.actions).toEqual({ decide: ['review'], cancel: true, rerun: true })
  })

  it('says the run is gone when it is deleted, and ends', async () => {
    const kube = new EmbeddedKube({ workflows: [aRun([])] })
    const { reader } = await openRun(kube)
    await eventually('the watch', () => kube.openWatches === 1, 2000, 5)
    await kube.deleteWorkflow(NAMESPACE, 'wf')
    await eventually('the end of the stream', () => reader.ended, 2000, 5)
    expect(reader.named('gone')).toHaveLength(1)
    expect(kube.openWatches).toBe(0)
  })

  it.each([
    ['the server closes the watch', undefined],
    ['the watch fails (410 Gone)', new Error('410 Gone')],
  ])('reads the run again and watches again when %s', async (_, error) => {
    const kube = new EmbeddedKube({ workflows: [aRun([])] })
    const { reader } = await openRun(kube)
    await eventually('the watch', () => kube.openWatches === 1, 2000, 5)
    // A change made while no watch is open is found by the re-read.
    kube.endWatches(error)
    kube.putWorkflow(aRun([{ name: 'build', phase: 'Running' }]))
    await eventually('the missed change', () => reader.named('run').length === 1, 2000, 5)
    await eventually('a new watch', () => kube.openWatches === 1, 2000, 5)
    kube.putWorkflow(aRun([{ name: 'build', phase: 'Failed', error: 'exit 1' }]))
    await eventually('a change on the new watch', () => reader.named('run').length === 2, 2000, 5)
    expect(reader.json<{ steps: Record<string, string[]> }>('run')[1]!.steps.build![0]).toBe('Failed')
  })

  it('tells the person when they may not watch the run, and ends', async () => {
    const kube = new EmbeddedKube({ workflows: [aRun([])] }).failNext('watchWorkflow', new ForbiddenError('alice may not watch workflows.purko.io ai-agents/wf'))
    const { reader } = await openRun(kube)
    await eventually('the end of the stream', () => reader.ended, 2000, 5)
    expect(reader.json('error')).toEqual([{ message: 'alice may not watch workflows.purko.io ai-agents/wf' }])
  })

  it('ends without a final error on an outage, so the browser reconnects and resumes', async () => {
    const kube = new EmbeddedKube({ workflows: [aRun([])] }).failNext('reviewSelfAccess', new TransientError('API server unavailable'))
    const abort = signal()
    const rv = kube.workflows.get(`${NAMESPACE}/wf`)!.metadata.resourceVersion!
    const reader = new SseReader(await runEventsResponse(requestFor(kube, '/live', { config: { actions: true } }), NAMESPACE, 'wf', rv, abort.signal, FAST))
    await eventually('the watch', () => kube.openWatches === 1, 2000, 5)
    kube.putWorkflow(aRun([{ name: 'build', phase: 'Running' }]))
    await eventually('the end of the stream', () => reader.ended, 2000, 5)
    expect(reader.named('error')).toEqual([])
    expect(kube.openWatches).toBe(0)
  })

  it('stops watching when the browser goes away', async () => {
    const kube = new EmbeddedKube({ workflows: [aRun([])] })
    const { reader, abort } = await openRun(kube)
    await eventually('the watch', () => kube.openWatches === 1, 2000, 5)
    abort.abort()
    await eventually('the end of the stream', () => reader.ended, 2000, 5)
    expect(kube.openWatches).toBe(0)
  })

  it('sends a heartbeat comment while nothing changes', async () => {
    const { reader } = await openRun(new EmbeddedKube({ workflows: [aRun([])] }), { ...FAST, heartbeatMs: 10 })
    await eventually('a heartbeat', () => reader.comments.includes('heartbeat'), 2000, 5)
  })
})

describe('the live log stream', () => {
  function withPod(kube: EmbeddedKube, log: string, phase = 'Running') {
    kube.jobs.set('ai-agents/wf-build-1', { metadata: { name: 'wf-build-1', namespace: NAMESPACE, labels: { [LABEL_WORKFLOW]: 'wf', [LABEL_STEP]: 'build' } } })
    kube.pods.set('ai-agents/wf-build-1-x', { metadata: { name: 'wf-build-1-x', namespace: NAMESPACE, labels: { 'job-name': 'wf-build-1' } }, status: { phase } })
    kube.logs.set('ai-agents/wf-build-1-x', log)
  }
  async function openLog(kube: EmbeddedKube, options: LiveOptions = FAST, after?: string) {
    const abort = signal()
    const path = after === undefined ? '/live/logs/ai-agents/wf/build' : `/live/logs/ai-agents/wf/build?after=${after}`
    return new SseReader(await logEventsResponse(requestFor(kube, path), NAMESPACE, 'wf', 'build', abort.signal, options))
  }
  const numbered = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => `line ${from + i}\n`).join('')

  it('sends each line once whole, however the chunks split it, then says the container ended', async () => {
    const kube = new EmbeddedKube({ workflows: [aRun([{ name: 'build', phase: 'Running', jobName: 'wf-build-1' }])] })
    withPod(kube, 'one\ntw')
    const reader = await openLog(kube)
    await eventually('the first line', () => reader.named('line').length === 1, 2000, 5)
    kube.appendPodLog(NAMESPACE, 'wf-build-1-x', 'o\nthree')
    kube.endPodLog(NAMESPACE, 'wf-build-1-x')
    await eventually('the end', () => reader.ended, 2000, 5)
    expect(reader.events.map((e) => e.event)).toEqual(['reset', 'line', 'line', 'line', 'end'])
    expect(reader.named('line').map((e) => e.data)).toEqual(['one', 'two', 'three'])
    expect(reader.json('end')[0]!.message).toBe('Pod wf-build-1-x: the container ended.')
  })

  it('stops at the byte cap and says so', async () => {
    const kube = new EmbeddedKube({ workflows: [aRun([{ name: 'build', phase: 'Running', jobName: 'wf-build-1' }])] })
    withPod(kube, Array.from({ length: 100 }, (_, i) => `line ${String(i).padStart(3, '0')}\n`).join(''))
    const reader = await openLog(kube, { ...FAST, maxLogBytes: 50 })
    await eventually('the end', () => reader.ended, 2000, 5)
    // Each line is 8 characters and its newline: five fit in 50 bytes.
    expect(reader.named('line')).toHaveLength(5)
    expect(reader.json('truncated')[0]!.message).toContain('Stopped after 45 bytes')
    expect(reader.named('end')).toHaveLength(0)
  })

  it('resumes after the last line the page showed: only the lines written since, no reset', async () => {
    const kube = new EmbeddedKube({ workflows: [aRun([{ name: 'build', phase: 'Running', jobName: 'wf-build-1' }])] })
    withPod(kube, numbered(0, 5))
    const first = await openLog(kube)
    await eventually('five lines', () => first.named('line').length === 5, 2000, 5)
    const lastId = first.named('line')[4]!.id!
    // The connection drops; meanwhile the pod writes three more lines.
    kube.appendPodLog(NAMESPACE, 'wf-build-1-x', numbered(5, 8))
    const resumed = await openLog(kube, FAST, lastId)
    await eventually('the new lines', () => resumed.named('line').length === 3, 2000, 5)
    kube.endPodLog(NAMESPACE, 'wf-build-1-x')
    await eventually('the end', () => resumed.ended, 2000, 5)
    expect(resumed.events.map((e) => e.event)).toEqual(['line', 'line', 'line', 'end'])
    expect(resumed.named('line').map((e) => e.data)).toEqual(['line 5', 'line 6', 'line 7'])
  })

  it('gives a line the same id on every stream of that log, and says so when the last line shown left the tail', async () => {
    const kube = new EmbeddedKube({ workflows: [aRun([{ name: 'build', phase: 'Running', jobName: 'wf-build-1' }])] })
    withPod(kube, numbered(0, 3), 'Succeeded')
    const first = await openLog(kube)
    await eventually('the end', () => first.ended, 2000, 5)
    const again = await openLog(kube)
    await eventually('the end again', () => again.ended, 2000, 5)
    expect(again.named('line').map((e) => e.id)).toEqual(first.named('line').map((e) => e.id))
    // Over 200 lines written since the page's last line: it is no longer in the tail.
    kube.logs.set('ai-agents/wf-build-1-x', numbered(0, 3) + numbered(3, 300))
    const late = await openLog(kube, FAST, first.named('line')[2]!.id)
    await eventually('the late end', () => late.ended, 2000, 5)
    expect(late.named('gap')).toHaveLength(1)
    expect(late.named('reset')).toHaveLength(0)
    expect(late.named('line').map((e) => e.data)).toEqual(Array.from({ length: 200 }, (_, i) => `line ${100 + i}`))
  })

  it('closes without a final event when the log cannot be read for now, so the page reopens it', async () => {
    const kube = new EmbeddedKube({ workflows: [aRun([{ name: 'build', phase: 'Running', jobName: 'wf-build-1' }])] })
    withPod(kube, numbered(0, 2))
    kube.failNext('followPodLog', new TransientError('the API server is not answering'))
    const reader = await openLog(kube)
    await eventually('the close', () => reader.ended, 2000, 5)
    expect(reader.named('error')).toEqual([])
    expect(reader.named('end')).toEqual([])
  })

  it('ends at once with the reason when the step has no Job yet', async () => {
    const kube = new EmbeddedKube({ workflows: [aRun([])] })
    const reader = await openLog(kube)
    await eventually('the end', () => reader.ended, 2000, 5)
    expect(reader.json('end')).toEqual([{ message: 'No Job has run this step yet; reload the page once it started.' }])
  })
})
