import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { KubeConfig } from '@kubernetes/client-node'
import { silentLogger, type Logger } from '../../shared/log.js'
import { createRequestHandler } from './http-handler.js'
import { kubeconfigYaml } from './kubeconfig.js'
import { ObjectStore } from './object-store.js'
import type { StoreOptions } from './store/store-types.js'

/** A running embedded API server. */
export interface ApiServer {
  /** `http://127.0.0.1:<port>` */
  url: string
  /** kubeconfig YAML pointing at `url` (context `kinetic-local`, namespace `default`). */
  kubeconfig(): string
  /** A client-node KubeConfig loaded from `kubeconfig()`, ready for `makeApiClient`. */
  kubeConfigObject(): KubeConfig
  /** In-process access to the same objects, for the Job runner and the Knative emulation. */
  store: ObjectStore
  /** Ends open watches and log streams, then stops listening. */
  close(): Promise<void>
}

/** Options for `startApiServer`. */
export interface ApiServerOptions {
  /** Default 0: any free port. */
  port?: number
  /** Default 127.0.0.1. */
  host?: string
  /** Default: silent. Requests are logged at debug level. */
  log?: Logger
  /** Watch events kept for resume (older resourceVersions answer 410 Gone). Default 10,000. */
  historySize?: number
  /** How often watches that allow bookmarks get one. Default 60 s. */
  bookmarkIntervalMs?: number
  /** Namespaces that exist at start. Default: default, kube-system, kube-public, kube-node-lease, ai-agents, purko-system. */
  namespaces?: string[]
  /** Largest object accepted, serialized. Default 1.5 MiB. */
  maxObjectBytes?: number
}

/** Starts the embedded Kubernetes-compatible API server on 127.0.0.1 (in memory, plain HTTP). */
export async function startApiServer(opts: ApiServerOptions = {}): Promise<ApiServer> {
  const log = opts.log ?? silentLogger
  const storeOpts: StoreOptions = {}
  if (opts.historySize !== undefined) storeOpts.historySize = opts.historySize
  if (opts.namespaces) storeOpts.namespaces = opts.namespaces
  if (opts.maxObjectBytes !== undefined) storeOpts.maxObjectBytes = opts.maxObjectBytes
  const store = new ObjectStore(storeOpts)
  const host = opts.host ?? '127.0.0.1'
  let address = ''
  const handler = createRequestHandler(store, {
    log,
    bookmarkIntervalMs: opts.bookmarkIntervalMs ?? 60_000,
    serverAddress: () => address,
  })
  const server: Server = createServer({ keepAliveTimeout: 30_000 }, (req, res) => handler.handle(req, res))
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(opts.port ?? 0, host, () => {
      server.off('error', reject)
      resolve()
    })
  })
  const port = (server.address() as AddressInfo).port
  address = `${host}:${port}`
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`
  log.info({ url }, 'Embedded API server listening')
  let closed: Promise<void> | undefined
  return {
    url,
    store,
    kubeconfig: () => kubeconfigYaml(url),
    kubeConfigObject: () => {
      const kc = new KubeConfig()
      kc.loadFromString(kubeconfigYaml(url))
      return kc
    },
    close: () => {
      closed ??= new Promise<void>((resolve) => {
        handler.closeStreams()
        server.close(() => resolve())
        server.closeAllConnections()
      })
      return closed
    },
  }
}

export { ObjectStore } from './object-store.js'
export { MAX_OBJECT_BYTES } from './store/store-types.js'
export type {
  DeleteOptions,
  ListOptions,
  ManagerOptions,
  PatchOptions,
  PatchType,
  StoreOptions,
  TypeRef,
  WatchHandle,
  WatchOptions,
  WriteOptions,
} from './store/store-types.js'
export { ApiError } from './api-error.js'
export type { Status, StatusCause } from './api-error.js'
export type { KubeObject, ObjectMeta, OwnerReference, WatchEvent, WatchEventType } from './types.js'
export { createSchemaValidator, SchemaCompileError } from './validation.js'
export type { JSONSchemaProps, SchemaValidator, SchemaValidatorFactory, ValidationResult } from './validation.js'
export { kubeconfigYaml } from './kubeconfig.js'
