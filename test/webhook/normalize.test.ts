import { describe, expect, it } from 'vitest'
import { detectSource, invalidSourceHeader, normalize, type Normalized } from '../../shared/webhook/normalize.js'

const EMPTY: Omit<Normalized, 'source'> = { title: '', severity: '', service: '', action: '', type: '', repository: '', user: '', description: '' }

describe('source detection (purko)', () => {
  it.each([
    ['event', { event: {} }, 'pagerduty'],
    ['repository', { repository: { full_name: 'o/r' } }, 'github'],
    ['command', { command: '/deploy' }, 'slack'],
    ['event before repository', { event: {}, repository: {} }, 'pagerduty'],
    ['repository before command', { repository: {}, command: '/x' }, 'github'],
    ['nothing known', { title: 'x' }, 'unknown'],
    ['an empty body', {}, 'unknown'],
  ])('a payload with %s is %s', (_, payload, source) => {
    expect(detectSource(payload)).toBe(source)
  })

  it('the X-Trigger-Source header wins, trimmed, and an empty header is ignored', () => {
    expect(detectSource({ event: {} }, '  alertmanager ')).toBe('alertmanager')
    expect(detectSource({ event: {} }, '   ')).toBe('pagerduty')
  })

  it.each([
    ['absent', undefined, null],
    ['a plain name', 'Alertmanager', null],
    ['too long', 'x'.repeat(64), 'at most 63'],
    ['a control character', 'a\u0001b', 'printable ASCII'],
    ['a newline', 'a\nb', 'printable ASCII'],
  ])('an X-Trigger-Source %s: %s', (_, header, problem) => {
    const got = invalidSourceHeader(header)
    if (problem === null) expect(got).toBeNull()
    else expect(got).toContain(problem)
  })
})

describe('normalisation (purko Appendix A)', () => {
  it.each<[string, string, Record<string, unknown>, Partial<Normalized>]>([
    ['pagerduty v3 incident', 'pagerduty', {
      event: { event_type: 'incident.triggered', data: { title: 'DB down', urgency: 'high', service: { name: 'payments' } } },
    }, { title: 'DB down', severity: 'high', service: 'payments', type: 'incident.triggered', action: 'incident.triggered', description: 'DB down | service: payments | severity: high | action: incident.triggered' }],
    ['pagerduty flat fallbacks', 'pagerduty', { event: {}, title: 'Disk', severity: 'critical', service: 'nodes' },
      { title: 'Disk', severity: 'critical', service: 'nodes', description: 'Disk | service: nodes | severity: critical' }],
    ['pagerduty nested wins over flat', 'pagerduty', { event: { data: { title: 'A', urgency: 'low' } }, title: 'B', severity: 'critical' },
      { title: 'A', severity: 'low', description: 'A | severity: low' }],
    ['github pull_request', 'github', { action: 'opened', repository: { full_name: 'acme/shop' }, pull_request: { title: 'Fix cart' } },
      { action: 'opened', repository: 'acme/shop', title: 'Fix cart', type: 'pull_request', description: 'Fix cart | repo: acme/shop | action: opened' }],
    ['github issue', 'github', { action: 'labeled', repository: { full_name: 'acme/shop' }, issue: { title: 'Cart broken' } },
      { action: 'labeled', repository: 'acme/shop', title: 'Cart broken', type: 'issue', description: 'Cart broken | repo: acme/shop | action: labeled' }],
    ['github push (ref)', 'github', { ref: 'refs/heads/main', repository: { full_name: 'acme/shop' } },
      { repository: 'acme/shop', type: 'push', description: 'repo: acme/shop' }],
    ['github push (push key)', 'github', { push: {}, repository: { full_name: 'acme/shop' } }, { repository: 'acme/shop', type: 'push', description: 'repo: acme/shop' }],
    ['github ping (no type)', 'github', { zen: 'Keep it simple', repository: { full_name: 'acme/shop' } }, { repository: 'acme/shop', description: 'repo: acme/shop' }],
    ['github pull_request before issue', 'github', { repository: {}, pull_request: { title: 'P' }, issue: { title: 'I' } }, { title: 'P', type: 'pull_request', description: 'P' }],
    ['slack slash command', 'slack', { command: '/investigate', text: 'checkout latency', user_name: 'ana' },
      { action: '/investigate', title: 'checkout latency', user: 'ana', type: 'slash_command', description: 'checkout latency | action: /investigate' }],
    ['flat (unknown source)', 'unknown', { title: 'Queue backlog', severity: 'warning', service: 'orders', action: 'fire', type: 'alert' },
      { title: 'Queue backlog', severity: 'warning', service: 'orders', action: 'fire', type: 'alert', description: 'Queue backlog | service: orders | severity: warning | action: fire' }],
    ['flat (header source)', 'alertmanager', { title: 'T' }, { title: 'T', description: 'T' }],
    ['non-string fields read as empty', 'unknown', { title: 42, severity: { level: 'x' }, service: null }, {}],
  ])('%s', (_, source, payload, want) => {
    expect(normalize(source, payload)).toEqual({ ...EMPTY, source, ...want })
  })

  it('reads the sender-specific fields whatever the case of the source header', () => {
    expect(normalize('GitHub', { repository: { full_name: 'a/b' }, pull_request: { title: 'x' } })).toMatchObject({ source: 'GitHub', type: 'pull_request' })
  })
})
