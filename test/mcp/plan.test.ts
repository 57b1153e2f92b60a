import type { V1Deployment } from '@kubernetes/client-node'
import { describe, expect, it } from 'vitest'
import { UNCHANGED } from '../../shared/core/plan.js'
import {
  mcpServerIsDue, planMcpServer, planMcpStatus, type McpOutcome, type McpPlan,
} from '../../shared/mcp/plan/plan.js'
import { renderRegistry } from '../../shared/mcp/plan/registry.js'
import { deploymentManifest, registryEntry, serviceManifest } from '../../shared/mcp/plan/workload.js'
import type { MCPServer } from '../../shared/schemas/mcpserver.js'
import { aPod, aServer, availableDeployment, facts, githubExample, NOW, registryMap } from './fixtures.js'

const later = (minutes: number) => new Date(Date.parse(NOW) + minutes * 60_000).toISOString()
const owner = { apiVersion: 'purko.io/v1alpha1', kind: 'MCPServer', name: 'github', uid: 'uid-github', controller: true, blockOwnerDeletion: true }
const condition = (status: MCPServer['status'], type: string) => status?.conditions?.find((c) => c.type === type)
const withFinalizer = (server: MCPServer): MCPServer => ({ ...server, metadata: { ...server.metadata, finalizers: ['purko.io/mcpserver-finalizer'] } })
const planned = (server: MCPServer, f = facts(), now = NOW): McpPlan => {
  const plan = planMcpServer(server, f, now)
  if (plan === UNCHANGED) throw new Error('expected a plan')
  return plan
}

