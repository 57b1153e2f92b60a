// The review verbs of the Kube port as a test answers them: the embedded API server has no
// TokenReview or SubjectAccessReview, and it answers every SelfSubjectAccessReview and
// SelfSubjectReview for its one all-powerful user. A test says who each bearer token is
// (`tokens`), what each user or group may do (`allow`) and who the adapter's own credential is
// (`identity`), and reads every review asked, in order.
import type { AccessAttributes, Kube, TokenIdentity } from '../../shared/kube/port.js'

type Constructor<T> = abstract new (...args: any[]) => T

/** What a double gives the stand-ins: its fault injection and call count for a port verb. */
interface Enters {
  enter(method: keyof Kube): void
}

/** `Base` with reviewToken, reviewAccess, reviewSelfAccess and whoAmI answered from the test's rules. */
export function withReviewStandIns<B extends Constructor<Enters>>(Base: B) {
  abstract class WithReviewStandIns extends Base {
    /** Bearer tokens TokenReview authenticates, with the audiences each was issued for (none: any). */
    readonly tokens = new Map<string, TokenIdentity & { audiences?: string[] }>()
    /** Every TokenReview asked (the audiences and the answer; never the token). */
    readonly tokenReviews: { audiences?: string[]; username: string | null }[] = []
    /** Every SubjectAccessReview asked, in order, with the answer. */
    readonly accessReviews: (AccessAttributes & { user: string; groups?: string[]; uid?: string; extra?: Record<string, string[]>; allowed: boolean })[] = []
    /** Who this adapter's credential is (whoAmI), and whom its SelfSubjectAccessReviews are answered for. */
    identity: TokenIdentity = { username: 'fake-user', groups: ['system:authenticated'] }
    /** Every SelfSubjectAccessReview asked, in order, with the answer. */
    readonly selfAccessReviews: (AccessAttributes & { allowed: boolean })[] = []
    /** The RBAC rules reviews are answered from (see `allow`); nothing else is allowed. */
    readonly grants: { subject: string; verb: string; resource: string; namespace?: string; name?: string }[] = []

    /**
     * Grants `verb` (or `*`) on `resource` (or `*`, e.g. `workflowrecipes`, `secrets`) to a user
     * or a group name, in one namespace (any when omitted) and on one name (any when omitted).
     */
    allow(subject: string, verb: string, resource: string, namespace?: string, name?: string): this {
      this.grants.push({ subject, verb, resource, ...(namespace !== undefined ? { namespace } : {}), ...(name !== undefined ? { name } : {}) })
      return this
    }

    async reviewToken(token: string, audiences?: string[]): Promise<TokenIdentity | null> {
      this.enter('reviewToken')
      const entry = this.tokens.get(token)
      const fits = entry && (!audiences?.length || !entry.audiences || audiences.some((a) => entry.audiences!.includes(a)))
      this.tokenReviews.push({ ...(audiences ? { audiences: [...audiences] } : {}), username: fits ? entry.username : null })
      if (!fits) return null
      const { audiences: _issuedFor, ...identity } = entry
      return structuredClone(identity)
    }

    async reviewAccess(subject: TokenIdentity, attributes: AccessAttributes): Promise<boolean> {
      this.enter('reviewAccess')
      const allowed = this.isAllowed([subject.username, ...(subject.groups ?? [])], attributes)
      this.accessReviews.push({
        user: subject.username,
        ...(subject.groups ? { groups: [...subject.groups] } : {}),
        ...(subject.uid ? { uid: subject.uid } : {}),
        ...(subject.extra ? { extra: structuredClone(subject.extra) } : {}),
        ...attributes, allowed,
      })
      return allowed
    }

    /** Answered for `identity` from the `allow` rules, as reviewAccess answers for a subject. */
    async reviewSelfAccess(attributes: readonly AccessAttributes[]): Promise<boolean[]> {
      this.enter('reviewSelfAccess')
      return attributes.map((attrs) => {
        const allowed = this.isAllowed([this.identity.username, ...(this.identity.groups ?? [])], attrs)
        this.selfAccessReviews.push({ ...attrs, allowed })
        return allowed
      })
    }

    async whoAmI(): Promise<TokenIdentity> {
      this.enter('whoAmI')
      return structuredClone(this.identity)
    }

    isAllowed(names: string[], attributes: AccessAttributes): boolean {
      return this.grants.some((g) => names.includes(g.subject)
        && (g.verb === '*' || g.verb === attributes.verb)
        && (g.resource === '*' || g.resource === attributes.resource)
        && (g.namespace === undefined || g.namespace === attributes.namespace)
        && (g.name === undefined || g.name === attributes.name))
    }
  }
  return WithReviewStandIns
}

/** The port verbs the stand-ins answer (the doubles take every other verb elsewhere). */
export const REVIEW_VERBS: ReadonlySet<keyof Kube> = new Set(['reviewToken', 'reviewAccess', 'reviewSelfAccess', 'whoAmI'])
