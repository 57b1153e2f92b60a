// Issue 27, item 7: the functions that act inside a namespace (step Jobs and their logs, Agent
// identities, webhook secrets) are granted it per namespace, never cluster-wide. A namespace that
// has not opted in is refused by the API server (403); each function then says so where its user
// looks, with the command that grants it, instead of failing the event until it is dead-lettered.
import { describe, expect, it } from 'vitest'
import { pino } from 'pino'
import { createApp as agentChanged } from '../../functions/agent-changed/index.js'
import { createApp as resyncTick } from '../../functions/resync-tick/index.js'
import { createApp as webhookTrigger } from '../../functions/webhook-trigger/index.js'
import { createApp as workflowChanged } from '../../functions/workflow-changed/index.js'
import { ForbiddenError } from '../../shared/core/errors.js'
import { AgentSchema } from '../../shared/schemas/agent.js'
import { RateLimiter } from '../../shared/webhook/rate-limit.js'
import { githubSignature } from '../../shared/webhook/signature.js'
import { EmbeddedKube } from '../support/embedded-kube.js'
import { deliver, PING, RESOURCE_ADD } from '../support/deliver.js'
import { testDeps } from '../support/engine-deps.js'
import { agentOf, workflowOf } from '../support/objects.js'

const forbidden = (what: string) => new ForbiddenError(`Could not ${what}`, {
  cause: { code: 403, body: JSON.stringify({ message: `${what} is forbidden: User "system:serviceaccount:kinetic-system:fn" cannot do it in the namespace "team"` }) },
})

describe('a namespace that has not opted in', () => {
  it('a Workflow there says so in its status and one Warning Event, with the command; the tick after the grant runs it', async () => {
    const kube = new EmbeddedKube({ workflows: [workflowOf('wf', [{ name: 's1' }])], agents: [agentOf('helper')] })
    kube.failNext('listJobs', forbidden('jobs.batch list'))
    const res = await deliver(workflowChanged(testDeps(kube)), RESOURCE_ADD, kube.workflow('team', 'wf'))
    expect(res.status).toBe(202)
    const command = 'kubectl create rolebinding kinetic-workflows -n team --clusterrole=kinetic-workflow-runner'
      + ' --serviceaccount=kinetic-system:workflow-changed --serviceaccount=kinetic-system:step-job-finished --serviceaccount=kinetic-system:resync-tick'
    const status = kube.workflow('team', 'wf').status
    expect(status?.phase).toBe('Pending')
    expect(status?.message).toBe(`Kinetic may not run Workflows in namespace team (jobs.batch list is forbidden: User "system:serviceaccount:kinetic-system:fn" cannot do it in the namespace "team"); to let it: ${command}`)
    expect(status?.conditions?.find((c) => c.type === 'Complete')).toMatchObject({ status: 'False', reason: 'NamespaceNotEnabled' })
    expect(kube.events.map((e) => [e.type, e.reason])).toEqual([['Warning', 'NamespaceNotEnabled']])
    expect(kube.createdJobs).toEqual([])
    // The resync alarm retries it every minute (not only at the hourly heartbeat).
    expect(kube.child('PingSource', 'kinetic-system', 'resync-alarm')?.spec).toMatchObject({ schedule: '* * * * *' })

    // Granted: the next resync tick starts the run.
    expect((await deliver(resyncTick(testDeps(kube)), PING, {})).status).toBe(202)
    expect(kube.createdJobs).toHaveLength(1)
    expect(kube.workflow('team', 'wf').status?.phase).toBe('Running')
  })

  it('an Agent there reports it cannot make its identity (SACreationFailed) with the command, and its Secret as not checked', async () => {
    const agent = AgentSchema.parse({
      apiVersion: 'purko.io/v1alpha1', kind: 'Agent', metadata: { name: 'writer', namespace: 'team' },
      spec: { model: { provider: 'anthropic', name: 'claude', credentialsSecretRef: { name: 'model-key' } } },
    })
    const kube = new EmbeddedKube({ agents: [agent], identities: false })
    kube.failNext('getSecret', forbidden('secrets "model-key" get')).failNext('createServiceAccount', forbidden('serviceaccounts create'))
    const res = await deliver(agentChanged(testDeps(kube)), RESOURCE_ADD, structuredClone(kube.agents.get('team/writer')!))
    expect(res.status).toBe(202)
    const conditions = kube.agents.get('team/writer')!.status?.conditions ?? []
    const command = 'kubectl create rolebinding kinetic-agents -n team --clusterrole=kinetic-agent-identities --serviceaccount=kinetic-system:agent-changed'
    expect(conditions.find((c) => c.type === 'Ready')).toMatchObject({ status: 'False', reason: 'SACreationFailed', message: expect.stringContaining(`to let Kinetic manage Agent identities in namespace team: ${command}`) })
    expect(conditions.find((c) => c.type === 'CredentialsValid')).toMatchObject({
      status: 'Unknown', reason: 'SecretNotReadable',
      message: `agent-changed may not read Secret model-key in namespace team, so the credentials are not checked; to let it: ${command}`,
    })
  })

  it('a webhook whose template is there is 401 to the caller, and the Warning Event on the template gives the command', async () => {
    const template = workflowOf('deploy', [{ name: 'build' }], { trigger: { webhook: { secret: { name: 'hook' } } } })
    template.metadata.annotations = { 'purko.io/template': 'true' }
    const kube = new EmbeddedKube({ workflows: [template] })
    kube.failNext('getSecret', forbidden('secrets "hook" get'))
    const app = webhookTrigger({ kube, log: pino({ level: 'silent' }), now: () => new Date('2026-03-01T12:00:00Z'), limiter: new RateLimiter() })
    const body = '{"title":"x"}'
    const res = await app.request('/api/trigger/team/deploy', { method: 'POST', body, headers: { 'x-hub-signature-256': githubSignature('s', body) } })
    expect([res.status, await res.text()]).toEqual([401, '{"error":"unauthorized"}'])
    expect(kube.events.map((e) => [e.reason, e.message])).toEqual([[
      'WebhookSecretForbidden',
      'Refused a webhook call: webhook-trigger may not read Secret team/hook; to let it: kubectl create rolebinding kinetic-webhooks -n team --clusterrole=kinetic-webhook-secrets --serviceaccount=kinetic-system:webhook-trigger',
    ]])
  })
})
