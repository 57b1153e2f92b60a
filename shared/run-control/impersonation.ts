/**
 * Acting for someone else, as kube-apiserver's impersonation does it: a caller (the console's
 * ServiceAccount behind an authenticating proxy) sends Impersonate-User, optional
 * Impersonate-Group (repeated or comma-separated) and Impersonate-Uid; it must be allowed the
 * `impersonate` verb on each, and then the action is authorized and recorded as the person it
 * names, with the caller kept as `via`. Pure.
 */
import type { AccessAttributes, TokenIdentity } from '../kube/port.js'
import { badRequest } from './errors.js'

/** Who the caller asks to act as. */
export interface ImpersonationRequest {
  user: string
  groups: string[]
  uid?: string
}

const SERVICE_ACCOUNT_PREFIX = 'system:serviceaccount:'
const AUTHENTICATED = 'system:authenticated'
const UNAUTHENTICATED = 'system:unauthenticated'
const ANONYMOUS_USER = 'system:anonymous'

const list = (value: string | null) => (value ?? '').split(',').map((s) => s.trim()).filter((s) => s !== '')

/**
 * Pure: the impersonation a request asks for; null without Impersonate-User. 400 for groups or
 * a uid without a user (kube-apiserver refuses those too) and for Impersonate-Extra-* (user
 * extras are not supported: ignoring them would act for a different identity than asked).
 * Repeated headers arrive joined by commas, so a group name cannot itself contain a comma.
 */
export function impersonationOf(headers: Headers): ImpersonationRequest | null {
  for (const name of headers.keys()) {
    if (name.toLowerCase().startsWith('impersonate-extra-')) throw badRequest('Impersonate-Extra-* headers are not supported by run-control')
  }
  const user = headers.get('impersonate-user')?.trim() ?? ''
  const groups = [...new Set(list(headers.get('impersonate-group')))]
  const uid = headers.get('impersonate-uid')?.trim() ?? ''
  if (user === '') {
    if (groups.length > 0 || uid !== '' || headers.has('impersonate-user')) throw badRequest('Impersonate-Group and Impersonate-Uid need Impersonate-User (a non-empty user name)')
    return null
  }
  return { user, groups, ...(uid ? { uid } : {}) }
}

/** Pure: namespace and name of a ServiceAccount username (`system:serviceaccount:<ns>:<name>`). */
function serviceAccountOf(user: string): { namespace: string; name: string } | undefined {
  if (!user.startsWith(SERVICE_ACCOUNT_PREFIX)) return undefined
  const [namespace, name, ...rest] = user.slice(SERVICE_ACCOUNT_PREFIX.length).split(':')
  return namespace && name && rest.length === 0 ? { namespace, name } : undefined
}

/**
 * Pure: the `impersonate` reviews the caller must pass, in kube-apiserver's order: the user
 * (`users`, or `serviceaccounts` in its namespace for a ServiceAccount's username), each group
 * (`groups`), the uid (`uids` in authentication.k8s.io). All cluster-scoped except the ServiceAccount.
 */
export function impersonationAccess(request: ImpersonationRequest): AccessAttributes[] {
  const sa = serviceAccountOf(request.user)
  const checks: AccessAttributes[] = [sa
    ? { verb: 'impersonate', group: '', resource: 'serviceaccounts', namespace: sa.namespace, name: sa.name }
    : { verb: 'impersonate', group: '', resource: 'users', name: request.user }]
  for (const group of request.groups) checks.push({ verb: 'impersonate', group: '', resource: 'groups', name: group })
  if (request.uid) checks.push({ verb: 'impersonate', group: 'authentication.k8s.io', resource: 'uids', name: request.uid })
  return checks
}

/**
 * Pure: who the caller becomes, with the groups kube-apiserver adds: a ServiceAccount named
 * without groups gets its fixed ones; everyone but system:anonymous gets system:authenticated
 * (unless system:authenticated or system:unauthenticated was asked for), system:anonymous gets
 * system:unauthenticated.
 */
export function impersonatedIdentity(request: ImpersonationRequest): TokenIdentity {
  const sa = serviceAccountOf(request.user)
  const groups = request.groups.length === 0 && sa ? ['system:serviceaccounts', `system:serviceaccounts:${sa.namespace}`] : [...request.groups]
  if (request.user === ANONYMOUS_USER) {
    if (!groups.includes(UNAUTHENTICATED)) groups.push(UNAUTHENTICATED)
  } else if (!groups.includes(AUTHENTICATED) && !groups.includes(UNAUTHENTICATED)) {
    groups.push(AUTHENTICATED)
  }
  return { username: request.user, groups, ...(request.uid ? { uid: request.uid } : {}) }
}

/** Pure: "<caller> may not impersonate <resource> <name>", the message of a 403. */
export function impersonationForbiddenMessage(caller: string, a: AccessAttributes): string {
  const resource = `${a.resource}${a.group ? `.${a.group}` : ''}`
  return `${caller} may not impersonate ${resource} ${a.namespace ? `${a.namespace}/` : ''}${a.name ?? ''}`
}
