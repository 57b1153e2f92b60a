import { describe, expect, it } from 'vitest'
import { allCrds } from '../../shared/crd/definitions.js'
import { CEL_SKIPPED_MESSAGE, SchemaCompileError, validateAgainstCrd, type CrdLike, type JsonSchemaProps } from '../../shared/crd/validate.js'

const crds = allCrds()
const crdOf = (kind: string) => crds.find((c) => c.spec.names.kind === kind)!

function aWorkflow(spec: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) {
  return {
    apiVersion: 'purko.io/v1alpha1',
    kind: 'Workflow',
    metadata: { name: 'wf', namespace: 'ai-agents' },
    spec: { steps: [{ name: 'plan', agentRef: { name: 'planner' } }], ...spec },
    ...extra,
  }
}

function anAgent(spec: Record<string, unknown> = {}, model: Record<string, unknown> = {}) {
  return {
    apiVersion: 'purko.io/v1alpha1',
    kind: 'Agent',
    metadata: { name: 'a', namespace: 'ai-agents' },
    spec: { type: 'executor', model: { provider: 'anthropic', name: 'claude', ...model }, ...spec },
  }
}

const steps = (...list: Record<string, unknown>[]) => ({ steps: list })

describe('validateAgainstCrd rejects invalid purko.io objects like the API server would', () => {
  it.each<[string, string, unknown, { reason: string; field: string; message: string }]>([
    ['an unknown failureStrategy', 'Workflow', aWorkflow({ failureStrategy: 'sometimes' }),
      { reason: 'FieldValueNotSupported', field: 'spec.failureStrategy', message: 'Unsupported value: "sometimes": supported values: "failFast", "continueOnError", "stop", "rollback"' }],
    ['a step with neither agentRef.name nor type', 'Workflow', aWorkflow(steps({ name: 'plan', type: 'x' }, { name: 'lonely' })),
      { reason: 'FieldValueInvalid', field: 'spec.steps[1]', message: 'Invalid value: "object": step "lonely" must have either agentRef.name or type' }],
    ['a step whose agentRef has an empty name', 'Workflow', aWorkflow(steps({ name: 'plan', agentRef: { name: '' } })),
      { reason: 'FieldValueInvalid', field: 'spec.steps[0]', message: 'Invalid value: "object": step "plan" must have either agentRef.name or type' }],
    ['a step that depends on itself', 'Workflow', aWorkflow(steps({ name: 'plan', type: 'x', dependsOn: ['plan'] })),
      { reason: 'FieldValueInvalid', field: 'spec.steps[0].dependsOn', message: 'Invalid value: "object": WF-003: step "plan" cannot depend on itself' }],
    ['duplicate step names', 'Workflow', aWorkflow(steps({ name: 'plan', type: 'x' }, { name: 'plan', type: 'y' })),
      { reason: 'FieldValueDuplicate', field: 'spec.steps[1]', message: 'Duplicate value: {"name":"plan"}' }],
    ['a negative step timeout', 'Workflow', aWorkflow(steps({ name: 'plan', type: 'x', timeout: { timeoutSeconds: -5 } })),
      { reason: 'FieldValueInvalid', field: 'spec.steps[0].timeout.timeoutSeconds', message: 'Invalid value: "object": step "plan" timeout must be non-negative' }],
    ['a step name that is not a DNS label', 'Workflow', aWorkflow(steps({ name: 'Plan_1', type: 'x' })),
      { reason: 'FieldValueInvalid', field: 'spec.steps[0].name', message: `Invalid value: "Plan_1": spec.steps[0].name in body should match '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'` }],
    ['a step without a name', 'Workflow', aWorkflow(steps({ type: 'x' })),
      { reason: 'FieldValueRequired', field: 'spec.steps[0].name', message: 'Required value' }],
    ['a workflow without steps', 'Workflow', aWorkflow({ steps: [] }),
      { reason: 'FieldValueInvalid', field: 'spec.steps', message: 'Invalid value: 0: spec.steps in body should have at least 1 items' }],
    ['parallelism 0', 'Workflow', aWorkflow({ parallelism: 0 }),
      { reason: 'FieldValueInvalid', field: 'spec.parallelism', message: 'Invalid value: 0: spec.parallelism in body should be greater than or equal to 1' }],
    ['maxTokens of 0', 'Agent', anAgent({}, { maxTokens: 0 }),
      { reason: 'FieldValueInvalid', field: 'spec.model.maxTokens', message: 'Invalid value: "object": spec.model.maxTokens must be between 1 and 2000000, got 0' }],
    ['maxTokens above 2000000', 'Agent', anAgent({}, { maxTokens: 2000001 }),
      { reason: 'FieldValueInvalid', field: 'spec.model.maxTokens', message: 'Invalid value: "object": spec.model.maxTokens must be between 1 and 2000000, got 2000001' }],
    ['temperature above 2', 'Agent', anAgent({}, { temperature: 2.5 }),
      { reason: 'FieldValueInvalid', field: 'spec.model.temperature', message: 'Invalid value: "object": spec.model.temperature must be between 0.0 and 2.0, got 2.500000' }],
    ['an empty model provider', 'Agent', anAgent({}, { provider: '' }),
      { reason: 'FieldValueInvalid', field: 'spec.model.provider', message: 'Invalid value: "object": spec.model.provider must not be empty' }],
    ['a model without a name', 'Agent', { ...anAgent(), spec: { model: { provider: 'anthropic' } } },
      { reason: 'FieldValueRequired', field: 'spec.model.name', message: 'Required value' }],
    ['an unknown agent type', 'Agent', anAgent({ type: 'wizard' }),
      { reason: 'FieldValueNotSupported', field: 'spec.type', message: 'Unsupported value: "wizard": supported values: "planner", "executor", "reviewer", "router", "monitor", "retriever"' }],
    ['a monitor with two replicas', 'Agent', anAgent({ type: 'monitor', replicas: 2 }),
      { reason: 'FieldValueInvalid', field: 'spec.replicas', message: 'Invalid value: "object": AG-005: monitor agents are limited to replicas <= 1' }],
    ['a retriever without memory', 'Agent', anAgent({ type: 'retriever' }),
      { reason: 'FieldValueInvalid', field: 'spec', message: 'Invalid value: "object": AG-010: retriever agents need spec.memory.type (vector/buffer/summary) or spec.memory.behavior (session/persistent)' }],
    ['a retriever whose memory is off', 'Agent', anAgent({ type: 'retriever', memory: { behavior: 'off' } }),
      { reason: 'FieldValueInvalid', field: 'spec', message: 'Invalid value: "object": AG-010: retriever agents need spec.memory.type (vector/buffer/summary) or spec.memory.behavior (session/persistent)' }],
    ['an unknown memory type', 'Agent', anAgent({ memory: { type: 'graph' } }),
      { reason: 'FieldValueInvalid', field: 'spec.memory.type', message: 'Invalid value: "object": spec.memory.type must be buffer, summary, vector, or none (got "graph")' }],
    ['an unknown memory behavior', 'Agent', anAgent({ memory: { behavior: 'bogus' } }),
      { reason: 'FieldValueInvalid', field: 'spec.memory.behavior', message: 'Invalid value: "object": spec.memory.behavior must be off, session, or persistent (got "bogus")' }],
    ['an unknown memory scope', 'Agent', anAgent({ memory: { scope: 'cluster' } }),
      { reason: 'FieldValueInvalid', field: 'spec.memory.scope', message: 'Invalid value: "object": spec.memory.scope must be agent, group, or namespace (got "cluster")' }],
    ['maxContextTokens above 32768', 'Agent', anAgent({ memory: { behavior: 'persistent', maxContextTokens: 40000 } }),
      { reason: 'FieldValueInvalid', field: 'spec.memory.maxContextTokens', message: 'Invalid value: "object": spec.memory.maxContextTokens must be <= 32768 (got 40000)' }],
    ['maxEntries above 10000', 'Agent', anAgent({ memory: { maxEntries: 10001 } }),
      { reason: 'FieldValueInvalid', field: 'spec.memory.maxEntries', message: 'Invalid value: "object": spec.memory.maxEntries must be <= 10000 (got 10001)' }],
    ['duplicate tool names', 'Agent', anAgent({ tools: [{ name: 'gh', type: 'mcp' }, { name: 'gh', type: 'api' }] }),
      { reason: 'FieldValueDuplicate', field: 'spec.tools[1]', message: 'Duplicate value: {"name":"gh"}' }],
    ['an MCPServer port out of range', 'MCPServer', { apiVersion: 'purko.io/v1alpha1', kind: 'MCPServer', metadata: { name: 'm' }, spec: { image: 'i', port: 70000 } },
      { reason: 'FieldValueInvalid', field: 'spec.port', message: 'Invalid value: 70000: spec.port in body should be less than or equal to 65535' }],
    ['an LLMProvider of unknown type', 'LLMProvider', { apiVersion: 'purko.io/v1alpha1', kind: 'LLMProvider', metadata: { name: 'l' }, spec: { type: 'azure', model: 'm' } },
      { reason: 'FieldValueNotSupported', field: 'spec.type', message: 'Unsupported value: "azure": supported values: "vertex-ai", "anthropic", "openai", "ollama", "custom"' }],
    ['a policy success rate above 1', 'AgentAutonomyPolicy',
      { apiVersion: 'purko.io/v1alpha1', kind: 'AgentAutonomyPolicy', metadata: { name: 'p' }, spec: { shuHaRi: { progressionCriteria: { shuToHa: { minimumSuccessRate: 1.5 } } } } },
      { reason: 'FieldValueInvalid', field: 'spec.shuHaRi.progressionCriteria.shuToHa.minimumSuccessRate', message: 'Invalid value: 1.5: spec.shuHaRi.progressionCriteria.shuToHa.minimumSuccessRate in body should be less than or equal to 1' }],
    ['a Workflow status phase outside the enum', 'Workflow', aWorkflow({}, { status: { phase: 'Exploded' } }),
      { reason: 'FieldValueNotSupported', field: 'status.phase', message: 'Unsupported value: "Exploded": supported values: "Pending", "Running", "RollingBack", "Succeeded", "CompletedWithErrors", "Failed", "Cancelled"' }],
  ])('rejects %s', (_, kind, object, cause) => {
    const result = validateAgainstCrd(crdOf(kind), object)
    expect(result.ok).toBe(false)
    if (!result.ok) expect(result.causes).toContainEqual(cause)
  })

  it('reports a cause for every broken step, not only the first', () => {
    const result = validateAgainstCrd(crdOf('Workflow'), aWorkflow(steps({ name: 'a' }, { name: 'b', type: 'x', dependsOn: ['b'] }, { name: 'c' })))
    expect(result.ok ? [] : result.causes.map((c) => c.field)).toEqual(['spec.steps[0]', 'spec.steps[1].dependsOn', 'spec.steps[2]'])
  })

  it('skips CEL rules when a field has the wrong type, as the API server does', () => {
    const result = validateAgainstCrd(crdOf('Workflow'), aWorkflow({ parallelism: 'two', steps: [{ name: 'a' }] }))
    expect(result.ok).toBe(false)
    if (result.ok) return
    expect(result.causes).toContainEqual({ reason: 'FieldValueTypeInvalid', field: 'spec.parallelism', message: 'Invalid value: "string": spec.parallelism in body must be of type integer: "string"' })
    expect(result.causes).toContainEqual({ reason: 'FieldValueInvalid', field: '<nil>', message: `Invalid value: null: ${CEL_SKIPPED_MESSAGE}` })
    expect(result.causes.map((c) => c.message)).not.toContain('Invalid value: "object": step "a" must have either agentRef.name or type')
  })
})

