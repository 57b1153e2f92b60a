/**
 * The self reviews a client asks of any API server: SelfSubjectAccessReview (may I?),
 * SelfSubjectRulesReview (what may I?) and SelfSubjectReview (who am I?). The embedded server
 * has one user, the local admin, and authorizes everything, so the answers are fixed; an
 * impersonating request is served as usual (there is nothing to authorize) and is told who it
 * impersonates.
 */
import type { IncomingMessage } from 'node:http'
import { invalid as invalidField } from '../../shared/crd/field-error.js'
import { badRequest, invalid } from './api-error.js'

/** Who every request to the embedded server is. */
export const LOCAL_ADMIN = { username: 'kinetic-local-admin', groups: ['system:masters', 'system:authenticated'] }

/** The review resources, for discovery and routing (create only, cluster-scoped, as on a real server). */
export const REVIEW_RESOURCES = [
  { group: 'authorization.k8s.io', version: 'v1', plural: 'selfsubjectaccessreviews', singular: 'selfsubjectaccessreview', kind: 'SelfSubjectAccessReview' },
  { group: 'authorization.k8s.io', version: 'v1', plural: 'selfsubjectrulesreviews', singular: 'selfsubjectrulesreview', kind: 'SelfSubjectRulesReview' },
  { group: 'authentication.k8s.io', version: 'v1', plural: 'selfsubjectreviews', singular: 'selfsubjectreview', kind: 'SelfSubjectReview' },
] as const

/** The review resource at `segs` (`apis/<group>/<version>/<plural>`), if it is one. */
export function reviewAt(segs: string[]): (typeof REVIEW_RESOURCES)[number] | undefined {
  if (segs.length !== 4 || segs[0] !== 'apis') return undefined
  return REVIEW_RESOURCES.find((r) => r.group === segs[1] && r.version === segs[2] && r.plural === segs[3])
}

/** Pure: the answered review for a request body, the request's Impersonate-* header lines and the time (RFC 3339, seconds). */
export function answerReview(
  review: (typeof REVIEW_RESOURCES)[number], body: unknown, headers: IncomingMessage['headersDistinct'], now: string,
): object {
  const spec = (body && typeof body === 'object' ? (body as { spec?: unknown }).spec : undefined) ?? {}
  const base = { apiVersion: `${review.group}/${review.version}`, kind: review.kind, metadata: { creationTimestamp: null } }
  if (review.kind === 'SelfSubjectReview') return { ...base, metadata: { creationTimestamp: now }, status: { userInfo: impersonatedUser(headers) ?? LOCAL_ADMIN } }
  if (review.kind === 'SelfSubjectRulesReview') {
    if (!(spec as { namespace?: unknown }).namespace) throw badRequest('no namespace on request')
    // Everything, as one rule of each kind (kube-apiserver adds its default discovery roles' rules).
    return {
      ...base, metadata: {}, spec: {},
      status: { resourceRules: [{ verbs: ['*'], apiGroups: ['*'], resources: ['*'] }], nonResourceRules: [{ verbs: ['*'], nonResourceURLs: ['*'] }], incomplete: false },
    }
  }
  const attrs = spec as { resourceAttributes?: unknown; nonResourceAttributes?: unknown }
  if (!attrs.resourceAttributes && !attrs.nonResourceAttributes) {
    // The real server names neither the kind nor the object here, only the group.
    throw invalid({ group: review.group, plural: '', kind: '' }, '', [
      invalidField('spec.resourceAttributes', null, 'exactly one of nonResourceAttributes or resourceAttributes must be specified'),
    ])
  }
  return { ...base, spec, status: { allowed: true, reason: 'the embedded API server allows every request (local admin)' } }
}

/** The user an Impersonate-User request acts as, as kube-apiserver reports it (system:authenticated added). */
function impersonatedUser(headers: IncomingMessage['headersDistinct']): object | undefined {
  const user = headers['impersonate-user']?.[0]
  if (!user) return undefined
  const groups = [...(headers['impersonate-group'] ?? [])]
  if (!groups.includes('system:authenticated')) groups.push('system:authenticated')
  const uid = headers['impersonate-uid']?.[0]
  const extra = Object.fromEntries(Object.entries(headers)
    .filter(([name]) => name.startsWith('impersonate-extra-'))
    .map(([name, values]) => [decodeURIComponent(name.slice('impersonate-extra-'.length)), values ?? []]))
  return { username: user, ...(uid ? { uid } : {}), groups, ...(Object.keys(extra).length ? { extra } : {}) }
}
