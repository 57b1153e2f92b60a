import type { KubeConfig } from '@kubernetes/client-node'
import type { Logger } from '../../shared/log.js'
import { startApiServerSource, type EventSink, type RunningSource } from './apiserver-source.js'
import { Broker, type BrokerStats, type DeliveryRecord, type FaultHook, type RetryRecord } from './broker.js'
import { startBrokerIngress, type BrokerIngressServer } from './broker-ingress.js'
import type { KEvent } from './cloud-event.js'
import { ADAPTER_RETRY_POLICY, deliver, type Destination } from './delivery.js'
import { KubeHttp } from './kube-http.js'
import { loadKnativeManifests, type ApiServerSourceSpec, type KnativeManifests, type Manifest } from './manifests.js'
import { startPingSource, type RunningPing } from './ping-source.js'
import { watchRuntimePings, type RuntimePings } from './runtime-pings.js'

/** What the emulation needs to run. */
export interface KnativeEmulationOptions {
  /** The knative/ folder, or manifests already loaded from it. */
  manifests: string | KnativeManifests
  kubeConfig: KubeConfig
  /**
   * The identity each ApiServerSource watches as (its `serviceAccountName` on a cluster);
   * default `kubeConfig`.
   */
  sourceKubeConfig?: (source: Manifest<ApiServerSourceSpec>) => KubeConfig | undefined
  /** URL of the local process serving a Knative Service, or undefined when none runs. */
  serviceUrl: (name: string, namespace: string) => string | undefined
  log: Logger
  /** Fast-forward: fire every PingSource at this interval instead of its schedule. */
  pingIntervalMs?: number
  /** Start PingSource schedules at once (default true); otherwise call `startSchedules()`. */
  schedulePings?: boolean
  /**
   * Also run the PingSources created on the API server at run time (every namespace; those of
   * knative/ excepted). Default true.
   */
  runtimePingSources?: boolean
}

/** A running emulation of the Knative objects in knative/. */
export interface KnativeEmulation {
  brokers: Map<string, Broker>
  /** `http://127.0.0.1:<port>/<ns>/<broker>` of a Broker, for `K_SINK`. */
  brokerUrl(namespace: string, name: string): string
  /** Every finished Trigger delivery, from every Broker. */
  onDelivery(listener: (record: DeliveryRecord) => void): void
  /** Every failed attempt that will be retried. */
  onRetry(listener: (record: RetryRecord) => void): void
  /** Every event a Broker accepted (sources, replies and events functions send to `K_SINK`). */
  onIngress(listener: (record: { broker: string; event: KEvent }) => void): void
  /**
   * Fires one tick of the named PingSource now: one of knative/ by name, or one created at run
   * time by `namespace/name` (or by name when only one namespace has it).
   */
  firePing(name: string): Promise<number>
  /** `namespace/name` of every PingSource created at run time that the emulation has seen. */
  runtimePingSources(): string[]
  /** Starts every PingSource's schedule (when `schedulePings: false` held them back). */
  startSchedules(): void
  /** Fast-forwards every PingSource to this interval from now on (undefined: their schedules). */
  setPingInterval(intervalMs: number | undefined): void
  /** Loses or duplicates deliveries from now on, as the hook decides (undefined: none). */
  setFault(hook: FaultHook | undefined): void
  /** Counters summed over all Brokers. */
  stats(): BrokerStats
  /** Resolves once every ApiServerSource is watching and the PingSources of the API server are listed. */
  ready: Promise<void>
  stop(): Promise<void>
}

/**
 * Starts Brokers, Triggers, ApiServerSources and PingSources exactly as the YAML under
 * knative/ declares them (nothing is hard-coded), delivering to the local function
 * processes that `serviceUrl` names.
 */
