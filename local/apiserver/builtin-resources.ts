import { ageOf, humanDuration } from './human-duration.js'
import type { FieldSelectorRefusal, ResourceType, TableColumn } from './resource-type.js'
import { nameColumn } from './table.js'
import type { KubeObject } from './types.js'

type Obj = Record<string, unknown>
const at = (o: unknown, ...path: string[]): unknown => {
  let v = o
  for (const p of path) v = v && typeof v === 'object' ? (v as Obj)[p] : undefined
  return v
}
const num = (v: unknown): number => (typeof v === 'number' ? v : 0)
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : [])
const count = (v: unknown): number => (v && typeof v === 'object' ? Object.keys(v).length : 0)

function col(name: string, type: string, cell: TableColumn['cell'], priority = 0, format = ''): TableColumn {
  return { definition: { name, type, format, description: name, priority }, cell }
}

/** The AGE column of every built-in table (last, unless a kind places it among its columns). */
export const ageColumn: TableColumn = col('Age', 'string', (o, now) => ageOf(o.metadata.creationTimestamp, now))

function conditionTrue(o: KubeObject, type: string): boolean {
  return arr(at(o, 'status', 'conditions')).some((c) => at(c, 'type') === type && at(c, 'status') === 'True')
}

function jobStatus(o: KubeObject): string {
  if (conditionTrue(o, 'Complete')) return 'Complete'
  if (conditionTrue(o, 'Failed')) return 'Failed'
  if (conditionTrue(o, 'FailureTarget')) return 'FailureTarget'
  if (conditionTrue(o, 'SuccessCriteriaMet')) return 'SuccessCriteriaMet'
  if (o.metadata.deletionTimestamp) return 'Terminating'
  if (conditionTrue(o, 'Suspended') || at(o, 'spec', 'suspend') === true) return 'Suspended'
  return 'Running'
}

function jobDuration(o: KubeObject, now: number): string {
  const start = at(o, 'status', 'startTime')
  if (typeof start !== 'string') return ''
  const end = at(o, 'status', 'completionTime')
  return humanDuration((typeof end === 'string' ? Date.parse(end) : now) - Date.parse(start))
}

function podStatus(o: KubeObject): string {
  if (o.metadata.deletionTimestamp) return 'Terminating'
  const reason = at(o, 'status', 'reason')
  if (typeof reason === 'string' && reason) return reason
  for (const cs of arr(at(o, 'status', 'containerStatuses'))) {
    const waiting = at(cs, 'state', 'waiting', 'reason')
    if (typeof waiting === 'string') return waiting
    const terminated = at(cs, 'state', 'terminated', 'reason')
    if (typeof terminated === 'string') return terminated
  }
  const phase = at(o, 'status', 'phase')
  return typeof phase === 'string' ? phase : 'Pending'
}

function servicePorts(o: KubeObject): string {
  const ports = arr(at(o, 'spec', 'ports')).map((p) => `${String(at(p, 'port') ?? '')}/${String(at(p, 'protocol') ?? 'TCP')}`)
  return ports.length ? ports.join(',') : '<none>'
}

/** `k=v,k2=v2` with keys sorted, as kubectl prints label maps; `<none>` when empty. */
function labelMap(m: unknown): string {
  if (!m || typeof m !== 'object') return '<none>'
  const entries = Object.keys(m as Obj).sort().map((k) => `${k}=${String((m as Obj)[k])}`)
  return entries.length ? entries.join(',') : '<none>'
}

/** A label selector as kubectl prints it: match labels, then expressions. */
function selectorText(sel: unknown): string {
  if (!sel || typeof sel !== 'object') return '<none>'
  const parts: string[] = []
  const labels = at(sel, 'matchLabels')
  if (labels && typeof labels === 'object') for (const k of Object.keys(labels as Obj).sort()) parts.push(`${k}=${String((labels as Obj)[k])}`)
  for (const e of arr(at(sel, 'matchExpressions'))) {
    const op = String(at(e, 'operator') ?? '')
    const values = arr(at(e, 'values')).map(String).sort().join(',')
    if (op === 'In') parts.push(`${String(at(e, 'key'))} in (${values})`)
    else if (op === 'NotIn') parts.push(`${String(at(e, 'key'))} notin (${values})`)
    else if (op === 'Exists') parts.push(String(at(e, 'key')))
    else if (op === 'DoesNotExist') parts.push(`!${String(at(e, 'key'))}`)
  }
  return parts.length ? parts.join(',') : '<none>'
}