describe('the Deployment of an MCPServer (as purko\'s controller makes it)', () => {
  it("runs purko's github example as purko does: host network, no ports, the token by secretKeyRef, its resources", () => {
    const d = deploymentManifest(githubExample(), 'kinetic:test')
    expect(d.metadata).toEqual({
      name: 'github', namespace: 'ai-agents',
      labels: { 'app.kubernetes.io/name': 'github', 'app.kubernetes.io/part-of': 'purko', 'purko.io/mcp-server': 'github' },
      ownerReferences: [owner],
    })
    expect(d.spec?.replicas).toBe(1)
    expect(d.spec?.selector).toEqual({ matchLabels: { 'purko.io/mcp-server': 'github' } })
    expect(d.spec?.template.metadata?.labels).toEqual({ 'purko.io/mcp-server': 'github' })
    const pod = d.spec!.template.spec!
    expect(pod.hostNetwork).toBe(true)
    expect(pod.dnsPolicy).toBe('Default')
    expect(pod.containers).toHaveLength(1)
    const c = pod.containers[0]!
    expect(c).toMatchObject({ name: 'mcp-server', image: 'ghcr.io/github/github-mcp-server:latest', imagePullPolicy: 'IfNotPresent', args: ['http', '--port', '8002', '--toolsets', 'all'] })
    expect(c.ports).toBeUndefined()
    expect(c.env).toEqual([
      { name: 'AUTH_TOKEN', valueFrom: { secretKeyRef: { name: 'github-mcp-token', key: 'token', optional: true } } },
      { name: 'GITHUB_PERSONAL_ACCESS_TOKEN', valueFrom: { secretKeyRef: { name: 'github-mcp-token', key: 'token', optional: true } } },
    ])
    expect(c.resources).toEqual({ requests: { memory: '128Mi', cpu: '50m' }, limits: { memory: '256Mi', cpu: '200m' } })
  })

  it('registers the github example at http://localhost:8002 with its icon, category and secretRef', () => {
    expect(registryEntry(githubExample())).toEqual({ name: 'github', url: 'http://localhost:8002', auth: 'bearer', icon: '\u{1F419}', category: 'code', secretRef: 'github-mcp-token', namespace: 'ai-agents' })
  })

  it('gives a ClusterIP server its container port, a Service and the cluster DNS URL', () => {
    const server = aServer({ port: 9000, replicas: 2 })
    const d = deploymentManifest(server, 'kinetic:test')
    expect(d.spec?.replicas).toBe(2)
    expect(d.spec?.template.spec?.hostNetwork).toBeUndefined()
    expect(d.spec?.template.spec?.containers[0]?.ports).toEqual([{ containerPort: 9000 }])
    expect(d.spec?.template.spec?.containers[0]?.env).toBeUndefined()
    expect(serviceManifest(server)).toEqual({
      apiVersion: 'v1', kind: 'Service',
      metadata: { name: 'github', namespace: 'ai-agents', labels: { 'purko.io/mcp-server': 'github' }, ownerReferences: [owner] },
      spec: { type: 'ClusterIP', selector: { 'purko.io/mcp-server': 'github' }, ports: [{ port: 9000, targetPort: 9000, protocol: 'TCP' }] },
    })
    expect(registryEntry(server)).toEqual({ name: 'github', url: 'http://github.ai-agents.svc.cluster.local:9000', auth: 'none', icon: '', category: '', namespace: 'ai-agents' })
  })

  it('hardens every pod: non-root, RuntimeDefault seccomp, no privilege escalation, ALL capabilities dropped, no token, no service links', () => {
    const pod = deploymentManifest(aServer(), 'kinetic:test').spec!.template.spec!
    expect(pod.automountServiceAccountToken).toBe(false)
    expect(pod.enableServiceLinks).toBe(false)
    expect(pod.serviceAccountName).toBeUndefined()
    expect(pod.securityContext).toEqual({ runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } })
    expect(pod.containers[0]?.securityContext).toEqual({ allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } })
  })

  it('applies spec.securityContext on top of the hardening', () => {
    const pod = deploymentManifest(aServer({ securityContext: { runAsUser: 1000, runAsGroup: 0, fsGroup: 2000, addCapabilities: ['NET_BIND_SERVICE'] } }), 'k').spec!.template.spec!
    expect(pod.securityContext).toEqual({ runAsNonRoot: true, runAsUser: 1000, runAsGroup: 0, fsGroup: 2000, fsGroupChangePolicy: 'OnRootMismatch', seccompProfile: { type: 'RuntimeDefault' } })
    expect(pod.containers[0]?.securityContext).toEqual({ allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'], add: ['NET_BIND_SERVICE'] } })
  })

  it('passes env: values as given, an empty value without secretRef as empty, valueFrom as secretKeyRef', () => {
    const env = deploymentManifest(aServer({ env: [
      { name: 'A', value: 'x' }, { name: 'B' },
      { name: 'C', valueFrom: { secretKeyRef: { name: 'api', key: 'k', optional: false } } },
    ] }), 'k').spec!.template.spec!.containers[0]!.env
    expect(env).toEqual([
      { name: 'A', value: 'x' }, { name: 'B', value: '' },
      { name: 'C', valueFrom: { secretKeyRef: { name: 'api', key: 'k', optional: false } } },
    ])
  })

  it('bridges a stdio server: the unchanged image on stdin/stdout, the mcp-bridge sidecar serving the port, the bridge ServiceAccount with its token', () => {
    const server = aServer({ transport: 'stdio', command: ['npx', 'server'], args: ['--stdio'], port: 8080, auth: 'bearer', secretRef: 'tok' })
    const pod = deploymentManifest(server, 'kinetic@sha256:abc').spec!.template.spec!
    expect(pod.serviceAccountName).toBe('kinetic-mcp-bridge')
    expect(pod.automountServiceAccountToken).toBe(false)
    const [mcp, bridge] = pod.containers
    expect(mcp).toMatchObject({ name: 'mcp-server', image: 'mcp:1', command: ['npx', 'server'], args: ['--stdio'], stdin: true, stdinOnce: false, tty: false })
    expect(mcp?.ports).toBeUndefined()
    expect(bridge).toMatchObject({ name: 'mcp-bridge', image: 'kinetic@sha256:abc', command: ['node'], args: ['dist/mcp-bridge/main.js'], ports: [{ containerPort: 8080 }] })
    expect(bridge?.env).toEqual([
      { name: 'MCP_BRIDGE_PORT', value: '8080' },
      { name: 'MCP_BRIDGE_CONTAINER', value: 'mcp-server' },
      { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
      { name: 'POD_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
      { name: 'AUTH_TOKEN', valueFrom: { secretKeyRef: { name: 'tok', key: 'token', optional: true } } },
    ])
    expect(bridge?.securityContext).toMatchObject({ allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] }, runAsUser: 65532 })
    expect(registryEntry(server).url).toBe('http://github.ai-agents.svc.cluster.local:8080')
  })

  it('gives the bridge ServiceAccount\'s token to the mcp-bridge container only: the server image cannot read it', () => {
    const pod = deploymentManifest(aServer({ transport: 'stdio', command: ['mcp-fs'] }), 'kinetic@sha256:abc').spec!.template.spec!
    expect(pod.automountServiceAccountToken).toBe(false)
    expect(pod.volumes).toEqual([{
      name: 'kinetic-mcp-bridge-token',
      projected: {
        sources: [
          { serviceAccountToken: { path: 'token', expirationSeconds: 3607 } },
          { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
          { downwardAPI: { items: [{ path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } }] } },
        ],
      },
    }])
    const [mcp, bridge] = pod.containers
    expect(mcp?.name).toBe('mcp-server')
    expect(mcp?.volumeMounts).toBeUndefined()
    // Where the Kubernetes client's in-cluster config reads token, ca.crt and namespace.
    expect(bridge?.volumeMounts).toEqual([{ name: 'kinetic-mcp-bridge-token', mountPath: '/var/run/secrets/kubernetes.io/serviceaccount', readOnly: true }])
  })

  it('mounts no token at all into an HTTP server\'s pod', () => {
    const pod = deploymentManifest(aServer(), 'kinetic:test').spec!.template.spec!
    expect(pod.automountServiceAccountToken).toBe(false)
    expect(pod.volumes).toBeUndefined()
    expect(pod.containers.map((c) => c.volumeMounts)).toEqual([undefined])
  })

  it('plans the bridge ServiceAccount and RoleBinding for a stdio server when they are missing', () => {
    const plan = planned(aServer({ transport: 'stdio' }), facts({ bridge: { serviceAccount: null, roleBinding: null } }))
    expect(plan.writes.map((w) => `${w.op} ${w.kind}/${w.object.metadata?.name}`)).toEqual([
      'create ServiceAccount/kinetic-mcp-bridge', 'create RoleBinding/kinetic-mcp-bridge', 'create Deployment/github', 'create Service/github',
    ])
    const rb = plan.writes[1]!.object as { roleRef: unknown; subjects: unknown }
    expect(rb.roleRef).toEqual({ apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'kinetic-mcp-bridge' })
    expect(rb.subjects).toEqual([{ kind: 'ServiceAccount', name: 'kinetic-mcp-bridge', namespace: 'ai-agents' }])
  })
})

