// What the CustomResourceDefinition kind does beyond storage: its spec's defaults, the checks
// that refuse a CRD the real server would refuse, its Established status, and serving its kind.
import { invalid, type StatusCause } from '../api-error.js'
import { establishedStatus, resourceTypeFromCrd } from '../crd.js'
import { crdSchemaCauses } from '../crd-schema.js'
import { timestamp } from '../object-meta.js'
import type { ResourceRegistry } from '../resource-registry.js'
import { groupResource, type ResourceType } from '../resource-type.js'
import type { KubeObject } from '../types.js'
import { createSchemaValidator } from '../validation.js'
import { invalid as invalidField } from '../../../shared/crd/field-error.js'
import { isObj, type Obj } from './store-types.js'
import type { WatchHistory } from './watch-history.js'

/** The group-resource key CRDs themselves are stored under. */
export const CRD_RESOURCE = 'customresourcedefinitions.apiextensions.k8s.io'

/** Whether a resource is CustomResourceDefinition itself. */
export function isCrdResource(rt: ResourceType): boolean {
  return rt.kind === 'CustomResourceDefinition' && rt.group === 'apiextensions.k8s.io'
}

/** The group-resource key of the kind a CRD defines (`<plural>.<group>`). */
export function definedResourceKey(crd: KubeObject): string {
  const spec = crd.spec as { group?: string; names?: { plural?: string } } | undefined
  return `${spec?.names?.plural}.${spec?.group}`
}

/** The defaults the real server fills in a CRD's spec when decoding it. */
export function defaultCrd(crd: KubeObject): void {
  const spec = (isObj(crd.spec) ? crd.spec : undefined) as Obj | undefined
  if (!spec) return
  spec.conversion ??= { strategy: 'None' }
  const names = spec.names as Obj | undefined
  if (isObj(names) && typeof names.kind === 'string') {
    names.singular ??= names.kind.toLowerCase()
    names.listKind ??= `${names.kind}List`
  }
}

/** A new CRD: refused when invalid or when it names a built-in resource, else Established. */
export function prepareCrdCreate(registry: ResourceRegistry, rt: ResourceType, crd: KubeObject, now: () => Date): void {
  checkCrd(rt, crd)
  checkCrdNames(registry, crd)
  crd.status = establishedStatus(crd, timestamp(now()))
}

/** A changed CRD: defaulted, refused when invalid or when it moves its group or plural, else Established as before. */
export function prepareCrdUpdate(rt: ResourceType, next: KubeObject, old: KubeObject, now: () => Date): void {
  defaultCrd(next)
  const oldSpec = old.spec as Obj
  const newSpec = next.spec as Obj
  // The served group and plural cannot change; the real server reports only that.
  const changed = [
    oldSpec?.group !== newSpec?.group && invalidField('spec.group', newSpec?.group, 'field is immutable'),
    (oldSpec?.names as Obj)?.plural !== (newSpec?.names as Obj)?.plural && invalidField('spec.names.plural', (newSpec?.names as Obj)?.plural, 'field is immutable'),
  ].filter((c) => c !== false)
  if (changed.length) throw invalid(rt, next.metadata.name as string, changed)
  checkCrd(rt, next)
  next.status = establishedStatus(next, String((((old.status as Obj)?.conditions as Obj[] | undefined)?.[0])?.lastTransitionTime ?? timestamp(now())))
}

/**
 * Serves the kind a stored CRD defines (again, after an update). `nextVersion` is the
 * resourceVersion the CRD's write gets: the first a watch of the new kind can start from.
 */
export function serveCrd(registry: ResourceRegistry, history: WatchHistory, nextVersion: number, crd: KubeObject): void {
  const { type } = resourceTypeFromCrd(crd, createSchemaValidator)
  if (!type) return
  history.startServing(groupResource(type), nextVersion)
  registry.register(type)
}

/**
 * Refuses an invalid CRD with every cause: the schema checks the real server makes first
 * (structure, extensions, defaults), then names, versions and CEL rules. CEL rules of a
 * schema that is not structural are not looked at, as on the real server.
 */
function checkCrd(rt: ResourceType, crd: KubeObject): void {
  const schemaCauses = crdSchemaCauses(crd)
  let causes: StatusCause[]
  try {
    causes = resourceTypeFromCrd(crd, createSchemaValidator).causes
  } catch (err) {
    if (!schemaCauses.length) throw err
    causes = []
  }
  if (schemaCauses.length) causes = [...schemaCauses, ...causes.filter((c) => !c.field.includes('openAPIV3Schema'))]
  if (causes.length) throw invalid(rt, crd.metadata.name as string, causes)
}

function checkCrdNames(registry: ResourceRegistry, crd: KubeObject): void {
  const spec = crd.spec as { group: string; names: { plural: string } }
  const existing = registry.byKey(`${spec.names.plural}.${spec.group}`)
  if (existing && !existing.crdName) {
    throw invalid(registry.byKey(CRD_RESOURCE) as ResourceType, crd.metadata.name as string, [
      invalidField('spec.names.plural', spec.names.plural, 'conflicts with a built-in resource'),
    ])
  }
}
