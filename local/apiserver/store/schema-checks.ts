import { invalid, type StatusCause } from '../api-error.js'
import { schemaUnknownPaths, strictDecodingError } from '../decoding.js'
import { rootShape, type Shape } from '../field-shapes.js'
import type { ResourceType } from '../resource-type.js'
import type { KubeObject } from '../types.js'
import type { JSONSchemaProps } from '../validation.js'
import { invalid as invalidField } from '../../../shared/crd/field-error.js'
import { applySchema } from '../../../shared/crd/schema-pass.js'
import { CEL_SKIPPED_MESSAGE } from '../../../shared/crd/validate.js'
import { CRD_RESOURCE } from './crd-registration.js'
import type { ObjectTable } from './object-table.js'
import { isObj, type Obj, type Stored, type Target, type WriteOptions } from './store-types.js'

/**
 * What a kind's schema says about a write: the openAPIV3Schema of a custom resource's version
 * (read from its CRD, cached per stored CRD), the fields it would prune, and validation with the
 * real server's errors (422) and unknown-field warnings, or 400s under fieldValidation=Strict.
 */
export class SchemaChecks {
  private readonly schemas = new WeakMap<Stored, Map<string, JSONSchemaProps>>()

  constructor(private readonly table: ObjectTable) {}

  /** The openAPIV3Schema of a custom resource at a version, read from its CRD. */
  schemaOf(t: Target): JSONSchemaProps | undefined {
    if (!t.rt.crdName) return undefined
    const crd = this.table.findByKey(CRD_RESOURCE, '', t.rt.crdName)
    if (!crd) return undefined
    let byVersion = this.schemas.get(crd)
    if (!byVersion) {
      byVersion = new Map()
      for (const version of ((crd.obj.spec as Obj | undefined)?.versions ?? []) as Array<{ name?: string; schema?: { openAPIV3Schema?: JSONSchemaProps } }>) {
        if (version.name && version.schema?.openAPIV3Schema) byVersion.set(version.name, version.schema.openAPIV3Schema)
      }
      this.schemas.set(crd, byVersion)
    }
    return byVersion.get(t.version)
  }

  /** The shape field ownership and server-side apply walk objects of this kind and version by. */
  shapeOf(t: Target): Shape {
    return rootShape(t.rt, this.schemaOf(t))
  }

  /** The paths a custom resource's schema would prune from `obj` (which is left as it is). */
  unknownIn(t: Target, obj: object): string[] {
    return t.rt.crdName ? schemaUnknownPaths(obj, this.schemaOf(t)) : []
  }

  /** 400 for unknown fields under fieldValidation=Strict, before anything else is checked (as decoding comes first). */
  refuseUnknown(t: Target, obj: KubeObject, decoded: string[]): void {
    const unknown = sortUnknown(t.rt, [...decoded, ...this.unknownIn(t, obj)])
    if (unknown.length) throw strictDecodingError(t.rt, t.version, unknown)
  }

  /** Validates (and defaults) the object against its version's schema; returns the unknown-field warnings. */
  enforce(t: Target, obj: KubeObject, old: KubeObject | undefined, mode: WriteOptions['fieldValidation'], decoded: string[], subresource?: 'status'): string[] {
    const validator = t.rt.validator?.(t.version)
    const result = validator ? validator.validate(obj, old) : { causes: [], unknownFields: [] }
    const unknown = sortUnknown(t.rt, [...decoded, ...result.unknownFields])
    if (unknown.length && mode === 'Strict') throw strictDecodingError(t.rt, t.version, unknown)
    if (result.causes.length) {
      // On /status the real server validates status with a validator rooted at status, so the
      // message names the field relative to it ("phase in body"), while the cause keeps the full path.
      const causes = subresource === 'status'
        ? result.causes.map((c) => (c.field.startsWith('status.') ? { ...c, message: c.message.replace(`${c.field} in body`, `${c.field.slice('status.'.length)} in body`) } : c))
        : result.causes
      throw invalid(t.rt, obj.metadata.name ?? '', causes)
    }
    if (!unknown.length || mode === 'Ignore') return []
    return unknown.map((f) => `unknown field ${JSON.stringify(f)}`)
  }

  /**
   * Metadata causes together with the schema's, as the real server validates a custom resource
   * in one pass: a blocking metadata error (a missing name) keeps CEL rules from running, which
   * the server says with its `<nil>` cause.
   */
  withSchemaCauses(t: Target, obj: KubeObject, metaCauses: StatusCause[]): StatusCause[] {
    const schema = this.schemaOf(t)
    if (!schema) return metaCauses
    const probe = structuredClone(obj) as Obj
    if (t.rt.statusSubresource) delete probe.status
    if (!metaCauses.some((c) => c.reason === 'FieldValueRequired')) {
      return [...metaCauses, ...(t.rt.validator?.(t.version)?.validate(probe).causes ?? [])]
    }
    const { causes } = applySchema(probe, schema)
    const skipped = hasRules(schema) ? [invalidField('', null, CEL_SKIPPED_MESSAGE)] : []
    return [...metaCauses, ...causes, ...skipped]
  }
}

/** Custom resources report unknown fields sorted; built-in kinds in the order the decoder met them. */
export function sortUnknown(rt: ResourceType, fields: string[]): string[] {
  return rt.crdName ? [...new Set(fields)].sort() : fields
}

function hasRules(schema: JSONSchemaProps): boolean {
  if (schema['x-kubernetes-validations']?.length) return true
  const children = [...Object.values(schema.properties ?? {}), ...(schema.items ? [schema.items] : []), ...(isObj(schema.additionalProperties) ? [schema.additionalProperties as JSONSchemaProps] : [])]
  return children.some((child) => isObj(child) && hasRules(child))
}
