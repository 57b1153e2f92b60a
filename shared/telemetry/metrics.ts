/**
 * Kinetic's dashboard metrics in the Prometheus text format, kept by hand like
 * shared/http/metrics.ts (prom-client would add to every cold start). Names and their
 * OpenTelemetry equivalents are listed in docs/guide/traces-and-metrics.md.
 */

type Labels = Record<string, string>

const key = (labels: Labels) => Object.keys(labels).sort().map((k) => `${k}="${escapeLabel(labels[k] ?? '')}"`).join(',')

/** A histogram by label set, with fixed buckets (seconds unless the name says otherwise). */
export class Histogram {
  private readonly series = new Map<string, { counts: number[]; sum: number; count: number }>()
  constructor(readonly name: string, readonly help: string, readonly buckets: readonly number[]) {}

  observe(labels: Labels, value: number): void {
    const k = key(labels)
    let s = this.series.get(k)
    if (!s) this.series.set(k, (s = { counts: this.buckets.map(() => 0), sum: 0, count: 0 }))
    for (const [i, le] of this.buckets.entries()) if (value <= le) s.counts[i]! += 1
    s.sum += value
    s.count += 1
  }

  render(): string[] {
    if (this.series.size === 0) return []
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} histogram`]
    for (const [k, s] of [...this.series].sort(([a], [b]) => a.localeCompare(b))) {
      const sep = k ? ',' : ''
      for (const [i, le] of this.buckets.entries()) lines.push(`${this.name}_bucket{${k}${sep}le="${le}"} ${s.counts[i]}`)
      lines.push(`${this.name}_bucket{${k}${sep}le="+Inf"} ${s.count}`, `${this.name}_sum${braced(k)} ${s.sum}`, `${this.name}_count${braced(k)} ${s.count}`)
    }
    return lines
  }
}

/** A counter (or, with `set`, a gauge) by label set. */
export class Counter {
  private readonly series = new Map<string, number>()
  constructor(readonly name: string, readonly help: string, readonly type: 'counter' | 'gauge' = 'counter') {}

  add(labels: Labels, value = 1): void {
    const k = key(labels)
    this.series.set(k, (this.series.get(k) ?? 0) + value)
  }

  set(labels: Labels, value: number): void {
    this.series.set(key(labels), value)
  }

  render(): string[] {
    if (this.series.size === 0) return []
    return [
      `# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} ${this.type}`,
      ...[...this.series].sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => `${this.name}${braced(k)} ${v}`),
    ]
  }
}

const DURATION_BUCKETS = [0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600]
const LAG_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]

/** The process's dashboard metrics, rendered on GET /metrics of whichever function runs in it. */
export const dashboardMetrics = {
  runDuration: new Histogram('kinetic_run_duration_seconds', 'Run durations, start to final phase, by phase.', DURATION_BUCKETS),
  stepDuration: new Histogram('kinetic_step_duration_seconds', 'Step attempt durations, Job created to finished, by outcome (Retrying for a retried attempt).', DURATION_BUCKETS),
  eventLag: new Histogram('kinetic_event_lag_seconds', 'Time from a CloudEvent\'s time attribute to the start of its handling, by event type.', LAG_BUCKETS),
  redeliveries: new Counter('kinetic_event_redeliveries_requested_total', 'CloudEvents answered with a status the Broker retries (409, 429, 5xx), by event type and status.'),
  deadLetters: new Counter('kinetic_dead_letters_total', 'Dead-lettered CloudEvents received by the dead-letter function, by event type.'),
  tokens: new Counter('kinetic_gen_ai_tokens_total', 'Tokens of finished step attempts, by agent, model and direction (input, output).'),
  cost: new Counter('kinetic_gen_ai_cost_usd_total', 'Cost in USD of finished step attempts, by agent and model.'),
  queued: new Counter('kinetic_runs_queued', 'Runs of a template waiting for a concurrency slot, as last seen.', 'gauge'),
  spansDropped: new Counter('kinetic_telemetry_spans_dropped_total', 'Spans lost to a full export queue or a failed export.'),
}

/** Exposition lines of every dashboard metric with at least one series. */
export function renderDashboardMetrics(droppedSpans: number): string[] {
  const m = dashboardMetrics
  if (droppedSpans > 0) m.spansDropped.set({}, droppedSpans)
  return [m.runDuration, m.stepDuration, m.eventLag, m.redeliveries, m.deadLetters, m.tokens, m.cost, m.queued, m.spansDropped].flatMap((x) => x.render())
}

const braced = (k: string) => (k ? `{${k}}` : '')

function escapeLabel(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')
}
