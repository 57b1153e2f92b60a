import { describe, expect, it } from 'vitest'
import { normalize } from '../../shared/webhook/normalize.js'
import { DEFAULT_RULES, matchRule, parseRules, type TriggerRule } from '../../shared/webhook/rules.js'

const pagerduty = (urgency: string) => normalize('pagerduty', { event: { data: { title: 't', urgency } } })
const github = (payload: Record<string, unknown>) => normalize('github', { repository: { full_name: 'acme/shop' }, ...payload })

describe('trigger rules: where they come from', () => {
  it.each([
    ['no ConfigMap', undefined],
    ['no rules key', { other: '[]' }],
  ])('%s gives the default rules', (_, data) => {
    expect(parseRules(data)).toEqual({ rules: DEFAULT_RULES, origin: 'default' })
  })

  it.each([
    ['not JSON', '[{"name": '],
    ['not an array', '{"name":"a"}'],
    ['an element that is not an object', '[{"name":"a","source":"*","workflow":"w"}, 3]'],
    ['a field of the wrong type', '[{"name":"a","source":"*","workflow":7}]'],
    ['a non-string match value', '[{"name":"a","source":"*","match":{"severity":1},"workflow":"w"}]'],
    ['a match that is a list', '[{"name":"a","source":"*","match":["x"],"workflow":"w"}]'],
  ])('%s gives the default rules and says why', (_, rules) => {
    const set = parseRules({ rules })
    expect(set.rules).toEqual(DEFAULT_RULES)
    expect(set.origin).toBe('default')
    expect(set.invalid).toEqual(expect.any(String))
  })

  it("uses the ConfigMap's rules, absent fields empty as Go decodes them", () => {
    const set = parseRules({ rules: JSON.stringify([{ name: 'catch-all', source: '*', match: {}, workflow: 'triage' }, { name: 'bare' }]) })
    expect(set).toEqual({
      origin: 'configmap',
      rules: [
        { name: 'catch-all', source: '*', match: {}, workflow: 'triage' },
        { name: 'bare', source: '', match: {}, workflow: '' },
      ],
    })
  })

  it('an empty array is a valid list with no rules: nothing matches', () => {
    const set = parseRules({ rules: '[]' })
    expect(set).toEqual({ rules: [], origin: 'configmap' })
    expect(matchRule(set.rules, pagerduty('critical'))).toBeNull()
  })
})

describe('trigger rules: matching', () => {
  it.each([
    ['a critical PagerDuty incident', pagerduty('critical'), 'pagerduty-critical', 'incident-response'],
    ['a high PagerDuty incident', pagerduty('high'), 'pagerduty-high', 'cluster-investigation'],
    ['a pull request', github({ pull_request: { title: 'x' } }), 'github-pr', 'cluster-sdlc-analysis'],
    ['a push', github({ ref: 'refs/heads/main' }), 'github-push', 'cluster-sdlc-analysis'],
  ])('the default rules send %s to %s', (_, n, rule, workflow) => {
    expect(matchRule(DEFAULT_RULES, n)).toMatchObject({ name: rule, workflow })
  })

  it.each([
    ['a low PagerDuty incident', pagerduty('low')],
    ['a GitHub issue', github({ issue: { title: 'x' } })],
    ['a Slack command', normalize('slack', { command: '/x' })],
  ])('the default rules match nothing for %s', (_, n) => {
    expect(matchRule(DEFAULT_RULES, n)).toBeNull()
  })

  const rules: TriggerRule[] = [
    { name: 'shop-prs', source: 'GitHub', match: { type: 'PULL_REQUEST', repository: 'Acme/Shop' }, workflow: 'shop-review' },
    { name: 'any-pr', source: 'github', match: { type: 'pull_request' }, workflow: 'review' },
    { name: 'odd-key', source: '*', match: { colour: 'red' }, workflow: 'never' },
    { name: 'odd-key-empty', source: '*', match: { colour: '' }, workflow: 'fallback' },
  ]

  it('the first matching rule wins, comparing source and values case-insensitively', () => {
    expect(matchRule(rules, github({ pull_request: { title: 'x' } }))?.name).toBe('shop-prs')
    expect(matchRule(rules, normalize('github', { repository: { full_name: 'other/repo' }, pull_request: { title: 'x' } }))?.name).toBe('any-pr')
  })

  it('`*` matches any source; a key outside the normalised fields compares against ""', () => {
    expect(matchRule(rules, normalize('slack', { command: '/x' }))?.name).toBe('odd-key-empty')
  })

  it('every match key must hold', () => {
    const both: TriggerRule[] = [{ name: 'r', source: '*', match: { severity: 'critical', service: 'db' }, workflow: 'w' }]
    expect(matchRule(both, normalize('x', { severity: 'critical', service: 'db' }))).not.toBeNull()
    expect(matchRule(both, normalize('x', { severity: 'critical', service: 'web' }))).toBeNull()
  })

  it('a rule may name _intent (answered as purko Community does)', () => {
    const set = parseRules({ rules: '[{"name":"catch-all","source":"*","match":{},"workflow":"_intent"}]' })
    expect(matchRule(set.rules, pagerduty('low'))?.workflow).toBe('_intent')
  })
})
