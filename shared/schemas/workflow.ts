import { z } from 'zod'
import { API_VERSION } from './labels.js'
import { ObjectMetaSchema } from './object-meta.js'
import { ConditionSchema } from './condition.js'
import { dateTime, int64, ObservabilitySchema, SecretKeyRefSchema } from './fields.js'

export { ConditionSchema, type Condition } from './condition.js'

/** Phases a Workflow run can be in (`status.phase`). */
export const WORKFLOW_PHASES = [
  'Pending', 'Running', 'RollingBack', 'Succeeded', 'CompletedWithErrors', 'Failed', 'Cancelled',
] as const
export type WorkflowPhase = (typeof WORKFLOW_PHASES)[number]

/** Phases a single step can be in (`status.stepStatuses[].phase`). */
export const STEP_PHASES = [
  'Pending', 'Running', 'Succeeded', 'Failed', 'Skipped', 'RollingBack', 'RolledBack',
] as const
export type StepPhase = (typeof STEP_PHASES)[number]

/** What a Workflow does when a step fails; all four behave as purko's docs describe. */
export const FAILURE_STRATEGIES = ['failFast', 'continueOnError', 'stop', 'rollback'] as const
export type FailureStrategy = (typeof FAILURE_STRATEGIES)[number]

/** Largest number of steps one Workflow may declare. */
export const MAX_STEPS = 10000
/** Largest number of dependencies (and inputFrom entries) one step may declare. */
export const MAX_STEP_DEPENDENCIES = 64
/** DNS-1123 label: step names end up in Job names, label values and env names. */
export const STEP_NAME_PATTERN = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'

const stepName = () => z.string().min(1).max(63)

/** Reference to the Agent that executes a step (namespace defaults to the Workflow's). */
export const AgentRefSchema = z.looseObject({
  name: z.string().max(253).describe('Name of the Agent resource.'),
  namespace: z.string().max(63).optional().describe('Namespace of the Agent resource.'),
})
export type AgentRef = z.infer<typeof AgentRefSchema>

/** Retry settings of one step; `maxRetries` defaults to 3 whenever the block is present. */
export const RetryPolicySchema = z.looseObject({
  maxRetries: z.number().int().min(0).default(3).describe('Maximum number of retry attempts.'),
  backoffSeconds: z.number().int().min(0).optional().describe('Base delay in seconds before a retry.'),
  backoff: z.string().optional()
    .describe('Backoff strategy or delay between retries (exponential, fixed, or a duration such as 10s).'),
  retryOn: z.array(z.string()).optional().describe('Error patterns that make a failure retryable; empty retries every failure.'),
})
export type RetryPolicy = z.infer<typeof RetryPolicySchema>

/** `{step, outputKey}`: exposes an earlier step's output key to this step. */
export const InputFromSchema = z.looseObject({
  step: z.string().max(63).describe('Name of the source step.'),
  outputKey: z.string().optional().describe('Key of the output to reference.'),
})
export type InputFrom = z.infer<typeof InputFromSchema>

/**
 * Kinetic extension of the Workflow step (spec §2.10, §5.10; purko ignores it): a
 * per-step model override. Each field set replaces the Agent's for this step's Job
 * (`MODEL_PROVIDER`, `MODEL_NAME`, `MODEL_TEMPERATURE`, `MODEL_MAX_TOKENS`); a `provider` other
 * than the Agent's gives the step that LLMProvider's endpoint and credentials.
 */
export const StepModelSchema = z.object({
  provider: z.string().max(253).optional().describe('LLMProvider for this step instead of the Agent\'s.'),
  name: z.string().max(253).optional().describe('Model name for this step instead of the Agent\'s.'),
  temperature: z.number().min(0).max(2).optional().describe('Sampling temperature for this step (0..2).'),
  maxTokens: z.number().int().min(1).max(2000000).optional().describe('Maximum tokens for this step.'),
})
export type StepModel = z.infer<typeof StepModelSchema>

