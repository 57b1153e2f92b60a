import type { Manifest } from './knative/manifests.js'

/**
 * The environment of a function process on the local plane (function-process.ts runs it): its
 * Service's literal env with broker addresses made local, this process's own environment, and
 * what the local plane changes (caller checks, the console's settings). Pure.
 */

/** The variable by which the recipes MCP server checks its callers with TokenReview and SubjectAccessReview. */
export const CALLER_AUTH = 'KINETIC_RECIPES_MCP_AUTH'
/** Every function's variable for checking callers with TokenReview and SubjectAccessReview (recipes-mcp, run-control). */
export const CALLER_AUTH_VARIABLES: readonly string[] = [CALLER_AUTH, 'KINETIC_RUN_CONTROL_AUTH']

/**
 * Pure: the embedded API server serves neither TokenReview nor SubjectAccessReview, so there a
 * function that checks its callers with them runs with auth `none` (every call allowed, logged
 * as anonymous). Against a cluster it keeps its Service's setting (`kubernetes`).
 */
export function callerAuthEnv(serviceEnv: Record<string, string>, onCluster: boolean): Record<string, string> {
  if (onCluster) return {}
  return Object.fromEntries(CALLER_AUTH_VARIABLES.filter((v) => serviceEnv[v] !== undefined).map((v) => [v, 'none']))
}

/**
 * Pure: the console on the local plane, actions on, cookies without Secure (plain HTTP on
 * 127.0.0.1), actions sent to the local run-control. On the embedded API server the plane's
 * admin is the person (no sign-in); against a cluster people sign in with their own bearer token
 * (the console's ServiceAccount may read nothing), sealed with `sessionKey` (base64, 32 bytes).
 */
export function localConsoleEnv(runControlUrl: string | undefined, cluster?: { sessionKey: string }): Record<string, string> {
  return {
    KINETIC_CONSOLE_AUTH: cluster ? 'token' : 'local',
    ...(cluster ? { KINETIC_CONSOLE_SESSION_KEY: cluster.sessionKey } : {}),
    KINETIC_CONSOLE_ACTIONS: 'true',
    KINETIC_CONSOLE_SECURE_COOKIES: 'false',
    ...(runControlUrl ? { KINETIC_RUN_CONTROL_URL: runControlUrl } : {}),
  }
}

/**
 * Literal env of the Service's first container; a value that points at an in-cluster
 * broker-ingress URL is rewritten to the local Broker.
 */
export function serviceEnv(svc: Manifest, brokerUrl: (ns: string, name: string) => string): Record<string, string> {
  const spec = svc.spec as { template?: { spec?: { containers?: Array<{ env?: Array<{ name: string; value?: string }> }> } } }
  const out: Record<string, string> = {}
  for (const e of spec.template?.spec?.containers?.[0]?.env ?? []) {
    if (e.value === undefined) continue
    const m = /^https?:\/\/broker-ingress\.[^/]+\/([^/]+)\/([^/]+)\/?$/.exec(e.value)
    out[e.name] = m ? brokerUrl(m[1] as string, m[2] as string) : e.value
  }
  return out
}

/** The environment as strings, without NODE_OPTIONS (a function process sets its own). */
export function stringEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [name, value] of Object.entries(env)) if (value !== undefined && name !== 'NODE_OPTIONS') out[name] = value
  return out
}
