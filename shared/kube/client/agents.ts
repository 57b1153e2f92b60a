import { AgentSchema, type Agent, type AgentStatus } from '../../schemas/agent.js'
import { AgentAutonomyPolicySchema, type AgentAutonomyPolicy, type AgentAutonomyPolicyStatus } from '../../schemas/autonomypolicy.js'
import { API_GROUP, API_VERSION_NAME } from '../../schemas/labels.js'
import type { AgentPatch } from '../port.js'
import { itemsOf, MERGE_PATCH, parseAs, parseOrSkip, type KubeApi } from './kube-api.js'

const AGENTS = { group: API_GROUP, version: API_VERSION_NAME, plural: 'agents' }
const POLICIES = { group: API_GROUP, version: API_VERSION_NAME, plural: 'agentautonomypolicies' }

/** The port's verbs over Agents and the AgentAutonomyPolicies that govern them. */
export function agentVerbs(api: KubeApi) {
  return {
    async listAgents(namespace: string): Promise<Agent[]> {
      return api.listCustom(namespace, 'agents', AgentSchema)
    },

    async getAgent(namespace: string, name: string): Promise<Agent | null> {
      return api.getCustom(AGENTS, AgentSchema, 'Agent', namespace, name)
    },

    async listAllAgents(): Promise<Agent[]> {
      const list = await api.call(() => api.custom.listClusterCustomObject(AGENTS), 'list Agents')
      return itemsOf(list).flatMap((item) => parseOrSkip(AgentSchema, item))
    },

    async patchAgent(namespace: string, name: string, resourceVersion: string, patch: AgentPatch): Promise<Agent> {
      const body = { ...patch, metadata: { ...(patch.metadata ?? {}), resourceVersion } }
      const raw = await api.call(
        () => api.custom.patchNamespacedCustomObject({ ...AGENTS, namespace, name, body }, MERGE_PATCH),
        `patch Agent ${namespace}/${name}`,
      )
      return parseAs(AgentSchema, raw, `Agent ${namespace}/${name}`)
    },

    async replaceAgentStatus(namespace: string, name: string, resourceVersion: string, status: AgentStatus): Promise<Agent> {
      return api.replaceCustomStatus(AGENTS, AgentSchema, 'Agent', namespace, name, resourceVersion, status)
    },

    async listAutonomyPolicies(namespace?: string): Promise<AgentAutonomyPolicy[]> {
      const list = await api.call(
        () => (namespace ? api.custom.listNamespacedCustomObject({ ...POLICIES, namespace }) : api.custom.listClusterCustomObject(POLICIES)),
        `list AgentAutonomyPolicies${namespace ? ` in ${namespace}` : ''}`,
      )
      return itemsOf(list).flatMap((item) => parseOrSkip(AgentAutonomyPolicySchema, item))
    },

    async replaceAutonomyPolicyStatus(namespace: string, name: string, resourceVersion: string, status: AgentAutonomyPolicyStatus): Promise<AgentAutonomyPolicy> {
      return api.replaceCustomStatus(POLICIES, AgentAutonomyPolicySchema, 'AgentAutonomyPolicy', namespace, name, resourceVersion, status)
    },
  }
}
