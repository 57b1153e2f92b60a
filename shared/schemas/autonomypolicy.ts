import { z } from 'zod'
import { API_VERSION } from './labels.js'
import { ObjectMetaSchema } from './object-meta.js'
import { StrictConditionSchema } from './condition.js'
import { int64 } from './fields.js'

/** Levels a rollback may return an Agent to. */
export const ROLLBACK_LEVELS = ['shu', 'ha'] as const
export type RollbackLevel = (typeof ROLLBACK_LEVELS)[number]

/** Criteria an Agent must meet to move up one Shu-Ha-Ri level. */
export const TransitionCriteriaSchema = z.object({
  minimumActionsCompleted: z.number().int().min(1).optional(),
  minimumSuccessRate: z.number().min(0).max(1).optional(),
  minimumDaysInLevel: z.number().int().min(0).optional(),
  requiredApprovals: z.number().int().min(0).optional(),
  incidentFreeStreak: z.number().int().min(0).optional(),
})
export type TransitionCriteria = z.infer<typeof TransitionCriteriaSchema>

/** Desired state of an AgentAutonomyPolicy. */
export const AgentAutonomyPolicySpecSchema = z.object({
  shuHaRi: z.object({
    progressionCriteria: z.object({
      shuToHa: TransitionCriteriaSchema.optional(),
      haToRi: TransitionCriteriaSchema.optional(),
    }),
  }),
  rollback: z.object({
    enabled: z.boolean().optional(),
    triggerConditions: z.object({
      successRateBelow: z.number().min(0).max(1).optional(),
      consecutiveFailures: z.number().int().min(1).optional(),
    }).optional(),
    rollbackLevel: z.enum(ROLLBACK_LEVELS).optional(),
  }).optional(),
})
export type AgentAutonomyPolicySpec = z.infer<typeof AgentAutonomyPolicySpecSchema>

/** Observed state of an AgentAutonomyPolicy. */
export const AgentAutonomyPolicyStatusSchema = z.object({
  observedGeneration: int64().optional(),
  conditions: z.array(StrictConditionSchema).optional(),
  agentsEvaluated: z.number().int().min(0).optional().describe('Agents this policy applied to at the last evaluation.'),
})
export type AgentAutonomyPolicyStatus = z.infer<typeof AgentAutonomyPolicyStatusSchema>

/** An AgentAutonomyPolicy object as read from the API server (fully structural). */
export const AgentAutonomyPolicySchema = z.object({
  apiVersion: z.literal(API_VERSION).default(API_VERSION),
  kind: z.literal('AgentAutonomyPolicy').default('AgentAutonomyPolicy'),
  metadata: ObjectMetaSchema,
  spec: AgentAutonomyPolicySpecSchema,
  status: AgentAutonomyPolicyStatusSchema.optional(),
})
export type AgentAutonomyPolicy = z.infer<typeof AgentAutonomyPolicySchema>
