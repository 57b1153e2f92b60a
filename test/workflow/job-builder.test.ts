import type { V1EnvVar, V1Job } from '@kubernetes/client-node'
import { describe, expect, it } from 'vitest'
import type { Agent } from '../../shared/schemas/agent.js'
import type { LLMProvider } from '../../shared/schemas/llmprovider.js'
import type { RegistryEntry } from '../../shared/mcp/plan/registry.js'
import type { Workflow, WorkflowStep } from '../../shared/schemas/workflow.js'
import {
  labelValue, stepJobManifest, stepJobName, stepTimeoutSeconds, type StepJobInput,
} from '../../shared/workflow/plan/job-builder.js'
import { resolveProvider } from '../../shared/agent/plan/provider-resolution.js'
import { sha256Hex } from '../../shared/core/sha256.js'

type AgentSpec = Agent['spec']
type ProviderSpec = LLMProvider['spec']

function aWorkflow(name = 'wf'): Workflow {
  return {
    apiVersion: 'purko.io/v1alpha1',
    kind: 'Workflow',
    metadata: { name, namespace: 'ai-agents', uid: 'wf-uid-1' },
    spec: { steps: [{ name: 's1', agentRef: { name: 'a1' } }], parallelism: 1, failureStrategy: 'failFast' },
  }
}

function anAgent(spec: Partial<AgentSpec> = {}, name = 'a1'): Agent {
  return {
    apiVersion: 'purko.io/v1alpha1',
    kind: 'Agent',
    metadata: { name, namespace: 'ai-agents' },
    spec: {
      model: { provider: 'local-ollama', name: 'smollm2:135m' },
      replicas: 1, maxConcurrency: 10, timeout: '5m',
      ...spec,
    },
  }
}

function aProvider(name: string, spec: Partial<ProviderSpec> = {}, namespace = 'purko-system'): LLMProvider {
  return {
    apiVersion: 'purko.io/v1alpha1',
    kind: 'LLMProvider',
    metadata: { name, namespace },
    spec: { type: 'ollama', model: '', ...spec },
  }
}


const step: WorkflowStep = { name: 's1', agentRef: { name: 'a1' } }

function anInput(overrides: Partial<StepJobInput> = {}): StepJobInput {
  return {
    workflow: aWorkflow(),
    runId: 'run1',
    step,
    attempt: 0,
    agent: anAgent(),
    provider: undefined,
    mcpServers: [],
    mcpVisibility: { agentNamespace: 'ai-agents', shared: [] },
    stepInput: '{"task":"x"}',
    inputFromEnv: [],
    executorImage: 'localhost/purko-executor:latest',
    hostNetwork: false,
    activeDeadlineSeconds: 1800,
    ...overrides,
  }
}

function podSpec(job: V1Job) {
  return job.spec!.template.spec!
}

function container(job: V1Job) {
  return podSpec(job).containers[0]!
}

function envOf(job: V1Job): V1EnvVar[] {
  return container(job).env ?? []
}

function envValue(job: V1Job, name: string): string | undefined {
  return envOf(job).find((e) => e.name === name)?.value
}

function envNames(job: V1Job): string[] {
  return envOf(job).map((e) => e.name)
}

