/**
 * The descriptive parts of a recipe's status (spec §9) that come from the live children,
 * not from the lifecycle: each workload's Service, URL, Job, CronJob times and MCP endpoint,
 * the `tests[]` rows, the child Workflow's roll-up and `mcpServers[]`. Pure; the lifecycle
 * planner's status goes in, the same status with these rows filled in comes out.
 */
import type { WorkflowRecipeStatus } from '../../schemas/workflowrecipe.js'
import { liveObject, objectKey, type LiveObject, type LiveObjects } from './deploy-plan.js'
import type { TestsFacts } from './lifecycle-facts.js'
import { mcpServerEndpoint } from './mcp.js'
import type { RevisionObjects } from './observe.js'

type Status = WorkflowRecipeStatus
type Row = NonNullable<Status['workloads']>[number]

const cut = (text: string, max: number): string => (text.length > max ? text.slice(0, max) : text)
const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : v instanceof Date ? v.toISOString() : undefined)

function specOf(o: { manifest: { [k: string]: unknown } } | undefined): Record<string, unknown> {
  return (o?.manifest.spec as Record<string, unknown> | undefined) ?? {}
}

function statusOf(o: LiveObject | undefined): Record<string, unknown> {
  return (o?.status as Record<string, unknown> | undefined) ?? {}
}

/** Fills in the rows of spec §9 the children describe; rows the lifecycle wrote keep their phase and message. */
export function withDetails(status: Status, objects: RevisionObjects | undefined, live: LiveObjects, tests?: TestsFacts): Status {
  if (!objects) return status
  const out: Status = { ...status }
  const byName = new Map(objects.workloads.map((w) => [w.name, w]))
  const servers: NonNullable<Status['mcpServers']> = []
  out.workloads = (status.workloads ?? []).map((row): Row => {
    const w = byName.get(row.name)
    if (!w) return row
    const next: Row = { ...row }
    const service = w.children.find((c) => c.component === 'service')
    if (service) {
      next.serviceName = service.name
      const port = ((specOf(service).ports as { port?: number }[] | undefined) ?? [])[0]?.port
      if (port !== undefined) next.url = cut(`http://${service.name}.${service.namespace}.svc:${port}`, 512)
    }
    if (w.kind === 'Job') next.jobName = w.objectName
    if (w.kind === 'CronJob') {
      const s = statusOf(liveObject(live, objectKey('CronJob', w.namespace, w.objectName)))
      const last = str(s.lastScheduleTime)
      const ok = str(s.lastSuccessfulTime)
      if (last) next.lastScheduleTime = last
      if (ok) next.lastSuccessfulTime = ok
    }
    const mcp = w.children.find((c) => c.kind === 'MCPServer')
    if (mcp) {
      const spec = specOf(mcp)
      const phase = str(statusOf(liveObject(live, objectKey('MCPServer', mcp.namespace, mcp.name))).phase)
      const transport = w.transport ?? (spec.transport as 'http' | 'stdio' | undefined)
      // The endpoint clients use (spec §5.9), not the registry URL the MCPServer controller reports.
      const url = mcpServerEndpoint(mcp.name, mcp.namespace, spec) ?? str(statusOf(liveObject(live, objectKey('MCPServer', mcp.namespace, mcp.name))).url)
      next.mcpServer = {
        name: mcp.name, managed: spec.managed === true,
        ...(transport ? { transport } : {}), ...(url ? { url: cut(url, 512) } : {}), ...(phase ? { phase: cut(phase, 32) } : {}),
      }
      servers.push({ workload: w.name, name: mcp.name, namespace: mcp.namespace, managed: spec.managed === true, ...(transport ? { transport } : {}), ...(url ? { url: cut(url, 512) } : {}), ...(phase ? { phase: cut(phase, 32) } : {}) })
    }
    return next
  })
  if (servers.length > 0) out.mcpServers = servers.slice(0, 32)
  else delete out.mcpServers

  if (tests && tests.results.length > 0) {
    out.tests = tests.results.slice(0, 8).map((t) => ({
      name: t.name, jobName: t.jobName, phase: t.phase,
      ...(t.startTime ? { startTime: t.startTime } : {}), ...(t.completionTime ? { completionTime: t.completionTime } : {}),
      ...(t.message ? { message: cut(t.message, 2048) } : {}),
    }))
  }

  if (objects.workflow) {
    const wf = liveObject(live, objectKey('Workflow', objects.workflow.namespace, objects.workflow.name))
    const s = statusOf(wf)
    const steps = ((s.stepStatuses as { name?: string; phase?: string }[] | undefined) ?? []).filter((x) => x.name).slice(0, 50)
    out.workflow = {
      name: objects.workflow.name,
      ...(str(s.phase) ? { phase: cut(str(s.phase)!, 32) } : { phase: wf ? 'Pending' : 'NotStarted' }),
      ...(str(s.message) ? { message: cut(str(s.message)!, 1024) } : {}),
      ...(typeof s.totalSteps === 'number' ? { totalSteps: s.totalSteps } : {}),
      ...(typeof s.completedSteps === 'number' ? { completedSteps: s.completedSteps } : {}),
      ...(typeof s.failedSteps === 'number' ? { failedSteps: s.failedSteps } : {}),
      ...(steps.length > 0 ? { steps: steps.map((x) => ({ name: cut(x.name!, 63), ...(x.phase ? { phase: cut(x.phase, 32) } : {}) })) } : {}),
    }
  }
  return out
}
