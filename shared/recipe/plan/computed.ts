/**
 * Computed values (spec §2.3): `spec.computed[]` evaluated in list order with CEL over
 * `inputs`, the earlier `computed` values and `recipe`; results typed per spec §3.1. Pure.
 */
import type { WorkflowRecipeSpec } from '../../schemas/workflowrecipe.js'
import { celTypeName, evaluateCel, type CelScope, type TypedValue } from './cel.js'
import type { SpecError } from './rendered.js'

export interface RecipeIdentity {
  name: string
  namespace: string
  /** Selected profile, `""` when none. */
  profile: string
}

export interface ComputedResult {
  values: Map<string, TypedValue>
  failed: Set<string>
  errors: SpecError[]
}

/** Pure: the CEL scope of spec §2.3 from resolved inputs and computed values. */
export function celScope(inputs: Map<string, TypedValue>, computed: Map<string, TypedValue>, recipe: RecipeIdentity): CelScope {
  return {
    inputs: Object.fromEntries([...inputs].map(([k, v]) => [k, v.value])),
    computed: Object.fromEntries([...computed].map(([k, v]) => [k, v.value])),
    recipe: { name: recipe.name, namespace: recipe.namespace, profile: recipe.profile },
  }
}

/** Pure: whether a failed expression referenced a value whose own error is already reported. */
export function refersToFailed(refs: Set<string>, failedInputs: Set<string>, failedComputed: Set<string>): boolean {
  for (const ref of refs) {
    const [root, name] = ref.split('.', 2) as [string, string]
    if (root === 'inputs' && failedInputs.has(name)) return true
    if (root === 'computed' && failedComputed.has(name)) return true
  }
  return false
}

/** The typed value of a CEL result, or the spec §8.2 detail when it is not a scalar. */
export function typedResult(value: unknown): TypedValue | string {
  if (typeof value === 'string') return { type: 'string', value }
  if (typeof value === 'boolean') return { type: 'bool', value }
  if (typeof value === 'number') return { type: 'double', value }
  if (typeof value === 'bigint') return { type: 'int', value }
  if (celTypeName(value) === 'uint') return { type: 'int', value: BigInt(String(value)) }
  return `result must be a string, number or boolean, got ${celTypeName(value)}`
}

type Spec = Pick<WorkflowRecipeSpec, 'computed'>

/**
 * Pure: spec §2.3. `failedInputs` are inputs whose error is already reported: an expression that
 * fails while reading one of them (or an earlier failed computed value) is marked failed
 * without a second error.
 */
export function evaluateComputed(spec: Spec, inputs: Map<string, TypedValue>, failedInputs: Set<string>, recipe: RecipeIdentity): ComputedResult {
  const values = new Map<string, TypedValue>()
  const failed = new Set<string>()
  const errors: SpecError[] = []
  for (const entry of spec.computed ?? []) {
    const field = `spec.computed[${entry.name}]`
    const outcome = evaluateCel(entry.expression, celScope(inputs, values, recipe))
    if (!outcome.ok) {
      failed.add(entry.name)
      if (!refersToFailed(outcome.refs, failedInputs, failed)) {
        errors.push({ reason: 'ComputedValueError', message: `computed "${entry.name}": ${outcome.error}`, field })
      }
      continue
    }
    const result = typedResult(outcome.value)
    if (typeof result === 'string') {
      failed.add(entry.name)
      errors.push({ reason: 'ComputedValueError', message: `computed "${entry.name}": ${result}`, field })
      continue
    }
    if (result.type === 'int' && (result.value > BigInt(Number.MAX_SAFE_INTEGER) || result.value < BigInt(Number.MIN_SAFE_INTEGER))) {
      failed.add(entry.name)
      errors.push({ reason: 'ComputedValueError', message: `computed "${entry.name}": result ${result.value} is beyond the exactly representable integers (±${Number.MAX_SAFE_INTEGER})`, field })
      continue
    }
    if (result.type === 'double' && !Number.isFinite(result.value)) {
      failed.add(entry.name)
      errors.push({ reason: 'ComputedValueError', message: `computed "${entry.name}": result ${String(result.value)} is not a finite number`, field })
      continue
    }
    values.set(entry.name, result)
  }
  return { values, failed, errors }
}
