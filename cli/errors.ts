import { apiMessage, ConflictError, RefusedError, TransientError } from '../shared/core/errors.js'

/** A failure the user can act on: its message goes to stderr as it is, exit code 1. */
export class CliError extends Error {
  constructor(message: string, readonly exitCode: 1 | 2 = 1) {
    super(message)
    this.name = 'CliError'
  }
}

/** A command line that does not parse: exit code 2, with a pointer to --help. */
export class UsageError extends CliError {
  constructor(message: string) {
    super(message, 2)
    this.name = 'UsageError'
  }
}

/** What a Kubernetes call was doing, so a refusal can say which permission is missing. */
export interface KubeAction {
  verb: string
  /** e.g. `workflows.purko.io`, `pods/log`, `events`. */
  resource: string
  namespace?: string
  /** Across every namespace (`-A`): only a ClusterRole, through a ClusterRoleBinding, grants it. */
  allNamespaces?: boolean
}

/** Where the CLI is talking to, for error messages. */
export interface Target {
  server: string
  context: string
  user: string
}

/** The HTTP status of an API failure, wherever the adapter put it. */
export function apiStatusOf(err: unknown): number | undefined {
  for (let e: unknown = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof RefusedError) return e.code
    // client-node's ApiException (not imported: the CLI loads client-node only when it needs the cluster).
    const code = (e as { code?: unknown; body?: unknown }).code
    if (typeof code === 'number' && 'body' in (e as object)) return code
  }
  return undefined
}

/** A network error code (ECONNREFUSED, ENOTFOUND, ...) somewhere in the cause chain. */
function networkCode(err: unknown): string | undefined {
  for (let e: unknown = err, depth = 0; e && depth < 6; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code
    if (typeof code === 'string') return code
  }
  return undefined
}

/** The deepest message of the cause chain (the socket error behind "fetch failed"). */
function rootMessage(err: unknown): string {
  let message = (err as Error)?.message ?? String(err)
  for (let e: unknown = (err as { cause?: unknown })?.cause, depth = 0; e && depth < 6; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof Error && e.message) message = e.message
  }
  return message
}

/**
 * Pure: a failed Kubernetes call as a message a person can act on: a 403 names the verb and
 * resource to ask for, an unreachable server names the server and context.
 */
export function explainKubeError(err: unknown, action: KubeAction, target: Target): CliError {
  if (err instanceof CliError) return err
  const where = action.namespace ? ` in namespace ${action.namespace}` : action.allNamespaces ? ' in every namespace' : ''
  const code = apiStatusOf(err)
  if (code === 403) {
    const scope = action.namespace ? ` -n ${action.namespace}` : action.allNamespaces ? ' --all-namespaces' : ''
    const grant = action.allNamespaces ? 'a ClusterRole (bound by a ClusterRoleBinding)' : 'a Role'
    return new CliError(
      `forbidden: user "${target.user}" may not ${action.verb} ${action.resource}${where} (context ${target.context}).\n`
      + `The API server said: ${apiMessage(err)}\n`
      + `Ask for ${grant} that grants "${action.verb}" on ${action.resource}; check with: kubectl auth can-i ${action.verb} ${action.resource}${scope}`,
    )
  }
  if (code === 401) {
    return new CliError(`the API server at ${target.server} did not accept the credentials of user "${target.user}" (401 Unauthorized); refresh the token in your kubeconfig (context ${target.context})`)
  }
  if (code === 404) {
    return new CliError(`not found: ${action.resource}${where} (${apiMessage(err)})`)
  }
  if (err instanceof ConflictError) {
    return new CliError(`the object changed while it was being written (409 Conflict); run the command again`)
  }
  if (code !== undefined && (code === 429 || code >= 500)) {
    return new CliError(`the API server at ${target.server} answered ${code} to ${action.verb} ${action.resource}${where}: ${apiMessage(err)}; try again shortly`)
  }
  if (err instanceof TransientError || networkCode(err) !== undefined) {
    return new CliError(
      `cannot reach the Kubernetes API server at ${target.server} (${rootMessage(err)}).\n`
      + `Check the current context (${target.context}) with \`kubectl config current-context\`, or start the local plane with \`npm start\`.`,
    )
  }
  if (code !== undefined) {
    return new CliError(`the API server refused to ${action.verb} ${action.resource}${where} (${code}): ${apiMessage(err)}`)
  }
  return new CliError(`could not ${action.verb} ${action.resource}${where}: ${(err as Error)?.message ?? String(err)}`)
}
