/**
 * The SubjectAccessReviews each run-control action asks for its caller, checked before the
 * function reads or writes anything with its own ServiceAccount. Pure.
 *
 * | action                       | the caller needs                                          |
 * | ---------------------------- | --------------------------------------------------------- |
 * | approve / deny a step        | `approve` workflows.purko.io on the Workflow (custom verb) |
 * | cancel, rerun                | `patch` workflows.purko.io on the Workflow                 |
 * | run a template               | `create` workflows.purko.io in the namespace, `get` on the template |
 * | step logs                    | `get` workflows.purko.io on the Workflow, `get` pods/log in the namespace |
 * | approve an agent's promotion | `approve` agents.purko.io on the Agent (custom verb)       |
 */
import type { AccessAttributes } from '../kube/port.js'
import { API_GROUP } from '../schemas/labels.js'
import type { Action } from './request.js'

/** The custom verb a team grants for step decisions and promotion approvals, without edit rights. */
export const APPROVE_VERB = 'approve'

const WORKFLOWS = { group: API_GROUP, resource: 'workflows' } as const
const AGENTS = { group: API_GROUP, resource: 'agents' } as const

/** Pure: every access the action needs, in the order they are told when refused. */
export function accessFor(action: Action): AccessAttributes[] {
  const { namespace } = action
  switch (action.kind) {
    case 'approve':
    case 'deny':
      return [{ verb: APPROVE_VERB, ...WORKFLOWS, namespace, name: action.workflow }]
    case 'cancel':
    case 'rerun':
      return [{ verb: 'patch', ...WORKFLOWS, namespace, name: action.workflow }]
    case 'run':
      return [
        { verb: 'get', ...WORKFLOWS, namespace, name: action.template },
        { verb: 'create', ...WORKFLOWS, namespace },
      ]
    case 'logs':
      return [
        { verb: 'get', ...WORKFLOWS, namespace, name: action.workflow },
        // The pod is not known before the Workflow is read: the right is asked for the namespace.
        { verb: 'get', group: '', resource: 'pods', subresource: 'log', namespace },
      ]
    case 'promote':
      return [{ verb: APPROVE_VERB, ...AGENTS, namespace, name: action.agent }]
  }
}

/** Pure: "<user> may not <verb> <resource> <ns>/<name>", the message of a 403. */
export function forbiddenMessage(user: string, a: AccessAttributes): string {
  const resource = `${a.resource}${a.subresource ? `/${a.subresource}` : ''}${a.group ? `.${a.group}` : ''}`
  const where = a.name ? `${a.namespace}/${a.name}` : `in namespace ${a.namespace}`
  return `${user} may not ${a.verb} ${resource} ${where}`
}
