// Field ownership on every write: who (which field manager) set what, recorded in
// `metadata.managedFields` as the real field manager records it (see ../managed-fields.ts).
import { alwaysPresent, compareFields, presentFields } from '../field-sets.js'
import type { Shape } from '../field-shapes.js'
import { afterUpdate, keepPresent, readEntries, writeEntries, type ManagerEntry, type Writer } from '../managed-fields.js'
import { timestamp } from '../object-meta.js'
import { apiVersionOf } from '../resource-type.js'
import type { KubeObject } from '../types.js'
import type { ManagerOptions, Target } from './store-types.js'

/** The field manager of in-process writes that name none. */
const DEFAULT_MANAGER = 'kinetic'

/** The managedFields entry a write at this version, by this manager, is recorded under. */
export function writerFor(t: Target, manager: string, operation: 'Apply' | 'Update', now: () => Date, subresource?: string): Writer {
  return { manager, operation, apiVersion: apiVersionOf(t.rt.group, t.version), ...(subresource ? { subresource } : {}), time: timestamp(now()) }
}

/**
 * Records field ownership in `next.metadata.managedFields`: the entries an apply planned, or
 * those an Update leaves (the writer owns what it added or changed). A kind with a status
 * subresource tracks status only on /status, and everything else only on the main resource.
 */
export function trackFields(t: Target, shape: Shape, old: KubeObject | undefined, next: KubeObject, opts: ManagerOptions & { managed?: ManagerEntry[] }, now: () => Date, subresource?: 'status'): void {
  let entries: ManagerEntry[]
  if (opts.managed) entries = keepPresent(opts.managed, presentFields(next, shape))
  else {
    const base = readEntries(next.metadata.managedFields ?? old?.metadata.managedFields)
    // With a status subresource, a write can change only its own part, so only that part is compared.
    const part = (o: KubeObject | undefined): unknown => {
      if (!o || !t.rt.statusSubresource) return o
      if (subresource === 'status') return { status: o.status }
      const { status: _status, ...rest } = o
      return rest
    }
    const changes = compareFields(part(old), part(next), shape, old ? new Set() : alwaysPresent(t.rt))
    entries = afterUpdate(base, changes, writerFor(t, opts.fieldManager ?? opts.defaultManager ?? DEFAULT_MANAGER, 'Update', now, subresource))
  }
  const managed = writeEntries(entries)
  if (managed) next.metadata.managedFields = managed as never
  else delete next.metadata.managedFields
}
