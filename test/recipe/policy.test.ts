import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import {
  evaluatePolicies, policyStatus, recipePolicyStatus, selectorMatches,
  type LabelSelector, type NamespaceLabels, type PolicyInput, type PolicySpecInput, type PolicyViolation,
  type RecipeInput, type RenderedInput, type RenderedTestInput, type RenderedWorkloadInput,
} from '../../shared/recipe/plan/policy.js'
import { compareQuantities, parseQuantity } from '../../shared/quantity.js'

const NOW = '2025-06-01T12:00:00Z'
const DIGEST = `@sha256:${'a'.repeat(64)}`

const workload = (name: string, extra: Partial<RenderedWorkloadInput> = {}): RenderedWorkloadInput => ({
  name, kind: 'Deployment', image: `registry.acme.internal/app${DIGEST}`, namespace: 'sandbox-recipes', ...extra,
})
const test = (name: string, extra: Partial<RenderedTestInput> = {}): RenderedTestInput => ({
  name, image: `registry.acme.internal/check${DIGEST}`, namespace: 'sandbox-recipes', ...extra,
})
const recipeOf = (rendered: RenderedInput, extra: Partial<RecipeInput['spec']> = {}, labels: Record<string, string> = {}): RecipeInput => ({
  metadata: { name: 'shop', namespace: 'team-a', labels },
  spec: { workloads: rendered.workloads.map((w) => ({ name: w.name })), tests: (rendered.tests ?? []).map((t) => ({ name: t.name })), ...extra },
})
const policy = (name: string, spec: PolicySpecInput, extra: Partial<PolicyInput> = {}): PolicyInput => ({ metadata: { name, generation: 1 }, spec, ...extra })

function evaluate(spec: PolicySpecInput, rendered: RenderedInput, recipeSpec: Partial<RecipeInput['spec']> = {}) {
  return evaluatePolicies(recipeOf(rendered, recipeSpec), rendered, undefined, [policy('p', spec)], {})
}
const messages = (spec: PolicySpecInput, rendered: RenderedInput, recipeSpec: Partial<RecipeInput['spec']> = {}) =>
  evaluate(spec, rendered, recipeSpec).violations.map((v) => `${v.rule}: ${v.message}`)

describe('LabelSelector matching (namespaceSelector, recipeSelector)', () => {
  const labels = { env: 'prod', tier: 'web' }
  it.each<[string, LabelSelector | undefined, boolean]>([
    ['absent selector', undefined, true],
    ['empty selector', {}, true],
    ['matchLabels equal', { matchLabels: { env: 'prod' } }, true],
    ['matchLabels different value', { matchLabels: { env: 'dev' } }, false],
    ['matchLabels missing key', { matchLabels: { team: 'a' } }, false],
    ['In with the value', { matchExpressions: [{ key: 'env', operator: 'In', values: ['staging', 'prod'] }] }, true],
    ['In without the value', { matchExpressions: [{ key: 'env', operator: 'In', values: ['dev'] }] }, false],
    ['In on a missing key', { matchExpressions: [{ key: 'team', operator: 'In', values: ['a'] }] }, false],
    ['NotIn without the value', { matchExpressions: [{ key: 'env', operator: 'NotIn', values: ['dev'] }] }, true],
    ['NotIn with the value', { matchExpressions: [{ key: 'env', operator: 'NotIn', values: ['prod'] }] }, false],
    ['NotIn on a missing key matches', { matchExpressions: [{ key: 'team', operator: 'NotIn', values: ['a'] }] }, true],
    ['Exists', { matchExpressions: [{ key: 'tier', operator: 'Exists' }] }, true],
    ['Exists on a missing key', { matchExpressions: [{ key: 'team', operator: 'Exists' }] }, false],
    ['DoesNotExist on a missing key', { matchExpressions: [{ key: 'team', operator: 'DoesNotExist' }] }, true],
    ['DoesNotExist on a present key', { matchExpressions: [{ key: 'env', operator: 'DoesNotExist' }] }, false],
    ['labels and expressions are ANDed', { matchLabels: { env: 'prod' }, matchExpressions: [{ key: 'tier', operator: 'In', values: ['db'] }] }, false],
    ['an unknown operator selects nothing', { matchExpressions: [{ key: 'env', operator: 'Equals', values: ['prod'] }] }, false],
  ])('%s', (_name, selector, expected) => {
    expect(selectorMatches(selector, labels)).toBe(expected)
  })

  it('a policy applies only when both its namespaceSelector and its recipeSelector match', () => {
    const rendered: RenderedInput = { workloads: [workload('web', { kind: 'DaemonSet' })] }
    const ns: NamespaceLabels = { 'team-a': { env: 'prod' } }
    const policies = [
      policy('by-namespace', { namespaceSelector: { matchLabels: { env: 'prod' } }, allowedKinds: ['Deployment'] }),
      policy('other-namespace', { namespaceSelector: { matchLabels: { env: 'dev' } }, allowedKinds: ['Deployment'] }),
      policy('by-recipe', { recipeSelector: { matchExpressions: [{ key: 'app', operator: 'In', values: ['shop'] }] }, allowedKinds: ['Deployment'] }),
      policy('other-recipe', { recipeSelector: { matchLabels: { app: 'blog' } }, allowedKinds: ['Deployment'] }),
      policy('by-name', { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'team-a' } }, allowedKinds: ['Deployment'] }),
    ]
    const out = evaluatePolicies(recipeOf(rendered, {}, { app: 'shop' }), rendered, undefined, policies, ns)
    expect(out.evaluated).toEqual(['by-name', 'by-namespace', 'by-recipe'])
    expect(out.violations.map((v) => v.policy)).toEqual(['by-name', 'by-namespace', 'by-recipe'])
  })
})

