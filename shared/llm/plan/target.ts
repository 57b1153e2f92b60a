import { sha256Hex } from '../../core/sha256.js'
import type { LLMProvider } from '../../schemas/llmprovider.js'

/** The four list-models dialects a probe speaks. */
export type ProbeApi = 'openai' | 'anthropic' | 'ollama' | 'vertex-ai'

/** Everything one probe needs: where, how, and with which key. Built by `probeTargetFor`. */
export interface ProbeTarget {
  api: ProbeApi
  /** The list-models URL (first page). */
  url: string
  /** API key, or the service-account JSON for vertex-ai. Never logged. */
  secret?: string
  /** vertex-ai: project for `x-goog-user-project` (spec.config.projectId, else the key's project_id). */
  projectId?: string
}

/** Why a provider cannot be probed as written. */
export interface TargetProblem {
  reason: 'EndpointInvalid'
  message: string
}

const OPENAI_DEFAULT = 'https://api.openai.com/v1'
const ANTHROPIC_DEFAULT = 'https://api.anthropic.com'
const DEFAULT_REGION = 'us-central1'

/** Pure: `spec.apiFormat`, or purko's inference (anthropic for anthropic and vertex-ai, else openai). */
export function apiFormatOf(provider: LLMProvider): 'anthropic' | 'openai' {
  return provider.spec.apiFormat ?? (provider.spec.type === 'anthropic' || provider.spec.type === 'vertex-ai' ? 'anthropic' : 'openai')
}

function baseUrl(raw: string | undefined, fallback: string | undefined, field: string): URL | TargetProblem {
  const text = (raw ?? '').trim() || fallback
  if (!text) return { reason: 'EndpointInvalid', message: `${field} is required to probe this provider` }
  let url: URL
  try {
    url = new URL(text)
  } catch {
    return { reason: 'EndpointInvalid', message: `${field} is not a URL` }
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return { reason: 'EndpointInvalid', message: `${field} must be an http or https URL` }
  if (url.username || url.password) return { reason: 'EndpointInvalid', message: `${field} must not carry user info (the key belongs in the credentials Secret)` }
  url.hash = ''
  return url
}

const isProblem = (x: URL | TargetProblem): x is TargetProblem => !(x instanceof URL)
/** `base` with `path` appended to its path (query kept). */
function join(base: URL, path: string): string {
  const url = new URL(base.href)
  url.pathname = `${url.pathname.replace(/\/+$/, '')}${path}`
  return url.href
}

/**
 * Pure: the probe for a provider. openai, and custom in the openai format: `GET <endpoint>/models`
 * (default endpoint https://api.openai.com/v1) with a bearer key. anthropic, and custom in the
 * anthropic format: `GET <endpoint>/v1/models` with `x-api-key` (an endpoint already ending in
 * /v1, as the executor's is, is not doubled; default https://api.anthropic.com). ollama:
 * `GET <endpoint>/api/tags` (a trailing /v1, the OpenAI-compatible path, is dropped). vertex-ai:
 * the publisher models of the region in spec.config (publisher anthropic for the anthropic
 * format, else google).
 */
export function probeTargetFor(provider: LLMProvider, secret?: string): ProbeTarget | TargetProblem {
  const { type, endpoint, config } = provider.spec
  const withSecret = <T extends object>(t: T) => (secret !== undefined ? { ...t, secret } : t)
  switch (type) {
    case 'vertex-ai': {
      const region = (config?.region ?? '').trim() || DEFAULT_REGION
      if (!/^[a-z0-9-]+$/.test(region)) return { reason: 'EndpointInvalid', message: 'spec.config.region is not a region name' }
      const host = region === 'global' ? 'aiplatform.googleapis.com' : `${region}-aiplatform.googleapis.com`
      const publisher = apiFormatOf(provider) === 'anthropic' ? 'anthropic' : 'google'
      const projectId = (config?.projectId ?? '').trim()
      return withSecret({ api: 'vertex-ai' as const, url: `https://${host}/v1beta1/publishers/${publisher}/models`, ...(projectId ? { projectId } : {}) })
    }
    case 'ollama': {
      const base = baseUrl(endpoint, undefined, 'spec.endpoint')
      if (isProblem(base)) return base
      base.pathname = base.pathname.replace(/\/+$/, '').replace(/\/v1$/, '')
      return withSecret({ api: 'ollama' as const, url: join(base, '/api/tags') })
    }
    case 'anthropic':
    case 'openai':
    case 'custom': {
      const anthropic = type === 'anthropic' || (type === 'custom' && apiFormatOf(provider) === 'anthropic')
      const fallback = type === 'custom' ? undefined : anthropic ? ANTHROPIC_DEFAULT : OPENAI_DEFAULT
      const base = baseUrl(endpoint, fallback, 'spec.endpoint')
      if (isProblem(base)) return base
      if (!anthropic) return withSecret({ api: 'openai' as const, url: join(base, '/models') })
      const path = /\/v1\/*$/.test(base.pathname) ? '/models' : '/v1/models'
      return withSecret({ api: 'anthropic' as const, url: join(base, path) })
    }
  }
}

/** Pure: whether `probeTargetFor` gave a problem instead of a target. */
export const isTargetProblem = (t: ProbeTarget | TargetProblem): t is TargetProblem => 'reason' in t

/**
 * Pure: the dedupe key of a probe: API, URL, project and a hash of the key. Providers sharing
 * it share one probe per round. The key itself never appears (only 16 hex digits of its SHA-256).
 */
export function probeKeyOf(target: ProbeTarget): string {
  const credential = target.secret === undefined ? '-' : sha256Hex(target.secret).slice(0, 16)
  return `${target.api}|${target.url}|${target.projectId ?? ''}|${credential}`
}

/** Pure: a URL as messages show it: no user info, no query (either may carry a key). */
export function displayUrl(url: string): string {
  try {
    const u = new URL(url)
    return `${u.protocol}//${u.host}${u.pathname}`
  } catch {
    return '<invalid URL>'
  }
}
