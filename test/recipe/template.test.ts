// spec §4: the grammar (escape, placeholders, reference forms), references, the `??`
// fallback for excluded workloads only, rendering per spec §3.1, the field checks of §4.4 and the
// exact TemplateSyntaxError / TemplateUnresolved / InvalidTemplatedValue messages.
import { isQuantity } from '../../shared/quantity.js'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { TypedValue } from '../../shared/recipe/plan/cel.js'
import {
  escapeTemplate, isCronExpression, isImageReference, parseTemplate, renderField, type FieldCheck, type TemplateContext,
} from '../../shared/recipe/plan/template.js'

const ctx: TemplateContext = {
  inputs: new Map<string, TypedValue>([
    ['tag', { type: 'string', value: '1.27' }],
    ['replicas', { type: 'int', value: 3n }],
    ['ratio', { type: 'double', value: 0.5 }],
    ['big', { type: 'double', value: 1e21 }],
    ['three', { type: 'double', value: 3 }],
    ['on', { type: 'bool', value: true }],
    ['many', { type: 'int', value: 5000n }],
    ['digits', { type: 'string', value: '007' }],
    ['long', { type: 'string', value: 'x'.repeat(16385) }],
  ]),
  failedInputs: new Set(['broken']),
  computed: new Map<string, TypedValue>([['pool', { type: 'int', value: 20n }]]),
  failedComputed: new Set(),
  recipe: { name: 'shop', namespace: 'team-a', profile: '' },
  workloads: new Map([
    ['db', { included: true, name: 'team-a-shop-db-d306e21e', namespace: 'sandbox', serviceName: 'team-a-shop-db-d306e21e', ports: [{ name: 'pg', port: 5432 }], port: 5432 }],
    ['cache', { included: false, name: 'team-a-shop-cache', namespace: 'sandbox', serviceName: 'team-a-shop-cache', ports: [{ name: 'redis', port: 6379 }], port: 6379 }],
    ['job', { included: true, name: 'team-a-shop-job', namespace: 'sandbox', ports: [] }],
    ['mcp', { included: true, name: 'team-a-shop-mcp', namespace: 'mcp', serviceName: 'team-a-shop-mcp', ports: [{ name: 'http', port: 80 }], port: 80, mcpUrl: 'http://team-a-shop-mcp.mcp.svc:80/mcp' }],
  ]),
}
const render = (t: string, check?: FieldCheck) => renderField(t, 'workload "web"', 'image', ctx, check)
const text = (t: string) => { const r = render(t); if (!r.ok) throw new Error(JSON.stringify(r.errors)); return r.text }
const messages = (t: string, check?: FieldCheck) => { const r = render(t, check); return r.ok ? [] : r.errors.map((e) => `${e.reason}: ${e.message}`) }

describe('rendering (spec §4.2, §3.1)', () => {
  it.each([
    ['plain text }} and \\ stay', 'plain text }} and \\ stay'],
    ['{{inputs.tag}}', '1.27'],
    ['{{ inputs.tag }}-{{\tcomputed.pool\t}}', '1.27-20'],
    ['{{inputs.replicas}}/{{inputs.ratio}}/{{inputs.big}}/{{inputs.three}}/{{inputs.on}}', '3/0.5/1e+21/3/true'],
    ['{{recipe.name}}.{{recipe.namespace}}.[{{recipe.profile}}]', 'shop.team-a.[]'],
    ['\\{{inputs.tag}}', '{{inputs.tag}}'],
    ['\\\\{{inputs.tag}}', '\\{{inputs.tag}}'],
    ['a\\{{b', 'a{{b'],
    ['{{workloads.db.name}} {{workloads.db.namespace}} {{workloads.db.serviceName}}', 'team-a-shop-db-d306e21e sandbox team-a-shop-db-d306e21e'],
    ['{{workloads.db.host}}:{{workloads.db.port}} {{workloads.db.ports.pg}} {{workloads.db.url}}', 'team-a-shop-db-d306e21e.sandbox.svc:5432 5432 http://team-a-shop-db-d306e21e.sandbox.svc:5432'],
    ['{{workloads.mcp.mcpUrl}}', 'http://team-a-shop-mcp.mcp.svc:80/mcp'],
    ['{{ workloads.cache.host ?? "none" }}', 'none'],
    ['[{{workloads.cache.port??""}}]', '[]'],
    ['{{workloads.db.host ?? "unused"}}', 'team-a-shop-db-d306e21e.sandbox.svc'],
  ])('%s renders %s', (template, expected) => {
    expect(text(template)).toBe(expected)
  })
})

