// What each built-in kind's strategy does to an object on its way into the store, as on the
// real server: defaults while decoding (owned by the writer), then what create and update set
// on top (owned by no manager): initial status, generated selectors, derived fields.
import type { ResourceRegistry } from '../resource-registry.js'
import type { ResourceType } from '../resource-type.js'
import type { KubeObject } from '../types.js'
import { defaultCrd, isCrdResource, prepareCrdCreate, prepareCrdUpdate } from './crd-registration.js'
import { isObj, type Obj } from './store-types.js'

/** The defaults a kind gets while it is decoded, which its creator then owns. */
export function decodeDefaults(rt: ResourceType, obj: KubeObject): void {
  const core = rt.group === ''
  if (core && rt.kind === 'Namespace') {
    obj.metadata.labels = { ...obj.metadata.labels, 'kubernetes.io/metadata.name': obj.metadata.name as string }
  } else if (core && rt.kind === 'Secret') {
    if (!obj.type) obj.type = 'Opaque'
    foldStringData(obj)
  } else if (core && rt.kind === 'PersistentVolumeClaim' && isObj(obj.spec)) {
    obj.spec.volumeMode ??= 'Filesystem'
  } else if (rt.group === 'batch' && rt.kind === 'Job') {
    defaultJobSpec(obj)
  } else if (isCrdResource(rt)) {
    defaultCrd(obj)
  }
}

/** What a kind's strategy sets on create (after field tracking): status, generated selectors, finalizers. */
export function prepareCreate(registry: ResourceRegistry, rt: ResourceType, obj: KubeObject, now: () => Date): void {
  const core = rt.group === ''
  if (core && rt.kind === 'Namespace') {
    obj.spec = { finalizers: ['kubernetes'], ...(isObj(obj.spec) ? obj.spec : {}) }
    obj.status = { phase: 'Active' }
  } else if (core && rt.kind === 'Pod') {
    obj.status = { phase: 'Pending' }
  } else if (core && rt.kind === 'Event') {
    // Go's zero values, which the real server writes out (and no manager owns).
    obj.eventTime ??= null
    obj.firstTimestamp ??= null
    obj.lastTimestamp ??= null
    obj.reportingComponent ??= ''
    obj.reportingInstance ??= ''
  } else if (rt.group === 'batch' && rt.kind === 'Job') {
    selectJobPods(obj)
    obj.status = {}
  } else if (isCrdResource(rt)) {
    prepareCrdCreate(registry, rt, obj, now)
  }
}

/** What a kind's strategy does to an update before it is validated. */
export function prepareUpdate(rt: ResourceType, next: KubeObject, old: KubeObject, now: () => Date): void {
  if (isCrdResource(rt)) prepareCrdUpdate(rt, next, old, now)
  if (rt.group === '' && rt.kind === 'Namespace') {
    next.metadata.labels = { ...next.metadata.labels, 'kubernetes.io/metadata.name': next.metadata.name as string }
  }
  if (rt.group === '' && rt.kind === 'Secret') foldStringData(next)
}

/** The defaults the Job API fills when decoding a Job. */
function defaultJobSpec(job: KubeObject): void {
  const spec = (isObj(job.spec) ? job.spec : (job.spec = {})) as Obj
  spec.parallelism ??= 1
  spec.completions ??= 1
  spec.backoffLimit ??= 6
  spec.completionMode ??= 'NonIndexed'
  spec.suspend ??= false
  spec.manualSelector ??= false
  if (spec.podFailurePolicy === undefined) spec.podReplacementPolicy ??= 'TerminatingOrFailed'
}

/** The selector and pod-template labels the Job API adds on create, which the Job runner relies on. */
function selectJobPods(job: KubeObject): void {
  const spec = (isObj(job.spec) ? job.spec : (job.spec = {})) as Obj
  const uid = job.metadata.uid as string
  const name = job.metadata.name as string
  if (!spec.manualSelector) {
    spec.selector = { matchLabels: { 'batch.kubernetes.io/controller-uid': uid } }
    const template = (isObj(spec.template) ? spec.template : (spec.template = {})) as Obj
    const templateMeta = (isObj(template.metadata) ? template.metadata : (template.metadata = {})) as Obj
    templateMeta.labels = {
      ...(isObj(templateMeta.labels) ? templateMeta.labels : {}),
      'batch.kubernetes.io/controller-uid': uid,
      'batch.kubernetes.io/job-name': name,
      'controller-uid': uid,
      'job-name': name,
    }
  }
  job.metadata.labels = { 'batch.kubernetes.io/controller-uid': uid, 'batch.kubernetes.io/job-name': name, 'controller-uid': uid, 'job-name': name, ...job.metadata.labels }
}

/** A Secret's write-only stringData, folded into data (base64) as the real server does. */
function foldStringData(secret: KubeObject): void {
  if (!isObj(secret.stringData)) return
  const data = isObj(secret.data) ? { ...secret.data } : {}
  for (const [k, v] of Object.entries(secret.stringData)) data[k] = Buffer.from(String(v), 'utf8').toString('base64')
  delete secret.stringData
  if (Object.keys(data).length) secret.data = data
}
