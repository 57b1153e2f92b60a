import { ageOf } from './human-duration.js'
import { compileJsonPath } from './jsonpath.js'
import type { ResourceType, TableColumn } from './resource-type.js'
import type { KubeObject, PrinterColumn } from './types.js'

/** What each row carries in `object`, from the `includeObject` query parameter. */
export type IncludeObject = 'None' | 'Metadata' | 'Object'

/** The leading NAME column every table but the Event one starts with. */
export const nameColumn: TableColumn = {
  definition: { name: 'Name', type: 'string', format: 'name', description: 'Name must be unique within a namespace.', priority: 0 },
  cell: (o) => o.metadata.name ?? '',
}

/** The object a Table row embeds for the given `includeObject` mode. */
export function rowObject(obj: KubeObject, include: IncludeObject): unknown {
  if (include === 'None') return undefined
  if (include === 'Object') return obj
  return { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: obj.metadata }
}

/** Renders objects as a meta.k8s.io/v1 Table, the shape `kubectl get` asks for. */
export function toTable(
  rt: ResourceType,
  version: string,
  objects: KubeObject[],
  opts: { include: IncludeObject; resourceVersion?: string; continueToken?: string; now: number; noHeaders?: boolean },
): Record<string, unknown> {
  const columns = rt.ownNameColumn ? rt.columns(version) : [nameColumn, ...rt.columns(version)]
  const metadata: Record<string, unknown> = {}
  if (opts.resourceVersion) metadata.resourceVersion = opts.resourceVersion
  if (opts.continueToken) metadata.continue = opts.continueToken
  return {
    kind: 'Table',
    apiVersion: 'meta.k8s.io/v1',
    metadata,
    columnDefinitions: opts.noHeaders ? null : columns.map((c) => c.definition),
    rows: objects.map((o) => {
      const row: Record<string, unknown> = { cells: columns.map((c) => c.cell(o, opts.now) ?? null) }
      const embedded = rowObject(o, opts.include)
      if (embedded !== undefined) row.object = embedded
      return row
    }),
  }
}

function formatCell(values: unknown[], type: string, now: number): unknown {
  if (values.length === 0) return null
  if (values.length > 1) return values.map((v) => (typeof v === 'object' && v !== null ? JSON.stringify(v) : String(v))).join(' ')
  const v = values[0]
  if (v === null || v === undefined) return null
  if (type === 'date') return ageOf(v, now)
  if (typeof v === 'object') return JSON.stringify(v)
  if (type === 'integer' || type === 'number') return typeof v === 'number' ? v : Number(v)
  if (type === 'boolean') return typeof v === 'boolean' ? v : v === 'true'
  return typeof v === 'string' ? v : String(v)
}

/** Table columns for a CRD version's additionalPrinterColumns (Age when it declares none). */
export function printerColumns(columns: PrinterColumn[] | undefined): TableColumn[] {
  if (!columns?.length) {
    return [{ definition: { name: 'Age', type: 'date', format: '', description: 'Age', priority: 0 }, cell: (o, now) => ageOf(o.metadata.creationTimestamp, now) }]
  }
  return columns.map((c) => {
    const path = compileJsonPath(c.jsonPath)
    return {
      definition: { name: c.name, type: c.type, format: c.format ?? '', description: c.description || `Custom resource definition column (in JSONPath format): ${c.jsonPath}`, priority: c.priority ?? 0 },
      cell: (o: KubeObject, now: number) => formatCell(path.find(o), c.type, now),
    }
  })
}
