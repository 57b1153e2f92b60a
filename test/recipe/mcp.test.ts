// spec §5.9 MCP delegation: the MCPServer of http and stdio workloads, field by field.
import { describe, expect, it } from 'vitest'
import { MCPServerSpecSchema } from '../../shared/schemas/mcpserver.js'
import { mcpServerManifest } from '../../shared/recipe/plan/mcp.js'
import { RECIPE, rendered } from './manifest-fixtures.js'

type Obj = Record<string, any>
const mcp = (fields: Record<string, unknown>): Obj => mcpServerManifest(RECIPE, rendered({ name: 'tools', kind: 'Deployment', image: 'mcp/x:1', ...fields }), 2) as Obj

describe('transport: http (Kinetic runs the server)', () => {
  const m = mcp({ ports: [{ name: 'mcp', port: 3001 }], transport: 'http', mcp: { path: '/mcp', category: 'testing' },
    command: ['node'], env: [{ name: 'PORT', value: '3001' }], security: { runAsUser: 1000 }, resources: { limits: { memory: '256Mi' } } })

  it('registers an unmanaged MCPServer with the Service URL and nothing of the pod', () => {
    expect(m.apiVersion).toBe('purko.io/v1alpha1')
    expect(m.metadata.name).toBe('recipes-demo-shop-tools-fa0caeae')
    expect(m.metadata.namespace).toBe('mcp-server')
    expect(m.metadata.labels['purko.io/component']).toBe('mcpserver')
    expect(m.metadata.labels['purko.io/workload']).toBe('tools')
    expect(m.spec).toEqual({
      image: 'mcp/x:1', port: 3001, managed: false, transport: 'http',
      url: 'http://recipes-demo-shop-tools-fa0caeae.mcp-server.svc:3001/mcp', auth: 'none', category: 'testing',
    })
  })

  it.each([
    ['port defaults to the first port, path to /mcp, category to recipe', { ports: [{ name: 'a', port: 8080 }, { name: 'b', port: 9090 }], transport: 'http' },
      { port: 8080, url: 'http://recipes-demo-shop-tools-fa0caeae.mcp-server.svc:8080/mcp', category: 'recipe' }],
    ['mcp.port and path chosen', { ports: [{ name: 'a', port: 8080 }, { name: 'b', port: 9090 }], transport: 'http', mcp: { port: 9090, path: '/rpc', icon: '🛠' } },
      { port: 9090, url: 'http://recipes-demo-shop-tools-fa0caeae.mcp-server.svc:9090/rpc', icon: '🛠' }],
    ['bearer auth points at the copied token', { ports: [{ name: 'a', port: 8080 }], transport: 'http', mcp: { auth: 'bearer', tokenSecret: { secretName: 's', key: 'k' } } },
      { auth: 'bearer', secretRef: 'recipes-demo-shop-tools-fa0caeae-mcp-token' }],
  ])('%s', (_label, fields, expected) => {
    expect(mcp(fields).spec).toMatchObject(expected)
  })
})

describe('transport: stdio (the MCPServer controller runs it)', () => {
  const m = mcp({
    transport: 'stdio', replicas: 2, command: ['uvx'], args: ['mcp-server-time', '--local-timezone=UTC'],
    env: [{ name: 'A', value: '1' }], envSecret: [{ name: 'KEY', secretName: 'k', key: 'api-key', optional: true }],
    security: { runAsUser: 65532, runAsGroup: 65532, fsGroup: 65532, addCapabilities: ['NET_BIND_SERVICE'], readOnlyRootFilesystem: true },
    resources: { requests: { cpu: '20m' }, limits: { memory: '128Mi' } }, mcp: { category: 'utilities' },
  })

  it('writes a managed stdio MCPServer with the pod fields of the table', () => {
    expect(m.spec).toEqual({
      image: 'mcp/x:1', port: 8000, managed: true, transport: 'stdio',
      command: ['uvx'], args: ['mcp-server-time', '--local-timezone=UTC'],
      env: [{ name: 'A', value: '1' }, { name: 'KEY', valueFrom: { secretKeyRef: { name: 'recipes-demo-shop-tools-fa0caeae-env', key: 'KEY', optional: true } } }],
      replicas: 2,
      resources: { requests: { cpu: '20m' }, limits: { memory: '128Mi' } },
      securityContext: { runAsUser: 65532, runAsGroup: 65532, fsGroup: 65532, addCapabilities: ['NET_BIND_SERVICE'] },
      auth: 'none', category: 'utilities',
    })
  })

  it('defaults: port 8000, replicas 1, no securityContext without security', () => {
    const d = mcp({ transport: 'stdio' })
    expect(d.spec).toEqual({ image: 'mcp/x:1', port: 8000, managed: true, transport: 'stdio', replicas: 1, auth: 'none', category: 'recipe' })
  })

  it('both forms pass the MCPServer schema (hostNetwork stays unset)', () => {
    for (const spec of [m.spec, mcp({ ports: [{ name: 'a', port: 1 }], transport: 'http' }).spec]) {
      expect(MCPServerSpecSchema.safeParse(spec).success).toBe(true)
      expect(spec.hostNetwork).toBeUndefined()
    }
  })

  it('no transport, no MCPServer', () => {
    expect(mcpServerManifest(RECIPE, rendered({ name: 'w', kind: 'Deployment', image: 'i' }), 1)).toBeUndefined()
  })
})
