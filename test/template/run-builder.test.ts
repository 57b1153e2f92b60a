import { describe, expect, it } from 'vitest'
import {
  buildRun, deliverySuffix, isTemplate, randomSuffix, runName, scheduleSuffix, templateOf, templateRunSelector,
} from '../../shared/template/run-builder.js'
import { labelValue } from '../../shared/workflow/plan/job-builder.js'
import { workflowOf } from '../support/objects.js'
import type { Workflow } from '../../shared/schemas/workflow.js'

function template(name = 'nightly', extra: Partial<Workflow['metadata']> = {}): Workflow {
  const wf = workflowOf(name, [
    { name: 'collect', input: { url: 'https://example.com' } },
    { name: 'report', dependsOn: ['collect'] },
  ], {
    description: 'Nightly report',
    parameters: { region: 'eu', level: 'info' },
    trigger: { schedule: { cron: '0 2 * * *', timezone: 'Europe/Paris' }, successfulRunsHistoryLimit: 5 },
    concurrency: { policy: 'forbid' },
  })
  wf.metadata = {
    ...wf.metadata,
    labels: { team: 'data' },
    annotations: { 'purko.io/template': 'true', 'kubectl.kubernetes.io/last-applied-configuration': '{}' },
    ...extra,
  }
  return wf
}

describe('run names', () => {
  it('a schedule suffix is the fire time in unix seconds as 8 hex digits, so duplicate fires give the same name', () => {
    const fire = new Date('2026-03-01T02:00:00Z')
    expect(scheduleSuffix(fire)).toBe((fire.getTime() / 1000).toString(16).padStart(8, '0'))
    expect(scheduleSuffix(new Date('2026-03-01T02:00:00.900Z'))).toBe(scheduleSuffix(fire))
    expect(scheduleSuffix(new Date(0))).toBe('00000000')
    expect(scheduleSuffix(new Date('2106-02-07T06:28:16Z'))).toBe('00000000')
    expect(runName('nightly', 'sched', scheduleSuffix(fire))).toMatch(/^nightly-sched-[0-9a-f]{8}$/)
  })

  it('a delivery suffix depends on the template uid and the delivery id only', () => {
    const a = deliverySuffix('uid-1', 'delivery-7')
    expect(a).toMatch(/^[0-9a-f]{8}$/)
    expect(deliverySuffix('uid-1', 'delivery-7')).toBe(a)
    expect(deliverySuffix('uid-2', 'delivery-7')).not.toBe(a)
    expect(deliverySuffix('uid-1', 'delivery-8')).not.toBe(a)
  })

  it('a random suffix is 8 hex digits and differs between calls', () => {
    const seen = new Set(Array.from({ length: 50 }, () => randomSuffix()))
    for (const s of seen) expect(s).toMatch(/^[0-9a-f]{8}$/)
    expect(seen.size).toBeGreaterThan(45)
  })

  it('the template part is cut so the name stays within 253 characters and does not end in a dash before the tail', () => {
    const long = `${'a'.repeat(239)}-${'b'.repeat(20)}`
    const name = runName(long, 'run', 'deadbeef')
    expect(name.length).toBeLessThanOrEqual(253)
    expect(name.endsWith('-run-deadbeef')).toBe(true)
    expect(name).not.toMatch(/--run-/)
    expect(runName('x'.repeat(300), 'sched', '0000abcd')).toHaveLength(253)
    expect(runName('short', 'run', '01234567')).toBe('short-run-01234567')
  })
})

describe('templates and runs', () => {
  it('a Workflow annotated purko.io/template "true" or carrying a schedule cron is a template; a run never is', () => {
    expect(isTemplate(template())).toBe(true)
    const cronOnly = workflowOf('cron-only', [{ name: 'a' }], { trigger: { schedule: { cron: '*/5 * * * *' } } })
    expect(isTemplate(cronOnly)).toBe(true)
    const annotatedOnly = workflowOf('manual', [{ name: 'a' }])
    annotatedOnly.metadata.annotations = { 'purko.io/template': 'true' }
    expect(isTemplate(annotatedOnly)).toBe(true)
    expect(isTemplate(workflowOf('plain', [{ name: 'a' }]))).toBe(false)
    const falseAnnotation = workflowOf('plain', [{ name: 'a' }])
    falseAnnotation.metadata.annotations = { 'purko.io/template': 'false' }
    expect(isTemplate(falseAnnotation)).toBe(false)
    const emptyCron = workflowOf('empty', [{ name: 'a' }], { trigger: { schedule: { cron: ' ' } } })
    expect(isTemplate(emptyCron)).toBe(false)
    const run = template()
    run.metadata.annotations = { ...run.metadata.annotations, 'purko.io/workflow-template': 'parent' }
    expect(isTemplate(run)).toBe(false)
    expect(templateOf(run)).toBe('parent')
    expect(templateOf(template())).toBeUndefined()
  })

  it('the run selector is the template label with a label-safe value', () => {
    expect(templateRunSelector('nightly')).toEqual({ 'kinetic.dev/template': 'nightly' })
    const long = 'n'.repeat(100)
    expect(templateRunSelector(long)).toEqual({ 'kinetic.dev/template': labelValue(long) })
    expect(templateRunSelector(long)['kinetic.dev/template']!.length).toBeLessThanOrEqual(63)
  })
})

