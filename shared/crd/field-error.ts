/** One rejected field as the API server reports it in `Status.details.causes`. */
export interface FieldCause {
  /** `FieldValueInvalid`, `FieldValueRequired`, `FieldValueNotSupported`, `FieldValueDuplicate`, ... */
  reason: string
  /** A Kubernetes field path such as `spec.steps[1].name`; `<nil>` for the object itself. */
  field: string
  /** The message with the server's prefix, such as `Required value` or `Invalid value: "object": ...`. */
  message: string
}

/** The field Go's nil `*field.Path` prints, which is what the API server shows for the whole object. */
export const NIL_FIELD = '<nil>'

type Json = Record<string, unknown>

/** Pure: true for a plain JSON object (not null, not an array). */
export function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** Pure: a cause with the path shown the way the server shows it (`<nil>` for the root). */
export function fieldCause(path: string, reason: string, message: string): FieldCause {
  return { reason, field: path === '' ? NIL_FIELD : path, message }
}

/** Pure: a `FieldValueInvalid` cause, printing the value the way `field.Invalid` does. */
export function invalidValue(path: string, value: unknown, detail: string): FieldCause {
  return fieldCause(path, 'FieldValueInvalid', `Invalid value: ${shownValue(value)}: ${detail}`)
}

/** Pure: `a.b` for a property, the key alone at the root. */
export function joinPath(path: string, key: string): string {
  return path ? `${path}.${key}` : key
}

/** Pure: the JSON type name Kubernetes uses in type errors (`integer` for whole numbers). */
export function typeName(value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'array'
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number'
  return typeof value
}

/** Scalars print as JSON; objects and arrays print as their quoted type, as in Go's `%#v` of the error value. */
function shownValue(value: unknown): string {
  if (isObject(value)) return '"object"'
  if (Array.isArray(value)) return '"array"'
  return JSON.stringify(value)
}