describe('planMcpServer', () => {
  it('adds the finalizer, creates the Deployment and Service, registers the server, and waits for availability', () => {
    const plan = planned(aServer())
    expect(plan.addFinalizer).toBe(true)
    expect(plan.writes.map((w) => `${w.op} ${w.kind}`)).toEqual(['create Deployment', 'create Service'])
    expect(plan.registry).toEqual({ op: 'upsert', entry: registryEntry(aServer()) })
    expect(plan.discover).toBeNull()
    expect(plan.status).toMatchObject({ phase: 'Pending', observedGeneration: 1, url: 'http://github.ai-agents.svc.cluster.local:8000', rolloutStartTime: NOW })
    expect(condition(plan.status!, 'Ready')).toMatchObject({ status: 'False', reason: 'Progressing' })
    expect(plan.transitions.map((t) => t.kind)).toEqual(['deployed', 'registered', 'pending'])
  })

  it('in a namespace that has not opted in: writes nothing, registers nothing, and says which RoleBinding lets it', () => {
    const refusal = 'deployments.apps "github" is forbidden: User "system:serviceaccount:kinetic-system:mcpserver-changed" cannot get resource "deployments" in API group "apps" in the namespace "team-a"'
    const server = aServer({}, { namespace: 'team-a' })
    const plan = planned(server, facts({ workloadForbidden: refusal }))
    expect(plan.writes).toEqual([])
    expect(plan.registry).toBeNull()
    expect(plan.discover).toBeNull()
    expect(plan.status?.phase).toBe('Error')
    const message = `Kinetic may not run MCP servers in namespace team-a (${refusal}); to let it: `
      + 'kubectl create rolebinding kinetic-mcp-servers -n team-a --clusterrole=kinetic-mcp-workloads --serviceaccount=kinetic-system:mcpserver-changed'
    expect(condition(plan.status!, 'Ready')).toMatchObject({ status: 'False', reason: 'NamespaceNotEnabled', message })
    expect(condition(plan.status!, 'Available')).toMatchObject({ status: 'False', reason: 'NamespaceNotEnabled' })
    // The resync tick looks again (granting access brings the server up without an edit).
    expect(plan.status?.nextCheckAt).toBeDefined()
    // An unmanaged server needs no grant: it is registered as it is.
    const unmanaged = planned(aServer({ managed: false, url: 'https://tools.example.com/mcp' }, { namespace: 'team-a' }), facts({ workloadForbidden: refusal }))
    expect(unmanaged.registry?.op).toBe('upsert')
  })

  it('reports invalid resource quantities as InvalidResources and writes no workload', () => {
    const plan = planned(aServer({ resources: { requests: { cpu: 'lots' }, limits: { memory: '1Gi' } } }))
    expect(plan.writes).toEqual([])
    expect(plan.registry).toBeNull()
    expect(plan.status?.phase).toBe('Error')
    expect(condition(plan.status!, 'Ready')).toMatchObject({ status: 'False', reason: 'InvalidResources', message: 'not Kubernetes quantities: requests.cpu: "lots"' })
    expect(plan.status?.nextCheckAt).toBeUndefined()
  })

  it.each(['100m', '1', '0.5', '1.5Gi', '128Mi', '1e3', '2k', '1E'])('accepts the quantity %s', (q) => {
    expect(planned(aServer({ resources: { limits: { cpu: q } } })).writes).toHaveLength(2)
  })

  it('discovers an unmanaged server at spec.url at once, with no workload', () => {
    const server = withFinalizer(aServer({ managed: false, url: 'http://127.0.0.1:9/mcp' }))
    const plan = planned(server)
    expect(plan.writes).toEqual([])
    expect(plan.registry).toMatchObject({ op: 'upsert', entry: { url: 'http://127.0.0.1:9/mcp' } })
    expect(plan.discover).toEqual({ url: 'http://127.0.0.1:9/mcp', fingerprint: 'g1' })
  })

  it('asks for the bearer token Secret of a bearer server', () => {
    const plan = planned(withFinalizer(aServer({ managed: false, url: 'https://x.example/mcp', auth: 'bearer', secretRef: 'tok' })))
    expect(plan.discover?.tokenSecret).toBe('tok')
  })

  it('is Ready once the Deployment is available and discovery succeeded; re-planning on its own output changes nothing', () => {
    const server = withFinalizer(aServer())
    const first = planned(server)
    const deployment = availableDeployment(first.writes.find((w) => w.kind === 'Deployment')!.object as V1Deployment)
    const service = { ...serviceManifest(server), metadata: { ...serviceManifest(server).metadata, resourceVersion: '8' } }
    const f = facts({ deployment, service, pods: [aPod('p1')], registry: registryMap(renderRegistry([registryEntry(server)])) })
    const afterRollout = { ...server, status: first.status! }
    const plan = planned(afterRollout, f, later(1))
    expect(plan.writes).toEqual([])
    expect(plan.registry).toBeNull()
    expect(plan.discover?.url).toBe('http://github.ai-agents.svc.cluster.local:8000')
    const outcome: McpOutcome = { registered: false, rolledOut: false, discovery: { ok: true, transport: 'streamable-http', tools: [{ name: 'search', description: 'd', readOnly: true }], truncated: false } }
    const { status, transitions } = planMcpStatus(afterRollout, f, outcome, later(1))
    expect(status).toMatchObject({ phase: 'Ready', message: 'Deployment and Service created, registered in mcp-servers ConfigMap', toolCount: 1, tools: [{ name: 'search', description: 'd', readOnly: true }], lastDiscovery: later(1), discoveredTransport: 'streamable-http' })
    expect(condition(status!, 'Ready')).toMatchObject({ status: 'True', reason: 'Deployed' })
    expect(condition(status!, 'Available')).toMatchObject({ status: 'True', reason: 'MinimumReplicasAvailable' })
    expect(condition(status!, 'ToolsDiscovered')).toMatchObject({ status: 'True', reason: 'Discovered', message: '1 tools over Streamable HTTP' })
    expect(transitions.map((t) => t.kind)).toEqual(['tools.discovered', 'ready'])
    const ready = { ...afterRollout, status: status! }
    expect(planMcpServer(ready, f, later(2))).toBe(UNCHANGED)
    expect(mcpServerIsDue(ready, later(2))).toBe(false)
    // A restarted pod rediscovers.
    expect(planned(ready, { ...f, pods: [aPod('p1', 1)] }, later(2)).discover).not.toBeNull()
    // A pod replaced by a new one too.
    expect(planned(ready, { ...f, pods: [aPod('p2')] }, later(2)).discover).not.toBeNull()
    // The periodic rediscovery comes after 30 minutes (plus jitter).
    expect(mcpServerIsDue(ready, later(40))).toBe(true)
  })

  it.each([
    ['Unreachable', 'connect ECONNREFUSED 10.0.0.7:8000 (a NetworkPolicy?)'],
    ['Unauthorized', 'the server answered 401'],
    ['Timeout', 'no answer within 5000 ms'],
  ] as const)('stays Ready, as purko does, when the Deployment serves but its tools cannot be listed (%s): ToolsDiscovered says why, a Warning Event, retried with backoff', (reason, message) => {
    const server = withFinalizer(aServer())
    const first = planned(server)
    const deployment = availableDeployment(first.writes.find((w) => w.kind === 'Deployment')!.object as V1Deployment)
    const f = facts({ deployment, service: serviceManifest(server), pods: [aPod('p1')], registry: registryMap(renderRegistry([registryEntry(server)])) })
    const afterRollout = { ...server, status: first.status! }
    const { status, transitions } = planMcpStatus(afterRollout, f, { registered: false, rolledOut: false, discovery: { ok: false, reason, message } }, later(1))
    expect(status).toMatchObject({ phase: 'Ready', message: 'Deployment and Service created, registered in mcp-servers ConfigMap', toolCount: 0, tools: [], failures: 1 })
    expect(condition(status!, 'Ready')).toMatchObject({ status: 'True', reason: 'Deployed' })
    expect(condition(status!, 'Available')).toMatchObject({ status: 'True', reason: 'MinimumReplicasAvailable' })
    expect(condition(status!, 'ToolsDiscovered')).toMatchObject({ status: 'False', reason, message })
    expect(transitions).toEqual(expect.arrayContaining([
      expect.objectContaining({ kind: 'discovery.failed', type: 'Warning', reason: 'DiscoveryFailed', message: `Tool discovery failed (${reason}): ${message}` }),
    ]))
    // The tick retries after the first backoff (30 s plus jitter), not on every event.
    const failed = { ...afterRollout, status: status! }
    expect(planMcpServer(failed, f, later(1))).toBe(UNCHANGED)
    expect(mcpServerIsDue(failed, later(2))).toBe(true)
    expect(planned(failed, f, later(2)).discover).not.toBeNull()
  })

  it('says a host-network server it cannot reach is Unreachable in ToolsDiscovered, and stays Ready', () => {
    const server = withFinalizer(aServer({ hostNetwork: true }))
    const first = planned(server)
    const deployment = availableDeployment(first.writes.find((w) => w.kind === 'Deployment')!.object as V1Deployment)
    const f = facts({ deployment, service: serviceManifest(server), pods: [], registry: registryMap(renderRegistry([registryEntry(server)])) })
    const plan = planned({ ...server, status: first.status! }, f, later(1))
    expect(plan.discover).toBeNull()
    expect(plan.status?.phase).toBe('Ready')
    expect(condition(plan.status!, 'ToolsDiscovered')).toMatchObject({ status: 'False', reason: 'Unreachable', message: 'no running pod with an IP to reach a host-network server on' })
  })

  it('turns Progressing into DeploymentUnavailable after the documented 10 minutes, and the tick is due at that moment', () => {
    const server = withFinalizer(aServer())
    const first = planned(server)
    const deployment = availableDeployment(first.writes[0]!.object as V1Deployment, false)
    const service = serviceManifest(server)
    const f = facts({ deployment, service, registry: registryMap(renderRegistry([registryEntry(server)])) })
    const pending = { ...server, status: first.status! }
    expect(pending.status.nextCheckAt).toBe(later(10))
    expect(mcpServerIsDue(pending, later(9))).toBe(false)
    expect(planMcpServer(pending, f, later(9))).toBe(UNCHANGED)
    expect(mcpServerIsDue(pending, later(10))).toBe(true)
    const plan = planned(pending, f, later(10))
    expect(plan.status?.phase).toBe('Error')
    expect(condition(plan.status!, 'Ready')).toMatchObject({ status: 'False', reason: 'DeploymentUnavailable', message: 'Deployment github has had no available replica for 10 minutes or more' })
    expect(plan.transitions).toEqual([expect.objectContaining({ kind: 'deployment.unavailable', type: 'Warning', record: true })])
  })

  it('reports an unreadable registry as RegistryUnparseable and never plans to write it', () => {
    const plan = planned(withFinalizer(aServer({ managed: false, url: 'http://x/mcp' })), facts({ registry: registryMap('{not: [valid') }))
    expect(plan.registry).toBeNull()
    expect(plan.discover).not.toBeNull()
    expect(condition(plan.status!, 'Ready')).toMatchObject({ status: 'False', reason: 'RegistryUnparseable' })
  })

  it('keeps entries of other writers and upserts only its own', () => {
    const server = withFinalizer(aServer({ managed: false, url: 'http://x/mcp' }))
    const helm = '- name: other\n  url: http://other\n'
    const plan = planned(server, facts({ registry: registryMap(helm) }))
    expect(plan.registry).toEqual({ op: 'upsert', entry: registryEntry(server) })
  })
})

