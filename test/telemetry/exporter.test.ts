import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { describe, expect, it } from 'vitest'
import { createSpanSink } from '../../shared/telemetry/exporter.js'
import type { SpanShipper } from '../../shared/telemetry/span.js'
import { telemetryConfigFrom, otelEnvForSteps } from '../../shared/telemetry/config.js'
import type { SpanRecord } from '../../shared/telemetry/span.js'

const ROOT = join(import.meta.dirname, '../..')
const aSpan = (name = 's'): SpanRecord => ({ name, traceId: 'a'.repeat(32), spanId: 'b'.repeat(16), kind: 'internal', startMs: 1, endMs: 2, attributes: {} })

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name)
    if (e.isDirectory()) return e.name === 'node_modules' || e.name.startsWith('.') || e.name === 'dist' || e.name === 'test' ? [] : sourceFiles(path)
    return /\.(ts|mts|mjs)$/.test(e.name) ? [path] : []
  })
}

describe('the span sink', () => {
  it('with no OTLP endpoint records nothing and never loads the exporter', async () => {
    let loads = 0
    const sink = createSpanSink(false, async () => { loads++; return { ship: async () => ({ lost: 0 }) } }, () => {})
    sink.record(aSpan())
    await sink.flush()
    expect(loads).toBe(0)
    expect(sink.dropped()).toBe(0)
  })

  it('loads the OpenTelemetry SDK from one module only, and that module only from the sink', () => {
    const importers = sourceFiles(ROOT).filter((f) => /from '@opentelemetry\//.test(readFileSync(f, 'utf8'))).map((f) => relative(ROOT, f))
    expect(importers).toEqual(['shared/telemetry/otlp.ts'])
    const otlpImporters = sourceFiles(ROOT).filter((f) => /['"]\.\/otlp\.js['"]|telemetry\/otlp\.js/.test(readFileSync(f, 'utf8'))).map((f) => relative(ROOT, f))
    // The bench measures the exporter on its own; nothing that runs in a function or the executor does.
    expect(otlpImporters).toEqual(['bench/telemetry.ts', 'shared/telemetry/exporter.ts'])
    expect(readFileSync(join(ROOT, 'shared/telemetry/exporter.ts'), 'utf8')).toMatch(/: import\('\.\/otlp\.js'\)/)
  })

  it('loads the exporter ahead of the first span when warmed with tracing on, and not at all with it off', async () => {
    let loads = 0
    const load = async () => { loads++; return { ship: async () => ({ lost: 0 }) } }
    createSpanSink(false, load, () => {}).warm()
    const on = createSpanSink(true, load, () => {})
    on.warm()
    on.warm()
    expect(loads).toBe(1)
  })

  it('never holds a flush longer than its timeout when the collector does not answer', async () => {
    const hanging: SpanShipper = { ship: () => new Promise(() => {}) }
    const sink = createSpanSink(true, async () => hanging, () => {})
    sink.record(aSpan())
    const t0 = performance.now()
    await sink.flush(50)
    expect(performance.now() - t0).toBeLessThan(1000)
  })

  it('does not wait at all once the collector has failed: what is queued is dropped and counted', async () => {
    let calls = 0
    // The first export fails; any later one would never answer, so a flush that waited would hang this test.
    const sink = createSpanSink(true, async () => ({ ship: async (spans) => (++calls === 1 ? { lost: spans.length, error: 'connect ECONNREFUSED' } : new Promise(() => {})) }), () => {})
    sink.record(aSpan())
    await sink.flush()
    expect(sink.dropped()).toBe(1)
    sink.record(aSpan('at exit'))
    await sink.flush(60_000)
    expect(sink.dropped()).toBe(2)
    expect(calls).toBe(1)
  })

  it('drops spans beyond its bounded queue, counts them, and warns once', async () => {
    const warnings: unknown[] = []
    const sink = createSpanSink(true, async () => ({ ship: () => new Promise(() => {}) }), (m, f) => warnings.push([m, f]), 3)
    for (let i = 0; i < 10; i++) sink.record(aSpan(String(i)))
    expect(sink.dropped()).toBe(7)
    // The first three are stuck at a collector that never answers; the queue stays bounded behind them.
    await sink.flush(20)
    for (let i = 0; i < 10; i++) sink.record(aSpan(String(i)))
    await sink.flush(20)
    expect(sink.dropped()).toBe(14)
    expect(warnings).toHaveLength(1)
  })

  it('counts the spans of a failed export as dropped', async () => {
    const sink = createSpanSink(true, async () => ({ ship: async (spans) => ({ lost: spans.length, error: 'collector said 503' }) }), () => {})
    sink.record(aSpan())
    sink.record(aSpan())
    await sink.flush()
    expect(sink.dropped()).toBe(2)
  })

  it('counts the spans as dropped when the exporter cannot even be loaded', async () => {
    const sink = createSpanSink(true, async () => { throw new Error('no such module') }, () => {})
    sink.record(aSpan())
    await sink.flush()
    expect(sink.dropped()).toBe(1)
  })
})

describe('the tracing configuration', () => {
  it.each([
    [{}, false],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }, true],
    [{ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' }, true],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_SDK_DISABLED: 'true' }, false],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_TRACES_EXPORTER: 'none' }, false],
  ])('%j turns tracing on: %s', (env, enabled) => {
    expect(telemetryConfigFrom(env).enabled).toBe(enabled)
  })

  it('captures prompts and responses only when the GenAI content variable says so', () => {
    expect(telemetryConfigFrom({}).captureContent).toBe(false)
    expect(telemetryConfigFrom({ OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'true' }).captureContent).toBe(true)
  })

  it('hands step Jobs the export settings but never the headers (they may hold a token) or the service name', () => {
    const env = {
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer s3cret',
      OTEL_EXPORTER_OTLP_TRACES_HEADERS: 'x=y', OTEL_SERVICE_NAME: 'workflow-changed', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf', PATH: '/bin',
    }
    expect(otelEnvForSteps(env)).toEqual([
      { name: 'OTEL_EXPORTER_OTLP_ENDPOINT', value: 'http://collector:4318' },
      { name: 'OTEL_EXPORTER_OTLP_PROTOCOL', value: 'http/protobuf' },
    ])
  })
})
