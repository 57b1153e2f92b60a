// A real OpenTelemetry Collector (npm run otelcol:build) for a test: OTLP/HTTP in, the spans it
// received read back from its own JSON-lines file output. Used on the embedded plane
// (test/telemetry/collector.local.test.ts) and on real Knative (test/knative/real/traces.ts).
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { OTELCOL_BINARY, otelcolCacheDir } from '../../cluster/versions.mjs'
import { freePort } from '../../local/free-port.js'
import { eventually } from './eventually.js'

/** The collector binary `npm run otelcol:build` makes. */
export const OTELCOL_BIN = join(otelcolCacheDir(), 'bin', OTELCOL_BINARY)

type AttrValue = Record<string, unknown>
export type Attr = { key: string; value: AttrValue }

/** One span as the collector wrote it, with the service.name of its resource. */
export interface CollectedSpan {
  traceId: string; spanId: string; parentSpanId?: string; name: string; kind?: number
  startTimeUnixNano: string; endTimeUnixNano: string
  attributes?: Attr[]; events?: Array<{ name: string; timeUnixNano: string }>; links?: Array<{ traceId: string; spanId: string }>
  status?: { code?: number; message?: string }
  service: string
}

export interface RunningCollector {
  /** The OTEL_EXPORTER_OTLP_ENDPOINT that reaches it. */
  endpoint: string
  /** Every span received so far. */
  spans(): CollectedSpan[]
  stop(): void
}

const valueOf = (v: AttrValue): unknown => {
  if ('stringValue' in v) return v.stringValue
  if ('intValue' in v) return Number(v.intValue)
  if ('doubleValue' in v) return v.doubleValue
  if ('boolValue' in v) return v.boolValue
  if ('arrayValue' in v) return ((v.arrayValue as { values?: AttrValue[] }).values ?? []).map(valueOf)
  return undefined
}

/** A span attribute's value (strings, numbers, booleans and arrays of them), or undefined. */
export function attr(s: CollectedSpan, key: string): unknown {
  const found = s.attributes?.find((a) => a.key === key)
  return found ? valueOf(found.value) : undefined
}

/** Epoch nanoseconds of a span event, by name. */
export function eventAt(s: CollectedSpan, name: string): bigint | undefined {
  const found = s.events?.find((e) => e.name === name)
  return found ? BigInt(found.timeUnixNano) : undefined
}

/** Spans of `trace` whose parent is not in it (a trace read whole has none). */
export function orphansIn(trace: readonly CollectedSpan[]): string[] {
  const ids = new Set(trace.map((s) => s.spanId))
  return trace.filter((s) => s.parentSpanId && !ids.has(s.parentSpanId)).map((s) => `${s.name} (${s.service})`)
}

/** Starts the collector with an OTLP/HTTP receiver on `host` (a free port) and waits until it is ready. */
export async function startCollector(host = '127.0.0.1'): Promise<RunningCollector> {
  const scratch = mkdtempSync(join(tmpdir(), 'kinetic-otel-'))
  const output = join(scratch, 'spans.jsonl')
  const port = await freePort()
  writeFileSync(join(scratch, 'otelcol.yaml'), [
    'receivers:', '  otlp:', '    protocols:', '      http:', `        endpoint: ${host}:${port}`,
    'exporters:', '  jsonfile:', `    path: ${output}`,
    'service:', '  telemetry:', '    metrics:', '      level: none',
    '  pipelines:', '    traces:', '      receivers: [otlp]', '      exporters: [jsonfile]', '',
  ].join('\n'))
  const child: ChildProcess = spawn(OTELCOL_BIN, ['--config', join(scratch, 'otelcol.yaml')], { stdio: ['ignore', 'ignore', 'pipe'] })
  let log = ''
  child.stderr?.setEncoding('utf8').on('data', (t: string) => { log += t })
  await eventually('the collector ready', () => log.includes('Everything is ready'), 30_000)
  return {
    endpoint: `http://${host}:${port}`,
    spans() {
      if (!existsSync(output)) return []
      const all: CollectedSpan[] = []
      for (const line of readFileSync(output, 'utf8').split('\n').filter(Boolean)) {
        const doc = JSON.parse(line) as { resourceSpans: Array<{ resource: { attributes: Attr[] }; scopeSpans: Array<{ spans: Omit<CollectedSpan, 'service'>[] }> }> }
        for (const rs of doc.resourceSpans) {
          const service = String(valueOf(rs.resource.attributes.find((a) => a.key === 'service.name')?.value ?? {}))
          for (const ss of rs.scopeSpans) for (const s of ss.spans) all.push({ ...s, service })
        }
      }
      return all
    },
    stop: () => { child.kill('SIGTERM') },
  }
}
