import { randomInt } from 'node:crypto'
import { invalid } from '../../shared/crd/field-error.js'
import type { StatusCause } from './api-error.js'

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/

/** Field errors for `metadata.name`: DNS label for namespaces, DNS subdomain for everything else. */
export function nameCauses(name: string, asLabel: boolean): StatusCause[] {
  const field = 'metadata.name'
  if (asLabel) {
    if (name.length > 63) return [invalid(field, name, 'must be no more than 63 characters')]
    if (!DNS_LABEL.test(name)) {
      return [invalid(field, name, "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")]
    }
    return []
  }
  if (name.length > 253) return [invalid(field, name, 'must be no more than 253 characters')]
  if (!DNS_SUBDOMAIN.test(name)) {
    return [invalid(field, name, "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")]
  }
  return []
}

const SUFFIX_ALPHABET = 'bcdfghjklmnpqrstvwxz2456789'

/** `generateName` plus five random characters from the alphabet the real server uses. */
export function generatedName(prefix: string): string {
  let suffix = ''
  for (let i = 0; i < 5; i++) suffix += SUFFIX_ALPHABET[randomInt(SUFFIX_ALPHABET.length)]
  return `${prefix.slice(0, 58)}${suffix}`
}

/** RFC 3339 with second precision, like metav1.Time. */
export function timestamp(d: Date): string {
  return `${d.toISOString().slice(0, 19)}Z`
}

/** Structural equality of JSON values, independent of object key order. */
export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false
  if (Array.isArray(a) !== Array.isArray(b)) return false
  if (Array.isArray(a)) {
    const bb = b as unknown[]
    if (a.length !== bb.length) return false
    for (let i = 0; i < a.length; i++) if (!deepEqual(a[i], bb[i])) return false
    return true
  }
  const ao = a as Record<string, unknown>
  const bo = b as Record<string, unknown>
  const ak = Object.keys(ao).filter((k) => ao[k] !== undefined)
  const bk = Object.keys(bo).filter((k) => bo[k] !== undefined)
  if (ak.length !== bk.length) return false
  for (const k of ak) if (!deepEqual(ao[k], bo[k])) return false
  return true
}

/** True when anything outside metadata and status differs: what bumps `metadata.generation`. */
export function specChanged(a: Record<string, unknown>, b: Record<string, unknown>): boolean {
  const keys = new Set([...Object.keys(a), ...Object.keys(b)])
  for (const k of keys) {
    if (k === 'metadata' || k === 'status' || k === 'apiVersion' || k === 'kind') continue
    if (!deepEqual(a[k], b[k])) return true
  }
  return false
}
