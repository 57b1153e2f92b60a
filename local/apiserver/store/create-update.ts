// The create and update verbs (and update's status subresource): a request body checked,
// decoded and defaulted, validated against its schema, its fields' ownership recorded, and
// stored through the ledger. Namespaces come into existence on a create's first use.
import { alreadyExists, ApiError, badRequest, conflict, forbidden, formatCause, invalid, notFound } from '../api-error.js'
import { bodyHint, pruneDecoded } from '../decoding.js'
import { deepEqual, generatedName, nameCauses, specChanged, timestamp } from '../object-meta.js'
import { apiVersionOf, groupResource, tracksGeneration, type ResourceType } from '../resource-type.js'
import type { KubeObject } from '../types.js'
import { invalid as invalidField } from '../../../shared/crd/field-error.js'
import { isCrdResource, serveCrd } from './crd-registration.js'
import { trackFields } from './field-ownership.js'
import { removeObject } from './garbage-collector.js'
import { decodeDefaults, prepareCreate, prepareUpdate } from './kind-strategies.js'
import { jsonAt, objectAt } from './object-views.js'
import type { StoreState } from './state.js'
import { isObj, type CreateOptions, type Target, type UpdateOptions, type WriteResult } from './store-types.js'

/** Creates an object from a request body (`urlNs` is the namespace in the path, if any). */
export function createObject(state: StoreState, t: Target, body: unknown, urlNs: string | undefined, opts: CreateOptions): WriteResult {
  const { rt } = t
  const obj = checkBody(t, body)
  const decoded = pruneDecoded(rt, obj)
  // Status is dropped on create, but the decoder has already met its unknown fields.
  if (rt.statusSubresource && obj.status !== undefined) decoded.push(...state.schemas.unknownIn(t, { status: obj.status }))
  if (opts.fieldValidation === 'Strict') state.schemas.refuseUnknown(t, obj, decoded)
  const meta = obj.metadata
  let ns = ''
  if (rt.namespaced) {
    if (urlNs && meta.namespace && meta.namespace !== urlNs) {
      throw badRequest('the namespace of the provided object does not match the namespace sent on the request')
    }
    ns = urlNs || meta.namespace || 'default'
  }
  let name = meta.name
  if (!name) {
    if (!meta.generateName) {
      throw invalid(rt, '', state.schemas.withSchemaCauses(t, obj, [{ reason: 'FieldValueRequired', field: 'metadata.name', message: 'Required value: name or generateName is required' }]))
    }
    do name = generatedName(meta.generateName)
    while (state.table.find(rt, ns, name))
  }
  const causes = nameCauses(name, rt.kind === 'Namespace')
  if (causes.length) throw invalid(rt, name, state.schemas.withSchemaCauses(t, obj, causes))
  if (state.table.find(rt, ns, name)) throw alreadyExists(rt, name)
  if (rt.namespaced) checkNamespaceWritable(state, rt, ns, name, opts.dryRun)

  for (const k of ['resourceVersion', 'uid', 'creationTimestamp', 'deletionTimestamp', 'deletionGracePeriodSeconds', 'generation', 'selfLink', 'managedFields']) delete meta[k]
  meta.name = name
  if (rt.namespaced) meta.namespace = ns
  else delete meta.namespace
  meta.uid = state.newUid()
  meta.creationTimestamp = timestamp(state.now())
  if (tracksGeneration(rt)) meta.generation = 1
  // As on the real server: decoding (and defaulting) comes first, then field tracking, then
  // what the kind's strategy sets, which no manager owns.
  decodeDefaults(rt, obj)
  if (rt.statusSubresource) delete obj.status
  const warnings = state.schemas.enforce(t, obj, undefined, opts.fieldValidation, decoded)
  trackFields(t, state.schemas.shapeOf(t), undefined, obj, opts, state.now)
  prepareCreate(state.registry, rt, obj, state.now)
  const stored = state.ledger.serialize(obj)
  if (opts.dryRun) {
    delete obj.metadata.resourceVersion
    return { stored: { obj, json: JSON.stringify(obj) }, warnings, created: true }
  }
  if (isCrdResource(rt)) serveCrd(state.registry, state.history, state.ledger.resourceVersion + 1, obj)
  state.ledger.put(rt, ns, name, stored, undefined, 'ADDED')
  return { stored, warnings, created: true }
}

