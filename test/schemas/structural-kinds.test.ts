import { describe, expect, it } from 'vitest'
import { AgentAutonomyPolicySchema } from '../../shared/schemas/autonomypolicy.js'
import { LLMProviderSchema } from '../../shared/schemas/llmprovider.js'
import { MCPServerSchema } from '../../shared/schemas/mcpserver.js'
import { MemoryProviderSchema } from '../../shared/schemas/memoryprovider.js'

const meta = { name: 'x', namespace: 'purko-system' }

describe('the fully structural kinds', () => {
  it('MCPServer carries the CRD defaults: port 8000, one replica, auth none, no host network, managed, http transport', () => {
    const mcp = MCPServerSchema.parse({ apiVersion: 'purko.io/v1alpha1', kind: 'MCPServer', metadata: meta, spec: { image: 'mcp:1' } })
    expect(mcp.spec).toEqual({ image: 'mcp:1', port: 8000, replicas: 1, auth: 'none', hostNetwork: false, managed: true, transport: 'http' })
  })

  it('AgentAutonomyPolicy drops fields its CRD does not declare, as the API server prunes them', () => {
    const policy = AgentAutonomyPolicySchema.parse({
      apiVersion: 'purko.io/v1alpha1', kind: 'AgentAutonomyPolicy', metadata: meta,
      spec: { shuHaRi: { progressionCriteria: { shuToHa: { minimumActionsCompleted: 10, bogus: 1 } } }, bogus: 2 },
    })
    expect(policy.spec).toEqual({ shuHaRi: { progressionCriteria: { shuToHa: { minimumActionsCompleted: 10 } } } })
  })

  it.each<[string, { safeParse: (v: unknown) => { success: boolean } }, unknown]>([
    ['an LLMProvider without a model', LLMProviderSchema, { apiVersion: 'purko.io/v1alpha1', kind: 'LLMProvider', metadata: meta, spec: { type: 'openai' } }],
    ['an LLMProvider of unknown type', LLMProviderSchema, { apiVersion: 'purko.io/v1alpha1', kind: 'LLMProvider', metadata: meta, spec: { type: 'azure', model: 'm' } }],
    ['a MemoryProvider of unknown type', MemoryProviderSchema, { apiVersion: 'purko.io/v1alpha1', kind: 'MemoryProvider', metadata: meta, spec: { type: 'sqlite' } }],
    ['an MCPServer with auth basic', MCPServerSchema, { apiVersion: 'purko.io/v1alpha1', kind: 'MCPServer', metadata: meta, spec: { image: 'i', auth: 'basic' } }],
    ['a policy with rollbackLevel ri', AgentAutonomyPolicySchema,
      { apiVersion: 'purko.io/v1alpha1', kind: 'AgentAutonomyPolicy', metadata: meta, spec: { shuHaRi: { progressionCriteria: {} }, rollback: { rollbackLevel: 'ri' } } }],
    ['an object of another kind', MCPServerSchema, { apiVersion: 'purko.io/v1alpha1', kind: 'Agent', metadata: meta, spec: { image: 'i' } }],
  ])('rejects %s', (_, schema, object) => {
    expect(schema.safeParse(object).success).toBe(false)
  })
})
