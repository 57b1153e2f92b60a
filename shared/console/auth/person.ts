/**
 * Who is using the console, for one request, by the configured auth mode (see ConsoleConfig):
 * the local plane's admin, the user an authenticating proxy names, or the person whose bearer
 * token is in the session cookie (or, for scripts, an Authorization header).
 */
import { timingSafeEqual } from 'node:crypto'
import type { Context } from 'hono'
import { getCookie } from 'hono/cookie'
import { TransientError } from '../../core/errors.js'
import type { ConsoleDeps, Person } from '../context.js'
import { isInAnyCidr, parseCidr, type Cidr } from './cidr.js'
import { openSession, SESSION_COOKIE } from './session.js'

/** The local plane's admin (auth=local): the embedded API server's own admin rights. */
export const LOCAL_ADMIN: Person = { mode: 'local', name: 'kinetic-local-admin', groups: ['system:masters'], credential: { kind: 'own' } }

/** Someone not identified, reading with the console's own ServiceAccount (only with anonymousRead; pages say so). */
export const ANONYMOUS_READER: Person = { mode: 'anonymous', name: 'anonymous', groups: [], credential: { kind: 'own' } }

/** The proxy's headers naming the person. */
export const FORWARDED_USER = 'x-forwarded-user'
export const FORWARDED_GROUPS = 'x-forwarded-groups'
/** The header carrying KINETIC_CONSOLE_PROXY_SECRET from the proxy. */
export const PROXY_SECRET_HEADER = 'x-kinetic-proxy-secret'

// Warned about once per console (one per process in production): a flood would only repeat it.
const warnedUntrusted = new WeakSet<ConsoleDeps>()
const parsedProxies = new WeakMap<ConsoleDeps, Cidr[]>()

/**
 * The TCP peer's address as @hono/node-server reports it (IPv4 peers of a dual-stack socket as
 * `::ffff:a.b.c.d`); undefined when the request did not come over a socket (in-memory requests).
 */
export function peerAddress(c: Context): string | undefined {
  const env = c.env as { incoming?: { socket?: { remoteAddress?: string } }; server?: { incoming?: { socket?: { remoteAddress?: string } } } } | undefined
  return (env?.server?.incoming ?? env?.incoming)?.socket?.remoteAddress
}

/** Pure: a comma-separated header (repeated headers arrive joined by commas) as distinct, non-empty values. */
export function headerList(value: string | undefined): string[] {
  return [...new Set((value ?? '').split(',').map((s) => s.trim()).filter((s) => s !== ''))]
}

/** Pure: the token of an `Authorization: Bearer <token>` header. */
export function bearerToken(header: string | undefined): string | undefined {
  return /^Bearer +([^\s]+) *$/i.exec(header ?? '')?.[1]
}

function trustedProxies(deps: ConsoleDeps): Cidr[] {
  let ranges = parsedProxies.get(deps)
  if (!ranges) {
    ranges = deps.config.trustedProxies.map(parseCidr).filter((r): r is Cidr => r !== null)
    parsedProxies.set(deps, ranges)
  }
  return ranges
}

/** Pure: whether the header holds the configured secret, compared in constant time. */
export function proxySecretMatches(expected: string, given: string | undefined): boolean {
  if (given === undefined) return false
  const a = Buffer.from(expected)
  const b = Buffer.from(given)
  return a.length === b.length && timingSafeEqual(a, b)
}

/**
 * Whether the request comes straight from a trusted proxy: auth=proxy, the TCP peer inside
 * KINETIC_CONSOLE_TRUSTED_PROXIES and, when KINETIC_CONSOLE_PROXY_SECRET is set, that secret in
 * X-Kinetic-Proxy-Secret. Only the TCP peer counts, never X-Forwarded-For, which any sender can
 * write. Behind Knative the peer is the pod's own queue-proxy (127.0.0.1), so there the address
 * proves nothing and the secret is what tells the proxy from anyone else who reaches the Service.
 */
export function isFromTrustedProxy(deps: ConsoleDeps, c: Context): boolean {
  if (deps.config.auth !== 'proxy' || !isInAnyCidr(peerAddress(c), trustedProxies(deps))) return false
  return deps.config.proxySecret === undefined || proxySecretMatches(deps.config.proxySecret, c.req.header(PROXY_SECRET_HEADER))
}

function fromProxy(deps: ConsoleDeps, c: Context): Person | null {
  const user = c.req.header(FORWARDED_USER)?.trim()
  const peer = peerAddress(c)
  if (!isFromTrustedProxy(deps, c)) {
    if ((user !== undefined || c.req.header(FORWARDED_GROUPS) !== undefined) && !warnedUntrusted.has(deps)) {
      warnedUntrusted.add(deps)
      // Never the values: they are whatever the sender made up.
      deps.log.warn({ peer, trustedProxies: deps.config.trustedProxies, secretRequired: deps.config.proxySecret !== undefined }, 'Ignored X-Forwarded-User/X-Forwarded-Groups from a peer outside KINETIC_CONSOLE_TRUSTED_PROXIES or without the proxy secret (logged once)')
    }
    return null
  }
  if (!user) return null
  // Kubernetes' own identities (system:masters, system:kube-controller-manager, ...) are never a
  // person: impersonating them would be the API server's strongest rights, whatever the proxy says.
  if (isSystemName(user)) {
    deps.log.warn({ peer }, 'Refused to act as a system: user named by the proxy (X-Forwarded-User)')
    return null
  }
  // No system: group either; the API server adds system:authenticated to an impersonated user
  // itself, so asking for it would only need one more impersonation grant.
  const groups = headerList(c.req.header(FORWARDED_GROUPS)).filter((g) => !isSystemName(g))
  return { mode: 'proxy', name: user, groups, credential: { kind: 'impersonate', user, groups } }
}

/** Pure: a name Kubernetes reserves for its own users and groups. */
function isSystemName(name: string): boolean {
  return name.toLowerCase().startsWith('system:')
}

async function fromToken(deps: ConsoleDeps, c: Context): Promise<Person | null> {
  const bearer = bearerToken(c.req.header('authorization'))
  if (bearer) {
    try {
      const identity = await deps.kubeFor({ kind: 'token', token: bearer }).whoAmI()
      return { mode: 'token', name: identity.username, groups: identity.groups ?? [], credential: { kind: 'token', token: bearer } }
    } catch (err) {
      // An outage is not a refusal: the person would otherwise be told to sign in again.
      if (err instanceof TransientError) throw err
      return null
    }
  }
  const cookie = getCookie(c, SESSION_COOKIE)
  if (!cookie || !deps.config.sessionKey) return null
  const session = openSession(deps.config.sessionKey, cookie, deps.now())
  if (!session) return null
  return { mode: 'token', name: session.user, groups: session.groups, credential: { kind: 'token', token: session.token } }
}

/**
 * The person this request comes from; null when nobody is identified and anonymous reading is
 * off (the caller then shows sign-in or the proxy's 401 page). An untrusted peer's proxy headers
 * are ignored (one warning per console, without their values). TransientError when a bearer
 * header could not be checked because the API server is unavailable.
 */
export async function personFor(deps: ConsoleDeps, c: Context): Promise<Person | null> {
  const { auth, anonymousRead } = deps.config
  if (auth === 'local') return LOCAL_ADMIN
  const person = auth === 'proxy' ? fromProxy(deps, c) : await fromToken(deps, c)
  return person ?? (anonymousRead ? ANONYMOUS_READER : null)
}
