import { describe, expect, it } from 'vitest'
import type { RegistryEntry } from '../../shared/mcp/plan/registry.js'
import { parseSharedNamespaces, precedence, seenTogether, stepMcpView, type McpVisibility } from '../../shared/mcp/plan/visibility.js'
import { readRuntimeConfig } from '../../shared/config.js'

const AGENTS = 'ai-agents'
const vis = (...shared: string[]): McpVisibility => ({ agentNamespace: AGENTS, shared })
const entry = (name: string, namespace?: string, url = `http://${name}.${namespace ?? AGENTS}.svc:8000/mcp`): RegistryEntry =>
  ({ name, url, auth: 'none', ...(namespace ? { namespace } : {}) })
const names = (view: ReturnType<typeof stepMcpView>) => view.servers.map((s) => `${s.namespace}/${s.entry.name}`)

describe('which MCP servers a step sees', () => {
  const platform = entry('recipes', AGENTS)
  const impostor = entry('recipes', 'evil', 'https://attacker.example/mcp')

  it("a server of another namespace is invisible: the impostor of issue 27 reaches no step but its own namespace's", () => {
    expect(names(stepMcpView([platform, impostor], 'team', vis()))).toEqual(['ai-agents/recipes'])
    expect(names(stepMcpView([platform, impostor], AGENTS, vis()))).toEqual(['ai-agents/recipes'])
    expect(stepMcpView([platform, impostor], 'team', vis()).unseen.map((u) => u.namespace)).toEqual(['evil'])
  })

  it("a step's own namespace wins over the agent namespace, which wins over shared namespaces; the winner comes last so its tools win too", () => {
    const registry = [entry('github', 'team'), entry('github'), entry('github', 'mcp-server'), entry('docs', 'mcp-server'), entry('search')]
    const view = stepMcpView(registry, 'team', vis('mcp-server'))
    expect(names(view)).toEqual(['mcp-server/docs', 'ai-agents/search', 'team/github'])
    expect(view.shadowed).toEqual([{ name: 'github', used: 'team', hidden: [AGENTS, 'mcp-server'] }])
    expect(names(stepMcpView(registry, 'other', vis('mcp-server')))).toEqual(['mcp-server/docs', 'ai-agents/github', 'ai-agents/search'])
  })

  it("sees the shared namespaces in the administrator's order, `{namespace}` patterns and `*` included", () => {
    expect(precedence('mcp-team', 'team', vis('mcp-{namespace}'))).toBe(2)
    expect(precedence('mcp-other', 'team', vis('mcp-{namespace}'))).toBeNull()
    expect(precedence('anything', 'team', vis('tools', '*'))).toBe(3)
    expect(precedence('tools', 'team', vis('tools', '*'))).toBe(2)
    expect(precedence('team', 'team', vis('*'))).toBe(0)
    expect(precedence(AGENTS, 'team', vis())).toBe(1)
    const view = stepMcpView([entry('a', 'second'), entry('a', 'first')], 'team', vis('first', 'second'))
    expect(names(view)).toEqual(['first/a'])
  })

  it('keeps the first of two entries of one name in the same namespace, as before', () => {
    const view = stepMcpView([entry('a', 'team', 'http://one'), entry('a', 'team', 'http://two')], 'team', vis())
    expect(view.servers.map((s) => s.entry.url)).toEqual(['http://one'])
    expect(view.shadowed).toEqual([])
  })

  it('tells whether some step sees two namespaces together', () => {
    expect(seenTogether('evil', AGENTS, vis())).toBe(true) // a step in evil sees both
    expect(seenTogether('team-a', 'team-b', vis())).toBe(false)
    expect(seenTogether('team-a', 'mcp-server', vis('mcp-server'))).toBe(true)
    expect(seenTogether('mcp-team-a', 'team-a', vis('mcp-{namespace}'))).toBe(true)
    expect(seenTogether('mcp-team-a', 'team-b', vis('mcp-{namespace}'))).toBe(false)
    expect(seenTogether('team-a', 'team-b', vis('*'))).toBe(true)
  })

  it('reads KINETIC_MCP_SHARED_NAMESPACES (empty by default) and refuses what is no namespace pattern', () => {
    expect(readRuntimeConfig({}).mcpSharedNamespaces).toEqual([])
    expect(readRuntimeConfig({ KINETIC_MCP_SHARED_NAMESPACES: ' mcp-server, mcp-{namespace} ,*,mcp-server' }).mcpSharedNamespaces)
      .toEqual(['mcp-server', 'mcp-{namespace}', '*'])
    expect(() => parseSharedNamespaces('Team_A')).toThrow(/KINETIC_MCP_SHARED_NAMESPACES: "Team_A" is not a namespace name/)
  })
})
