import { randomUUID } from 'node:crypto'
import { Cron } from 'croner'
import type { Logger } from '../../shared/log.js'
import type { EventSink } from './apiserver-source.js'
import type { KEvent } from './cloud-event.js'
import type { Manifest, PingSourceSpec } from './manifests.js'

/** A running PingSource emulation. */
export interface RunningPing {
  name: string
  /** Sends one tick now; resolves with the sink's status. */
  fire(): Promise<number>
  /** Starts ticking on the schedule (or interval); until then only `fire()` sends. */
  start(): void
  /** Changes the fast-forward interval (undefined: back to the schedule), restarting a running ticker. */
  setInterval(intervalMs: number | undefined): void
  stop(): void
}

/**
 * Pure: the event of one PingSource tick: type `dev.knative.sources.ping`, source
 * `/apis/v1/namespaces/<ns>/pingsources/<name>`, no subject, a fresh id, `datacontenttype`
 * only when `contentType` is set, and the raw `data` (or decoded `dataBase64`).
 */
export function pingEvent(source: Manifest<PingSourceSpec>, now: Date): KEvent {
  const spec = source.spec
  if (spec.data !== undefined && spec.dataBase64 !== undefined) {
    throw new Error(`PingSource ${source.metadata.name}: data and dataBase64 are mutually exclusive`)
  }
  const event: KEvent = {
    specversion: '1.0',
    id: randomUUID(),
    type: 'dev.knative.sources.ping',
    source: `/apis/v1/namespaces/${source.metadata.namespace}/pingsources/${source.metadata.name}`,
    time: now.toISOString(),
    extensions: { ...(spec.ceOverrides?.extensions ?? {}) },
  }
  if (spec.contentType) event.datacontenttype = spec.contentType
  if (spec.data !== undefined && spec.data !== '') event.data = spec.data
  else if (spec.dataBase64) event.data = new Uint8Array(Buffer.from(spec.dataBase64, 'base64'))
  return event
}

/**
 * Runs a PingSource on its cron `schedule` (5 or 6 fields, descriptors such as `@hourly`;
 * `@every` is rejected like Knative's webhook does) in its `timezone`, or every
 * `intervalMs` when given (the fast-forward for demos and tests), once `start()` is called.
 * Missed ticks are not replayed.
 */
export function startPingSource(source: Manifest<PingSourceSpec>, sink: EventSink, log: Logger, intervalMs?: number): RunningPing {
  const schedule = (source.spec.schedule ?? '* * * * *').trim()
  const plog = log.child({ source: source.metadata.name })
  let running = Promise.resolve(0)
  const fire = (): Promise<number> => {
    running = running.then(async () => {
      const event = pingEvent(source, new Date())
      try {
        const status = await sink(event)
        if (status >= 300) plog.error({ ceId: event.id, ceType: event.type, status }, 'Ping event was not accepted; it is lost')
        return status
      } catch (err) {
        plog.error({ ceId: event.id, ceType: event.type, err: String(err) }, 'Could not send the ping event; it is lost')
        return 0
      }
    })
    return running
  }
  const tick = () => { void fire() }
  // robfig/cron (Knative's parser) also takes the zone as a `CRON_TZ=<zone> ` (or `TZ=`) prefix.
  const prefixed = /^(?:CRON_TZ|TZ)=(\S+)\s+(.+)$/.exec(schedule)
  if (prefixed && source.spec.timezone) throw new Error(`PingSource ${source.metadata.name}: the schedule names a time zone and spec.timezone is set too`)
  const zone = prefixed?.[1] ?? source.spec.timezone
  const expression = prefixed?.[2] ?? schedule
  if (expression.startsWith('@every')) throw new Error(`PingSource ${source.metadata.name}: @every is not accepted by Knative`)
  const opts = zone ? { timezone: zone } : {}
  // Built paused so a bad schedule or time zone throws here, at load time.
  const cron = new Cron(expression, { ...opts, paused: true }, tick)
  let timer: NodeJS.Timeout | undefined
  let started = false
  let every = intervalMs
  const begin = () => {
    if (every === undefined) cron.resume()
    else timer ??= setInterval(tick, every)
  }
  const halt = () => {
    cron.pause()
    if (timer) clearInterval(timer)
    timer = undefined
  }
  return {
    name: source.metadata.name,
    fire,
    start() {
      started = true
      begin()
    },
    setInterval(ms) {
      every = ms
      if (!started) return
      halt()
      begin()
    },
    stop() {
      started = false
      halt()
      cron.stop()
    },
  }
}
