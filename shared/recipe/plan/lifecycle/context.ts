/**
 * The draft one lifecycle plan works on (spec §7.3): the recipe, the facts a shell read, the next
 * status as the transitions edit it, and what they announce. `enterPhase` and `announce` are the
 * two ways a transition handler records what it did.
 */
import type { RecipePhase, WorkflowRecipe, WorkflowRecipeStatus } from '../../../schemas/workflowrecipe.js'
import type { Transition } from '../../../core/plan.js'
import type { LifecycleFacts } from '../lifecycle-facts.js'

/** Entries kept in `status.history`. */
const MAX_HISTORY = 20

/** Phases whose Event is a Warning (spec §13). */
const WARNING_PHASES: ReadonlySet<string> = new Set(['Failed', 'Rejected', 'RollbackFailed', 'Degraded', 'RollingBack'])

/** A revision's failure as `status.reason` and `status.message` show it (spec §7.3 failure reasons). */
export interface Failure {
  reason: string
  message: string
}

/** The `UpToDate` condition as a transition set it (spec §9). */
export interface UpToDateVerdict {
  status: 'True' | 'False'
  reason: string
  message: string
}

/**
 * What a transition handler decided: `acted` (it changed the status or announced something, so the
 * walk plans another step), `stay` (nothing fires: the walk ends here), or `next` (not this
 * handler's case: the next one in the table decides).
 */
export type HandlerOutcome = 'acted' | 'stay' | 'next'

/** One row of the transition table (spec §7.3): a named handler of one transition or a cohesive group. */
export type TransitionHandler = (ctx: PlanningContext) => HandlerOutcome

export interface PlanningContext {
  recipe: WorkflowRecipe
  facts: LifecycleFacts
  /** The time of this plan (ISO); the planner reads no clock. */
  now: string
  /** `metadata.generation`, the spec §7.3 table's G. */
  generation: number
  /** A template is validated, never deployed (spec §7.7). */
  template: boolean
  /** The next status: a copy of `previous` that the transitions of this plan edit. */
  status: WorkflowRecipeStatus
  /** The status as the recipe holds it now. */
  previous: WorkflowRecipeStatus
  /** Every transition of this plan, in the order it happened. */
  transitions: Transition[]
  /** The in-flight revision a new generation abandoned (spec §7.6). */
  abandonedRevision?: number
  /** `UpToDate` set explicitly by a transition of this plan. */
  upToDate?: UpToDateVerdict
}

/** Pure: `text` cut to at most `max` characters. */
export function truncate(text: string, max: number): string {
  return text.length > max ? text.slice(0, max) : text
}

/**
 * Moves the recipe to phase `to` (spec §7.3): sets phase, reason, message and
 * phaseTransitionTime, appends to `status.history` and announces `phase.changed`.
 */
export function enterPhase(ctx: PlanningContext, to: RecipePhase, reason: string, message: string): void {
  const { status } = ctx
  const from = status.phase
  status.phase = to
  status.reason = reason
  status.message = truncate(message, 1024)
  status.phaseTransitionTime = ctx.now
  const history = [...(status.history ?? []), { time: ctx.now, ...(from ? { from } : {}), to, reason, revision: status.revision ?? 0, message: truncate(message, 256) }]
  status.history = history.slice(-MAX_HISTORY)
  ctx.transitions.push({
    kind: 'phase.changed',
    type: WARNING_PHASES.has(to) ? 'Warning' : 'Normal',
    reason,
    message: status.message,
    record: true,
    data: { from: from ?? '', to, reason, message: status.message, generation: ctx.generation, revision: status.revision ?? 0 },
  })
}

/** Announces a recorded Kubernetes Event that changes no phase. */
export function announce(ctx: PlanningContext, reason: string, message: string, type: 'Normal' | 'Warning' = 'Normal'): void {
  ctx.transitions.push({ kind: 'event', type, reason, message, record: true, publish: false })
}
