import { EventEmitter } from 'node:events'
import type { Logger } from '../../shared/log.js'
import type { KEvent } from './cloud-event.js'
import { deliver, retryPolicyFor, type AttemptResult, type DeliverySpec, type Destination } from './delivery.js'
import type { Manifest, TriggerSpec } from './manifests.js'
import { filterWarnings, triggerMatches } from './trigger-filter.js'

/** Knative's ingress MAX_TTL: hops an event may make through the Broker before it is dropped. */
export const MAX_TTL = 255

/** The stock `config-br-defaults` delivery, used when a Broker sets none. */
export const STOCK_BROKER_DELIVERY: DeliverySpec = { retry: 10, backoffPolicy: 'exponential', backoffDelay: 'PT0.2S' }

/** Turns a Destination into a URL, or null when nothing local answers for it. */
export type DestinationResolver = (dest: Destination, namespace: string) => string | null

/** One finished delivery to one Trigger's subscriber, as the event feed reports it. */
export interface DeliveryRecord {
  broker: string
  trigger: string
  subscriber: string
  event: KEvent
  status: number
  attempts: number
  /** `lost`: a fault hook dropped it before it reached the subscriber. */
  outcome: 'delivered' | 'dead-lettered' | 'dropped' | 'lost'
  reply?: KEvent
  error?: string
  durationMs: number
}

/** A failed attempt that will be retried. */
export interface RetryRecord {
  broker: string
  trigger: string
  event: KEvent
  attempt: number
  status: number
  error?: string
}

/** Counters since start, for progress output and the bench. */
export interface BrokerStats {
  ingressed: number
  delivered: number
  retried: number
  deadLettered: number
  dropped: number
  replies: number
  ttlExhausted: number
  /** Deliveries a fault hook dropped or sent twice. */
  faultLost: number
  faultDuplicated: number
  /** Deliveries started and not yet finished (retries included): a gauge, not a counter. */
  inFlight: number
}

/** What a fault hook makes of one delivery to one Trigger's subscriber. */
export type DeliveryFault = 'deliver' | 'lose' | 'duplicate'

/**
 * Decides, per delivery, whether the event reaches the subscriber once, never (as if the
 * channel lost it after the ingress accepted it) or twice (as after a lost acknowledgement).
 * For tests of what Knative allows: events lost and duplicated.
 */
export type FaultHook = (delivery: { trigger: string; event: KEvent }) => DeliveryFault

/** Events on `Broker.feed`. */
export interface BrokerFeed {
  ingress: [{ broker: string; event: KEvent }]
  delivery: [DeliveryRecord]
  retry: [RetryRecord]
}

/**
 * An in-process MT-channel Broker: ingress stamps `knativearrivaltime` and the TTL, fans out
 * to every matching Trigger and waits for all deliveries (the InMemoryChannel's default
 * synchronous mode), retries as each Trigger's delivery spec says, dead-letters or drops
 * with a log line, and feeds replies back into itself.
 */
export class Broker {
  readonly feed = new EventEmitter<BrokerFeed>()
  readonly stats: BrokerStats = { ingressed: 0, delivered: 0, retried: 0, deadLettered: 0, dropped: 0, replies: 0, ttlExhausted: 0, faultLost: 0, faultDuplicated: 0, inFlight: 0 }
  /** Set by tests to lose or duplicate deliveries; unset delivers every event once. */
  fault: FaultHook | undefined
  private readonly controller = new AbortController()

  constructor(
    readonly name: string,
    readonly namespace: string,
    private readonly delivery: DeliverySpec | undefined,
    private readonly triggers: Manifest<TriggerSpec>[],
    private readonly resolve: DestinationResolver,
    private readonly log: Logger,
  ) {
    for (const t of triggers) {
      for (const w of filterWarnings(t.spec)) log.warn({ trigger: t.metadata.name, file: t.file }, `Trigger filter: ${w}`)
    }
  }

  /**
   * Accepts one event. Resolves with the status the ingress would answer: 202 when every
   * matching Trigger got it (or its dead-letter sink did), 400 when the TTL is used up,
   * 500 when some delivery finally failed without a dead-letter sink.
   */
  async ingress(event: KEvent): Promise<number> {
    const ttlIn = event.extensions.knativebrokerttl
    const ttl = ttlIn === undefined ? MAX_TTL : Number(ttlIn) - 1
    if (!(ttl > 0)) {
      this.stats.ttlExhausted += 1
      this.log.warn({ ceId: event.id, ceType: event.type, subject: event.subject, broker: this.name }, 'Dropped event: broker TTL exhausted (a reply loop?)')
      return 400
    }
    const stamped: KEvent = { ...event, extensions: { ...event.extensions, knativearrivaltime: new Date().toISOString(), knativebrokerttl: ttl } }
    this.stats.ingressed += 1
    this.feed.emit('ingress', { broker: this.name, event: stamped })
    const matching = this.triggers.filter((t) => triggerMatches(t.spec, stamped))
    const results = await Promise.all(matching.map((t) => this.dispatch(t, stamped, ttl)))
    return results.every((ok) => ok) ? 202 : 500
  }

  /** Stops waiting in retries; in-flight attempts finish. */
  close(): void {
    this.controller.abort()
  }

