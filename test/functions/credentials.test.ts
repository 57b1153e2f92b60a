import type { V1Secret } from '@kubernetes/client-node'
import { describe, expect, it } from 'vitest'
import { createApp as stepJobFinished } from '../../functions/step-job-finished/index.js'
import { createApp as resyncTick } from '../../functions/resync-tick/index.js'
import { createApp as workflowChanged } from '../../functions/workflow-changed/index.js'
import { syncCredentialCopies } from '../../shared/llm/sync-credential-copies.js'
import { ConflictError, TransientError } from '../../shared/core/errors.js'
import { AgentSchema } from '../../shared/schemas/agent.js'
import { LLMProviderSchema, type LLMProvider } from '../../shared/schemas/llmprovider.js'
import { EmbeddedKube } from '../support/embedded-kube.js'
import { deliver, PING, RESOURCE_ADD, RESOURCE_UPDATE } from '../support/deliver.js'
import { testDeps } from '../support/engine-deps.js'
import { agentOf, workflowOf } from '../support/objects.js'

/** The workflow functions hold no Secret right at all: any Secret call is a 403 on a real cluster. */
class NoSecretsKube extends EmbeddedKube {
  secretCalls = 0
  override async getSecret(): Promise<V1Secret | null> { this.secretCalls++; throw new Error('secrets is forbidden') }
  override async createSecret(): Promise<'created' | 'exists'> { this.secretCalls++; throw new Error('secrets is forbidden') }
  override async replaceSecret(): Promise<V1Secret> { this.secretCalls++; throw new Error('secrets is forbidden') }
}

function provider(name: string, namespace: string, spec: Record<string, unknown> = {}, status?: Record<string, unknown>): LLMProvider {
  return LLMProviderSchema.parse({
    apiVersion: 'purko.io/v1alpha1', kind: 'LLMProvider',
    metadata: { name, namespace },
    spec: { type: 'openai', model: `${name}-model`, endpoint: `http://${name}.invalid/v1`, credentials: { secretRef: `${name}-key` }, ...spec },
    ...(status ? { status } : {}),
  })
}

function optIn(kube: EmbeddedKube, namespace = 'team'): void {
  kube.namespaces.set(namespace, { metadata: { name: namespace, labels: { 'kinetic.dev/llm-credentials': 'enabled' } } })
}

function envOf(kube: EmbeddedKube, jobName: string) {
  const job = [...kube.jobs.values()].find((j) => j.metadata?.name === jobName)
  return job?.spec?.template.spec?.containers[0]?.env ?? []
}
const envValue = (kube: EmbeddedKube, job: string, name: string) => envOf(kube, job).find((e) => e.name === name)?.value
const apiKeyRef = (kube: EmbeddedKube, job: string) => envOf(kube, job).find((e) => e.name === 'MODEL_API_KEY')

async function start(kube: EmbeddedKube, steps: Array<{ name: string; dependsOn?: string[] }> = [{ name: 'a' }]) {
  kube.putWorkflow(workflowOf('wf', steps))
  const res = await deliver(workflowChanged(testDeps(kube)), RESOURCE_ADD, kube.workflow('team', 'wf'))
  expect(res.status).toBe(202)
  const wf = kube.workflow('team', 'wf')
  return { runId: wf.status!.runId!, wf }
}

