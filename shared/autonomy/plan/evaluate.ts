// Pure: one Shu-Ha-Ri evaluation of one Agent against its namespace's policy. The level lives in
// spec.shuHaRi.level (+ promotedAt, the clock); status.shuHaRi mirrors it with the counters the
// criteria are measured from. No I/O, no clock: `now` comes in as an ISO string.
import { UNCHANGED, type Transition } from '../../core/plan.js'
import type { AgentPatch } from '../../kube/port.js'
import type { Agent, AgentStatus, ShuHaRiLevel, ShuHaRiStatus } from '../../schemas/agent.js'
import { ANNOTATION_APPROVE_PROMOTION } from '../../schemas/labels.js'
import { setCondition } from '../../core/conditions.js'
import { canonicalJson } from '../../core/go-format.js'
import { readApproval } from './approval.js'
import { agentAt, AUTONOMY_OF_LEVEL, entered, isOptedIn, LEVEL_ORDER, looserThan, settledState } from './levels.js'
import type { EffectivePolicy } from './policy.js'
import { criteriaFor, describeProgress, progressOf, progressStatus, rollbackTrigger, unmetCriteria } from './progress.js'
import { CONDITION_PROGRESSION, levelAdopted, levelChange, standing, type ConditionInput } from './progression-report.js'

/** What one evaluation writes on the Agent. */
export interface AutonomyPlan {
  /** JSON merge patch of spec (level, clock, autonomyLevel) and consumed annotations; absent when none. */
  patch?: AgentPatch
  /** Whether the patch only removes annotations already recorded in status, so status may go first. */
  patchAfterStatus: boolean
  /** The whole next status (the fresh object's, with status.shuHaRi and ShuHaRiProgression replaced); absent when unchanged. */
  status?: AgentStatus
  /** Level changes, approvals and corrections: Kubernetes Events and Kinetic CloudEvents. */
  transitions: Transition[]
  /** The level after this evaluation, and the one before. */
  level: ShuHaRiLevel
  from: ShuHaRiLevel
}

/**
 * Pure: whether a rollback trigger fires now: the immediate path after a failed step uses this
 * to decide whether a full evaluation is worth its writes. False when not opted in or already at
 * (or below) the rollback level.
 */
export function rollbackDue(agent: Agent, policy: EffectivePolicy): boolean {
  if (!isOptedIn(agent) || !policy.rollback.enabled) return false
  // Days in level play no part in a rollback, so the level's own clock stands in for now.
  const { shuHaRi, adopted, first } = settledState(agent, agent.status?.shuHaRi?.levelSince ?? '')
  return (!adopted || first) && rollbackTrigger(progressOf(agent, shuHaRi, shuHaRi.levelSince ?? ''), policy) !== undefined
}

/**
 * Pure: the whole evaluation. Adopts a level set in spec (by hand, or by a promotion whose status
 * write was lost), records and consumes approvals, then applies at most one level change:
 * demotion (a rollback trigger) wins over promotion (all criteria at once, plus N distinct
 * approvals when the policy asks for them). Tightens an autonomyLevel looser than the level
 * allows. UNCHANGED when the agent did not opt in or nothing would change.
 */