describe('Kubernetes quantities', () => {
  it.each<[string, string, -1 | 0 | 1]>([
    ['16Gi', '17179869184', 0],
    ['17Gi', '16Gi', 1],
    ['16G', '16Gi', -1],
    ['8', '8000m', 0],
    ['8001m', '8', 1],
    ['0.5', '500m', 0],
    ['1e3', '1k', 0],
    ['1E', '1e18', 0],
    ['1Ti', '500Gi', 1],
    ['100Mi', '0.1Gi', -1],
    ['.5Ki', '512', 0],
  ])('%s vs %s', (a, b, expected) => {
    expect(compareQuantities(a, b)).toBe(expected)
  })
  it.each(['', 'lots', '1GB', '1 Gi', '1e', '--1', 'Gi'])('%j is not a quantity', (text) => {
    expect(parseQuantity(text)).toBeNull()
  })
})

describe('each rule of spec §10.1 with the exact message of §10.3', () => {
  const one = (w: Partial<RenderedWorkloadInput>): RenderedInput => ({ workloads: [workload('web', w)] })
  it.each<[string, PolicySpecInput, RenderedInput, Partial<RecipeInput['spec']>, string[]]>([
    ['workloads.max', { maxWorkloads: 2 }, { workloads: [workload('a'), workload('b'), workload('c')] }, {},
      ['workloads.max: recipe has 3 workloads, more than the maximum 2']],
    ['workloads.max at the bound', { maxWorkloads: 3 }, { workloads: [workload('a'), workload('b'), workload('c')] }, {}, []],
    ['steps.allowed', { allowSteps: false }, one({}), { steps: [{ name: 's1' }] },
      ['steps.allowed: recipe has agentic steps, which this policy does not allow']],
    ['steps.allowed without steps', { allowSteps: false }, one({}), {}, []],
    ['kinds.allowed', { allowedKinds: ['Deployment', 'StatefulSet'] }, one({ kind: 'DaemonSet' }), {},
      ['kinds.allowed: workload "web": kind DaemonSet is not allowed (allowed: Deployment, StatefulSet)']],
    ['kinds.allowed, empty list', { allowedKinds: [] }, one({ kind: 'Job' }), {},
      ['kinds.allowed: workload "web": kind Job is not allowed (allowed: none)']],
    ['images.allowedRegistries', { images: { allowedRegistries: ['registry.acme.internal/', 'ghcr.io/acme/'] } }, one({ image: 'postgres:16' }), {},
      ['images.allowedRegistries: workload "web": image "postgres:16" is not from an allowed registry (allowed: registry.acme.internal/, ghcr.io/acme/)']],
    ['images.allowedRegistries: a prefix of the reference as written', { images: { allowedRegistries: ['docker.io/'] } }, one({ image: 'docker.io/library/nginx:1.27' }), {}, []],
    ['images.allowedRegistries: no host matches no entry', { images: { allowedRegistries: ['docker.io/'] } }, one({ image: 'nginx:1.27' }), {},
      ['images.allowedRegistries: workload "web": image "nginx:1.27" is not from an allowed registry (allowed: docker.io/)']],
    ['images.requireDigest', { images: { requireDigest: true } }, one({ image: 'registry.acme.internal/app:1.0' }), {},
      ['images.requireDigest: workload "web": image "registry.acme.internal/app:1.0" is not pinned by digest']],
    ['images.requireDigest: uppercase hex is no digest', { images: { requireDigest: true } }, one({ image: `app@sha256:${'A'.repeat(64)}` }), {},
      [`images.requireDigest: workload "web": image "app@sha256:${'A'.repeat(64)}" is not pinned by digest`]],
    ['images.requireDigest: tag and digest', { images: { requireDigest: true } }, one({ image: `app:1.0${DIGEST}` }), {}, []],
    ['replicas.max', { maxReplicas: 5 }, one({ replicas: 6 }), {}, ['replicas.max: workload "web": replicas 6 exceeds the maximum 5']],
    ['replicas.max at the bound', { maxReplicas: 5 }, one({ replicas: 5 }), {}, []],
    ['replicas.max: absent replicas count as 1', { maxReplicas: 0 }, one({ kind: 'DaemonSet' }), {},
      ['replicas.max: workload "web": replicas 1 exceeds the maximum 0']],
    ['transports.allowed', { allowedTransports: ['http'] }, one({ transport: 'stdio' }), {},
      ['transports.allowed: workload "web": transport stdio is not allowed (allowed: http)']],
    ['transports.allowed: [] forbids MCP workloads', { allowedTransports: [] }, one({ transport: 'http' }), {},
      ['transports.allowed: workload "web": transport http is not allowed (allowed: none)']],
    ['transports.allowed: not an MCP workload', { allowedTransports: [] }, one({}), {}, []],
    ['capabilities.forbidden', { security: { forbiddenCapabilities: ['SETUID', 'CHOWN'] } }, one({ security: { addCapabilities: ['CHOWN', 'NET_BIND_SERVICE', 'SETUID'] } }), {},
      ['capabilities.forbidden: workload "web": capability CHOWN is forbidden', 'capabilities.forbidden: workload "web": capability SETUID is forbidden']],
    ['capabilities.allowed', { security: { allowedCapabilities: ['NET_BIND_SERVICE'] } }, one({ security: { addCapabilities: ['NET_BIND_SERVICE', 'KILL'] } }), {},
      ['capabilities.allowed: workload "web": capability KILL is not allowed (allowed: NET_BIND_SERVICE)']],
    ['capabilities.allowed, empty list', { security: { allowedCapabilities: [] } }, one({ security: { addCapabilities: ['KILL'] } }), {},
      ['capabilities.allowed: workload "web": capability KILL is not allowed (allowed: none)']],
    ['security.runAsUser outside the ranges', { security: { allowedUserRanges: [{ min: 70, max: 70 }, { min: 1000, max: 65535 }] } }, one({ security: { runAsUser: 999 } }), {},
      ['security.runAsUser: workload "web": runAsUser 999 is outside the allowed ranges (70-70, 1000-65535)']],
    ['security.runAsUser inside a range', { security: { allowedUserRanges: [{ min: 70, max: 70 }] } }, one({ security: { runAsUser: 70 } }), {}, []],
    ['security.runAsUser unset, ranges only', { security: { allowedUserRanges: [{ min: 70, max: 70 }] } }, one({}), {}, []],
    ['security.runAsUser required', { security: { requireRunAsUser: true, allowedUserRanges: [{ min: 70, max: 70 }] } }, one({}), {},
      ['security.runAsUser: workload "web": runAsUser must be set']],
    ['security.runAsGroup and fsGroup', { security: { allowedGroupRanges: [{ min: 70, max: 65535 }] } }, one({ security: { runAsGroup: 0, fsGroup: 10 } }), {},
      ['security.runAsGroup: workload "web": runAsGroup 0 is outside the allowed ranges (70-65535)',
        'security.fsGroup: workload "web": fsGroup 10 is outside the allowed ranges (70-65535)']],
    ['security.readOnlyRootFilesystem', { security: { requireReadOnlyRootFilesystem: true } }, one({ security: { readOnlyRootFilesystem: false } }), {},
      ['security.readOnlyRootFilesystem: workload "web": readOnlyRootFilesystem must be true']],
    ['security.readOnlyRootFilesystem set', { security: { requireReadOnlyRootFilesystem: true } }, one({ security: { readOnlyRootFilesystem: true } }), {}, []],
    ['resources.requireRequests and requireLimits', { resources: { requireRequests: ['cpu', 'memory'], requireLimits: ['memory', 'ephemeral-storage'] } },
      one({ resources: { requests: { memory: '64Mi' }, limits: { cpu: '1' } } }), {},
      ['resources.requireRequests: workload "web": missing cpu request',
        'resources.requireLimits: workload "web": missing memory limit',
        'resources.requireLimits: workload "web": missing ephemeral-storage limit']],
    ['resources.maxLimits compares quantities', { resources: { maxLimits: { cpu: '8', memory: '16Gi', 'ephemeral-storage': '1Gi' } } },
      one({ resources: { limits: { cpu: '8001m', memory: '16384Mi', 'ephemeral-storage': '2G' } } }), {},
      ['resources.maxLimits: workload "web": cpu limit 8001m exceeds the maximum 8',
        'resources.maxLimits: workload "web": ephemeral-storage limit 2G exceeds the maximum 1Gi']],
    ['storage.maxClaimSize', { storage: { maxClaimSize: '500Gi' } },
      one({ kind: 'StatefulSet', volumeClaimTemplates: [{ name: 'data', storage: '1Ti' }, { name: 'wal', storage: '500Gi' }] }), {},
      ['storage.maxClaimSize: workload "web": volumeClaimTemplate "data" requests 1Ti, more than the maximum 500Gi']],
    ['storage.allowedStorageClasses', { storage: { allowedStorageClasses: ['fast-ssd', 'standard'] } },
      one({ kind: 'StatefulSet', volumeClaimTemplates: [{ name: 'data', storage: '1Gi' }, { name: 'wal', storage: '1Gi', storageClassName: 'slow' }, { name: 'ok', storage: '1Gi', storageClassName: 'standard' }] }), {},
      ['storage.allowedStorageClasses: workload "web": volumeClaimTemplate "data" uses storage class "(default)" (allowed: fast-ssd, standard)',
        'storage.allowedStorageClasses: workload "web": volumeClaimTemplate "wal" uses storage class "slow" (allowed: fast-ssd, standard)']],
    ['storage.allowedStorageClasses: "" admits the cluster default', { storage: { allowedStorageClasses: ['', 'fast-ssd'] } },
      one({ kind: 'StatefulSet', volumeClaimTemplates: [{ name: 'data', storage: '1Gi' }, { name: 'wal', storage: '1Gi', storageClassName: 'slow' }] }), {},
      ['storage.allowedStorageClasses: workload "web": volumeClaimTemplate "wal" uses storage class "slow" (allowed: (default), fast-ssd)']],
  ])('%s', (_name, spec, rendered, recipeSpec, expected) => {
    expect(messages(spec, rendered, recipeSpec)).toEqual(expected)
  })

  it('tests are checked by the rules that apply to a pod: images, capabilities, security, resources', () => {
    const spec: PolicySpecInput = {
      allowedKinds: ['Deployment'], maxReplicas: 0, allowedTransports: [], storage: { maxClaimSize: '1Mi' },
      images: { requireDigest: true }, security: { forbiddenCapabilities: ['KILL'], requireRunAsUser: true }, resources: { requireLimits: ['memory'] },
    }
    const rendered: RenderedInput = { workloads: [], tests: [test('smoke', { image: 'curlimages/curl:8.8.0', security: { addCapabilities: ['KILL'] } })] }
    const out = evaluate(spec, rendered)
    expect(out.violations).toEqual<PolicyViolation[]>([
      { policy: 'p', mode: 'Enforce', rule: 'images.requireDigest', test: 'smoke', message: 'test "smoke": image "curlimages/curl:8.8.0" is not pinned by digest' },
      { policy: 'p', mode: 'Enforce', rule: 'capabilities.forbidden', test: 'smoke', message: 'test "smoke": capability KILL is forbidden' },
      { policy: 'p', mode: 'Enforce', rule: 'security.runAsUser', test: 'smoke', message: 'test "smoke": runAsUser must be set' },
      { policy: 'p', mode: 'Enforce', rule: 'resources.requireLimits', test: 'smoke', message: 'test "smoke": missing memory limit' },
    ])
  })

  it('a stdio MCP workload is checked like any other included workload', () => {
    const rendered: RenderedInput = { workloads: [workload('github', { transport: 'stdio', replicas: 2, namespace: 'mcp-server', image: 'ghcr.io/github/github-mcp-server:v0.5' })] }
    expect(messages({ allowedTransports: ['http'], maxReplicas: 1, images: { allowedRegistries: ['registry.acme.internal/'] } }, rendered)).toEqual([
      'images.allowedRegistries: workload "github": image "ghcr.io/github/github-mcp-server:v0.5" is not from an allowed registry (allowed: registry.acme.internal/)',
      'replicas.max: workload "github": replicas 2 exceeds the maximum 1',
      'transports.allowed: workload "github": transport stdio is not allowed (allowed: http)',
    ])
  })

  it('a policy with no rules finds nothing', () => {
    expect(evaluate({}, { workloads: [workload('web', { kind: 'DaemonSet', image: 'nginx', security: { addCapabilities: ['KILL'] } })] }, { steps: [{}] }).compliant).toBe(true)
  })
})