describe('stepJobManifest: SPEC 8.6 cases 25-39', () => {
  it('25: uses pod networking and ClusterFirst DNS by default', () => {
    const job = stepJobManifest(anInput())
    expect(podSpec(job).hostNetwork).toBe(false)
    expect(podSpec(job).dnsPolicy).toBe('ClusterFirst')
  })

  it('26: passes model.maxTokens as MODEL_MAX_TOKENS', () => {
    const agent = anAgent({ model: { provider: 'local-ollama', name: 'smollm2:135m', maxTokens: 200 } })
    expect(envValue(stepJobManifest(anInput({ agent })), 'MODEL_MAX_TOKENS')).toBe('200')
  })

  it('27: sets no MODEL_MAX_TOKENS without maxTokens', () => {
    expect(envNames(stepJobManifest(anInput()))).not.toContain('MODEL_MAX_TOKENS')
  })

  it('hands the step the functions\' OTLP export settings after TRACEPARENT, so its spans reach the same collector', () => {
    const env = envOf(stepJobManifest(anInput({
      traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
      telemetryEnv: [{ name: 'OTEL_EXPORTER_OTLP_ENDPOINT', value: 'http://collector:4318' }],
    })))
    expect(env.slice(-2)).toEqual([
      { name: 'TRACEPARENT', value: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' },
      { name: 'OTEL_EXPORTER_OTLP_ENDPOINT', value: 'http://collector:4318' },
    ])
    expect(envNames(stepJobManifest(anInput()))).not.toContain('OTEL_EXPORTER_OTLP_ENDPOINT')
  })

  it('28: opts in to host networking with Default DNS', () => {
    const job = stepJobManifest(anInput({ hostNetwork: true }))
    expect(podSpec(job).hostNetwork).toBe(true)
    expect(podSpec(job).dnsPolicy).toBe('Default')
  })

  const claude = anAgent({ model: { provider: 'anthropic', name: 'claude-sonnet-4-6' } })
  it.each<[string, LLMProvider, string]>([
    ['29: a fallback provider with a model overrides the agent model',
      aProvider('ollama', { type: 'ollama', model: 'qwen3.5:4b', endpoint: 'http://ollama.ai-agents:11434/v1' }), 'qwen3.5:4b'],
    ['30: a provider matched by name keeps the agent model',
      aProvider('anthropic', { type: 'anthropic', model: 'claude-haiku-4-5' }), 'claude-sonnet-4-6'],
    ['31: a fallback provider without a model keeps the agent model',
      aProvider('ollama', { type: 'ollama', model: '' }), 'claude-sonnet-4-6'],
  ])('%s', (_, provider, model) => {
    expect(envValue(stepJobManifest(anInput({ agent: claude, provider })), 'MODEL_NAME')).toBe(model)
  })

  it.each<[string, Record<string, string> | undefined, string | undefined]>([
    ['32: config.timeoutSeconds becomes MODEL_TIMEOUT', { timeoutSeconds: '600' }, '600'],
    ['33: no config, no MODEL_TIMEOUT', undefined, undefined],
    ['34: a non-integer timeout is not passed', { timeoutSeconds: '10m' }, undefined],
  ])('%s', (_, config, expected) => {
    const provider = aProvider('ollama', { model: 'qwen3.5:4b', ...(config ? { config } : {}) })
    expect(envValue(stepJobManifest(anInput({ provider })), 'MODEL_TIMEOUT')).toBe(expected)
  })

  it('35: passes declared pricing of the resolved model in shortest decimal form', () => {
    const agent = anAgent({ model: { provider: 'ollama', name: 'qwen3.5:4b' } })
    const provider = aProvider('ollama', {
      model: 'qwen3.5:4b',
      models: [{ name: 'qwen3.5:4b', pricing: { inputPerMToken: 1.5, outputPerMToken: 6 } }],
    })
    const job = stepJobManifest(anInput({ agent, provider }))
    expect(envValue(job, 'MODEL_PRICE_IN')).toBe('1.5')
    expect(envValue(job, 'MODEL_PRICE_OUT')).toBe('6')
  })

  it('36: sets no pricing when the provider declares no models', () => {
    const job = stepJobManifest(anInput({ provider: aProvider('ollama', { model: 'qwen3.5:4b' }) }))
    expect(envNames(job)).not.toContain('MODEL_PRICE_IN')
  })

  it.each<[string, string, Partial<AgentSpec>, string]>([
    ['37: the configured executor image runs agents without runtime', 'example/purko-executor:v0.3.1', {}, 'example/purko-executor:v0.3.1'],
    ['38: the agent runtime image wins', 'example/purko-executor:v0.3.1', { runtime: { image: 'custom/executor:dev' } }, 'custom/executor:dev'],
    ['39: the default executor image is whatever configuration gives', 'localhost/purko-executor:latest', {}, 'localhost/purko-executor:latest'],
  ])('%s', (_, executorImage, spec, image) => {
    const job = stepJobManifest(anInput({ executorImage, agent: anAgent(spec) }))
    expect(container(job).image).toBe(image)
    expect(container(job).imagePullPolicy).toBe('IfNotPresent')
  })
})

describe('stepJobName (SPEC Appendix D)', () => {
  it.each([
    ['incident-response', 'triage', '3f2a9c1e-0b7d', 0, 'incident-response-triage-3f2a9c1e-0b7d'],
    ['sdlc-feature-development-with-a-very-long-name', 'implement-feature', '3f2a9c1e-0b7d', 0, '801fd9fed9cc-3f2a9c1e-0b7d'],
    ['incident-response', 'triage', '3f2a9c1e-0b7d', 2, 'incident-response-triage-3f2a9c1e-0b7d-r2'],
    ['sdlc-feature-development-with-a-very-long-name', 'implement-feature', '3f2a9c1e-0b7d', 1, '801fd9fed9cc-3f2a9c1e-0b7d-r1'],
  ])('%s / %s / %s attempt %i is %s', (wf, stepName, runId, attempt, name) => {
    expect(stepJobName(wf, stepName, runId, attempt)).toBe(name)
  })

  it('keeps a name of exactly 63 characters and hashes one of 64', () => {
    const at63 = stepJobName('w'.repeat(56), 's', 'run1', 0)
    expect(at63).toBe(`${'w'.repeat(56)}-s-run1`)
    expect(at63).toHaveLength(63)
    const at64 = stepJobName('w'.repeat(57), 's', 'run1', 0)
    expect(at64).toBe(`${sha256Hex(`${'w'.repeat(57)}/s`).slice(0, 12)}-run1`)
  })

  it('counts the retry suffix towards the 63 characters', () => {
    expect(stepJobName('w'.repeat(53), 's', 'run1', 1)).toHaveLength(63)
    expect(stepJobName('w'.repeat(54), 's', 'run1', 1)).toMatch(/^[0-9a-f]{12}-run1-r1$/)
  })

  it('gives every attempt of a step its own Job name', () => {
    const names = [0, 1, 2, 3].map((n) => stepJobName('wf', 's1', 'run1', n))
    expect(new Set(names).size).toBe(4)
  })

  it('names the Job of the given attempt in the manifest', () => {
    const job = stepJobManifest(anInput({ attempt: 2 }))
    expect(job.metadata!.name).toBe('wf-s1-run1-r2')
    expect(job.metadata!.labels!['kinetic.dev/attempt']).toBe('2')
    expect(envValue(job, 'KINETIC_ATTEMPT')).toBe('2')
  })
})

describe('stepJobManifest: Job object', () => {
  it('labels the Job and its pods with workflow, step, agent, run id, attempt and the shard of the jobs source that watches them', () => {
    const job = stepJobManifest(anInput())
    const labels = {
      'purko.io/workflow': 'wf', 'purko.io/step': 's1', 'purko.io/agent': 'a1',
      'kinetic.dev/run-id': 'run1', 'kinetic.dev/attempt': '0', 'kinetic.dev/shard': '3',
    }
    expect(job.metadata!.labels).toEqual(labels)
    expect(job.spec!.template.metadata!.labels).toEqual(labels)
    expect(job.metadata!.namespace).toBe('ai-agents')
  })

  it('is owned by its Workflow, which controls it and blocks its deletion', () => {
    expect(stepJobManifest(anInput()).metadata!.ownerReferences).toEqual([{
      apiVersion: 'purko.io/v1alpha1', kind: 'Workflow', name: 'wf', uid: 'wf-uid-1',
      controller: true, blockOwnerDeletion: true,
    }])
  })

  it('leaves retries to Kinetic, enforces the deadline and is cleaned up an hour after finishing', () => {
    const job = stepJobManifest(anInput({ activeDeadlineSeconds: 600 }))
    expect(job.spec!.backoffLimit).toBe(0)
    expect(job.spec!.activeDeadlineSeconds).toBe(600)
    expect(job.spec!.ttlSecondsAfterFinished).toBe(3600)
    expect(podSpec(job).restartPolicy).toBe('Never')
    expect(container(job).name).toBe('step-executor')
  })

  it('runs as a non-root user without privileges, capabilities or a writable root filesystem', () => {
    const job = stepJobManifest(anInput())
    expect(podSpec(job).securityContext).toEqual({
      runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532, fsGroup: 65532,
      seccompProfile: { type: 'RuntimeDefault' },
    })
    expect(container(job).securityContext).toEqual({
      allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, runAsNonRoot: true,
      capabilities: { drop: ['ALL'] },
    })
    expect(podSpec(job).volumes).toContainEqual({ name: 'tmp', emptyDir: {} })
    expect(container(job).volumeMounts).toContainEqual({ name: 'tmp', mountPath: '/tmp' })
  })

  it.each<[string, Partial<AgentSpec>, string]>([
    ['the agent ServiceAccount when it names one', { runtime: { serviceAccountName: 'triage-sa' } }, 'triage-sa'],
    ['its own agent-<name>-sa otherwise, not the namespace default', {}, 'agent-a1-sa'],
  ])('runs as %s, without a mounted API token', (_, spec, sa) => {
    const job = stepJobManifest(anInput({ agent: anAgent(spec) }))
    expect(podSpec(job).serviceAccountName).toBe(sa)
    expect(podSpec(job).automountServiceAccountToken).toBe(false)
  })

  it('takes cpu and memory requests and limits from the agent runtime', () => {
    const agent = anAgent({ runtime: { resources: { requests: { cpu: '100m', memory: '128Mi' }, limits: { memory: '512Mi', gpu: '1' } } } })
    expect(container(stepJobManifest(anInput({ agent }))).resources).toEqual({
      requests: { cpu: '100m', memory: '128Mi' }, limits: { memory: '512Mi' },
    })
    expect(container(stepJobManifest(anInput())).resources).toBeUndefined()
  })

  it('builds the same manifest every time for the same input', () => {
    const input = anInput({
      agent: richAgent(), provider: richProvider(), mcpServers: richServers(),
      traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01', recalledMemory: 'r',
    })
    expect(stepJobManifest(input)).toEqual(stepJobManifest(structuredClone(input)))
  })

  it('keeps label values valid for names longer than 63 characters, deterministically', () => {
    const long = `${'very-long-workflow-name-'.repeat(4)}x`
    const job = stepJobManifest(anInput({ workflow: aWorkflow(long) }))
    const value = job.metadata!.labels!['purko.io/workflow']!
    expect(value.length).toBeLessThanOrEqual(63)
    expect(value).toMatch(/^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/)
    expect(value).toBe(labelValue(long))
    expect(labelValue(`${long}y`)).not.toBe(value)
    expect(labelValue('wf')).toBe('wf')
  })
})

function richAgent(): Agent {
  return anAgent({
    model: {
      provider: 'anthropic', name: 'claude-sonnet-4-6', maxTokens: 4096, temperature: 0.2,
      credentialsSecretRef: { name: 'agent-llm', key: 'token' },
    },
    autonomyLevel: 'supervised',
    systemPrompt: 'You triage incidents.',
    guardrails: { maxIterations: 12, costLimitUSD: 0.5, contentFilters: ['no-secrets-in-output', 'regex:a&b:c'], maxExecutionTime: '10m' },
    memory: { behavior: 'persistent', maxContextTokens: 1024 },
    runtime: {
      env: [{ name: 'EXTRA', value: 'yes' }],
      config: { 'log.level': 'debug', b: '2' },
      codeExecution: { enabled: true, languages: ['python', 'bash'], sandbox: { maxExecutionSeconds: 30, networkAccess: false } },
    },
    tools: [
      { name: 'kubectl', type: 'mcp', config: { capability: 'list_pods' } },
      { name: 'code_search', type: 'api', endpoint: { url: 'http://search/api', method: 'POST' }, config: { configMapName: 'search-cfg' } },
    ],
  })
}

function richProvider(): LLMProvider {
  return aProvider('anthropic', {
    type: 'anthropic', model: 'claude-sonnet-4-6', endpoint: 'https://llm.example/v1',
    credentials: { secretRef: 'anthropic-key' }, config: { timeoutSeconds: '120' },
    models: [{ name: 'claude-sonnet-4-6', pricing: { inputPerMToken: 3, outputPerMToken: 15 } }],
  })
}

/** Registry entries as the MCPServer controller (and Helm, and people) write them, in registry order. */
function richServers(): RegistryEntry[] {
  return [
    { name: 'k8s-tools', url: 'http://k8s-tools.ai-agents.svc.cluster.local:8080', auth: 'bearer', secretRef: 'k8s-tools-token', category: 'platform' },
    { name: 'docs', url: 'http://localhost:9000', auth: 'none', icon: 'book' },
  ]
}

describe('stepJobManifest: environment', () => {
  const job = stepJobManifest(anInput({
    agent: richAgent(), provider: richProvider(), mcpServers: richServers(),
    inputFromEnv: [{ name: 'STEP_INPUT_PLAN_RESPONSE', value: '"do it"' }],
    traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01', recalledMemory: 'earlier lesson',
  }))

  it('sets the variables in purko\'s order, with Kinetic\'s own last', () => {
    expect(envNames(job)).toEqual([
      'STEP_NAME', 'WORKFLOW_NAME', 'MODEL_PROVIDER', 'MODEL_NAME', 'MODEL_MAX_TOKENS',
      'MODEL_API_FORMAT', 'MODEL_ENDPOINT', 'MODEL_API_KEY', 'MODEL_TIMEOUT', 'MODEL_PRICE_IN', 'MODEL_PRICE_OUT',
      'AUTONOMY_LEVEL', 'AGENT_SYSTEM_PROMPT', 'STEP_INPUT', 'MCP_SERVERS', 'MCP_TOKEN_K8S_TOOLS',
      'MODEL_TEMPERATURE', 'MAX_TOOL_CALLS', 'COST_LIMIT_USD', 'CONTENT_FILTERS', 'MAX_EXECUTION_TIME',
      'MEMORY_TYPE', 'MEMORY_BEHAVIOR', 'AGENT_MEMORY', 'MAX_CONTEXT_TOKENS',
      'CODE_EXECUTION_ENABLED', 'CODE_LANGUAGES', 'CODE_SANDBOX', 'AGENT_TOOLS',
      'STEP_INPUT_PLAN_RESPONSE', 'EXTRA', 'EXECUTOR_B', 'EXECUTOR_LOG_LEVEL',
      'KINETIC_RUN_ID', 'KINETIC_ATTEMPT', 'KINETIC_NAMESPACE', 'TRACEPARENT',
    ])
  })

  it.each([
    ['STEP_NAME', 's1'],
    ['WORKFLOW_NAME', 'wf'],
    ['MODEL_API_FORMAT', 'anthropic'],
    ['MODEL_ENDPOINT', 'https://llm.example/v1'],
    ['MODEL_TIMEOUT', '120'],
    ['MODEL_PRICE_IN', '3'],
    ['MODEL_PRICE_OUT', '15'],
    ['STEP_INPUT', '{"task":"x"}'],
    ['MODEL_TEMPERATURE', '0.20'],
    ['MAX_TOOL_CALLS', '12'],
    ['COST_LIMIT_USD', '0.5'],
    ['CONTENT_FILTERS', '["no-secrets-in-output","regex:a\\u0026b:c"]'],
    ['MAX_EXECUTION_TIME', '10m'],
    ['AGENT_MEMORY', 'earlier lesson'],
    ['CODE_LANGUAGES', 'python,bash'],
    ['CODE_SANDBOX', '{"maxExecutionSeconds":30}'],
    ['STEP_INPUT_PLAN_RESPONSE', '"do it"'],
    ['EXECUTOR_LOG_LEVEL', 'debug'],
    ['KINETIC_RUN_ID', 'run1'],
    ['TRACEPARENT', '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'],
  ])('sets %s to %j', (name, value) => {
    expect(envValue(job, name)).toBe(value)
  })

  it('lists the registry servers in registry order with purko\'s fields and their namespace, and a token variable (never the token) for bearer servers', () => {
    expect(envValue(job, 'MCP_SERVERS')).toBe(JSON.stringify([
      { name: 'k8s-tools', url: 'http://k8s-tools.ai-agents.svc.cluster.local:8080', auth: 'bearer', tokenEnv: 'MCP_TOKEN_K8S_TOOLS', namespace: 'ai-agents' },
      { name: 'docs', url: 'http://localhost:9000', auth: 'none', namespace: 'ai-agents' },
    ]))
    expect(envOf(job).find((e) => e.name === 'MCP_TOKEN_K8S_TOOLS')).toEqual({
      name: 'MCP_TOKEN_K8S_TOOLS', valueFrom: { secretKeyRef: { name: 'k8s-tools-token', key: 'token', optional: true } },
    })
    expect(envValue(job, 'KINETIC_NAMESPACE')).toBe('ai-agents')
  })

  it('sets MCP_SERVERS to [] when the registry is empty', () => {
    expect(envValue(stepJobManifest(anInput()), 'MCP_SERVERS')).toBe('[]')
  })

  it('never puts a credential into a plain env value', () => {
    const secretish = (name: string) => name.split(/[_.]/).some((part) => ['KEY', 'TOKEN', 'SECRET', 'PASSWORD'].includes(part))
    const checked = envOf(job).filter((e) => secretish(e.name))
    expect(checked.map((e) => e.name)).toEqual(['MODEL_API_KEY', 'MCP_TOKEN_K8S_TOOLS'])
    for (const e of checked) {
      expect(e.value).toBeUndefined()
      expect(e.valueFrom?.secretKeyRef).toBeDefined()
    }
    expect(JSON.stringify(job)).not.toMatch(/"token":"[^"]/)
  })

  it('reads the API key from the provider Secret (key api-key by default), which wins over the agent Secret', () => {
    const keys = envOf(job).filter((e) => e.name === 'MODEL_API_KEY')
    expect(keys).toEqual([{ name: 'MODEL_API_KEY', valueFrom: { secretKeyRef: { name: 'anthropic-key', key: 'api-key', optional: false } } }])
  })

  it('falls back to the agent credentialsSecretRef as an optional secretKeyRef without a provider key', () => {
    const fallback = stepJobManifest(anInput({ agent: richAgent(), provider: undefined }))
    expect(envOf(fallback).filter((e) => e.name === 'MODEL_API_KEY')).toEqual([
      { name: 'MODEL_API_KEY', valueFrom: { secretKeyRef: { name: 'agent-llm', key: 'token', optional: true } } },
    ])
  })

  it('serialises tools like purko\'s AGENT_TOOLS and mounts tool ConfigMaps', () => {
    expect(JSON.parse(envValue(job, 'AGENT_TOOLS')!)).toEqual([
      { name: 'kubectl', type: 'mcp', config: { capability: 'list_pods' } },
      { name: 'code_search', type: 'api', endpoint: { url: 'http://search/api', method: 'POST' }, config: { configMapName: 'search-cfg' } },
    ])
    expect(podSpec(job).volumes).toContainEqual({ name: 'tool-cfg-code-search', configMap: { name: 'search-cfg', optional: true } })
    expect(container(job).volumeMounts).toContainEqual({ name: 'tool-cfg-code-search', mountPath: '/etc/tool-config/code_search', readOnly: true })
  })

  it('formats guardrail numbers with Go %v and the temperature with %.2f', () => {
    const agent = anAgent({ model: { provider: 'p', name: 'm', temperature: 0.125 }, guardrails: { maxIterations: 1000000, costLimitUSD: 2 } })
    const built = stepJobManifest(anInput({ agent }))
    expect(envValue(built, 'MODEL_TEMPERATURE')).toBe('0.12')
    expect(envValue(built, 'MAX_TOOL_CALLS')).toBe('1e+06')
    expect(envValue(built, 'COST_LIMIT_USD')).toBe('2')
  })
})

