import { flag, type ParsedArgs } from './args.js'
import type { Session } from './command.js'
import { CliError } from './errors.js'
import type { KubeConfig } from '@kubernetes/client-node'

/** Environment variable naming the run-control base URL (same as --server). */
export const RUN_CONTROL_ENV = 'KINETIC_RUN_CONTROL_URL'

/** The `--server` flag of the commands that may go through run-control. */
export const SERVER_FLAG = {
  name: 'server', value: 'url',
  description: `go through run-control at this URL (verified identity) instead of writing annotations (default: $${RUN_CONTROL_ENV})`,
}

/** The run-control base URL in effect, if any. */
export function runControlUrl(session: Session, args: ParsedArgs): string | undefined {
  const url = flag(args, 'server') ?? session.io.env[RUN_CONTROL_ENV]
  return url === undefined || url === '' ? undefined : url.replace(/\/+$/, '')
}

/**
 * POSTs a JSON body to run-control with the kubeconfig user's bearer token; returns the JSON
 * answer. Every failure is a message saying what to do (`rbac` names the permission needed).
 */
export async function postRunControl(
  session: Session, base: string, path: string, body: Record<string, unknown>, rbac: string,
): Promise<Record<string, unknown>> {
  const url = `${base}${path}`
  const authorization = await bearerHeader(session.config.kc)
  let res: Response
  try {
    res = await session.io.fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json', ...(authorization ? { authorization } : {}) },
      body: JSON.stringify(body),
    })
  } catch (err) {
    const cause = (err as { cause?: { message?: string } }).cause?.message ?? (err as Error).message
    throw new CliError(`cannot reach run-control at ${base} (${cause}); check --server or $${RUN_CONTROL_ENV}`)
  }
  const text = await res.text()
  let answer: Record<string, unknown> = {}
  try {
    const parsed = JSON.parse(text) as unknown
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) answer = parsed as Record<string, unknown>
  } catch { /* not JSON: the status says enough */ }
  if (res.ok) return answer
  const said = typeof answer.message === 'string' ? answer.message : typeof answer.error === 'string' ? answer.error : text.slice(0, 300)
  if (res.status === 401) {
    throw new CliError(`run-control at ${base} did not accept your credentials (401); it needs the bearer token of the kubeconfig user "${session.config.user}" (context ${session.config.context})`)
  }
  if (res.status === 403) {
    throw new CliError(`forbidden by run-control: user "${session.config.user}" needs ${rbac}${said ? ` (${said})` : ''}`)
  }
  throw new CliError(`run-control answered ${res.status} to POST ${path}${said ? `: ${said}` : ''}`)
}

/** `--reason`, for the commands whose run-control request records one. */
export const REASON_FLAG = { name: 'reason', value: 'text', description: 'why (recorded by run-control with your name; needs --server)' }

/** Path segments, escaped. */
export function segments(...parts: string[]): string {
  return parts.map((p) => `/${encodeURIComponent(p)}`).join('')
}

/** The `Authorization` header the kubeconfig user sends (token, token file, exec plugin, ...), if any. */
export async function bearerHeader(kc: KubeConfig): Promise<string | undefined> {
  const options = await kc.applyToFetchOptions({})
  const headers = options.headers as Record<string, string> | { get?(name: string): string | null } | undefined
  if (!headers) return undefined
  if (typeof (headers as { get?: unknown }).get === 'function') return (headers as { get(name: string): string | null }).get('Authorization') ?? undefined
  const record = headers as Record<string, string>
  return record.Authorization ?? record.authorization
}