describe('step credentials without Secret rights', () => {
  it('a platform provider\'s key reaches the pod by secretKeyRef to kinetic-llm-credentials in an opted-in namespace; the engine touches no Secret', async () => {
    const kube = new NoSecretsKube({ agents: [agentOf('helper')], providers: [provider('offline', 'purko-system')] })
    optIn(kube)
    const { runId } = await start(kube)

    expect(apiKeyRef(kube, `wf-a-${runId}`)).toEqual({ name: 'MODEL_API_KEY', valueFrom: { secretKeyRef: { name: 'kinetic-llm-credentials', key: 'offline', optional: false } } })
    expect(kube.secretCalls).toBe(0)
  })

  it('a provider of the Workflow\'s own namespace is referenced directly, without reading the Namespace', async () => {
    const kube = new NoSecretsKube({ agents: [agentOf('helper')], providers: [provider('offline', 'team', { credentials: { secretRef: 'own-key', secretKey: 'token' } })] })
    let namespaceReads = 0
    const getNamespace = kube.getNamespace.bind(kube)
    kube.getNamespace = async (name) => { namespaceReads++; return getNamespace(name) }
    const { runId } = await start(kube)

    expect(apiKeyRef(kube, `wf-a-${runId}`)?.valueFrom?.secretKeyRef).toEqual({ name: 'own-key', key: 'token', optional: false })
    expect(namespaceReads).toBe(0)
    expect(kube.secretCalls).toBe(0)
  })

  it('in a namespace that has not opted in, the step waits with the two commands that fix it and a Warning Event, and starts once the namespace opts in', async () => {
    const kube = new NoSecretsKube({ agents: [agentOf('helper')], providers: [provider('offline', 'purko-system')] })
    kube.namespaces.set('team', { metadata: { name: 'team' } })
    const { wf } = await start(kube)

    const step = wf.status!.stepStatuses!.find((s) => s.name === 'a')!
    expect(step.phase).toBe('Pending')
    expect(step.error).toMatch(/^Waiting for the key of LLMProvider purko-system\/offline in namespace "team": namespace "team" has not opted in/)
    expect(step.error).toContain('kubectl label namespace team kinetic.dev/llm-credentials=enabled')
    expect(step.error).toContain('kubectl create rolebinding kinetic-llm-credentials-writer -n team --clusterrole=kinetic-llm-credentials-writer --serviceaccount=kinetic-system:llmprovider-changed')
    expect(kube.jobs.size).toBe(0)
    expect(kube.events.filter((e) => e.reason === 'LLMCredentialsUnavailable').map((e) => e.type)).toEqual(['Warning'])

    // The resync tick looks again while still not opted in: nothing new is written or announced.
    const writes = kube.writes.length
    expect((await deliver(resyncTick(testDeps(kube)), PING, { reason: 'resync' })).status).toBe(202)
    expect(kube.writes.slice(writes)).toEqual([])
    expect(kube.events.filter((e) => e.reason === 'LLMCredentialsUnavailable')).toHaveLength(1)

    optIn(kube)
    expect((await deliver(resyncTick(testDeps(kube)), PING, { reason: 'resync' })).status).toBe(202)
    const after = kube.workflow('team', 'wf')
    const started = after.status!.stepStatuses!.find((s) => s.name === 'a')!
    expect(started.phase).toBe('Running')
    expect(started.error).toBeUndefined()
    expect(apiKeyRef(kube, started.jobName!)?.valueFrom?.secretKeyRef?.name).toBe('kinetic-llm-credentials')
    expect(kube.secretCalls).toBe(0)
  })

  it('a provider without credentials (ollama) needs no opt-in', async () => {
    const kube = new NoSecretsKube({ agents: [agentOf('helper')], providers: [provider('offline', 'purko-system', { type: 'ollama', credentials: undefined })] })
    const { runId } = await start(kube)
    expect(envOf(kube, `wf-a-${runId}`).map((e) => e.name)).not.toContain('MODEL_API_KEY')
    expect(envValue(kube, `wf-a-${runId}`, 'MODEL_ENDPOINT')).toBe('http://offline.invalid/v1')
  })
})