describe('stepJobManifest: provider and memory volumes', () => {
  it('mounts GCP credentials and sets Vertex variables for a vertex-ai provider, without an API key', () => {
    const provider = aProvider('vertex', {
      type: 'vertex-ai', model: 'claude-sonnet-4-6', credentials: { secretRef: 'gcp-sa' },
      config: { projectId: 'proj-1', region: 'us-east5' },
    })
    const job = stepJobManifest(anInput({ provider }))
    expect(envValue(job, 'MODEL_API_FORMAT')).toBe('anthropic')
    expect(envValue(job, 'ANTHROPIC_VERTEX_PROJECT_ID')).toBe('proj-1')
    expect(envValue(job, 'CLOUD_ML_REGION')).toBe('us-east5')
    expect(envValue(job, 'GOOGLE_APPLICATION_CREDENTIALS')).toBe('/var/run/secrets/gcp/credentials.json')
    expect(envNames(job)).not.toContain('MODEL_API_KEY')
    expect(podSpec(job).volumes).toContainEqual({ name: 'gcp-creds', secret: { secretName: 'gcp-sa', optional: true } })
    expect(container(job).volumeMounts).toContainEqual({ name: 'gcp-creds', mountPath: '/var/run/secrets/gcp', readOnly: true })
  })

  it.each<[string, LLMProvider['spec']['type'], string]>([
    ['openai', 'openai', 'openai'],
    ['ollama', 'ollama', 'openai'],
    ['anthropic', 'anthropic', 'anthropic'],
  ])('infers the API format of a %s provider', (_, type, format) => {
    const job = stepJobManifest(anInput({ provider: aProvider('p', { type, model: 'm' }) }))
    expect(envValue(job, 'MODEL_API_FORMAT')).toBe(format)
  })

  it('mounts the legacy vector memory PVC', () => {
    const agent = anAgent({ memory: { type: 'vector', persistentStorage: { enabled: true } } })
    const job = stepJobManifest(anInput({ agent }))
    expect(podSpec(job).volumes).toContainEqual({ name: 'agent-memory', persistentVolumeClaim: { claimName: 'a1-memory' } })
    expect(container(job).volumeMounts).toContainEqual({ name: 'agent-memory', mountPath: '/var/run/agent-memory' })
    expect(envValue(job, 'MEMORY_TYPE')).toBe('vector')
  })
})

