import { describe, expect, it } from 'vitest'
import { chooseProvider, isProviderUsable } from '../../shared/workflow/plan/credentials.js'
import { desiredCopyContent, plannedCopy } from '../../shared/llm/plan/credential-copies.js'
import { AgentSchema } from '../../shared/schemas/agent.js'
import { LLMProviderSchema, type LLMProvider } from '../../shared/schemas/llmprovider.js'

const agent = (provider: string) => AgentSchema.parse({
  apiVersion: 'purko.io/v1alpha1', kind: 'Agent', metadata: { name: 'a', namespace: 'team' }, spec: { model: { provider, name: 'agent-model' } },
})
function aProvider(name: string, namespace: string, spec: Record<string, unknown> = {}, status?: Record<string, unknown>): LLMProvider {
  return LLMProviderSchema.parse({
    apiVersion: 'purko.io/v1alpha1', kind: 'LLMProvider', metadata: { name, namespace },
    spec: { type: 'openai', model: `${name}-model`, credentials: { secretRef: `${name}-key` }, ...spec }, ...(status ? { status } : {}),
  })
}
const ctx = { workflowNamespace: 'team', platformNamespace: 'purko-system', optedIn: true }
const readyFalse = (reason: string) => ({ type: 'Ready', status: 'False', reason, message: 'x', lastTransitionTime: '2026-01-01T00:00:00Z' })

describe('isProviderUsable', () => {
  it.each([
    ['no status', undefined, true],
    ['no phase', {}, true],
    ['Ready', { phase: 'Ready' }, true],
    ['Pending (not probed yet)', { phase: 'Pending' }, true],
    ['Pending with a failing check', { phase: 'Pending', conditions: [readyFalse('Unreachable')] }, false],
    ['Error', { phase: 'Error' }, false],
    ['Degraded', { phase: 'Degraded' }, false],
  ])('%s: %s', (_, status, usable) => {
    expect(isProviderUsable(aProvider('p', 'purko-system', {}, status))).toBe(usable)
  })
})

describe('chooseProvider', () => {
  it.each([
    ['a provider of the Workflow\'s namespace: its own Secret', aProvider('p', 'team', { credentials: { secretRef: 's', secretKey: 'k' } }), ctx, { apiKey: { secret: 's', key: 'k' } }],
    ['a platform provider in an opted-in namespace: the copy, under the provider\'s name', aProvider('p', 'purko-system'), ctx, { apiKey: { secret: 'kinetic-llm-credentials', key: 'p' } }],
    ['a vertex-ai platform provider: the copy mounted as credentials.json, no API key', aProvider('v', 'purko-system', { type: 'vertex-ai' }), ctx, { gcp: { secret: 'kinetic-llm-credentials', key: 'v' } }],
    ['a vertex-ai provider of the namespace: its whole Secret mounted', aProvider('v', 'team', { type: 'vertex-ai' }), ctx, { gcp: { secret: 'v-key' } }],
    ['a provider without credentials', aProvider('o', 'purko-system', { type: 'ollama', credentials: undefined }), { ...ctx, optedIn: false }, {}],
  ])('%s', (_, provider, context, credentials) => {
    const choice = chooseProvider(agent(provider.metadata.name!), [provider], context)
    expect(choice).toEqual({ provider, credentials, notes: [] })
  })

  it('a platform provider\'s key in a namespace that has not opted in: the step waits, with the fix', () => {
    const choice = chooseProvider(agent('p'), [aProvider('p', 'purko-system')], { ...ctx, optedIn: false })
    expect(choice.credentials).toEqual({})
    expect(choice.wait).toMatch(/^Waiting for the key of LLMProvider purko-system\/p in namespace "team": namespace "team" has not opted in .*kubectl label namespace team kinetic\.dev\/llm-credentials=enabled/)
  })

  it('the fallback of the same namespace wins over one of another namespace of the same name', () => {
    const primary = aProvider('p', 'purko-system', { fallback: { providerRef: 'b' } }, { phase: 'Error' })
    const own = aProvider('b', 'team', {}, { phase: 'Ready' })
    const platform = aProvider('b', 'purko-system', {}, { phase: 'Ready' })
    expect(chooseProvider(agent('p'), [own, primary, platform], ctx).provider).toBe(platform)
  })

  it.each([
    ['no fallback named', aProvider('p', 'purko-system', {}, { phase: 'Error' }), [], 'LLMProvider purko-system/p is Error and names no fallback'],
    ['a fallback that does not exist', aProvider('p', 'purko-system', { fallback: { providerRef: 'gone' } }, { phase: 'Error', conditions: [readyFalse('Unreachable')] }), [],
      'LLMProvider purko-system/p is Error (Unreachable); its fallback "gone" was not found, so the step uses purko-system/p'],
    ['a fallback naming the provider itself', aProvider('p', 'purko-system', { fallback: { providerRef: 'p' } }, { phase: 'Degraded' }), [],
      'LLMProvider purko-system/p is Degraded; its fallback "p" was not found, so the step uses purko-system/p'],
  ])('an unusable provider with %s keeps its steps and says so', (_, primary, others, note) => {
    const choice = chooseProvider(agent('p'), [primary, ...others], ctx)
    expect(choice.provider).toBe(primary)
    expect(choice.notes).toEqual([note])
  })

  it('a fallback in the Workflow\'s namespace is keyed by its own Secret', () => {
    const primary = aProvider('p', 'purko-system', { fallback: { providerRef: 'b' } }, { phase: 'Error' })
    const backup = aProvider('b', 'team', {}, { phase: 'Ready' })
    expect(chooseProvider(agent('p'), [backup, primary], { ...ctx, optedIn: false })).toMatchObject({
      provider: backup, credentials: { apiKey: { secret: 'b-key', key: 'api-key' } },
    })
  })
})

