/**
 * The apimachinery meta types a custom resource's OpenAPI document refers to (ObjectMeta,
 * ListMeta, Status, DeleteOptions and what they use), with the fields, types, formats and
 * list extensions kube-apiserver publishes. Kubernetes' own field documentation is not
 * repeated here, so `kubectl explain <kind>.metadata` lists the fields without their prose.
 * Pure.
 */
import { metaModel, ref, refTarget, type Flavour } from './openapi-crd.js'

type Schema = Record<string, unknown>

const str = { type: 'string' }
const int64 = { type: 'integer', format: 'int64' }
const int32 = { type: 'integer', format: 'int32' }
const bool = { type: 'boolean' }
const object = (properties: Schema, extra: Schema = {}): Schema => ({ type: 'object', ...extra, properties })

/** Every meta model a CRD group's document holds, by model name; `deleteOptionsKinds` are the served group-versions. */
export function metaSchemas(flavour: Flavour, deleteOptionsKinds: { group: string; version: string }[]): Record<string, Schema> {
  const v3 = flavour === 'v3'
  // v3 spells out the zero defaults of required-by-Go values; v2 publishes no defaults.
  const dflt = (value: unknown): Schema => (v3 ? { default: value } : {})
  const item = (model: string): Schema => (v3 ? { default: {}, ...ref(flavour, metaModel(model)) } : { $ref: refTarget(flavour, metaModel(model)) })
  const strMap = { type: 'object', additionalProperties: { type: 'string', ...dflt('') } }
  const time = ref(flavour, metaModel('Time'))
  const schemas: Record<string, Schema> = {
    DeleteOptions: object({
      apiVersion: str,
      dryRun: { type: 'array', items: { type: 'string', ...dflt('') }, 'x-kubernetes-list-type': 'atomic' },
      gracePeriodSeconds: int64,
      ignoreStoreReadErrorWithClusterBreakingPotential: bool,
      kind: str,
      orphanDependents: bool,
      preconditions: ref(flavour, metaModel('Preconditions')),
      propagationPolicy: str,
    }, { 'x-kubernetes-group-version-kind': deleteOptionsKinds.map(({ group, version }) => ({ group, kind: 'DeleteOptions', version })) }),
    FieldsV1: { type: 'object' },
    ListMeta: object({ continue: str, remainingItemCount: int64, resourceVersion: str, selfLink: str }),
    ManagedFieldsEntry: object({
      apiVersion: str, fieldsType: str, fieldsV1: ref(flavour, metaModel('FieldsV1')), manager: str, operation: str, subresource: str, time,
    }),
    ObjectMeta: object({
      annotations: strMap,
      creationTimestamp: time,
      deletionGracePeriodSeconds: int64,
      deletionTimestamp: time,
      finalizers: { type: 'array', items: { type: 'string', ...dflt('') }, 'x-kubernetes-list-type': 'set', 'x-kubernetes-patch-strategy': 'merge' },
      generateName: str,
      generation: int64,
      labels: strMap,
      managedFields: { type: 'array', items: item('ManagedFieldsEntry'), 'x-kubernetes-list-type': 'atomic' },
      name: str,
      namespace: str,
      ownerReferences: {
        type: 'array', items: item('OwnerReference'),
        'x-kubernetes-list-map-keys': ['uid'], 'x-kubernetes-list-type': 'map', 'x-kubernetes-patch-merge-key': 'uid', 'x-kubernetes-patch-strategy': 'merge',
      },
      resourceVersion: str,
      selfLink: str,
      uid: str,
    }),
    OwnerReference: object({
      apiVersion: { ...str, ...dflt('') }, blockOwnerDeletion: bool, controller: bool, kind: { ...str, ...dflt('') }, name: { ...str, ...dflt('') }, uid: { ...str, ...dflt('') },
    }, { required: ['apiVersion', 'kind', 'name', 'uid'], 'x-kubernetes-map-type': 'atomic' }),
    Patch: { type: 'object' },
    Preconditions: object({ resourceVersion: str, uid: str }),
    Status: object({
      apiVersion: str,
      code: int32,
      details: { ...ref(flavour, metaModel('StatusDetails')), 'x-kubernetes-list-type': 'atomic' },
      kind: str,
      message: str,
      metadata: v3 ? { default: {}, ...ref(flavour, metaModel('ListMeta')) } : ref(flavour, metaModel('ListMeta')),
      reason: str,
      status: str,
    }, { 'x-kubernetes-group-version-kind': [{ group: '', kind: 'Status', version: 'v1' }] }),
    StatusCause: object({ field: str, message: str, reason: str }),
    StatusDetails: object({
      causes: { type: 'array', items: item('StatusCause'), 'x-kubernetes-list-type': 'atomic' },
      group: str, kind: str, name: str, retryAfterSeconds: int32, uid: str,
    }),
    Time: { type: 'string', format: 'date-time' },
  }
  return Object.fromEntries(Object.entries(schemas).map(([name, s]) => [metaModel(name), s]))
}
