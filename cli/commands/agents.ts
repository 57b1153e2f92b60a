import type { Agent } from '../../shared/schemas/agent.js'
import { has, type ParsedArgs } from '../args.js'
import type { Command, Session } from '../command.js'
import { asList, formatObjects, relative, table } from '../output.js'

const AGENTS = 'agents.purko.io'

/** Pure: one table row of an Agent: autonomy, Shu-Ha-Ri level and promotion, phase and metrics. */
export function agentRow(agent: Agent, now: Date, withNamespace: boolean): string[] {
  const status = agent.status
  const metrics = status?.metrics
  const level = status?.shuHaRi?.currentLevel ?? agent.spec.shuHaRi?.level ?? 'shu'
  const next = status?.shuHaRi?.promotionProgress?.nextLevel
  const promotion = status?.shuHaRi?.readyForPromotion && next ? `ready for ${next}` : next ? `→ ${next}` : '-'
  const rate = metrics?.successRate
  const cost = metrics?.totalCostUSD
  return [
    ...(withNamespace ? [agent.metadata.namespace ?? ''] : []),
    agent.metadata.name ?? '',
    agent.spec.autonomyLevel ?? '-',
    level,
    promotion,
    status?.phase ?? '-',
    rate === undefined ? '-' : `${(rate * 100).toFixed(1)}%`,
    String(metrics?.totalInvocations ?? 0),
    cost === undefined ? '$0.00' : `$${cost < 1 ? cost.toFixed(4) : cost.toFixed(2)}`,
    relative(metrics?.lastInvocationTime, now) || '-',
  ]
}

export const agentsCommand: Command = {
  name: 'agents',
  args: '',
  arity: [0, 0],
  summary: 'List Agents with autonomy, Shu-Ha-Ri level and metrics',
  description: 'Lists the Agents of the namespace (every namespace with -A): autonomy level, Shu-Ha-Ri level and promotion '
    + 'progress, phase, and the metrics the workflow functions record (success rate, step runs, cost since the last reset, '
    + 'last run).',
  flags: [{ name: 'all-namespaces', short: 'A', description: 'list the Agents of every namespace' }],
  examples: ['kinetic agents', 'kinetic agents -n team-a', 'kinetic agents -A -o yaml'],
  async run(session: Session, args: ParsedArgs): Promise<number> {
    const all = has(args, 'all-namespaces')
    const namespace = session.namespace
    const agents = all
      ? await session.call({ verb: 'list', resource: AGENTS, allNamespaces: true }, (kube) => kube.listAllAgents())
      : await session.call({ verb: 'list', resource: AGENTS, namespace }, (kube) => kube.listAgents(namespace))
    if (session.format !== 'table') {
      session.out(formatObjects(session.format, asList(agents)))
      return 0
    }
    if (agents.length === 0) {
      session.warn(all ? 'no Agents found' : `no Agents found in namespace ${namespace}`)
      return 0
    }
    const now = session.io.now()
    const headers = [...(all ? ['NAMESPACE'] : []), 'NAME', 'AUTONOMY', 'SHU-HA-RI', 'PROMOTION', 'PHASE', 'SUCCESS', 'RUNS', 'COST', 'LAST RUN']
    session.out(table(headers, agents.map((a) => agentRow(a, now, all))))
    return 0
  },
}