describe('the copy planner', () => {
  const secrets = new Map([['k', { metadata: { name: 'k' }, data: { 'api-key': 'QQ==', other: 'Qg==' } }]])

  it('is idempotent: planning on its own output writes nothing', () => {
    const content = desiredCopyContent('purko-system', [aProvider('p', 'purko-system', { credentials: { secretRef: 'k' } })], secrets)
    const first = plannedCopy('team', content, null)!
    expect(first.data).toEqual({ p: 'QQ==' })
    expect(plannedCopy('team', content, { ...first, metadata: { ...first.metadata, resourceVersion: '7' } })).toBeNull()
  })

  it('writes no empty copy where none exists, and empties one that exists', () => {
    const content = desiredCopyContent('purko-system', [], secrets)
    expect(plannedCopy('team', content, null)).toBeNull()
    const existing = plannedCopy('team', desiredCopyContent('purko-system', [aProvider('p', 'purko-system', { credentials: { secretRef: 'k' } })], secrets), null)!
    expect(plannedCopy('team', content, { ...existing, metadata: { ...existing.metadata, resourceVersion: '3' } })).toMatchObject({ data: {}, metadata: { resourceVersion: '3' } })
  })
})

describe('chooseProvider with a step\'s model.provider override (spec §5.10)', () => {
  it('gives the step the overriding provider, its credentials and its fallback rule, as for an Agent', () => {
    const own = aProvider('p', 'team')
    const other = aProvider('q', 'purko-system', { fallback: { providerRef: 'r' } }, { phase: 'Error' })
    const backup = aProvider('r', 'purko-system', {}, { phase: 'Ready' })
    expect(chooseProvider(agent('p'), [own, other, backup], ctx).provider).toBe(own)
    expect(chooseProvider(agent('p'), [own, other, backup], ctx, {})).toEqual(chooseProvider(agent('p'), [own, other, backup], ctx))
    const choice = chooseProvider(agent('p'), [own, other, backup], ctx, { provider: 'q' })
    expect(choice.provider).toBe(backup)
    expect(choice.credentials).toEqual({ apiKey: { secret: 'kinetic-llm-credentials', key: 'r' } })
    expect(choice.notes).toEqual(['LLMProvider purko-system/q is Error: using fallback purko-system/r (model r-model)'])
  })

  it('a platform provider chosen only by a step waits for the opt-in like an Agent\'s would', () => {
    const choice = chooseProvider(agent('p'), [aProvider('p', 'team'), aProvider('q', 'purko-system')], { ...ctx, optedIn: false }, { provider: 'q' })
    expect(choice.wait).toMatch(/^Waiting for the key of LLMProvider purko-system\/q in namespace "team"/)
  })
})
