/**
 * GET /live/workflows/:ns/:name?rv= and GET /live/logs/:ns/:name/:step: Server-Sent Events
 * that keep an open run page and step log current. Everything is watched with the person's own
 * rights; the streams end when the browser goes away (`signal`) and never outlive the request.
 */
import { createHash } from 'node:crypto'
import { ForbiddenError } from '../../core/errors.js'
import type { StreamHandle } from '../../kube/port.js'
import { findStepPod } from '../../run-control/step-pod.js'
import { currentRunStatus } from '../../run-control/run-checks.js'
import type { Workflow } from '../../schemas/workflow.js'
import type { ConsoleRequest } from '../context.js'
import { phaseClass } from '../phase.js'
import { durationText } from '../time.js'
import { layoutGroups, MAX_DRAWN_STEPS } from './dag-layout.js'
import { runActions, runRights, type RunActions, type RunRights } from './run-actions.js'
import { LOG_TAIL_LINES } from './run-page.js'
import { phaseCounts, runView, tickingSince, type DisplayPhase } from './run-view.js'

/** A live stream's knobs; tests shorten the waits. */
export interface LiveOptions {
  now?: () => Date
  /** Between heartbeat comments (proxies close idle connections): 15 s. */
  heartbeatMs?: number
  /** Wait before re-reading after the watch ended, by consecutive failure (0 = first). */
  backoffMs?: (attempt: number) => number
  /** Most log bytes one stream sends: 2 MiB. */
  maxLogBytes?: number
}

/** Most bytes of log one stream sends; a browser tab holding more becomes slow, and `kinetic logs` has the rest. */
export const MAX_LOG_BYTES = 2 * 1024 * 1024
/** The EventSource reconnect delay the streams ask for. */
export const RETRY_MS = 3000
const HEARTBEAT_MS = 15_000
const backoff = (attempt: number) => Math.min(30_000, 1000 * 2 ** attempt)

/** One step as a patch carries it: phase, its words, duration, notes, and its start while it runs ('' otherwise). */
export type StepCells = [phaseClass: string, label: string, duration: string, reason: string, runningSince: string]

/** What changed on the page since the last patch of this stream (the first carries every step). */
export interface RunPatch {
  rv: string
  phase: string
  finished: boolean
  progress: { completed: number; failed: number; total: number }
  duration: string
  /** The run's start while it is going ('' otherwise): the page counts its duration on from there. */
  runningSince: string
  message: string
  /** Steps whose cells changed. */
  steps: Record<string, StepCells>
  /** Grouped drawings (large runs): each group's phase counts, in group order. */
  groups?: [DisplayPhase, number][][]
  actions: RunActions
}

/**
 * Pure: the patch that brings a page showing `shown` (step → cells, as last sent) up to `wf`
 * at `now`, and what the page then shows.
 */
export function planRunPatch(wf: Workflow, now: Date, rights: RunRights, shown: ReadonlyMap<string, string>): { patch: RunPatch; shown: Map<string, string> } {
  const view = runView(wf, now)
  const next = new Map<string, string>()
  const steps: Record<string, StepCells> = {}
  for (const s of view.steps) {
    const cells: StepCells = [phaseClass(s.phase), s.label, s.durationMs === undefined ? '' : durationText(s.durationMs), s.reason ?? '', tickingSince(s) ?? '']
    // The page counts a running step's duration itself: that alone is no change to send.
    const key = JSON.stringify([...cells.slice(0, 2), cells[4] ? '' : cells[2], ...cells.slice(3)])
    next.set(s.name, key)
    if (shown.get(s.name) !== key) steps[s.name] = cells
  }
  const patch: RunPatch = {
    rv: view.resourceVersion,
    phase: view.phase,
    finished: view.finished,
    progress: view.progress,
    duration: view.durationMs === undefined ? '' : durationText(view.durationMs),
    runningSince: tickingSince(view) ?? '',
    message: view.message ?? '',
    steps,
    actions: runActions(wf, view, rights),
  }
  if (view.steps.length > MAX_DRAWN_STEPS) {
    patch.groups = layoutGroups(wf.spec.steps).groups.map((g) => phaseCounts(g.steps.map((i) => view.steps[i]!)))
  }
  return { patch, shown: next }
}

/** Pure: one SSE message (`data` split over lines as the format requires). */
export function sseMessage(event: string, data: string, id?: string): string {
  const lines = data.split(/\r\n|\r|\n/).map((l) => `data: ${l}`).join('\n')
  return `${id === undefined ? '' : `id: ${id}\n`}event: ${event}\n${lines}\n\n`
}

/** An SSE body being written; closes once, stops its timers and whatever it was reading. */
class SseWriter {
  private controller!: ReadableStreamDefaultController<Uint8Array>
  private readonly encoder = new TextEncoder()
  private heartbeat: ReturnType<typeof setInterval> | undefined
  private readonly cleanups: (() => void)[] = []
  closed = false
  readonly stream: ReadableStream<Uint8Array>