describe('evaluation order (spec §10.2)', () => {
  it('recipe-level rules, then workloads in spec order (not render order), then tests, each in the rule order of spec §10.3', () => {
    const spec: PolicySpecInput = { maxWorkloads: 1, allowSteps: false, allowedKinds: ['Deployment'], images: { requireDigest: true }, maxReplicas: 1 }
    // Rendered in topological order (db first); the spec lists web first.
    const rendered: RenderedInput = {
      workloads: [workload('db', { kind: 'StatefulSet', image: 'postgres:16', replicas: 2 }), workload('web', { kind: 'DaemonSet', image: 'nginx' })],
      tests: [test('smoke', { image: 'curl' })],
    }
    const recipe: RecipeInput = { metadata: { name: 'shop', namespace: 'team-a' }, spec: { workloads: [{ name: 'web' }, { name: 'db' }], tests: [{ name: 'smoke' }], steps: [{}] } }
    const out = evaluatePolicies(recipe, rendered, undefined, [policy('p', spec)], {})
    expect(out.violations.map((v) => `${v.rule}: ${v.message}`)).toEqual([
      'workloads.max: recipe has 2 workloads, more than the maximum 1',
      'steps.allowed: recipe has agentic steps, which this policy does not allow',
      'kinds.allowed: workload "web": kind DaemonSet is not allowed (allowed: Deployment)',
      'images.requireDigest: workload "web": image "nginx" is not pinned by digest',
      'kinds.allowed: workload "db": kind StatefulSet is not allowed (allowed: Deployment)',
      'images.requireDigest: workload "db": image "postgres:16" is not pinned by digest',
      'replicas.max: workload "db": replicas 2 exceeds the maximum 1',
      'images.requireDigest: test "smoke": image "curl" is not pinned by digest',
    ])
    expect(out.violations.slice(0, 2).every((v) => v.workload === undefined && v.test === undefined)).toBe(true)
  })

  it('policies in name order, each evaluated independently (no merging: the strictest bound wins)', () => {
    const rendered: RenderedInput = { workloads: [workload('web', { replicas: 8 })] }
    const out = evaluatePolicies(recipeOf(rendered), rendered, undefined, [
      policy('zeta', { maxReplicas: 5 }), policy('alpha', { maxReplicas: 10 }), policy('mid', { maxReplicas: 3, mode: 'Audit' }),
    ], {})
    expect(out.evaluated).toEqual(['alpha', 'mid', 'zeta'])
    expect(out.violations).toEqual<PolicyViolation[]>([
      { policy: 'mid', mode: 'Audit', rule: 'replicas.max', workload: 'web', message: 'workload "web": replicas 8 exceeds the maximum 3' },
      { policy: 'zeta', mode: 'Enforce', rule: 'replicas.max', workload: 'web', message: 'workload "web": replicas 8 exceeds the maximum 5' },
    ])
  })

  const arbitraryPolicy = fc.record({
    name: fc.constantFrom('a', 'b', 'c', 'prod', 'pod-security', 'zz'),
    mode: fc.constantFrom('Enforce', 'Audit', 'Warn', undefined),
    maxReplicas: fc.option(fc.integer({ min: 0, max: 4 }), { nil: undefined }),
    requireDigest: fc.boolean(),
    requireApproval: fc.boolean(),
    timeout: fc.integer({ min: 0, max: 3 }),
    forbidden: fc.subarray(['KILL', 'CHOWN', 'SETUID']),
  }).map(({ name, mode, maxReplicas, requireDigest, requireApproval, timeout, forbidden }): PolicyInput => policy(name, {
    ...(mode ? { mode: mode as PolicySpecInput['mode'] } : {}),
    ...(maxReplicas === undefined ? {} : { maxReplicas }),
    images: { requireDigest }, requireApproval, approvalTimeoutSeconds: timeout * 100,
    security: { forbiddenCapabilities: forbidden },
  }))

  it('property: the outcome is deterministic and independent of the order the policies are given in', () => {
    const rendered: RenderedInput = {
      workloads: [
        workload('web', { replicas: 3, image: 'nginx', security: { addCapabilities: ['KILL', 'NET_BIND_SERVICE'] } }),
        workload('db', { kind: 'StatefulSet', replicas: 1, security: { addCapabilities: ['CHOWN', 'SETUID'] }, namespace: 'strict' }),
      ],
      tests: [test('smoke', { image: 'curl', security: { addCapabilities: ['SETUID'] } })],
    }
    const recipe = recipeOf(rendered, { requireApproval: false })
    const ns: NamespaceLabels = { strict: { 'pod-security.kubernetes.io/enforce': 'restricted' } }
    fc.assert(fc.property(
      // Distinct names: policies are cluster-scoped, so two never share one.
      fc.uniqueArray(arbitraryPolicy, { selector: (p) => p.metadata.name, maxLength: 6 }).chain((ps) => fc.tuple(fc.constant(ps), fc.shuffledSubarray(ps, { minLength: ps.length, maxLength: ps.length }))),
      ([policies, shuffled]) => {
        const a = evaluatePolicies(recipe, rendered, undefined, policies, ns)
        const b = evaluatePolicies(recipe, rendered, undefined, shuffled, ns)
        expect(b).toEqual(a)
        expect(evaluatePolicies(recipe, rendered, undefined, policies, ns)).toEqual(a)
        const names = a.violations.map((v) => v.policy)
        expect(names).toEqual([...names].sort())
      },
    ))
  })
})