describe('a step\'s model override (Kinetic extension, spec §5.10)', () => {
  it('steps of one agent on different providers each get their provider\'s endpoint, model and key; one that needs an opt-in waits alone', async () => {
    const kube = new NoSecretsKube({
      agents: [agentOf('helper')],
      providers: [provider('offline', 'team', { type: 'ollama', credentials: undefined }), provider('remote', 'purko-system')],
    })
    kube.namespaces.set('team', { metadata: { name: 'team' } })
    kube.putWorkflow(workflowOf('wf', [
      { name: 'plain' },
      { name: 'tuned', model: { name: 'scripted-large', temperature: 0.1, maxTokens: 256 } },
      { name: 'elsewhere', model: { provider: 'remote' } },
    ], { parallelism: 3 }))
    const res = await deliver(workflowChanged(testDeps(kube)), RESOURCE_ADD, kube.workflow('team', 'wf'))
    expect(res.status).toBe(202)
    const wf = kube.workflow('team', 'wf')
    const runId = wf.status!.runId!
    const phase = (name: string) => wf.status!.stepStatuses!.find((s) => s.name === name)!

    expect(envValue(kube, `wf-plain-${runId}`, 'MODEL_NAME')).toBe('scripted')
    expect(envValue(kube, `wf-plain-${runId}`, 'MODEL_ENDPOINT')).toBe('http://offline.invalid/v1')
    expect(envValue(kube, `wf-tuned-${runId}`, 'MODEL_NAME')).toBe('scripted-large')
    expect(envValue(kube, `wf-tuned-${runId}`, 'MODEL_TEMPERATURE')).toBe('0.10')
    expect(envValue(kube, `wf-tuned-${runId}`, 'MODEL_MAX_TOKENS')).toBe('256')
    expect(envValue(kube, `wf-tuned-${runId}`, 'MODEL_ENDPOINT')).toBe('http://offline.invalid/v1')
    // The platform provider's key needs the namespace's opt-in: only the step that switched to it waits.
    expect(phase('elsewhere').phase).toBe('Pending')
    expect(phase('elsewhere').error).toMatch(/^Waiting for the key of LLMProvider purko-system\/remote in namespace "team": namespace "team" has not opted in/)
    expect(phase('plain').phase).toBe('Running')

    optIn(kube)
    expect((await deliver(resyncTick(testDeps(kube)), PING, { reason: 'resync' })).status).toBe(202)
    const job = kube.workflow('team', 'wf').status!.stepStatuses!.find((s) => s.name === 'elsewhere')!.jobName!
    expect(envValue(kube, job, 'MODEL_PROVIDER')).toBe('remote')
    expect(envValue(kube, job, 'MODEL_NAME')).toBe('remote-model')
    expect(envValue(kube, job, 'MODEL_ENDPOINT')).toBe('http://remote.invalid/v1')
    expect(apiKeyRef(kube, job)).toEqual({ name: 'MODEL_API_KEY', valueFrom: { secretKeyRef: { name: 'kinetic-llm-credentials', key: 'remote', optional: false } } })
    expect(kube.secretCalls).toBe(0)
  })
})