describe('resolveProvider', () => {
  const agent = anAgent({ model: { provider: 'anthropic', name: 'claude-sonnet-4-6' } })

  it('prefers a provider named like the agent provider, in priority order', () => {
    const local = aProvider('anthropic', { type: 'anthropic' }, 'ai-agents')
    const platform = aProvider('anthropic', { type: 'anthropic' }, 'purko-system')
    const fallback = aProvider('ollama', { default: true }, 'ai-agents')
    expect(resolveProvider(agent, [fallback, local, platform])).toBe(local)
  })

  it('falls back to a default provider of the first namespace that has one, the last listed there', () => {
    const a = aProvider('first-default', { default: true }, 'ai-agents')
    const b = aProvider('second-default', { default: true }, 'ai-agents')
    const platform = aProvider('platform-default', { default: true }, 'purko-system')
    expect(resolveProvider(agent, [aProvider('other', {}, 'ai-agents'), a, b, platform])).toBe(b)
    expect(resolveProvider(agent, [aProvider('other', {}, 'ai-agents'), platform])).toBe(platform)
  })

  it('finds nothing without a name match or a default', () => {
    expect(resolveProvider(agent, [aProvider('other')])).toBeUndefined()
    expect(resolveProvider(agent, [])).toBeUndefined()
  })

  it('lets no default stand in for the offline model', () => {
    const offline = anAgent({ model: { provider: 'offline', name: 'demo' } })
    expect(resolveProvider(offline, [aProvider('platform-default', { default: true })])).toBeUndefined()
    expect(resolveProvider(agent, [aProvider('platform-default', { default: true })], { provider: 'offline' })).toBeUndefined()
  })
})

