import { describe, expect, it } from 'vitest'
import type { KEvent } from '../../../local/knative/cloud-event.js'
import type { Manifest, PingSourceSpec } from '../../../local/knative/manifests.js'
import { pingEvent, startPingSource } from '../../../local/knative/ping-source.js'
import { silentLogger } from '../../../shared/log.js'

function aPing(spec: PingSourceSpec): Manifest<PingSourceSpec> {
  return { apiVersion: 'sources.knative.dev/v1', kind: 'PingSource', file: 'p.yaml', raw: {}, metadata: { name: 'resync', namespace: 'kinetic-system' }, spec }
}

describe('PingSource', () => {
  it('emits Knative ping events: type, source path, no subject, content type and data from the spec', () => {
    const ev = pingEvent(aPing({ contentType: 'application/json', data: '{"reason":"resync"}', ceOverrides: { extensions: { kineticsource: 'resync' } } }), new Date('2026-01-01T00:00:00Z'))
    expect(ev).toMatchObject({
      type: 'dev.knative.sources.ping',
      source: '/apis/v1/namespaces/kinetic-system/pingsources/resync',
      datacontenttype: 'application/json',
      data: '{"reason":"resync"}',
      time: '2026-01-01T00:00:00.000Z',
      extensions: { kineticsource: 'resync' },
    })
    expect(ev.subject).toBeUndefined()
  })

  it('gives each tick a fresh id', () => {
    const p = aPing({})
    expect(pingEvent(p, new Date()).id).not.toBe(pingEvent(p, new Date()).id)
  })

  it('sets no datacontenttype and no body when the spec has neither', () => {
    const ev = pingEvent(aPing({}), new Date())
    expect(ev.datacontenttype).toBeUndefined()
    expect(ev.data).toBeUndefined()
  })

  it('sends dataBase64 decoded, as bytes', () => {
    const ev = pingEvent(aPing({ dataBase64: Buffer.from('hi').toString('base64') }), new Date())
    expect(Buffer.from(ev.data as Uint8Array).toString()).toBe('hi')
  })

  it('rejects data together with dataBase64, and @every schedules', () => {
    expect(() => pingEvent(aPing({ data: 'a', dataBase64: 'Yg==' }), new Date())).toThrow(/mutually exclusive/)
    expect(() => startPingSource(aPing({ schedule: '@every 1m' }), async () => 202, silentLogger)).toThrow(/@every/)
    expect(() => startPingSource(aPing({ schedule: '* * * * *', timezone: 'Mars/Olympus' }), async () => 202, silentLogger)).toThrow()
  })

  it('takes the time zone from a CRON_TZ= or TZ= prefix as robfig/cron does, refusing a zone named twice or unknown and @every behind a prefix', () => {
    const sink = async () => 202
    for (const schedule of ['CRON_TZ=Europe/Berlin 0 3 * * *', 'TZ=America/New_York */2 * * * * *']) startPingSource(aPing({ schedule }), sink, silentLogger).stop()
    expect(() => startPingSource(aPing({ schedule: 'CRON_TZ=Europe/Berlin 0 3 * * *', timezone: 'UTC' }), sink, silentLogger)).toThrow(/time zone and spec.timezone/)
    expect(() => startPingSource(aPing({ schedule: 'CRON_TZ=Mars/Olympus 0 3 * * *' }), sink, silentLogger)).toThrow()
    expect(() => startPingSource(aPing({ schedule: 'CRON_TZ=UTC @every 1m' }), sink, silentLogger)).toThrow(/@every/)
  })

  it('sends nothing until started, and fires one tick on demand with the sink status', async () => {
    const got: KEvent[] = []
    const ping = startPingSource(aPing({ schedule: '* * * * * *' }), async (e) => { got.push(e); return 202 }, silentLogger, 1)
    try {
      await new Promise((r) => setTimeout(r, 20))
      expect(got).toHaveLength(0)
      expect(await ping.fire()).toBe(202)
      expect(got).toHaveLength(1)
    } finally {
      ping.stop()
    }
  })

  it('fast-forwards on an interval when one is given', async () => {
    const got: KEvent[] = []
    let resolve!: () => void
    const third = new Promise<void>((r) => { resolve = r })
    const ping = startPingSource(aPing({ schedule: '0 0 1 1 *' }), async (e) => {
      got.push(e)
      if (got.length === 3) resolve()
      return 202
    }, silentLogger, 5)
    ping.start()
    try {
      await third
      expect(new Set(got.map((e) => e.id)).size).toBe(3)
    } finally {
      ping.stop()
    }
  })

  it('changes the fast-forward interval while running: a long one holds ticks back, a short one brings them again', async () => {
    let count = 0
    const ping = startPingSource(aPing({ schedule: '0 0 1 1 *' }), async () => { count += 1; return 202 }, silentLogger, 5)
    ping.start()
    try {
      await new Promise((r) => setTimeout(r, 60))
      expect(count).toBeGreaterThan(0)
      ping.setInterval(60_000)
      // A tick already on its way may still land.
      await new Promise((r) => setTimeout(r, 20))
      const held = count
      await new Promise((r) => setTimeout(r, 60))
      expect(count).toBe(held)
      ping.setInterval(5)
      await new Promise((r) => setTimeout(r, 60))
      expect(count).toBeGreaterThan(held)
    } finally {
      ping.stop()
    }
  })
})