describe('spec.fallback.providerRef', () => {
  const failing = { phase: 'Error', conditions: [{ type: 'Ready', status: 'False', reason: 'CredentialsInvalid', message: 'HTTP 401', lastTransitionTime: '2026-01-01T00:00:00Z' }] }

  it('a provider in Error hands its steps to the fallback: endpoint, API format, model and key, and the step status says so', async () => {
    const kube = new NoSecretsKube({
      agents: [agentOf('helper')],
      providers: [
        provider('offline', 'purko-system', { fallback: { providerRef: 'backup' } }, failing),
        provider('backup', 'purko-system', { type: 'anthropic', model: 'claude-small' }, { phase: 'Ready' }),
      ],
    })
    optIn(kube)
    const { runId, wf } = await start(kube)
    const job = `wf-a-${runId}`

    expect(envValue(kube, job, 'MODEL_ENDPOINT')).toBe('http://backup.invalid/v1')
    expect(envValue(kube, job, 'MODEL_API_FORMAT')).toBe('anthropic')
    expect(envValue(kube, job, 'MODEL_NAME')).toBe('claude-small')
    expect(apiKeyRef(kube, job)?.valueFrom?.secretKeyRef).toEqual({ name: 'kinetic-llm-credentials', key: 'backup', optional: false })
    expect(wf.status!.stepStatuses!.find((s) => s.name === 'a')!.message)
      .toBe('LLMProvider purko-system/offline is Error (CredentialsInvalid): using fallback purko-system/backup (model claude-small)')
  })

  it.each([
    ['Ready', { phase: 'Ready' }],
    ['without any status yet (a purko manifest before the first probe)', undefined],
    ['Pending with no failing check', { phase: 'Pending' }],
  ])('a provider that is %s keeps its steps', async (_, status) => {
    const kube = new NoSecretsKube({
      agents: [agentOf('helper')],
      providers: [provider('offline', 'purko-system', { fallback: { providerRef: 'backup' } }, status), provider('backup', 'purko-system', {}, { phase: 'Ready' })],
    })
    optIn(kube)
    const { runId, wf } = await start(kube)
    expect(envValue(kube, `wf-a-${runId}`, 'MODEL_ENDPOINT')).toBe('http://offline.invalid/v1')
    expect(wf.status!.stepStatuses!.find((s) => s.name === 'a')!.message).toBeUndefined()
  })

  it('one hop only: a fallback that is not Ready either leaves the step on its own provider, and says why', async () => {
    const kube = new NoSecretsKube({
      agents: [agentOf('helper')],
      providers: [
        provider('offline', 'purko-system', { fallback: { providerRef: 'backup' } }, { phase: 'Degraded' }),
        provider('backup', 'purko-system', { fallback: { providerRef: 'third' } }, failing),
        provider('third', 'purko-system', {}, { phase: 'Ready' }),
      ],
    })
    optIn(kube)
    const { runId, wf } = await start(kube)
    expect(envValue(kube, `wf-a-${runId}`, 'MODEL_ENDPOINT')).toBe('http://offline.invalid/v1')
    expect(wf.status!.stepStatuses!.find((s) => s.name === 'a')!.message)
      .toBe('LLMProvider purko-system/offline is Degraded; its fallback purko-system/backup is Error (CredentialsInvalid) too, so the step uses purko-system/offline')
  })

  it('the next step uses the primary again once it is Ready, and its status no longer mentions the fallback', async () => {
    const kube = new NoSecretsKube({
      agents: [agentOf('helper')],
      providers: [provider('offline', 'purko-system', { fallback: { providerRef: 'backup' } }, failing), provider('backup', 'purko-system', {}, { phase: 'Ready' })],
    })
    optIn(kube)
    const { runId } = await start(kube, [{ name: 'a' }, { name: 'b', dependsOn: ['a'] }])
    expect(envValue(kube, `wf-a-${runId}`, 'MODEL_ENDPOINT')).toBe('http://backup.invalid/v1')
    kube.providers.set('purko-system/offline', provider('offline', 'purko-system', { fallback: { providerRef: 'backup' } }, { phase: 'Ready' }))

    await deliver(stepJobFinished(testDeps(kube)), RESOURCE_UPDATE, kube.finishJob(`wf-a-${runId}`, 'Succeeded', 'OUTPUT:{}'))
    const steps = kube.workflow('team', 'wf').status!.stepStatuses!
    expect(envValue(kube, `wf-b-${runId}`, 'MODEL_ENDPOINT')).toBe('http://offline.invalid/v1')
    expect(steps.find((s) => s.name === 'a')!.message).toMatch(/using fallback/)
    expect(steps.find((s) => s.name === 'b')!.message).toBeUndefined()
  })
})