describe('combination (spec §10.2) and messages (§10.3)', () => {
  const rendered: RenderedInput = { workloads: [workload('web', { image: 'nginx:1.27', replicas: 4 })] }
  const recipe = recipeOf(rendered)
  const run = (...policies: PolicyInput[]) => evaluatePolicies(recipe, rendered, undefined, policies, {})

  it('no violation: compliant', () => {
    const out = run(policy('p', { maxReplicas: 10 }))
    expect(out).toMatchObject({ compliant: true, rejected: false, reason: 'Compliant', message: '', totalViolations: 0, violations: [] })
  })

  it('an Enforce violation rejects, and the message names only what rejects', () => {
    const out = run(policy('audit', { mode: 'Audit', images: { requireDigest: true } }), policy('prod', { maxReplicas: 2 }))
    expect(out).toMatchObject({ compliant: false, rejected: true, reason: 'PolicyViolation', totalViolations: 2 })
    expect(out.message).toBe('Rejected by policy: prod: replicas.max: workload "web": replicas 4 exceeds the maximum 2')
  })

  it('mode defaults to Enforce', () => {
    expect(run(policy('p', { maxReplicas: 2 })).violations[0]?.mode).toBe('Enforce')
  })

  it('only Audit findings: the lifecycle continues with AuditViolation', () => {
    const out = run(policy('audit', { mode: 'Audit', images: { requireDigest: true } }))
    expect(out).toMatchObject({ compliant: false, rejected: false, reason: 'AuditViolation', warnings: [] })
    expect(out.message).toBe('Policy findings: audit: images.requireDigest: workload "web": image "nginx:1.27" is not pinned by digest')
  })

  it('a Warn finding gives WarnViolation and is listed for the PolicyWarning Event', () => {
    const out = run(policy('audit', { mode: 'Audit', images: { requireDigest: true } }), policy('warn', { mode: 'Warn', maxReplicas: 3 }))
    expect(out).toMatchObject({ compliant: false, rejected: false, reason: 'WarnViolation' })
    expect(out.warnings.map((w) => w.policy)).toEqual(['warn'])
    expect(out.message).toBe('Policy findings: audit: images.requireDigest: workload "web": image "nginx:1.27" is not pinned by digest; warn: replicas.max: workload "web": replicas 4 exceeds the maximum 3')
  })

  it('at most five entries in the message, then "; and <n> more"', () => {
    const many: RenderedInput = { workloads: ['a', 'b', 'c', 'd', 'e', 'f', 'g'].map((n) => workload(n, { image: 'nginx' })) }
    const out = evaluatePolicies(recipeOf(many), many, undefined, [policy('p', { images: { requireDigest: true } })], {})
    expect(out.message).toBe('Rejected by policy: '
      + ['a', 'b', 'c', 'd', 'e'].map((n) => `p: images.requireDigest: workload "${n}": image "nginx" is not pinned by digest`).join('; ')
      + '; and 2 more')
    expect(out.totalViolations).toBe(7)
  })

  it('status.policy keeps at most 20 violations and counts them all', () => {
    const many: RenderedInput = { workloads: Array.from({ length: 25 }, (_, i) => workload(`w${i}`, { image: 'nginx' })) }
    const out = evaluatePolicies(recipeOf(many), many, undefined, [policy('p', { images: { requireDigest: true } })], {})
    const status = recipePolicyStatus(out)
    expect(status.violations).toHaveLength(20)
    expect(status.totalViolations).toBe(25)
    expect(status).toMatchObject({ compliant: false, evaluated: ['p'] })
  })
})

