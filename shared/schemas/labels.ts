/** API group of every Kinetic custom resource (purko-compatible). */
export const API_GROUP = 'purko.io'
/** Version of the purko.io API that Kinetic serves. */
export const API_VERSION_NAME = 'v1alpha1'
/** Full apiVersion string written on every purko.io object. */
export const API_VERSION = 'purko.io/v1alpha1'

/** Label on step Jobs (and their pods) naming the owning Workflow. */
export const LABEL_WORKFLOW = 'purko.io/workflow'
/** Label on step Jobs naming the Workflow step they run. */
export const LABEL_STEP = 'purko.io/step'
/** Label on step Jobs naming the Agent that executes the step. */
export const LABEL_AGENT = 'purko.io/agent'
/** Kinetic label on step Jobs carrying the run id they belong to. */
export const LABEL_RUN_ID = 'kinetic.dev/run-id'
/** Kinetic label on step Jobs carrying the attempt number (0 for the first try). */
export const LABEL_ATTEMPT = 'kinetic.dev/attempt'
/** Kinetic label on step Jobs: which watch of the jobs source carries their events (shared/workflow/plan/job-shard.ts). */
export const LABEL_SHARD = 'kinetic.dev/shard'
/** Kinetic label on ConfigMaps that hold step outputs. */
export const LABEL_OUTPUTS = 'kinetic.dev/outputs'

/** Annotation holding the id of the current Workflow run. */
export const ANNOTATION_RUN_ID = 'purko.io/run-id'
/** Annotation marking a Workflow as a template that is not run itself. */
export const ANNOTATION_TEMPLATE = 'purko.io/template'
/** Annotation that asks for the current run to be cancelled. */
export const ANNOTATION_CANCEL = 'purko.io/cancel'
/** Annotation that asks for a fresh run of the Workflow. */
export const ANNOTATION_RERUN = 'purko.io/rerun'
/** Prefix of the per-step approval annotation (`purko.io/approve-<step>`). */
export const ANNOTATION_APPROVE_PREFIX = 'purko.io/approve-'
/** Prefix of the per-step denial annotation (`purko.io/deny-<step>`). */
export const ANNOTATION_DENY_PREFIX = 'purko.io/deny-'

/** Finalizer that Kinetic places on Workflows it has started. */
export const FINALIZER_WORKFLOW = 'purko.io/workflow-finalizer'

/** Annotation approving an Agent's promotion to the named level (`purko.io/approve-promotion: ha`). */
export const ANNOTATION_APPROVE_PROMOTION = 'purko.io/approve-promotion'
/** Annotation resetting an Agent's recorded cost to zero (its value is free text, e.g. a ticket). */
export const ANNOTATION_RESET_COST = 'kinetic.dev/reset-cost'
/** Label on the ServiceAccount, Role and RoleBinding made for an Agent. */
export const LABEL_AGENT_TYPE = 'purko.io/agent-type'
/** Label naming who manages an object (purko's `agent-controller` on per-agent identities). */
export const LABEL_MANAGED_BY = 'purko.io/managed-by'
/** Finalizer purko put on Agents; Kinetic cleans up by ownerReferences and removes it. */
export const FINALIZER_AGENT = 'purko.io/agent-finalizer'

/** Annotation on a run naming the template it was created from (purko's scheduler and webhook). */
export const ANNOTATION_WORKFLOW_TEMPLATE = 'purko.io/workflow-template'
/** Annotation on a run saying what started it: `schedule`, `webhook` or `manual`. */
export const ANNOTATION_TRIGGER_TYPE = 'purko.io/trigger-type'
/** Annotation on a run: the cron (schedule), the source (webhook), or the user (manual). */
export const ANNOTATION_TRIGGER_SOURCE = 'purko.io/trigger-source'
/** Annotation on a webhook run: how its template was chosen (`explicit`, `rule:<name>`). */
export const ANNOTATION_TRIGGER_ROUTE = 'purko.io/trigger-route'
/** Annotation on a scheduled run: the fire time it stands for (RFC 3339, UTC). */
export const ANNOTATION_SCHEDULED_TIME = 'kinetic.dev/scheduled-time'
/** Annotation on a webhook or manual run: the delivery id (or Idempotency-Key) the sender gave. */
export const ANNOTATION_DELIVERY_ID = 'kinetic.dev/delivery-id'
/**
 * Annotation on a webhook run: the key derived from what the signature covers that named the
 * run, so a redelivery or a replay finds it (shared/webhook/delivery-key.ts).
 */
export const ANNOTATION_DELIVERY_KEY = 'kinetic.dev/delivery-key'
/** Label on a run naming its template (label-safe), so a template's runs are listed by selector. */
export const LABEL_TEMPLATE = 'kinetic.dev/template'
/**
 * Prefix of the verified record of a step decision (`kinetic.dev/decision-<step>`): JSON
 * `{verdict: "approved"|"denied", user, time, reason?}` written by run-control beside purko's
 * approve/deny annotation.
 */
export const ANNOTATION_DECISION_PREFIX = 'kinetic.dev/decision-'
/** Annotation saying why a run was cancelled when not by a person (concurrency `replace`). */
export const ANNOTATION_CANCEL_REASON = 'kinetic.dev/cancel-reason'
/** Annotation recording who asked for a cancel or rerun through run-control: JSON `{user, time, reason?}`. */
export const ANNOTATION_REQUESTED_BY = 'kinetic.dev/requested-by'
/** Annotation on Kinetic's Kubernetes Events: the type of the CloudEvent published for the same transition. */
export const ANNOTATION_CLOUDEVENT_TYPE = 'kinetic.dev/cloudevent-type'
/** Annotation on Kinetic's Kubernetes Events: the id of the CloudEvent published for the same transition. */
export const ANNOTATION_CLOUDEVENT_ID = 'kinetic.dev/cloudevent-id'