/** Replaces an object (PUT), or only its status when `subresource` is 'status'. */
export function updateObject(state: StoreState, t: Target, ns: string, name: string, body: unknown, opts: UpdateOptions): WriteResult {
  const { rt } = t
  const prev = state.table.find(rt, ns, name)
  if (!prev) throw notFound(rt, name)
  const incoming = checkBody(t, body)
  const decoded = pruneDecoded(rt, incoming)
  if (rt.statusSubresource) {
    // The decoder meets the unknown fields of the parts the subresource then ignores.
    if (opts.subresource === 'status') {
      const { status: _status, ...rest } = incoming
      decoded.push(...state.schemas.unknownIn(t, rest))
    } else if (incoming.status !== undefined) decoded.push(...state.schemas.unknownIn(t, { status: incoming.status }))
  }
  if (opts.fieldValidation === 'Strict') state.schemas.refuseUnknown(t, incoming, decoded)
  if (incoming.metadata.name && incoming.metadata.name !== name) {
    throw badRequest(`the name of the object (${incoming.metadata.name}) does not match the name on the URL (${name})`)
  }
  if (rt.namespaced && incoming.metadata.namespace && incoming.metadata.namespace !== ns) {
    throw badRequest('the namespace of the provided object does not match the namespace sent on the request')
  }
  const sentRv = incoming.metadata.resourceVersion
  if (!sentRv && rt.crdName) {
    // Custom resources do not allow unconditional updates; the real server words this with the resource, not the kind.
    // The value is the resourceVersion the server parsed, a uint64 0.
    const cause = invalidField('metadata.resourceVersion', 0, 'must be specified for an update')
    throw new ApiError(422, 'Invalid', `${groupResource(rt)} "${name}" is invalid: ${formatCause(cause)}`, { name, group: rt.group, kind: rt.plural, causes: [cause] })
  }
  if (sentRv && sentRv !== prev.obj.metadata.resourceVersion) throw conflict(rt, name)

  const old = objectAt(prev, t)
  let next: KubeObject
  if (opts.subresource === 'status') {
    next = JSON.parse(jsonAt(prev, t)) as KubeObject
    if (incoming.status === undefined) delete next.status
    else next.status = incoming.status
    if (incoming.metadata.managedFields !== undefined) next.metadata.managedFields = incoming.metadata.managedFields
  } else {
    next = incoming
    if (rt.statusSubresource) {
      if (old.status === undefined) delete next.status
      else next.status = structuredClone(old.status)
    }
    const meta = next.metadata
    for (const k of ['uid', 'creationTimestamp', 'deletionTimestamp', 'deletionGracePeriodSeconds', 'generation'] as const) {
      if (old.metadata[k] === undefined) delete meta[k]
      else meta[k] = old.metadata[k] as never
    }
    delete meta.selfLink
    // A client that sends no managedFields keeps the recorded ones.
    if (meta.managedFields === undefined && old.metadata.managedFields !== undefined) meta.managedFields = structuredClone(old.metadata.managedFields)
    meta.name = name
    if (rt.namespaced) meta.namespace = ns
    else delete meta.namespace
    if (old.metadata.deletionTimestamp) {
      const before = new Set(old.metadata.finalizers ?? [])
      const added = (meta.finalizers ?? []).filter((f) => !before.has(f))
      if (added.length) {
        const cause = {
          reason: 'FieldValueForbidden',
          field: 'metadata.finalizers',
          message: `Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{${added.map((f) => JSON.stringify(f)).join(', ')}}`,
        }
        throw invalid(rt, name, [cause])
      }
    }
  }
  next.metadata.resourceVersion = old.metadata.resourceVersion as string
  prepareUpdate(rt, next, old, state.now)
  const warnings = state.schemas.enforce(t, next, old, opts.fieldValidation, decoded, opts.subresource)
  // Compared once defaults are in, as the real server decodes (and defaults) before comparing.
  if (opts.subresource !== 'status' && tracksGeneration(rt) && specChanged(old, next)) next.metadata.generation = (old.metadata.generation ?? 0) + 1
  trackFields(t, state.schemas.shapeOf(t), old, next, opts, state.now, opts.subresource)
  if (deepEqual(next, old)) return { stored: prev, warnings }

  const finalizing = next.metadata.deletionTimestamp && !(next.metadata.finalizers?.length)
  const stored = state.ledger.serialize(next)
  if (opts.dryRun) {
    next.metadata.resourceVersion = old.metadata.resourceVersion as string
    return { stored: { obj: next, json: JSON.stringify(next) }, warnings }
  }
  if (finalizing) return { stored: removeObject(state, rt, ns, name, next), warnings, deleted: true }
  if (isCrdResource(rt)) serveCrd(state.registry, state.history, state.ledger.resourceVersion + 1, next)
  state.ledger.put(rt, ns, name, stored, prev, 'MODIFIED')
  return { stored, warnings }
}

