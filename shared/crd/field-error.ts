import { goJson, goNumber, goQuote } from './go-value.js'

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

/** The kinds of field error (apimachinery's field.ErrorType); each is also the cause's reason. */
export type FieldErrorType =
  | 'FieldValueNotFound' | 'FieldValueRequired' | 'FieldValueDuplicate' | 'FieldValueInvalid' | 'FieldValueNotSupported'
  | 'FieldValueForbidden' | 'FieldValueTooLong' | 'FieldValueTooMany' | 'InternalError' | 'FieldValueTypeInvalid'

const LABELS: Record<FieldErrorType, string> = {
  FieldValueNotFound: 'Not found', FieldValueRequired: 'Required value', FieldValueDuplicate: 'Duplicate value',
  FieldValueInvalid: 'Invalid value', FieldValueNotSupported: 'Unsupported value', FieldValueForbidden: 'Forbidden',
  FieldValueTooLong: 'Too long', FieldValueTooMany: 'Too many', InternalError: 'Internal error', FieldValueTypeInvalid: 'Invalid value',
}

/** These kinds never show the value. */
const VALUELESS: ReadonlySet<FieldErrorType> = new Set(['FieldValueRequired', 'FieldValueForbidden', 'FieldValueTooLong', 'InternalError'])

/** A bad value that is left out of the message (field.TooMany with an unknown count). */
export const OMITTED = Symbol('omitted value')

/**
 * Pure: a field error's message without its field, as kube-apiserver v1.34 writes it (field.Error's
 * ErrorBody): the kind's label, then the bad value for the kinds that show one (a string quoted
 * with Go's %q, a number or boolean as is, anything else, null included, as Go's JSON), then
 * the detail.
 */
export function errorBody(type: FieldErrorType, badValue: unknown, detail = ''): string {
  let body = LABELS[type]
  if (!VALUELESS.has(type) && badValue !== OMITTED) body += `: ${shownValue(badValue)}`
  return detail ? `${body}: ${detail}` : body
}

/** Pure: a bad value as field.Error prints it. */
export function shownValue(value: unknown): string {
  if (typeof value === 'string') return goQuote(value)
  if (typeof value === 'number') return goNumber(value)
  if (typeof value === 'boolean' || typeof value === 'bigint') return String(value)
  return goJson(value)
}

/** Pure: a cause of the given kind at `path` (`''` is the object itself). */
export function fieldError(path: string, type: FieldErrorType, badValue: unknown, detail = ''): FieldCause {
  return fieldCause(path, type, errorBody(type, badValue, detail))
}

/** Pure: field.Invalid. */
export function invalid(path: string, value: unknown, detail: string): FieldCause {
  return fieldError(path, 'FieldValueInvalid', value, detail)
}

/** Pure: field.TypeInvalid. */
export function typeInvalid(path: string, value: unknown, detail: string): FieldCause {
  return fieldError(path, 'FieldValueTypeInvalid', value, detail)
}

/** Pure: field.Required. */
export function required(path: string, detail = ''): FieldCause {
  return fieldError(path, 'FieldValueRequired', undefined, detail)
}

/** Pure: field.Forbidden. */
export function forbidden(path: string, detail: string): FieldCause {
  return fieldError(path, 'FieldValueForbidden', undefined, detail)
}

/** Pure: field.Duplicate. */
export function duplicate(path: string, value: unknown): FieldCause {
  return fieldError(path, 'FieldValueDuplicate', value)
}

/** Pure: field.NotSupported: each supported value printed (non-strings as JSON), then quoted. */
export function notSupported(path: string, value: unknown, supported: readonly unknown[]): FieldCause {
  const listed = supported.map((v) => goQuote(typeof v === 'string' ? v : goJson(v))).join(', ')
  return fieldError(path, 'FieldValueNotSupported', value, listed ? `supported values: ${listed}` : '')
}

/** Pure: field.TooLong: `may not be more than N bytes`. */
export function tooLong(path: string, max: number): FieldCause {
  return fieldError(path, 'FieldValueTooLong', undefined, max >= 0 ? `may not be more than ${max} ${max === 1 ? 'byte' : 'bytes'}` : 'value is too long')
}

/** Pure: field.TooMany: `Too many: 3: must have at most 2 items`. */
export function tooMany(path: string, actual: number, max: number): FieldCause {
  const detail = max >= 0 ? `must have at most ${max} ${max === 1 ? 'item' : 'items'}` : 'has too many items'
  return fieldError(path, 'FieldValueTooMany', actual >= 0 ? actual : OMITTED, detail)
}
