/**
 * The console's configuration, read from the environment values it is given. Pure: the
 * process entry point passes its own environment; every value that cannot work is refused at start
 * with a ConsoleConfigError naming the variable, never discovered by the first person.
 */
import type { ConsoleAuth, ConsoleConfig } from '../context.js'
import { parseCidr } from './cidr.js'
import { TRACE_URL_VARIABLE, traceUrlTemplateProblem } from '../../telemetry/trace-url.js'

/** run-control's in-cluster address, when KINETIC_RUN_CONTROL_URL is not set. */
export const DEFAULT_RUN_CONTROL_URL = 'http://run-control.kinetic-system.svc.cluster.local'
/** The size of the AES-256-GCM session key, in bytes. */
export const SESSION_KEY_BYTES = 32

/** A configuration value the console cannot start with; the message names the variable. */
export class ConsoleConfigError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'ConsoleConfigError'
  }
}

const AUTHS: readonly ConsoleAuth[] = ['proxy', 'token', 'local']
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/

const value = (env: Record<string, string | undefined>, name: string): string | undefined => {
  const raw = env[name]?.trim()
  return raw === undefined || raw === '' ? undefined : raw
}

const list = (text: string | undefined): string[] => (text ?? '').split(',').map((s) => s.trim()).filter((s) => s !== '')

function flag(env: Record<string, string | undefined>, name: string, fallback: boolean): boolean {
  const raw = value(env, name)
  if (raw === undefined) return fallback
  if (raw === 'true') return true
  if (raw === 'false') return false
  throw new ConsoleConfigError(`${name} must be "true" or "false", got ${JSON.stringify(raw)}`)
}

function sessionKeyOf(raw: string | undefined): Buffer | undefined {
  if (raw === undefined) return undefined
  const key = Buffer.from(raw, 'base64')
  // Buffer.from skips characters that are not base64; re-encoding tells a real key from a typo.
  const canonical = (s: string) => s.replace(/=+$/, '')
  if (key.length !== SESSION_KEY_BYTES || canonical(key.toString('base64')) !== canonical(raw)) {
    throw new ConsoleConfigError(`KINETIC_CONSOLE_SESSION_KEY must be the base64 of ${SESSION_KEY_BYTES} random bytes (e.g. openssl rand -base64 32), the value given (${raw.length} characters, not shown) is not`)
  }
  return key
}

function runControlUrlOf(raw: string | undefined): string {
  if (raw === undefined) return DEFAULT_RUN_CONTROL_URL
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw new ConsoleConfigError(`KINETIC_RUN_CONTROL_URL must be an http(s) URL, got ${JSON.stringify(raw)}`)
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ConsoleConfigError(`KINETIC_RUN_CONTROL_URL must be an http(s) URL, got ${JSON.stringify(raw)}`)
  return raw.replace(/\/+$/, '')
}

/**
 * Pure: KINETIC_CONSOLE_AUTH (proxy|token|local, default token), KINETIC_CONSOLE_TRUSTED_PROXIES
 * (comma CIDRs; proxy mode needs at least one), KINETIC_CONSOLE_PROXY_SECRET (at least 32
 * characters; the proxy must then send it as X-Kinetic-Proxy-Secret), KINETIC_CONSOLE_ACTIONS and
 * KINETIC_CONSOLE_ANONYMOUS_READ (default false), KINETIC_RUN_CONTROL_URL,
 * KINETIC_CONSOLE_NAMESPACES (default the agent namespace), KINETIC_AGENT_NAMESPACE (default
 * ai-agents), KINETIC_CONSOLE_SESSION_KEY (base64 of 32 bytes; token mode without it starts, and
 * sign-in says the Secret is missing), KINETIC_CONSOLE_SECURE_COOKIES (default true).
 */
export function consoleConfig(env: Record<string, string | undefined>): ConsoleConfig {
  const auth = value(env, 'KINETIC_CONSOLE_AUTH') ?? 'token'
  if (!AUTHS.includes(auth as ConsoleAuth)) {
    throw new ConsoleConfigError(`KINETIC_CONSOLE_AUTH must be one of ${AUTHS.map((a) => `"${a}"`).join(', ')}, got ${JSON.stringify(auth)}`)
  }
  const trustedProxies = list(env.KINETIC_CONSOLE_TRUSTED_PROXIES)
  for (const cidr of trustedProxies) {
    if (!parseCidr(cidr)) throw new ConsoleConfigError(`KINETIC_CONSOLE_TRUSTED_PROXIES: ${JSON.stringify(cidr)} is not an IPv4 or IPv6 address range (e.g. 10.0.0.0/8, fd00::/8, 127.0.0.1)`)
  }
  if (auth === 'proxy' && trustedProxies.length === 0) {
    throw new ConsoleConfigError('KINETIC_CONSOLE_AUTH=proxy needs KINETIC_CONSOLE_TRUSTED_PROXIES: the addresses of the authenticating proxy, whose X-Forwarded-User is believed')
  }
  const proxySecret = value(env, 'KINETIC_CONSOLE_PROXY_SECRET')
  // A guessable secret would make the check decorative.
  if (proxySecret !== undefined && proxySecret.length < 32) {
    throw new ConsoleConfigError('KINETIC_CONSOLE_PROXY_SECRET must be at least 32 characters (e.g. openssl rand -hex 32)')
  }
  const agentNamespace = value(env, 'KINETIC_AGENT_NAMESPACE') ?? value(env, 'PURKO_AGENT_NAMESPACE') ?? 'ai-agents'
  if (!DNS_LABEL.test(agentNamespace) || agentNamespace.length > 63) throw new ConsoleConfigError(`KINETIC_AGENT_NAMESPACE must be a namespace name, got ${JSON.stringify(agentNamespace)}`)
  const namespaces = list(env.KINETIC_CONSOLE_NAMESPACES)
  for (const ns of namespaces) {
    if (!DNS_LABEL.test(ns) || ns.length > 63) throw new ConsoleConfigError(`KINETIC_CONSOLE_NAMESPACES: ${JSON.stringify(ns)} is not a namespace name`)
  }
  const sessionKey = sessionKeyOf(value(env, 'KINETIC_CONSOLE_SESSION_KEY'))
  const traceUrlTemplate = value(env, TRACE_URL_VARIABLE)
  const traceProblem = traceUrlTemplate === undefined ? null : traceUrlTemplateProblem(traceUrlTemplate)
  if (traceProblem) throw new ConsoleConfigError(traceProblem)
  return {
    auth: auth as ConsoleAuth,
    trustedProxies,
    ...(proxySecret ? { proxySecret } : {}),
    actions: flag(env, 'KINETIC_CONSOLE_ACTIONS', false),
    anonymousRead: flag(env, 'KINETIC_CONSOLE_ANONYMOUS_READ', false),
    runControlUrl: runControlUrlOf(value(env, 'KINETIC_RUN_CONTROL_URL')),
    namespaces: namespaces.length > 0 ? [...new Set(namespaces)] : [agentNamespace],
    agentNamespace,
    ...(sessionKey ? { sessionKey } : {}),
    secureCookies: flag(env, 'KINETIC_CONSOLE_SECURE_COOKIES', true),
    ...(traceUrlTemplate ? { traceUrlTemplate } : {}),
  }
}