  constructor(signal: AbortSignal, heartbeatMs: number) {
    this.stream = new ReadableStream<Uint8Array>({
      start: (c) => { this.controller = c },
      cancel: () => this.close(),
    })
    this.write(`retry: ${RETRY_MS}\n\n`)
    this.heartbeat = setInterval(() => this.write(': heartbeat\n\n'), heartbeatMs)
    if (signal.aborted) this.close()
    else signal.addEventListener('abort', () => this.close(), { once: true })
  }

  write(text: string): void {
    if (this.closed) return
    try {
      this.controller.enqueue(this.encoder.encode(text))
    } catch {
      this.close() // the reader went away
    }
  }

  send(event: string, data: unknown, id?: string): void {
    this.write(sseMessage(event, typeof data === 'string' ? data : JSON.stringify(data), id))
  }

  /** Runs `cleanup` once the stream closes; the returned function forgets it (a timer that fired, a watch that ended). */
  onClose(cleanup: () => void): () => void {
    if (this.closed) {
      cleanup()
      return () => {}
    }
    this.cleanups.push(cleanup)
    return () => {
      const at = this.cleanups.indexOf(cleanup)
      if (at >= 0) this.cleanups.splice(at, 1)
    }
  }

  close(): void {
    if (this.closed) return
    this.closed = true
    clearInterval(this.heartbeat)
    for (const cleanup of this.cleanups.splice(0)) cleanup()
    try {
      this.controller.close()
    } catch {
      // already closed or cancelled by the reader
    }
  }

  response(): Response {
    return new Response(this.stream, {
      status: 200,
      headers: {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache, no-transform',
        // Reverse proxies that buffer responses would hold the events back.
        'x-accel-buffering': 'no',
      },
    })
  }
}

function sleep(ms: number, writer: SseWriter): Promise<void> {
  return new Promise((resolve) => {
    if (writer.closed) return resolve()
    let forget = () => {}
    const timer = setTimeout(() => { forget(); resolve() }, ms)
    forget = writer.onClose(() => { clearTimeout(timer); resolve() })
  })
}

/**
 * SSE of one run: `event: run` with a RunPatch (id = resourceVersion) on each change since
 * `resourceVersion` (the version the page shows; a page that is already stale gets every step
 * at once), `event: gone` when it is deleted, `event: error` when the person may not watch it.
 * When the watch ends (the server closed it, 410 Gone, a network failure) it re-reads the run
 * and watches again, waiting longer after each failure in a row.
 */
export async function runEventsResponse(
  req: ConsoleRequest, namespace: string, name: string, resourceVersion: string, signal: AbortSignal, options: LiveOptions = {},
): Promise<Response> {
  const writer = new SseWriter(signal, options.heartbeatMs ?? HEARTBEAT_MS)
  const now = options.now ?? (() => new Date())
  const wait = options.backoffMs ?? backoff
  let rv = resourceVersion
  let shown = new Map<string, string>()
  let rights: RunRights | undefined
  // Changes arrive by callback; patches are built in order, one after the other.
  let queue = Promise.resolve()
  const emit = (wf: Workflow) => {
    queue = queue.then(async () => {
      if (writer.closed) return
      rights ??= await runRights(req, wf)
      const planned = planRunPatch(wf, now(), rights, shown)
      shown = planned.shown
      writer.send('run', planned.patch, planned.patch.rv)
    }).catch((err: unknown) => fail(err))
  }
  const fail = (err: unknown) => {
    // Only a refusal is final; after anything else the browser reconnects and the page resumes.
    if (err instanceof ForbiddenError) writer.send('error', { message: err.message })
    writer.close()
  }
  const gone = () => {
    writer.send('gone', { message: `Workflow ${namespace}/${name} was deleted` })
    writer.close()
  }

  const follow = async () => {
    let failures = 0
    for (let first = true; !writer.closed; first = false) {
      if (!first) {
        await sleep(wait(failures), writer)
        if (writer.closed) return
      }
      // Read, then watch from "now" (no version): the server sends the current object first, so
      // nothing between the read and the watch is missed, and a version older than the server
      // keeps (410 Gone) is never asked for, however long ago the object last changed.
      try {
        const wf = await req.kube.getWorkflow(namespace, name)
        if (!wf) return await queue.then(gone)
        const current = wf.metadata.resourceVersion ?? ''
        if (first && current === resourceVersion) {
          // The page shows this version: the first patch carries only what changes after it.
          shown = planRunPatch(wf, req.now, { decide: false, cancel: false, rerun: false }, shown).shown
          rv = current
        } else if (current !== rv) {
          rv = current
          emit(wf)
        }
      } catch (err) {
        if (err instanceof ForbiddenError) return fail(err)
        failures++
        continue
      }
      let handle: StreamHandle | undefined
      try {
        handle = await req.kube.watchWorkflow(namespace, name, '', (wf) => {
          if (wf === null) {
            void queue.then(gone)
            return
          }
          if (wf.metadata.resourceVersion === rv) return // the version already shown
          rv = wf.metadata.resourceVersion ?? rv
          emit(wf)
        })
        const forget = writer.onClose(() => handle?.stop())
        await handle.done.finally(forget)
        failures = 0
      } catch (err) {
        if (err instanceof ForbiddenError) return fail(err)
        failures++
      }
      await queue
    }
  }
  void follow().catch(fail)
  return writer.response()
}