/** Namespaces come into existence on first use, so tests and the runner never need to create them. */
export function ensureNamespace(state: StoreState, ns: string): void {
  const rt = state.registry.byKey('namespaces') as ResourceType
  if (state.table.find(rt, '', ns)) return
  createObject(state, { rt, version: 'v1' }, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } }, undefined, {})
}

function checkNamespaceWritable(state: StoreState, rt: ResourceType, ns: string, name: string, dryRun: boolean | undefined): void {
  const nsRt = state.registry.byKey('namespaces') as ResourceType
  const existing = state.table.find(nsRt, '', ns)
  if (existing?.obj.metadata.deletionTimestamp) {
    throw forbidden(`${rt.group ? `${rt.plural}.${rt.group}` : rt.plural} "${name}" is forbidden: unable to create new content in namespace ${ns} because it is being terminated`)
  }
  if (!existing && !dryRun) ensureNamespace(state, ns)
}

/** The request body as an object of this kind at this version; 400 (or 422) as the real decoder answers. */
function checkBody(t: Target, body: unknown): KubeObject {
  if (!isObj(body)) throw badRequest('the request body must be a JSON object')
  const av = apiVersionOf(t.rt.group, t.version)
  if (t.rt.crdName) {
    // Custom resources are decoded without a Go type, so the body itself must say what it is.
    if (body.kind === undefined) {
      const json = JSON.stringify(body)
      throw badRequest(`the object provided is unrecognized (must be of type ${t.rt.kind}): Object 'Kind' is missing in '${json}' (${bodyHint(Buffer.from(json))})`)
    }
    if (body.apiVersion === undefined) throw badRequest(`the API version in the data () does not match the expected API version (${av})`)
    if (body.kind !== t.rt.kind && body.apiVersion === av) {
      const name = isObj(body.metadata) && typeof body.metadata.name === 'string' ? body.metadata.name : ''
      const cause = invalidField('kind', body.kind, `must be ${t.rt.kind}`)
      throw new ApiError(422, 'Invalid', `${String(body.kind)}.${t.rt.group} ${JSON.stringify(name)} is invalid: kind: ${cause.message}`, { name, group: t.rt.group, kind: String(body.kind), causes: [cause] })
    }
  }
  if (body.apiVersion !== undefined && body.apiVersion !== av) {
    throw badRequest(`the API version in the data (${String(body.apiVersion)}) does not match the expected API version (${av})`)
  }
  if (body.kind !== undefined && body.kind !== t.rt.kind) {
    throw badRequest(`the kind in the data (${String(body.kind)}) does not match the expected kind (${t.rt.kind})`)
  }
  if (body.metadata !== undefined && !isObj(body.metadata)) throw badRequest('metadata must be an object')
  body.apiVersion = av
  body.kind = t.rt.kind
  if (!body.metadata) body.metadata = {}
  return body as KubeObject
}
