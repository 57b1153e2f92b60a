import { describe, expect, it } from 'vitest'
import { accessFor, forbiddenMessage } from '../../shared/run-control/access.js'
import type { Action } from '../../shared/run-control/request.js'

const NS = 'team-a'

describe('the access each action asks for its caller', () => {
  it.each<[string, Action, unknown[]]>([
    ['approving a step: the custom verb approve on the Workflow', { kind: 'approve', namespace: NS, workflow: 'w', step: 's' },
      [{ verb: 'approve', group: 'purko.io', resource: 'workflows', namespace: NS, name: 'w' }]],
    ['denying a step: the same approve verb', { kind: 'deny', namespace: NS, workflow: 'w', step: 's' },
      [{ verb: 'approve', group: 'purko.io', resource: 'workflows', namespace: NS, name: 'w' }]],
    ['cancelling: patch on the Workflow', { kind: 'cancel', namespace: NS, workflow: 'w' },
      [{ verb: 'patch', group: 'purko.io', resource: 'workflows', namespace: NS, name: 'w' }]],
    ['rerunning: patch on the Workflow', { kind: 'rerun', namespace: NS, workflow: 'w', parameters: {} },
      [{ verb: 'patch', group: 'purko.io', resource: 'workflows', namespace: NS, name: 'w' }]],
    ['a manual run: get on the template and create in the namespace', { kind: 'run', namespace: NS, template: 't', parameters: {} },
      [{ verb: 'get', group: 'purko.io', resource: 'workflows', namespace: NS, name: 't' }, { verb: 'create', group: 'purko.io', resource: 'workflows', namespace: NS }]],
    ['step logs: get on the Workflow and on pods/log in the namespace', { kind: 'logs', namespace: NS, workflow: 'w', step: 's' },
      [{ verb: 'get', group: 'purko.io', resource: 'workflows', namespace: NS, name: 'w' }, { verb: 'get', group: '', resource: 'pods', subresource: 'log', namespace: NS }]],
    ['a promotion approval: approve on the Agent', { kind: 'promote', namespace: NS, agent: 'a', level: 'ha' },
      [{ verb: 'approve', group: 'purko.io', resource: 'agents', namespace: NS, name: 'a' }]],
  ])('%s', (_, action, expected) => {
    expect(accessFor(action)).toEqual(expected)
  })

  it('says who may not do what, where', () => {
    expect(forbiddenMessage('alice', { verb: 'approve', group: 'purko.io', resource: 'workflows', namespace: NS, name: 'w' }))
      .toBe('alice may not approve workflows.purko.io team-a/w')
    expect(forbiddenMessage('bob', { verb: 'get', group: '', resource: 'pods', subresource: 'log', namespace: NS }))
      .toBe('bob may not get pods/log in namespace team-a')
  })
})
