import { spanSink } from '../telemetry/exporter.js'
import { renderDashboardMetrics } from '../telemetry/metrics.js'

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
      ...agentUsage.render(),
      ...renderDashboardMetrics(spanSink().dropped()),
    )
    return `${lines.join('\n')}\n`
  }
}

/**
 * purko's agent counters (purko_agent_invocations_total, _tokens_total, _cost_usd_total), kept
 * per process. Only attempts newly written to an Agent's status.metrics are added, so the sum
 * over all replicas counts each attempt once; a replica scaled to zero before a scrape takes its
 * share with it, which is why status.metrics, not this, is the record.
 */
export class AgentUsageCounters {
  private readonly invocations = new Map<string, number>()
  private readonly tokens = new Map<string, number>()
  private readonly cost = new Map<string, number>()

  /** Adds one counted attempt of the Agent `namespace/agent`. */
  add(namespace: string, agent: string, ok: boolean, tokens: number, costUSD: number): void {
    const who = `agent="${escapeLabel(agent)}",namespace="${escapeLabel(namespace)}"`
    const key = `${who},status="${ok ? 'success' : 'failure'}"`
    this.invocations.set(key, (this.invocations.get(key) ?? 0) + 1)
    this.tokens.set(who, (this.tokens.get(who) ?? 0) + tokens)
    this.cost.set(who, (this.cost.get(who) ?? 0) + costUSD)
  }

  /** Exposition lines; none before the first attempt. */
  render(): string[] {
    if (this.invocations.size === 0) return []
    const family = (name: string, help: string, values: Map<string, number>) => [
      `# HELP ${name} ${help}`, `# TYPE ${name} counter`, ...[...values].sort().map(([labels, v]) => `${name}{${labels}} ${v}`),
    ]
    return [
      ...family('purko_agent_invocations_total', 'Step attempts counted on an Agent, by outcome.', this.invocations),
      ...family('purko_agent_tokens_total', 'Tokens (in + out) of the counted attempts.', this.tokens),
      ...family('purko_agent_cost_usd_total', 'Cost in USD of the counted attempts.', this.cost),
    ]
  }
}

/** The process's agent counters, rendered on GET /metrics of whichever function runs in it. */
export const agentUsage = new AgentUsageCounters()

function escapeLabel(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')
}
