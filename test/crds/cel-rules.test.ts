import { describe, expect, it } from 'vitest'
import { CRD_CEL } from '../../shared/crd/cel-rules.js'
import { allCrds } from '../../shared/crd/definitions.js'
import type { JsonSchemaProps, ValidationRule } from '../../shared/crd/structural.js'
import { toCel } from '../../shared/crd/validate.js'
import { MAX_STEP_DEPENDENCIES, MAX_STEPS } from '../../shared/schemas/workflow.js'

interface FoundRule { crd: string; path: string; schema: JsonSchemaProps; arrayAncestors: JsonSchemaProps[]; rule: ValidationRule }

function collect(schema: JsonSchemaProps, crd: string, path: string, arrays: JsonSchemaProps[], out: FoundRule[]): FoundRule[] {
  for (const rule of schema['x-kubernetes-validations'] ?? []) out.push({ crd, path, schema, arrayAncestors: arrays, rule })
  for (const [k, child] of Object.entries(schema.properties ?? {})) collect(child, crd, `${path}.${k}`, arrays, out)
  if (schema.items) collect(schema.items, crd, `${path}[]`, [...arrays, schema], out)
  if (typeof schema.additionalProperties === 'object') collect(schema.additionalProperties, crd, `${path}[*]`, arrays, out)
  return out
}

const parse = (expression: string) => CRD_CEL.parse(expression)
const rules = allCrds().flatMap((c) => collect(c.spec.versions[0]!.schema.openAPIV3Schema, c.metadata.name, '', [], []))

/** For every rule (by its static message): values of `self` that must pass, and values that must fail. */
const samples: Record<string, { pass: unknown[]; fail: unknown[] }> = {
  'step must have either agentRef.name or type': {
    pass: [{ name: 'a', agentRef: { name: 'x' } }, { name: 'a', type: 'approval' }, { name: 'a', agentRef: { name: '' }, type: 'x' }],
    fail: [{ name: 'a' }, { name: 'a', agentRef: { name: '' } }, { name: 'a', type: '' }],
  },
  'WF-003: step cannot depend on itself': {
    pass: [{ name: 'a' }, { name: 'a', dependsOn: ['b', 'c'] }, { name: 'a', dependsOn: [] }],
    fail: [{ name: 'a', dependsOn: ['a'] }, { name: 'a', dependsOn: ['b', 'a'] }],
  },
  'step timeout must be non-negative': {
    pass: [{ name: 'a' }, { name: 'a', timeout: {} }, { name: 'a', timeout: { timeoutSeconds: 0 } }, { name: 'a', timeout: { timeoutSeconds: 60 } }],
    fail: [{ name: 'a', timeout: { timeoutSeconds: -1 } }],
  },
  'spec.model.provider must not be empty': {
    pass: [{ provider: 'anthropic', name: 'm' }],
    fail: [{ provider: '', name: 'm' }],
  },
  'spec.model.name must not be empty': {
    pass: [{ provider: 'p', name: 'claude' }],
    fail: [{ provider: 'p', name: '' }],
  },
  'spec.model.maxTokens must be between 1 and 2000000': {
    pass: [{ provider: 'p', name: 'm' }, { provider: 'p', name: 'm', maxTokens: 1 }, { provider: 'p', name: 'm', maxTokens: 2000000 }],
    fail: [{ provider: 'p', name: 'm', maxTokens: 0 }, { provider: 'p', name: 'm', maxTokens: -3 }, { provider: 'p', name: 'm', maxTokens: 2000001 }],
  },
  'spec.model.temperature must be between 0.0 and 2.0': {
    pass: [{ provider: 'p', name: 'm' }, { provider: 'p', name: 'm', temperature: 0 }, { provider: 'p', name: 'm', temperature: 0.7 }, { provider: 'p', name: 'm', temperature: 2 }],
    fail: [{ provider: 'p', name: 'm', temperature: -0.1 }, { provider: 'p', name: 'm', temperature: 2.01 }],
  },
  'spec.memory.type must be buffer, summary, vector, or none': {
    pass: [{}, { type: 'buffer' }, { type: 'none' }],
    fail: [{ type: 'graph' }, { type: '' }],
  },
  'spec.memory.behavior must be off, session, or persistent': {
    pass: [{}, { behavior: 'off' }, { behavior: 'persistent' }],
    fail: [{ behavior: 'bogus' }],
  },
  'spec.memory.scope must be agent, group, or namespace': {
    pass: [{}, { scope: 'agent' }, { scope: 'namespace' }],
    fail: [{ scope: 'cluster' }],
  },
  'spec.memory.maxContextTokens must be <= 32768': {
    pass: [{}, { maxContextTokens: 32768 }],
    fail: [{ maxContextTokens: 32769 }],
  },
  'spec.memory.maxEntries must be <= 10000': {
    pass: [{}, { maxEntries: 0 }, { maxEntries: 10000 }],
    fail: [{ maxEntries: 10001 }],
  },
  'AG-005: monitor agents are limited to replicas <= 1': {
    pass: [{ model: {} }, { type: 'monitor', replicas: 1 }, { type: 'monitor', replicas: 0 }, { type: 'executor', replicas: 5 }],
    fail: [{ type: 'monitor', replicas: 2 }],
  },
  'AG-010: retriever agents need spec.memory.type (vector/buffer/summary) or spec.memory.behavior (session/persistent)': {
    pass: [{ type: 'executor' }, { type: 'retriever', memory: { type: 'vector' } }, { type: 'retriever', memory: { behavior: 'session' } }],
    fail: [{ type: 'retriever' }, { type: 'retriever', memory: {} }, { type: 'retriever', memory: { type: 'none' } }, { type: 'retriever', memory: { behavior: 'off' } }],
  },
  'an unmanaged MCPServer needs spec.url': {
    pass: [{ image: 'i', managed: true }, { image: 'i', managed: false, url: 'http://x' }],
    fail: [{ image: 'i', managed: false }],
  },
  'spec.url is only for unmanaged MCPServers': {
    pass: [{ image: 'i', managed: true }, { image: 'i', managed: false, url: 'http://x' }],
    fail: [{ image: 'i', managed: true, url: 'http://x' }],
  },
  'stdio transport requires managed: true': {
    pass: [{ image: 'i', managed: true, transport: 'stdio' }, { image: 'i', managed: false, transport: 'http', url: 'http://x' }],
    fail: [{ image: 'i', managed: false, transport: 'stdio', url: 'http://x' }],
  },
  'spec.env[].value and spec.env[].valueFrom are mutually exclusive': {
    pass: [{ name: 'A' }, { name: 'A', value: 'v' }, { name: 'A', valueFrom: { secretKeyRef: { name: 's', key: 'k' } } }],
    fail: [{ name: 'A', value: 'v', valueFrom: { secretKeyRef: { name: 's', key: 'k' } } }],
  },
  // WorkflowRecipe and WorkflowRecipePolicy (spec §8.1, §10.1).
  ...recipeSamples(),
}