/** One step of a Workflow; the CEL rules run per step so their cost stays linear in the step count. */
export const WorkflowStepSchema = z.looseObject({
  name: stepName().regex(new RegExp(STEP_NAME_PATTERN)).describe('Unique name for this step (DNS-1123 label).'),
  agentRef: AgentRefSchema.optional().describe('Reference to an Agent resource.'),
  type: z.string().max(63).optional().describe('Step type for steps without an agent (e.g. notification, approval).'),
  description: z.string().optional().describe('Human-readable description of what this step does.'),
  dependsOn: z.array(z.string().max(63)).max(MAX_STEP_DEPENDENCIES).optional()
    .describe('Steps that must complete before this step.'),
  inputFrom: z.array(InputFromSchema).max(MAX_STEP_DEPENDENCIES).optional()
    .describe('References to outputs from previous steps.'),
  retryPolicy: RetryPolicySchema.optional().describe('Retry configuration for this step.'),
  timeout: z.looseObject({
    timeoutSeconds: z.number().int().optional().describe('Deadline of one attempt in seconds.'),
  }).optional().describe('Timeout configuration for this step.'),
  condition: z.string().optional()
    .describe('Expression evaluated before the step runs; false marks the step Skipped.'),
  input: z.looseObject({}).optional().describe('Input data for this step.'),
  output: z.looseObject({
    key: z.string().optional().describe('Key to store the step output under.'),
    format: z.string().optional().describe('Format of the output data (e.g. json, text).'),
  }).optional().describe('Output configuration for this step.'),
  config: z.looseObject({}).optional().describe('Step-specific configuration.'),
  model: StepModelSchema.optional()
    .describe('Kinetic extension (purko ignores it): per-step model override of the Agent\'s provider, name, temperature and maxTokens.'),
}).meta({
  description: 'A single step in the workflow execution.',
  'x-kubernetes-validations': [
    {
      rule: "(has(self.agentRef) && self.agentRef.name != '') || (has(self.type) && self.type != '')",
      message: 'step must have either agentRef.name or type',
      messageExpression: "'step \"' + self.name + '\" must have either agentRef.name or type'",
    },
    {
      rule: '!has(self.dependsOn) || !(self.name in self.dependsOn)',
      message: 'WF-003: step cannot depend on itself',
      messageExpression: "'WF-003: step \"' + self.name + '\" cannot depend on itself'",
      fieldPath: '.dependsOn',
    },
    {
      rule: '!has(self.timeout) || !has(self.timeout.timeoutSeconds) || self.timeout.timeoutSeconds >= 0',
      message: 'step timeout must be non-negative',
      messageExpression: "'step \"' + self.name + '\" timeout must be non-negative'",
      fieldPath: '.timeout.timeoutSeconds',
    },
  ],
})
export type WorkflowStep = z.infer<typeof WorkflowStepSchema>

/** Workflow-level deadline: a Go duration string ("30m", "1h30m") or `{timeoutSeconds}`. */
export const WorkflowTimeoutSchema = z.union([
  z.string(),
  z.looseObject({ timeoutSeconds: z.number().int().min(0).optional() }),
]).meta({
  description: 'Overall workflow timeout: a duration string such as 30m or 1h30m, or an object {timeoutSeconds}.',
  'x-kubernetes-preserve-unknown-fields': true,
})
export type WorkflowTimeout = z.infer<typeof WorkflowTimeoutSchema>