  private async dispatch(trigger: Manifest<TriggerSpec>, event: KEvent, ttl: number): Promise<boolean> {
    const fault = this.fault?.({ trigger: trigger.metadata.name, event }) ?? 'deliver'
    if (fault === 'lose') {
      this.stats.faultLost += 1
      const { knativebrokerttl: _ttl, ...extensions } = event.extensions
      this.log.info({ ceId: event.id, ceType: event.type, subject: event.subject, trigger: trigger.metadata.name }, 'Fault hook: event lost before delivery')
      this.feed.emit('delivery', {
        broker: this.name, trigger: trigger.metadata.name, subscriber: describeDest(trigger.spec.subscriber),
        event: { ...event, extensions }, status: 0, attempts: 0, outcome: 'lost', durationMs: 0,
      })
      return true
    }
    this.stats.inFlight += 1
    try {
      const ok = await this.dispatchOnce(trigger, event, ttl)
      if (fault === 'duplicate') {
        this.stats.faultDuplicated += 1
        await this.dispatchOnce(trigger, event, ttl)
      }
      return ok
    } finally {
      this.stats.inFlight -= 1
    }
  }

  private async dispatchOnce(trigger: Manifest<TriggerSpec>, event: KEvent, ttl: number): Promise<boolean> {
    const started = Date.now()
    const name = trigger.metadata.name
    const { knativebrokerttl: _ttl, ...extensions } = event.extensions
    const outgoing: KEvent = { ...event, extensions }
    const spec = trigger.spec.delivery ?? this.delivery ?? STOCK_BROKER_DELIVERY
    const policy = retryPolicyFor(spec)
    const url = this.resolve(trigger.spec.subscriber, trigger.metadata.namespace)
    const fields = { ceId: event.id, ceType: event.type, subject: event.subject, trigger: name }
    let result: AttemptResult & { ok: boolean; attempts: number }
    if (url === null) {
      result = { ok: false, attempts: 1, status: 0, body: '', error: `subscriber ${describeDest(trigger.spec.subscriber)} is not running locally` }
    } else {
      result = await deliver(url, outgoing, policy, {
        headers: { Prefer: 'reply', 'Kn-Namespace': trigger.metadata.namespace },
        signal: this.controller.signal,
        onAttempt: (attempt, r) => {
          const ok = r.status >= 200 && r.status < 300
          if (ok || attempt > policy.delays.length || !policy.retryable(r.status)) return
          this.stats.retried += 1
          this.log.info({ ...fields, attempt, status: r.status, err: r.error }, 'Delivery failed, will retry')
          this.feed.emit('retry', { broker: this.name, trigger: name, event: outgoing, attempt, status: r.status, ...(r.error ? { error: r.error } : {}) })
        },
      })
    }
    const base = { broker: this.name, trigger: name, subscriber: url ?? describeDest(trigger.spec.subscriber), event: outgoing, status: result.status, attempts: result.attempts }
    if (result.ok) {
      this.stats.delivered += 1
      this.feed.emit('delivery', { ...base, outcome: 'delivered', ...(result.reply ? { reply: result.reply } : {}), durationMs: Date.now() - started })
      if (result.reply) {
        this.stats.replies += 1
        const reply: KEvent = { ...result.reply, extensions: { ...result.reply.extensions, knativebrokerttl: ttl } }
        const status = await this.ingress(reply)
        if (status !== 202) this.log.warn({ ...fields, replyId: reply.id, replyType: reply.type, status }, 'Reply was not accepted by the broker')
      }
      return true
    }
    const dls = spec.deadLetterSink ? this.resolve(spec.deadLetterSink, trigger.metadata.namespace) : null
    if (dls) {
      const errorExt: Record<string, string | number> = { knativeerrordest: base.subscriber, knativeerrorcode: result.status }
      if (result.body.length > 0) errorExt.knativeerrordata = Buffer.from(result.body.slice(0, 1024)).toString('base64')
      const dead: KEvent = { ...outgoing, extensions: { ...outgoing.extensions, ...errorExt } }
      const sent = await deliver(dls, dead, policy, { signal: this.controller.signal })
      if (sent.ok) {
        this.stats.deadLettered += 1
        this.log.warn({ ...fields, status: result.status, attempts: result.attempts, err: result.error, deadLetterSink: dls }, 'Delivery failed, sent the event to the dead-letter sink')
        this.feed.emit('delivery', { ...base, outcome: 'dead-lettered', ...(result.error ? { error: result.error } : {}), durationMs: Date.now() - started })
        return true
      }
      this.log.error({ ...fields, deadLetterSink: dls, dlsStatus: sent.status, err: sent.error }, 'Dead-letter sink did not accept the event')
    } else if (spec.deadLetterSink) {
      this.log.error({ ...fields, deadLetterSink: describeDest(spec.deadLetterSink) }, 'Dead-letter sink is not running locally')
    }
    this.stats.dropped += 1
    this.log.error({ ...fields, status: result.status, attempts: result.attempts, err: result.error }, 'Dropped event after the last delivery attempt')
    this.feed.emit('delivery', { ...base, outcome: 'dropped', ...(result.error ? { error: result.error } : {}), durationMs: Date.now() - started })
    return false
  }
}

function describeDest(dest: Destination): string {
  if (dest.ref) return `${dest.ref.kind ?? 'ref'}/${dest.ref.name}${dest.uri ? dest.uri : ''}`
  return dest.uri ?? '(empty destination)'
}