describe('errors (spec §4.4)', () => {
  it.each([
    ['{{inputs.tag', 'TemplateSyntaxError: workload "web": image: malformed placeholder at offset 0'],
    ['abc{{}}', 'TemplateSyntaxError: workload "web": image: malformed placeholder at offset 3'],
    ['x {{inputs.{{inputs.tag}}}}', 'TemplateSyntaxError: workload "web": image: malformed placeholder at offset 2'],
    ['{{inputs.tag + 1}}', 'TemplateSyntaxError: workload "web": image: malformed placeholder at offset 0'],
    ['{{secrets.x}}', 'TemplateSyntaxError: workload "web": image: malformed placeholder at offset 0'],
    ['{{recipe.uid}}', 'TemplateSyntaxError: workload "web": image: malformed placeholder at offset 0'],
    ['{{workloads.db.ip}}', 'TemplateSyntaxError: workload "web": image: malformed placeholder at offset 0'],
    ['ok {{inputs.tag ?? none}}', 'TemplateSyntaxError: workload "web": image: malformed placeholder at offset 3'],
    ['{{inputs.tag ?? "a\\"b"}}', 'TemplateSyntaxError: workload "web": image: malformed placeholder at offset 0'],
    ['{{inputs.nope}}', 'TemplateUnresolved: workload "web": image: unresolved reference "inputs.nope": no input "nope"'],
    ['{{computed.nope}}', 'TemplateUnresolved: workload "web": image: unresolved reference "computed.nope": no computed value "nope"'],
    ['{{workloads.nope.host}}', 'TemplateUnresolved: workload "web": image: unresolved reference "workloads.nope.host": no workload "nope"'],
    ['{{workloads.nope.host ?? "x"}}', 'TemplateUnresolved: workload "web": image: unresolved reference "workloads.nope.host": no workload "nope"'],
    ['{{workloads.cache.host}}', 'TemplateUnresolved: workload "web": image: unresolved reference "workloads.cache.host": workload "cache" is excluded by includeWhen'],
    ['{{workloads.job.url}}', 'TemplateUnresolved: workload "web": image: unresolved reference "workloads.job.url": workload "job" has no Service'],
    ['{{workloads.db.ports.http}}', 'TemplateUnresolved: workload "web": image: unresolved reference "workloads.db.ports.http": workload "db" has no port "http"'],
    ['{{workloads.db.mcpUrl ?? "x"}}', 'TemplateUnresolved: workload "web": image: unresolved reference "workloads.db.mcpUrl": workload "db" has no transport'],
  ])('%s', (template, message) => {
    expect(messages(template)).toEqual([message])
  })

  it('reports each unresolved reference of a field once, and never a failed input again', () => {
    expect(messages('{{inputs.a}}{{inputs.a}}{{inputs.b}}')).toHaveLength(2)
    expect(messages('{{inputs.broken}}')).toEqual([])
    expect(render('{{inputs.broken}}').ok).toBe(false)
  })

  it.each([
    ['{{inputs.replicas}}', 'replicas', null],
    ['{{inputs.three}}', 'replicas', null],
    ['{{inputs.digits}}', 'replicas', null],
    ['{{inputs.ratio}}', 'replicas', 'InvalidTemplatedValue: workload "web": image: "0.5" is not an integer in 0..1000'],
    ['{{inputs.many}}', 'replicas', 'InvalidTemplatedValue: workload "web": image: "5000" is not an integer in 0..1000'],
    ['{{inputs.tag}}', 'replicas', 'InvalidTemplatedValue: workload "web": image: "1.27" is not an integer in 0..1000'],
    ['nginx:{{inputs.tag}}', 'image', null],
    ['Nginx:{{inputs.tag}}', 'image', 'InvalidTemplatedValue: workload "web": image: "Nginx:1.27" is not a valid image reference'],
    ['*/5 * * * *', 'cron', null],
    ['{{inputs.tag}} * * *', 'cron', 'InvalidTemplatedValue: workload "web": image: "1.27 * * *" is not a five-field cron expression'],
    ['{{inputs.tag}}Gi', 'quantity', null],
    ['{{inputs.on}}', 'quantity', 'InvalidTemplatedValue: workload "web": image: "true" is not a Kubernetes quantity'],
    ['{{inputs.long}}', undefined, `InvalidTemplatedValue: workload "web": image: "${'x'.repeat(64)}" is not at most 16384 characters`],
  ] as const)('%s as %s', (template, check, message) => {
    expect(messages(template, check)).toEqual(message === null ? [] : [message])
  })

  it('replicas keeps the typed value of a single placeholder', () => {
    const r = render('{{ inputs.replicas }}', 'replicas')
    expect(r.ok && r.value).toEqual({ type: 'int', value: 3n })
  })
})

