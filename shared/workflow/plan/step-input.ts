/**
 * The `STEP_INPUT` document and `inputFrom` environment of a step (purko's `buildStepInput`).
 * Kinetic substitutes `${...}` placeholders inside the parsed input's strings and serialises
 * afterwards, so whatever a step output or parameter contains, STEP_INPUT stays valid JSON.
 */
import type { WorkflowStep } from '../../schemas/workflow.js'
import { canonicalJson, goJson } from '../../core/go-format.js'

/** Step outputs (step name to parsed output) and Workflow parameters visible to a step. */
export interface StepInputContext {
  outputs: Record<string, unknown>
  parameters: Record<string, string>
}

/** A plain environment variable for the step Job. */
export interface PlainEnv {
  name: string
  value: string
}

/** What `buildStepInput` produces: the STEP_INPUT text, inputFrom env and human-readable warnings. */
export interface StepInput {
  stepInput: string
  env: PlainEnv[]
  warnings: string[]
}

// `${steps.<step>.output[.<key>...]}` or `${parameters.<name>}`; names may contain hyphens.
const PLACEHOLDER = /\$\{(?:steps\.(\w[\w-]*)\.output((?:\.[\w-]+)*)|parameters\.(\w[\w-]*))\}/g
// What Kubernetes accepts as an environment variable name.
const ENV_NAME = /^[-._a-zA-Z][-._a-zA-Z0-9]*$/

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

/** Pure: value at `path` (dot-separated keys; digits index lists) inside a step output, or undefined. */
function lookup(output: unknown, path: string[]): unknown {
  let current = output
  for (const key of path) {
    if (isObject(current) && Object.hasOwn(current, key)) current = current[key]
    else if (Array.isArray(current) && /^\d+$/.test(key) && Number(key) < current.length) current = current[Number(key)]
    else return undefined
  }
  return current
}

/** Pure: `STEP_INPUT_<STEP>_<KEY>`, uppercased with only hyphens turned into underscores (purko's naming). */
export function inputFromEnvName(step: string, key: string): string {
  return `STEP_INPUT_${step.toUpperCase().replaceAll('-', '_')}_${key.toUpperCase().replaceAll('-', '_')}`
}

function substitute(text: string, ctx: StepInputContext, warnings: string[]): string {
  // One pass over the template: inserted values are never scanned again, so an output that
  // happens to contain `${parameters.x}` cannot pull in other values.
  return text.replace(PLACEHOLDER, (whole, step: string | undefined, path: string | undefined, param: string | undefined) => {
    if (param !== undefined) {
      if (Object.hasOwn(ctx.parameters, param)) return ctx.parameters[param]!
      warnings.push(`${whole}: no such parameter; replaced by an empty string`)
      return ''
    }
    const keys = path ? path.slice(1).split('.') : []
    const value = Object.hasOwn(ctx.outputs, step!) ? lookup(ctx.outputs[step!], keys) : undefined
    if (value === undefined) {
      // purko's docs promise an empty string for a step that was skipped, failed or did not emit the key.
      warnings.push(`${whole}: no such step output; replaced by an empty string`)
      return ''
    }
    return typeof value === 'string' ? value : canonicalJson(value)
  })
}

function substituteDeep(value: unknown, ctx: StepInputContext, warnings: string[]): unknown {
  if (typeof value === 'string') return substitute(value, ctx, warnings)
  if (Array.isArray(value)) return value.map((v) => substituteDeep(v, ctx, warnings))
  if (isObject(value)) {
    const out: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(value)) out[k] = substituteDeep(v, ctx, warnings)
    return out
  }
  return value
}

/**
 * Pure: builds STEP_INPUT from `step.input` with placeholders substituted inside strings (a string
 * value is inserted as its text, anything else as compact JSON; an unresolvable reference becomes
 * the empty string) plus `inputFrom` values, serialised like Go (sorted keys, `<>&` escaped).
 */
export function buildStepInput(step: Pick<WorkflowStep, 'input' | 'inputFrom'>, ctx: StepInputContext): StepInput {
  const warnings: string[] = []
  const env: PlainEnv[] = []
  // Placeholders belong to the author's template; values copied from other steps are data.
  const input = (isObject(step.input) ? substituteDeep(step.input, ctx, warnings) : {}) as Record<string, unknown>

  for (const ref of step.inputFrom ?? []) {
    if (!Object.hasOwn(ctx.outputs, ref.step)) continue
    const output = ctx.outputs[ref.step]
    if (ref.outputKey === undefined || ref.outputKey === '') {
      // Without a key there is nothing to pick: the whole output is passed under the step's name.
      input[ref.step] = output
      continue
    }
    const key = ref.outputKey
    if (!isObject(output)) {
      input[key] = output
      continue
    }
    const present = Object.hasOwn(output, key)
    input[key] = present ? output[key] : null
    if (!present) continue
    const name = inputFromEnvName(ref.step, key)
    if (ENV_NAME.test(name)) env.push({ name, value: goJson(output[key]) })
    else warnings.push(`inputFrom ${ref.step}.${key}: ${JSON.stringify(name)} is not a valid environment variable name; not set`)
  }

  return { stepInput: goJson(input), env, warnings }
}