function recipeSamples(): Record<string, { pass: unknown[]; fail: unknown[] }> {
  const w = (x: Record<string, unknown> = {}) => ({ name: 'web', kind: 'Deployment', image: 'i', ...x })
  const quantity = { pass: ['100m', '1Gi', '0.5', '1e3', '{{inputs.size}}', '{{ computed.mem }}'], fail: ['lots', '1 Gi', '{{a}}{{b}}', '{{inputs.a ?? "1"}}', ''] }
  const out: Record<string, { pass: unknown[]; fail: unknown[] }> = {
    "WorkflowRecipe names are 1-40 characters: lowercase letters, digits and '-', starting with a letter": {
      pass: [{ metadata: { name: 'a' } }, { metadata: { name: 'shop-2' } }, { metadata: { name: 'a'.repeat(40) } }],
      fail: [{ metadata: { name: 'a'.repeat(41) } }, { metadata: { name: '9lives' } }, { metadata: { name: 'a-' } }, { metadata: { name: 'a.b' } }],
    },
    'a recipe needs at least one workload or one step': {
      pass: [{ workloads: [w()] }, { steps: [{ name: 's', agent: 'a' }] }, { workloads: [], steps: [{ name: 's', agent: 'a' }] }],
      fail: [{}, { workloads: [] }, { workloads: [], steps: [] }],
    },
    'profile is not declared in spec.profiles': {
      pass: [{}, { profile: 'dev', profiles: [{ name: 'prod' }, { name: 'dev' }] }],
      fail: [{ profile: 'dev' }, { profile: 'dev', profiles: [{ name: 'prod' }] }],
    },
    'spec.workflow requires spec.steps': {
      pass: [{}, { workflow: {}, steps: [{ name: 's', agent: 'a' }] }],
      fail: [{ workflow: {} }, { workflow: {}, steps: [] }],
    },
    'enum and pattern are only allowed for type string': {
      pass: [{ name: 'a' }, { name: 'a', enum: ['x'] }, { name: 'a', type: 'string', pattern: '^x$' }, { name: 'n', type: 'integer' }],
      fail: [{ name: 'n', type: 'integer', enum: ['1'] }, { name: 'b', type: 'boolean', pattern: 't' }],
    },
    'minimum and maximum are only allowed for type integer and number': {
      pass: [{ name: 'a' }, { name: 'n', type: 'integer', minimum: 1 }, { name: 'n', type: 'number', maximum: 2 }],
      fail: [{ name: 's', minimum: 1 }, { name: 's', type: 'string', maximum: 1 }, { name: 'b', type: 'boolean', minimum: 0 }],
    },
    'replicas is only allowed for kind Deployment and StatefulSet': {
      pass: [w(), w({ replicas: 2 }), w({ kind: 'StatefulSet', replicas: '{{inputs.n}}' }), w({ kind: 'Job' })],
      fail: [w({ kind: 'Job', replicas: 1 }), w({ kind: 'DaemonSet', replicas: 1 }), w({ kind: 'CronJob', replicas: 1 })],
    },
    'schedule is required for kind CronJob and not allowed for other kinds': {
      pass: [w(), w({ kind: 'CronJob', schedule: '* * * * *' })],
      fail: [w({ kind: 'CronJob' }), w({ schedule: '* * * * *' })],
    },
    'volumeClaimTemplates is only allowed for kind StatefulSet': {
      pass: [w(), w({ volumeClaimTemplates: [] }), w({ kind: 'StatefulSet', volumeClaimTemplates: [{ name: 'd', storage: '1Gi', mountPath: '/d' }] })],
      fail: [w({ volumeClaimTemplates: [{ name: 'd', storage: '1Gi', mountPath: '/d' }] })],
    },
    'a volumeClaimTemplate needs a mountPath or a volume of the same name': {
      pass: [w(), w({ volumeClaimTemplates: [{ name: 'd', storage: '1Gi', mountPath: '/d' }] }), w({ volumes: [{ name: 'd', mountPath: '/d' }], volumeClaimTemplates: [{ name: 'd', storage: '1Gi' }] })],
      fail: [w({ volumeClaimTemplates: [{ name: 'd', storage: '1Gi' }] }), w({ volumes: [{ name: 'e', mountPath: '/e' }], volumeClaimTemplates: [{ name: 'd', storage: '1Gi' }] })],
    },
    'ports are not allowed for kind Job and CronJob': {
      pass: [w(), w({ ports: [{ name: 'p', port: 1 }] }), w({ kind: 'Job', ports: [] })],
      fail: [w({ kind: 'Job', ports: [{ name: 'p', port: 1 }] }), w({ kind: 'CronJob', ports: [{ name: 'p', port: 1 }] })],
    },
    'strategy is only allowed for kind Deployment': { pass: [w(), w({ strategy: 'Recreate' })], fail: [w({ kind: 'StatefulSet', strategy: 'Recreate' })] },
    'podManagementPolicy is only allowed for kind StatefulSet': { pass: [w(), w({ kind: 'StatefulSet', podManagementPolicy: 'Parallel' })], fail: [w({ podManagementPolicy: 'Parallel' })] },
    'persistentVolumeClaimRetention is only allowed for kind StatefulSet': { pass: [w({ kind: 'StatefulSet', persistentVolumeClaimRetention: 'Delete' })], fail: [w({ persistentVolumeClaimRetention: 'Delete' })] },
    'cronJob is only allowed for kind CronJob': { pass: [w(), w({ kind: 'CronJob', cronJob: {} })], fail: [w({ kind: 'Job', cronJob: {} })] },
    'job is only allowed for kind Job and CronJob': { pass: [w({ kind: 'Job', job: {} }), w({ kind: 'CronJob', job: {} })], fail: [w({ job: {} }), w({ kind: 'DaemonSet', job: {} })] },
    'transport is only allowed for kind Deployment (http or stdio) and StatefulSet (http)': {
      pass: [w(), w({ transport: 'stdio' }), w({ transport: 'http' }), w({ kind: 'StatefulSet', transport: 'http' })],
      fail: [w({ kind: 'StatefulSet', transport: 'stdio' }), w({ kind: 'DaemonSet', transport: 'http' }), w({ kind: 'Job', transport: 'http' })],
    },
    'transport http requires at least one port': {
      pass: [w(), w({ transport: 'stdio' }), w({ transport: 'http', ports: [{ name: 'p', port: 1 }] })],
      fail: [w({ transport: 'http' }), w({ transport: 'http', ports: [] })],
    },
    'transport stdio workloads cannot declare ports, volumes, volumeClaimTemplates or probes, and run at most 10 replicas': {
      pass: [w({ transport: 'stdio' }), w({ transport: 'stdio', replicas: 10, ports: [] }), w({ ports: [{ name: 'p', port: 1 }] })],
      fail: [w({ transport: 'stdio', replicas: 11 }), w({ transport: 'stdio', replicas: '{{inputs.n}}' }), w({ transport: 'stdio', ports: [{ name: 'p', port: 1 }] }),
        w({ transport: 'stdio', volumes: [{ name: 'v', mountPath: '/v' }] }), w({ transport: 'stdio', readinessProbe: { exec: { command: ['x'] } } })],
    },
    'mcp settings require transport': { pass: [w(), w({ transport: 'stdio', mcp: {} })], fail: [w({ mcp: {} })] },
    "mcp.port must be one of the workload's ports": {
      pass: [w({ transport: 'http', ports: [{ name: 'p', port: 3001 }], mcp: { port: 3001 } }), w({ transport: 'stdio', mcp: { port: 8000 } }), w({ transport: 'http', ports: [{ name: 'p', port: 1 }], mcp: {} })],
      fail: [w({ transport: 'http', ports: [{ name: 'p', port: 3001 }], mcp: { port: 3002 } })],
    },
    'service settings require ports': { pass: [w(), w({ ports: [{ name: 'p', port: 1 }], service: {} })], fail: [w({ service: {} }), w({ ports: [], service: {} })] },
    'a workload cannot depend on itself': { pass: [w(), w({ dependsOn: ['db'] })], fail: [w({ dependsOn: ['web'] }), w({ dependsOn: ['db', 'web'] })] },
    'a step cannot depend on itself': { pass: [{ name: 's', agent: 'a' }, { name: 's', agent: 'a', dependsOn: ['t'] }], fail: [{ name: 's', agent: 'a', dependsOn: ['s'] }] },
    'a probe needs exactly one of httpGet, tcpSocket, exec': {
      pass: [{ httpGet: { path: '/', port: 80 } }, { tcpSocket: { port: 'http' } }, { exec: { command: ['true'] } }],
      fail: [{}, { periodSeconds: 5 }, { tcpSocket: { port: 1 }, exec: { command: ['true'] } }],
    },
    'mcp.path must start with / and contain no ?, # or spaces': { pass: [{}, { path: '/mcp' }, { path: '/' }], fail: [{ path: 'mcp' }, { path: '/a?b' }, { path: '/a#b' }, { path: '/a b' }] },
    'mcp.auth bearer requires mcp.tokenSecret': { pass: [{}, { auth: 'none' }, { auth: 'bearer', tokenSecret: { secretName: 's', key: 'k' } }], fail: [{ auth: 'bearer' }] },
    'volumeClaimTemplates[].storage must be a Kubernetes quantity or a single {{...}} placeholder': {
      pass: quantity.pass.map((storage) => ({ name: 'd', storage })), fail: quantity.fail.map((storage) => ({ name: 'd', storage })),
    },
    'security.allowedCapabilities and security.forbiddenCapabilities must not share a capability': {
      pass: [{}, { allowedCapabilities: ['CHOWN'] }, { allowedCapabilities: ['CHOWN'], forbiddenCapabilities: ['KILL'] }],
      fail: [{ allowedCapabilities: ['CHOWN', 'KILL'], forbiddenCapabilities: ['KILL'] }],
    },
    'min must not be greater than max': { pass: [{ min: 1, max: 1 }, { min: 0, max: 65535 }], fail: [{ min: 2, max: 1 }] },
  }
  for (const side of ['requests', 'limits']) {
    for (const r of ['cpu', 'memory', 'ephemeral-storage']) out[`resources.${side}.${r} must be a Kubernetes quantity or a single {{...}} placeholder`] = quantity
  }
  return out
}

