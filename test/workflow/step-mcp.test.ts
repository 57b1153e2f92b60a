import { describe, expect, it } from 'vitest'
import type { RegistryEntry } from '../../shared/mcp/plan/registry.js'
import { stepMcpView } from '../../shared/mcp/plan/visibility.js'
import { mcpToolWarning, wantedMcpName } from '../../shared/workflow/plan/step-mcp.js'
import { AgentSchema } from '../../shared/schemas/agent.js'

const agent = (tools: Array<Record<string, unknown>>) => AgentSchema.parse({
  apiVersion: 'purko.io/v1alpha1', kind: 'Agent', metadata: { name: 'a', namespace: 'team' }, spec: { model: { provider: 'p', name: 'm' }, tools },
})
const entry = (name: string, extra: Partial<RegistryEntry> = {}): RegistryEntry => ({ name, url: `http://${name}:8000`, auth: 'none', ...extra })
const WHERE = 'ai-agents/mcp-servers'
const VIS = { agentNamespace: 'ai-agents', shared: [] }
const view = (registry: RegistryEntry[]) => stepMcpView(registry, 'team', VIS)
const warn = (a: ReturnType<typeof agent>, registry: RegistryEntry[], known: Map<string, string[]>, error?: string) =>
  mcpToolWarning(a, 'team', view(registry), error, known, WHERE)

describe('mcpToolWarning', () => {
  it('reads the wanted name as the executor does: config.capability, else the tool name', () => {
    expect(wantedMcpName({ name: 'kubectl', config: { capability: 'list_pods' } })).toBe('list_pods')
    expect(wantedMcpName({ name: 'github' })).toBe('github')
  })

  it.each([
    ['an agent without mcp tools', agent([{ name: 'x', type: 'api' }]), [entry('docs')], new Map()],
    ['a registered server name', agent([{ name: 'docs', type: 'mcp' }]), [entry('docs')], new Map([['ai-agents/docs', []]])],
    ['a tool a registered server offers', agent([{ name: 'search', type: 'mcp' }]), [entry('docs')], new Map([['ai-agents/docs', ['search']]])],
    ['a name some registered server with unknown tools may offer', agent([{ name: 'search', type: 'mcp' }]), [entry('docs'), entry('external')], new Map([['ai-agents/docs', []]])],
  ])('no warning for %s', (_, a, registry, known) => {
    expect(warn(a, registry, known)).toBeNull()
  })

  it('names every missing server or tool once and at most ten usable servers', () => {
    const registry = Array.from({ length: 12 }, (_, i) => entry(`s${i}`))
    const known = new Map(registry.map((e) => [`ai-agents/${e.name}`, [] as string[]]))
    const warning = warn(agent([{ name: 'github', type: 'mcp' }, { name: 'gh', type: 'mcp', config: { capability: 'github' } }, { name: 'jira', type: 'mcp' }]), registry, known)
    expect(warning).toBe('Agent "a" names MCP server or tool "github", "jira", which no server of the registry ai-agents/mcp-servers that this step may use offers '
      + '(it may use s0, s1, s2, s3, s4, s5, s6, s7, s8, s9 and 2 more); those tools are not available to the step')
  })

  it('an empty registry: every mcp tool is missing', () => {
    expect(warn(agent([{ name: 'github', type: 'mcp' }]), [], new Map())).toMatch(/"github", which no server .* \(it may use none\)/)
  })

  it('an unreadable registry is reported whatever the tools name', () => {
    expect(warn(agent([{ name: 'docs', type: 'mcp' }]), [], new Map(), 'not YAML or JSON: x'))
      .toBe('MCP registry ai-agents/mcp-servers cannot be read (not YAML or JSON: x): the step gets no MCP servers')
  })

  it('says when a wanted server is registered only in a namespace the step does not see', () => {
    expect(warn(agent([{ name: 'jira', type: 'mcp' }]), [entry('jira', { namespace: 'other' })], new Map())).toBe(
      'Agent "a" names MCP server or tool "jira", which no server of the registry ai-agents/mcp-servers that this step may use offers (it may use none); '
      + '"jira" of namespace other is registered, but a step in team only sees servers of its own namespace, the agent namespace and '
      + 'KINETIC_MCP_SHARED_NAMESPACES; those tools are not available to the step')
  })

  it('says which namespace a shadowed wanted server comes from, and that a bearer server of another namespace gets no token', () => {
    const registry = [entry('github', { auth: 'bearer', secretRef: 't' }), entry('github', { namespace: 'team' }), entry('recipes', { auth: 'bearer', secretRef: 'recipes-mcp-token' })]
    const known = new Map([['team/github', []], ['ai-agents/recipes', []]])
    expect(warn(agent([{ name: 'github', type: 'mcp' }, { name: 'recipes', type: 'mcp' }]), registry, known)).toBe(
      'MCP server "github" is registered in namespaces team, ai-agents; this step uses the one of team; '
      + 'MCP server "recipes" of namespace ai-agents gets no bearer token from a step in team: a token is only read from a Secret of the '
      + "step's own namespace, for a server an MCPServer of that namespace registers")
  })
})
