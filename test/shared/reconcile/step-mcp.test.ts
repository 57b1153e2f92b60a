import { describe, expect, it } from 'vitest'
import { mcpToolWarning, wantedMcpName } from '../../../shared/reconcile/step-mcp.js'
import { AgentSchema } from '../../../shared/schemas/agent.js'

const agent = (tools: Array<Record<string, unknown>>) => AgentSchema.parse({
  apiVersion: 'purko.io/v1alpha1', kind: 'Agent', metadata: { name: 'a', namespace: 'team' }, spec: { model: { provider: 'p', name: 'm' }, tools },
})
const entry = (name: string) => ({ name, url: `http://${name}:8000`, auth: 'none' })
const WHERE = 'ai-agents/mcp-servers'

describe('mcpToolWarning', () => {
  it('reads the wanted name as the executor does: config.capability, else the tool name', () => {
    expect(wantedMcpName({ name: 'kubectl', config: { capability: 'list_pods' } })).toBe('list_pods')
    expect(wantedMcpName({ name: 'github' })).toBe('github')
  })

  it.each([
    ['an agent without mcp tools', agent([{ name: 'x', type: 'api' }]), [entry('docs')], new Map()],
    ['a registered server name', agent([{ name: 'docs', type: 'mcp' }]), [entry('docs')], new Map([['docs', []]])],
    ['a tool a registered server offers', agent([{ name: 'search', type: 'mcp' }]), [entry('docs')], new Map([['docs', ['search']]])],
    ['a name some registered server with unknown tools may offer', agent([{ name: 'search', type: 'mcp' }]), [entry('docs'), entry('external')], new Map([['docs', []]])],
  ])('no warning for %s', (_, a, registry, known) => {
    expect(mcpToolWarning(a, registry, undefined, known, WHERE)).toBeNull()
  })

  it('names every missing server or tool once and at most ten registered servers', () => {
    const registry = Array.from({ length: 12 }, (_, i) => entry(`s${i}`))
    const known = new Map(registry.map((e) => [e.name, [] as string[]]))
    const warning = mcpToolWarning(agent([{ name: 'github', type: 'mcp' }, { name: 'gh', type: 'mcp', config: { capability: 'github' } }, { name: 'jira', type: 'mcp' }]), registry, undefined, known, WHERE)
    expect(warning).toBe('Agent "a" names MCP server or tool "github", "jira", which no server of the registry ai-agents/mcp-servers offers '
      + '(it lists s0, s1, s2, s3, s4, s5, s6, s7, s8, s9 and 2 more); those tools are not available to the step')
  })

  it('an empty registry: every mcp tool is missing', () => {
    expect(mcpToolWarning(agent([{ name: 'github', type: 'mcp' }]), [], undefined, new Map(), WHERE)).toMatch(/"github", which no server .* \(it lists no servers\)/)
  })

  it('an unreadable registry is reported whatever the tools name', () => {
    expect(mcpToolWarning(agent([{ name: 'docs', type: 'mcp' }]), [], 'not YAML or JSON: x', new Map(), WHERE))
      .toBe('MCP registry ai-agents/mcp-servers cannot be read (not YAML or JSON: x): the step gets no MCP servers')
  })
})