/** Trigger block: schedule, webhook, event (unknown fields kept). */
export const TriggerSchema = z.looseObject({
  type: z.string().optional().describe('Type of trigger (e.g. manual, schedule, event, webhook).'),
  schedule: z.looseObject({
    cron: z.string().optional().describe('Cron expression.'),
    timezone: z.string().optional().describe('IANA time zone of the cron expression.'),
    suspend: z.boolean().optional().describe('Whether the schedule is suspended.'),
    catchUp: z.enum(['latest', 'none']).optional()
      .describe('Fires missed while nothing ran (a lost tick, a late PingSource): latest (default) starts one run for the latest missed fire within startingDeadlineSeconds; none starts none.'),
    startingDeadlineSeconds: z.number().int().min(1).max(31_622_400).optional()
      .describe('How late a missed fire may still start its run (default 3600).'),
  }).optional().describe('Schedule-based trigger.'),
  webhook: z.looseObject({
    path: z.string().optional().describe('HTTP path for the webhook endpoint.'),
    secret: SecretKeyRefSchema.optional().describe('Secret holding the HMAC key for webhook validation (key default: secret).'),
    allowUnauthenticated: z.boolean().optional()
      .describe('UNSAFE: accept webhook calls without a signature. Anyone who can reach the endpoint can start runs.'),
  }).optional().describe('Webhook trigger configuration.'),
  event: z.looseObject({
    source: z.string().optional().describe('Event source identifier.'),
    type: z.string().optional().describe('Event type to match.'),
    filter: z.string().optional().describe('CEL expression to filter events.'),
  }).optional().describe('Event-based trigger configuration.'),
  eventTriggers: z.array(z.looseObject({})).optional().describe('Event-based triggers.'),
  successfulRunsHistoryLimit: z.number().int().min(0).max(1000).optional()
    .describe('Finished successful runs of this template that are kept (default 3); older ones are deleted.'),
  failedRunsHistoryLimit: z.number().int().min(0).max(1000).optional()
    .describe('Finished unsuccessful runs (failed, cancelled, completed with errors) that are kept (default 1).'),
})
export type Trigger = z.infer<typeof TriggerSchema>

const hookSchema = z.looseObject({ webhook: z.string().optional().describe('Webhook URL to invoke.') })

/** Desired state of a Workflow run. */
export const WorkflowSpecSchema = z.looseObject({
  description: z.string().optional().describe('Human-readable description of the workflow.'),
  steps: z.array(WorkflowStepSchema).min(1).max(MAX_STEPS).meta({
    description: 'Steps of the workflow; names are unique.',
    'x-kubernetes-list-type': 'map',
    'x-kubernetes-list-map-keys': ['name'],
  }),
  parallelism: z.number().int().min(1).default(1).describe('Maximum number of steps to run in parallel.'),
  failureStrategy: z.enum(FAILURE_STRATEGIES).default('failFast').describe('Strategy when a step fails.'),
  parameters: z.record(z.string(), z.string()).optional()
    .describe('Input parameters for ${parameters.X} substitution in step inputs.'),
  edges: z.array(z.looseObject({
    from: z.string().optional().describe('Name of the source step.'),
    to: z.string().optional().describe('Name of the target step.'),
    condition: z.looseObject({}).optional().describe('Condition for edge transition.'),
  })).optional().describe('Explicit edges between steps.'),
  trigger: TriggerSchema.optional().describe('Trigger configuration for automatic workflow execution.'),
  concurrency: z.looseObject({
    policy: z.string().optional().describe('Concurrency policy (e.g. allow, forbid, replace).'),
    maxParallel: z.number().int().min(1).optional().describe('Maximum number of parallel workflow instances.'),
    whenBusy: z.enum(['wait', 'skip']).optional()
      .describe('forbid only: wait (default) queues the new run until the active one ends; skip ends it at once as Cancelled.'),
  }).optional().describe('Concurrency control for workflow execution.'),
  errorHandling: z.looseObject({
    strategy: z.string().optional(),
    fallbackWorkflow: z.string().optional(),
    continueOnError: z.boolean().optional(),
  }).optional().describe('Error handling strategy for the workflow.'),
  observability: ObservabilitySchema.optional().describe('Observability configuration for workflow monitoring.'),
  timeout: WorkflowTimeoutSchema.optional(),
  variables: z.array(z.looseObject({})).optional().describe('Workflow variables.'),
  hooks: z.looseObject({
    onStart: hookSchema.optional(),
    onComplete: hookSchema.optional(),
    onFailure: hookSchema.optional(),
  }).optional().describe('Lifecycle hooks for workflow events.'),
}).describe('WorkflowSpec defines the desired state of a Workflow.')
export type WorkflowSpec = z.infer<typeof WorkflowSpecSchema>

