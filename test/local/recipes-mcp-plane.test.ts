// How the local plane runs the recipes MCP server from knative/ as shipped: its auth on the
// embedded API server (which serves no TokenReview) and against a cluster, and its
// registration for agents pointed at the local process.
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { loadKnativeManifests } from '../../local/knative/manifests.js'
import { CALLER_AUTH, callerAuthEnv } from '../../local/function-env.js'
import { localMcpServer } from '../../local/supporting-objects.js'
import { ROOT } from '../knative/manifests.js'

const manifests = loadKnativeManifests(join(ROOT, 'knative'), 'kinetic-system')
const literalEnv = (name: string) => Object.fromEntries(
  ((manifests.services.find((m) => m.metadata.name === name)!.spec as { template: { spec: { containers: Array<{ env: Array<{ name: string; value?: string }> }> } } })
    .template.spec.containers[0]!.env).flatMap((e) => (e.value === undefined ? [] : [[e.name, e.value]])),
)

describe('recipes-mcp on the local plane', () => {
  it('checks no token on the embedded API server, and keeps the Service\'s kubernetes auth against a cluster', () => {
    const env = literalEnv('recipes-mcp')
    expect(env[CALLER_AUTH]).toBe('kubernetes')
    expect(callerAuthEnv(env, false)).toEqual({ [CALLER_AUTH]: 'none' })
    expect(callerAuthEnv(env, true)).toEqual({})
  })

  it('changes nothing for a function that does not check callers', () => {
    expect(callerAuthEnv(literalEnv('workflow-changed'), false)).toEqual({})
  })

  it('registers MCPServer ai-agents/recipes at the local function, without a token', () => {
    const server = manifests.others.find((m) => m.kind === 'MCPServer' && m.metadata.name === 'recipes')!
    const local = localMcpServer(server, (svc, ns) => (svc === 'recipes-mcp' && ns === 'kinetic-system' ? 'http://127.0.0.1:4321' : undefined))
    expect(local).toMatchObject({
      apiVersion: 'purko.io/v1alpha1', kind: 'MCPServer', metadata: { name: 'recipes', namespace: 'ai-agents' },
      spec: { managed: false, transport: 'http', url: 'http://127.0.0.1:4321/mcp', auth: 'none' },
    })
    expect(local!.spec).not.toHaveProperty('secretRef')
    // The shipped object is left as it is for a cluster.
    expect(server.spec).toMatchObject({ url: 'http://recipes-mcp.kinetic-system.svc.cluster.local/mcp', auth: 'bearer', secretRef: 'recipes-mcp-token' })
  })

  it('leaves alone an MCPServer whose url is not one of the local functions', () => {
    const server = manifests.others.find((m) => m.kind === 'MCPServer')!
    const elsewhere = { ...server, spec: { ...server.spec, url: 'https://tools.example.internal/mcp' } }
    expect(localMcpServer(elsewhere, () => 'http://127.0.0.1:1')).toBeNull()
    expect(localMcpServer(server, () => undefined)).toBeNull()
    expect(localMcpServer({ ...server, spec: { ...server.spec, managed: true } }, () => 'http://127.0.0.1:1')).toBeNull()
  })
})
