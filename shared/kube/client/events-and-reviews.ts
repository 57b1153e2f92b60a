import type { CoreV1Event } from '@kubernetes/client-node'
import type { AccessAttributes, TokenIdentity } from '../port.js'
import type { KubeApi } from './kube-api.js'

/** The port's verbs over Kubernetes Events, and the reviews that tell who a caller is and what it may do. */
export function eventAndReviewVerbs(api: KubeApi) {
  return {
    async listEvents(namespace: string, involved: { kind: string; name: string }): Promise<CoreV1Event[]> {
      const list = await api.call(
        () => api.core.listNamespacedEvent({ namespace, fieldSelector: `involvedObject.kind=${involved.kind},involvedObject.name=${involved.name}` }),
        `list Events of ${involved.kind} ${namespace}/${involved.name}`,
      )
      const time = (e: CoreV1Event) => new Date(e.lastTimestamp ?? e.eventTime ?? e.firstTimestamp ?? e.metadata?.creationTimestamp ?? 0).getTime()
      return [...list.items].sort((a, b) => time(a) - time(b))
    },

    async createEvent(event: CoreV1Event): Promise<void> {
      const namespace = event.metadata?.namespace ?? 'default'
      await api.createIfAbsent(() => api.core.createNamespacedEvent({ namespace, body: event }), `create Event in ${namespace}`)
    },

    async reviewToken(token: string, audiences?: string[]): Promise<TokenIdentity | null> {
      const review = await api.call(
        () => api.authn.createTokenReview({
          body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token, ...(audiences?.length ? { audiences } : {}) } },
        }),
        'create TokenReview',
      )
      const status = review.status
      if (!status?.authenticated || !status.user?.username) return null
      const { username, uid, groups, extra } = status.user
      return { username, ...(uid ? { uid } : {}), ...(groups ? { groups } : {}), ...(extra ? { extra } : {}) }
    },

    async reviewAccess(subject: TokenIdentity, attributes: AccessAttributes): Promise<boolean> {
      const review = await api.call(
        () => api.authz.createSubjectAccessReview({
          body: {
            apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview',
            spec: {
              user: subject.username,
              ...(subject.uid ? { uid: subject.uid } : {}),
              ...(subject.groups ? { groups: subject.groups } : {}),
              ...(subject.extra ? { extra: subject.extra } : {}),
              resourceAttributes: { ...attributes },
            },
          },
        }),
        `create SubjectAccessReview (${attributes.verb} ${attributes.resource})`,
      )
      return review.status?.allowed === true && review.status.denied !== true
    },

    async reviewSelfAccess(attributes: readonly AccessAttributes[]): Promise<boolean[]> {
      // One review per question, in parallel: the API has no batch form.
      return Promise.all(attributes.map(async (attrs) => {
        const review = await api.call(
          () => api.authz.createSelfSubjectAccessReview({
            body: { apiVersion: 'authorization.k8s.io/v1', kind: 'SelfSubjectAccessReview', spec: { resourceAttributes: { ...attrs } } },
          }),
          `create SelfSubjectAccessReview (${attrs.verb} ${attrs.resource})`,
        )
        return review.status?.allowed === true && review.status.denied !== true
      }))
    },

    async whoAmI(): Promise<TokenIdentity> {
      const review = await api.call(
        () => api.authn.createSelfSubjectReview({ body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' } }),
        'create SelfSubjectReview',
      )
      const user = review.status?.userInfo
      if (!user?.username) throw new Error('The SelfSubjectReview named no user')
      const { username, uid, groups, extra } = user
      return { username, ...(uid ? { uid } : {}), ...(groups ? { groups } : {}), ...(extra ? { extra } : {}) }
    },
  }
}
