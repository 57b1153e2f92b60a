/**
 * includeWhen (spec §3.2): each workload's CEL condition over `inputs`, `computed` and
 * `recipe` must be a bool; `false` excludes the workload. Pure.
 */
import type { Workload } from '../../schemas/workflowrecipe.js'
import { celTypeName, evaluateCel, type TypedValue } from './cel.js'
import { celScope, refersToFailed, type RecipeIdentity } from './computed.js'
import type { SpecError } from './rendered.js'

export interface InclusionResult {
  /** Included workload names, in spec order. A workload whose condition failed counts as included. */
  included: string[]
  /** Excluded workload names, in spec order. */
  excluded: string[]
  errors: SpecError[]
}

/** Pure: spec §3.2 for every workload; no `includeWhen` (or a blank one) means always included. */
export function evaluateInclusion(
  workloads: ReadonlyArray<Pick<Workload, 'name' | 'includeWhen'>>,
  inputs: Map<string, TypedValue>,
  computed: Map<string, TypedValue>,
  failed: { inputs: Set<string>; computed: Set<string> },
  recipe: RecipeIdentity,
): InclusionResult {
  const included: string[] = []
  const excluded: string[] = []
  const errors: SpecError[] = []
  const scope = celScope(inputs, computed, recipe)
  for (const w of workloads) {
    if (w.includeWhen === undefined || w.includeWhen.trim() === '') {
      included.push(w.name)
      continue
    }
    const field = `spec.workloads[${w.name}].includeWhen`
    const outcome = evaluateCel(w.includeWhen, scope)
    if (!outcome.ok) {
      included.push(w.name)
      if (!refersToFailed(outcome.refs, failed.inputs, failed.computed)) {
        errors.push({ reason: 'IncludeWhenError', message: `workload "${w.name}": includeWhen: ${outcome.error}`, field })
      }
      continue
    }
    if (typeof outcome.value !== 'boolean') {
      included.push(w.name)
      errors.push({ reason: 'IncludeWhenError', message: `workload "${w.name}": includeWhen: must evaluate to a bool, got ${celTypeName(outcome.value)}`, field })
      continue
    }
    ;(outcome.value ? included : excluded).push(w.name)
  }
  return { included, excluded, errors }
}