export function planAutonomy(agent: Agent, policy: EffectivePolicy, now: string): AutonomyPlan | typeof UNCHANGED {
  if (!isOptedIn(agent) || agent.metadata.deletionTimestamp) return UNCHANGED
  const transitions: Transition[] = []
  const spec: NonNullable<AgentPatch['spec']> = {}
  const annotations: Record<string, null> = {}
  const previous = agent.status?.shuHaRi
  const settled = settledState(agent, now)
  let shuHaRi: ShuHaRiStatus = settled.shuHaRi
  const from = previous?.currentLevel ?? shuHaRi.currentLevel!
  // A first evaluation measures the record the agent already has, so it may change the level at
  // once; any other adoption is a level change of its own and waits for the next evaluation.
  let changedLevel = settled.adopted && !settled.first
  let resumedCondition: ConditionInput | undefined
  if (settled.adopted) {
    Object.assign(spec, settled.spec)
    const was = previous?.currentLevel
    const adoptedLevel = shuHaRi.currentLevel!
    if (was && was !== adoptedLevel && settled.resumed) {
      // Our own level change whose status write was lost: announce it now, measured as it was.
      const before = progressOf(agent, previous, now)
      const up = LEVEL_ORDER.indexOf(adoptedLevel) > LEVEL_ORDER.indexOf(was)
      const criteria = was === 'ri' ? undefined : criteriaFor(policy, was)
      const change = levelChange(up ? 'promoted' : 'demoted', was, adoptedLevel, policy, before, criteria, up ? undefined : rollbackTrigger(before, policy))
      transitions.push(change)
      resumedCondition = { status: up ? 'True' : 'False', reason: change.reason, message: `${change.reason} from ${was} to ${adoptedLevel}: ${describeProgress(before, criteria)}` }
    } else if (was && was !== adoptedLevel) {
      transitions.push(levelAdopted(was, adoptedLevel, policy.name))
    }
  }

  // An approval is recorded first (status), its annotation removed after (so a lost write never loses it).
  let approvalConsumed = false
  const approval = agent.metadata.annotations?.[ANNOTATION_APPROVE_PROMOTION]
  if (approval !== undefined) {
    const verdict = readApproval(approval, shuHaRi, now)
    annotations[ANNOTATION_APPROVE_PROMOTION] = null
    approvalConsumed = true
    if (verdict.kind === 'ignored') transitions.push(verdict.transition)
    else if (verdict.kind === 'recorded') {
      shuHaRi = { ...shuHaRi, approvals: [...(shuHaRi.approvals ?? []), verdict.approval] }
      transitions.push(verdict.transition)
    }
  }

  const level = shuHaRi.currentLevel!
  const progress = progressOf(agent, shuHaRi, now)
  const trigger = changedLevel ? undefined : rollbackTrigger(progress, policy)
  const criteria = progress.next ? criteriaFor(policy, level) : undefined
  const unmet = criteria ? unmetCriteria(progress, criteria) : []
  let condition: ConditionInput
  let target: ShuHaRiLevel | undefined
  if (trigger) {
    target = policy.rollback.rollbackLevel
    condition = { status: 'False', reason: 'Demoted', message: `Demoted from ${level} to ${target}: ${trigger}` }
    transitions.push(levelChange('demoted', level, target, policy, progress, criteria, trigger))
  } else if (!changedLevel && criteria && unmet.length === 0 && progress.approvals >= criteria.requiredApprovals) {
    target = progress.next!
    condition = { status: 'True', reason: 'Promoted', message: `Promoted from ${level} to ${target}: ${describeProgress(progress, criteria)}` }
    transitions.push(levelChange('promoted', level, target, policy, progress, criteria))
  } else {
    condition = standing(progress, criteria, unmet, agent.status?.conditions)
  }

  if (target) {
    changedLevel = true
    spec.shuHaRi = { level: target, promotedAt: now }
    if (agent.spec.autonomyLevel !== 'manual') spec.autonomyLevel = AUTONOMY_OF_LEVEL[target]
    else delete spec.autonomyLevel
    shuHaRi = entered(agent, target, now, policy.name)
  } else if (!settled.adopted && looserThan(agent.spec.autonomyLevel, level)) {
    // Someone loosened autonomyLevel by hand; only a transition may do that.
    spec.autonomyLevel = AUTONOMY_OF_LEVEL[level]
    transitions.push({
      kind: 'autonomy.tightened', type: 'Warning', reason: 'AutonomyTightened', record: true, fieldPath: 'spec.autonomyLevel',
      message: `spec.autonomyLevel ${agent.spec.autonomyLevel ?? '(unset, i.e. supervised)'} is looser than level ${level} allows; set to ${AUTONOMY_OF_LEVEL[level]}`,
      data: { level, from: agent.spec.autonomyLevel ?? null, to: AUTONOMY_OF_LEVEL[level] },
    })
  }

  const newLevel = shuHaRi.currentLevel!
  const newProgress = target ? progressOf(agentAt(agent, shuHaRi), shuHaRi, now) : progress
  const newCriteria = newProgress.next ? criteriaFor(policy, newLevel) : undefined
  shuHaRi = {
    ...shuHaRi,
    policy: policy.name,
    readyForPromotion: !target && newCriteria !== undefined && unmetCriteria(newProgress, newCriteria).length === 0,
    ...progressStatus(newProgress, newCriteria),
  }
  if (!newProgress.next) delete shuHaRi.promotionProgress
  if (!target && changedLevel) {
    // An adopted level has no actions yet: say so rather than repeat the old condition.
    condition = resumedCondition ?? standing(newProgress, newCriteria, newCriteria ? unmetCriteria(newProgress, newCriteria) : [], undefined)
  }
  // No observedGeneration on the condition: the spec patch of a transition bumps the generation
  // after this status was planned, and the next evaluation would rewrite it for nothing.
  const status: AgentStatus = {
    ...(agent.status ?? {}),
    shuHaRi,
    conditions: setCondition(agent.status?.conditions, { type: CONDITION_PROGRESSION, ...condition }, now),
  }
  const statusChanged = canonicalJson(status) !== canonicalJson(agent.status ?? {})
  const hasSpec = Object.keys(spec).length > 0
  if (!statusChanged && !hasSpec && !approvalConsumed) return UNCHANGED
  const patch: AgentPatch | undefined = hasSpec || approvalConsumed
    ? { ...(hasSpec ? { spec } : {}), ...(approvalConsumed ? { metadata: { annotations } } : {}) }
    : undefined
  return {
    ...(patch ? { patch } : {}),
    patchAfterStatus: patch !== undefined && !hasSpec,
    ...(statusChanged ? { status } : {}),
    transitions,
    level: newLevel,
    from,
  }
}