describe('validateAgainstCrd accepts what Kinetic promises beyond purko', () => {
  it.each<[string, unknown]>([
    ['failureStrategy stop', aWorkflow({ failureStrategy: 'stop' })],
    ['failureStrategy rollback', aWorkflow({ failureStrategy: 'rollback' })],
    ['a duration string as workflow timeout', aWorkflow({ timeout: '1h30m' })],
    ['an object as workflow timeout', aWorkflow({ timeout: { timeoutSeconds: 5400 } })],
    ['a webhook secret reference object', aWorkflow({ trigger: { type: 'webhook', webhook: { path: '/hook', secret: { name: 's', key: 'hmac' } } } })],
    ['the RollingBack phase in status', aWorkflow({}, { status: { phase: 'RollingBack', stepStatuses: [{ name: 'plan', phase: 'RolledBack', nextAttemptAt: '2026-01-01T00:00:00Z' }] } })],
    ['a retriever with persistent memory behavior', anAgent({ type: 'retriever', memory: { behavior: 'persistent' } })],
    ['a monitor with one replica', anAgent({ type: 'monitor', replicas: 1 })],
    ['temperature exactly 2', anAgent({}, { temperature: 2 })],
  ])('accepts %s', (_, object) => {
    const result = validateAgainstCrd(crdOf(String((object as { kind: string }).kind)), object)
    expect(result.ok ? [] : result.causes).toEqual([])
  })

  it('accepts a 10,000-step workflow and rejects a 10,001-step one', () => {
    const chain = (n: number) => Array.from({ length: n }, (_, i) => ({
      name: `s${i}`,
      agentRef: { name: 'worker' },
      ...(i > 0 ? { dependsOn: [`s${i - 1}`] } : {}),
    }))
    expect(validateAgainstCrd(crdOf('Workflow'), aWorkflow({ steps: chain(10000) })).ok).toBe(true)
    const tooBig = validateAgainstCrd(crdOf('Workflow'), aWorkflow({ steps: chain(10001) }))
    expect(tooBig.ok ? [] : tooBig.causes).toContainEqual({ reason: 'FieldValueTooMany', field: 'spec.steps', message: 'Too many: 10001: must have at most 10000 items' })
  })
})

