import { compileRules, runRules } from './cel-rules.js'
import { invalid, isObject, typeInvalid, typeName, type FieldCause } from './field-error.js'
import { goQuote } from './go-value.js'
import { applySchema } from './schema-pass.js'
import type { JsonSchemaProps } from './structural.js'

/**
 * Kinetic's one validator of custom resources against a CRD's openAPIV3Schema: the CRD tests
 * call `validateAgainstCrd`, the embedded API server builds one `SchemaValidator` per served
 * version with `compileCrdSchema`. Both report what a real API server reports.
 */

export { SchemaCompileError, toCel } from './cel-rules.js'
export type { FieldCause } from './field-error.js'
export type { JsonSchemaProps, ValidationRule } from './structural.js'

/** Outcome of validateAgainstCrd: the defaulted, pruned object, or every cause of rejection. */
export type CrdValidationResult =
  | { ok: true; object: Record<string, unknown>; unknownFields: string[] }
  | { ok: false; causes: FieldCause[]; unknownFields: string[] }

/** The parts of an apiextensions.k8s.io/v1 CustomResourceDefinition validation needs. */
export interface CrdLike {
  spec: {
    versions: { name: string; storage?: boolean; schema?: { openAPIV3Schema?: JsonSchemaProps } }[]
  }
}

/** Options of validateAgainstCrd. */
export interface ValidateOptions {
  /** The stored object on update; enables transition rules that use `oldSelf`. */
  oldObject?: unknown
}

/** What one validation found: causes (empty means valid) and the paths of pruned unknown fields. */
export interface ValidationResult {
  causes: FieldCause[]
  unknownFields: string[]
}

/** A compiled openAPIV3Schema: `validate` defaults and prunes the object in place, then checks it; `old` enables transition rules. */
export interface SchemaValidator {
  validate(object: object, old?: object): ValidationResult
}

/** Message Kubernetes adds when schema errors keep the CEL rules from running. */
export const CEL_SKIPPED_MESSAGE =
  'some validation rules were not checked because the object was invalid; correct the existing errors to complete validation'

/** Schema errors after which the API server does not run CEL rules: the rules would see values of the wrong shape. */
const BLOCKING = new Set(['FieldValueNotSupported', 'FieldValueRequired', 'FieldValueTooLong', 'FieldValueTooMany', 'FieldValueTypeInvalid'])

/** Compiles one version's openAPIV3Schema, CEL rules included; throws SchemaCompileError when a rule does not compile. */
export function compileCrdSchema(schema: JsonSchemaProps): SchemaValidator {
  const rules = compileRules(schema)
  return {
    validate(object, old) {
      const root = object as Record<string, unknown>
      const { causes, unknownFields } = applySchema(root, schema)
      if (!rules.any) return { causes, unknownFields }
      if (causes.some((c) => BLOCKING.has(c.reason))) {
        causes.push(invalid('', null, CEL_SKIPPED_MESSAGE))
      } else {
        causes.push(...runRules(rules, root, schema, old as Record<string, unknown> | undefined))
      }
      return { causes, unknownFields }
    },
  }
}

const compiled = new WeakMap<JsonSchemaProps, SchemaValidator>()

/**
 * Pure: validates an object against a CRD the way the API server does (prune unknown fields,
 * apply `default`s, check the OpenAPI schema, list keys and `x-kubernetes-validations`);
 * never mutates its input; throws only when the CRD itself is unusable.
 */
export function validateAgainstCrd(crd: CrdLike, object: unknown, options: ValidateOptions = {}): CrdValidationResult {
  const schema = schemaFor(crd, object)
  if (!isObject(object)) {
    const got = typeName(object)
    return { ok: false, causes: [typeInvalid('', got, `body in body must be of type object: ${goQuote(got)}`)], unknownFields: [] }
  }
  let validator = compiled.get(schema)
  if (!validator) {
    validator = compileCrdSchema(schema)
    compiled.set(schema, validator)
  }
  const value = structuredClone(object)
  const old = isObject(options.oldObject) ? structuredClone(options.oldObject) : undefined
  // The stored object went through the same decoding (defaults, pruning) before it was stored.
  if (old) applySchema(old, schema)
  const { causes, unknownFields } = validator.validate(value, old)
  return causes.length === 0 ? { ok: true, object: value, unknownFields } : { ok: false, causes, unknownFields }
}

/** Pure: the openAPIV3Schema of the version named by the object's apiVersion (the storage version otherwise). */
export function schemaFor(crd: CrdLike, object: unknown): JsonSchemaProps {
  const apiVersion = isObject(object) && typeof object.apiVersion === 'string' ? object.apiVersion : ''
  const wanted = apiVersion.includes('/') ? apiVersion.slice(apiVersion.indexOf('/') + 1) : apiVersion
  const version = crd.spec.versions.find((v) => v.name === wanted) ?? crd.spec.versions.find((v) => v.storage)
  const schema = version?.schema?.openAPIV3Schema
  if (!schema) throw new Error('The CRD has no openAPIV3Schema for this version')
  return schema
}
