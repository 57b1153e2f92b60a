import { describe, expect, it } from 'vitest'
import { parseSchedule, type Schedule } from '../../shared/template/plan/cron.js'

function schedule(cron: string, zone?: string): Schedule {
  const parsed = parseSchedule(cron, zone)
  if (!parsed.ok) throw new Error(parsed.message)
  return parsed.schedule
}
const at = (iso: string) => new Date(iso)
const iso = (d: Date | null) => d?.toISOString() ?? null

describe('parseSchedule', () => {
  it.each([
    ['*/5 * * * *'], ['0 2 * * *'], ['0 9 * * MON-FRI'], ['30 */2 1,15 JAN,JUL *'], ['*/10 * * * * *'],
    ['@hourly'], ['@daily'], ['@midnight'], ['@weekly'], ['@monthly'], ['@yearly'], ['@annually'], ['0 0 ? * WED'],
  ])('accepts %s', (cron) => {
    expect(parseSchedule(cron).ok).toBe(true)
  })

  it.each([
    ['', /empty/],
    ['   ', /empty/],
    ['@every 5m', /@every.*Knative PingSource does not accept/],
    ['@reboot', /not a known descriptor/],
    ['* * * *', /4 field\(s\): expected 5 .* or 6/],
    ['0 0 0 * * * 2030', /7 field\(s\)/],
    ['61 * * * *', /not a valid cron expression: .*minute/i],
    ['0 0 L * *', /L, W or #/],
    ['0 0 * * 5#3', /L, W or #/],
    ['every day', /field\(s\)/],
  ])('refuses %j as InvalidSchedule with a clear message', (cron, message) => {
    const parsed = parseSchedule(cron)
    expect(parsed.ok).toBe(false)
    if (parsed.ok) return
    expect(parsed.reason).toBe('InvalidSchedule')
    expect(parsed.message).toMatch(message)
  })

  it('refuses a zone the runtime does not know as UnknownTimeZone, naming it', () => {
    const parsed = parseSchedule('0 2 * * *', 'Mars/Olympus_Mons')
    expect(parsed).toEqual({ ok: false, reason: 'UnknownTimeZone', message: expect.stringContaining('"Mars/Olympus_Mons"') })
  })

  it('takes the zone from a CRON_TZ= or TZ= prefix, and refuses a prefix beside the timezone field', () => {
    const prefixed = schedule('CRON_TZ=Europe/Paris 0 2 * * *')
    expect(prefixed.expression).toBe('0 2 * * *')
    expect(prefixed.timezone).toBe('Europe/Paris')
    expect(schedule('TZ=Asia/Tokyo  0 9 * * *').timezone).toBe('Asia/Tokyo')
    const both = parseSchedule('CRON_TZ=Europe/Paris 0 2 * * *', 'UTC')
    expect(both.ok).toBe(false)
    const badPrefix = parseSchedule('TZ=Nowhere/Land 0 2 * * *')
    expect(badPrefix.ok ? null : badPrefix.reason).toBe('UnknownTimeZone')
  })

  it('an empty timezone field means UTC', () => {
    const s = schedule('0 2 * * *', '')
    expect(s.timezone).toBeUndefined()
    expect(iso(s.nextAfter(at('2026-01-01T00:00:00Z')))).toBe('2026-01-01T02:00:00.000Z')
  })
})

describe('fire times', () => {
  it('the latest fire at or before t includes a fire exactly at t', () => {
    const s = schedule('*/5 * * * *')
    expect(iso(s.latestAtOrBefore(at('2026-01-01T00:10:00Z')))).toBe('2026-01-01T00:10:00.000Z')
    expect(iso(s.latestAtOrBefore(at('2026-01-01T00:09:59.999Z')))).toBe('2026-01-01T00:05:00.000Z')
    expect(iso(s.latestAtOrBefore(at('2026-01-01T00:14:30Z')))).toBe('2026-01-01T00:10:00.000Z')
  })

  it('the next fire is strictly after t', () => {
    const s = schedule('*/5 * * * *')
    expect(iso(s.nextAfter(at('2026-01-01T00:10:00Z')))).toBe('2026-01-01T00:15:00.000Z')
    expect(iso(s.nextAfter(at('2026-01-01T00:09:59.500Z')))).toBe('2026-01-01T00:10:00.000Z')
  })

  it('fires in (a, b] exclude a, include b, and stop at the limit', () => {
    const s = schedule('0 * * * *')
    expect(s.firesIn(at('2026-01-01T00:00:00Z'), at('2026-01-01T03:00:00Z'), 100).map(iso))
      .toEqual(['2026-01-01T01:00:00.000Z', '2026-01-01T02:00:00.000Z', '2026-01-01T03:00:00.000Z'])
    expect(s.firesIn(at('2026-01-01T00:00:00Z'), at('2030-01-01T00:00:00Z'), 5)).toHaveLength(5)
    expect(s.firesIn(at('2026-01-01T00:30:00Z'), at('2026-01-01T00:59:59Z'), 5)).toEqual([])
  })

  it('a zone moves the fire: 02:00 in Paris is 01:00 UTC in winter and 00:00 UTC in summer', () => {
    const s = schedule('0 2 * * *', 'Europe/Paris')
    expect(iso(s.nextAfter(at('2026-01-10T12:00:00Z')))).toBe('2026-01-11T01:00:00.000Z')
    expect(iso(s.nextAfter(at('2026-07-10T12:00:00Z')))).toBe('2026-07-11T00:00:00.000Z')
    expect(iso(s.latestAtOrBefore(at('2026-07-11T00:00:00Z')))).toBe('2026-07-11T00:00:00.000Z')
  })

  it('six fields count seconds first', () => {
    const s = schedule('*/20 * * * * *')
    expect(s.firesIn(at('2026-01-01T00:00:00Z'), at('2026-01-01T00:01:00Z'), 10).map(iso))
      .toEqual(['2026-01-01T00:00:20.000Z', '2026-01-01T00:00:40.000Z', '2026-01-01T00:01:00.000Z'])
  })

  it('a day-of-month and a weekday both restricted fire on either, as cron does', () => {
    const s = schedule('0 0 13 * FRI')
    // 2026-02-06 is a Friday, 2026-02-13 a Friday and the 13th, 2026-03-13 a Friday too.
    expect(s.firesIn(at('2026-02-01T00:00:00Z'), at('2026-02-28T00:00:00Z'), 10).map(iso))
      .toEqual(['2026-02-06T00:00:00.000Z', '2026-02-13T00:00:00.000Z', '2026-02-20T00:00:00.000Z', '2026-02-27T00:00:00.000Z'])
  })

  it('a schedule that never fires is valid and has no fire times', () => {
    const s = schedule('0 0 30 2 *')
    expect(s.nextAfter(at('2026-01-01T00:00:00Z'))).toBeNull()
    expect(s.latestAtOrBefore(at('2026-01-01T00:00:00Z'))).toBeNull()
  })
})
