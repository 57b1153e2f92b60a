import { z } from 'zod'
import { dateTime, int64 } from './fields.js'

/** Allowed values of `Condition.status`. */
export const CONDITION_STATUSES = ['True', 'False', 'Unknown'] as const

const conditionShape = {
  type: z.string().describe('Type of condition.'),
  status: z.enum(CONDITION_STATUSES).describe('Status of the condition.'),
  lastTransitionTime: dateTime().describe('Last time the condition transitioned.'),
  reason: z.string().optional().describe('Machine-readable reason for the condition.'),
  message: z.string().optional().describe('Human-readable message for the condition.'),
  observedGeneration: int64().optional().describe('Generation the condition was computed from.'),
}

/** metav1.Condition as Agents and Workflows carry it (unknown fields kept). */
export const ConditionSchema = z.looseObject(conditionShape)
export type Condition = z.infer<typeof ConditionSchema>

/** metav1.Condition for the fully structural kinds (unknown fields pruned). */
export const StrictConditionSchema = z.object(conditionShape)
