// Pure: how an evaluation reports the Agent's progression: the level-change transitions (Kubernetes
// Events and Kinetic CloudEvents, with the criteria as their audit trail) and the
// ShuHaRiProgression condition when no level changes.
import type { Transition } from '../../core/plan.js'
import type { AgentStatus, ShuHaRiLevel } from '../../schemas/agent.js'
import { ANNOTATION_APPROVE_PROMOTION } from '../../schemas/labels.js'
import { AUTONOMY_OF_LEVEL } from './levels.js'
import type { Criteria, EffectivePolicy } from './policy.js'
import { describeProgress, type Progress } from './progress.js'

/** Condition type on the Agent that tells where it stands in its progression. */
export const CONDITION_PROGRESSION = 'ShuHaRiProgression'

/** The ShuHaRiProgression condition, short of its type and time. */
export type ConditionInput = { status: 'True' | 'False'; reason: string; message: string }

export function levelChange(
  kind: 'promoted' | 'demoted', from: ShuHaRiLevel, to: ShuHaRiLevel, policy: EffectivePolicy, progress: Progress, criteria: Criteria | undefined, trigger?: string,
): Transition {
  const verb = kind === 'promoted' ? 'Promoted' : 'Demoted'
  return {
    kind, type: kind === 'promoted' ? 'Normal' : 'Warning', reason: verb, record: true, fieldPath: 'spec.shuHaRi.level',
    message: `${verb} from ${from} to ${to} (policy ${policy.name})${trigger ? `: ${trigger}` : ''}; ${describeProgress(progress, criteria)}`,
    data: {
      from, to, policy: policy.name, autonomyLevel: AUTONOMY_OF_LEVEL[to],
      ...(trigger ? { trigger } : {}),
      criteria: {
        actionsCompleted: progress.actionsCompleted, successRate: progress.successRate ?? null, daysInLevel: progress.daysInLevel,
        incidentFreeStreak: progress.incidentFreeStreak, consecutiveFailures: progress.consecutiveFailures, approvals: progress.approvals,
        ...(criteria ? { required: criteria } : {}),
        ...(kind === 'demoted' ? { rollback: policy.rollback } : {}),
      },
    },
  }
}

export function levelAdopted(from: ShuHaRiLevel, to: ShuHaRiLevel, policy: string): Transition {
  return {
    kind: 'level.adopted', type: 'Normal', reason: 'LevelAdopted', record: true, fieldPath: 'spec.shuHaRi.level',
    message: `Level ${to} set in spec.shuHaRi.level (was ${from}); its clock and counters start now`,
    data: { from, to, policy, autonomyLevel: AUTONOMY_OF_LEVEL[to] },
  }
}

/**
 * ShuHaRiProgression when no level changes: HighestLevel (True) at ri, AwaitingApproval (True)
 * when only approvals are missing, CriteriaNotMet (False) otherwise. Right after a level change
 * the condition keeps announcing it (Promoted/Demoted) until the agent has acted in its new level,
 * so the evaluation after a transition writes nothing.
 */
export function standing(progress: Progress, criteria: Criteria | undefined, unmet: string[], conditions: AgentStatus['conditions']): ConditionInput {
  const last = conditions?.find((x) => x.type === CONDITION_PROGRESSION)
  if (last && progress.actionsCompleted === 0 && (last.reason === 'Promoted' || last.reason === 'Demoted')
    && new RegExp(`^(Promoted|Demoted) from [a-z]+ to ${progress.level}:`).test(last.message ?? '')) {
    return { status: last.status as 'True' | 'False', reason: last.reason, message: last.message ?? '' }
  }
  if (!criteria || !progress.next) return { status: 'True', reason: 'HighestLevel', message: `At ${progress.level}, the highest level` }
  if (unmet.length > 0) return { status: 'False', reason: 'CriteriaNotMet', message: `For ${progress.next}: ${unmet.join(', ')}` }
  return { status: 'True', reason: 'AwaitingApproval', message: `Ready for ${progress.next}: approvals ${progress.approvals}/${criteria.requiredApprovals} (annotate ${ANNOTATION_APPROVE_PROMOTION}: ${progress.next})` }
}
