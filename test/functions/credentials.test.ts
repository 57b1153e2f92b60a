import { describe, expect, it } from 'vitest'
import { createApp as stepJobFinished } from '../../functions/step-job-finished/index.js'
import { createApp as workflowChanged } from '../../functions/workflow-changed/index.js'
import { LLMProviderSchema } from '../../shared/schemas/llmprovider.js'
import { FakeKube } from '../fakes/kube.js'
import { deliver, RESOURCE_ADD, RESOURCE_UPDATE } from '../support/deliver.js'
import { testDeps } from '../support/engine-deps.js'
import { agentOf, workflowOf } from '../support/objects.js'

/** purko keeps LLMProviders and their Secrets in purko-system; the Agent names the provider. */
function platformProvider() {
  return LLMProviderSchema.parse({
    apiVersion: 'purko.io/v1alpha1', kind: 'LLMProvider',
    metadata: { name: 'offline', namespace: 'purko-system' },
    spec: { type: 'openai', model: 'scripted', endpoint: 'http://llm.invalid/v1', credentials: { secretRef: 'llm-key' } },
  })
}

function apiKeyRef(kube: FakeKube, jobName: string) {
  const job = [...kube.jobs.values()].find((j) => j.metadata?.name === jobName)!
  return job.spec?.template.spec?.containers[0]?.env?.find((e) => e.name === 'MODEL_API_KEY')
}

describe('credentials of a provider in another namespace', () => {
  it('are copied beside the Workflow, owned by it, and referenced by secretKeyRef, never as a value', async () => {
    const kube = new FakeKube({
      workflows: [workflowOf('wf', [{ name: 'a' }, { name: 'b', dependsOn: ['a'] }])],
      agents: [agentOf('helper')],
      providers: [platformProvider()],
    })
    kube.secrets.set('purko-system/llm-key', { metadata: { name: 'llm-key', namespace: 'purko-system' }, data: { 'api-key': 'c2VjcmV0' } })
    await deliver(workflowChanged(testDeps(kube)), RESOURCE_ADD, kube.workflow('team', 'wf'))
    const runId = kube.workflow('team', 'wf').status!.runId!

    const copy = kube.secrets.get('team/wf-llm-offline')
    expect(copy?.data).toEqual({ 'api-key': 'c2VjcmV0' })
    expect(copy?.metadata?.ownerReferences?.[0]).toMatchObject({ kind: 'Workflow', name: 'wf', controller: true })
    expect(apiKeyRef(kube, `wf-a-${runId}`)).toEqual({ name: 'MODEL_API_KEY', valueFrom: { secretKeyRef: { name: 'wf-llm-offline', key: 'api-key', optional: false } } })

    // The next step reuses the copy without writing it again; a rotated key is copied again.
    const writes = kube.writes.length
    await deliver(stepJobFinished(testDeps(kube)), RESOURCE_UPDATE, kube.finishJob(`wf-a-${runId}`, 'Succeeded', 'OUTPUT:{}'))
    expect(kube.writes.slice(writes).filter((w) => w.includes('Secret'))).toEqual([])
    expect(apiKeyRef(kube, `wf-b-${runId}`)?.valueFrom?.secretKeyRef?.name).toBe('wf-llm-offline')
  })

  it('copies a rotated key again before the next step starts', async () => {
    const kube = new FakeKube({ workflows: [workflowOf('wf', [{ name: 'a' }, { name: 'b', dependsOn: ['a'] }])], agents: [agentOf('helper')], providers: [platformProvider()] })
    kube.secrets.set('purko-system/llm-key', { metadata: { name: 'llm-key', namespace: 'purko-system' }, data: { 'api-key': 'b2xk' } })
    await deliver(workflowChanged(testDeps(kube)), RESOURCE_ADD, kube.workflow('team', 'wf'))
    const runId = kube.workflow('team', 'wf').status!.runId!
    kube.secrets.set('purko-system/llm-key', { metadata: { name: 'llm-key', namespace: 'purko-system' }, data: { 'api-key': 'bmV3' } })

    await deliver(stepJobFinished(testDeps(kube)), RESOURCE_UPDATE, kube.finishJob(`wf-a-${runId}`, 'Succeeded', 'OUTPUT:{}'))

    expect(kube.secrets.get('team/wf-llm-offline')?.data).toEqual({ 'api-key': 'bmV3' })
  })

  it('leaves the reference as written when the source Secret is missing, so the pod names it', async () => {
    const kube = new FakeKube({ workflows: [workflowOf('wf', [{ name: 'a' }])], agents: [agentOf('helper')], providers: [platformProvider()] })
    await deliver(workflowChanged(testDeps(kube)), RESOURCE_ADD, kube.workflow('team', 'wf'))
    const runId = kube.workflow('team', 'wf').status!.runId!

    expect(kube.secrets.size).toBe(0)
    expect(apiKeyRef(kube, `wf-a-${runId}`)?.valueFrom?.secretKeyRef?.name).toBe('llm-key')
  })
})