const containersOf = (spec: unknown) => arr(at(spec, 'containers'))
const names = (spec: unknown) => containersOf(spec).map((c) => String(at(c, 'name') ?? '')).join(',')
const images = (spec: unknown) => containersOf(spec).map((c) => String(at(c, 'image') ?? '')).join(',')
/** The wide Containers and Images columns of a kind whose pod template sits at `path`. */
const templateColumns = (...path: string[]): TableColumn[] => [
  col('Containers', 'string', (o) => names(at(o, ...path)), 1),
  col('Images', 'string', (o) => images(at(o, ...path)), 1),
]

const ACCESS_MODES: Record<string, string> = { ReadWriteOnce: 'RWO', ReadOnlyMany: 'ROX', ReadWriteMany: 'RWX', ReadWriteOncePod: 'RWOP' }

function subjects(o: KubeObject, kind: string): string {
  return arr(o.subjects).filter((s) => at(s, 'kind') === kind)
    .map((s) => (kind === 'ServiceAccount' ? `${String(at(s, 'namespace') ?? '')}/${String(at(s, 'name') ?? '')}` : String(at(s, 'name') ?? ''))).join(', ')
}

const eventAge = (t: unknown, now: number) => (typeof t === 'string' && t ? ageOf(t, now) : '<unknown>')

const eventColumns: TableColumn[] = [
  // As kubectl prints events: first seen falls back to eventTime, last seen to first seen, and a missing time is <unknown>.
  col('Last Seen', 'string', (o, now) => eventAge(at(o, 'series', 'lastObservedTime') ?? o.lastTimestamp ?? o.firstTimestamp ?? o.eventTime, now)),
  col('Type', 'string', (o) => o.type ?? ''),
  col('Reason', 'string', (o) => o.reason ?? ''),
  col('Object', 'string', (o) => `${String(at(o, 'involvedObject', 'kind') ?? '').toLowerCase()}/${String(at(o, 'involvedObject', 'name') ?? '')}`),
  col('Subobject', 'string', (o) => String(at(o, 'involvedObject', 'fieldPath') ?? ''), 1),
  col('Source', 'string', (o) => [at(o, 'source', 'component'), at(o, 'source', 'host')].filter((x) => typeof x === 'string' && x).join(', ') || String(o.reportingComponent ?? ''), 1),
  col('Message', 'string', (o) => o.message ?? ''),
  col('First Seen', 'string', (o, now) => eventAge(o.firstTimestamp ?? o.eventTime, now), 1),
  col('Count', 'string', (o) => num(at(o, 'series', 'count')) || num(o.count) || 1, 1),
  { ...nameColumn, definition: { ...nameColumn.definition, priority: 1 } },
]

const crdColumns: TableColumn[] = [col('Created At', 'date', (o) => o.metadata.creationTimestamp ?? '')]
const roleColumns: TableColumn[] = crdColumns
const bindingColumns: TableColumn[] = [
  col('Role', 'string', (o) => `${String(at(o, 'roleRef', 'kind') ?? '')}/${String(at(o, 'roleRef', 'name') ?? '')}`),
  ageColumn,
  col('Users', 'string', (o) => subjects(o, 'User'), 1),
  col('Groups', 'string', (o) => subjects(o, 'Group'), 1),
  col('ServiceAccounts', 'string', (o) => subjects(o, 'ServiceAccount'), 1),
]

/** The verbs discovery lists for every served resource. */
export const standardVerbs = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch']

interface BuiltinSpec {
  group: string
  version: string
  plural: string
  kind: string
  namespaced?: boolean
  shortNames?: string[]
  categories?: string[]
  status?: boolean
  extra?: string[]
  returnDeleted?: boolean
  columns?: TableColumn[]
  /** Objects carry metadata.generation. */
  generation?: boolean
  /** Extra field selectors, and how others are refused (default: name and namespace only, `known`). */
  fields?: string[]
  refusal?: FieldSelectorRefusal
  /** Top-level fields besides apiVersion, kind and metadata (default spec and status). */
  top?: string[]
}

