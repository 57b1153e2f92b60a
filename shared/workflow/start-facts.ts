/**
 * What steps about to start need besides the Agents: the provider each one uses and where its
 * key comes from, and the `mcp-servers` registry, read only in a reconcile in which one may start.
 */
import { mcpVisibilityOf } from '../config.js'
import { providersKey, registryKey, rememberedConfig } from '../engine/memo.js'
import type { EngineDeps } from '../engine/controller.js'
import type { Kube, KubeVerbs } from '../kube/port.js'
import { isOptedIn, LLM_CREDENTIALS_SECRET } from '../llm/plan/credential-copies.js'
import { providersVisibleFrom, VISIBLE_PROVIDER_VERBS } from '../llm/providers.js'
import { parseRegistry, REGISTRY_CONFIGMAP, REGISTRY_KEY } from '../mcp/plan/registry.js'
import { stepMcpView } from '../mcp/plan/visibility.js'
import type { Agent } from '../schemas/agent.js'
import type { Workflow } from '../schemas/workflow.js'
import { agentKeyOf, choiceKeyOf } from './plan/agent-keys.js'
import { chooseProvider, type ProviderChoice } from './plan/credentials.js'
import { agentsThatMayStart } from './plan/plan-inputs.js'
import type { StartFacts } from './plan/run-facts.js'
import { mcpToolWarning, needsToolLookup, serverKey } from './plan/step-mcp.js'

/** The port verbs of loadStartFacts. */
export const START_FACTS_VERBS = [...VISIBLE_PROVIDER_VERBS, 'getConfigMap', 'getNamespace', 'listAllMCPServers'] as const satisfies readonly (keyof Kube)[]

/**
 * What steps about to start need, read only when one may: the providers visible from the
 * Workflow's namespace, the Namespace's opt-in label (only when a platform provider's key is
 * needed), the `mcp-servers` registry, and MCPServers' discovered tools (only when an agent names
 * an MCP tool that is not a registered server). `only` limits it to those agents.
 */
export async function loadStartFacts(deps: EngineDeps<KubeVerbs<typeof START_FACTS_VERBS>>, workflow: Workflow, agents: ReadonlyMap<string, Agent>, only?: readonly string[]): Promise<StartFacts | null> {
  const keys = [...(only ? new Set(only) : agentsThatMayStart(workflow))].filter((k) => agents.has(k))
  if (keys.length === 0) return null
  const { kube, config } = deps
  const namespace = workflow.metadata.namespace ?? 'default'
  const now = deps.now()
  const [providers, registryMap] = await Promise.all([
    rememberedConfig(deps.memo, providersKey(namespace), now, () => providersVisibleFrom(kube, namespace, config.platformNamespace)),
    rememberedConfig(deps.memo, registryKey(config.agentNamespace, REGISTRY_CONFIGMAP), now, () => kube.getConfigMap(config.agentNamespace, REGISTRY_CONFIGMAP)),
  ])
  const ctx = { workflowNamespace: namespace, platformNamespace: config.platformNamespace, optedIn: true }
  // One choice per agent and provider override of its steps (choiceKeyOf, spec §5.10).
  const wanted = new Set(keys)
  const choiceKeys = new Map<string, { agentKey: string; provider?: string }>()
  for (const step of workflow.spec.steps) {
    if (!step.agentRef?.name) continue
    const agentKey = agentKeyOf(workflow, step)
    if (!wanted.has(agentKey)) continue
    choiceKeys.set(choiceKeyOf(workflow, step), { agentKey, ...(step.model?.provider !== undefined ? { provider: step.model.provider } : {}) })
  }
  const choose = () => new Map([...choiceKeys].map(([k, c]) => [k, chooseProvider(agents.get(c.agentKey)!, providers, ctx, c)] as const))
  let choices = choose()
  // The Namespace is read only when some step needs a key only the platform's copy can hold.
  const usesCopy = (c: ProviderChoice) => c.credentials.apiKey?.secret === LLM_CREDENTIALS_SECRET || c.credentials.gcp?.secret === LLM_CREDENTIALS_SECRET
  if ([...choices.values()].some(usesCopy) && !isOptedIn(await kube.getNamespace(namespace))) {
    ctx.optedIn = false
    choices = choose()
  }
  const registry = parseRegistry(registryMap?.data?.[REGISTRY_KEY])
  const where = `${config.agentNamespace}/${REGISTRY_CONFIGMAP}`
  // What a step of this Workflow may use: the Job builder lists exactly these servers.
  const view = stepMcpView(registry.entries, namespace, mcpVisibilityOf(config))
  const knownTools = new Map<string, string[]>()
  if (!registry.error && keys.some((k) => needsToolLookup(agents.get(k)!, view))) {
    const usable = new Set(view.servers.map((s) => serverKey(s.namespace, s.entry.name)))
    for (const server of await kube.listAllMCPServers()) {
      const key = serverKey(server.metadata.namespace ?? '', server.metadata.name ?? '')
      if (!usable.has(key) || !server.status?.tools) continue
      knownTools.set(key, server.status.tools.map((t) => t.name))
    }
  }
  const notes = new Map<string, string>()
  for (const [key, { agentKey }] of choiceKeys) {
    const agent = agents.get(agentKey)!
    const choice = choices.get(key)!
    const warning = mcpToolWarning(agent, namespace, view, registry.error, knownTools, where)
    const text = [...choice.notes, ...(warning ? [warning] : [])].join('; ')
    // 1 KiB per step, like errors: 200 listed steps must keep the status far below etcd's limit.
    if (text) notes.set(key, text.length > 1024 ? `${text.slice(0, 1021)}...` : text)
  }
  return { choices, notes, registry: registry.error ? [] : registry.entries }
}
