// Pure: one Shu-Ha-Ri evaluation of one Agent against its namespace's policy. The level lives in
// spec.shuHaRi.level (+ promotedAt, the clock); status.shuHaRi mirrors it with the counters the
// criteria are measured from. No I/O, no clock: `now` comes in as an ISO string.
import { UNCHANGED, type Transition } from '../../core/plan.js'
import type { AgentPatch } from '../../kube/port.js'
import type { Agent, AgentStatus, AutonomyLevel, PromotionApproval, ShuHaRiLevel, ShuHaRiStatus } from '../../schemas/agent.js'
import { ANNOTATION_APPROVE_PROMOTION } from '../../schemas/labels.js'
import { setCondition } from '../../core/conditions.js'
import { canonicalJson } from '../../core/go-format.js'
import type { Criteria, EffectivePolicy } from './policy.js'


/** Condition type on the Agent that tells where it stands in its progression. */
export const CONDITION_PROGRESSION = 'ShuHaRiProgression'

/** In-level actions below which a low success rate says nothing yet (purko's docs: "measured over at least 10 actions"). */
export const ROLLBACK_MINIMUM_ACTIONS = 10

const DAY_MS = 86_400_000
const ORDER: readonly ShuHaRiLevel[] = ['shu', 'ha', 'ri']
/** What each level allows (the concept page's mapping). */
export const AUTONOMY_OF_LEVEL: Record<ShuHaRiLevel, AutonomyLevel> = { shu: 'restricted', ha: 'supervised', ri: 'full' }
// How much each autonomyLevel lets an agent do; unset is what the executor assumes (supervised).
const LOOSENESS: Record<AutonomyLevel, number> = { manual: 0, restricted: 1, supervised: 2, full: 3 }

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

/** Where the agent stands in its level, measured from status.shuHaRi.levelStart and levelSince. */
export interface Progress {
  level: ShuHaRiLevel
  next: ShuHaRiLevel | undefined
  actionsCompleted: number
  /** Success rate within the level; undefined before the first result in it. */
  successRate: number | undefined
  daysInLevel: number
  incidentFreeStreak: number
  /** Failures in a row within the level (a failure streak that began before it does not count). */
  consecutiveFailures: number
  approvals: number
}

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
      const up = ORDER.indexOf(adoptedLevel) > ORDER.indexOf(was)
      const criteria = was === 'ri' ? undefined : criteriaFor(policy, was)
      const change = levelChange(up ? 'promoted' : 'demoted', was, adoptedLevel, policy, before, criteria, up ? undefined : rollbackTrigger(before, policy))
      transitions.push(change)
      resumedCondition = { status: up ? 'True' : 'False', reason: change.reason, message: `${change.reason} from ${was} to ${adoptedLevel}: ${describe(before, criteria)}` }
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
    condition = { status: 'True', reason: 'Promoted', message: `Promoted from ${level} to ${target}: ${describe(progress, criteria)}` }
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

/**
 * The agent's level state once spec is taken as the truth, and the spec patch that pins it.
 * `first` when no evaluation has recorded a level yet.
 */