describe('step Jobs see the mcp-servers registry', () => {
  function registry(kube: EmbeddedKube, servers: string): void {
    kube.configMaps.set('ai-agents/mcp-servers', { metadata: { name: 'mcp-servers', namespace: 'ai-agents', resourceVersion: '1' }, data: { servers } })
  }
  function toolAgent(tools: Array<Record<string, unknown>>) {
    const base = agentOf('helper')
    return AgentSchema.parse({ ...base, spec: { ...base.spec, tools } })
  }

  it('MCP_SERVERS lists the servers the step may use (YAML too) in registry order, with tokens only as secretKeyRef variables of its own namespace', async () => {
    const kube = new NoSecretsKube({ agents: [agentOf('helper')] })
    registry(kube, [
      '- name: zeta\n  url: http://zeta.team.svc.cluster.local:8080\n  auth: bearer\n  secretRef: zeta-token\n  namespace: team',
      '- name: alpha\n  url: http://localhost:9000',
      '- name: platform\n  url: http://platform.ai-agents.svc:80\n  auth: bearer\n  secretRef: platform-token',
      '- name: other\n  url: http://other.elsewhere.svc:80\n  namespace: elsewhere\n',
    ].join('\n'))
    const { runId } = await start(kube)
    const job = `wf-a-${runId}`

    expect(JSON.parse(envValue(kube, job, 'MCP_SERVERS')!)).toEqual([
      { name: 'alpha', url: 'http://localhost:9000', auth: 'none', namespace: 'ai-agents' },
      { name: 'platform', url: 'http://platform.ai-agents.svc:80', auth: 'bearer', namespace: 'ai-agents' },
      { name: 'zeta', url: 'http://zeta.team.svc.cluster.local:8080', auth: 'bearer', tokenEnv: 'MCP_TOKEN_ZETA', namespace: 'team' },
    ])
    expect(envOf(kube, job).filter((e) => e.name.startsWith('MCP_TOKEN_'))).toEqual([{ name: 'MCP_TOKEN_ZETA', valueFrom: { secretKeyRef: { name: 'zeta-token', key: 'token', optional: true } } }])
  })

  it('an agent whose mcp tool names a server nobody registered gets a warning in the step status, not a silent empty tool list', async () => {
    const kube = new NoSecretsKube({ agents: [toolAgent([{ name: 'github', type: 'mcp' }])] })
    registry(kube, '[{"name":"docs","url":"http://docs:8000","auth":"none","namespace":"team"}]')
    kube.mcpServers.set('team/docs', { apiVersion: 'purko.io/v1alpha1', kind: 'MCPServer', metadata: { name: 'docs', namespace: 'team' },
      spec: { image: 'docs:1' }, status: { tools: [{ name: 'search' }] } } as never)
    const { wf } = await start(kube)

    expect(wf.status!.stepStatuses!.find((s) => s.name === 'a')!.message).toBe(
      'Agent "helper" names MCP server or tool "github", which no server of the registry ai-agents/mcp-servers that this step may use offers (it may use docs); those tools are not available to the step')
  })

  it('a tool offered by a registered server, or a registered server name, is no warning', async () => {
    const kube = new NoSecretsKube({ agents: [toolAgent([{ name: 'docs', type: 'mcp' }, { name: 'find', type: 'mcp', config: { capability: 'search' } }])] })
    registry(kube, '[{"name":"docs","url":"http://docs:8000","auth":"none","namespace":"team"}]')
    kube.mcpServers.set('team/docs', { apiVersion: 'purko.io/v1alpha1', kind: 'MCPServer', metadata: { name: 'docs', namespace: 'team' },
      spec: { image: 'docs:1' }, status: { tools: [{ name: 'search' }] } } as never)
    const { wf } = await start(kube)
    expect(wf.status!.stepStatuses!.find((s) => s.name === 'a')!.message).toBeUndefined()
  })

  it('an unreadable registry is reported on the steps of agents with mcp tools, and MCP_SERVERS is empty', async () => {
    const kube = new NoSecretsKube({ agents: [toolAgent([{ name: 'docs', type: 'mcp' }])] })
    registry(kube, '{not: [valid')
    const { runId, wf } = await start(kube)
    expect(envValue(kube, `wf-a-${runId}`, 'MCP_SERVERS')).toBe('[]')
    expect(wf.status!.stepStatuses!.find((s) => s.name === 'a')!.message).toMatch(/^MCP registry ai-agents\/mcp-servers cannot be read \(/)
  })
})

describe('syncCredentialCopies (llmprovider-changed)', () => {
  const b64 = (text: string) => Buffer.from(text).toString('base64')
  /** Rotates a Secret's api-key as its owner would (a new value written to the API server). */
  const rotate = (kube: EmbeddedKube, key: string, value: string) => {
    const secret = kube.secrets.get(key)!
    kube.secrets.set(key, { ...secret, data: { ...secret.data, 'api-key': value } })
  }
  function setup() {
    const kube = new EmbeddedKube()
    optIn(kube, 'team')
    optIn(kube, 'ai-agents')
    kube.namespaces.set('other', { metadata: { name: 'other' } })
    kube.secrets.set('purko-system/openai-key', { metadata: { name: 'openai-key', namespace: 'purko-system' }, data: { 'api-key': b64('sk-one'), unrelated: b64('do-not-copy') } })
    kube.secrets.set('purko-system/claude-key', { metadata: { name: 'claude-key', namespace: 'purko-system' }, data: { token: b64('sk-two') } })
    const providers = [
      provider('openai', 'purko-system', { credentials: { secretRef: 'openai-key' } }),
      provider('claude', 'purko-system', { type: 'anthropic', credentials: { secretRef: 'claude-key', secretKey: 'token' } }),
      provider('local', 'purko-system', { type: 'ollama', credentials: undefined }),
    ]
    return { kube, providers }
  }

  it('keeps one Secret per opted-in namespace with only each provider\'s key, under its name, and names the sources', async () => {
    const { kube, providers } = setup()
    const outcome = await syncCredentialCopies(kube, 'purko-system', providers)

    expect(outcome).toEqual({ written: ['ai-agents', 'team'], unchanged: [], failed: [], missing: [] })
    for (const ns of ['team', 'ai-agents']) {
      const copy = kube.secrets.get(`${ns}/kinetic-llm-credentials`)!
      expect(copy.data).toEqual({ claude: b64('sk-two'), openai: b64('sk-one') })
      expect(copy.metadata?.labels).toMatchObject({ 'kinetic.dev/llm-credentials-copy': 'true' })
      expect(JSON.parse(copy.metadata!.annotations!['kinetic.dev/copied-from']!)).toEqual({ claude: 'purko-system/claude-key:token', openai: 'purko-system/openai-key:api-key' })
    }
    expect(kube.secrets.has('other/kinetic-llm-credentials')).toBe(false)
  })

  it('writes nothing when the copies are current; a rotated key reaches every copy in the next call; a removed provider\'s key is dropped', async () => {
    const { kube, providers } = setup()
    await syncCredentialCopies(kube, 'purko-system', providers)
    const writes = kube.writes.length
    expect(await syncCredentialCopies(kube, 'purko-system', providers)).toMatchObject({ written: [], unchanged: ['ai-agents', 'team'] })
    expect(kube.writes.slice(writes)).toEqual([])

    rotate(kube, 'purko-system/openai-key', b64('sk-rotated'))
    expect((await syncCredentialCopies(kube, 'purko-system', providers)).written).toEqual(['ai-agents', 'team'])
    expect(kube.secrets.get('team/kinetic-llm-credentials')!.data!.openai).toBe(b64('sk-rotated'))

    await syncCredentialCopies(kube, 'purko-system', providers.filter((p) => p.metadata.name !== 'claude'))
    expect(Object.keys(kube.secrets.get('team/kinetic-llm-credentials')!.data!)).toEqual(['openai'])
  })

  it('reports a missing Secret or key by name (never a value), and one namespace it cannot write without stopping the others', async () => {
    const { kube, providers } = setup()
    kube.secrets.delete('purko-system/claude-key')
    // Namespaces are written in name order: ai-agents first.
    kube.failNext('createSecret', new Error('secrets is forbidden: no RoleBinding in ai-agents'))
    const outcome = await syncCredentialCopies(kube, 'purko-system', providers)

    expect(outcome.missing).toEqual([{ provider: 'claude', message: 'Secret purko-system/claude-key of LLMProvider claude not found' }])
    expect(outcome.written).toEqual(['team'])
    expect(outcome.failed).toEqual([{ namespace: 'ai-agents', message: 'Could not write Secret ai-agents/kinetic-llm-credentials: secrets is forbidden: no RoleBinding in ai-agents' }])
    expect(JSON.stringify(outcome)).not.toContain(b64('sk-one'))
  })

  it('a failed read of a source Secret throws, so the event is redelivered', async () => {
    const { kube, providers } = setup()
    kube.failNext('getSecret', new TransientError('API server unavailable'))
    await expect(syncCredentialCopies(kube, 'purko-system', providers)).rejects.toBeInstanceOf(TransientError)
  })

  it('a lost race with another replica is retried on fresh state', async () => {
    const { kube, providers } = setup()
    await syncCredentialCopies(kube, 'purko-system', providers)
    rotate(kube, 'purko-system/openai-key', b64('sk-rotated'))
    kube.failNext('replaceSecret', new ConflictError('modified'))
    const outcome = await syncCredentialCopies(kube, 'purko-system', providers)
    expect(outcome.failed).toEqual([])
    expect(outcome.written).toEqual(['ai-agents', 'team'])
  })
})
