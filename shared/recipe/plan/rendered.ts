/**
 * The result of spec §1 steps 1-5 (inputs, computed values, includeWhen, graph, templates):
 * what `renderRecipe` (render.ts) returns and the manifest builders, policies and the lifecycle
 * consume. Types only.
 */
import type { RecipeStep, RecipeTest, WorkflowSettings, Workload } from '../../schemas/workflowrecipe.js'

/** A `SpecValid` error (spec §8.2): the spec's reason and exact message, and the field when known. */
export interface SpecError {
  reason: string
  message: string
  field?: string
}

/** A plain resolved value (`status.resolved.inputs` / `computed`); CEL ints are numbers here. */
export type ResolvedValue = string | number | boolean

/**
 * A workload with every templatable field rendered to its final string (`image`, `command[]`,
 * `args[]`, `env[].value`, `schedule`, `resources.*.*`, `volumeClaimTemplates[].storage`),
 * `replicas` an integer (absent when the recipe leaves it unset, spec §5.6), plus its target
 * namespace (spec §5.1) and `base(w)` (§5.2).
 */
export type RenderedWorkload = Omit<Workload, 'replicas'> & {
  replicas?: number
  namespace: string
  base: string
}

/** A test with `image`, `command[]`, `args[]`, `env[].value`, `resources` rendered; runs in the sandbox. */
export type RenderedTest = RecipeTest & { namespace: string }

/** A step with `task` and the string leaves of `input` rendered. */
export type RenderedStep = RecipeStep

/** `spec.workflow` with `parameters` rendered (defaults applied when the recipe has steps). */
export type RenderedWorkflow = WorkflowSettings

export interface RenderOk {
  ok: true
  /** Resolved inputs by name (spec §2.2). */
  inputs: Record<string, ResolvedValue>
  /** Computed values by name, in declaration order (spec §2.3). */
  computed: Record<string, ResolvedValue>
  /** Selected profile, `""` when none. */
  profile: string
  /** Included workloads in topological order (spec §7.11). */
  workloads: RenderedWorkload[]
  /** Names of the workloads excluded by includeWhen, in spec order. */
  excluded: string[]
  /** Names of the included workloads in topological order (`status.resolved.order`). */
  order: string[]
  tests: RenderedTest[]
  /** Templates only (spec §7.7): required inputs without a value; placeholders needing them stay unrendered. */
  missingInputs?: string[]
  /** Only when the recipe has steps. */
  steps?: RenderedStep[]
  /** Only when the recipe has steps. */
  workflow?: RenderedWorkflow
}

export interface RenderFailed {
  ok: false
  /** Every error, in pipeline order (spec §1). */
  errors: SpecError[]
}

export type RenderResult = RenderOk | RenderFailed