describe('validateAgainstCrd defaults and prunes like the API server', () => {
  it('applies the Workflow defaults, and maxRetries only where a retryPolicy exists', () => {
    const result = validateAgainstCrd(crdOf('Workflow'), aWorkflow(steps({ name: 'a', type: 'x', retryPolicy: {} }, { name: 'b', type: 'x' })))
    expect(result.ok).toBe(true)
    if (!result.ok) return
    const spec = result.object.spec as { parallelism: number; failureStrategy: string; steps: Record<string, unknown>[] }
    expect(spec.parallelism).toBe(1)
    expect(spec.failureStrategy).toBe('failFast')
    expect(spec.steps[0]!.retryPolicy).toEqual({ maxRetries: 3 })
    expect(spec.steps[1]!.retryPolicy).toBeUndefined()
  })

  it('applies the Agent and MCPServer defaults', () => {
    const agent = validateAgainstCrd(crdOf('Agent'), anAgent())
    expect(agent.ok && agent.object.spec).toMatchObject({ replicas: 1, maxConcurrency: 10, timeout: '5m' })
    const mcp = validateAgainstCrd(crdOf('MCPServer'), { apiVersion: 'purko.io/v1alpha1', kind: 'MCPServer', metadata: { name: 'm' }, spec: { image: 'i' } })
    expect(mcp.ok && mcp.object.spec).toEqual({ image: 'i', port: 8000, replicas: 1, auth: 'none', hostNetwork: false, managed: true, transport: 'http' })
  })

  it('keeps unknown fields where the schema preserves them and prunes them elsewhere', () => {
    const agent = validateAgainstCrd(crdOf('Agent'), anAgent({ futureField: { x: 1 }, shuHaRi: { level: 'ha', bogus: true } }))
    expect(agent.ok && agent.object.spec).toMatchObject({ futureField: { x: 1 }, shuHaRi: { level: 'ha' } })
    expect(agent.ok && (agent.object.spec as { shuHaRi: object }).shuHaRi).toEqual({ level: 'ha' })
    const mcp = validateAgainstCrd(crdOf('MCPServer'), { apiVersion: 'purko.io/v1alpha1', kind: 'MCPServer', metadata: { name: 'm', labels: { a: 'b' } }, spec: { image: 'i', bogus: 1 }, extra: 2 })
    expect(mcp.ok && mcp.object).toEqual({
      apiVersion: 'purko.io/v1alpha1', kind: 'MCPServer', metadata: { name: 'm', labels: { a: 'b' } },
      spec: { image: 'i', port: 8000, replicas: 1, auth: 'none', hostNetwork: false, managed: true, transport: 'http' },
    })
  })

  it('leaves the object it was given untouched', () => {
    const input = aWorkflow()
    const before = JSON.stringify(input)
    validateAgainstCrd(crdOf('Workflow'), input)
    expect(JSON.stringify(input)).toBe(before)
  })
})

