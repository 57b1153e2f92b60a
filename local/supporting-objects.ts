import type { Logger } from '../shared/log.js'
import type { LocalFunction } from './function-process.js'
import type { KubeHttp, KubeObject } from './knative/kube-http.js'
import type { Manifest } from './knative/manifests.js'

/**
 * What the local plane installs from knative/ besides the Knative objects it emulates: the
 * Namespaces, ServiceAccounts and RBAC, and on the embedded API server the MCPServer
 * registrations of our own functions, pointed at their local processes.
 */

// What the plane installs from knative/ besides the Knative objects it emulates.
const SUPPORTING_KINDS = new Set(['Namespace', 'ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding'])

// Namespaces, ServiceAccounts and RBAC from knative/: on the embedded server so kubectl shows
// what a cluster would have, on a cluster because the functions run as those ServiceAccounts
// (there a failure is an error: a function without its RBAC cannot work).
export async function applySupportingObjects(kube: KubeHttp, others: Manifest[], log: Logger, strict: boolean): Promise<void> {
  const wanted = others.filter((o) => SUPPORTING_KINDS.has(o.kind))
  // On the embedded server an MCPServer registering one of our functions is installed once that
  // function runs (registerLocalMcpServers), without the ServiceAccount token Secret it names on a
  // cluster (the embedded server has no token controller to fill one).
  const later = (o: Manifest) => !strict && (o.kind === 'MCPServer' || (o.kind === 'Secret' && o.raw.type === 'kubernetes.io/service-account-token'))
  for (const o of others) if (!SUPPORTING_KINDS.has(o.kind) && !later(o)) log.warn({ kind: o.kind, name: o.metadata.name, file: o.file }, 'Not installing an object of knative/ the local plane does not handle')
  const ordered = [...wanted].sort((a, b) => Number(b.kind === 'Namespace') - Number(a.kind === 'Namespace'))
  const namespaces = new Set(wanted.filter((o) => o.kind !== 'Namespace' && !o.kind.startsWith('Cluster')).map((o) => o.metadata.namespace))
  for (const ns of namespaces) {
    if (!ordered.some((o) => o.kind === 'Namespace' && o.metadata.name === ns)) {
      const raw = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } }
      ordered.unshift({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns, namespace: '' }, spec: {}, file: '', raw })
    }
  }
  for (const m of ordered) {
    const obj = { ...m.raw } as KubeObject
    // Cluster-scoped: the namespace filled in by the loader does not apply.
    if (m.kind === 'Namespace' || m.kind.startsWith('Cluster')) {
      const { namespace: _ns, ...meta } = (obj.metadata ?? {}) as Record<string, unknown>
      obj.metadata = meta as KubeObject['metadata']
    }
    try {
      await kube.apply(obj)
    } catch (err) {
      if (strict) throw new Error(`Could not apply ${m.kind} ${m.metadata.name} from knative/${m.file}: ${err instanceof Error ? err.message : String(err)}`)
      const unsupported = err instanceof Error && /does not serve/.test(err.message)
      log[unsupported ? 'debug' : 'warn']({ kind: m.kind, name: m.metadata.name, err: String(err) }, 'Could not apply an object from knative/')
    }
  }
  log.info({ objects: ordered.map((m) => `${m.kind}/${m.metadata.name}`) }, 'Installed the supporting objects of knative/')
}

/** `http://<service>.<namespace>.svc.cluster.local[:port]/<path>` -> the Service, or null. */
function clusterLocalService(url: string): { name: string; namespace: string; path: string } | null {
  const m = /^http:\/\/([a-z0-9-]+)\.([a-z0-9-]+)\.svc\.cluster\.local(?::\d+)?(\/.*)?$/.exec(url)
  return m ? { name: m[1] as string, namespace: m[2] as string, path: m[3] ?? '' } : null
}

/**
 * Pure: an unmanaged MCPServer of knative/ whose url is one of our Knative Services (the
 * recipes MCP server's registration, platform/recipes-mcp.yaml), pointed at that function's
 * local process instead. The local function checks no token (auth `none`, above), so the
 * registration needs none either: no Secret holds a ServiceAccount token on the embedded server.
 */
export function localMcpServer(m: Manifest, functionUrl: (service: string, namespace: string) => string | undefined): KubeObject | null {
  const spec = m.spec as { managed?: boolean; url?: string; auth?: string; secretRef?: string }
  if (m.kind !== 'MCPServer' || spec.managed !== false || !spec.url) return null
  const target = clusterLocalService(spec.url)
  const base = target ? functionUrl(target.name, target.namespace) : undefined
  if (!target || !base) return null
  const { secretRef: _secret, ...rest } = spec
  return { ...m.raw, spec: { ...rest, url: `${base}${target.path}`, auth: 'none' } } as KubeObject
}

// The embedded plane serves the recipes MCP server on 127.0.0.1; its registration in knative/
// names the in-cluster address, so it is installed with the local one (agents' steps run here too).
export async function registerLocalMcpServers(kube: KubeHttp, others: Manifest[], functions: Map<string, LocalFunction>, log: Logger): Promise<void> {
  const urlOf = (service: string, namespace: string) => (namespace === 'kinetic-system' ? functions.get(service)?.url : undefined)
  for (const m of others) {
    const local = localMcpServer(m, urlOf)
    if (!local) continue
    try {
      await kube.apply(local)
      log.info({ mcpServer: `${m.metadata.namespace}/${m.metadata.name}`, url: (local.spec as { url: string }).url }, 'Registered a local MCP server from knative/')
    } catch (err) {
      log.warn({ mcpServer: `${m.metadata.namespace}/${m.metadata.name}`, err: String(err) }, 'Could not register a local MCP server from knative/')
    }
  }
}