describe('stepTimeoutSeconds', () => {
  it.each<[string, WorkflowStep['timeout'], string | undefined, number]>([
    ['the step timeout', { timeoutSeconds: 90 }, '10m', 90],
    ['the agent maxExecutionTime when the step sets none', undefined, '10m', 600],
    ['the agent maxExecutionTime when the step timeout is 0', { timeoutSeconds: 0 }, '1h30m', 5400],
    ['whole seconds of a fractional duration', undefined, '2.9s', 2],
    ['1800 for an invalid duration', undefined, '1d', 1800],
    ['1800 for a duration under a second', undefined, '300ms', 1800],
    ['1800 when nothing is set', undefined, undefined, 1800],
  ])('uses %s', (_, timeout, maxExecutionTime, seconds) => {
    const agent = anAgent(maxExecutionTime === undefined ? {} : { guardrails: { maxExecutionTime } })
    expect(stepTimeoutSeconds({ name: 's1', ...(timeout ? { timeout } : {}) }, agent)).toBe(seconds)
  })
})

describe('stepJobManifest: per-step model override (Kinetic extension, spec §5.10)', () => {
  const openai = () => aProvider('openai', {
    type: 'openai', model: 'gpt-4o', endpoint: 'https://openai.example/v1', credentials: { secretRef: 'openai-key' },
    models: [{ name: 'gpt-4o-mini', pricing: { inputPerMToken: 0.15, outputPerMToken: 0.6 } }],
  })
  const withModel = (model: WorkflowStep['model']): WorkflowStep => ({ ...step, model })

  it('a step without model keeps the Agent\'s MODEL_* exactly', () => {
    const plain = stepJobManifest(anInput({ agent: richAgent(), provider: richProvider() }))
    const empty = stepJobManifest(anInput({ agent: richAgent(), provider: richProvider(), step: withModel({}) }))
    expect(envOf(empty)).toEqual(envOf(plain))
    expect(envValue(plain, 'MODEL_NAME')).toBe('claude-sonnet-4-6')
  })

  it('name, temperature (two decimals) and maxTokens replace the Agent\'s; the Agent\'s provider, endpoint and keys stay', () => {
    const job = stepJobManifest(anInput({
      agent: richAgent(), provider: richProvider(), step: withModel({ name: 'claude-haiku-4-5', temperature: 0.1, maxTokens: 512 }),
    }))
    expect(envValue(job, 'MODEL_PROVIDER')).toBe('anthropic')
    expect(envValue(job, 'MODEL_NAME')).toBe('claude-haiku-4-5')
    expect(envValue(job, 'MODEL_TEMPERATURE')).toBe('0.10')
    expect(envValue(job, 'MODEL_MAX_TOKENS')).toBe('512')
    expect(envValue(job, 'MODEL_ENDPOINT')).toBe('https://llm.example/v1')
    expect(envOf(job).filter((e) => e.name === 'MODEL_API_KEY')).toEqual([
      { name: 'MODEL_API_KEY', valueFrom: { secretKeyRef: { name: 'anthropic-key', key: 'api-key', optional: false } } },
    ])
  })

  it('a temperature of 0 and a maxTokens the Agent lacks are set', () => {
    const job = stepJobManifest(anInput({ step: withModel({ temperature: 0, maxTokens: 64 }) }))
    expect(envValue(job, 'MODEL_TEMPERATURE')).toBe('0.00')
    expect(envValue(job, 'MODEL_MAX_TOKENS')).toBe('64')
    expect(envValue(job, 'MODEL_NAME')).toBe('smollm2:135m')
  })

  it('another provider: its name, endpoint, API format, key and pricing; the Agent\'s own key is not used for it', () => {
    const job = stepJobManifest(anInput({
      agent: richAgent(), provider: openai(), step: withModel({ provider: 'openai', name: 'gpt-4o-mini' }),
    }))
    expect(envValue(job, 'MODEL_PROVIDER')).toBe('openai')
    expect(envValue(job, 'MODEL_NAME')).toBe('gpt-4o-mini')
    expect(envValue(job, 'MODEL_API_FORMAT')).toBe('openai')
    expect(envValue(job, 'MODEL_ENDPOINT')).toBe('https://openai.example/v1')
    expect(envValue(job, 'MODEL_PRICE_IN')).toBe('0.15')
    expect(envOf(job).filter((e) => e.name === 'MODEL_API_KEY')).toEqual([
      { name: 'MODEL_API_KEY', valueFrom: { secretKeyRef: { name: 'openai-key', key: 'api-key', optional: false } } },
    ])
    // The Agent's temperature and maxTokens still apply where the step sets none.
    expect(envValue(job, 'MODEL_TEMPERATURE')).toBe('0.20')
    expect(envValue(job, 'MODEL_MAX_TOKENS')).toBe('4096')
    // A keyless provider: no fallback to the Agent's credentialsSecretRef (it belongs to the Agent's provider).
    const keyless = stepJobManifest(anInput({
      agent: richAgent(), provider: aProvider('local', { type: 'ollama', model: 'llama3' }), step: withModel({ provider: 'local' }),
    }))
    expect(envNames(keyless)).not.toContain('MODEL_API_KEY')
  })

  it('another provider without a model name: that provider\'s model, not the Agent\'s', () => {
    const job = stepJobManifest(anInput({ agent: richAgent(), provider: openai(), step: withModel({ provider: 'openai' }) }))
    expect(envValue(job, 'MODEL_NAME')).toBe('gpt-4o')
  })

  it('naming the Agent\'s own provider changes nothing about credentials', () => {
    const job = stepJobManifest(anInput({ agent: richAgent(), provider: undefined, step: withModel({ provider: 'anthropic', name: 'x' }) }))
    expect(envOf(job).filter((e) => e.name === 'MODEL_API_KEY')).toEqual([
      { name: 'MODEL_API_KEY', valueFrom: { secretKeyRef: { name: 'agent-llm', key: 'token', optional: true } } },
    ])
  })

  it('a provider standing in for the wanted one (a default) names its own model, as for Agents', () => {
    const standIn = aProvider('platform-default', { default: true, model: 'default-model' })
    const job = stepJobManifest(anInput({ agent: richAgent(), provider: standIn, step: withModel({ provider: 'missing', name: 'wanted-model' }) }))
    expect(envValue(job, 'MODEL_NAME')).toBe('default-model')
    expect(envValue(job, 'MODEL_PROVIDER')).toBe('missing')
  })
})

