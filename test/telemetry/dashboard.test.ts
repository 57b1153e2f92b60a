import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { dashboardMetrics } from '../../shared/telemetry/metrics.js'

const ROOT = join(import.meta.dirname, '../..')

describe('the Grafana dashboard in docs/guide/', () => {
  it('queries only metrics the functions expose, and docs/guide/traces-and-metrics.md names every one of those', () => {
    const dashboard = JSON.parse(readFileSync(join(ROOT, 'docs', 'guide', 'grafana-dashboard.json'), 'utf8')) as { panels: Array<{ targets: Array<{ expr: string }> }> }
    const queried = new Set(dashboard.panels.flatMap((p) => p.targets.flatMap((t) => t.expr.match(/kinetic_[a-z_]+/g) ?? []))
      .map((name) => name.replace(/_(bucket|sum|count)$/, '')))
    const exposed = new Set(['kinetic_events_total', ...Object.values(dashboardMetrics).map((m) => m.name)])
    expect([...queried].filter((name) => !exposed.has(name))).toEqual([])
    const doc = readFileSync(join(ROOT, 'docs', 'guide', 'traces-and-metrics.md'), 'utf8')
    expect([...exposed].filter((name) => !doc.includes(`\`${name}\``))).toEqual([])
  })
})
