import { describe, expect, it } from 'vitest'
import { allCrds } from '../../shared/crd/definitions.js'
import { validateAgainstCrd } from '../../shared/crd/validate.js'
import { UNCHANGED } from '../../shared/core/plan.js'
import { planMcpServer } from '../../shared/mcp/plan/plan.js'
import { deploymentManifest, registryEntry } from '../../shared/mcp/plan/workload.js'
import { MCPServerSchema } from '../../shared/schemas/mcpserver.js'
import { facts } from './fixtures.js'

const crd = allCrds().find((c) => c.spec.names.kind === 'MCPServer')!
const meta = { name: 'shop-search', namespace: 'mcp', uid: 'u', generation: 1, resourceVersion: '1' }

/** The MCPServers workload recipes write (spec §5.9), exactly as the table has them. */
const httpDelegated = {
  apiVersion: 'purko.io/v1alpha1', kind: 'MCPServer', metadata: meta,
  spec: { image: 'shop/search:2', port: 9000, managed: false, transport: 'http', url: 'http://shop-search.mcp.svc:9000/mcp', auth: 'bearer', secretRef: 'shop-search-mcp-token', category: 'recipe', icon: 'S' },
}
const stdioDelegated = {
  apiVersion: 'purko.io/v1alpha1', kind: 'MCPServer', metadata: meta,
  spec: {
    image: 'shop/fs:1', port: 8000, managed: true, transport: 'stdio', command: ['mcp-fs'], args: ['--root', '/data'],
    env: [{ name: 'MODE', value: 'ro' }, { name: 'API_KEY', valueFrom: { secretKeyRef: { name: 'shop-search-env', key: 'API_KEY', optional: false } } }],
    replicas: 1, resources: { requests: { cpu: '50m' }, limits: { memory: '256Mi' } },
    securityContext: { runAsUser: 10001, runAsGroup: 10001, fsGroup: 10001, addCapabilities: ['NET_BIND_SERVICE'] },
    auth: 'none', category: 'recipe',
  },
}

describe('the MCPServers of spec §5.9', () => {
  it.each([['http', httpDelegated], ['stdio', stdioDelegated]])('the CRD accepts the %s shape as written, adding only its defaults', (_, object) => {
    const result = validateAgainstCrd(crd, object)
    expect(result.ok ? result.object.spec : result).toEqual({ replicas: 1, hostNetwork: false, ...object.spec })
  })

  it.each([
    ['an unmanaged server without url', { image: 'i', managed: false }, 'an unmanaged MCPServer needs spec.url'],
    ['a url on a managed server', { image: 'i', url: 'http://x' }, 'spec.url is only for unmanaged MCPServers'],
    ['stdio without management', { image: 'i', managed: false, url: 'http://x', transport: 'stdio' }, 'stdio transport requires managed: true'],
    ['value and valueFrom together', { image: 'i', env: [{ name: 'A', value: 'v', valueFrom: { secretKeyRef: { name: 's', key: 'k' } } }] }, 'spec.env[].value and spec.env[].valueFrom are mutually exclusive'],
  ])('the CRD refuses %s with its message', (_, spec, message) => {
    const result = validateAgainstCrd(crd, { apiVersion: 'purko.io/v1alpha1', kind: 'MCPServer', metadata: { name: 'm' }, spec })
    expect(result.ok).toBe(false)
    expect(JSON.stringify(result)).toContain(message)
  })

  it('registers the http shape at its url and runs nothing', () => {
    const server = MCPServerSchema.parse(httpDelegated)
    const plan = planMcpServer(server, facts(), '2026-01-01T00:00:00.000Z')
    expect(plan).not.toBe(UNCHANGED)
    if (plan === UNCHANGED) return
    expect(plan.writes).toEqual([])
    expect(registryEntry(server)).toEqual({ name: 'shop-search', url: 'http://shop-search.mcp.svc:9000/mcp', auth: 'bearer', icon: 'S', category: 'recipe', secretRef: 'shop-search-mcp-token', namespace: 'mcp' })
  })

  it('runs the stdio shape with its command, env from the copied Secret and its security overrides', () => {
    const pod = deploymentManifest(MCPServerSchema.parse(stdioDelegated), 'kinetic').spec!.template.spec!
    const [server, bridge] = pod.containers
    expect(server).toMatchObject({ command: ['mcp-fs'], args: ['--root', '/data'], stdin: true, resources: { requests: { cpu: '50m' }, limits: { memory: '256Mi' } } })
    expect(server?.env).toEqual([{ name: 'MODE', value: 'ro' }, { name: 'API_KEY', valueFrom: { secretKeyRef: { name: 'shop-search-env', key: 'API_KEY', optional: false } } }])
    expect(server?.securityContext?.capabilities).toEqual({ drop: ['ALL'], add: ['NET_BIND_SERVICE'] })
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 10001, runAsGroup: 10001, fsGroup: 10001 })
    expect(bridge?.name).toBe('mcp-bridge')
  })
})
