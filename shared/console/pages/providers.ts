/**
 * GET /providers: each LLM provider's health (phase, conditions, last probe), its models, and
 * which Secret holds its key: the Secret's name only, never anything read from it; when
 * llmprovider-changed may not read that Secret, the grant that lets it.
 */
import { secretGrantCommand } from '../../llm/plan/credentials.js'
import type { LLMProvider } from '../../schemas/llmprovider.js'
import type { ConsoleRequest, PageResult } from '../context.js'
import { html, join, type Html } from '../html.js'
import { timeTag } from '../time.js'
import { conditionsTable, listVisible, phaseBadge, scrollTable, visibilityNote } from './common.js'

const anchor = (p: LLMProvider) => `provider-${p.metadata.namespace ?? ''}-${p.metadata.name ?? ''}`.replace(/[^A-Za-z0-9_-]/g, '-')

/** Pure: the models a provider declares, and those its last probe found that it does not declare. */
export function modelsOf(p: LLMProvider): { name: string; declared: boolean; maxTokens?: number; pricing?: string }[] {
  const declared = (p.spec.models ?? []).map((m) => ({
    name: m.name,
    declared: true,
    ...(m.maxTokens !== undefined ? { maxTokens: m.maxTokens } : {}),
    ...(m.pricing ? { pricing: `$${m.pricing.inputPerMToken ?? '?'} in / $${m.pricing.outputPerMToken ?? '?'} out per M tokens` } : {}),
  }))
  const names = new Set(declared.map((m) => m.name))
  if (!names.has(p.spec.model)) declared.unshift({ name: p.spec.model, declared: true })
  const discovered = (p.status?.discoveredModels ?? []).filter((n) => !names.has(n) && n !== p.spec.model).map((name) => ({ name, declared: false }))
  return [...declared, ...discovered]
}

/**
 * Pure: when llmprovider-changed may not read the provider's Secret (Ready reason
 * SecretForbidden), the grant that lets it: a Role on that one Secret and its RoleBinding.
 */
function forbiddenNote(p: LLMProvider): Html {
  const ready = p.status?.conditions?.find((c) => c.type === 'Ready')
  const secret = p.spec.credentials?.secretRef
  if (ready?.reason !== 'SecretForbidden' || !secret) return html``
  const namespace = p.metadata.namespace ?? ''
  return html`<div class="note" role="note"><p>Reading Secret <code>${namespace}/${secret}</code> is forbidden to llmprovider-changed, so its key cannot be checked. Allow it with:</p>
<pre><code>${secretGrantCommand(namespace, secret).split(' && ').join('\n')}</code></pre></div>`
}

function providerSection(p: LLMProvider, now: Date): Html {
  const status = p.status ?? {}
  const secret = p.spec.credentials?.secretRef
  const models = modelsOf(p)
  return html`<section class="object" aria-labelledby="${anchor(p)}">
<h2 id="${anchor(p)}">${p.metadata.name ?? ''} <span class="muted">in ${p.metadata.namespace ?? ''}</span> ${phaseBadge(status.phase)}</h2>
<dl class="facts">
<dt>Type</dt><dd>${p.spec.type}${p.spec.default ? ' (the default provider)' : ''}</dd>
<dt>Endpoint</dt><dd>${p.spec.endpoint ?? html`<span class="muted">the type's default</span>`}</dd>
<dt>Default model</dt><dd><code>${p.spec.model}</code></dd>
<dt>API key</dt><dd>${secret ? html`from Secret <code>${secret}</code>${p.spec.credentials?.secretKey ? html`, key <code>${p.spec.credentials.secretKey}</code>` : ''}` : html`<span class="muted">none</span>`}</dd>
<dt>Last probe</dt><dd>${timeTag(status.lastHealthCheck, now)}${status.lastHealthCheck ? '' : 'never'}${status.consecutiveFailures ? html` <span class="muted">(${status.consecutiveFailures} failed in a row)</span>` : ''}</dd>
<dt>Next probe</dt><dd>${timeTag(status.nextProbeAt, now)}${status.nextProbeAt ? '' : '—'}</dd>
<dt>Models available</dt><dd>${status.availableModels ?? '—'}</dd>
${p.spec.fallback?.providerRef ? html`<dt>Fallback</dt><dd>${p.spec.fallback.providerRef}</dd>` : ''}
${status.message ? html`<dt>Message</dt><dd>${status.message}</dd>` : ''}
</dl>
${forbiddenNote(p)}
${scrollTable(`Models of ${p.metadata.name ?? ''}`, ['Model', 'Source', { text: 'Max tokens', num: true }, 'Pricing'], models.map((m) =>
    html`<tr><td><code>${m.name}</code></td><td>${m.declared ? 'declared' : 'found by the probe'}</td><td class="num">${m.maxTokens ?? ''}</td><td>${m.pricing ?? ''}</td></tr>`))}
<details><summary>Conditions</summary>${conditionsTable(status.conditions, (iso) => timeTag(iso, now))}</details>
</section>`
}

/** GET /providers. */
export async function providersPage(req: ConsoleRequest): Promise<PageResult> {
  const visible = await listVisible(req, () => req.kube.listAllLLMProviders(), (ns) => req.kube.listLLMProviders(ns))
  const providers = [...visible.items].sort((a, b) => (a.metadata.namespace ?? '').localeCompare(b.metadata.namespace ?? '') || (a.metadata.name ?? '').localeCompare(b.metadata.name ?? ''))
  const summary = providers.length > 0
    ? scrollTable('LLM providers', ['Name', 'Namespace', 'Health', 'Type', 'Default model', 'Last probe'], providers.map((p) =>
      html`<tr><td><a href="#${anchor(p)}">${p.metadata.name ?? ''}</a></td><td>${p.metadata.namespace ?? ''}</td><td>${phaseBadge(p.status?.phase)}</td><td>${p.spec.type}</td><td><code>${p.spec.model}</code></td><td>${timeTag(p.status?.lastHealthCheck, req.now)}</td></tr>`))
    : html`<p class="empty">No LLM providers to show.</p>`
  return {
    status: 200,
    title: 'Providers',
    nav: 'providers',
    body: join([html`<h1>LLM providers</h1>`, visibilityNote(visible, 'LLMProviders'), summary, ...providers.map((p) => providerSection(p, req.now))], '\n'),
  }
}
