import { describe, expect, it } from 'vitest'
import { AgentSchema } from '../../shared/schemas/agent.js'

const minimal = {
  apiVersion: 'purko.io/v1alpha1',
  kind: 'Agent',
  metadata: { name: 'a', namespace: 'ai-agents' },
  spec: { model: { provider: 'anthropic', name: 'claude' } },
}

describe('AgentSchema', () => {
  it('applies the defaults of the CRD: one replica, ten concurrent tasks, a 5m timeout', () => {
    expect(AgentSchema.parse(minimal).spec).toMatchObject({ replicas: 1, maxConcurrency: 10, timeout: '5m' })
  })

  it('keeps unknown fields in spec, model, memory, runtime and guardrails', () => {
    const agent = AgentSchema.parse({
      ...minimal,
      spec: {
        ...minimal.spec,
        extra: 1,
        model: { ...minimal.spec.model, credentialsSecretRef: { name: 'k', key: 'api-key' }, seed: 7 },
        memory: { behavior: 'persistent', maxContextTokens: 4096, persistentStorage: { enabled: true } },
        runtime: { image: 'exec:1', config: { MAX_STEPS: '3' }, codeExecution: { enabled: true, languages: ['python'] } },
        guardrails: { maxIterations: 5, costLimitUSD: 0.5, humanApprovalRequired: true, novel: 'x' },
      },
    })
    expect(agent.spec).toMatchObject({
      extra: 1,
      model: { seed: 7, credentialsSecretRef: { key: 'api-key' } },
      memory: { maxContextTokens: 4096, persistentStorage: { enabled: true } },
      runtime: { config: { MAX_STEPS: '3' }, codeExecution: { languages: ['python'] } },
      guardrails: { costLimitUSD: 0.5, novel: 'x' },
    })
  })

  it.each<[string, Record<string, unknown>]>([
    ['an unknown type', { type: 'wizard' }],
    ['a model without a name', { model: { provider: 'anthropic' } }],
    ['a tool of unknown type', { tools: [{ name: 't', type: 'magic' }] }],
    ['too many replicas', { replicas: 101 }],
  ])('rejects %s', (_, patch) => {
    expect(AgentSchema.safeParse({ ...minimal, spec: { ...minimal.spec, ...patch } }).success).toBe(false)
  })
})
