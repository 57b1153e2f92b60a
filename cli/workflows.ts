import { ConflictError } from '../shared/core/errors.js'
import type { Kube } from '../shared/kube/port.js'
import type { Workflow } from '../shared/schemas/workflow.js'
import type { Session } from './command.js'
import { CliError } from './errors.js'

/** The RBAC resource name of Workflows, as 403 messages and `kubectl auth can-i` spell it. */
export const WORKFLOWS = 'workflows.purko.io'

/** Reads a Workflow; a missing one is the CLI's "not found" message. */
export async function requireWorkflow(session: Session, name: string): Promise<Workflow> {
  const namespace = session.namespace
  const wf = await session.call({ verb: 'get', resource: WORKFLOWS, namespace }, (kube) => kube.getWorkflow(namespace, name))
  if (!wf) throw new CliError(`workflow ${name} not found in namespace ${namespace}`)
  return wf
}

/**
 * Reads the Workflow, checks it, writes guarded by the resourceVersion read, and on a lost race
 * (409) reads, checks and writes once more. `write` returns the updated object.
 */
export async function guardedWrite(
  session: Session,
  name: string,
  verb: string,
  write: (kube: Kube, wf: Workflow, resourceVersion: string) => Promise<Workflow>,
  check: (wf: Workflow) => void = () => {},
): Promise<Workflow> {
  const namespace = session.namespace
  for (let attempt = 1; ; attempt++) {
    const wf = await requireWorkflow(session, name)
    check(wf)
    try {
      return await session.call(
        { verb, resource: WORKFLOWS, namespace },
        (kube) => write(kube, wf, wf.metadata.resourceVersion ?? ''),
        { conflicts: attempt < 2 },
      )
    } catch (err) {
      if (!(err instanceof ConflictError)) throw err
    }
  }
}
