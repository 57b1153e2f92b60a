import { describe, expect, it } from 'vitest'
import { providersPage } from '../../../shared/console/pages/providers.js'
import type { LLMProvider } from '../../../shared/schemas/llmprovider.js'
import { EmbeddedKube } from '../../support/embedded-kube.js'
import { requestFor, rowsOf, textOf } from './support.js'

const provider: LLMProvider = {
  apiVersion: 'purko.io/v1alpha1', kind: 'LLMProvider',
  metadata: { name: 'claude', namespace: 'team-a' },
  spec: {
    type: 'anthropic', model: 'claude-sonnet', credentials: { secretRef: 'anthropic-key', secretKey: 'api-key' },
    models: [{ name: 'claude-sonnet', maxTokens: 8192, pricing: { inputPerMToken: 3, outputPerMToken: 15 } }],
  },
  status: {
    phase: 'Degraded', lastHealthCheck: '2026-12-01T11:58:00Z', availableModels: 3, consecutiveFailures: 2,
    discoveredModels: ['claude-sonnet', 'claude-haiku'], message: 'probe timed out',
    conditions: [{ type: 'Ready', status: 'False', reason: 'ProbeFailed', message: 'timed out after 10s', lastTransitionTime: '2026-12-01T11:58:00Z' }],
  },
}

describe('the LLM providers page', () => {
  it('shows health, the last probe and the models, and names the key Secret without reading it', async () => {
    const kube = new EmbeddedKube({ providers: [provider] })
    kube.secrets.set('team-a/anthropic-key', { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'anthropic-key', namespace: 'team-a' }, data: { 'api-key': Buffer.from('sk-very-secret').toString('base64') } })
    const calls: string[] = []
    const getSecret = kube.getSecret.bind(kube)
    kube.getSecret = async (ns, name) => { calls.push(`${ns}/${name}`); return getSecret(ns, name) }
    const page = await providersPage(requestFor(kube, '/providers'))
    expect(page.nav).toBe('providers')
    expect(rowsOf(page.body, 'LLM providers')).toEqual([['claude', 'team-a', 'Degraded', 'anthropic', 'claude-sonnet', '2 min ago']])
    expect(rowsOf(page.body, 'Models of claude')).toEqual([
      ['claude-sonnet', 'declared', '8192', '$3 in / $15 out per M tokens'],
      ['claude-haiku', 'found by the probe', '', ''],
    ])
    const text = textOf(page.body)
    expect(text).toContain('API key from Secret anthropic-key , key api-key')
    expect(text).toContain('(2 failed in a row)')
    expect(text).toContain('probe timed out')
    expect(page.body.html).not.toContain('sk-very-secret')
    expect(page.body.html).not.toContain(Buffer.from('sk-very-secret').toString('base64'))
    expect(calls).toEqual([])
  })

  it('says when llmprovider-changed may not read the key Secret, and gives the grant command', async () => {
    const message = 'Reading Secret team-a/anthropic-key is forbidden to llmprovider-changed (no Role in team-a grants it get); allow it with: ...'
    const forbidden: LLMProvider = {
      ...provider,
      status: { phase: 'Error', message, conditions: [{ type: 'Ready', status: 'False', reason: 'SecretForbidden', message, lastTransitionTime: '2026-12-01T11:58:00Z' }] },
    }
    const page = await providersPage(requestFor(new EmbeddedKube({ providers: [forbidden] }), '/providers'))
    const text = textOf(page.body)
    expect(text).toContain('Reading Secret team-a/anthropic-key is forbidden to llmprovider-changed, so its key cannot be checked. Allow it with:')
    expect(page.body.html).toContain('<pre><code>kubectl create role kinetic-llmprovider-anthropic-key -n team-a --verb=get --resource=secrets --resource-name=anthropic-key\n'
      + 'kubectl create rolebinding kinetic-llmprovider-anthropic-key -n team-a --role=kinetic-llmprovider-anthropic-key --serviceaccount=kinetic-system:llmprovider-changed</code></pre>')
    // A provider whose key was merely wrong gets no such note.
    expect(textOf((await providersPage(requestFor(new EmbeddedKube({ providers: [provider] }), '/providers'))).body)).not.toContain('Allow it with')
  })

  it('says when there are none', async () => {
    expect(textOf((await providersPage(requestFor(new EmbeddedKube(), '/providers'))).body)).toContain('No LLM providers to show.')
  })
})