describe('CEL rules in the generated CRDs', () => {
  it('exist, and every one has positive and negative samples in this table', () => {
    expect(rules.length).toBeGreaterThan(0)
    expect([...new Set(rules.map((r) => r.rule.message))].sort()).toEqual(Object.keys(samples).sort())
  })

  it.each(rules.map((r) => [`${r.crd} ${r.path}: ${r.rule.message}`, r] as const))('%s compiles, including its messageExpression', (_, r) => {
    expect(() => parse(r.rule.rule)).not.toThrow()
    if (r.rule.messageExpression) expect(() => parse(r.rule.messageExpression!)).not.toThrow()
  })

  it.each(rules.map((r) => [`${r.crd} ${r.path}: ${r.rule.message}`, r] as const))('%s holds on good samples and fails on bad ones', (_, r) => {
    const { pass, fail } = samples[r.rule.message!]!
    const run = parse(r.rule.rule)
    for (const self of pass) expect(run({ self: toCel(r.schema, self) }), JSON.stringify(self)).toBe(true)
    for (const self of fail) expect(run({ self: toCel(r.schema, self) }), JSON.stringify(self)).toBe(false)
    if (r.rule.messageExpression) {
      const message = parse(r.rule.messageExpression)({ self: toCel(r.schema, fail[0]) })
      expect(typeof message === 'string' && message.length > 0).toBe(true)
    }
  })

  it.each(rules.map((r) => [`${r.crd} ${r.path}: ${r.rule.message}`, r] as const))(
    '%s runs under bounded lists only, so the CEL cost estimate stays finite',
    (_, r) => {
      for (const list of r.arrayAncestors) expect(list.maxItems).toBeGreaterThan(0)
    },
  )

  it('bounds what the per-step rules read: names, dependencies and agent references', () => {
    const wf = allCrds().find((c) => c.spec.names.kind === 'Workflow')!
    const steps = wf.spec.versions[0]!.schema.openAPIV3Schema.properties!.spec!.properties!.steps!
    expect(steps.maxItems).toBe(10000)
    expect(steps['x-kubernetes-list-type']).toBe('map')
    expect(steps['x-kubernetes-list-map-keys']).toEqual(['name'])
    const step = steps.items!.properties!
    expect(step.name!.maxLength).toBe(63)
    expect(step.dependsOn!.maxItems).toBe(64)
    expect(step.dependsOn!.items!.maxLength).toBe(63)
    expect(step.agentRef!.properties!.name!.maxLength).toBeGreaterThan(0)
    expect(step.type!.maxLength).toBeGreaterThan(0)
  })

  it('keeps the self-dependency rule under the API server per-rule estimated cost limit of 10,000,000', () => {
    // The estimator charges `x in list` as list size times one string comparison (ceil(maxLength / 10)),
    // and multiplies a per-item rule by the largest number of items it can run on.
    const perStep = MAX_STEP_DEPENDENCIES * Math.ceil(63 / 10) + 10
    expect(perStep * MAX_STEPS).toBeLessThan(10_000_000)
  })

  it.each(rules.filter((r) => r.rule.messageExpression).map((r) => [`${r.crd} ${r.path}: ${r.rule.message}`, r] as const))(
    '%s quotes numbers with format(), never by concatenating string()',
    (_, r) => {
      // kube-apiserver estimates the result of string(<int or double>) as a string of unbounded
      // size, so `'...' + string(self.n)` makes the whole CRD unaffordable; format() is costed
      // by its template instead.
      expect(r.rule.messageExpression).not.toMatch(/\bstring\(/)
    },
  )

  it.each(rules.map((r) => [`${r.crd} ${r.path}: ${r.rule.message}`, r] as const))(
    '%s reads only bounded strings and lists',
    (_, r) => {
      const unbounded: string[] = []
      for (const source of [r.rule.rule, r.rule.messageExpression ?? '']) {
        for (const [ref] of source.matchAll(/self(\.[A-Za-z_][A-Za-z0-9_]*)+/g)) {
          let node: JsonSchemaProps | undefined = r.schema
          for (const part of ref.split('.').slice(1)) node = node?.properties?.[part]
          if (!node) continue
          const bounded = (n: JsonSchemaProps | undefined): boolean =>
            !n || (n.type === 'string' ? n.maxLength !== undefined || n.enum !== undefined
              : n.type === 'array' ? n.maxItems !== undefined && bounded(n.items) : true)
          if (!bounded(node)) unbounded.push(ref)
        }
      }
      expect(unbounded).toEqual([])
    },
  )
})