describe('approval as data for the lifecycle (spec §7.5)', () => {
  const rendered: RenderedInput = { workloads: [workload('web')] }
  it.each<[string, boolean, PolicyInput[], { required: boolean; requiredBy: string[]; timeoutSeconds?: number }]>([
    ['nothing requires it', false, [policy('p', {})], { required: false, requiredBy: [] }],
    ['the recipe asks', true, [], { required: true, requiredBy: ['recipe'] }],
    ['recipe first, then Enforce policies in name order; the smallest non-zero timeout', true, [
      policy('zeta', { requireApproval: true, approvalTimeoutSeconds: 600 }),
      policy('alpha', { requireApproval: true, approvalTimeoutSeconds: 0 }),
      policy('mid', { requireApproval: true, approvalTimeoutSeconds: 300 }),
    ], { required: true, requiredBy: ['recipe', 'alpha', 'mid', 'zeta'], timeoutSeconds: 300 }],
    ['Audit and Warn policies never require approval', false, [
      policy('audit', { mode: 'Audit', requireApproval: true, approvalTimeoutSeconds: 60 }),
      policy('warn', { mode: 'Warn', requireApproval: true }),
    ], { required: false, requiredBy: [] }],
    ['a timeout of a policy that does not require approval does not count', false, [
      policy('a', { approvalTimeoutSeconds: 60 }), policy('b', { requireApproval: true, approvalTimeoutSeconds: 900 }),
    ], { required: true, requiredBy: ['b'], timeoutSeconds: 900 }],
    ['a non-matching policy does not count', false, [
      policy('elsewhere', { requireApproval: true, namespaceSelector: { matchLabels: { env: 'prod' } } }),
    ], { required: false, requiredBy: [] }],
  ])('%s', (_name, recipeAsks, policies, expected) => {
    const out = evaluatePolicies(recipeOf(rendered, { requireApproval: recipeAsks }), rendered, undefined, policies, {})
    expect(out.approval).toEqual(expected)
  })
})

