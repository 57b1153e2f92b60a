import { isObject } from './field-error.js'
import type { JsonSchemaProps } from './structural.js'

/**
 * The CEL view of a structural schema as the API server builds it for `x-kubernetes-validations`:
 * each node's CEL type plus the two sizes its cost estimate reads, the most elements (characters
 * for strings) a value can have and the fewest bytes it takes in a request. Unbounded lists,
 * maps and strings get the worst case a request of the maximum size allows.
 */

/** The largest request the API server accepts, which bounds every unbounded size (3 MiB). */
export const MAX_REQUEST_SIZE_BYTES = 3n * 1024n * 1024n

/** The kinds of CEL types the cost estimate tells apart. */
export type CelKind =
  | 'object' | 'map' | 'list' | 'string' | 'bytes' | 'int' | 'uint' | 'double' | 'bool'
  | 'duration' | 'timestamp' | 'null' | 'type' | 'optional' | 'opaque' | 'dyn'

/** A CEL type; `decl` is set when the value comes straight from the schema. */
export interface CelType {
  kind: CelKind
  /** List element, map value or optional value. */
  elem?: CelType
  /** Map key. */
  key?: CelType
  decl?: CelDecl
}

/** One schema node as a CEL declaration. */
export interface CelDecl {
  kind: CelKind
  /** Most items, properties or characters (times four for strings with maxLength); 0 for scalars and objects. */
  maxElements: bigint
  /** Fewest bytes a serialized value takes. */
  minSerializedSize: bigint
  /** Object fields by their CEL (escaped) names. */
  fields?: Map<string, CelDecl>
  elem?: CelDecl
  key?: CelDecl
  /** Declared from an actual value (shared/cel/budget.ts): `fields` lists every key and a list or map without `elem` is empty. */
  closed?: boolean
}

const STRING_KEY: CelDecl = { kind: 'string', maxElements: 0n, minSerializedSize: 2n }
const SCALARS: Record<string, CelDecl> = {
  boolean: { kind: 'bool', maxElements: 0n, minSerializedSize: 4n },
  number: { kind: 'double', maxElements: 0n, minSerializedSize: 1n },
  integer: { kind: 'int', maxElements: 0n, minSerializedSize: 1n },
}
const UNBOUNDED_STRING = MAX_REQUEST_SIZE_BYTES - 2n

/**
 * Pure: the CEL declaration of a schema node, null when CEL cannot see it (no type, or a list
 * without items). `resourceRoot` adds apiVersion, kind and metadata.name/generateName, as the
 * server does for the schema root and for embedded resources.
 */
export function celDecl(schema: JsonSchemaProps, resourceRoot: boolean): CelDecl | null {
  if (schema['x-kubernetes-int-or-string']) return { kind: 'dyn', maxElements: UNBOUNDED_STRING, minSerializedSize: 1n }
  const s = resourceRoot ? withTypeAndObjectMeta(schema) : schema
  switch (s.type) {
    case 'array': {
      if (!s.items) return null
      const items = celDecl(s.items, s.items['x-kubernetes-embedded-resource'] === true)
      if (!items) return null
      const max = s.maxItems !== undefined ? bound(s.maxItems) : (MAX_REQUEST_SIZE_BYTES - 2n) / (items.minSerializedSize + 1n)
      return { kind: 'list', maxElements: max, minSerializedSize: 2n, elem: items }
    }
    case 'object': {
      if (isObject(s.additionalProperties)) {
        const values = celDecl(s.additionalProperties as JsonSchemaProps, (s.additionalProperties as JsonSchemaProps)['x-kubernetes-embedded-resource'] === true)
        if (!values) return null
        const max = s.maxProperties !== undefined ? bound(s.maxProperties) : (MAX_REQUEST_SIZE_BYTES - 2n) / (values.minSerializedSize + 6n)
        return { kind: 'map', maxElements: max, minSerializedSize: 2n, elem: values, key: STRING_KEY }
      }
      const fields = new Map<string, CelDecl>()
      const required = new Set(s.required ?? [])
      let min = 2n
      for (const [name, prop] of Object.entries(s.properties ?? {})) {
        const field = celDecl(prop, prop['x-kubernetes-embedded-resource'] === true)
        if (!field) continue
        const escaped = escapeCelName(name)
        if (escaped !== null) fields.set(escaped, field)
        if (required.has(name) && prop.default === undefined) min += BigInt(utf8Length(name)) + field.minSerializedSize + 4n
      }
      return { kind: 'object', maxElements: 0n, minSerializedSize: min, fields }
    }
    case 'string':
      return stringDecl(s)
    default:
      return SCALARS[s.type ?? ''] ?? null
  }
}

function stringDecl(s: JsonSchemaProps): CelDecl {
  switch (s.format) {
    case 'byte':
      return { kind: 'bytes', maxElements: s.maxLength !== undefined ? bound(s.maxLength) : UNBOUNDED_STRING, minSerializedSize: 2n }
    case 'duration':
      return { kind: 'duration', maxElements: 32n, minSerializedSize: 3n }
    case 'date':
      return { kind: 'timestamp', maxElements: 12n, minSerializedSize: 12n }
    case 'date-time':
      return { kind: 'timestamp', maxElements: 32n, minSerializedSize: 21n }
  }
  let max = UNBOUNDED_STRING
  // maxLength counts characters; a character takes up to four bytes.
  if (s.maxLength !== undefined) max = bound(s.maxLength) * 4n
  else if (s.enum?.length) max = s.enum.reduce<bigint>((m, e) => (typeof e === 'string' && BigInt(utf8Length(e)) > m ? BigInt(utf8Length(e)) : m), 0n)
  return { kind: 'string', maxElements: max, minSerializedSize: 2n }
}

function withTypeAndObjectMeta(s: JsonSchemaProps): JsonSchemaProps {
  const p = s.properties
  const meta = p?.metadata
  if (p?.kind?.type === 'string' && p.apiVersion?.type === 'string' && meta?.type === 'object' && meta.properties?.name?.type === 'string' && meta.properties.generateName?.type === 'string') return s
  const str: JsonSchemaProps = { type: 'string' }
  return { ...s, properties: { ...p, kind: str, apiVersion: str, metadata: { type: 'object', properties: { name: str, generateName: str } } } }
}

function bound(n: number): bigint {
  return n < 0 ? 0n : BigInt(Math.trunc(n))
}

function utf8Length(s: string): number {
  return new TextEncoder().encode(s).length
}

const RESERVED = new Set(['true', 'false', 'null', 'in', 'as', 'break', 'const', 'continue', 'else', 'for', 'function', 'if', 'import', 'let', 'loop', 'package', 'namespace', 'return', 'var', 'void', 'while'])

/** Pure: a property name as CEL expressions spell it (`__dash__`, `__dot__`, reserved words wrapped in `__`), null when CEL cannot name it. */
export function escapeCelName(name: string): string | null {
  if (name === '' || /^[0-9]/.test(name)) return null
  if (RESERVED.has(name)) return `__${name}__`
  if (!/^[A-Za-z0-9_./-]*$/.test(name)) return null
  return name.replace(/__|[-./]/g, (m) => ({ __: '__underscores__', '.': '__dot__', '-': '__dash__', '/': '__slash__' })[m] as string)
}

/** Pure: the CEL type of a declaration. */
export function celTypeOf(decl: CelDecl): CelType {
  const t: CelType = { kind: decl.kind, decl }
  if (decl.elem) t.elem = celTypeOf(decl.elem)
  if (decl.key) t.key = celTypeOf(decl.key)
  return t
}
