// spec §10 on the reference examples: the production policy (10-policy-production.yaml) and the
// cluster-wide audit baseline (11-policy-audit-baseline.yaml) evaluated against every example recipe
// as renderRecipe renders it, with the exact findings a user would read in status.
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseAllDocuments } from 'yaml'
import { describe, expect, it } from 'vitest'
import { recipeConfig } from '../../shared/recipe/plan/config.js'
import { evaluatePolicies, type NamespaceLabels } from '../../shared/recipe/plan/policy.js'
import { renderRecipe } from '../../shared/recipe/plan/render.js'
import type { RenderOk } from '../../shared/recipe/plan/rendered.js'
import { WorkflowRecipeSchema, type WorkflowRecipe } from '../../shared/schemas/workflowrecipe.js'
import { WorkflowRecipePolicySchema, type WorkflowRecipePolicy } from '../../shared/schemas/workflowrecipepolicy.js'
import { referenceDir } from '../support/reference.js'

const root = join(referenceDir(), 'recipes', 'examples')
const docs = readdirSync(root).filter((f) => f.endsWith('.yaml')).sort()
  .flatMap((file) => parseAllDocuments(readFileSync(join(root, file), 'utf8')).map((d) => d.toJS() as { kind?: string; metadata?: { name?: string } }).filter(Boolean))
const recipes = new Map(docs.filter((d) => d.kind === 'WorkflowRecipe').map((d) => { const r = WorkflowRecipeSchema.parse(d); return [r.metadata.name!, r] }))
const policies: WorkflowRecipePolicy[] = docs.filter((d) => d.kind === 'WorkflowRecipePolicy').map((d) => WorkflowRecipePolicySchema.parse(d))
const config = recipeConfig({})

const INSTALLED = { 'app.kubernetes.io/part-of': 'kinetic', 'pod-security.kubernetes.io/enforce': 'baseline', 'pod-security.kubernetes.io/warn': 'restricted', 'pod-security.kubernetes.io/audit': 'restricted' }
const PRODUCTION = { 'kinetic.dev/environment': 'production' }
const production: NamespaceLabels = { 'recipes-demo': PRODUCTION, 'ai-agents': PRODUCTION, 'mcp-server': INSTALLED, 'sandbox-recipes': INSTALLED }
const development: NamespaceLabels = { 'mcp-server': INSTALLED, 'sandbox-recipes': INSTALLED }

function rendered(recipe: WorkflowRecipe): RenderOk {
  const out = renderRecipe(recipe, config)
  if (!out.ok) throw new Error(`${recipe.metadata.name}: ${JSON.stringify(out.errors)}`)
  return out
}
function recipe(name: string, spec: Partial<WorkflowRecipe['spec']> = {}): WorkflowRecipe {
  const r = recipes.get(name)
  if (!r) throw new Error(`no example recipe ${name}`)
  return { ...r, spec: { ...r.spec, ...spec } }
}
const evaluate = (r: WorkflowRecipe, labels: NamespaceLabels) => evaluatePolicies(r, rendered(r), undefined, policies, labels)
const findings = (r: WorkflowRecipe, labels: NamespaceLabels) => evaluate(r, labels).violations.map((v) => `${v.policy}: ${v.rule}: ${v.message}`)

const REGISTRY = '(allowed: registry.acme.internal/)'
const RANGES = '(70-70, 101-101, 999-999, 1000-65535)'
const CLASSES = '(allowed: fast-ssd, standard)'
const image = (subject: string, ref: string, audit = true) => [
  ...(audit ? [`baseline-audit: images.requireDigest: ${subject}: image "${ref}" is not pinned by digest`] : []),
]
const prodImage = (subject: string, ref: string) => [
  `production: images.allowedRegistries: ${subject}: image "${ref}" is not from an allowed registry ${REGISTRY}`,
  `production: images.requireDigest: ${subject}: image "${ref}" is not pinned by digest`,
]