describe('deletion', () => {
  const deleting = (server: MCPServer) => withFinalizer({ ...server, metadata: { ...server.metadata, deletionTimestamp: NOW } })

  it('removes the registry entry, then releases the finalizer', () => {
    const server = deleting(aServer())
    const plan = planned(server, facts({ registry: registryMap(renderRegistry([registryEntry(server), { name: 'other', url: 'u', auth: 'none' }])) }))
    expect(plan).toMatchObject({ deleting: true, releaseFinalizer: true, registry: { op: 'remove', owner: { namespace: 'ai-agents', name: 'github' } }, writes: [] })
  })

  it('releases at once when the registry has no entry for it', () => {
    expect(planned(deleting(aServer()), facts())).toMatchObject({ deleting: true, releaseFinalizer: true, registry: null })
  })

  it('keeps the finalizer and reports it when the registry cannot be read and may hold the entry', () => {
    const plan = planned(deleting(aServer()), facts({ registry: registryMap('[{"name": "github", ') }))
    expect(plan.releaseFinalizer).toBe(false)
    expect(condition(plan.status!, 'Ready')).toMatchObject({ reason: 'RegistryUnparseable' })
    expect(plan.transitions).toEqual([expect.objectContaining({ type: 'Warning', reason: 'RegistryUnparseable' })])
  })

  it('releases when the unreadable registry does not even mention the name', () => {
    expect(planned(deleting(aServer()), facts({ registry: registryMap('{{{') }))).toMatchObject({ releaseFinalizer: true })
  })

  it.each([
    ['an entry to remove', registryMap(renderRegistry([{ name: 'github', url: 'u', auth: 'none' }]))],
    ['an unreadable registry that names it', registryMap('[{"name": "github", ')],
  ])('releases at once, with %s, when the agent namespace is terminating: the registry goes with it', (_, registry) => {
    const plan = planned(deleting(aServer()), facts({ registry, registryNamespaceGone: true }))
    expect(plan).toMatchObject({ deleting: true, releaseFinalizer: true, registry: null, status: null, transitions: [] })
  })

  it('does nothing once its finalizer is gone', () => {
    const server = aServer({}, { deletionTimestamp: NOW })
    expect(planMcpServer(server, facts(), NOW)).toBe(UNCHANGED)
  })
})
