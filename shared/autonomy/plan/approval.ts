// Pure: reading a promotion approval, the `purko.io/approve-promotion` annotation a person sets on
// an Agent. It is recorded in status first and its annotation removed after.
import type { Transition } from '../../core/plan.js'
import type { PromotionApproval, ShuHaRiStatus } from '../../schemas/agent.js'
import { ANNOTATION_APPROVE_PROMOTION } from '../../schemas/labels.js'
import { LEVEL_ORDER } from './levels.js'

type ApprovalVerdict =
  | { kind: 'recorded'; approval: PromotionApproval; transition: Transition }
  | { kind: 'seen' }
  | { kind: 'ignored'; transition: Transition }

/** `purko.io/approve-promotion: <level>[ free text]` counts for the next level, once per distinct value. */
export function readApproval(value: string, shuHaRi: ShuHaRiStatus, now: string): ApprovalVerdict {
  const level = shuHaRi.currentLevel!
  const next = LEVEL_ORDER[LEVEL_ORDER.indexOf(level) + 1]
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
