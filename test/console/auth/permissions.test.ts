// Which action buttons a person gets: the reviews run-control would ask, asked as the person.
import { describe, expect, it } from 'vitest'
import { allowedActions } from '../../../shared/console/auth/permissions.js'
import { LOCAL_ADMIN } from '../../../shared/console/auth/person.js'
import type { ConsoleRequest, Person } from '../../../shared/console/context.js'
import type { Action } from '../../../shared/run-control/request.js'
import { consoleDeps, NOW } from './support.js'

const ALICE: Person = { mode: 'token', name: 'alice', groups: ['team-a'], credential: { kind: 'token', token: 'alice-token' } }
const ACTIONS: Action[] = [
  { kind: 'approve', namespace: 'team-a', workflow: 'deploy', step: 'ship' },
  { kind: 'deny', namespace: 'team-a', workflow: 'deploy', step: 'ship' },
  { kind: 'cancel', namespace: 'team-a', workflow: 'deploy' },
  { kind: 'run', namespace: 'team-a', template: 'nightly', parameters: {} },
  { kind: 'promote', namespace: 'team-a', agent: 'reviewer', level: 'ha' },
]

function request(person: Person, env: Record<string, string> = {}) {
  const { deps, cluster } = consoleDeps({ KINETIC_CONSOLE_ACTIONS: 'true', ...env })
  cluster.kube.tokens.set('alice-token', { username: 'alice', groups: ['team-a'] })
  const req: ConsoleRequest = {
    person, kube: cluster.kubeFor(person.credential), now: NOW, config: deps.config, url: new URL('http://console.example/'), assetUrl: () => '',
  }
  return { req, cluster }
}

describe('allowedActions', () => {
  it('allows exactly what the person may do, every review of an action having to allow, each distinct review asked once', async () => {
    const { req, cluster } = request(ALICE)
    cluster.kube.allow('alice', 'approve', 'workflows', 'team-a', 'deploy').allow('alice', 'get', 'workflows', 'team-a')
    expect(await allowedActions(req, ACTIONS)).toEqual([true, true, false, false, false])
    // approve and deny need the same review: 1 + cancel 1 + run 2 + promote 1.
    expect(cluster.kube.accessReviews).toHaveLength(5)
    expect(cluster.kube.accessReviews.every((r) => r.user === 'alice')).toBe(true)
  })

  it('allows a manual run only with both get on the template and create in the namespace', async () => {
    const { req, cluster } = request(ALICE)
    cluster.kube.allow('team-a', 'get', 'workflows', 'team-a').allow('team-a', 'create', 'workflows', 'team-a')
    expect(await allowedActions(req, [ACTIONS[3]!])).toEqual([true])
  })

  it('allows nothing, asking nothing, when the console is read only or the person is anonymous', async () => {
    for (const [person, env] of [[ALICE, { KINETIC_CONSOLE_ACTIONS: 'false' }], [{ ...ALICE, mode: 'anonymous', credential: { kind: 'own' } }, {}]] as const) {
      const { req, cluster } = request(person as Person, env)
      // Rights that would allow every action, so only the mode can be why nothing is.
      cluster.kube.allow('alice', '*', '*').allow(cluster.own.username, '*', '*')
      expect(await allowedActions(req, ACTIONS)).toEqual([false, false, false, false, false])
      expect(cluster.kube.accessReviews).toEqual([])
    }
  })

  it("allows everything for the local plane's admin", async () => {
    const { req } = request(LOCAL_ADMIN)
    expect(await allowedActions(req, ACTIONS)).toEqual([true, true, true, true, true])
  })
})
