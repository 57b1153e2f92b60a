/**
 * The spec §7.3 transition table as code: which handler decides, in which order. A plan walks it
 * one step at a time (plan.ts); each step fires at most one transition.
 *
 * Precedence: first sight (T1), then deprecation (T27 out of Deprecated, T26 into it), a new
 * generation (T2), the template rule (spec §7.7), the edge-triggered annotations (T24, T23), and
 * last the transitions out of the recipe's current phase.
 */
import type { RecipePhase } from '../../../schemas/workflowrecipe.js'
import type { HandlerOutcome, PlanningContext, TransitionHandler } from './context.js'
import { allocateRevision, fromCandidate, fromPendingApproval, fromRejected } from './transitions-admission.js'
import {
  actOnEdgeTriggeredAnnotations, deprecateOnRequest, enterCandidateOnFirstSight, handleDeprecatedRecipe, holdTemplateInCandidate, restartOnNewGeneration,
} from './transitions-any-phase.js'
import { fromDeploying, fromPending, fromTesting } from './transitions-rollout.js'
import { fromActive, fromDegraded, fromRollingBack } from './transitions-settled.js'

/** A terminal phase (spec §7.1) is left only through the rows that take precedence over the phase. */
const stayInTerminalPhase: TransitionHandler = () => 'stay'

/** The transitions out of each phase (spec §7.3). */
const TRANSITIONS_OUT_OF: Record<RecipePhase, TransitionHandler> = {
  Candidate: fromCandidate, // T3-T7
  PendingApproval: fromPendingApproval, // T8-T10, T25
  Approved: allocateRevision, // T11
  Pending: fromPending, // T12, T13
  Deploying: fromDeploying, // T14-T16
  Testing: fromTesting, // T17, T18
  Active: fromActive, // T19
  Degraded: fromDegraded, // T20
  RollingBack: fromRollingBack, // T21, T22
  Rejected: fromRejected, // T25
  Failed: stayInTerminalPhase,
  RollbackFailed: stayInTerminalPhase,
  Deprecated: stayInTerminalPhase, // T27 is taken earlier, by handleDeprecatedRecipe
}

function transitionOutOfCurrentPhase(ctx: PlanningContext): HandlerOutcome {
  const phase = ctx.status.phase
  // A phase missing from the table (none today) fires nothing.
  const handler: TransitionHandler | undefined = phase ? TRANSITIONS_OUT_OF[phase] : undefined
  return handler ? handler(ctx) : 'stay'
}

/** The table in precedence order: the first handler whose outcome is not `next` decides the step. */
const TRANSITION_TABLE: readonly TransitionHandler[] = [
  enterCandidateOnFirstSight, // T1
  handleDeprecatedRecipe, // T27, spec §7.6
  deprecateOnRequest, // T26
  restartOnNewGeneration, // T2
  holdTemplateInCandidate, // spec §7.7
  actOnEdgeTriggeredAnnotations, // T24, T23
  transitionOutOfCurrentPhase, // T3-T22, T25
]

/** One step of the spec §7.3 table: true when a handler acted (the plan takes another step), false when the recipe stays. */
export function takeTransitionStep(ctx: PlanningContext): boolean {
  for (const handler of TRANSITION_TABLE) {
    const outcome = handler(ctx)
    if (outcome !== 'next') return outcome === 'acted'
  }
  return false
}
