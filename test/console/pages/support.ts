// What the console page tests share: a ConsoleRequest over a EmbeddedKube, and the text a person reads in markup.
import type { ConsoleConfig, ConsoleRequest, Person } from '../../../shared/console/context.js'
import type { Html } from '../../../shared/console/html.js'
import type { EmbeddedKube } from '../../support/embedded-kube.js'

/** The clock every page test reads. */
export const NOW = new Date('2026-12-01T12:00:00.000Z')

/** A console configuration: token sign-in, read only, namespaces team-a and team-b, unless overridden. */
export function configOf(overrides: Partial<ConsoleConfig> = {}): ConsoleConfig {
  return {
    auth: 'token', trustedProxies: [], actions: false, anonymousRead: false,
    namespaces: ['team-a', 'team-b'], agentNamespace: 'ai-agents', secureCookies: true, ...overrides,
  }
}

/** Alice, signed in with a token. */
export const ALICE: Person = { mode: 'token', name: 'alice', groups: ['team-a'], credential: { kind: 'token', token: 'alice-token' } }

/** A request for `path` as `person` reading `kube`. */
export function requestFor(kube: EmbeddedKube, path = '/workflows', opts: { person?: Person; config?: Partial<ConsoleConfig> } = {}): ConsoleRequest {
  return {
    person: opts.person ?? ALICE,
    kube,
    now: NOW,
    config: configOf(opts.config),
    url: new URL(path, 'http://console.test'),
    assetUrl: (name) => `/assets/0123456789abcdef/${name}`,
  }
}

const ENTITIES: Record<string, string> = { '&amp;': '&', '&lt;': '<', '&gt;': '>', '&quot;': '"', '&#39;': "'" }

/** The text a person reads: tags dropped, entities decoded, white space collapsed. */
export function textOf(markup: Html | string): string {
  const raw = typeof markup === 'string' ? markup : markup.html
  return raw.replace(/<[^>]*>/g, ' ').replace(/&(amp|lt|gt|quot|#39);/g, (e) => ENTITIES[e] ?? e).replace(/\s+/g, ' ').trim()
}

/** The rows of the first table after `label` (its aria-label), each row's cell texts. */
export function rowsOf(markup: Html | string, label: string): string[][] {
  const raw = typeof markup === 'string' ? markup : markup.html
  const start = raw.indexOf(`aria-label="${label}"`)
  if (start < 0) return []
  const end = raw.indexOf('</table>', start)
  const body = raw.slice(raw.indexOf('<tbody>', start), end)
  return [...body.matchAll(/<tr>([\s\S]*?)<\/tr>/g)].map((m) => [...m[1]!.matchAll(/<td[^>]*>([\s\S]*?)<\/td>/g)].map((c) => textOf(c[1]!)))
}
