/**
 * Inputs, profiles and values (spec §2.2): each declared input from `spec.values`, else the
 * selected profile, else its default; no coercion; enum, pattern and bounds; every key of
 * `values` and of every profile names a declared input. Pure.
 */
import type { InputType, WorkflowRecipeSpec } from '../../schemas/workflowrecipe.js'
import type { RE2JS } from 're2js'
import { compileEcmaScriptOnRe2, RegexSyntaxError } from '../../cel/regex.js'
import type { TypedValue } from './cel.js'
import type { SpecError } from './rendered.js'

export interface InputsResult {
  /** Resolved inputs in declaration order (only those that resolved and passed every check). */
  values: Map<string, TypedValue>
  /** Inputs that failed (their error is reported once; references to them are not reported again). */
  failed: Set<string>
  /** Template mode only: required inputs without a value, in declaration order (also in `failed`). */
  missing: string[]
  errors: SpecError[]
}

const ARTICLE: Record<InputType, string> = {
  string: 'a string', integer: 'an integer', number: 'a number', boolean: 'a boolean',
}

function json64(value: unknown): string {
  return (JSON.stringify(value) ?? String(value)).slice(0, 64)
}

function jsonType(value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'array'
  return typeof value
}

function typed(type: InputType, value: unknown): TypedValue | null {
  switch (type) {
    case 'string': return typeof value === 'string' ? { type: 'string', value } : null
    case 'integer': return typeof value === 'number' && Number.isInteger(value) ? { type: 'int', value: BigInt(value) } : null
    case 'number': return typeof value === 'number' && Number.isFinite(value) ? { type: 'double', value } : null
    case 'boolean': return typeof value === 'boolean' ? { type: 'bool', value } : null
  }
}

type Spec = Pick<WorkflowRecipeSpec, 'inputs' | 'profile' | 'profiles' | 'values'>

/** Pure: spec §2.2 resolution and checks (`template`: a missing required input is listed, not an error, §7.7). Errors come in the order unknown keys, then inputs in declaration order. */
export function resolveInputs(spec: Spec, options: { template?: boolean } = {}): InputsResult {
  const errors: SpecError[] = []
  const missing: string[] = []
  const values = new Map<string, TypedValue>()
  const failed = new Set<string>()
  const declared = spec.inputs ?? []
  const names = new Set(declared.map((i) => i.name))

  for (const key of Object.keys(spec.values ?? {})) {
    if (!names.has(key)) errors.push({ reason: 'UnknownInput', message: `spec.values sets unknown input "${key}"`, field: `spec.values.${key}` })
  }
  for (const profile of spec.profiles ?? []) {
    for (const key of Object.keys(profile.values ?? {})) {
      if (!names.has(key)) {
        errors.push({ reason: 'UnknownInput', message: `profile "${profile.name}" sets unknown input "${key}"`, field: `spec.profiles[${profile.name}].values.${key}` })
      }
    }
  }

  const selected = spec.profile ? (spec.profiles ?? []).find((p) => p.name === spec.profile) : undefined
  for (const input of declared) {
    const type: InputType = input.type ?? 'string'
    const field = `spec.inputs[${input.name}]`
    let raw: unknown
    if (spec.values && Object.hasOwn(spec.values, input.name)) raw = spec.values[input.name]
    else if (selected?.values && Object.hasOwn(selected.values, input.name)) raw = selected.values[input.name]
    else if (input.default !== undefined) raw = input.default
    else {
      failed.add(input.name)
      if (options.template) { missing.push(input.name); continue }
      errors.push({ reason: 'InputMissing', message: `input "${input.name}" has no value: give it a default, a profile value or a value in spec.values`, field })
      continue
    }
    const value = typed(type, raw)
    if (!value) {
      failed.add(input.name)
      errors.push({ reason: 'InputTypeMismatch', message: `input "${input.name}" must be ${ARTICLE[type]}, got ${jsonType(raw)} ${json64(raw)}`, field })
      continue
    }
    const range = outOfRange(input, value)
    if (range) {
      failed.add(input.name)
      errors.push({ reason: 'InputOutOfRange', message: `input "${input.name}": ${range}`, field })
      continue
    }
    values.set(input.name, value)
  }
  return { values, failed, missing, errors }
}

type DeclaredInput = NonNullable<Spec['inputs']>[number]

function outOfRange(input: DeclaredInput, value: TypedValue): string | null {
  if (value.type === 'string') {
    const shown = json64(value.value)
    if (input.enum && !input.enum.includes(value.value)) {
      return `${shown} is not one of [${input.enum.map((e) => JSON.stringify(e)).join(', ')}]`
    }
    if (input.pattern !== undefined) {
      // On RE2, in time linear in the value: a template's pattern never stalls a function.
      let re: RE2JS
      try {
        re = compileEcmaScriptOnRe2(input.pattern)
      } catch (err) {
        return `${shown} does not match ${input.pattern} (${err instanceof RegexSyntaxError ? err.message : 'not a valid regular expression'})`
      }
      if (!re.testExact(value.value)) return `${shown} does not match ${input.pattern}`
    }
    return null
  }
  if (value.type === 'int' || value.type === 'double') {
    const n = Number(value.value)
    if (input.minimum !== undefined && n < input.minimum) return `${String(n)} is below the minimum ${String(input.minimum)}`
    if (input.maximum !== undefined && n > input.maximum) return `${String(n)} is above the maximum ${String(input.maximum)}`
  }
  return null
}
