import type { ResourceType } from './resource-type.js'
import type { JSONSchemaProps } from './validation.js'

/**
 * Which nodes of an object field ownership tracks, and how (managed-fields.ts records who owns
 * them): custom resources follow their openAPIV3Schema (list types, map types); built-in kinds,
 * which are schema-less here, use the merge keys of their well-known lists, and every other list
 * is atomic. Pure.
 */

type Obj = Record<string, unknown>
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v)

/** How a node of an object is tracked. */
export type Shape =
  | { t: 'fields'; child: (name: string, value: unknown) => Shape | undefined }
  | { t: 'atomic' }
  | { t: 'listMap'; keys: string[]; item: (value: unknown) => Shape }
  | { t: 'set' }

const ATOMIC: Shape = { t: 'atomic' }
const SET: Shape = { t: 'set' }

/** What a value becomes without a schema: objects are granular, everything else atomic. */
const deduced = (value: unknown): Shape => (isObj(value) ? { t: 'fields', child: (_, v) => deduced(v) } : ATOMIC)

// The ObjectMeta fields a manager can own; the server's own (name, uid, ...) are never tracked.
const METADATA: Shape = {
  t: 'fields',
  child: (name, v) => {
    switch (name) {
      case 'labels':
      case 'annotations':
        return isObj(v) ? { t: 'fields', child: () => ATOMIC } : ATOMIC
      case 'finalizers':
        return SET
      case 'ownerReferences':
        return { t: 'listMap', keys: ['uid'], item: (x) => deduced(x) }
      case 'generateName':
        return ATOMIC
      default:
        return undefined
    }
  },
}

/** Merge keys of the built-in kinds' keyed lists (the same names mean the same in every kind served). */
const BUILTIN_LIST_KEYS: Record<string, string[]> = {
  containers: ['name'], initContainers: ['name'], ephemeralContainers: ['name'], env: ['name'], volumes: ['name'],
  volumeMounts: ['mountPath'], volumeDevices: ['devicePath'], imagePullSecrets: ['name'], conditions: ['type'],
  hostAliases: ['ip'], topologySpreadConstraints: ['topologyKey', 'whenUnsatisfiable'], resourceClaims: ['name'],
}

// Object references are atomic structs in the built-in types: owned whole.
const ATOMIC_STRUCTS = new Set(['involvedObject', 'related'])

function builtinShape(value: unknown, field = ''): Shape {
  if (ATOMIC_STRUCTS.has(field)) return ATOMIC
  if (Array.isArray(value)) {
    if (field === 'ports') {
      const service = value.some((p) => isObj(p) && 'port' in p && !('containerPort' in p))
      return { t: 'listMap', keys: service ? ['port', 'protocol'] : ['containerPort', 'protocol'], item: (x) => builtinShape(x) }
    }
    const keys = BUILTIN_LIST_KEYS[field]
    return keys && value.every(isObj) ? { t: 'listMap', keys, item: (x) => builtinShape(x) } : ATOMIC
  }
  return isObj(value) ? { t: 'fields', child: (name, v) => builtinShape(v, name) } : ATOMIC
}

function schemaShape(s: JSONSchemaProps | undefined, value: unknown): Shape {
  if (!s) return deduced(value)
  if (Array.isArray(value)) {
    const listType = s['x-kubernetes-list-type']
    if (listType === 'map') return { t: 'listMap', keys: s['x-kubernetes-list-map-keys'] ?? [], item: (x) => schemaShape(s.items, x) }
    if (listType === 'set') return SET
    return ATOMIC
  }
  if (!isObj(value) || s['x-kubernetes-map-type'] === 'atomic') return ATOMIC
  const props = s.properties
  const additional = isObj(s.additionalProperties) ? (s.additionalProperties as JSONSchemaProps) : undefined
  return {
    t: 'fields',
    child: (name, v) => {
      const sub = props?.[name] ?? additional
      if (sub) return schemaShape(sub, v)
      return deduced(v)
    },
  }
}

/** The tracking shape of a whole object of a kind at a served version. */
export function rootShape(rt: ResourceType, schema: JSONSchemaProps | undefined): Shape {
  return {
    t: 'fields',
    child: (name, v) => {
      if (name === 'apiVersion' || name === 'kind') return undefined
      if (name === 'metadata') return METADATA
      if (rt.crdName) return schemaShape(schema?.properties?.[name], v)
      return builtinShape(v, name)
    },
  }
}
