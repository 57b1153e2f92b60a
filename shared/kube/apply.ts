/**
 * The one applier of desired children. A planner decides, from what it read, whether a child is
 * to be created (it was absent), replaced (it differs; the object carries the resourceVersion
 * read, so the replace is guarded) or deleted (it is there and no longer wanted); this carries
 * the decision out. A create that finds the object already there means another writer made it
 * since the read: a ConflictError, so the reconcile plans again from fresh state, unless the
 * child is one several owners share and whoever made it first made the same thing.
 */
import type { V1ConfigMap, V1Deployment, V1Role, V1RoleBinding, V1Secret, V1Service, V1ServiceAccount } from '@kubernetes/client-node'
import { ConflictError } from '../core/errors.js'
import type { Kube } from './port.js'

/** One write of a child, as a planner asks for it. */
export type ChildWrite =
  | { op: 'create' | 'replace'; kind: 'ServiceAccount'; object: V1ServiceAccount }
  | { op: 'create' | 'replace'; kind: 'Role'; object: V1Role }
  | { op: 'create' | 'replace'; kind: 'RoleBinding'; object: V1RoleBinding }
  | { op: 'create' | 'replace'; kind: 'Deployment'; object: V1Deployment }
  | { op: 'create' | 'replace'; kind: 'Service'; object: V1Service }
  | { op: 'create' | 'replace'; kind: 'Secret'; object: V1Secret }
  | { op: 'create' | 'replace'; kind: 'ConfigMap'; object: V1ConfigMap }
  | { op: 'delete'; kind: 'ServiceAccount'; namespace: string; name: string }

/** A replaced child as the API server stored it (with its new resourceVersion). */
export type StoredChild = Exclude<ChildWrite, { op: 'delete' }>['object']

/** The port verbs writes like W call: create or replace of their kind, by their op (delete: ServiceAccounts only). */
type WriteVerb<W extends ChildWrite> = W extends { op: 'delete' } ? 'deleteServiceAccount' : OpVerb<W['op'], W['kind']>
type OpVerb<Op, Kind extends string> = Op extends 'create' ? `create${Kind}` : `replace${Kind}`
/** What applyChildWrite needs of the port for writes like W, and no more. */
export type KubeForWrites<W extends ChildWrite> = Pick<Kube, WriteVerb<W> & keyof Kube>

/**
 * Writes one child. `shared`: the child may have been made by another owner of it (a
 * namespace's MCP bridge identity), so finding it already there is success (`exists`).
 * `stored`: given the object a replace stored, for a caller that keeps what it wrote.
 */
export async function applyChildWrite<W extends ChildWrite>(
  narrow: KubeForWrites<W>, write: W, options: { shared?: boolean; stored?: (object: StoredChild) => void } = {},
): Promise<'created' | 'exists' | 'replaced' | 'deleted'> {
  // The write's kind picks the verb; the caller's type holds exactly the verbs its kinds pick.
  const kube = narrow as Kube
  if (write.op === 'delete') {
    await kube.deleteServiceAccount(write.namespace, write.name)
    return 'deleted'
  }
  if (write.op === 'replace') {
    const stored = await replace(kube, write)
    options.stored?.(stored)
    return 'replaced'
  }
  const created = await create(kube, write)
  if (created === 'exists' && !options.shared) {
    throw new ConflictError(`${write.kind} ${write.object.metadata?.namespace}/${write.object.metadata?.name} appeared concurrently`)
  }
  return created
}

function create(kube: Kube, write: Exclude<ChildWrite, { op: 'delete' }>): Promise<'created' | 'exists'> {
  switch (write.kind) {
    case 'ServiceAccount': return kube.createServiceAccount(write.object)
    case 'Role': return kube.createRole(write.object)
    case 'RoleBinding': return kube.createRoleBinding(write.object)
    case 'Deployment': return kube.createDeployment(write.object)
    case 'Service': return kube.createService(write.object)
    case 'Secret': return kube.createSecret(write.object)
    case 'ConfigMap': return kube.createConfigMap(write.object)
  }
}

function replace(kube: Kube, write: Exclude<ChildWrite, { op: 'delete' }>): Promise<StoredChild> {
  switch (write.kind) {
    case 'ServiceAccount': return kube.replaceServiceAccount(write.object)
    case 'Role': return kube.replaceRole(write.object)
    case 'RoleBinding': return kube.replaceRoleBinding(write.object)
    case 'Deployment': return kube.replaceDeployment(write.object)
    case 'Service': return kube.replaceService(write.object)
    case 'Secret': return kube.replaceSecret(write.object)
    case 'ConfigMap': return kube.replaceConfigMap(write.object)
  }
}
