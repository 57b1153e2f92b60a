// The OpenTelemetry SDK side of the sink, imported only when a span is recorded with an OTLP
// endpoint configured (see exporter.ts). Nothing else may import this module.
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, TraceFlags, type Attributes as OtelAttributes, type Link } from '@opentelemetry/api'
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto'
import { resourceFromAttributes } from '@opentelemetry/resources'
import { BasicTracerProvider, RandomIdGenerator, type IdGenerator, type ReadableSpan, type SpanProcessor } from '@opentelemetry/sdk-trace-base'
import type { Attributes, SpanShipper } from './span.js'

const KINDS = { internal: SpanKind.INTERNAL, server: SpanKind.SERVER, client: SpanKind.CLIENT, consumer: SpanKind.CONSUMER, producer: SpanKind.PRODUCER }

/** Ids come from the record (derived from the run, see ids.ts), not from the SDK's generator. */
class RecordIds implements IdGenerator {
  traceId: string | undefined
  spanId: string | undefined
  private readonly random = new RandomIdGenerator()
  generateTraceId(): string {
    return this.traceId ?? this.random.generateTraceId()
  }
  generateSpanId(): string {
    return this.spanId ?? this.random.generateSpanId()
  }
}

/** Hands each ended span to the shipper's current batch. */
class Collect implements SpanProcessor {
  batch: ReadableSpan[] = []
  onStart(): void {}
  onEnd(span: ReadableSpan): void {
    this.batch.push(span)
  }
  async forceFlush(): Promise<void> {}
  async shutdown(): Promise<void> {}
}

/** Turns records into SDK spans and sends them with the OTLP (HTTP/protobuf) exporter, configured by the standard OTEL_* variables. */
export function otlpShipper(env: Readonly<Record<string, string | undefined>>): SpanShipper {
  const ids = new RecordIds()
  const collect = new Collect()
  const provider = new BasicTracerProvider({
    idGenerator: ids,
    spanProcessors: [collect],
    resource: resourceFromAttributes({
      'service.name': env.OTEL_SERVICE_NAME || env.K_SERVICE || 'kinetic',
      'service.namespace': 'kinetic',
      ...resourceAttributesFrom(env.OTEL_RESOURCE_ATTRIBUTES),
    }),
  })
  const tracer = provider.getTracer('kinetic')
  const exporter = new OTLPTraceExporter()
  return {
    ship(records) {
      collect.batch = []
      for (const r of records) {
        const parent = r.parentSpanId
          ? trace.setSpanContext(ROOT_CONTEXT, { traceId: r.traceId, spanId: r.parentSpanId, traceFlags: TraceFlags.SAMPLED, isRemote: true })
          : ROOT_CONTEXT
        ids.traceId = r.traceId
        ids.spanId = r.spanId
        const links: Link[] = (r.links ?? []).map((l) => ({
          context: { traceId: l.traceId, spanId: l.spanId, traceFlags: TraceFlags.SAMPLED, isRemote: true },
          attributes: clean(l.attributes ?? {}),
        }))
        const span = tracer.startSpan(r.name, { kind: KINDS[r.kind], startTime: r.startMs, attributes: clean(r.attributes), links, root: !r.parentSpanId }, parent)
        ids.traceId = undefined
        ids.spanId = undefined
        for (const e of r.events ?? []) span.addEvent(e.name, clean(e.attributes ?? {}), e.atMs)
        if (r.error !== undefined) span.setStatus({ code: SpanStatusCode.ERROR, message: r.error })
        span.end(Math.max(r.endMs, r.startMs))
      }
      const batch = collect.batch
      collect.batch = []
      return new Promise((resolve) => exporter.export(batch, (result) => resolve(result.code === 0
        ? { lost: 0 }
        : { lost: batch.length, ...(result.error ? { error: result.error.message } : {}) })))
    },
  }
}

function clean(attributes: Attributes): OtelAttributes {
  const out: OtelAttributes = {}
  for (const [k, v] of Object.entries(attributes)) if (v !== undefined) out[k] = v
  return out
}

/** OTEL_RESOURCE_ATTRIBUTES: `key=value,key=value`, values percent-encoded. */
function resourceAttributesFrom(value: string | undefined): Record<string, string> {
  const out: Record<string, string> = {}
  for (const pair of (value ?? '').split(',')) {
    const at = pair.indexOf('=')
    if (at <= 0) continue
    try {
      out[pair.slice(0, at).trim()] = decodeURIComponent(pair.slice(at + 1).trim())
    } catch {
      // a malformed value is left out, as the SDK's own detector does
    }
  }
  return out
}
