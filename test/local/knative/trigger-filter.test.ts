import { describe, expect, it } from 'vitest'
import type { KEvent } from '../../../local/knative/cloud-event.js'
import { filterWarnings, triggerMatches, type TriggerFilterSpec } from '../../../local/knative/trigger-filter.js'

const event: KEvent = {
  specversion: '1.0',
  id: 'e1',
  type: 'dev.knative.apiserver.resource.update',
  source: 'https://10.96.0.1:443',
  subject: '/apis/purko.io/v1alpha1/namespaces/ai-agents/workflows/wf',
  extensions: { kind: 'Workflow', namespace: 'ai-agents', kineticsource: 'workflows', empty: '' },
}

describe('Trigger filters', () => {
  it.each<[string, TriggerFilterSpec, boolean]>([
    ['no filter at all passes everything', {}, true],
    ['empty filter.attributes passes everything', { filter: { attributes: {} } }, true],
    ['attributes: exact type', { filter: { attributes: { type: 'dev.knative.apiserver.resource.update' } } }, true],
    ['attributes: another type', { filter: { attributes: { type: 'dev.knative.apiserver.resource.add' } } }, false],
    ['attributes: are case-sensitive', { filter: { attributes: { kind: 'workflow' } } }, false],
    ['attributes: all keys must match', { filter: { attributes: { type: 'dev.knative.apiserver.resource.update', kineticsource: 'jobs' } } }, false],
    ['attributes: missing extension fails', { filter: { attributes: { absent: 'x' } } }, false],
    ['attributes: empty value requires the attribute to exist', { filter: { attributes: { kineticsource: '' } } }, true],
    ['attributes: empty value fails on a missing attribute', { filter: { attributes: { absent: '' } } }, false],
    ['attributes: empty value fails on an empty attribute', { filter: { attributes: { empty: '' } } }, false],
    ['attributes: no prefix matching', { filter: { attributes: { type: 'dev.knative.apiserver.resource.' } } }, false],
    ['exact', { filters: [{ exact: { kineticsource: 'workflows' } }] }, true],
    ['exact mismatch', { filters: [{ exact: { kineticsource: 'jobs' } }] }, false],
    ['prefix', { filters: [{ prefix: { type: 'dev.knative.apiserver.resource.' } }] }, true],
    ['prefix mismatch', { filters: [{ prefix: { type: 'dev.knative.apiserver.ref.' } }] }, false],
    ['suffix', { filters: [{ suffix: { type: '.update' } }] }, true],
    ['suffix mismatch', { filters: [{ suffix: { type: '.delete' } }] }, false],
    ['filters list is an AND', { filters: [{ exact: { kineticsource: 'workflows' } }, { suffix: { type: '.delete' } }] }, false],
    ['any: one of', { filters: [{ any: [{ exact: { type: 'x' } }, { suffix: { type: '.update' } }] }] }, true],
    ['any: none of', { filters: [{ any: [{ exact: { type: 'x' } }, { exact: { type: 'y' } }] }] }, false],
    ['all: every one', { filters: [{ all: [{ exact: { kind: 'Workflow' } }, { prefix: { subject: '/apis/purko.io/' } }] }] }, true],
    ['all: one fails', { filters: [{ all: [{ exact: { kind: 'Workflow' } }, { prefix: { subject: '/apis/batch/' } }] }] }, false],
    ['not: negates a match', { filters: [{ not: { exact: { type: 'dev.knative.apiserver.resource.update' } } }] }, false],
    ['not: negates a mismatch', { filters: [{ not: { suffix: { type: '.delete' } } }] }, true],
    ['filters override filter.attributes', { filter: { attributes: { type: 'nope' } }, filters: [{ exact: { kind: 'Workflow' } }] }, true],
    ['an exact filter with an empty value is skipped, so it blocks nothing', { filters: [{ exact: { type: '' } }] }, true],
    ['cesql is not evaluated locally and matches nothing', { filters: [{ cesql: "type = 'dev.knative.apiserver.resource.update'" }] }, false],
  ])('%s', (_, spec, expected) => {
    expect(triggerMatches(spec, event)).toBe(expected)
  })

  it('warns about cesql and empty values, which behave surprisingly', () => {
    const warnings = filterWarnings({ filters: [{ cesql: 'true' }, { any: [{ exact: { type: '' } }] }] })
    expect(warnings).toHaveLength(2)
    expect(warnings[0]).toMatch(/cesql/)
    expect(warnings[1]).toMatch(/filters\[1\]\.any\[0\]\.exact\.type has an empty value/)
  })

  it('warns about an element that mixes dialects', () => {
    expect(filterWarnings({ filters: [{ exact: { a: 'b' }, prefix: { c: 'd' } }] })[0]).toMatch(/exactly one dialect/)
  })
})