function builtin(s: BuiltinSpec): ResourceType {
  const own = s.columns ?? []
  const columns = own.includes(ageColumn) || own === roleColumns ? own : [...own, ageColumn]
  return {
    group: s.group,
    versions: [s.version],
    storageVersion: s.version,
    plural: s.plural,
    singular: s.kind.toLowerCase(),
    kind: s.kind,
    listKind: `${s.kind}List`,
    namespaced: s.namespaced ?? true,
    shortNames: s.shortNames ?? [],
    categories: s.categories ?? [],
    statusSubresource: s.status ?? false,
    extraSubresources: s.extra ?? [],
    returnDeletedObject: s.returnDeleted ?? false,
    columns: () => columns,
    generation: s.generation ?? false,
    topLevelFields: s.top ?? ['spec', 'status'],
    fieldSelectors: { fields: s.fields ?? [], refusal: s.refusal ?? 'known' },
  }
}

/** The built-in kinds served at start, schema-less apart from basic metadata checks. */
export function builtinResources(): ResourceType[] {
  return [
    builtin({ group: '', version: 'v1', plural: 'namespaces', kind: 'Namespace', namespaced: false, shortNames: ['ns'], status: true, returnDeleted: true,
      fields: ['status.phase'], refusal: 'label',
      columns: [col('Status', 'string', (o) => at(o, 'status', 'phase') ?? 'Active')] }),
    builtin({ group: '', version: 'v1', plural: 'configmaps', kind: 'ConfigMap', shortNames: ['cm'], top: ['data', 'binaryData', 'immutable'],
      columns: [col('Data', 'string', (o) => count(o.data) + count(o.binaryData))] }),
    builtin({ group: '', version: 'v1', plural: 'secrets', kind: 'Secret', fields: ['type'], refusal: 'label', top: ['data', 'stringData', 'type', 'immutable'],
      columns: [col('Type', 'string', (o) => o.type ?? 'Opaque'), col('Data', 'string', (o) => count(o.data) + count(o.stringData))] }),
    builtin({ group: '', version: 'v1', plural: 'serviceaccounts', kind: 'ServiceAccount', shortNames: ['sa'], top: ['secrets', 'imagePullSecrets', 'automountServiceAccountToken'],
      columns: [col('Secrets', 'string', (o) => arr(o.secrets).length)] }),
    builtin({ group: '', version: 'v1', plural: 'services', kind: 'Service', shortNames: ['svc'], categories: ['all'], status: true, returnDeleted: true,
      fields: ['spec.clusterIP', 'spec.type'], refusal: 'label',
      columns: [
        col('Type', 'string', (o) => at(o, 'spec', 'type') ?? 'ClusterIP'),
        col('Cluster-IP', 'string', (o) => at(o, 'spec', 'clusterIP') ?? '<none>'),
        col('External-IP', 'string', (o) => (arr(at(o, 'spec', 'externalIPs')).join(',') || '<none>')),
        col('Port(s)', 'string', servicePorts),
        ageColumn,
        col('Selector', 'string', (o) => labelMap(at(o, 'spec', 'selector')), 1),
      ] }),
    builtin({ group: '', version: 'v1', plural: 'pods', kind: 'Pod', shortNames: ['po'], categories: ['all'], status: true, extra: ['log'], returnDeleted: true,
      fields: ['spec.nodeName', 'spec.restartPolicy', 'spec.schedulerName', 'spec.serviceAccountName', 'spec.hostNetwork', 'status.phase', 'status.podIP', 'status.nominatedNodeName'],
      refusal: 'label',
      columns: [
        col('Ready', 'string', (o) => `${arr(at(o, 'status', 'containerStatuses')).filter((c) => at(c, 'ready') === true).length}/${arr(at(o, 'spec', 'containers')).length}`),
        col('Status', 'string', podStatus),
        col('Restarts', 'string', (o) => String(arr(at(o, 'status', 'containerStatuses')).reduce<number>((n, c) => n + num(at(c, 'restartCount')), 0))),
        ageColumn,
        col('IP', 'string', (o) => at(o, 'status', 'podIP') ?? '<none>', 1),
        col('Node', 'string', (o) => at(o, 'spec', 'nodeName') ?? '<none>', 1),
        col('Nominated Node', 'string', (o) => at(o, 'status', 'nominatedNodeName') ?? '<none>', 1),
        col('Readiness Gates', 'string', (o) => {
          const gates = arr(at(o, 'spec', 'readinessGates'))
          if (gates.length === 0) return '<none>'
          const ready = gates.filter((g) => conditionTrue(o, String(at(g, 'conditionType')))).length
          return `${ready}/${gates.length}`
        }, 1),
      ] }),
    { ...builtin({ group: '', version: 'v1', plural: 'events', kind: 'Event', shortNames: ['ev'], refusal: 'label',
      top: ['involvedObject', 'reason', 'message', 'source', 'firstTimestamp', 'lastTimestamp', 'count', 'type', 'eventTime', 'series', 'action', 'related', 'reportingComponent', 'reportingInstance'],
      fields: ['involvedObject.kind', 'involvedObject.namespace', 'involvedObject.name', 'involvedObject.uid', 'involvedObject.apiVersion', 'involvedObject.resourceVersion', 'involvedObject.fieldPath', 'reason', 'reportingComponent', 'source', 'type'] }), ownNameColumn: true, columns: () => eventColumns },
    // Stored only (nothing provisions storage locally): purko's examples ship PVCs for agent memory.
    builtin({ group: '', version: 'v1', plural: 'persistentvolumeclaims', kind: 'PersistentVolumeClaim', shortNames: ['pvc'], status: true,
      columns: [
        col('Status', 'string', (o) => at(o, 'status', 'phase') ?? 'Pending'),
        col('Volume', 'string', (o) => String(at(o, 'spec', 'volumeName') ?? '')),
        col('Capacity', 'string', (o) => String(at(o, 'status', 'capacity', 'storage') ?? '')),
        col('Access Modes', 'string', (o) => arr(at(o, 'status', 'accessModes')).map((m) => ACCESS_MODES[String(m)] ?? String(m)).join(',')),
        col('StorageClass', 'string', (o) => String(at(o, 'spec', 'storageClassName') ?? '')),
        col('VolumeAttributesClass', 'string', (o) => String(at(o, 'spec', 'volumeAttributesClassName') ?? '<unset>')),
        ageColumn,
        col('VolumeMode', 'string', (o) => String(at(o, 'spec', 'volumeMode') ?? ''), 1),
      ] }),
    builtin({ group: 'batch', version: 'v1', plural: 'jobs', kind: 'Job', categories: ['all'], status: true, generation: true, fields: ['status.successful'], refusal: 'kind',
      columns: [
        col('Status', 'string', jobStatus),
        col('Completions', 'string', (o) => `${num(at(o, 'status', 'succeeded'))}/${num(at(o, 'spec', 'completions') ?? 1)}`),
        col('Duration', 'string', jobDuration),
        ageColumn,
        ...templateColumns('spec', 'template', 'spec'),
        col('Selector', 'string', (o) => selectorText(at(o, 'spec', 'selector')), 1),
      ] }),
    builtin({ group: 'batch', version: 'v1', plural: 'cronjobs', kind: 'CronJob', shortNames: ['cj'], categories: ['all'], status: true, generation: true,
      columns: [
        col('Schedule', 'string', (o) => at(o, 'spec', 'schedule') ?? ''),
        col('Timezone', 'string', (o) => at(o, 'spec', 'timeZone') ?? '<none>'),
        // The real server prints this boolean column as the strings True and False.
        col('Suspend', 'boolean', (o) => (at(o, 'spec', 'suspend') === true ? 'True' : 'False')),
        col('Active', 'integer', (o) => arr(at(o, 'status', 'active')).length),
        col('Last Schedule', 'string', (o, now) => (at(o, 'status', 'lastScheduleTime') ? ageOf(at(o, 'status', 'lastScheduleTime'), now) : '<none>')),
        ageColumn,
        ...templateColumns('spec', 'jobTemplate', 'spec', 'template', 'spec'),
        col('Selector', 'string', (o) => selectorText(at(o, 'spec', 'jobTemplate', 'spec', 'selector')), 1),
      ] }),
    builtin({ group: 'apps', version: 'v1', plural: 'deployments', kind: 'Deployment', shortNames: ['deploy'], categories: ['all'], status: true, generation: true,
      columns: [
        col('Ready', 'string', (o) => `${num(at(o, 'status', 'readyReplicas'))}/${num(at(o, 'spec', 'replicas') ?? 1)}`),
        col('Up-to-date', 'string', (o) => num(at(o, 'status', 'updatedReplicas'))),
        col('Available', 'string', (o) => num(at(o, 'status', 'availableReplicas'))),
        ageColumn,
        ...templateColumns('spec', 'template', 'spec'),
        col('Selector', 'string', (o) => selectorText(at(o, 'spec', 'selector')), 1),
      ] }),
    // Written by the workload controller emulation (local/workloads/) for the Deployments it runs.
    builtin({ group: 'apps', version: 'v1', plural: 'replicasets', kind: 'ReplicaSet', shortNames: ['rs'], categories: ['all'], status: true, generation: true,
      columns: [
        col('Desired', 'integer', (o) => num(at(o, 'spec', 'replicas') ?? 1)),
        col('Current', 'integer', (o) => num(at(o, 'status', 'replicas'))),
        col('Ready', 'integer', (o) => num(at(o, 'status', 'readyReplicas'))),
        ageColumn,
        ...templateColumns('spec', 'template', 'spec'),
        col('Selector', 'string', (o) => selectorText(at(o, 'spec', 'selector')), 1),
      ] }),
    builtin({ group: 'apps', version: 'v1', plural: 'statefulsets', kind: 'StatefulSet', shortNames: ['sts'], categories: ['all'], status: true, generation: true,
      columns: [col('Ready', 'string', (o) => `${num(at(o, 'status', 'readyReplicas'))}/${num(at(o, 'spec', 'replicas') ?? 1)}`), ageColumn, ...templateColumns('spec', 'template', 'spec')] }),
    builtin({ group: 'apps', version: 'v1', plural: 'daemonsets', kind: 'DaemonSet', shortNames: ['ds'], categories: ['all'], status: true, generation: true,
      columns: [
        col('Desired', 'integer', (o) => num(at(o, 'status', 'desiredNumberScheduled'))),
        col('Current', 'integer', (o) => num(at(o, 'status', 'currentNumberScheduled'))),
        col('Ready', 'integer', (o) => num(at(o, 'status', 'numberReady'))),
        col('Up-to-date', 'integer', (o) => num(at(o, 'status', 'updatedNumberScheduled'))),
        col('Available', 'integer', (o) => num(at(o, 'status', 'numberAvailable'))),
        col('Node Selector', 'string', (o) => labelMap(at(o, 'spec', 'template', 'spec', 'nodeSelector'))),
        ageColumn,
        ...templateColumns('spec', 'template', 'spec'),
        col('Selector', 'string', (o) => selectorText(at(o, 'spec', 'selector')), 1),
      ] }),
    builtin({ group: 'rbac.authorization.k8s.io', version: 'v1', plural: 'roles', kind: 'Role', top: ['rules'], columns: roleColumns }),
    builtin({ group: 'rbac.authorization.k8s.io', version: 'v1', plural: 'rolebindings', kind: 'RoleBinding', top: ['subjects', 'roleRef'], columns: bindingColumns }),
    builtin({ group: 'rbac.authorization.k8s.io', version: 'v1', plural: 'clusterroles', kind: 'ClusterRole', namespaced: false, top: ['rules', 'aggregationRule'], columns: roleColumns }),
    builtin({ group: 'rbac.authorization.k8s.io', version: 'v1', plural: 'clusterrolebindings', kind: 'ClusterRoleBinding', namespaced: false, top: ['subjects', 'roleRef'], columns: bindingColumns }),
    {
      ...builtin({ group: 'apiextensions.k8s.io', version: 'v1', plural: 'customresourcedefinitions', kind: 'CustomResourceDefinition', namespaced: false,
        shortNames: ['crd', 'crds'], categories: ['api-extensions'], status: true, returnDeleted: true, generation: true }),
      columns: () => crdColumns,
    },
  ]
}