describe('value checks', () => {
  it.each(['nginx', 'nginx:1.27-alpine', 'docker.io/library/nginx:latest', 'localhost:5000/a/b_c__d-e:v1', 'ghcr.io/org/img@sha256:' + 'a'.repeat(64), 'registry.example.com:443/x/y:1.0@sha256:' + 'b'.repeat(64)])('%s is an image reference', (image) => {
    expect(isImageReference(image)).toBe(true)
  })
  it.each(['', 'UPPER', 'nginx:', 'nginx:tag with space', 'a//b', '-a', 'nginx@sha256:short', ':tag'])('%j is not an image reference', (image) => {
    expect(isImageReference(image)).toBe(false)
  })
  it.each(['0 * * * *', '*/15 0-6 1,15 JAN-MAR mon-fri', '5 4 * * 7', '0 0 ? * SUN'])('%s is a cron expression', (cron) => {
    expect(isCronExpression(cron)).toBe(true)
  })
  it.each(['* * * *', '60 * * * *', '* 24 * * *', '* * 0 * *', '* * * 13 *', '* * * * 8', '*/0 * * * *', '@hourly', '5-1 * * * *'])('%s is not a cron expression', (cron) => {
    expect(isCronExpression(cron)).toBe(false)
  })
  it.each([['500m', true], ['1Gi', true], ['1.5', true], ['1e3', true], ['2Gb', false], ['', false], ['Gi', false]])('%s quantity %s', (q, ok) => {
    expect(isQuantity(q)).toBe(ok)
  })
})

describe('properties', () => {
  it('escaping any text renders that text back, unchanged', () => {
    fc.assert(fc.property(fc.string({ unit: fc.constantFrom('{', '}', '\\', 'a', ' ', '{{', '}}', '\\{{', 'é') }), (s) => {
      const r = renderField(escapeTemplate(s), 'workflow', 'task', ctx)
      expect(r.ok && r.text).toBe(s)
    }), { numRuns: 500 })
  })

  it('text without "{{" is literal: rendering returns it unchanged', () => {
    fc.assert(fc.property(fc.string({ maxLength: 200 }).filter((s) => !s.includes('{{')), (s) => {
      const parsed = parseTemplate(s)
      expect(parsed.ok).toBe(true)
      expect(text(s)).toBe(s)
    }), { numRuns: 500 })
  })

  it('literal text around placeholders is kept byte for byte', () => {
    fc.assert(fc.property(fc.array(fc.string({ maxLength: 20 }).filter((s) => !s.includes('{') && !s.endsWith('\\')), { minLength: 1, maxLength: 5 }), (parts) => {
      expect(text(parts.join('{{inputs.tag}}'))).toBe(parts.join('1.27'))
    }), { numRuns: 300 })
  })
})