describe('validateAgainstCrd works on any CRD', () => {
  const widgets: CrdLike = {
    spec: {
      versions: [{
        name: 'v1',
        storage: true,
        schema: {
          openAPIV3Schema: {
            type: 'object',
            properties: {
              apiVersion: { type: 'string' },
              kind: { type: 'string' },
              metadata: { type: 'object' },
              spec: {
                type: 'object',
                properties: {
                  size: { 'x-kubernetes-int-or-string': true },
                  owner: { type: 'string', 'x-kubernetes-validations': [{ rule: 'self == oldSelf', message: 'owner is immutable' }] },
                  tags: { type: 'array', 'x-kubernetes-list-type': 'set', items: { type: 'string' } },
                },
              },
            },
          },
        },
      }],
    },
  }
  const widget = (spec: Record<string, unknown>) => ({ apiVersion: 'example.dev/v1', kind: 'Widget', metadata: { name: 'w' }, spec })

  it('checks transition rules only when an old object is given', () => {
    expect(validateAgainstCrd(widgets, widget({ owner: 'b' })).ok).toBe(true)
    expect(validateAgainstCrd(widgets, widget({ owner: 'b' }), { oldObject: widget({ owner: 'b' }) }).ok).toBe(true)
    expect(validateAgainstCrd(widgets, widget({ owner: 'b' }), { oldObject: widget({ owner: 'a' }) }))
      .toEqual({ ok: false, causes: [{ reason: 'FieldValueInvalid', field: 'spec.owner', message: 'Invalid value: "string": owner is immutable' }], unknownFields: [] })
  })

  it('enforces int-or-string and set semantics', () => {
    expect(validateAgainstCrd(widgets, widget({ size: '10%', tags: ['a', 'b'] })).ok).toBe(true)
    expect(validateAgainstCrd(widgets, widget({ size: 3 })).ok).toBe(true)
    expect(validateAgainstCrd(widgets, widget({ size: true, tags: ['a', 'a'] }))).toEqual({
      ok: false,
      causes: [
        { reason: 'FieldValueTypeInvalid', field: 'spec.size', message: 'Invalid value: "boolean": spec.size in body must be of type integer,string: "boolean"' },
        { reason: 'FieldValueDuplicate', field: 'spec.tags[1]', message: 'Duplicate value: "a"' },
        { reason: 'FieldValueInvalid', field: '<nil>', message: `Invalid value: null: ${CEL_SKIPPED_MESSAGE}` },
      ],
      unknownFields: [],
    })
  })

  const crdWith = (spec: JsonSchemaProps): CrdLike => ({
    spec: { versions: [{ name: 'v1', storage: true, schema: { openAPIV3Schema: { type: 'object', properties: { spec } } } }] },
  })

  it('skips CEL rules after a missing required field instead of failing them on the absent key', () => {
    const crd = crdWith({
      type: 'object',
      required: ['size'],
      properties: { size: { type: 'integer' } },
      'x-kubernetes-validations': [{ rule: 'self.size < 10', message: 'too big' }],
    })
    const result = validateAgainstCrd(crd, widget({}))
    expect(result).toEqual({
      ok: false,
      causes: [
        { reason: 'FieldValueRequired', field: 'spec.size', message: 'Required value' },
        { reason: 'FieldValueInvalid', field: '<nil>', message: `Invalid value: null: ${CEL_SKIPPED_MESSAGE}` },
      ],
      unknownFields: [],
    })
  })

  it('refuses a CRD whose rule does not compile, naming the rule by its schema path', () => {
    const crd = crdWith({ type: 'object', 'x-kubernetes-validations': [{ rule: 'self.size <', message: 'x' }] })
    let thrown: unknown
    try {
      validateAgainstCrd(crd, widget({}))
    } catch (err) {
      thrown = err
    }
    expect(thrown).toBeInstanceOf(SchemaCompileError)
    expect((thrown as SchemaCompileError).causes).toEqual([
      expect.objectContaining({ reason: 'FieldValueInvalid', field: 'openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule' }),
    ])
  })

  it('uses messageExpression for the message and the rule\'s reason for the cause', () => {
    const crd = crdWith({
      type: 'object',
      properties: { name: { type: 'string' }, size: { type: 'integer' } },
      'x-kubernetes-validations': [{ rule: 'has(self.size)', messageExpression: '"size is needed on " + string(self.name)', reason: 'FieldValueRequired', fieldPath: '.size' }],
    })
    const result = validateAgainstCrd(crd, { ...widget({}), spec: { name: 'w1' } })
    expect(result.ok ? [] : result.causes).toEqual([{ reason: 'FieldValueRequired', field: 'spec.size', message: 'Required value: size is needed on w1' }])
  })

  it('lists the unknown fields it pruned, as the server needs them for fieldValidation=Strict', () => {
    const result = validateAgainstCrd(widgets, widget({ owner: 'a', colour: 'red', tags: [] }))
    expect(result).toMatchObject({ ok: true, unknownFields: ['spec.colour'] })
    expect(result.ok && result.object.spec).toEqual({ owner: 'a', tags: [] })
  })
})