/** Observed state of one step of the current run. */
export const StepStatusSchema = z.looseObject({
  name: z.string().describe('Name of the step.'),
  phase: z.enum(STEP_PHASES).optional().describe('Current phase of the step.'),
  jobName: z.string().optional().describe('Job running the current attempt.'),
  startTime: dateTime().optional().describe('Time when the step started.'),
  completionTime: dateTime().optional().describe('Time when the step completed.'),
  output: z.looseObject({}).optional().describe('Output data from the step (kept for compatibility; see outputRef).'),
  error: z.string().optional().describe('Error message if the step failed.'),
  retryCount: z.number().int().optional().describe('Number of retry attempts for this step.'),
  nextAttemptAt: dateTime().optional().describe('When the pending retry backoff comes due.'),
  outputRef: z.string().optional().describe('ConfigMap holding this step output.'),
  compensationJobName: z.string().optional().describe('Job running the rollback compensation of this step.'),
  message: z.string().max(1024).optional()
    .describe('What the current attempt should know about: an LLMProvider fallback in use, an MCP server the agent names that is not registered.'),
})
export type StepStatus = z.infer<typeof StepStatusSchema>

/** Most runs a template's status lists. */
export const MAX_RECENT_RUNS = 10

/** One run of a template, as the template's status lists it. */
export const RecentRunSchema = z.looseObject({
  name: z.string().describe('Name of the run Workflow.'),
  phase: z.string().optional().describe('Phase of the run.'),
  trigger: z.string().optional().describe('What started it: schedule, webhook or manual.'),
  startTime: dateTime().optional().describe('When the run started.'),
  completionTime: dateTime().optional().describe('When the run finished.'),
})
export type RecentRun = z.infer<typeof RecentRunSchema>

/** Observed state of a Workflow run. */
export const WorkflowStatusSchema = z.looseObject({
  phase: z.enum(WORKFLOW_PHASES).optional().describe('Current phase of the workflow.'),
  message: z.string().optional().describe('Human-readable message describing the current workflow status.'),
  observedGeneration: int64().optional().describe('Most recent generation observed.'),
  totalSteps: z.number().int().optional().describe('Total number of steps in the workflow.'),
  completedSteps: z.number().int().optional().describe('Number of steps finished (succeeded or skipped).'),
  failedSteps: z.number().int().optional().describe('Number of steps that failed.'),
  startTime: dateTime().optional().describe('Time when the workflow execution started.'),
  completionTime: dateTime().optional().describe('Time when the workflow execution completed.'),
  runId: z.string().optional().describe('Id of the run this status describes.'),
  runControl: z.string().optional().describe('Digest of the run-control annotations last acted on.'),
  conditions: z.array(ConditionSchema).optional().describe('Latest observations of the workflow state.'),
  stepStatuses: z.array(StepStatusSchema).optional().describe('Status of individual workflow steps.'),
  stepPhases: z.string().max(10009).optional()
    .describe('Large runs only: a fingerprint of the step list, a colon, then one character per step in spec order (- not started, P Pending, R Running, S Succeeded, F Failed, K Skipped, B RollingBack, D RolledBack); finished steps are then left out of stepStatuses.'),
  activeRuns: z.number().int().optional().describe('Number of runs in progress.'),
  lastTriggerTime: dateTime().optional().describe('Last time a trigger started a run.'),
  nextRunTime: dateTime().optional().describe('Next scheduled run.'),
  lastScheduleTime: dateTime().optional().describe('Templates: the latest schedule fire handled (a run started, or skipped by policy).'),
  recentRuns: z.array(RecentRunSchema).max(MAX_RECENT_RUNS).optional().describe('Templates: the newest runs, newest first.'),
  queuePosition: z.number().int().min(1).optional().describe('Queued runs: place in the queue of runs of the same template (1 starts next).'),
}).describe('WorkflowStatus defines the observed state of a Workflow.')
export type WorkflowStatus = z.infer<typeof WorkflowStatusSchema>

/** A Workflow object as read from the API server; each object is one run. */
export const WorkflowSchema = z.looseObject({
  apiVersion: z.literal(API_VERSION).default(API_VERSION),
  kind: z.literal('Workflow').default('Workflow'),
  metadata: ObjectMetaSchema,
  spec: WorkflowSpecSchema,
  status: WorkflowStatusSchema.optional(),
}).describe('Workflow defines a multi-step orchestration of Agents to accomplish complex tasks.')
export type Workflow = z.infer<typeof WorkflowSchema>
