import { validateAgainstCrd, type CrdLike } from '../../shared/crd/validate.js'
import type { StatusCause } from './api-error.js'
import type { SchemaValidatorFactory } from './validation.js'

const REASONS: [string, string][] = [
  ['Required value', 'FieldValueRequired'],
  ['Unsupported value', 'FieldValueNotSupported'],
  ['Too long', 'FieldValueTooLong'],
  ['Too many', 'FieldValueTooMany'],
  ['Duplicate value', 'FieldValueDuplicate'],
  ['Forbidden', 'FieldValueForbidden'],
]

function reasonOf(message: string): string {
  return REASONS.find(([prefix]) => message.startsWith(prefix))?.[1] ?? 'FieldValueInvalid'
}

/**
 * Schema enforcement through the project's shared `validateAgainstCrd` (ajv + CEL), for
 * `startApiServer({ validatorFactory: sharedCrdValidatorFactory })`. Differences from the
 * default: CEL rules compile on first use rather than when the CRD is created, and pruned
 * fields are not reported, so `fieldValidation=Strict` cannot reject them.
 */
export const sharedCrdValidatorFactory: SchemaValidatorFactory = (schema) => {
  const crd = { spec: { versions: [{ name: '', storage: true, schema: { openAPIV3Schema: schema } }] } } as unknown as CrdLike
  return {
    validate(obj, old) {
      const result = validateAgainstCrd(crd, obj, old ? { oldObject: old } : {})
      if (!result.ok) {
        const causes: StatusCause[] = result.causes.map((c) => ({ field: c.field, message: c.message, reason: reasonOf(c.message) }))
        return { causes, unknownFields: [] }
      }
      const target = obj as unknown as Record<string, unknown>
      for (const key of Object.keys(target)) if (key !== 'metadata') delete target[key]
      for (const [key, value] of Object.entries(result.object)) if (key !== 'metadata') target[key] = value
      return { causes: [], unknownFields: [] }
    },
  }
}