describe('resolveProvider with a step override', () => {
  it('resolves the step\'s provider by the same rule as the Agent\'s', () => {
    const agent = anAgent()
    const own = aProvider('local-ollama')
    const other = aProvider('openai', {}, 'ai-agents')
    const fallback = aProvider('platform-default', { default: true })
    expect(resolveProvider(agent, [own, other], { provider: 'openai' })).toBe(other)
    expect(resolveProvider(agent, [own, other], {})).toBe(own)
    expect(resolveProvider(agent, [own, fallback], { provider: 'gone' })).toBe(fallback)
  })
})

describe('stepJobManifest: MCP servers of other namespaces (issue 27)', () => {
  // MCPServer ai-agents/recipes (the platform's), and an impostor of the same name in another namespace.
  const platform: RegistryEntry = { name: 'recipes', url: 'http://recipes-mcp.kinetic-system.svc.cluster.local/mcp', auth: 'bearer', secretRef: 'recipes-mcp-token', category: 'platform', namespace: 'ai-agents' }
  const impostor: RegistryEntry = { name: 'recipes', url: 'https://attacker.example/mcp', auth: 'bearer', secretRef: 'recipes-mcp-token', namespace: 'evil' }
  const inNamespace = (namespace: string, shared: string[] = []) => {
    const wf = aWorkflow()
    return stepJobManifest(anInput({
      workflow: { ...wf, metadata: { ...wf.metadata, namespace } },
      mcpServers: [platform, impostor, { name: 'team-tools', url: 'http://tt.team.svc:80', auth: 'bearer', secretRef: 'tt-token', namespace: 'team' }],
      mcpVisibility: { agentNamespace: 'ai-agents', shared },
    }))
  }
  const servers = (job: V1Job) => JSON.parse(envValue(job, 'MCP_SERVERS')!) as Array<Record<string, string>>
  const tokens = (job: V1Job) => envOf(job).filter((e) => e.name.startsWith('MCP_TOKEN_'))

  it('a step in another namespace never connects to the impostor and sends no token to the platform server of another namespace', () => {
    const job = inNamespace('victim')
    expect(servers(job)).toEqual([{ name: 'recipes', url: 'http://recipes-mcp.kinetic-system.svc.cluster.local/mcp', auth: 'bearer', namespace: 'ai-agents' }])
    expect(JSON.stringify(job)).not.toContain('attacker.example')
    expect(tokens(job)).toEqual([])
  })

  it("a step uses its own namespace's servers with their own Secrets, and the agent namespace's without a token", () => {
    const job = inNamespace('team')
    expect(servers(job).map((s) => `${s.namespace}/${s.name}:${s.tokenEnv ?? '-'}`)).toEqual(['ai-agents/recipes:-', 'team/team-tools:MCP_TOKEN_TEAM_TOOLS'])
    expect(tokens(job)).toEqual([{ name: 'MCP_TOKEN_TEAM_TOOLS', valueFrom: { secretKeyRef: { name: 'tt-token', key: 'token', optional: true } } }])
  })

  it("only the impostor's own namespace uses it, with that namespace's Secret; the agent namespace keeps the platform server and its token", () => {
    expect(servers(inNamespace('evil')).map((s) => s.url)).toEqual(['https://attacker.example/mcp'])
    const platformJob = inNamespace('ai-agents')
    expect(servers(platformJob)).toEqual([{ name: 'recipes', url: 'http://recipes-mcp.kinetic-system.svc.cluster.local/mcp', auth: 'bearer', tokenEnv: 'MCP_TOKEN_RECIPES', namespace: 'ai-agents' }])
    expect(tokens(platformJob).map((e) => e.valueFrom?.secretKeyRef?.name)).toEqual(['recipes-mcp-token'])
  })

  it('a shared namespace adds its servers for every step, behind the agent namespace and without tokens', () => {
    const job = inNamespace('victim', ['team', 'evil'])
    // The impostor's name is the agent namespace's, which wins; the shared team-tools is listed first so that its tools never replace another's.
    expect(servers(job).map((s) => `${s.namespace}/${s.name}`)).toEqual(['team/team-tools', 'ai-agents/recipes'])
    expect(tokens(job)).toEqual([])
  })
})
