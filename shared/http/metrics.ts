/**
 * Request counters in the Prometheus text format, kept by hand: prom-client would add to every
 * cold start, and a function only needs a few counters and a latency sum.
 */
export class FunctionMetrics {
  private readonly handled = new Map<string, number>()
  private seconds = 0
  private count = 0

  constructor(private readonly fn: string) {}

  /** Records one handled CloudEvent by its type and the status code answered. */
  observe(ceType: string, status: number, durationSeconds: number): void {
    const key = `${ceType}\u0000${status}`
    this.handled.set(key, (this.handled.get(key) ?? 0) + 1)
    this.seconds += durationSeconds
    this.count += 1
  }

  /** The exposition text served on GET /metrics. */
  render(): string {
    const fn = escapeLabel(this.fn)
    const lines = [
      '# HELP kinetic_events_total CloudEvents handled, by event type and HTTP status answered.',
      '# TYPE kinetic_events_total counter',
    ]
    for (const [key, value] of [...this.handled.entries()].sort()) {
      const [type, status] = key.split('\u0000') as [string, string]
      lines.push(`kinetic_events_total{function="${fn}",type="${escapeLabel(type)}",status="${status}"} ${value}`)
    }
    lines.push(
      '# HELP kinetic_event_duration_seconds Time spent handling CloudEvents.',
      '# TYPE kinetic_event_duration_seconds summary',
      `kinetic_event_duration_seconds_sum{function="${fn}"} ${this.seconds}`,
      `kinetic_event_duration_seconds_count{function="${fn}"} ${this.count}`,
    )
    return `${lines.join('\n')}\n`
  }
}

function escapeLabel(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')
}