/** Lines a log line's id covers: enough that a resumed stream finds its place, few enough to find it near the tail's start. */
const LINE_ID_WINDOW = 3

/** Pure: the id a log line is sent with: a digest of the pod and the last few lines up to it, the same on every stream of that log. */
export function logLineId(pod: string, window: readonly string[]): string {
  return createHash('sha256').update(pod).update('\0').update(window.join('\n')).digest('hex').slice(0, 16)
}

/**
 * SSE of a step's pod log: `event: reset` (the page's lines are replaced by the stream's,
 * which start with the last LOG_TAIL_LINES), `event: line` per line with an id (logLineId),
 * `event: truncated` when the byte cap is reached, `event: end` when the container ended or
 * there is nothing to follow. A page that lost the stream reopens it with `?after=<last id>`:
 * the stream then skips the tail up to that line and sends only what is new, no `reset`; when
 * that line is no longer in the tail (the outage was long) it says `event: gap` and sends the tail.
 * An outage (API server, network) closes the stream without a final event, so the page resumes.
 */
export async function logEventsResponse(
  req: ConsoleRequest, namespace: string, name: string, step: string, signal: AbortSignal, options: LiveOptions = {},
): Promise<Response> {
  const writer = new SseWriter(signal, options.heartbeatMs ?? HEARTBEAT_MS)
  const cap = options.maxLogBytes ?? MAX_LOG_BYTES
  const after = req.url.searchParams.get('after') ?? ''
  const end = (message: string) => {
    writer.send('end', { message })
    writer.close()
  }
  const fail = (err: unknown) => {
    // Only a refusal is final; after anything else the page reopens the stream and resumes.
    if (err instanceof ForbiddenError) writer.send('error', { message: err.message })
    writer.close()
  }
  const follow = async () => {
    const wf = await req.kube.getWorkflow(namespace, name)
    if (!wf) return end(`Workflow ${namespace}/${name} was not found`)
    if (!wf.spec.steps.some((s) => s.name === step)) return end(`Workflow ${namespace}/${name} has no step ${step}`)
    const current = currentRunStatus(wf)?.stepStatuses?.find((s) => s.name === step)?.jobName
    const { job, pod } = await findStepPod(req.kube, namespace, name, step, current)
    const jobName = job?.metadata?.name
    if (!jobName) return end('No Job has run this step yet; reload the page once it started.')
    if (!pod) return end(`Job ${jobName} has no pod to follow.`)
    let sent = 0
    let partial = ''
    let handle: StreamHandle | undefined
    const window: string[] = []
    // While resuming: the tail's lines read so far, none sent, until the page's last line is found.
    let skipped: { text: string; id: string }[] | undefined = after === '' ? undefined : []
    const send = (text: string, id: string) => {
      if (writer.closed) return
      const bytes = Buffer.byteLength(text, 'utf8') + 1
      if (sent + bytes > cap) {
        writer.send('truncated', { message: `Stopped after ${sent} bytes; the rest of the log is in kinetic logs or kubectl logs ${pod}.` })
        handle?.stop()
        writer.close()
        return
      }
      sent += bytes
      writer.send('line', text, id)
    }
    const gap = () => {
      const lines = skipped ?? []
      skipped = undefined
      writer.send('gap', { message: 'Lines written while the page was not connected may be missing here.' })
      for (const l of lines) send(l.text, l.id)
    }
    const line = (text: string) => {
      window.push(text)
      if (window.length > LINE_ID_WINDOW) window.shift()
      const id = logLineId(pod, window)
      if (!skipped) return send(text, id)
      if (id === after) skipped = undefined // the page's last line: what follows is new
      else {
        skipped.push({ text, id })
        if (skipped.length >= LOG_TAIL_LINES) gap()
      }
    }
    if (!skipped) writer.send('reset', { pod })
    handle = await req.kube.followPodLog(namespace, pod, { tailLines: LOG_TAIL_LINES }, (chunk) => {
      const parts = (partial + chunk).split(/\r?\n/)
      partial = parts.pop() ?? ''
      for (const p of parts) line(p)
    })
    writer.onClose(() => handle?.stop())
    await handle.done
    if (partial !== '') line(partial)
    if (skipped) gap()
    end(`Pod ${pod}: the container ended.`)
  }
  void follow().catch(fail)
  return writer.response()
}