export async function startKnativeEmulation(opts: KnativeEmulationOptions): Promise<KnativeEmulation> {
  const manifests = typeof opts.manifests === 'string' ? loadKnativeManifests(opts.manifests) : opts.manifests
  const kube = new KubeHttp(opts.kubeConfig)
  const log = opts.log
  const brokers = new Map<string, Broker>()
  let ingress: BrokerIngressServer | undefined

  const resolve = (dest: Destination, namespace: string): string | null => {
    const ref = dest.ref
    if (!ref) {
      if (!dest.uri || !/^https?:\/\//.test(dest.uri)) return null
      // The in-cluster Broker ingress (a function's KINETIC_EVENT_SINK) is the local Broker here.
      const inCluster = /^https?:\/\/broker-ingress\.[^/]+\/([^/]+)\/([^/]+)\/?$/.exec(dest.uri)
      if (inCluster && ingress && brokers.has(`${inCluster[1]}/${inCluster[2]}`)) return `${ingress.url}/${inCluster[1]}/${inCluster[2]}`
      return dest.uri
    }
    const ns = ref.namespace ?? namespace
    let base: string | undefined
    if (ref.kind === 'Broker' && ingress && brokers.has(`${ns}/${ref.name}`)) base = `${ingress.url}/${ns}/${ref.name}`
    else if (ref.kind === 'Service') base = opts.serviceUrl(ref.name, ns)
    if (!base) return null
    return dest.uri ? new URL(dest.uri, base.endsWith('/') ? base : `${base}/`).toString() : base
  }

  for (const b of manifests.brokers) {
    const triggers = manifests.triggers.filter(
      (t) => (t.spec.broker ?? 'default') === b.metadata.name && t.metadata.namespace === b.metadata.namespace,
    )
    brokers.set(`${b.metadata.namespace}/${b.metadata.name}`, new Broker(b.metadata.name, b.metadata.namespace, b.spec.delivery, triggers, resolve, log.child({ broker: b.metadata.name })))
  }
  for (const t of manifests.triggers) {
    if (!brokers.has(`${t.metadata.namespace}/${t.spec.broker ?? 'default'}`)) {
      log.error({ trigger: t.metadata.name, broker: t.spec.broker ?? 'default', file: t.file }, 'Trigger names a Broker that knative/ does not define; it receives nothing')
    }
  }
  ingress = await startBrokerIngress(brokers)

  const sinkFor = (owner: Manifest<{ sink?: Destination }>): EventSink => {
    const dest = owner.spec.sink
    const ref = dest?.ref
    if (ref?.kind === 'Broker' && !dest?.uri) {
      const broker = brokers.get(`${ref.namespace ?? owner.metadata.namespace}/${ref.name}`)
      if (broker) return (event: KEvent) => broker.ingress(event)
    }
    return async (event: KEvent) => {
      const url = dest ? resolve(dest, owner.metadata.namespace) : null
      if (!url) {
        log.error({ source: owner.metadata.name, ceId: event.id, ceType: event.type }, 'Source sink is not running locally; event lost')
        return 404
      }
      return (await deliver(url, event, ADAPTER_RETRY_POLICY)).status
    }
  }

  const sources: RunningSource[] = manifests.apiServerSources.map((s) => {
    const own = opts.sourceKubeConfig?.(s)
    return startApiServerSource(s, own ? new KubeHttp(own) : kube, sinkFor(s), log)
  })
  const pings = new Map<string, RunningPing>()
  for (const p of manifests.pingSources) pings.set(p.metadata.name, startPingSource(p, sinkFor(p), log, opts.pingIntervalMs))
  const isStatic = (namespace: string, name: string) => manifests.pingSources.some((p) => p.metadata.namespace === namespace && p.metadata.name === name)
  const runtime: RuntimePings | undefined = (opts.runtimePingSources ?? true)
    ? watchRuntimePings({ kube, isStatic, sinkFor, log, ...(opts.pingIntervalMs !== undefined ? { intervalMs: opts.pingIntervalMs } : {}) })
    : undefined
  const startSchedules = () => {
    for (const p of pings.values()) p.start()
    runtime?.start()
  }
  if (opts.schedulePings ?? true) startSchedules()
  log.info({
    brokers: [...brokers.keys()],
    triggers: manifests.triggers.map((t) => t.metadata.name),
    apiServerSources: sources.map((s) => s.name),
    pingSources: [...pings.keys()],
  }, 'Knative emulation started from knative/')

  const ingressUrl = ingress.url
  return {
    brokers,
    brokerUrl: (namespace, name) => `${ingressUrl}/${namespace}/${name}`,
    onDelivery: (listener) => { for (const b of brokers.values()) b.feed.on('delivery', listener) },
    onRetry: (listener) => { for (const b of brokers.values()) b.feed.on('retry', listener) },
    onIngress: (listener) => { for (const b of brokers.values()) b.feed.on('ingress', listener) },
    async firePing(name) {
      const p = pings.get(name) ?? runtime?.find(name)
      if (!p) {
        const have = [...pings.keys(), ...(runtime?.keys() ?? [])]
        throw new Error(`No PingSource named ${name} in knative/ or on the API server (have: ${have.join(', ') || 'none'})`)
      }
      return p.fire()
    },
    runtimePingSources: () => runtime?.keys() ?? [],
    startSchedules,
    setPingInterval(ms) {
      for (const p of pings.values()) p.setInterval(ms)
      runtime?.setInterval(ms)
    },
    setFault(hook) { for (const b of brokers.values()) b.fault = hook },
    stats() {
      const total: BrokerStats = { ingressed: 0, delivered: 0, retried: 0, deadLettered: 0, dropped: 0, replies: 0, ttlExhausted: 0, faultLost: 0, faultDuplicated: 0, inFlight: 0 }
      for (const b of brokers.values()) for (const k of Object.keys(total) as Array<keyof BrokerStats>) total[k] += b.stats[k]
      return total
    },
    ready: Promise.all([...sources.map((s) => s.ready), runtime?.ready]).then(() => undefined),
    async stop() {
      for (const p of pings.values()) p.stop()
      await runtime?.stop()
      for (const b of brokers.values()) b.close()
      await Promise.all(sources.map((s) => s.stop()))
      await ingress?.close()
    },
  }
}
