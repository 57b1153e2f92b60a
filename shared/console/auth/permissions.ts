/**
 * Which action buttons a page shows: those run-control would allow this person, asked of the
 * API server as the person (SelfSubjectAccessReviews with their credential) for exactly the
 * rights run-control checks (accessFor). run-control still decides; this only spares people
 * buttons that would be refused.
 */
import type { AccessAttributes } from '../../kube/port.js'
import { accessFor } from '../../run-control/access.js'
import type { Action } from '../../run-control/request.js'
import type { ConsoleRequest } from '../context.js'

const keyOf = (a: AccessAttributes) => JSON.stringify([a.verb, a.group, a.resource, a.subresource ?? '', a.namespace ?? '', a.name ?? ''])

/**
 * Whether the person may take each action, in the order given: false for all when the console
 * is read only or the person is not identified (anonymous); true for all for the local plane's
 * admin; otherwise every review the action needs must allow. Each distinct review is asked once.
 */
export async function allowedActions(req: ConsoleRequest, actions: readonly Action[]): Promise<boolean[]> {
  if (!req.config.actions || req.person.mode === 'anonymous') return actions.map(() => false)
  if (req.person.mode === 'local') return actions.map(() => true)
  const needed = actions.map(accessFor)
  const distinct = new Map<string, AccessAttributes>()
  for (const checks of needed) for (const a of checks) distinct.set(keyOf(a), a)
  if (distinct.size === 0) return actions.map(() => true)
  const keys = [...distinct.keys()]
  const answers = await req.kube.reviewSelfAccess([...distinct.values()])
  const allowed = new Map(keys.map((k, i) => [k, answers[i] === true]))
  return needed.map((checks) => checks.every((a) => allowed.get(keyOf(a)) === true))
}
