/**
 * MCP delegation (spec §5.9, settings §2.11): the MCPServer `base(w)` a `transport`
 * workload registers, in the MCP namespace, with exactly the spec fields of the table.
 * `http`: Kinetic runs the server (`managed: false`, `url` set, written once Ready); `stdio`:
 * the MCPServer controller runs it (`managed: true`, command/args/env/replicas/resources/
 * securityContext). Pure.
 */
import { API_VERSION } from '../../schemas/labels.js'
import { workloadRelatedLabels, type RecipeRef } from './labels.js'
import { envSecretName, mcpServerName, mcpTokenSecretName } from './names.js'
import { childMeta, type Manifest, type WorkloadSource } from './objects.js'
import { compact, containerEnv, resourcesOf } from './pod-template.js'

/** Default `mcp.port` of a `stdio` workload (the bridge's HTTP port). */
export const DEFAULT_STDIO_MCP_PORT = 8000
/** Default `mcp.path`. */
export const DEFAULT_MCP_PATH = '/mcp'
/** Default `mcp.category`. */
export const DEFAULT_MCP_CATEGORY = 'recipe'

/** `mcp.port`: as set, else `http`: the first port's `port`, `stdio`: 8000. */
export function mcpPortOf(w: Pick<WorkloadSource, 'transport' | 'mcp' | 'ports'>): number {
  if (w.mcp?.port !== undefined) return w.mcp.port
  if (w.transport === 'http') return w.ports?.[0]?.port ?? DEFAULT_STDIO_MCP_PORT
  return DEFAULT_STDIO_MCP_PORT
}

/** `mcp.path` (`/mcp` by default; always `/mcp` for `stdio`). */
export function mcpPathOf(w: Pick<WorkloadSource, 'transport' | 'mcp'>): string {
  return w.transport === 'http' ? (w.mcp?.path ?? DEFAULT_MCP_PATH) : DEFAULT_MCP_PATH
}

/** The MCP endpoint: `http://base(w).<ns>.svc:<mcp.port><mcp.path>`. */
export function mcpUrlOf(w: Pick<WorkloadSource, 'transport' | 'mcp' | 'ports' | 'base' | 'namespace'>): string {
  return mcpEndpoint(w.base, w.namespace, mcpPortOf(w), mcpPathOf(w))
}

/** `http://<name>.<namespace>.svc:<port><path>`: an MCP endpoint behind a Service of that name. */
export function mcpEndpoint(name: string, namespace: string, port: number, path = DEFAULT_MCP_PATH): string {
  return `http://${name}.${namespace}.svc:${port}${path}`
}

/**
 * The endpoint of the MCPServer a workload registers (from the manifest Kinetic wrote): `spec.url`
 * for `http`; for `stdio` the bridge the MCPServer controller runs, which serves `/mcp` on
 * `spec.port` behind the Service `base(w)`. Undefined when the manifest says neither.
 */
export function mcpServerEndpoint(name: string, namespace: string, spec: { url?: unknown; transport?: unknown; port?: unknown }): string | undefined {
  if (typeof spec.url === 'string' && spec.url !== '') return spec.url
  if (spec.transport !== 'stdio') return undefined
  return mcpEndpoint(name, namespace, typeof spec.port === 'number' ? spec.port : DEFAULT_STDIO_MCP_PORT)
}

/** The desired MCPServer of a `transport` workload (without digest), or undefined without `transport`. */
export function mcpServerManifest(recipe: RecipeRef, w: WorkloadSource, revision: number): Manifest | undefined {
  if (!w.transport) return undefined
  const auth = w.mcp?.auth ?? 'none'
  const shared = {
    auth,
    secretRef: auth === 'bearer' ? mcpTokenSecretName(w.base) : undefined,
    category: w.mcp?.category ?? DEFAULT_MCP_CATEGORY,
    icon: w.mcp?.icon,
  }
  let spec: Record<string, unknown>
  if (w.transport === 'http') {
    spec = compact({
      image: w.image,
      port: mcpPortOf(w),
      managed: false,
      transport: 'http',
      url: mcpUrlOf(w),
      ...shared,
    })
  } else {
    const env = containerEnv(w, envSecretName(w.base))
    const s = w.security
    const securityContext = s ? compact({
      runAsUser: s.runAsUser,
      runAsGroup: s.runAsGroup,
      fsGroup: s.fsGroup,
      addCapabilities: s.addCapabilities && s.addCapabilities.length > 0 ? [...s.addCapabilities] : undefined,
    }) : undefined
    spec = compact({
      image: w.image,
      port: mcpPortOf(w),
      managed: true,
      transport: 'stdio',
      command: w.command && w.command.length > 0 ? [...w.command] : undefined,
      args: w.args && w.args.length > 0 ? [...w.args] : undefined,
      env: env.length > 0 ? env : undefined,
      replicas: w.replicas ?? 1,
      resources: resourcesOf(w.resources),
      securityContext: securityContext && Object.keys(securityContext).length > 0 ? securityContext : undefined,
      ...shared,
    })
  }
  return {
    apiVersion: API_VERSION,
    kind: 'MCPServer',
    metadata: childMeta(recipe, mcpServerName(w.base), w.namespace, workloadRelatedLabels(recipe, 'mcpserver', w.name, revision)),
    spec,
  }
}
