import { describe, expect, it } from 'vitest'
import { mcpServersPage } from '../../../shared/console/pages/mcpservers.js'
import { ForbiddenError } from '../../../shared/core/errors.js'
import type { MCPServer } from '../../../shared/schemas/mcpserver.js'
import { EmbeddedKube } from '../../support/embedded-kube.js'
import { requestFor, rowsOf, textOf } from './support.js'

function server(name: string, namespace: string, status: MCPServer['status']): MCPServer {
  return {
    apiVersion: 'purko.io/v1alpha1', kind: 'MCPServer',
    metadata: { name, namespace },
    spec: { image: 'example/mcp:1', port: 8000, replicas: 1, auth: 'none', hostNetwork: false, managed: true, transport: 'http' },
    ...(status ? { status } : {}),
  }
}

function kubeWith(servers: MCPServer[]): EmbeddedKube {
  const kube = new EmbeddedKube()
  for (const s of servers) kube.mcpServers.set(`${s.metadata.namespace}/${s.metadata.name}`, structuredClone(s))
  return kube
}

describe('the MCP servers page', () => {
  it('shows each server with its phase, tools and their descriptions, last discovery and conditions', async () => {
    const kube = kubeWith([
      server('search', 'team-a', {
        phase: 'Ready', toolCount: 2, lastDiscovery: '2026-12-01T11:50:00Z', url: 'http://search.team-a.svc:8000/mcp',
        tools: [{ name: 'find', description: 'Finds documents by <keyword>', readOnly: true }, { name: 'index', description: 'Adds a document' }],
        conditions: [{ type: 'Ready', status: 'True', reason: 'ToolsDiscovered', message: '2 tools', lastTransitionTime: '2026-12-01T11:50:00Z' }],
      }),
      server('broken', 'team-b', { phase: 'Error', message: 'Deployment has no ready pod' }),
    ])
    const page = await mcpServersPage(requestFor(kube, '/mcpservers'))
    expect(page.nav).toBe('mcpservers')
    expect(rowsOf(page.body, 'MCP servers')).toEqual([
      ['search', 'team-a', 'Ready', '2', 'Waiting', '10 min ago'],
      ['broken', 'team-b', 'Error', '0', 'Waiting', ''],
    ])
    expect(rowsOf(page.body, 'Tools of search')).toEqual([
      ['find', 'Finds documents by <keyword>', 'no (read only)'],
      ['index', 'Adds a document', 'not said'],
    ])
    expect(page.body.html).toContain('<span class="badge phase-Failed">Error</span>')
    const text = textOf(page.body)
    expect(text).toContain('Endpoint http://search.team-a.svc:8000/mcp')
    expect(text).toContain('Deployment has no ready pod')
    expect(text).toContain('No tools discovered yet.')
    expect(rowsOf(page.body, 'Conditions')[0]!.slice(0, 3)).toEqual(['Ready', 'True', 'ToolsDiscovered'])
  })

  it('shows a running server whose tools cannot be listed as Ready, with what discovery found and why', async () => {
    const kube = kubeWith([
      server('tickets', 'team-a', {
        phase: 'Ready', toolCount: 0, tools: [], message: 'Deployment and Service created, registered in mcp-servers ConfigMap',
        conditions: [
          { type: 'Ready', status: 'True', reason: 'Deployed', message: 'Deployment and Service created, registered in mcp-servers ConfigMap', lastTransitionTime: '2026-12-01T11:50:00Z' },
          { type: 'ToolsDiscovered', status: 'False', reason: 'Unauthorized', message: 'the server answered 401', lastTransitionTime: '2026-12-01T11:50:00Z' },
        ],
      }),
      server('search', 'team-a', {
        phase: 'Ready', toolCount: 2,
        conditions: [{ type: 'ToolsDiscovered', status: 'True', reason: 'Discovered', message: '2 tools over Streamable HTTP', lastTransitionTime: '2026-12-01T11:50:00Z' }],
      }),
    ])
    const page = await mcpServersPage(requestFor(kube, '/mcpservers'))
    expect(rowsOf(page.body, 'MCP servers').map((r) => r.slice(0, 5))).toEqual([
      ['search', 'team-a', 'Ready', '2', 'Listed'],
      ['tickets', 'team-a', 'Ready', '0', 'Unauthorized'],
    ])
    expect(page.body.html).toContain('<span class="badge phase-Waiting">Unauthorized</span>')
    const text = textOf(page.body)
    expect(text).toContain('Tool discovery Unauthorized the server answered 401')
    expect(text).toContain('The server runs, but its tools could not be listed (Unauthorized): the server answered 401')
    expect(text).toContain('Tool discovery Listed 2 tools over Streamable HTTP')
  })

  it('reads the configured namespaces when the list across namespaces is refused', async () => {
    const kube = kubeWith([server('search', 'team-a', { phase: 'Ready' }), server('hidden', 'other', { phase: 'Ready' })])
    kube.failNext('listAllMCPServers', new ForbiddenError('cannot list resource "mcpservers"'))
    const page = await mcpServersPage(requestFor(kube, '/mcpservers'))
    expect(rowsOf(page.body, 'MCP servers').map((r) => r[0])).toEqual(['search'])
  })

  it('says when there are none', async () => {
    expect(textOf((await mcpServersPage(requestFor(new EmbeddedKube(), '/mcpservers'))).body)).toContain('No MCP servers to show.')
  })
})
