// Pure: the Shu-Ha-Ri levels and where an Agent stands in one. The level lives in spec.shuHaRi.level
// (+ promotedAt, its clock); status.shuHaRi records the moment and the counters the level is
// measured from. Spec is the truth: a level set there by hand, or by a promotion whose status write
// was lost, is adopted here.
import type { AgentPatch } from '../../kube/port.js'
import type { Agent, AutonomyLevel, ShuHaRiLevel, ShuHaRiStatus } from '../../schemas/agent.js'

/** The levels from the first to the highest. */
export const LEVEL_ORDER: readonly ShuHaRiLevel[] = ['shu', 'ha', 'ri']
/** What each level allows (the concept page's mapping). */
export const AUTONOMY_OF_LEVEL: Record<ShuHaRiLevel, AutonomyLevel> = { shu: 'restricted', ha: 'supervised', ri: 'full' }
// How much each autonomyLevel lets an agent do; unset is what the executor assumes (supervised).
const LOOSENESS: Record<AutonomyLevel, number> = { manual: 0, restricted: 1, supervised: 2, full: 3 }

/** Pure: whether the agent opted in to Shu-Ha-Ri (any `spec.shuHaRi`, even `{}`). */
export function isOptedIn(agent: Agent): boolean {
  return agent.spec.shuHaRi !== undefined && agent.spec.shuHaRi !== null
}

/** Pure: the level an agent declares: spec.shuHaRi.level, else the one its autonomyLevel implies (shu when unset). */
export function declaredLevel(agent: Agent): ShuHaRiLevel {
  const level = agent.spec.shuHaRi?.level
  if (level) return level
  switch (agent.spec.autonomyLevel) {
    case 'supervised': return 'ha'
    case 'full': return 'ri'
    default: return 'shu'
  }
}

/** Whether an autonomyLevel lets the agent do more than its level allows. */
export function looserThan(autonomy: AutonomyLevel | undefined, level: ShuHaRiLevel): boolean {
  return LOOSENESS[autonomy ?? 'supervised'] > LOOSENESS[AUTONOMY_OF_LEVEL[level]]
}

/**
 * The agent's level state once spec is taken as the truth, and the spec patch that pins it.
 * `first` when no evaluation has recorded a level yet.
 */
export function settledState(agent: Agent, now: string): { shuHaRi: ShuHaRiStatus; adopted: boolean; resumed: boolean; first: boolean; spec: NonNullable<AgentPatch['spec']> } {
  const previous = agent.status?.shuHaRi
  const level = declaredLevel(agent)
  const promotedAt = agent.spec.shuHaRi?.promotedAt
  // A spec clock newer than status's: the level changed and came back (a promotion whose status
  // write was lost, then a hand edit back) without status seeing it, so the level was re-entered.
  const reentered = promotedAt !== undefined && previous?.levelSince !== undefined && Date.parse(promotedAt) > Date.parse(previous.levelSince)
  if (previous?.currentLevel === level && previous.levelSince && previous.levelStart && !reentered) {
    return { shuHaRi: previous, adopted: false, resumed: false, first: false, spec: {} }
  }
  const spec: NonNullable<AgentPatch['spec']> = {}
  const first = !previous?.currentLevel
  const created = agent.metadata.creationTimestamp
  let levelSince: string
  let resumed = false
  // Counters are measured from the same moment as days. At the agent's creation they were all
  // zero; at a later entry nobody recorded them, so they start at what the agent has now.
  let fromCreation = false
  if (first) {
    fromCreation = promotedAt === undefined || (created !== undefined && Date.parse(promotedAt) <= Date.parse(created))
    levelSince = (fromCreation ? created : promotedAt) ?? now
  } else if (promotedAt && (!previous.levelSince || Date.parse(promotedAt) > Date.parse(previous.levelSince))) {
    levelSince = promotedAt // our own level change, whose status write was lost
    resumed = true
  } else {
    levelSince = now // a hand edit of the level: its clock starts now
  }
  // Pin what was derived, so spec stays the one source of truth (merge patch: other fields stay).
  const pin: NonNullable<NonNullable<AgentPatch['spec']>['shuHaRi']> = {}
  if (!agent.spec.shuHaRi?.level) pin.level = level
  if (previous?.currentLevel && levelSince !== promotedAt) pin.promotedAt = levelSince
  if (Object.keys(pin).length > 0) spec.shuHaRi = pin
  const autonomy = agent.spec.autonomyLevel === 'manual' ? 'manual' : AUTONOMY_OF_LEVEL[level]
  if (autonomy !== agent.spec.autonomyLevel) spec.autonomyLevel = autonomy
  const shuHaRi = entered(agent, level, levelSince, '', fromCreation ? NO_RECORD : undefined)
  return { shuHaRi: { ...shuHaRi, ...(previous?.policy ? { policy: previous.policy } : {}) }, adopted: true, resumed, first, spec }
}

type LevelStart = NonNullable<ShuHaRiStatus['levelStart']>
/** The counters of an agent at its creation. */
const NO_RECORD: LevelStart = { invocations: 0, successes: 0, failures: 0 }

/**
 * Status of a level just entered: its clock, the counters it is measured from (the agent's
 * current ones unless `start` says otherwise), no approvals.
 */
export function entered(agent: Agent, level: ShuHaRiLevel, since: string, policy: string, start?: LevelStart): ShuHaRiStatus {
  const metrics = agent.status?.metrics ?? {}
  return {
    currentLevel: level,
    levelSince: since,
    readyForPromotion: false,
    ...(policy ? { policy } : {}),
    approvals: [],
    levelStart: start ?? { invocations: metrics.totalInvocations ?? 0, successes: metrics.successCount ?? 0, failures: metrics.failureCount ?? 0 },
  }
}

/** The agent as it would read with this level status. */
export function agentAt(agent: Agent, shuHaRi: ShuHaRiStatus): Agent {
  return { ...agent, status: { ...(agent.status ?? {}), shuHaRi } }
}
