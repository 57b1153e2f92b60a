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

/** The AGE column every built-in table ends with. */
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

const eventColumns: TableColumn[] = [
  col('Last Seen', 'string', (o, now) => ageOf(o.lastTimestamp ?? o.eventTime ?? o.metadata.creationTimestamp, now)),
  col('Type', 'string', (o) => o.type ?? ''),
  col('Reason', 'string', (o) => o.reason ?? ''),
  col('Object', 'string', (o) => `${String(at(o, 'involvedObject', 'kind') ?? '').toLowerCase()}/${String(at(o, 'involvedObject', 'name') ?? '')}`),
  col('Message', 'string', (o) => o.message ?? ''),
  { ...nameColumn, definition: { ...nameColumn.definition, priority: 1 } },
]

const crdColumns: TableColumn[] = [col('Created At', 'date', (o) => o.metadata.creationTimestamp ?? '')]

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
}

function builtin(s: BuiltinSpec): ResourceType {
  const columns = [...(s.columns ?? []), ageColumn]
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
    fieldSelectors: { fields: s.fields ?? [], refusal: s.refusal ?? 'known' },
  }
}

/** The built-in kinds served at start, schema-less apart from basic metadata checks. */
export function builtinResources(): ResourceType[] {
  return [
    builtin({ group: '', version: 'v1', plural: 'namespaces', kind: 'Namespace', namespaced: false, shortNames: ['ns'], status: true, returnDeleted: true,
      fields: ['status.phase'], refusal: 'label',
      columns: [col('Status', 'string', (o) => at(o, 'status', 'phase') ?? 'Active')] }),
    builtin({ group: '', version: 'v1', plural: 'configmaps', kind: 'ConfigMap', shortNames: ['cm'],
      columns: [col('Data', 'integer', (o) => count(o.data) + count(o.binaryData))] }),
    builtin({ group: '', version: 'v1', plural: 'secrets', kind: 'Secret', fields: ['type'], refusal: 'label',
      columns: [col('Type', 'string', (o) => o.type ?? 'Opaque'), col('Data', 'integer', (o) => count(o.data) + count(o.stringData))] }),
    builtin({ group: '', version: 'v1', plural: 'serviceaccounts', kind: 'ServiceAccount', shortNames: ['sa'],
      columns: [col('Secrets', 'integer', (o) => arr(o.secrets).length)] }),
    builtin({ group: '', version: 'v1', plural: 'services', kind: 'Service', shortNames: ['svc'], categories: ['all'], status: true, returnDeleted: true,
      fields: ['spec.clusterIP', 'spec.type'], refusal: 'label',
      columns: [
        col('Type', 'string', (o) => at(o, 'spec', 'type') ?? 'ClusterIP'),
        col('Cluster-IP', 'string', (o) => at(o, 'spec', 'clusterIP') ?? '<none>'),
        col('External-IP', 'string', (o) => (arr(at(o, 'spec', 'externalIPs')).join(',') || '<none>')),
        col('Port(s)', 'string', servicePorts),
      ] }),
    builtin({ group: '', version: 'v1', plural: 'pods', kind: 'Pod', shortNames: ['po'], categories: ['all'], status: true, extra: ['log'], returnDeleted: true,
      fields: ['spec.nodeName', 'spec.restartPolicy', 'spec.schedulerName', 'spec.serviceAccountName', 'spec.hostNetwork', 'status.phase', 'status.podIP', 'status.nominatedNodeName'],
      refusal: 'label',
      columns: [
        col('Ready', 'string', (o) => `${arr(at(o, 'status', 'containerStatuses')).filter((c) => at(c, 'ready') === true).length}/${arr(at(o, 'spec', 'containers')).length}`),
        col('Status', 'string', podStatus),
        col('Restarts', 'string', (o) => String(arr(at(o, 'status', 'containerStatuses')).reduce<number>((n, c) => n + num(at(c, 'restartCount')), 0))),
        col('IP', 'string', (o) => at(o, 'status', 'podIP') ?? '<none>', 1),
        col('Node', 'string', (o) => at(o, 'spec', 'nodeName') ?? '<none>', 1),
      ] }),
    { ...builtin({ group: '', version: 'v1', plural: 'events', kind: 'Event', shortNames: ['ev'], refusal: 'label',
      fields: ['involvedObject.kind', 'involvedObject.namespace', 'involvedObject.name', 'involvedObject.uid', 'involvedObject.apiVersion', 'involvedObject.resourceVersion', 'involvedObject.fieldPath', 'reason', 'reportingComponent', 'source', 'type'] }), ownNameColumn: true, columns: () => eventColumns },
    // Stored only (nothing provisions storage locally): purko's examples ship PVCs for agent memory.
    builtin({ group: '', version: 'v1', plural: 'persistentvolumeclaims', kind: 'PersistentVolumeClaim', shortNames: ['pvc'], status: true,
      columns: [
        col('Status', 'string', (o) => at(o, 'status', 'phase') ?? 'Pending'),
        col('Capacity', 'string', (o) => String(at(o, 'spec', 'resources', 'requests', 'storage') ?? '')),
      ] }),
    builtin({ group: 'batch', version: 'v1', plural: 'jobs', kind: 'Job', categories: ['all'], status: true, generation: true, fields: ['status.successful'], refusal: 'kind',
      columns: [
        col('Status', 'string', jobStatus),
        col('Completions', 'string', (o) => `${num(at(o, 'status', 'succeeded'))}/${num(at(o, 'spec', 'completions') ?? 1)}`),
        col('Duration', 'string', jobDuration),
      ] }),
    builtin({ group: 'batch', version: 'v1', plural: 'cronjobs', kind: 'CronJob', shortNames: ['cj'], categories: ['all'], status: true, generation: true,
      columns: [
        col('Schedule', 'string', (o) => at(o, 'spec', 'schedule') ?? ''),
        col('Suspend', 'boolean', (o) => at(o, 'spec', 'suspend') === true),
        col('Active', 'integer', (o) => arr(at(o, 'status', 'active')).length),
        col('Last Schedule', 'string', (o, now) => (at(o, 'status', 'lastScheduleTime') ? ageOf(at(o, 'status', 'lastScheduleTime'), now) : '<none>')),
      ] }),
    builtin({ group: 'apps', version: 'v1', plural: 'deployments', kind: 'Deployment', shortNames: ['deploy'], categories: ['all'], status: true, generation: true,
      columns: [
        col('Ready', 'string', (o) => `${num(at(o, 'status', 'readyReplicas'))}/${num(at(o, 'spec', 'replicas') ?? 1)}`),
        col('Up-to-date', 'integer', (o) => num(at(o, 'status', 'updatedReplicas'))),
        col('Available', 'integer', (o) => num(at(o, 'status', 'availableReplicas'))),
      ] }),
    builtin({ group: 'apps', version: 'v1', plural: 'statefulsets', kind: 'StatefulSet', shortNames: ['sts'], categories: ['all'], status: true, generation: true,
      columns: [col('Ready', 'string', (o) => `${num(at(o, 'status', 'readyReplicas'))}/${num(at(o, 'spec', 'replicas') ?? 1)}`)] }),
    builtin({ group: 'apps', version: 'v1', plural: 'daemonsets', kind: 'DaemonSet', shortNames: ['ds'], categories: ['all'], status: true, generation: true,
      columns: [
        col('Desired', 'integer', (o) => num(at(o, 'status', 'desiredNumberScheduled'))),
        col('Current', 'integer', (o) => num(at(o, 'status', 'currentNumberScheduled'))),
        col('Ready', 'integer', (o) => num(at(o, 'status', 'numberReady'))),
      ] }),
    builtin({ group: 'rbac.authorization.k8s.io', version: 'v1', plural: 'roles', kind: 'Role' }),
    builtin({ group: 'rbac.authorization.k8s.io', version: 'v1', plural: 'rolebindings', kind: 'RoleBinding',
      columns: [col('Role', 'string', (o) => `${String(at(o, 'roleRef', 'kind') ?? '')}/${String(at(o, 'roleRef', 'name') ?? '')}`)] }),
    builtin({ group: 'rbac.authorization.k8s.io', version: 'v1', plural: 'clusterroles', kind: 'ClusterRole', namespaced: false }),
    builtin({ group: 'rbac.authorization.k8s.io', version: 'v1', plural: 'clusterrolebindings', kind: 'ClusterRoleBinding', namespaced: false,
      columns: [col('Role', 'string', (o) => `${String(at(o, 'roleRef', 'kind') ?? '')}/${String(at(o, 'roleRef', 'name') ?? '')}`)] }),
    {
      ...builtin({ group: 'apiextensions.k8s.io', version: 'v1', plural: 'customresourcedefinitions', kind: 'CustomResourceDefinition', namespaced: false,
        shortNames: ['crd', 'crds'], categories: ['api-extensions'], status: true, returnDeleted: true, generation: true }),
      columns: () => crdColumns,
    },
  ]
}