describe('buildRun', () => {
  const fire = new Date('2026-03-01T01:00:00Z')
  const scheduled = () => buildRun({
    template: template(),
    type: 'schedule',
    source: '0 2 * * *',
    suffix: scheduleSuffix(fire),
    scheduledTime: fire.toISOString().replace('.000Z', 'Z'),
    inputFor: () => ({ schedule: '0 2 * * *', task: 'Nightly report', timestamp: '2026-03-01T01:00:00Z', trigger: 'schedule' }),
  })

  it('names the run after the template and carries the trigger annotations and the template label', () => {
    const run = scheduled()
    expect(run.metadata.name).toBe(`nightly-sched-${scheduleSuffix(fire)}`)
    expect(run.metadata.namespace).toBe('team')
    expect(run.metadata.annotations).toEqual({
      'purko.io/workflow-template': 'nightly',
      'purko.io/trigger-type': 'schedule',
      'purko.io/trigger-source': '0 2 * * *',
      'kinetic.dev/scheduled-time': '2026-03-01T01:00:00Z',
    })
    expect(run.metadata.labels).toEqual({ 'kinetic.dev/template': 'nightly' })
    expect(templateOf(run)).toBe('nightly')
    expect(isTemplate(run)).toBe(false)
  })

  it('is owned by the template as its controller without blocking the template\'s deletion', () => {
    expect(scheduled().metadata.ownerReferences).toEqual([{
      apiVersion: 'purko.io/v1alpha1', kind: 'Workflow', name: 'nightly', uid: 'uid-nightly', controller: true, blockOwnerDeletion: false,
    }])
  })

  it('copies the spec without the trigger and replaces every step input for a schedule', () => {
    const run = scheduled()
    expect(run.spec.trigger).toBeUndefined()
    expect(run.spec.concurrency).toEqual({ policy: 'forbid' })
    expect(run.spec.parameters).toEqual({ region: 'eu', level: 'info' })
    expect(run.spec.steps.map((s) => s.input)).toEqual([
      { schedule: '0 2 * * *', task: 'Nightly report', timestamp: '2026-03-01T01:00:00Z', trigger: 'schedule' },
      { schedule: '0 2 * * *', task: 'Nightly report', timestamp: '2026-03-01T01:00:00Z', trigger: 'schedule' },
    ])
    expect(run.spec.steps[1]!.dependsOn).toEqual(['collect'])
  })

  it('does not copy the template\'s own annotations, labels, uid or resourceVersion, and leaves the template untouched', () => {
    const t = template()
    const before = structuredClone(t)
    const run = buildRun({ template: t, type: 'manual', source: 'alice', suffix: '0badf00d' })
    expect(run.metadata.annotations?.['purko.io/template']).toBeUndefined()
    expect(run.metadata.annotations?.['kubectl.kubernetes.io/last-applied-configuration']).toBeUndefined()
    expect(run.metadata.labels?.team).toBeUndefined()
    expect(run.metadata.uid).toBeUndefined()
    expect(run.metadata.resourceVersion).toBeUndefined()
    expect(run.metadata.generation).toBeUndefined()
    expect(run.status).toBeUndefined()
    expect(t).toEqual(before)
  })

  it('a manual run merges parameters key by key and keeps inputs', () => {
    const run = buildRun({ template: template(), type: 'manual', source: 'alice', suffix: '0badf00d', parameters: { level: 'debug', extra: '1' } })
    expect(run.metadata.name).toBe('nightly-run-0badf00d')
    expect(run.metadata.annotations?.['purko.io/trigger-type']).toBe('manual')
    expect(run.metadata.annotations?.['purko.io/trigger-source']).toBe('alice')
    expect(run.spec.parameters).toEqual({ region: 'eu', level: 'debug', extra: '1' })
    expect(run.spec.steps.map((s) => s.input)).toEqual([{ url: 'https://example.com' }, undefined])
  })

  it('a webhook run records route and delivery id, and inputFor replaces only the steps it answers for', () => {
    const run = buildRun({
      template: template(),
      type: 'webhook',
      source: 'github',
      route: 'rule:on-push',
      suffix: deliverySuffix('uid-nightly', 'd-1'),
      deliveryId: 'd-1',
      inputFor: (step) => (step.input === undefined ? { webhook_source: 'github' } : undefined),
    })
    expect(run.metadata.annotations).toMatchObject({
      'purko.io/trigger-type': 'webhook', 'purko.io/trigger-source': 'github',
      'purko.io/trigger-route': 'rule:on-push', 'kinetic.dev/delivery-id': 'd-1',
    })
    expect(run.metadata.annotations?.['kinetic.dev/scheduled-time']).toBeUndefined()
    expect(run.spec.steps.map((s) => s.input)).toEqual([{ url: 'https://example.com' }, { webhook_source: 'github' }])
  })

  it('a long template name gives a run name within 253 characters and a label within 63', () => {
    const name = 'long-'.repeat(50)
    const run = buildRun({ template: template(name.slice(0, 250)), type: 'schedule', source: '* * * * *', suffix: '12345678' })
    expect(run.metadata.name!.length).toBeLessThanOrEqual(253)
    expect(run.metadata.name).toMatch(/-sched-12345678$/)
    expect(run.metadata.labels!['kinetic.dev/template']!.length).toBeLessThanOrEqual(63)
    expect(run.metadata.annotations!['purko.io/workflow-template']).toBe(name.slice(0, 250))
  })
})
