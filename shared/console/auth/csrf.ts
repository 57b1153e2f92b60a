/**
 * What makes a console POST come from the console's own pages: a custom header a cross-site
 * form cannot send (and cross-site script cannot either without a CORS preflight the console
 * never answers), and an Origin, when the browser sends one, naming the console itself.
 */
import type { Context } from 'hono'

/** The header every action POST carries (the console's client script sets it). */
export const CONSOLE_HEADER = 'x-kinetic-console'

/**
 * Pure: whether the Origin header is absent or names the host the request was sent to. Hosts
 * are compared, not schemes: TLS usually ends at a proxy in front of the console, so the scheme
 * the browser used is not the one the console sees. `forwardedHost` is X-Forwarded-Host from a
 * trusted proxy (which may rewrite Host).
 */
export function isSameOrigin(origin: string | undefined, host: string | undefined, forwardedHost?: string): boolean {
  if (origin === undefined) return true
  let originHost: string
  try {
    originHost = new URL(origin).host.toLowerCase()
  } catch {
    return false // includes "null", an opaque origin
  }
  const hosts = [host, ...(forwardedHost ?? '').split(',')].map((h) => h?.trim().toLowerCase()).filter((h): h is string => !!h)
  return hosts.includes(originHost)
}

/** Whether this request's Origin (if any) is the console's own (Host, or X-Forwarded-Host when `trustForwarded`). */
export function hasOwnOrigin(c: Context, trustForwarded: boolean): boolean {
  return isSameOrigin(c.req.header('origin'), c.req.header('host') ?? new URL(c.req.url).host, trustForwarded ? c.req.header('x-forwarded-host') : undefined)
}

/** Whether this request carries the console header and its own Origin (or none). */
export function isConsolePost(c: Context, trustForwarded: boolean): boolean {
  return c.req.header(CONSOLE_HEADER) === '1' && hasOwnOrigin(c, trustForwarded)
}