describe('the policy status (spec §10.5)', () => {
  const v = (policyName: string, rule: string, message: string): PolicyViolation => ({ policy: policyName, mode: 'Enforce', rule, message })

  it('counts this policy\'s violations over the matching recipes, lists the first 20 by namespace and name, and stamps the evaluation time', () => {
    const p = policy('prod', { maxReplicas: 2 })
    const status = policyStatus(p, [
      { namespace: 'team-b', recipe: 'shop', violations: [v('prod', 'replicas.max', 'workload "web": replicas 4 exceeds the maximum 2')] },
      { namespace: 'team-a', recipe: 'zoo', violations: [v('other', 'kinds.allowed', 'x'), v('prod', 'replicas.max', 'workload "a": replicas 3 exceeds the maximum 2')] },
      { namespace: 'team-a', recipe: 'blog', violations: [] },
    ], NOW)
    expect(status).toEqual({
      observedGeneration: 1,
      conditions: [{ type: 'Ready', status: 'True', reason: 'Valid', message: 'The policy is well formed', observedGeneration: 1, lastTransitionTime: NOW }],
      totalViolations: 2,
      violations: [
        { namespace: 'team-a', recipe: 'zoo', rule: 'replicas.max', message: 'workload "a": replicas 3 exceeds the maximum 2' },
        { namespace: 'team-b', recipe: 'shop', rule: 'replicas.max', message: 'workload "web": replicas 4 exceeds the maximum 2' },
      ],
      lastEvaluationTime: NOW,
    })
  })

  it('writes nothing when only the evaluation time would change', () => {
    const p = policy('prod', {})
    const first = policyStatus(p, [], NOW)!
    expect(policyStatus({ ...p, status: first }, [], '2025-06-01T13:00:00Z')).toBeNull()
  })

  it('keeps 20 violations and the full total', () => {
    const evaluations = Array.from({ length: 30 }, (_, i) => ({ namespace: 'ns', recipe: `r${String(i).padStart(2, '0')}`, violations: [v('prod', 'replicas.max', 'm')] }))
    const status = policyStatus(policy('prod', {}), evaluations, NOW)!
    expect(status.totalViolations).toBe(30)
    expect(status.violations).toHaveLength(20)
    expect(status.violations?.[19]?.recipe).toBe('r19')
  })

  it('Ready=False with the problems when the policy is not well formed; lastTransitionTime kept while it stays so', () => {
    const p = policy('prod', { resources: { maxLimits: { memory: 'lots' } }, storage: { maxClaimSize: '1TB' }, security: { allowedCapabilities: ['KILL'], forbiddenCapabilities: ['KILL'] } })
    const status = policyStatus(p, [], NOW)!
    expect(status.conditions).toEqual([{
      type: 'Ready', status: 'False', reason: 'InvalidSpec', observedGeneration: 1, lastTransitionTime: NOW,
      message: 'spec.resources.maxLimits.memory: "lots" is not a Kubernetes quantity; spec.storage.maxClaimSize: "1TB" is not a Kubernetes quantity; spec.security: KILL both allowed and forbidden',
    }])
    const again = policyStatus({ ...p, metadata: { ...p.metadata, generation: 2 }, status }, [], '2025-06-01T13:00:00Z')!
    expect(again.conditions?.[0]).toMatchObject({ status: 'False', lastTransitionTime: NOW, observedGeneration: 2 })
  })
})
