import type { Logger } from '../../shared/log.js'
import type { KubeHttp, KubeObject } from './kube-http.js'

const GROUP = 'sources.knative.dev'
const PLURAL = 'pingsources'

const anyObject = { type: 'object', 'x-kubernetes-preserve-unknown-fields': true }

/**
 * Our own minimal definition of Knative's PingSource kind (`sources.knative.dev/v1`,
 * namespaced, `pingsources`, status subresource), for an API server that has no Knative: the
 * embedded one of the local plane. It types the spec fields the emulation reads (schedule,
 * timezone, contentType, data, dataBase64) and keeps `sink`, `ceOverrides` and `status` open;
 * Knative's own CRD, with its full schema and webhook, is what a cluster with Knative serves.
 */
export const PINGSOURCE_CRD: KubeObject = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: {
    name: `${PLURAL}.${GROUP}`,
    labels: { 'app.kubernetes.io/managed-by': 'kinetic', 'app.kubernetes.io/part-of': 'kinetic-local-plane' },
  },
  spec: {
    group: GROUP,
    scope: 'Namespaced',
    names: { kind: 'PingSource', listKind: 'PingSourceList', plural: PLURAL, singular: 'pingsource', categories: ['all', 'knative', 'sources'] },
    versions: [{
      name: 'v1',
      served: true,
      storage: true,
      subresources: { status: {} },
      schema: {
        openAPIV3Schema: {
          type: 'object',
          properties: {
            spec: {
              type: 'object',
              properties: {
                schedule: { type: 'string' },
                timezone: { type: 'string' },
                contentType: { type: 'string' },
                data: { type: 'string' },
                dataBase64: { type: 'string' },
                sink: anyObject,
                ceOverrides: anyObject,
              },
            },
            status: anyObject,
          },
        },
      },
      additionalPrinterColumns: [
        { name: 'Schedule', type: 'string', jsonPath: '.spec.schedule' },
        { name: 'Sink', type: 'string', jsonPath: '.spec.sink.uri' },
        { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
      ],
    }],
  },
}

/**
 * Makes the API server serve PingSources: nothing when it already does (a cluster with
 * Knative), else installs PINGSOURCE_CRD and waits until it is Established and in discovery.
 * Resolves with what it did.
 */
export async function ensurePingSourceKind(kube: KubeHttp, log: Logger, timeoutMs = 30_000): Promise<'served' | 'installed'> {
  if (await kube.pathFor(`${GROUP}/v1`, 'PingSource')) return 'served'
  await kube.apply(PINGSOURCE_CRD)
  const deadline = Date.now() + timeoutMs
  const crdPath = `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${PLURAL}.${GROUP}`
  for (;;) {
    const live = await kube.get(crdPath)
    const conditions = ((live?.status ?? {}) as { conditions?: Array<{ type: string; status: string }> }).conditions ?? []
    const established = conditions.some((c) => c.type === 'Established' && c.status === 'True')
    const served = established && (await kube.get<{ resources?: Array<{ name: string }> }>(`/apis/${GROUP}/v1`))?.resources?.some((r) => r.name === PLURAL)
    if (served) break
    if (Date.now() > deadline) throw new Error(`The PingSource CustomResourceDefinition was not served within ${timeoutMs} ms`)
    await new Promise((r) => setTimeout(r, 50))
  }
  kube.forgetDiscovery()
  log.info({ crd: `${PLURAL}.${GROUP}` }, 'The API server had no PingSource kind: installed the local plane\'s own PingSource CRD')
  return 'installed'
}