function settledState(agent: Agent, now: string): { shuHaRi: ShuHaRiStatus; adopted: boolean; resumed: boolean; first: boolean; spec: NonNullable<AgentPatch['spec']> } {
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
function entered(agent: Agent, level: ShuHaRiLevel, since: string, policy: string, start?: LevelStart): ShuHaRiStatus {
  const m = agent.status?.metrics ?? {}
  return {
    currentLevel: level,
    levelSince: since,
    readyForPromotion: false,
    ...(policy ? { policy } : {}),
    approvals: [],
    levelStart: start ?? { invocations: m.totalInvocations ?? 0, successes: m.successCount ?? 0, failures: m.failureCount ?? 0 },
  }
}

function agentAt(agent: Agent, shuHaRi: ShuHaRiStatus): Agent {
  return { ...agent, status: { ...(agent.status ?? {}), shuHaRi } }
}

/** In-level progress: actions and success rate since levelStart, whole days since levelSince. */
function progressOf(agent: Agent, shuHaRi: ShuHaRiStatus, now: string): Progress {
  const m = agent.status?.metrics ?? {}
  const start = shuHaRi.levelStart ?? {}
  const level = shuHaRi.currentLevel ?? 'shu'
  const next = ORDER[ORDER.indexOf(level) + 1]
  const successes = Math.max(0, (m.successCount ?? 0) - (start.successes ?? 0))
  const failures = Math.max(0, (m.failureCount ?? 0) - (start.failures ?? 0))
  const days = Math.floor((Date.parse(now) - Date.parse(shuHaRi.levelSince ?? now)) / DAY_MS)
  return {
    level,
    next,
    actionsCompleted: Math.max(0, (m.totalInvocations ?? 0) - (start.invocations ?? 0)),
    successRate: successes + failures > 0 ? successes / (successes + failures) : undefined,
    daysInLevel: Number.isFinite(days) ? Math.max(0, days) : 0,
    incidentFreeStreak: m.consecutiveSuccesses ?? 0,
    consecutiveFailures: Math.min(m.consecutiveFailures ?? 0, failures),
    approvals: next ? new Set((shuHaRi.approvals ?? []).filter((a) => a.level === next).map((a) => a.value ?? '')).size : 0,
  }
}

type ConditionInput = { status: 'True' | 'False'; reason: string; message: string }

function criteriaFor(policy: EffectivePolicy, level: ShuHaRiLevel): Criteria {
  return level === 'shu' ? policy.shuToHa : policy.haToRi
}

/** The criteria not met, approvals aside. */
function unmetCriteria(p: Progress, c: Criteria): string[] {
  const unmet: string[] = []
  if (p.actionsCompleted < c.minimumActionsCompleted) unmet.push(`actions ${p.actionsCompleted}/${c.minimumActionsCompleted}`)
  if (p.successRate === undefined || p.successRate < c.minimumSuccessRate) unmet.push(`success rate ${rate(p.successRate)}/${c.minimumSuccessRate}`)
  if (p.daysInLevel < c.minimumDaysInLevel) unmet.push(`days in level ${p.daysInLevel}/${c.minimumDaysInLevel}`)
  if (p.incidentFreeStreak < c.incidentFreeStreak) unmet.push(`incident-free streak ${p.incidentFreeStreak}/${c.incidentFreeStreak}`)
  return unmet
}

/** The rollback trigger that fires, in words; undefined when none does. */
function rollbackTrigger(p: Progress, policy: EffectivePolicy): string | undefined {
  const { rollback } = policy
  if (!rollback.enabled || ORDER.indexOf(p.level) <= ORDER.indexOf(rollback.rollbackLevel)) return undefined
  if (p.consecutiveFailures >= rollback.consecutiveFailures) {
    return `${p.consecutiveFailures} consecutive failures (threshold ${rollback.consecutiveFailures})`
  }
  if (p.actionsCompleted >= ROLLBACK_MINIMUM_ACTIONS && p.successRate !== undefined && p.successRate < rollback.successRateBelow) {
    return `success rate ${rate(p.successRate)} below ${rollback.successRateBelow} over ${p.actionsCompleted} actions`
  }
  return undefined
}

/** Every criterion's value against its requirement: the audit trail of a level change. */
function describe(p: Progress, c: Criteria | undefined): string {
  if (!c) return `actions ${p.actionsCompleted}, success rate ${rate(p.successRate)}, days in level ${p.daysInLevel}, incident-free streak ${p.incidentFreeStreak}, consecutive failures ${p.consecutiveFailures}`
  return `actions ${p.actionsCompleted} (required ${c.minimumActionsCompleted}), success rate ${rate(p.successRate)} (required ${c.minimumSuccessRate}), `
    + `days in level ${p.daysInLevel} (required ${c.minimumDaysInLevel}), incident-free streak ${p.incidentFreeStreak} (required ${c.incidentFreeStreak}), `
    + `approvals ${p.approvals} (required ${c.requiredApprovals}), consecutive failures ${p.consecutiveFailures}`
}

function levelChange(
  kind: 'promoted' | 'demoted', from: ShuHaRiLevel, to: ShuHaRiLevel, policy: EffectivePolicy, p: Progress, c: Criteria | undefined, trigger?: string,
): Transition {
  const verb = kind === 'promoted' ? 'Promoted' : 'Demoted'
  return {
    kind, type: kind === 'promoted' ? 'Normal' : 'Warning', reason: verb, record: true, fieldPath: 'spec.shuHaRi.level',
    message: `${verb} from ${from} to ${to} (policy ${policy.name})${trigger ? `: ${trigger}` : ''}; ${describe(p, c)}`,
    data: {
      from, to, policy: policy.name, autonomyLevel: AUTONOMY_OF_LEVEL[to],
      ...(trigger ? { trigger } : {}),
      criteria: {
        actionsCompleted: p.actionsCompleted, successRate: p.successRate ?? null, daysInLevel: p.daysInLevel,
        incidentFreeStreak: p.incidentFreeStreak, consecutiveFailures: p.consecutiveFailures, approvals: p.approvals,
        ...(c ? { required: c } : {}),
        ...(kind === 'demoted' ? { rollback: policy.rollback } : {}),
      },
    },
  }
}

function levelAdopted(from: ShuHaRiLevel, to: ShuHaRiLevel, policy: string): Transition {
  return {
    kind: 'level.adopted', type: 'Normal', reason: 'LevelAdopted', record: true, fieldPath: 'spec.shuHaRi.level',
    message: `Level ${to} set in spec.shuHaRi.level (was ${from}); its clock and counters start now`,
    data: { from, to, policy, autonomyLevel: AUTONOMY_OF_LEVEL[to] },
  }
}

type ApprovalVerdict =
  | { kind: 'recorded'; approval: PromotionApproval; transition: Transition }
  | { kind: 'seen' }
  | { kind: 'ignored'; transition: Transition }

/** `purko.io/approve-promotion: <level>[ free text]` counts for the next level, once per distinct value. */
function readApproval(value: string, shuHaRi: ShuHaRiStatus, now: string): ApprovalVerdict {
  const level = shuHaRi.currentLevel!
  const next = ORDER[ORDER.indexOf(level) + 1]
  const asked = value.trim().split(/\s+/)[0]?.toLowerCase()
  if (!next || asked !== next) {
    return {
      kind: 'ignored',
      transition: {
        kind: 'approval.ignored', type: 'Warning', reason: 'ApprovalIgnored', record: true, fieldPath: `metadata.annotations[${ANNOTATION_APPROVE_PROMOTION}]`,
        message: `Approval "${value.slice(0, 200)}" ignored: ${next ? `the next level is ${next}` : `level ${level} is the highest`}; the annotation was removed`,
        data: { value, level, ...(next ? { next } : {}) },
      },
    }
  }
  if ((shuHaRi.approvals ?? []).some((a) => a.level === next && (a.value ?? '') === value)) return { kind: 'seen' }
  return {
    kind: 'recorded',
    approval: { level: next, value: value.slice(0, 253), approvedAt: now },
    transition: {
      kind: 'approval.recorded', type: 'Normal', reason: 'ApprovalRecorded', record: true, fieldPath: `metadata.annotations[${ANNOTATION_APPROVE_PROMOTION}]`,
      message: `Approval "${value.slice(0, 200)}" recorded for promotion to ${next}`,
      data: { value, level: next },
    },
  }
}

/**
 * ShuHaRiProgression when no level changes: HighestLevel (True) at ri, AwaitingApproval (True)
 * when only approvals are missing, CriteriaNotMet (False) otherwise. Right after a level change
 * the condition keeps announcing it (Promoted/Demoted) until the agent has acted in its new level,
 * so the evaluation after a transition writes nothing.
 */
function standing(p: Progress, c: Criteria | undefined, unmet: string[], conditions: AgentStatus['conditions']): ConditionInput {
  const last = conditions?.find((x) => x.type === CONDITION_PROGRESSION)
  if (last && p.actionsCompleted === 0 && (last.reason === 'Promoted' || last.reason === 'Demoted')
    && new RegExp(`^(Promoted|Demoted) from [a-z]+ to ${p.level}:`).test(last.message ?? '')) {
    return { status: last.status as 'True' | 'False', reason: last.reason, message: last.message ?? '' }
  }
  if (!c || !p.next) return { status: 'True', reason: 'HighestLevel', message: `At ${p.level}, the highest level` }
  if (unmet.length > 0) return { status: 'False', reason: 'CriteriaNotMet', message: `For ${p.next}: ${unmet.join(', ')}` }
  return { status: 'True', reason: 'AwaitingApproval', message: `Ready for ${p.next}: approvals ${p.approvals}/${c.requiredApprovals} (annotate ${ANNOTATION_APPROVE_PROMOTION}: ${p.next})` }
}

function progressStatus(p: Progress, c: Criteria | undefined): Pick<ShuHaRiStatus, 'promotionProgress'> {
  if (!c || !p.next) return {}
  return {
    promotionProgress: {
      nextLevel: p.next,
      actionsCompleted: p.actionsCompleted,
      actionsRequired: c.minimumActionsCompleted,
      ...(p.successRate === undefined ? {} : { successRate: round(p.successRate) }),
      successRateRequired: c.minimumSuccessRate,
      daysInLevel: p.daysInLevel,
      daysRequired: c.minimumDaysInLevel,
      incidentFreeStreak: p.incidentFreeStreak,
      streakRequired: c.incidentFreeStreak,
      approvals: p.approvals,
      approvalsRequired: c.requiredApprovals,
    },
  }
}

function looserThan(autonomy: AutonomyLevel | undefined, level: ShuHaRiLevel): boolean {
  return LOOSENESS[autonomy ?? 'supervised'] > LOOSENESS[AUTONOMY_OF_LEVEL[level]]
}

function rate(r: number | undefined): string {
  return r === undefined ? 'n/a' : String(round(r))
}

function round(r: number): number {
  return Math.round(r * 10_000) / 10_000
}

