import { telemetryConfigFrom } from './config.js'
import type { SpanRecord, SpanShipper } from './span.js'

/**
 * Where finished spans go. With no OTLP endpoint it drops them at once and the OpenTelemetry SDK
 * is never imported; with one, the SDK is loaded on the first span (./otlp.ts) and spans wait in
 * a bounded queue: an unreachable collector costs dropped spans, counted, never a delayed run.
 */
export interface SpanSink {
  readonly enabled: boolean
  record(span: SpanRecord): void
  /** Sends what is queued; resolves within `timeoutMs` whatever the collector does. */
  flush(timeoutMs?: number): Promise<void>
  /** Spans lost to a full queue or a failed export since the process started. */
  dropped(): number
  /** Loads the exporter now, so a short-lived process (the executor) pays for it while it works, not at exit. */
  warm(): void
}

/** Spans waiting at most; beyond this, new spans are dropped and counted. */
export const MAX_QUEUED_SPANS = 2048

type Warn = (message: string, fields: Record<string, unknown>) => void

/** A sink over a shipper that is loaded on first use. */
export function createSpanSink(enabled: boolean, load: () => Promise<SpanShipper>, warn: Warn, maxQueued = MAX_QUEUED_SPANS): SpanSink {
  const queue: SpanRecord[] = []
  let lost = 0
  let warned = false
  let shipper: Promise<SpanShipper> | undefined
  let inFlight: Promise<void> | undefined
  let timer: ReturnType<typeof setTimeout> | undefined
  // The last export failed (or the exporter could not load): a flush does not wait for it again.
  let failing = false
  const lose = (count: number, why: string) => {
    if (count <= 0) return
    lost += count
    // Once per process: a down collector must not flood the logs.
    if (!warned) {
      warned = true
      warn('Dropped spans: the trace exporter could not keep up or reach the collector', { dropped: count, reason: why })
    }
  }
  const schedule = () => {
    if (timer || queue.length === 0) return
    timer = setTimeout(() => void ship(), 200)
    timer.unref?.()
  }
  // One export at a time: while one waits for the collector, new spans wait in the bounded queue.
  const ship = (): Promise<void> => {
    if (timer) clearTimeout(timer)
    timer = undefined
    if (inFlight || queue.length === 0) return inFlight ?? Promise.resolve()
    const batch = queue.splice(0, queue.length)
    shipper ??= load()
    inFlight = (async () => {
      try {
        const shipped = await (await shipper!).ship(batch)
        failing = shipped.lost > 0
        lose(shipped.lost, shipped.error ?? 'export failed')
      } catch (err) {
        failing = true
        lose(batch.length, (err as Error).message)
      } finally {
        inFlight = undefined
        schedule()
      }
    })()
    return inFlight
  }
  const shipAll = async () => {
    while (inFlight || queue.length > 0) await ship()
  }
  return {
    enabled,
    record(span) {
      if (!enabled) return
      if (queue.length >= maxQueued) return lose(1, 'queue full')
      queue.push(span)
      schedule()
    },
    async flush(timeoutMs = 1000) {
      if (!enabled) return
      // A collector that already failed is not waited for (a step's exit, a function's shutdown):
      // what is still queued is dropped and counted, as a full queue's spans are.
      if (failing) return lose(queue.splice(0, queue.length).length, 'the collector failed; not waited for')
      let expired: ReturnType<typeof setTimeout> | undefined
      await Promise.race([shipAll(), new Promise<void>((resolve) => { expired = setTimeout(resolve, timeoutMs); expired.unref?.() })])
      if (expired) clearTimeout(expired)
    },
    dropped: () => lost,
    warm() {
      if (!enabled || shipper) return
      shipper = load()
      shipper.catch(() => {}) // the next export reports it
    },
  }
}

/**
 * Set by the function bundles' build (scripts/code-cache.mjs) to the file beside them that holds
 * the SDK, so a function's bundle and code cache carry none of it; elsewhere (tsx, the executor's
 * bundle) ./otlp.js is imported as any lazy module.
 */
declare const __KINETIC_OTLP_MODULE__: string | undefined

function loadOtlp(): Promise<typeof import('./otlp.js')> {
  return typeof __KINETIC_OTLP_MODULE__ === 'string' ? import(__KINETIC_OTLP_MODULE__) : import('./otlp.js')
}

let processSink: SpanSink | undefined

/** The process's sink, configured from its environment on first use. */
export function spanSink(): SpanSink {
  processSink ??= createSpanSink(
    telemetryConfigFrom(process.env).enabled,
    async () => (await loadOtlp()).otlpShipper(process.env),
    (message, fields) => process.stderr.write(`${JSON.stringify({ level: 40, time: Date.now(), msg: message, ...fields })}\n`),
  )
  return processSink
}

/** Replaces the process's sink (tests and benches). */
export function setSpanSink(sink: SpanSink | undefined): void {
  processSink = sink
}
