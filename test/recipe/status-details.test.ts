import { describe, expect, it } from 'vitest'
import { withDetails } from '../../shared/recipe/plan/status-details.js'
import { keyOf, liveWith, revisionOf } from './deploy-plan-fixtures.js'

/** The MCPServer child of a workload in a revision. */
function mcpServerOf(objects: ReturnType<typeof revisionOf>, workload: string) {
  const child = objects.workloads.find((w) => w.name === workload)!.children.find((c) => c.kind === 'MCPServer')
  if (!child) throw new Error(`${workload} has no MCPServer`)
  return child
}

describe('status.mcpServers[] of a recipe', () => {
  it('gives a stdio workload the endpoint of the spec, http://<base>.<ns>.svc:<port>/mcp, where its bridge serves', () => {
    const objects = revisionOf(['clock', 'tools'], 1)
    const clock = mcpServerOf(objects, 'clock')
    const tools = mcpServerOf(objects, 'tools')
    const live = liveWith(objects.children)
    // What the MCPServer controller reports for the stdio server: its Service's in-cluster name.
    live.set(keyOf(clock), { ...live.get(keyOf(clock))!, status: { phase: 'Ready', url: `http://${clock.name}.${clock.namespace}.svc.cluster.local:8000` } })
    live.set(keyOf(tools), { ...live.get(keyOf(tools))!, status: { phase: 'Ready' } })

    const status = withDetails({ workloads: [{ name: 'clock' }, { name: 'tools' }] }, objects, live)

    const clockUrl = `http://${clock.name}.${clock.namespace}.svc:8000/mcp`
    expect(status.mcpServers).toEqual([
      { workload: 'clock', name: clock.name, namespace: clock.namespace, managed: true, transport: 'stdio', url: clockUrl, phase: 'Ready' },
      { workload: 'tools', name: tools.name, namespace: tools.namespace, managed: false, transport: 'http', url: `http://${tools.name}.${tools.namespace}.svc:8080/mcp`, phase: 'Ready' },
    ])
    expect(status.workloads?.find((w) => w.name === 'clock')?.mcpServer).toEqual({ name: clock.name, managed: true, transport: 'stdio', url: clockUrl, phase: 'Ready' })
  })

  it('gives a stdio workload its endpoint before the MCPServer reports anything', () => {
    const objects = revisionOf(['clock'], 1)
    const clock = mcpServerOf(objects, 'clock')
    const status = withDetails({ workloads: [{ name: 'clock' }] }, objects, new Map())
    expect(status.mcpServers?.[0]?.url).toBe(`http://${clock.name}.${clock.namespace}.svc:8000/mcp`)
  })
})
