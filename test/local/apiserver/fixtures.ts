import {
  ApiException,
  ApiextensionsV1Api,
  BatchV1Api,
  CoreV1Api,
  CustomObjectsApi,
  loadYaml,
  type KubeConfig,
  type V1CustomResourceDefinition,
} from '@kubernetes/client-node'
import { stringify } from 'yaml'
import { startApiServer, type ApiServer, type ApiServerOptions, type Status } from '../../../local/apiserver/index.js'

/** A started server plus the real client-node APIs pointed at it. */
export interface TestCluster {
  server: ApiServer
  kc: KubeConfig
  core: CoreV1Api
  batch: BatchV1Api
  custom: CustomObjectsApi
  ext: ApiextensionsV1Api
}

/** Starts an embedded API server on 127.0.0.1:0 and builds client-node APIs from its kubeconfig. */
export async function startCluster(opts: ApiServerOptions = {}): Promise<TestCluster> {
  const server = await startApiServer(opts)
  const kc = server.kubeConfigObject()
  return {
    server,
    kc,
    core: kc.makeApiClient(CoreV1Api),
    batch: kc.makeApiClient(BatchV1Api),
    custom: kc.makeApiClient(CustomObjectsApi),
    ext: kc.makeApiClient(ApiextensionsV1Api),
  }
}

/** Awaits a call that must fail and returns the HTTP code with the Kubernetes Status body. */
export async function failure(call: Promise<unknown>): Promise<{ code: number; status: Status }> {
  try {
    await call
  } catch (err) {
    if (!(err instanceof ApiException)) throw err
    const raw: unknown = err.body
    const status = (typeof raw === 'string' ? JSON.parse(raw) : raw) as Status
    return { code: err.code, status }
  }
  throw new Error('expected the call to fail')
}

/**
 * A namespaced test CRD (widgets.example.dev) exercising what the server enforces: required
 * fields, an enum, a default, pruning, CEL rules (including a transition rule), a status
 * subresource and printer columns. Written in wire form and loaded with client-node's
 * `loadYaml`, because its typed models name the extensions `x_kubernetes_validations`,
 * `_default`, `_enum` and silently drop the wire spellings when serializing.
 */
export function widgetCrd(): V1CustomResourceDefinition {
  return loadYaml<V1CustomResourceDefinition>(stringify(widgetCrdWire()))
}

function widgetCrdWire(): Record<string, unknown> {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: 'widgets.example.dev' },
    spec: {
      group: 'example.dev',
      scope: 'Namespaced',
      names: { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList', shortNames: ['wd'], categories: ['all'] },
      versions: [{
        name: 'v1',
        served: true,
        storage: true,
        subresources: { status: {} },
        additionalPrinterColumns: [
          { name: 'Phase', type: 'string', jsonPath: '.status.phase' },
          { name: 'Size', type: 'integer', jsonPath: '.spec.size' },
          { name: 'Ready', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
        ],
        schema: {
          openAPIV3Schema: {
            type: 'object',
            properties: {
              spec: {
                type: 'object',
                required: ['size'],
                properties: {
                  size: { type: 'integer', minimum: 1 },
                  color: { type: 'string', enum: ['red', 'green', 'blue'], default: 'red' },
                  mode: { type: 'string', 'x-kubernetes-validations': [{ rule: 'self == oldSelf', message: 'mode is immutable' }] },
                  parts: {
                    type: 'array',
                    maxItems: 5,
                    'x-kubernetes-list-type': 'map',
                    'x-kubernetes-list-map-keys': ['name'],
                    items: {
                      type: 'object',
                      required: ['name'],
                      properties: { name: { type: 'string' }, count: { type: 'integer', default: 1 } },
                    },
                  },
                  extra: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
                },
                'x-kubernetes-validations': [
                  { rule: 'self.size <= 10 || self.color == "blue"', message: 'only blue widgets may be larger than 10', fieldPath: '.size' },
                ],
              },
              status: {
                type: 'object',
                properties: {
                  phase: { type: 'string' },
                  conditions: { type: 'array', items: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
                },
              },
            },
          },
        },
      }],
    },
  }
}

/** The coordinates CustomObjectsApi needs for widgets. */
export const widgets = { group: 'example.dev', version: 'v1', plural: 'widgets' } as const

/** A Widget manifest. */
export function aWidget(name: string, spec: Record<string, unknown> = { size: 2 }, namespace = 'default'): Record<string, unknown> {
  return { apiVersion: 'example.dev/v1', kind: 'Widget', metadata: { name, namespace }, spec }
}

/** Collects watch events until `done` says enough, or rejects after the watch ends without it. */
export function collect<T>(events: T[], done: (events: T[]) => boolean): { push(e: T): void; settled: Promise<T[]> } {
  let resolve!: (v: T[]) => void
  const settled = new Promise<T[]>((r) => (resolve = r))
  return {
    push(e) {
      events.push(e)
      if (done(events)) resolve(events)
    },
    settled,
  }
}
