import { compileCrdSchema, type JsonSchemaProps, type SchemaValidator } from '../../shared/crd/validate.js'

/**
 * The API server enforces custom resource schemas with Kinetic's one CRD validator
 * (`shared/crd/validate.ts`); this module only names it the way the server's modules use it.
 */

export { SchemaCompileError } from '../../shared/crd/validate.js'
export type { JsonSchemaProps as JSONSchemaProps, SchemaValidator, ValidationResult, ValidationRule } from '../../shared/crd/validate.js'

/** Builds a validator for one version's openAPIV3Schema; throws SchemaCompileError for rules that do not compile. */
export type SchemaValidatorFactory = (schema: JsonSchemaProps) => SchemaValidator

/** The validator every CRD served by the embedded API server gets. */
export const createSchemaValidator: SchemaValidatorFactory = compileCrdSchema