describe('the example policies against the example recipes (spec §10)', () => {
  it('the examples hold both policies', () => {
    expect(policies.map((p) => [p.metadata.name, p.spec.mode])).toEqual([['production', 'Enforce'], ['baseline-audit', 'Audit']])
  })

  it.each<[string, Partial<WorkflowRecipe['spec']>, string[]]>([
    ['postgres', {}, [
      ...image('workload "db"', 'postgres:16.4-alpine'),
      ...prodImage('workload "db"', 'postgres:16.4-alpine'),
      `production: storage.allowedStorageClasses: workload "db": volumeClaimTemplate "data" uses storage class "(default)" ${CLASSES}`,
    ]],
    ['mongodb', {}, [
      ...image('workload "mongo"', 'mongo:7.0'),
      ...prodImage('workload "mongo"', 'mongo:7.0'),
      `production: storage.allowedStorageClasses: workload "mongo": volumeClaimTemplate "data" uses storage class "(default)" ${CLASSES}`,
    ]],
    ['mcp-everything', {}, [
      ...image('workload "everything"', 'mcp/everything:latest'),
      ...prodImage('workload "everything"', 'mcp/everything:latest'),
    ]],
    ['mcp-time', {}, [
      ...image('workload "time"', 'mcp/time:latest'),
      ...prodImage('workload "time"', 'mcp/time:latest'),
      'production: transports.allowed: workload "time": transport stdio is not allowed (allowed: http)',
    ]],
    ['nightly-report', {}, [
      ...image('workload "report"', 'curlimages/curl:8.10.1'),
      ...prodImage('workload "report"', 'curlimages/curl:8.10.1'),
      `production: security.runAsUser: workload "report": runAsUser 100 is outside the allowed ranges ${RANGES}`,
    ]],
    ['node-otel-agent', {}, [
      ...image('workload "collector"', 'otel/opentelemetry-collector-contrib:0.110.0'),
      'production: kinds.allowed: workload "collector": kind DaemonSet is not allowed (allowed: Deployment, StatefulSet, Job, CronJob)',
      ...prodImage('workload "collector"', 'otel/opentelemetry-collector-contrib:0.110.0'),
    ]],
    ['launch-research', {}, [
      'production: steps.allowed: recipe has agentic steps, which this policy does not allow',
    ]],
    ['postgres-template', { values: { database: 'orders' }, profile: 'large' }, [
      ...image('workload "db"', 'postgres:16.4-alpine'),
      'baseline-audit: resources.requireLimits: workload "db": missing memory limit',
      ...prodImage('workload "db"', 'postgres:16.4-alpine'),
      'production: resources.requireRequests: workload "db": missing cpu request',
      'production: resources.requireRequests: workload "db": missing memory request',
      'production: resources.requireLimits: workload "db": missing memory limit',
      `production: storage.allowedStorageClasses: workload "db": volumeClaimTemplate "data" uses storage class "(default)" ${CLASSES}`,
    ]],
  ])('%s in a production namespace', (name, spec, expected) => {
    const r = recipe(name, spec)
    expect(findings(r, production)).toEqual(expected)
    const out = evaluate(r, production)
    expect(out).toMatchObject({ rejected: true, reason: 'PolicyViolation', evaluated: ['baseline-audit', 'production'] })
    expect(out.approval).toEqual({ required: true, requiredBy: ['production'], timeoutSeconds: 259200 })
    expect(out.message.startsWith('Rejected by policy: production: ')).toBe(true)
  })

  it('the web shop (dev profile) in production: workloads in spec order, the excluded cache skipped, then the smoke test', () => {
    const r = recipe('shop')
    expect(findings(r, production)).toEqual([
      ...image('workload "db"', 'postgres:16.4-alpine'),
      'baseline-audit: resources.requireLimits: workload "db": missing memory limit',
      ...image('workload "migrate"', 'postgres:16.4-alpine'),
      'baseline-audit: resources.requireLimits: workload "migrate": missing memory limit',
      ...image('workload "web"', 'nginxinc/nginx-unprivileged:1.27-alpine'),
      ...image('test "smoke"', 'curlimages/curl:8.10.1'),
      'baseline-audit: resources.requireLimits: test "smoke": missing memory limit',
      ...prodImage('workload "db"', 'postgres:16.4-alpine'),
      'production: resources.requireRequests: workload "db": missing cpu request',
      'production: resources.requireRequests: workload "db": missing memory request',
      'production: resources.requireLimits: workload "db": missing memory limit',
      `production: storage.allowedStorageClasses: workload "db": volumeClaimTemplate "data" uses storage class "(default)" ${CLASSES}`,
      ...prodImage('workload "migrate"', 'postgres:16.4-alpine'),
      'production: resources.requireRequests: workload "migrate": missing cpu request',
      'production: resources.requireRequests: workload "migrate": missing memory request',
      'production: resources.requireLimits: workload "migrate": missing memory limit',
      ...prodImage('workload "web"', 'nginxinc/nginx-unprivileged:1.27-alpine'),
      ...prodImage('test "smoke"', 'curlimages/curl:8.10.1'),
      `production: security.runAsUser: test "smoke": runAsUser 100 is outside the allowed ranges ${RANGES}`,
      'production: resources.requireRequests: test "smoke": missing cpu request',
      'production: resources.requireRequests: test "smoke": missing memory request',
      'production: resources.requireLimits: test "smoke": missing memory limit',
    ])
    const out = evaluate(r, production)
    expect(out.totalViolations).toBe(26)
    expect(out.message).toBe('Rejected by policy: '
      + `production: images.allowedRegistries: workload "db": image "postgres:16.4-alpine" is not from an allowed registry ${REGISTRY}; `
      + 'production: images.requireDigest: workload "db": image "postgres:16.4-alpine" is not pinned by digest; '
      + 'production: resources.requireRequests: workload "db": missing cpu request; '
      + 'production: resources.requireRequests: workload "db": missing memory request; '
      + 'production: resources.requireLimits: workload "db": missing memory limit; and 14 more')
  })

  it('the web shop with the prod profile: the cache is included and checked, 3 replicas stay under 20, 20Gi under 500Gi', () => {
    const all = findings(recipe('shop', { profile: 'prod' }), production)
    expect(all.filter((f) => f.includes('workload "cache"'))).toEqual([
      ...image('workload "cache"', 'redis:7.4-alpine'),
      ...prodImage('workload "cache"', 'redis:7.4-alpine'),
    ])
    expect(all.some((f) => f.includes('replicas.max') || f.includes('storage.maxClaimSize'))).toBe(false)
  })

  it('outside production only the audit baseline applies: findings, not a rejection, and no approval', () => {
    const out = evaluate(recipe('postgres'), development)
    expect(out).toMatchObject({ rejected: false, compliant: false, reason: 'AuditViolation', evaluated: ['baseline-audit'], approval: { required: false, requiredBy: [] } })
    expect(out.message).toBe('Policy findings: baseline-audit: images.requireDigest: workload "db": image "postgres:16.4-alpine" is not pinned by digest')
  })

  it('the agentic recipe has no workload, so the audit baseline finds nothing in it', () => {
    expect(evaluate(recipe('launch-research'), development)).toMatchObject({ compliant: true, reason: 'Compliant', message: '' })
  })

  it('a restricted sandbox would reject an added capability the installed baseline admits', () => {
    const base = recipe('mcp-everything')
    const withCap: WorkflowRecipe = { ...base, spec: { ...base.spec, workloads: base.spec.workloads!.map((w) => ({ ...w, security: { readOnlyRootFilesystem: false, ...w.security, addCapabilities: ['CHOWN' as const] } })) } }
    expect(evaluate(withCap, development).violations.filter((v) => v.policy === 'pod-security')).toEqual([])
    const restricted: NamespaceLabels = { ...development, 'mcp-server': { 'pod-security.kubernetes.io/enforce': 'restricted' } }
    expect(evaluate(withCap, restricted).violations.filter((v) => v.policy === 'pod-security').map((v) => v.message)).toEqual([
      'workload "everything": capability CHOWN is not admitted by Pod Security level "restricted" of namespace "mcp-server"',
    ])
  })
})
